// Benchmark (not a test): a dev/PR namespace comes and goes, end to end on the
// local node. On a fresh local cluster with the dev stack deployed (real
// gateway pods) and `dist/sync-routes --stack <s> --watch` running as CI
// would run it, for each of N namespaces in turn:
//
//   add     label the namespace and create its routed Service (its pod is
//           already running and ready), then time until the first request
//           through the gateway pod succeeds (200 from that pod)
//   remove  delete the namespace, then time until the route answers 404
//
// once the watcher is in its steady state: its first sync done and the route
// status of what it found (an annotation on every routed Service) written.
// Every other namespace is added, and deleted, only once the watcher is idle
// (its records caught up with its last write); the others right after the
// one before, while the watcher records that one's routes. Each step says
// which it met, and p50s are printed for each.
//
// Each time is split into "ConfigMap" (until the gateway's xDS ConfigMap holds,
// or no longer holds, the route, as a watch on it sees: discovery and
// sync-routes) and the rest
// (the kubelet projecting the ConfigMap into the pod with its default
// settings, Envoy's reload, DNS). Prints each namespace and p50/max.
//
// --background N routes N dev/PR pairs besides (namespaces of 10 labelled
// Services, without pods or a selector) before the watch starts, so the timed namespace is
// one more among N; --clusters sets devNamespaces.clusters on the dev stack
// (per-service or on-demand); --record-niceness is the watcher's (its default,
// 10; 0 runs the records' engine at the watcher's own priority); --debounce
// is the watcher's quiet time after a change (its default, 100ms). Each takes a
// comma-separated list: every combination runs one after the other on a fresh
// cluster each, in one run, and a last table puts them side by side. It also prints the watcher's first sync and its
// records (the engine run that writes the routes into the state), and what
// used the cores while the namespaces were timed (CPU seconds by process,
// from /proc: the watcher with the engine runs it started, the API server,
// the gateways' Envoys ...).
//
//   npx tsx bench/namespace.ts [--namespaces 5] [--background 0,1000,5000] [--clusters per-service,on-demand] [--record-niceness 0,10] [--debounce 100ms,25ms]
//
// Needs the real components and root (the local node). Takes a few minutes.
import { spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { cpuTimes } from "./cpu.js";
import { createBackground, p50, routeIn, seconds, XdsVersions } from "./dev-namespaces.js";
import { MAX_NICENESS, parseNiceness } from "../route-sync/niced-cli.js";
import { parseDuration } from "../routing/units.js";
import { startLocalCluster, stopLocalCluster } from "../test/support/cluster.js";
import { repoRoot } from "../test/support/components.js";
import { GatewayClient } from "../test/support/gateway-client.js";
import { AUTH_TOKEN } from "../test/support/local-stack.js";
import { buildCli, ProgramStack } from "../test/support/program.js";
import { until, Workloads } from "../test/support/workloads.js";

const USAGE =
  "usage: npx tsx bench/namespace.ts [--namespaces N] [--background PAIRS,...] [--clusters per-service,on-demand] [--record-niceness N,...] [--debounce 100ms,2s,...]   (N >= 5)";
const { values } = parseArgs({
  options: {
    namespaces: { type: "string", default: "5" },
    background: { type: "string", default: "0" },
    clusters: { type: "string" },
    "record-niceness": { type: "string" },
    debounce: { type: "string" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const count = Number(values.namespaces);
if (!Number.isInteger(count) || count < 5 || count > 50)
  throw new Error(`--namespaces must be a whole number from 5 to 50 (got ${values.namespaces})\n${USAGE}`);
const backgrounds = values.background.split(",").map((b) => {
  const n = Number(b);
  if (b.trim() === "" || !Number.isInteger(n) || n < 0 || n > 10_000 || n % 10 !== 0)
    throw new Error(
      `--background: "${b}" is not a whole number of pairs from 0 to 10000, a multiple of 10 (got ${values.background})\n${USAGE}`,
    );
  return n;
});
const layouts: (string | undefined)[] = values.clusters?.split(",") ?? [undefined];
for (const l of values.clusters === undefined ? [] : layouts)
  if (l !== "per-service" && l !== "on-demand")
    throw new Error(`--clusters must list per-service and/or on-demand (got ${values.clusters})\n${USAGE}`);
/** undefined: the watcher's default. */
const nicenesses: (number | undefined)[] = values["record-niceness"]?.split(",").map((t) => {
  const n = parseNiceness(t);
  if (n === undefined)
    throw new Error(`--record-niceness: "${t}" is not a whole number from 0 to ${MAX_NICENESS}\n${USAGE}`);
  return n;
}) ?? [undefined];
/** undefined: the watcher's default. */
const debounces: (string | undefined)[] = values.debounce?.split(",").map((t) => {
  // As sync-routes reads its --debounce.
  if (parseDuration(t, ["ms", "s"]) === undefined)
    throw new Error(`--debounce: "${t}" is not a whole number with a unit (ms, s), such as 100ms or 2s\n${USAGE}`);
  return t;
}) ?? [undefined];
const CLUSTERS_KEY = "envoy-gateways:devNamespaces.clusters";
const BACKGROUND_SERVICES = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"];

// Fine enough that the poll adds little to what it times (on average half of it).
const POLL_MS = 20;
const LIMIT_MS = 300_000;

/** One run's figures, for the table that puts the runs side by side. */
interface Summary {
  background: number;
  layout: string;
  /** The watcher's --record-niceness, as run. */
  niceness: string;
  /** The watcher's --debounce, as run. */
  debounce: string;
  /** Label to first 200: p50 and max, ms; label to the ConfigMap holding the route, p50. */
  add: number;
  addMax: number;
  addConfigMap: number;
  /** Label to first 200, p50, ms, of the namespaces labelled while the watcher was idle, and while it recorded (undefined: none). */
  addIdle?: number;
  addRecording?: number;
  /** Deletion to 404, p50, ms. */
  remove: number;
  /** The watcher's records that ended while the namespaces were timed, seconds each. */
  records: number[];
  /** Share of both cores in use while timed, %. */
  busy: number;
}

/** What the watcher was doing when a step began: nothing, or recording routes it wrote earlier. */
type WatcherState = "idle" | "recording";

interface Timing {
  namespace: string;
  addConfigMap: number;
  add: number;
  /** The watcher when the namespace was labelled. */
  addWatcher: WatcherState;
  removeConfigMap: number;
  remove: number;
  /** The watcher when the namespace was deleted. */
  removeWatcher: WatcherState;
}

/** The p50 of the namespaces' first 200 under `key`, when there are any. */
const groupP50 = (key: "addIdle" | "addRecording", ts: Timing[]) =>
  ts.length ? { [key]: p50(ts.map((t) => t.add)) } : {};

/**
 * What used the cores between two cpuTimes() samples `wallMs` apart, the
 * largest first: by process name, the watcher and this script by role.
 */
function cpuUse(
  before: ReturnType<typeof cpuTimes>,
  after: ReturnType<typeof cpuTimes>,
  wallMs: number,
  roles: Record<number, string>,
): { line: string; busy: number } {
  const used = new Map<string, number>();
  const add = (label: string, seconds: number) => used.set(label, (used.get(label) ?? 0) + seconds);
  for (const [pid, t] of after) {
    const was = before.get(pid) ?? { own: 0, children: 0 };
    const role = roles[pid];
    if (role === undefined) add(t.name, t.own + t.children - was.own - was.children);
    else {
      add(role, t.own - was.own);
      add(`${role}'s child processes`, t.children - was.children);
    }
  }
  const capacity = (wallMs / 1000) * availableParallelism();
  const busy = [...used.values()].reduce((a, b) => a + b, 0);
  const top = [...used].sort((a, b) => b[1] - a[1]).slice(0, 8);
  const percent = Math.round((busy / capacity) * 100);
  return {
    busy: percent,
    line: `CPU while the namespaces were timed (${seconds(wallMs)} on ${availableParallelism()} cores, ${percent} % busy): ${top.map(([label, s]) => `${label} ${s.toFixed(1)} s (${Math.round((s / capacity) * 100)} %)`).join(", ")}`,
  };
}

/** One run's settings: undefined is the dev stack's layout, the watcher's default. */
interface RunSettings {
  clusters: string | undefined;
  background: number;
  niceness: number | undefined;
  debounce: string | undefined;
}

/** One combination of settings on a fresh local cluster: the report's lines and its figures. */
async function run({
  clusters,
  background,
  niceness,
  debounce,
}: RunSettings): Promise<{ report: string[]; summary: Summary }> {
  const report: string[] = [];
  let summary: Summary | undefined;
  const cluster = await startLocalCluster();
  let stack: ProgramStack | undefined;
  let gateway: GatewayClient | undefined;
  let watch: ReturnType<typeof spawn> | undefined;
  let xds: XdsVersions | undefined;
  try {
    stack = await ProgramStack.create(cluster, { from: "dev", stack: "bench" });
    if (clusters) await stack.ws.ok(["config", "set", "--path", CLUSTERS_KEY, clusters]);
    console.error("pulumi up of the dev stack (local) ...");
    await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    gateway = await GatewayClient.start(cluster, "gateway");
    const w = new Workloads(cluster);
    const devHost = `internal.${stack.config.domain}`;
    const names = Array.from({ length: background / 10 }, (_, i) => `pr-bg-${i}`);
    const started = performance.now();
    await createBackground(w, names, BACKGROUND_SERVICES);
    if (background) console.error(`${background} background pairs created in ${seconds(performance.now() - started)}`);

    watch = spawn(
      join(repoRoot, "dist", "sync-routes"),
      [
        "--stack",
        stack.ws.stack,
        "--project-dir",
        stack.ws.programDir,
        "--watch",
        ...(niceness === undefined ? [] : ["--record-niceness", String(niceness)]),
        ...(debounce === undefined ? [] : ["--debounce", debounce]),
      ],
      { cwd: repoRoot, env: stack.ws.env, stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    let out = "";
    watch.stdout!.on("data", (d: Buffer) => (out += d));
    watch.stderr!.on("data", (d: Buffer) => (out += d));
    const watchStarted = performance.now();
    await until(
      "sync-routes --watch to finish its first sync",
      600_000,
      async () => /routes in step|routes live/.test(out) || undefined,
      async () => out,
    );
    const firstSync = performance.now() - watchStarted;
    // What is timed is a namespace coming to a watcher in its steady state: the route status
    // of the background (an annotation on each of its Services) is written first.
    if (background)
      await until(
        "the background's route status",
        1_200_000,
        async () => /route status: \d+ Service annotations written/.test(out) || undefined,
        async () => out,
      );
    const statusSettled = performance.now() - watchStarted;

    xds = await XdsVersions.start(cluster.kubeconfig, stack.config.namespace);
    const heldAt = (what: string, since: number, holds: (rds: string) => boolean) =>
      xds!.heldAt(what, since, holds, LIMIT_MS);
    const status = async (path: string) =>
      (await gateway!.request(devHost, path, { headers: { authorization: `Bearer ${AUTH_TOKEN}` } })).status;
    const namespaces = Array.from({ length: count }, (_, i) => `pr-bench-${i}`);
    // The pods first, in namespaces not yet routed: what is timed is the route, not a pod's start,
    // and a namespace can come right after the one before, while the watcher records that one.
    for (const ns of namespaces) {
      await w.createNamespace(ns, false);
      await w.createWorkload(ns, { name: "app" });
    }
    for (const ns of namespaces) await w.waitReady(ns, "app", 1);
    const timings: Timing[] = [];
    const cpuBefore = cpuTimes();
    const timedFrom = performance.now();
    const outBefore = out.length;
    // The watcher is idle once a record has caught up with its last live write ("routes live").
    const watcherState = (): WatcherState =>
      out.lastIndexOf("every route written so far") > out.lastIndexOf("routes live") ? "idle" : "recording";
    const watcherIdle = () =>
      until(
        "the watcher's records to catch up",
        LIMIT_MS,
        async () => watcherState() === "idle" || undefined,
        async () => out,
      );
    for (const [i, ns] of namespaces.entries()) {
      // Every other namespace comes and goes with the watcher idle; the others right after the
      // one before, while the watcher records it (as when namespaces come one after another).
      const waitIdle = i % 2 === 0;
      const route = routeIn(ns, "app");

      if (waitIdle) await watcherIdle();
      const addWatcher = watcherState();
      const added = performance.now();
      await w.labelNamespace(ns);
      await w.createRoutedService(ns, { name: "app" });
      const addConfigMap =
        (await heldAt(`${ns}'s route in the ConfigMap`, added, (rds) => rds.includes(route))) - added;
      await until(
        `${ns}'s route to answer 200`,
        LIMIT_MS,
        async () => (await status(`/${ns}/app/`)) === 200 || undefined,
        undefined,
        POLL_MS,
      );
      const add = performance.now() - added;

      if (waitIdle) await watcherIdle();
      const removeWatcher = watcherState();
      const removed = performance.now();
      await w.deleteNamespace(ns);
      const removeConfigMap =
        (await heldAt(`${ns}'s route to leave the ConfigMap`, removed, (rds) => !rds.includes(route))) - removed;
      await until(
        `${ns}'s route to answer 404`,
        LIMIT_MS,
        async () => (await status(`/${ns}/app/`)) === 404 || undefined,
        undefined,
        POLL_MS,
      );
      const remove = performance.now() - removed;
      timings.push({ namespace: ns, addConfigMap, add, addWatcher, removeConfigMap, remove, removeWatcher });
      console.error(
        `${ns}: first 200 after ${seconds(add)} (ConfigMap ${seconds(addConfigMap)}; watcher ${addWatcher}), 404 after ${seconds(remove)} (ConfigMap ${seconds(removeConfigMap)}; watcher ${removeWatcher})`,
      );
    }
    const records = [...out.slice(outBefore).matchAll(/recorded in the stack's state \((\d+(?:\.\d+)?)s\)/g)].map((m) =>
      Number(m[1]),
    );
    const cpu = cpuUse(cpuBefore, cpuTimes(), performance.now() - timedFrom, {
      [watch.pid!]: "sync-routes --watch",
      [process.pid]: "this script (polling the gateway)",
    });
    for (const ns of namespaces) await w.waitNamespaceGone(ns);

    report.push(
      `\n${count} namespaces, one at a time, besides ${background.toLocaleString("en-US")} routed pairs, devNamespaces.clusters: ${clusters ?? "the dev stack's"} (sync-routes --watch, ${debounce === undefined ? "its default debounce of 100ms" : `debounce ${debounce}`}, records at ${niceness === undefined ? "its default niceness" : `niceness ${niceness}`}; kubelet defaults; poll every ${POLL_MS} ms)`,
    );
    report.push(
      `watch's first sync: ${seconds(firstSync)}${background ? `; the background's route status written after ${seconds(statusSettled)}` : ""}; the watcher's steps:`,
    );
    for (const line of out
      .split("\n")
      .filter((l) => /recorded in the stack's state|routes live .* after|route status: /.test(l)))
      report.push(`  ${line}`);
    report.push("");
    report.push("namespace      first 200  (ConfigMap)  watcher     404 after  (ConfigMap)  watcher");
    for (const t of timings) {
      report.push(
        `${t.namespace.padEnd(13)} ${seconds(t.add).padStart(9)}  ${seconds(t.addConfigMap).padStart(11)}  ${t.addWatcher.padEnd(9)}   ${seconds(t.remove).padStart(9)}  ${seconds(t.removeConfigMap).padStart(11)}  ${t.removeWatcher}`,
      );
    }
    const figures = (label: string, of: (xs: number[]) => number | undefined, adds: Timing[], removes: Timing[]) => {
      const shown = (ms: number | undefined) => (ms === undefined ? "-" : seconds(ms));
      const add = (k: "add" | "addConfigMap") => shown(of(adds.map((t) => t[k])));
      const remove = (k: "remove" | "removeConfigMap") => shown(of(removes.map((t) => t[k])));
      report.push(
        `${label.padEnd(13)} ${add("add").padStart(9)}  ${add("addConfigMap").padStart(11)}  ${"".padEnd(9)}   ${remove("remove").padStart(9)}  ${remove("removeConfigMap").padStart(11)}`,
      );
    };
    const orNone = (f: (xs: number[]) => number) => (xs: number[]) => (xs.length ? f(xs) : undefined);
    for (const state of ["idle", "recording"] as const) {
      const adds = timings.filter((t) => t.addWatcher === state);
      const removes = timings.filter((t) => t.removeWatcher === state);
      figures(`p50 ${state}`, orNone(p50), adds, removes);
    }
    figures("p50", orNone(p50), timings, timings);
    figures(
      "max",
      orNone((xs) => Math.max(...xs)),
      timings,
      timings,
    );
    const col = (k: "add" | "addConfigMap" | "remove") => timings.map((t) => t[k]);
    report.push(cpu.line);
    summary = {
      background,
      layout: clusters ?? "the dev stack's",
      niceness: niceness === undefined ? "default" : String(niceness),
      debounce: debounce ?? "default",
      add: p50(col("add")),
      addMax: Math.max(...col("add")),
      ...groupP50(
        "addIdle",
        timings.filter((t) => t.addWatcher === "idle"),
      ),
      ...groupP50(
        "addRecording",
        timings.filter((t) => t.addWatcher === "recording"),
      ),
      addConfigMap: p50(col("addConfigMap")),
      remove: p50(col("remove")),
      records,
      busy: cpu.busy,
    };
  } finally {
    xds?.stop();
    // npm does not pass SIGTERM on to the script: signal its whole process group (its own, detached).
    const group = (signal: NodeJS.Signals) => {
      try {
        process.kill(-watch!.pid!, signal);
      } catch {
        // already gone
      }
    };
    if (watch?.pid) {
      const alive = () => {
        try {
          process.kill(-watch!.pid!, 0);
          return true;
        } catch {
          return false;
        }
      };
      group("SIGTERM");
      for (let i = 0; i < 2400 && alive(); i++) await new Promise((r) => setTimeout(r, 100));
      group("SIGKILL");
    }
    await gateway?.stop();
    await stack?.dispose().catch((e: Error) => console.error(`destroy: ${e.message}`));
    await stopLocalCluster(cluster, true);
  }
  return { report, summary: summary! };
}

/** The runs side by side: a line each. */
function summaryTable(rows: Summary[]): string[] {
  const records = (r: number[]) =>
    r.length === 0 ? "none" : `${Math.min(...r).toFixed(1)}-${Math.max(...r).toFixed(1)} s (${r.length})`;
  return [
    "\nside by side (times from the label or the deletion; records: those that ended while timed, and how many)",
    "pairs  layout            record nice  debounce  first 200 p50 / max  (ConfigMap p50)  idle / recording p50  404 p50  records while timed   CPU busy",
    ...rows.map(
      (r) =>
        `${r.background.toLocaleString("en-US").padStart(5)}  ${r.layout.padEnd(16)}  ${r.niceness.padStart(11)}  ${r.debounce.padStart(8)}  ${`${seconds(r.add)} / ${seconds(r.addMax)}`.padStart(19)}  ${seconds(r.addConfigMap).padStart(15)}  ${`${r.addIdle === undefined ? "-" : seconds(r.addIdle)} / ${r.addRecording === undefined ? "-" : seconds(r.addRecording)}`.padStart(20)}  ${seconds(r.remove).padStart(7)}  ${records(r.records).padEnd(20)}  ${`${r.busy} %`.padStart(8)}`,
    ),
  ];
}

/** Each layout with each background in turn, then the reports one after the other and the table of all. */
async function main(): Promise<void> {
  buildCli();
  const runs: { report: string[]; summary: Summary }[] = [];
  for (const layout of layouts)
    for (const background of backgrounds)
      for (const niceness of nicenesses)
        for (const debounce of debounces) runs.push(await run({ clusters: layout, background, niceness, debounce }));
  for (const r of runs) console.log(r.report.join("\n"));
  if (runs.length > 1) console.log(summaryTable(runs.map((r) => r.summary)).join("\n"));
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
