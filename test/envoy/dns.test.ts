// How the real Envoy resolves the upstream names under the resolv.conf of a
// pod (a search list and ndots:5, given to c-ares through LOCALDOMAIN and
// RES_OPTIONS, which it reads like resolv.conf's search and options lines):
// each name asked as written, with A queries only (upstream.dnsLookupFamily
// V4_ONLY), never with a search domain appended. dnsmasq logs every query it
// receives. c-ares skips the search list for a name when ARES_FLAG_NOSEARCH is
// set (what the resolver's no_default_search_domain sets) or when the name ends
// in a dot; the first is used, as a dot would also end up in the SNI and the
// Host header Envoy derives from the name.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Json } from "../../routing/envoy/types.js";
import { BOOTSTRAP_FILE } from "../../routing/envoy/types.js";
import { renderGateway, type GatewayFiles } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { LoadCheck } from "../harness/load-check.js";
import { waitFor } from "../harness/processes.js";
import { e2eStackConfigWith } from "../harness/stack.js";

const POD_RESOLV_CONF = {
  LOCALDOMAIN: "default.svc.cluster.local svc.cluster.local cluster.local",
  RES_OPTIONS: "ndots:5",
};
let check: LoadCheck;

beforeAll(async () => {
  check = await LoadCheck.create("cluster.local", true);
});

afterAll(async () => {
  await check?.stop();
});

/** The DNS names of every DNS cluster (CDS and the bootstrap's). */
function upstreamNames(files: GatewayFiles): string[] {
  const clusters = [
    ...(files.documents.cds.resources as Json[]),
    ...((files.documents.bootstrap.static_resources as Json).clusters as Json[]),
  ];
  return clusters
    .filter((c) => c.cluster_type !== undefined)
    .flatMap((c) =>
      ((c.load_assignment as Json).endpoints as Json[]).flatMap((e) =>
        (e.lb_endpoints as Json[]).map((l) =>
          String((((l.endpoint as Json).address as Json).socket_address as Json).address),
        ),
      ),
    )
    .sort();
}

/** Starts Envoy with `files` under the pod's resolv.conf, waits until every name was asked, returns the distinct queries "TYPE name" it sent. */
async function queriesOf(files: Record<string, string>, names: string[]): Promise<string[]> {
  const before = check.dns.queries().length;
  const envoy = await check.start(files, POD_RESOLV_CONF);
  try {
    const sent = () => check.dns.queries().slice(before);
    await waitFor("Envoy to ask DNS for every upstream name", 30_000, () =>
      names.every((n) => sent().some((q) => q.name === n)),
    );
    return [...new Set(sent().map((q) => `${q.type} ${q.name}`))].sort();
  } finally {
    await envoy.envoy.stop();
  }
}

describe("upstream DNS", () => {
  // A cluster per dev/PR Service, so Envoy asks the dev name at start too (an on-demand sub-cluster asks it on its first request, through the same resolver).
  const config = e2eStackConfigWith("per-service");
  const files = renderGateway(config, buildRoutingTable(config, { "pr-1": ["batch"] }), "gateway");
  const names = upstreamNames(files);

  it("asks each Service name as written, A only: no search domain appended despite ndots:5", async () => {
    expect(names).toContain("www.default.svc.cluster.local");
    expect(names).toContain("batch.pr-1.svc.cluster.local");
    expect(await queriesOf({ ...files.bootstrap, ...files.xds }, names)).toEqual(
      [...new Set(names)].map((n) => `A ${n}`).sort(),
    );
  });

  it("walks the search list without no_default_search_domain (what the setting prevents)", async () => {
    const bootstrap = files.bootstrap[BOOTSTRAP_FILE]!.replace(
      "no_default_search_domain: true",
      "no_default_search_domain: false",
    );
    expect(bootstrap).not.toBe(files.bootstrap[BOOTSTRAP_FILE]);
    const queries = await queriesOf({ ...files.bootstrap, [BOOTSTRAP_FILE]: bootstrap, ...files.xds }, names);
    // www.default.svc.cluster.local has 4 dots, fewer than ndots:5: each search domain is tried first.
    // www.default.svc.cluster.local has 4 dots, fewer than ndots:5: the search domain is tried first, then
    // the name as written. (c-ares keeps only the first domain of LOCALDOMAIN; a pod's resolv.conf gives
    // it all three, so there the walk is three queries longer, per family and refresh.)
    for (const name of names) {
      expect(queries).toContain(`A ${name}.default.svc.cluster.local`);
      expect(queries).toContain(`A ${name}`);
    }
  });

  it("asks AAAA too when the lookup family is AUTO (what V4_ONLY saves)", async () => {
    const auto = { ...config, upstream: { ...config.upstream, dnsLookupFamily: "AUTO" as const } };
    const autoFiles = renderGateway(auto, buildRoutingTable(auto, { "pr-1": ["batch"] }), "gateway");
    const queries = await queriesOf({ ...autoFiles.bootstrap, ...autoFiles.xds }, names);
    expect(queries).toContain("AAAA www.default.svc.cluster.local");
    expect(queries).toContain("A www.default.svc.cluster.local");
  });
});
