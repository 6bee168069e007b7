// Benchmark (not a test): the route controller in the cluster (routeSync.inCluster)
// beside the CI-driven sync, end to end on the local node, in one run.
//
// Latency, for each --background N (N labelled dev/PR namespaces routed besides,
// one Service each, without pods), on a fresh local cluster with the dev stack:
//
//   ci          the sync as a CI job dispatched on the namespace event runs it:
//               `dist/sync-routes --stack <s>` once per event (the job's own
//               queueing and start on a runner are not counted);
//   controller  then routeSync.inCluster switched on with `pulumi up` (2 pods,
//               the image built here and imported), nothing run from outside.
//
//   For each, --namespaces namespaces are made unlabelled beforehand, each with
//   its routed Service and a ready pod; then, one at a time, the namespace is
//   labelled and timed until the gateway's xDS ConfigMap holds its route (a
//   watch sees it) and until the first 200 through the gateway pod (kubelet
//   projection and Envoy's reload included). p50, p99 (nearest rank) and max.
//
// Failover, memory and CPU (unless --no-churn), on a fresh cluster with the
// controller from the first `pulumi up`, dev/PR clusters on demand (as the prod
// stack: 5,000 pairs fit) and --pairs pairs (namespaces of 10 Services without
// pods):
//
//   memory      each controller process's resident set (VmRSS) once the
//               controller has routed every pair and written their status;
//   idle CPU    each process's CPU over --idle-seconds with nothing changing;
//   churn       a labelled namespace with a Service every 2 s for
//               --churn-seconds, production requests (www) through the gateway
//               pod at 20 a second, and the leader's pod deleted a third of the
//               way in: the time to a new ready leader, the churn namespaces
//               routed in the end (every gateway's ConfigMap), the production
//               requests that failed.
//
//   npx tsx bench/route-controller.ts [--namespaces 20] [--background 100,1000] [--pairs 5000] [--idle-seconds 60] [--churn-seconds 60] [--no-churn]
//
// Needs the real components and root (the local node). Takes about 40 minutes
// with the defaults.
import type { CoreV1Api } from "@kubernetes/client-node";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { cpuSeconds } from "./cpu.js";
import { LABEL, ROUTE_STATUS_ANNOTATION } from "../routing/labels.js";
import { createBackground, percentile, PodsTold, routeIn, seconds, XdsVersions } from "./dev-namespaces.js";
import { startLocalCluster, stopLocalCluster, type LocalCluster } from "../test/support/cluster.js";
import { describeFailures, GatewayClient, startLoad } from "../test/support/gateway-client.js";
import { AUTH_TOKEN, type ConfigEdit } from "../test/support/local-stack.js";
import { buildCli, ProgramStack } from "../test/support/program.js";
import {
  controllerPid,
  importRouteControllerImage,
  inCluster,
  inClusterConfigSets,
  metric,
  RouteControllerPods,
} from "../test/support/route-controller.js";
import { until, Workloads } from "../test/support/workloads.js";

const USAGE =
  "usage: npx tsx bench/route-controller.ts [--namespaces 5-100] [--background N,...|none] [--pairs N] [--idle-seconds N] [--churn-seconds N] [--no-churn]";
