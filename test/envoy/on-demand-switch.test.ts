// The switch to on-demand dev/PR routes (devNamespaces.clusters: on-demand) on
// the real Envoy, as a new gateway pod meets it in a rollout: it starts with
// the on-demand bootstrap while its xDS volume still holds the per-service
// files, then the kubelet swaps in the on-demand ones. One swap moves every
// dev/PR route onto the on-demand cluster; had that cluster come with the
// swap (CDS), Envoy would route to it before it had warmed, answering 503
// with no cluster. It is a static cluster of the bootstrap, so no request
// fails. (The per-service clusters are kept in the swap here: removing a
// cluster in the same swap as the routes leave it is another race, open.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keepAliveAgent } from "../harness/client.js";
import { GatewayHarness } from "../harness/gateway.js";
import { sleep, waitFor } from "../harness/processes.js";
import { e2eHarnessOptions, e2eStackConfigWith } from "../harness/stack.js";
import { renderGateway } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { toXdsYaml } from "../../routing/envoy/xds.js";

const DEV = { "pr-1": ["web"] };
/** Swaps back and forth: with the on-demand cluster in cds.yaml, 3 of 3 runs of 20 swaps lost requests (1 of 3 of 8). */
const SWAPS = 20;
const WORKERS = 8;

/** The e2e stack with the given layout, and a dev/PR rate limit this test's load stays well under. */
function stackWith(clusters: "per-service" | "on-demand") {
  const config = e2eStackConfigWith(clusters);
  return { ...config, devNamespaces: { ...config.devNamespaces, rateLimit: 100_000 } };
}

let h: GatewayHarness;

beforeAll(async () => {
  h = await GatewayHarness.start({
    ...e2eHarnessOptions(),
    config: stackWith("on-demand"),
    devNamespaces: DEV,
    podCount: () => 3,
  });
});

afterAll(async () => {
  await h?.stop();
});

describe("a gateway pod with the on-demand bootstrap", () => {
  it("answers every dev/PR request while its per-service xDS files are swapped for the on-demand ones", async () => {
    const perServiceConfig = stackWith("per-service");
    const perServiceFiles = renderGateway(
      perServiceConfig,
      buildRoutingTable(perServiceConfig, DEV),
      h.gateway,
      h.renderOptions(),
    );
    const perService = perServiceFiles.xds;
    // The on-demand routes, with every cluster of the per-service files kept: a cluster removed
    // in the same swap as the routes that used it is a race of its own (not covered here).
    const kept = perServiceFiles.documents.cds.resources;
    const added = h.files.documents.cds.resources.filter((c) => !kept.some((k) => k.name === c.name));
    const onDemand = {
      ...h.files.xds,
      "cds.yaml": toXdsYaml({ ...h.files.documents.cds, resources: [...kept, ...added] }),
    };
    expect(perService["cds.yaml"]).toContain("pr-1_web");
    expect(onDemand["cds.yaml"]).toContain("pr-1_web");
    expect(h.files.xds["rds.yaml"]).not.toContain("pr-1_web");
    const agent = keepAliveAgent(h.https, WORKERS);
    const rdsUpdates = () => h.envoy.stat("http.https.rds.https.update_success");
    const noClusterBefore = await h.envoy.stat("http.https.no_cluster");
    const failures: string[] = [];
    let requests = 0;
    try {
      for (let swap = 0; swap < SWAPS; swap++) {
        const before = await rdsUpdates();
        h.writeXdsFiles(perService);
        await waitFor("Envoy to load the per-service files", 10_000, async () => (await rdsUpdates()) > before);
        let stopped = false;
        const worker = async () => {
          while (!stopped) {
            const r = await h
              .get(h.devHost, "/pr-1/web/", { agent })
              .catch((e: Error) => ({ status: 0, body: e.message }));
            requests++;
            if (r.status !== 200) failures.push(`swap ${swap}: ${r.status} ${JSON.stringify(r.body.slice(0, 100))}`);
            await sleep(20);
          }
        };
        const load = Promise.all(Array.from({ length: WORKERS }, worker));
        await sleep(300);
        const swapped = await rdsUpdates();
        h.writeXdsFiles(onDemand);
        await waitFor("Envoy to load the on-demand files", 10_000, async () => (await rdsUpdates()) > swapped);
        await sleep(500);
        stopped = true;
        await load;
      }
    } finally {
      agent.destroy();
    }
    expect(failures).toEqual([]);
    expect(await h.envoy.stat("http.https.no_cluster")).toBe(noClusterBefore);
    expect(requests).toBeGreaterThan(SWAPS * 100);
  }, 120_000);
});
