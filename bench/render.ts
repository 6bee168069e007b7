// Benchmark (not a test): bytes of cds+rds per routed namespace-service pair
// and render+validate time per gateway, for 100, 500 and 1,500 dev pairs on
// top of the prod stack's production services (dev/PR routes on demand; the
// NGINX era's generator needed about 1,550 bytes per pair; bench/dev-routes.ts
// sets the two layouts side by side up to 5,000 pairs, on the real Envoy too).
// Then, past capacity, how many pairs discovery's admission routes of 2,000,
// 5,000 and 10,000 and what deciding it costs. Prints wall time and the
// process's CPU time (on a busy machine the wall time is mostly waiting for a
// core).
//
//   npm run bench:render
import { join } from "node:path";
import { admitDevNamespaces } from "../routing/capacity.js";
import { loadStackFile } from "../routing/config/load.js";
import { routingConfig } from "../routing/config/schema.js";
import { renderGateway, configMapBytes, CONFIGMAP_LIMIT_BYTES } from "../routing/render.js";
import { buildRoutingTable } from "../routing/table.js";
import { envoyApi } from "../routing/validation/descriptors.js";
import { syntheticNamespaces } from "../test/fixtures/namespaces.js";

const REFERENCE_BYTES_PER_PAIR = 1550;
const RUNS = 7;

const config = loadStackFile(join(__dirname, "..", "Pulumi.prod.yaml"));
let t = performance.now();
envoyApi();
console.log(`Envoy API descriptors loaded once per process: ${(performance.now() - t).toFixed(0)} ms`);
const base = configMapBytes(renderGateway(config, buildRoutingTable(config), "gateway").xds);

console.log(
  "pairs  cds+rds bytes  bytes/pair  vs 1,550 (old)  pairs per ConfigMap  render+validate ms (median of 7, min..max)  CPU ms (median)",
);
for (const pairs of [100, 500, 1500]) {
  const table = buildRoutingTable(config, syntheticNamespaces(pairs));
  const times: number[] = [];
  const cpu: number[] = [];
  let bytes = 0;
  for (let i = 0; i < RUNS; i++) {
    t = performance.now();
    const used = process.cpuUsage();
    const files = renderGateway(config, table, "gateway");
    times.push(performance.now() - t);
    const spent = process.cpuUsage(used);
    cpu.push((spent.user + spent.system) / 1000);
    bytes = configMapBytes(files.xds);
  }
  times.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  const perPair = (bytes - base) / pairs;
  const capacity = Math.floor((CONFIGMAP_LIMIT_BYTES - base) / perPair);
  console.log(
    [
      String(pairs).padStart(5),
      bytes.toLocaleString("en-US").padStart(14),
      perPair.toFixed(0).padStart(11),
      `${(perPair / REFERENCE_BYTES_PER_PAIR).toFixed(2)}x`.padStart(15),
      capacity.toLocaleString("en-US").padStart(20),
      `${times[RUNS >> 1]!.toFixed(0)} (${times[0]!.toFixed(0)}..${times[RUNS - 1]!.toFixed(0)})`.padStart(42),
      // The process's CPU time (all its threads, the garbage collector's too): what a shared machine's load does not inflate.
      cpu[RUNS >> 1]!.toFixed(0).padStart(15),
    ].join("  "),
  );
}

// Past capacity: the same synthetic namespaces (10 Services each, created in
// name order) offered to discovery's admission (routing/capacity.ts) on both
// gateways: how many are routed, and what deciding it costs. Up to capacity
// it is one render per gateway; past it, each namespace is measured once.
console.log("\npairs offered  pairs routed  namespaces left out  admission ms (median of 3)  CPU ms (median)");
for (const pairs of [2000, 5000, 10000]) {
  const devNamespaces = syntheticNamespaces(pairs, 10);
  const created = Object.fromEntries(
    Object.keys(devNamespaces).map((ns, i) => [ns, new Date(Date.UTC(2026, 10, 1, 0, 0, i)).toISOString()]),
  );
  const found = { devNamespaces, created, problems: [], warnings: [] };
  const times: number[] = [];
  const cpu: number[] = [];
  let routed = 0;
  let leftOut = 0;
  for (let i = 0; i < 3; i++) {
    t = performance.now();
    const used = process.cpuUsage();
    const admitted = admitDevNamespaces(routingConfig(config), found, new Date());
    times.push(performance.now() - t);
    const spent = process.cpuUsage(used);
    cpu.push((spent.user + spent.system) / 1000);
    routed = Object.values(admitted.devNamespaces).reduce((n, services) => n + services.length, 0);
    leftOut = admitted.problems.length;
  }
  times.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  console.log(
    [
      pairs.toLocaleString("en-US").padStart(13),
      routed.toLocaleString("en-US").padStart(12),
      String(leftOut).padStart(19),
      times[1]!.toFixed(0).padStart(26),
      cpu[1]!.toFixed(0).padStart(15),
    ].join("  "),
  );
}
