// The validator against the real Envoy 1.40: what one accepts, the other
// loads; what Envoy refuses, the validator refuses too, both naming the field.
//
// - the production-sized golden files (test/golden/production), the files of
//   every golden feature (test/golden/features) and every document of the
//   accepted corpus load with nothing rejected, every resource in /config_dump;
// - every broken corpus document is loaded as well: a broken cds.yaml or
//   rds.yaml is swapped into one running Envoy (many documents per start), a
//   broken bootstrap gets an Envoy of its own. Envoy's verdict must be the one
//   the corpus states; when it refuses, its reason and the validator's name the
//   same field.
// Files are loaded as the ConfigMaps hold them, pod paths, ports and DNS
// servers remapped (test/harness/load-check.ts).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatProblem } from "../../routing/config/errors.js";
import { parseEnvoyYaml } from "../../routing/envoy/xds.js";
import { BOOTSTRAP_FILE, HTTPS_ROUTE_CONFIG, XDS_FILES, type Json } from "../../routing/envoy/types.js";
import { renderGateways } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { validateGateway } from "../../routing/validation/index.js";
import { goldenFeatures, renderFeature } from "../fixtures/golden-features.js";
import {
  ACCEPTED,
  BROKEN,
  BROKEN_BASE,
  brokenBaseDocuments,
  CORPUS_NOW,
  documentFiles,
  type BrokenCase,
} from "../fixtures/validator-corpus.js";
import { EnvoyRejected, LoadCheck, type LoadedEnvoy } from "../harness/load-check.js";
import { repoRoot } from "../support/components.js";

let check: LoadCheck;

beforeAll(async () => {
  check = await LoadCheck.create(BROKEN_BASE.config().clusterDomain);
});

afterAll(async () => {
  await check?.stop();
});

/** Runs `f` over `items`, at most `limit` at a time (each Envoy start is a process of its own). */
async function eachLimited<T, R>(items: T[], limit: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await f(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Nothing refused, and every cluster, route configuration and listener of the files in Envoy's /config_dump. */
async function expectLoaded(envoy: LoadedEnvoy, files: Record<string, string>, label: string): Promise<void> {
  const stats = await envoy.stats("update_(rejected|failure|success)$");
  const refused = [...stats].filter(([name, n]) => /update_(rejected|failure)$/.test(name) && n > 0);
  expect(refused, `${label}: refused updates`).toEqual([]);
  expect(stats.get("cluster_manager.cds.update_success"), `${label}: CDS loaded`).toBeGreaterThanOrEqual(1);
  expect(
    stats.get(`http.https.rds.${HTTPS_ROUTE_CONFIG}.update_success`),
    `${label}: RDS loaded`,
  ).toBeGreaterThanOrEqual(1);

  const cds = parseEnvoyYaml(files[XDS_FILES.cds]!) as Json;
  const rds = parseEnvoyYaml(files[XDS_FILES.rds]!) as Json;
  const bootstrap = parseEnvoyYaml(files[BOOTSTRAP_FILE]!) as Json;
  const dump = (await envoy.configDump()).configs as Json[];
  const section = (type: string) =>
    dump.find((c) => String(c["@type"]) === `type.googleapis.com/envoy.admin.v3.${type}`) ?? {};
  const clusters = section("ClustersConfigDump");
  const names = (list: unknown, key: string) =>
    ((list ?? []) as Json[]).map((e) => String((e[key] as Json).name)).sort();
  expect(names(clusters.dynamic_active_clusters, "cluster"), `${label}: CDS clusters`).toEqual(
    (cds.resources as Json[]).map((c) => String(c.name)).sort(),
  );
  expect(names(clusters.static_clusters, "cluster"), `${label}: static clusters`).toEqual(
    ((bootstrap.static_resources as Json).clusters as Json[]).map((c) => String(c.name)).sort(),
  );
  const routes = ((section("RoutesConfigDump").dynamic_route_configs ?? []) as Json[]).map((r) => ({
    version: r.version_info,
    config: r.route_config as Json,
  }));
  const want = (rds.resources as Json[])[0]!;
  // Envoy's dump leaves out an empty list of virtual hosts (a table with nothing routed).
  const hostCount = (config: Json) => ((config.virtual_hosts ?? []) as Json[]).length;
  expect(
    routes.map((r) => [r.config.name, r.version, hostCount(r.config)]),
    `${label}: route configuration`,
  ).toEqual([[want.name, rds.version_info, hostCount(want)]]);
  const listeners = ((section("ListenersConfigDump").static_listeners ?? []) as Json[])
    .map((l) => String((l.listener as Json).name))
    .sort();
  expect(listeners, `${label}: listeners`).toEqual(
    ((bootstrap.static_resources as Json).listeners as Json[]).map((l) => String(l.name)).sort(),
  );
}

/** A gateway directory: file name -> text. */
function readDir(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f), "utf8")]));
}

