// Benchmark (not a test): how long after a routes write the gateway pod's
// kubelet has projected the xDS ConfigMap into the pod. On a fresh local
// cluster with the dev stack deployed (dev/PR routes on demand), each round
// writes the gateway's routes for 5,000 dev/PR pairs and one namespace more
// with routes-provider/core.ts `writeRoutes`, as sync-routes does (read the
// ConfigMap, apply it, annotate the gateway's pods with the new digest), then
// reads the pod's projected rds.yaml on the node every 20 ms until it holds
// the new namespace's route. Rounds are --gap apart: a kubelet syncs a pod
// it synced a moment ago later than one it left alone.
//
//   npx tsx bench/projection.ts [--rounds 15] [--gap 5s] [--gap 0s]
//
// Prints each round (the write, and from its start until projected), then
// p50 and max for each gap, side by side. Needs the real components and root
// (the local node). Takes a few minutes.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { routesInputs, writeRoutes, type RoutesGiven } from "../routes-provider/core.js";
import { parseDuration } from "../routing/units.js";
import { syntheticNamespaces } from "../test/fixtures/namespaces.js";
import { startLocalCluster, stopLocalCluster } from "../test/support/cluster.js";
import { ProgramStack } from "../test/support/program.js";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "15" },
    gap: { type: "string", multiple: true, default: ["5s", "0s"] },
  },
});
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1 || rounds > 200)
  throw new Error(`--rounds: "${values.rounds}" is not a whole number from 1 to 200`);
const gaps = values.gap.map((g) => {
  const ms = parseDuration(g, ["ms", "s"]);
  if (ms === undefined || ms > 60_000) throw new Error(`--gap: "${g}" is not a duration from 0s to 60s (500ms, 5s)`);
  return ms;
});
const WAIT_MS = 120_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Round {
  write: number;
  projected: number;
}

async function main(): Promise<void> {
  const cluster = await startLocalCluster();
  const results: { gap: number; rounds: Round[] }[] = [];
  try {
    const program = await ProgramStack.create(cluster, { from: "dev", stack: "projection" });
    await program.ws.ok(["config", "set", "--path", "envoy-gateways:devNamespaces.clusters", "on-demand"]);
    await program.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    const config = {
      ...program.config,
      devNamespaces: { ...program.config.devNamespaces, clusters: "on-demand" as const },
    };
    const kubeconfig = readFileSync(cluster.kubeconfig, "utf8");
    const pods = await program.core().listNamespacedPod({ namespace: config.namespace });
    const pod = pods.items.find((p) => p.metadata!.name!.startsWith("gateway-"))!;
    const uid = pod.metadata!.uid!;
    const file = join(
      cluster.stateDir,
      "node",
      "kubelet",
      "pods",
      uid,
      "volumes",
      "kubernetes.io~configmap",
      "xds",
      "rds.yaml",
    );
    let n = 0;
    for (const gap of gaps) {
      const done: Round[] = [];
      for (let i = 0; i < rounds; i++) {
        await sleep(gap);
        const ns = `pr-projection-${n++}`;
        const dev = { ...syntheticNamespaces(5000, 10), [ns]: ["app"] };
        const target = { gateway: "gateway" as const, namespace: config.namespace, configMap: "gateway-xds" };
        const facts: RoutesGiven = { ...routesInputs(target, config, dev), kubeconfig };
        const start = performance.now();
        await writeRoutes(facts, new Date());
        const write = performance.now() - start;
        let projected = NaN;
        while (performance.now() - start < WAIT_MS) {
          if (readFileSync(file, "utf8").includes(`/${ns}/app`)) {
            projected = performance.now() - start;
            break;
          }
          await sleep(20);
        }
        done.push({ write, projected });
        console.error(
          `gap ${gap / 1000}s, round ${i}: write ${write.toFixed(0)} ms, projected ${Number.isNaN(projected) ? `not within ${WAIT_MS / 1000} s` : `${projected.toFixed(0)} ms`} after the write started`,
        );
      }
      results.push({ gap, rounds: done });
    }
  } finally {
    await stopLocalCluster(cluster, true);
  }
  const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
  const ms = (x: number) => (Number.isNaN(x) ? "never" : `${x.toFixed(0)} ms`);
  console.log(`\nprojected after a routes write of 5,000 pairs (from the write's start), ${rounds} rounds each`);
  console.log(
    `${"gap".padEnd(6)}${"write p50".padStart(11)}${"projected p50".padStart(15)}${"projected max".padStart(15)}`,
  );
  for (const r of results) {
    const writes = r.rounds.map((x) => x.write);
    const projected = r.rounds.map((x) => x.projected);
    const max = projected.some(Number.isNaN) ? NaN : Math.max(...projected);
    console.log(
      `${`${r.gap / 1000}s`.padEnd(6)}${ms(p50(writes)).padStart(11)}${ms(p50(projected.filter((x) => !Number.isNaN(x)))).padStart(15)}${ms(max).padStart(15)}`,
    );
  }
}

void main().catch((e: Error) => {
  console.error(e);
  process.exit(1);
});
