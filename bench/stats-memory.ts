// Benchmark (not a test): the gateway's memory at 0, 500 and 1,500 routed
// dev/PR pairs on the real Envoy, with the stats it kept before (every stat of
// every cluster, created with the cluster) and with this project's stats
// settings (dev/PR clusters keep the stats dashboards use, traffic stats made
// on a cluster's first request), side by side in one run.
//
//   npx tsx bench/stats-memory.ts [--pairs 0,500,1500] [--settle 3]
//
// Each configuration is the prod stack's gateway rendered by renderGateway()
// (the `stats` stack config keys set for "before"), loaded as the ConfigMaps
// hold it into Envoy with the pod's worker count; DNS answers every Service
// name with one address (one pod per Service). Printed: Envoy's own count of
// allocated heap bytes (admin /memory), the number of stats, and the memory per
// 1,000 pairs. "floor" is a reference, not a configuration the project
// renders: the same files with every stat rejected (stats_matcher reject_all),
// what a pair costs without any stat at all.
import { join } from "node:path";
import { parseArgs } from "node:util";
import { parse, stringify } from "yaml";
import { loadStackFile } from "../routing/config/load.js";
import type { StackConfig } from "../routing/config/schema.js";
import { BOOTSTRAP_FILE } from "../routing/envoy/types.js";
import { renderGateway } from "../routing/render.js";
import { buildRoutingTable } from "../routing/table.js";
import { parseQuantity } from "../routing/units.js";
import { syntheticNamespaces } from "../test/fixtures/namespaces.js";
import { LoadCheck } from "../test/harness/load-check.js";
import { sleep } from "../test/harness/processes.js";

type Variant = "before" | "after" | "floor";
const VARIANTS: Variant[] = ["before", "after", "floor"];

function options(): { pairs: number[]; settleSeconds: number } {
  const { values } = parseArgs({
    options: {
      pairs: { type: "string", default: "0,500,1500" },
      settle: { type: "string", default: "3" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    console.log("usage: npx tsx bench/stats-memory.ts [--pairs 0,500,1500] [--settle 3]");
    process.exit(0);
  }
  const pairs = values.pairs.split(",").map(Number);
  if (pairs.length < 2 || pairs.some((n) => !Number.isInteger(n) || n < 0 || n > 3000))
    throw new Error(`--pairs must list two or more whole numbers from 0 to 3000 (got ${values.pairs})`);
  const settleSeconds = Number(values.settle);
  if (!(settleSeconds >= 0 && settleSeconds <= 60))
    throw new Error(`--settle must be 0 to 60 seconds (got ${values.settle})`);
  return { pairs, settleSeconds };
}

function files(config: StackConfig, pairs: number, variant: Variant): Record<string, string> {
  const c: StackConfig =
    variant === "before" ? { ...config, stats: { devClusters: "all", deferredCreation: false } } : config;
  const rendered = renderGateway(c, buildRoutingTable(c, syntheticNamespaces(pairs)), "gateway");
  const all = { ...rendered.bootstrap, ...rendered.xds };
  if (variant === "floor") {
    const bootstrap = parse(all[BOOTSTRAP_FILE]!) as Record<string, unknown>;
    bootstrap.stats_config = { stats_matcher: { reject_all: true } };
    all[BOOTSTRAP_FILE] = stringify(bootstrap);
  }
  return all;
}

interface Measured {
  allocatedMiB: number;
  stats: number;
  /** Stats of one dev/PR cluster (pr-10000_batch), after a settle. */
  devClusterStats: number;
}

async function main(): Promise<void> {
  const o = options();
  const config = loadStackFile(join(__dirname, "..", "Pulumi.prod.yaml"));
  const workers = Math.max(1, Math.ceil(parseQuantity(config.gateways.gateway.resources.limits.cpu) ?? 1));
  const check = await LoadCheck.create(config.clusterDomain, false, "127.0.0.2");
  const results = new Map<string, Measured>();
  try {
    console.log(
      `Envoy with --concurrency ${workers} (the gateway pod's), prod stack gateway, DNS: one pod per Service; allocated heap after ${o.settleSeconds}s`,
    );
    for (const pairs of o.pairs) {
      for (const variant of VARIANTS) {
        const envoy = await check.start(files(config, pairs, variant), undefined, workers);
        await sleep(o.settleSeconds * 1000);
        const lines = (await envoy.envoy.admin("/stats")).split("\n").filter(Boolean);
        const dev = lines.filter((l) => l.startsWith("cluster.pr-10000_batch.")).length;
        results.set(`${pairs}/${variant}`, {
          allocatedMiB: (await envoy.envoy.heapBytes()) / 2 ** 20,
          stats: lines.length,
          devClusterStats: dev,
        });
        await envoy.envoy.stop();
      }
    }
  } finally {
    await check.stop();
  }
  const get = (pairs: number, v: Variant) => results.get(`${pairs}/${v}`)!;
  const pad = (s: string, n: number) => s.padStart(n);
  console.log(
    `\n${pad("pairs", 5)}  ${pad("before MiB", 10)}  ${pad("after MiB", 9)}  ${pad("after/before", 12)}  ${pad("floor MiB", 9)}  ${pad("stats before", 12)}  ${pad("stats after", 11)}  ${pad("one dev cluster's stats before/after", 36)}`,
  );
  for (const pairs of o.pairs) {
    const b = get(pairs, "before");
    const a = get(pairs, "after");
    const f = get(pairs, "floor");
    console.log(
      [
        pad(String(pairs), 5),
        pad(b.allocatedMiB.toFixed(1), 10),
        pad(a.allocatedMiB.toFixed(1), 9),
        pad(`${(a.allocatedMiB / b.allocatedMiB).toFixed(2)}x`, 12),
        pad(f.allocatedMiB.toFixed(1), 9),
        pad(b.stats.toLocaleString("en-US"), 12),
        pad(a.stats.toLocaleString("en-US"), 11),
        pad(pairs ? `${b.devClusterStats} / ${a.devClusterStats}` : "-", 36),
      ].join("  "),
    );
  }
  const [lo, hi] = [Math.min(...o.pairs), Math.max(...o.pairs)];
  const slope = (v: Variant) => ((get(hi, v).allocatedMiB - get(lo, v).allocatedMiB) / (hi - lo)) * 1000;
  console.log(
    `\nper 1,000 pairs (${lo} to ${hi}): before ${slope("before").toFixed(1)} MiB, after ${slope("after").toFixed(1)} MiB (${(slope("after") / slope("before")).toFixed(2)}x), ` +
      `floor without any stat ${slope("floor").toFixed(1)} MiB (${(slope("floor") / slope("before")).toFixed(2)}x)`,
  );
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