describe("what the validator accepts, Envoy loads", () => {
  const production = join(repoRoot, "test", "golden", "production");

  it("loads the production-sized golden files of both gateways with nothing rejected", async () => {
    const dirs = readdirSync(production);
    expect(dirs.sort()).toEqual(["gateway", "internal-gateway"]);
    await eachLimited(dirs, 2, async (dir) => {
      const files = readDir(join(production, dir));
      const envoy = await check.start(files);
      await expectLoaded(envoy, files, `golden production/${dir}`);
      await envoy.envoy.stop();
    });
  });

  it("loads the files of every golden feature, both gateways, with nothing rejected", async () => {
    const loads = goldenFeatures().flatMap((feature) => {
      const { config, rendered } = renderFeature(feature);
      return rendered.map((g) => ({
        label: `golden feature ${feature}, ${g.gateway}`,
        clusterDomain: config.clusterDomain,
        files: { ...g.bootstrap, ...g.xds },
      }));
    });
    expect(loads.length).toBeGreaterThanOrEqual(40);
    // The harness's DNS answers for one cluster domain: a feature with another gets a harness of its own.
    const checks = new Map<string, LoadCheck>([[BROKEN_BASE.config().clusterDomain, check]]);
    try {
      for (const { clusterDomain } of loads)
        if (!checks.has(clusterDomain)) checks.set(clusterDomain, await LoadCheck.create(clusterDomain));
      await eachLimited(loads, 2, async ({ label, clusterDomain, files }) => {
        const envoy = await checks.get(clusterDomain)!.start(files);
        await expectLoaded(envoy, files, label);
        await envoy.envoy.stop();
      });
    } finally {
      for (const c of checks.values()) if (c !== check) await c.stop();
    }
  });

  it("loads every document of the accepted corpus, both gateways, with nothing rejected", async () => {
    const loads = ACCEPTED.flatMap((a) => {
      const config = a.config();
      return renderGateways(config, buildRoutingTable(config, a.namespaces, "dev namespaces", CORPUS_NOW)).map((g) => ({
        label: `${a.name}, ${g.gateway}`,
        files: { ...g.bootstrap, ...g.xds },
      }));
    });
    expect(loads.length).toBe(ACCEPTED.length * 2);
    await eachLimited(loads, 2, async ({ label, files }) => {
      const envoy = await check.start(files);
      await expectLoaded(envoy, files, label);
      await envoy.envoy.stop();
    });
  });
});

/** Lower-case, without separators: Envoy writes fields as connect_timeout, ConnectTimeout or connectTimeout. */
const squash = (s: string) => s.toLowerCase().replace(/[_\s-]/g, "");