const { values } = parseArgs({
  options: {
    namespaces: { type: "string", default: "20" },
    background: { type: "string", default: "100,1000" },
    pairs: { type: "string", default: "5000" },
    "idle-seconds": { type: "string", default: "60" },
    "churn-seconds": { type: "string", default: "60" },
    "no-churn": { type: "boolean", default: false },
    "controller-cpu": { type: "string" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}

/** A whole number flag from `min` to `max`, or an error naming the flag, the value and the range. */
function whole(flag: string, text: string, min: number, max: number, multipleOf = 1): number {
  const n = Number(text);
  if (text.trim() === "" || !Number.isInteger(n) || n < min || n > max || n % multipleOf !== 0)
    throw new Error(
      `--${flag}: "${text}" is not a whole number from ${min} to ${max}${multipleOf > 1 ? `, a multiple of ${multipleOf}` : ""}\n${USAGE}`,
    );
  return n;
}
const count = whole("namespaces", values.namespaces, 5, 100);
/** "none": only the memory, CPU and churn part. */
const backgrounds =
  values.background === "none" ? [] : values.background.split(",").map((b) => whole("background", b, 0, 5000));
const pairs = whole("pairs", values.pairs, 10, 10_000, 10);
const idleSeconds = whole("idle-seconds", values["idle-seconds"], 10, 600);
const churnSeconds = whole("churn-seconds", values["churn-seconds"], 12, 600);

const POLL_MS = 20;
const LIMIT_MS = 300_000;
const BACKGROUND_SERVICES = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"];
const AUTH = { authorization: `Bearer ${AUTH_TOKEN}` };

type Sync = "ci" | "controller";

/** One labelled namespace's times, ms from the label. */
interface Timing {
  namespace: string;
  configMap: number;
  /** The gateway pods' xds-digest annotation changed (the kubelets told to project it). */
  told: number;
  served: number;
}

/** One sync at one background: what it timed, and what it costs per event. */
interface LatencyRun {
  sync: Sync;
  background: number;
  timings: Timing[];
  /** ci: each sync-routes run's wall time, ms. */
  runs: number[];
}

/** Everything a fresh cluster with the dev stack gives the runs on it. */
interface Bench {
  cluster: LocalCluster;
  stack: ProgramStack;
  gateway: GatewayClient;
  w: Workloads;
  controller: RouteControllerPods;
  devHost: string;
}

/** A fresh cluster, the dev stack (edited by `edit`) up, the gateway client; `body` runs on it, then all is torn down. */
async function onFreshCluster<T>(
  edit: ((cluster: LocalCluster, image: string) => ConfigEdit) | undefined,
  body: (b: Bench, image: string) => Promise<T>,
): Promise<T> {
  const cluster = await startLocalCluster();
  let stack: ProgramStack | undefined;
  let gateway: GatewayClient | undefined;
  try {
    const image = await importRouteControllerImage(cluster);
    stack = await ProgramStack.create(cluster, { from: "dev", stack: "bench", edit: edit?.(cluster, image) });
    console.error("pulumi up of the dev stack (local) ...");
    await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    gateway = await GatewayClient.start(cluster, "gateway");
    const b: Bench = {
      cluster,
      stack,
      gateway,
      w: new Workloads(cluster),
      controller: new RouteControllerPods(cluster.kubeconfig, stack.config.namespace),
      devHost: `internal.${stack.config.domain}`,
    };
    return await body(b, image);
  } finally {
    await gateway?.stop();
    await stack?.dispose().catch((e: Error) => console.error(`destroy: ${e.message}`));
    await stopLocalCluster(cluster, true);
  }
}

/** Until every routed Service (dev label on its namespace) carries its route status: the writer is settled. */
async function statusWritten(core: CoreV1Api, expected: number): Promise<void> {
  await until(`route status on ${expected} Services`, 1_200_000, async () => {
    const list = await core.listServiceForAllNamespaces({ labelSelector: LABEL.service });
    const n = list.items.filter((s) => s.metadata?.annotations?.[ROUTE_STATUS_ANNOTATION] !== undefined).length;
    return n >= expected || undefined;
  });
}

/**
 * `count` namespaces named `<prefix>-<i>`, unlabelled, each with its routed Service and a ready
 * pod: what is timed is the label, not a pod's start.
 */
async function timedNamespaces(w: Workloads, prefix: string): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  for (const ns of names) {
    await w.createNamespace(ns, false);
    await w.createService(ns, { name: "app" });
  }
  for (const ns of names) await w.waitReady(ns, "app", 1);
  return names;
}

/** Labels each namespace in turn and times its route; `afterLabel` is what the sync does on the event. */
async function timeLabels(
  b: Bench,
  names: string[],
  xds: XdsVersions,
  told: PodsTold,
  afterLabel: () => Promise<void>,
): Promise<Timing[]> {
  const timings: Timing[] = [];
  for (const ns of names) {
    const labelled = performance.now();
    await b.w.labelNamespace(ns);
    const sync = afterLabel();
    const configMap =
      (await xds.heldAt(`${ns}'s route in the ConfigMap`, labelled, (rds) => rds.includes(routeIn(ns, "app")))) -
      labelled;
    await until(
      `${ns}'s route to answer 200 through the gateway pod`,
      LIMIT_MS,
      async () => (await b.gateway.request(b.devHost, `/${ns}/app/`, { headers: AUTH })).status === 200 || undefined,
      undefined,
      POLL_MS,
    );
    const served = performance.now() - labelled;
    await sync;
    const toldAt = (told.toldSince(labelled) ?? Number.NaN) - labelled;
    timings.push({ namespace: ns, configMap, told: toldAt, served });
    console.error(`${ns}: ConfigMap ${seconds(configMap)}, pods told ${seconds(toldAt)}, first 200 ${seconds(served)}`);
  }
  return timings;
}

/** Both syncs at one background, on one cluster: the CI sync first, then the controller switched on. */
async function latency(background: number): Promise<LatencyRun[]> {
  return onFreshCluster(undefined, async (b, image) => {
    const names = Array.from({ length: background }, (_, i) => `pr-bg-${i}`);
    const started = performance.now();
    await createBackground(b.w, names, ["s0"]);
    console.error(`${background} background namespaces made in ${seconds(performance.now() - started)}`);
    const xds = await XdsVersions.start(b.cluster.kubeconfig, b.stack.config.namespace);
    const told = await PodsTold.start(b.cluster.kubeconfig, b.stack.config.namespace);
    const core = b.stack.core();
    try {
      // The CI sync: a first run routes the background, as the job run after each namespace event did.
      const first = await b.stack.runScript("sync-routes", [], 900_000);
      if (first.code !== 0) throw new Error(`sync-routes: ${first.stderr}`);
      await statusWritten(core, background);
      const ciNames = await timedNamespaces(b.w, "pr-ci");
      const runs: number[] = [];
      const ci = await timeLabels(b, ciNames, xds, told, async () => {
        const t0 = performance.now();
        const r = await b.stack.runScript("sync-routes", [], 900_000);
        if (r.code !== 0) throw new Error(`sync-routes: ${r.stderr}`);
        runs.push(performance.now() - t0);
      });
      for (const ns of ciNames) await b.w.deleteNamespace(ns);

      console.error("routeSync.inCluster switched on: pulumi up ...");
      for (const args of inClusterConfigSets(b.cluster, image, 2, values["controller-cpu"])) await b.stack.ws.ok(args);
      await b.stack.ws.ok(["up", "--yes", "--skip-preview"], 900_000);
      await b.controller.readyHolder("", 300_000);
      const ctlNames = await timedNamespaces(b.w, "pr-ctl");
      // Settled: the ci namespaces' deletions written, the route status of all in place.
      await until("the deleted namespaces' routes gone", LIMIT_MS, async () => {
        const data =
          (await core.readNamespacedConfigMap({ name: "gateway-xds", namespace: b.stack.config.namespace })).data ?? {};
        return !(data["rds.yaml"] ?? "").includes("/pr-ci-") || undefined;
      });
      await statusWritten(core, background);
      const controller = await timeLabels(b, ctlNames, xds, told, async () => {});
      return [
        { sync: "ci", background, timings: ci, runs },
        { sync: "controller", background, timings: controller, runs: [] },
      ];
    } finally {
      xds.stop();
      told.stop();
    }
  });
}

/** VmRSS (or another /proc status field in kB, such as VmHWM: the peak) of a process, MiB. */
function rssMiB(pid: number, field = "VmRSS"): number {
  const kb = Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
  return kb / 1024;
}

/** Memory, idle CPU and failover under churn, with the controller at `pairs` pairs. */
async function churn(): Promise<string[]> {
  return onFreshCluster(
    // On demand, as the prod stack: 5,000 pairs fit (a cluster per Service, the dev stack's, fits about 1,500).
    (cluster, image) => (raw) => ({
      ...inCluster(cluster, image)(raw),
      devNamespaces: { ...(raw.devNamespaces as object), clusters: "on-demand" },
    }),
    async (b) => {
      const report: string[] = [];
      const names = Array.from({ length: pairs / 10 }, (_, i) => `pr-bg-${i}`);
      const started = performance.now();
      await createBackground(b.w, names, BACKGROUND_SERVICES);
      console.error(`${pairs} background pairs made in ${seconds(performance.now() - started)}`);
      const core = b.stack.core();
      await statusWritten(core, pairs);
      const leader = await b.controller.readyHolder();
      const pods = (await b.controller.pods()).map((p) => p.metadata!.name!);
      const pids = Object.fromEntries(pods.map((p) => [p, controllerPid(p)]));
      const role = (p: string) => (p === leader ? "leader" : "standby");
      report.push(
        `\nmemory at ${pairs.toLocaleString("en-US")} pairs (${names.length} namespaces of 10 Services), routed and their status written:`,
      );
      for (const p of pods) {
        const m = await b.controller.metricsOf(p);
        const mib = (name: string) => (metric(m, name) / 1048576).toFixed(0);
        report.push(
          `  ${role(p).padEnd(8)} ${p}: VmRSS ${rssMiB(pids[p]!).toFixed(0)} MiB (V8 heap ${mib("nodejs_heap_size_used_bytes")} used of ${mib("nodejs_heap_size_total_bytes")} MiB, external ${mib("nodejs_external_memory_bytes")} MiB)`,
        );
      }

      // Settled first: the Events of the route status, and the leader's first renders' garbage.
      await new Promise((r) => setTimeout(r, 30_000));
      const before = Object.fromEntries(pods.map((p) => [p, cpuSeconds(pids[p]!)!]));
      await new Promise((r) => setTimeout(r, idleSeconds * 1000));
      report.push(`CPU idle over ${idleSeconds} s (nothing changing, 30 s after the status was written):`);
      for (const p of pods) {
        const after = cpuSeconds(pids[p]!)!;
        const m = ((after.own - before[p]!.own) / idleSeconds) * 1000;
        report.push(`  ${role(p).padEnd(8)} ${p}: ${m.toFixed(1)} m`);
      }

      const load = startLoad(() => b.gateway.request(`www.${b.stack.config.domain}`, "/", { timeoutMs: 5000 }), {
        rate: 20,
        maxMs: (churnSeconds + 120) * 1000,
        maxRequests: 20 * (churnSeconds + 120),
      });
      const churned: string[] = [];
      let failover: { from: string; to: string; ms: number } | undefined;
      const deleteLeader = (async () => {
        await new Promise((r) => setTimeout(r, (churnSeconds * 1000) / 3));
        const old = await b.controller.holder();
        const t0 = performance.now();
        await core.deleteNamespacedPod({ name: old, namespace: b.stack.config.namespace });
        const to = await b.controller.readyHolder(old, 60_000, 100);
        failover = { from: old, to, ms: performance.now() - t0 };
        console.error(`leader ${old} deleted: ${to} leads ${seconds(failover.ms)} later`);
      })();
      const t0 = performance.now();
      for (let i = 0; performance.now() - t0 < churnSeconds * 1000; i++) {
        const due = t0 + i * 2000;
        if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
        const ns = `pr-churn-${i}`;
        await b.w.createNamespace(ns);
        await b.w.createRoutedService(ns, { name: "app", selectsPods: false });
        churned.push(ns);
      }
      await deleteLeader;
      const missing = async () => {
        const out: string[] = [];
        for (const gw of ["gateway", "internal-gateway"]) {
          const rds = (await core.readNamespacedConfigMap({ name: `${gw}-xds`, namespace: b.stack.config.namespace }))
            .data?.["rds.yaml"];
          out.push(...churned.filter((ns) => !(rds ?? "").includes(routeIn(ns, "app"))).map((ns) => `${gw}: ${ns}`));
        }
        return out;
      };
      const end = performance.now();
      let left: string[] = [];
      await until(
        "every churn namespace routed on both gateways",
        LIMIT_MS,
        async () => (left = await missing()).length === 0 || undefined,
        async () => left.join(", "),
      ).catch((e: Error) => console.error(e.message));
      const caughtUp = performance.now() - end;
      load.stop();
      const result = await load.result;
      report.push(
        `churn: a namespace every 2 s for ${churnSeconds} s (${churned.length}), the leader's pod deleted at ${seconds((churnSeconds * 1000) / 3)}:`,
      );
      report.push(
        `  new ready leader ${failover ? `${seconds(failover.ms)} after the delete (${failover.from} -> ${failover.to})` : "none"}`,
      );
      report.push(
        `  namespaces not routed in the end: ${left.length} of ${churned.length} (the last routed ${seconds(caughtUp)} after the last was made)`,
      );
      report.push(
        `  production requests: ${result.samples.length} sent, ${result.failures.length} failed${result.failures.length ? `: ${describeFailures(result)}` : ""}`,
      );
      report.push("  after the churn:");
      for (const p of (await b.controller.pods()).map((pod) => pod.metadata!.name!)) {
        const pid = controllerPid(p);
        report.push(
          `    ${p === (await b.controller.holder()) ? "leader " : "standby"} ${p}: VmRSS ${rssMiB(pid).toFixed(0)} MiB, peak (VmHWM) ${rssMiB(pid, "VmHWM").toFixed(0)} MiB`,
        );
      }
      return report;
    },
  );
}

/** One line per sync and background: p50, p99, max of both times. */
function latencyTable(runs: LatencyRun[]): string[] {
  const fig = (xs: number[]) =>
    `${seconds(percentile(xs, 0.5))} / ${seconds(percentile(xs, 0.99))} / ${seconds(Math.max(...xs))}`;
  return [
    `\nlabel to route, ${count} namespaces each, one at a time (p50 / p99 / max; p99 is the nearest rank; goal: first 200 p50 <= 1 s, p99 <= 3 s)`,
    "sync          background namespaces  ConfigMap holds the route   pods told p50   first 200 through the gateway pod   sync-routes run p50",
    ...runs.map((r) => {
      const ci = r.runs.length ? seconds(percentile(r.runs, 0.5)) : "-";
      return `${r.sync.padEnd(12)}  ${r.background.toLocaleString("en-US").padStart(21)}  ${fig(r.timings.map((t) => t.configMap)).padStart(25)}   ${seconds(
        percentile(
          r.timings.map((t) => t.told),
          0.5,
        ),
      ).padStart(17)}   ${fig(r.timings.map((t) => t.served)).padStart(33)}   ${ci.padStart(19)}`;
    }),
  ];
}

async function main(): Promise<void> {
  buildCli();
  const runs: LatencyRun[] = [];
  for (const background of backgrounds) runs.push(...(await latency(background)));
  const churnReport = values["no-churn"] ? [] : await churn();
  for (const r of runs) {
    console.log(`\n${r.sync} at ${r.background.toLocaleString("en-US")} background namespaces:`);
    for (const t of r.timings)
      console.log(
        `  ${t.namespace.padEnd(12)} ConfigMap ${seconds(t.configMap)}, pods told ${seconds(t.told)}, first 200 ${seconds(t.served)}`,
      );
  }
  console.log(latencyTable(runs).join("\n"));
  console.log(churnReport.join("\n"));
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