describe("what Envoy refuses, the validator refuses, naming the same field", () => {
  const base = documentFiles(brokenBaseDocuments());
  const cases = BROKEN.map((b) => {
    const docs = brokenBaseDocuments();
    b.breakIt(docs);
    const files = documentFiles(docs);
    const changed = Object.keys(files).filter((f) => files[f] !== base[f]);
    return { broken: b, files, changed, problems: validateGateway(docs).map(formatProblem) };
  });
  const xdsOnly = cases.filter((c) => c.changed.every((f) => f === XDS_FILES.cds || f === XDS_FILES.rds));
  const bootstrapCases = cases.filter((c) => !xdsOnly.includes(c));
  const verdicts = new Map<string, { refused: boolean; reasons: string[] }>();

  function expectVerdict(b: BrokenCase, problems: string[], refused: boolean, reasons: string[]): void {
    const label = `${b.name}\nEnvoy: ${refused ? reasons.join(" | ") : "loaded it"}\nvalidator: ${problems.join(" | ")}`;
    expect
      .soft(
        problems.some((p) => b.message.test(p)),
        label,
      )
      .toBe(true);
    if ("rejects" in b.envoy) {
      expect.soft(refused, label).toBe(true);
      const field = squash(b.envoy.rejects);
      expect
        .soft(
          reasons.some((r) => squash(r).includes(field)),
          `Envoy's reason names ${b.envoy.rejects}: ${label}`,
        )
        .toBe(true);
      expect
        .soft(
          problems.some((p) => b.message.test(p) && squash(p).includes(field)),
          `the validator names ${b.envoy.rejects}: ${label}`,
        )
        .toBe(true);
    } else {
      expect.soft(refused, `Envoy was expected to load it (${b.envoy.loads}): ${label}`).toBe(false);
    }
  }

  it(`swaps ${xdsOnly.length} broken cds.yaml/rds.yaml files into one Envoy: each verdict as the corpus states`, async () => {
    expect(xdsOnly.length).toBeGreaterThan(20);
    const envoy = await check.start(base);
    for (const c of xdsOnly) {
      const outcome = await envoy.swap({
        [XDS_FILES.cds]: c.files[XDS_FILES.cds]!,
        [XDS_FILES.rds]: c.files[XDS_FILES.rds]!,
      });
      const refused = c.changed.some((f) => (f === XDS_FILES.cds ? !outcome.cds : !outcome.rds));
      // A file the case did not change must still load (the last good one stays in force).
      for (const f of [XDS_FILES.cds, XDS_FILES.rds])
        if (!c.changed.includes(f))
          expect(f === XDS_FILES.cds ? outcome.cds : outcome.rds, `${c.broken.name}: unchanged ${f}`).toBe(true);
      verdicts.set(c.broken.name, { refused, reasons: outcome.reasons });
      expectVerdict(c.broken, c.problems, refused, outcome.reasons);
    }
    // After all that, the good files load again.
    const good = await envoy.swap({ [XDS_FILES.cds]: base[XDS_FILES.cds]!, [XDS_FILES.rds]: base[XDS_FILES.rds]! });
    expect(good).toMatchObject({ cds: true, rds: true });
  });

  it("starts an Envoy for each broken bootstrap: each verdict as the corpus states", async () => {
    expect(bootstrapCases.map((c) => c.broken.name).sort()).toEqual(
      [
        "ext_authz pointing at a missing cluster",
        "node without an id",
        "router not the last HTTP filter",
        "two listeners on one port",
        "xDS file outside its watched directory",
        "local cluster not among the static clusters",
        "rate limits shared across the gateway's pods without a local cluster",
      ].sort(),
    );
    await eachLimited(bootstrapCases, 3, async (c) => {
      let refused: boolean;
      let reasons: string[];
      try {
        // Envoy may come up and still refuse the routes or clusters the bootstrap cannot serve.
        const envoy = await check.start(c.files);
        reasons = await envoy.startupRejections();
        refused = reasons.length > 0;
        await envoy.envoy.stop();
      } catch (e) {
        if (!(e instanceof EnvoyRejected)) throw e;
        refused = true;
        reasons = [e.reason];
      }
      verdicts.set(c.broken.name, { refused, reasons });
      expectVerdict(c.broken, c.problems, refused, reasons);
    });
  });

  afterAll(() => {
    // What only the validator refuses, and why, for the record.
    const own = BROKEN.filter((b) => "loads" in b.envoy && verdicts.get(b.name)?.refused === false);
    if (own.length)
      console.log(
        `refused by the validator only (Envoy loads them):\n${own.map((b) => `  - ${b.name}: ${(b.envoy as { loads: string }).loads}`).join("\n")}`,
      );
  });
});
