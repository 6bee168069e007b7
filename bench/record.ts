// Benchmark (not a test): what the record step costs (the engine run that
// writes a sync's routes into the stack's state) at 100, 1,000 and 5,000
// dev/PR pairs, and where its time goes. On a fresh local cluster with the
// dev stack deployed (dev/PR routes on demand, the layout that holds 5,000),
// for each size it writes a sync of that many synthetic pairs (namespaces of
// 10 Services) as sync-routes does, and records it with route-sync/sync.ts
// `record`, as a sync-routes run does (its own stack handle: the stack
// selected, the program loaded, the engine run, the state read back), timed
// whole ("record"), by the CPU it used ("cpu": this process's and that of
// the processes it started and reaped, the engine and its plugins) and from
// the engine's events:
//
//   start         until the engine's first event (the stack selected, the
//                 CLI and its plugins started)
//   steps         from there to the last resource step done (the program
//                 declaring the stack, and every step)
//   routes steps  each routes resource's step (check, diff, update)
//   end           from the last step to the engine run's end (stack outputs,
//                 the state)
//
// Prints the sizes side by side, with the size of the stack's exported state.
//
//   npx tsx bench/record.ts [--sizes 100,1000,5000]
//
// Needs the real components (bash scripts/build-components.sh) and root (the
// local node). Takes a few minutes.
import { parseArgs } from "node:util";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { plan, record, writeLive } from "../route-sync/sync.js";
import { ProjectStack, routesInState, stackConfigOf } from "../route-sync/stack.js";
import { startLocalCluster, stopLocalCluster } from "../test/support/cluster.js";
import { cpuSeconds } from "./cpu.js";
import { syntheticNamespaces } from "../test/fixtures/namespaces.js";
import { ProgramStack } from "../test/support/program.js";

const { values } = parseArgs({ options: { sizes: { type: "string", default: "100,1000,5000" } } });
const sizes = values.sizes.split(",").map((s) => {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 10 || n > 10_000 || n % 10 !== 0)
    throw new Error(`--sizes: "${s}" is not a whole number of pairs from 10 to 10000, a multiple of 10`);
  return n;
});
const CLUSTERS_KEY = "envoy-gateways:devNamespaces.clusters";

interface Row {
  pairs: number;
  /** `record` as a sync-routes run calls it, in milliseconds. */
  record: number;
  /** The CPU seconds it used: this process's and those of the processes it started (the engine, its plugins). */
  cpu: number;
  /** Its engine run, from the engine's events. */
  start: number;
  steps: number;
  routes: number[];
  end: number;
  stateBytes: number;
}

/** Plans and writes a sync of `pairs` synthetic pairs as sync-routes does, then records it; timed. */
async function recordSync(stack: ProjectStack, pairs: number): Promise<Omit<Row, "stateBytes">> {
  const devNamespaces = syntheticNamespaces(pairs, 10);
  const [sync, state] = await Promise.all([stackConfigOf(stack), routesInState(stack)]);
  const now = new Date();
  const inState = Object.fromEntries(state.map((r) => [r.name, r.outputs.dataDigest]));
  const written = await writeLive(plan(state, sync, devNamespaces, now), devNamespaces, now, inState);
  const events: { at: number; event: EngineEvent }[] = [];
  const t0 = Date.now();
  const before = cpuSeconds("self")!;
  await record(stack, state, written, {
    log: (line) => console.error(line),
    onEvent: (event) => events.push({ at: Date.now(), event }),
  });
  const total = Date.now() - t0;
  const after = cpuSeconds("self")!;
  const cpu = after.own + after.children - before.own - before.children;
  const first = events[0]?.at ?? t0;
  const done = events.filter((e) => e.event.resOutputsEvent);
  const lastStep = done.at(-1)?.at ?? first;
  const engineEnd = events.at(-1)?.at ?? lastStep;
  const routes = events
    .filter((e) => e.event.resourcePreEvent?.metadata.urn.endsWith("-routes"))
    .map((e) => {
      const urn = e.event.resourcePreEvent!.metadata.urn;
      const out = done.find((o) => o.event.resOutputsEvent!.metadata.urn === urn);
      return out ? out.at - e.at : NaN;
    });
  return { pairs, record: total, cpu, start: first - t0, steps: lastStep - first, routes, end: engineEnd - lastStep };
}

async function main(): Promise<void> {
  const cluster = await startLocalCluster();
  const rows: Row[] = [];
  try {
    const program = await ProgramStack.create(cluster, { from: "dev", stack: "bench" });
    await program.ws.ok(["config", "set", "--path", CLUSTERS_KEY, "on-demand"]);
    console.error("pulumi up of the dev stack (local) ...");
    await program.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    // The Automation API runs in this process: give it the workspace's engine environment.
    Object.assign(process.env, program.ws.env);
    const stack = new ProjectStack(program.ws.stack, program.ws.programDir);
    for (const pairs of sizes) {
      console.error(`recording ${pairs} pairs ...`);
      // As a sync-routes run: a stack handle of its own, selected on first use.
      const row = await recordSync(new ProjectStack(stack.name, stack.workDir), pairs);
      rows.push({ ...row, stateBytes: Buffer.byteLength(await stack.pulumi(["stack", "export"])) });
    }
  } finally {
    await stopLocalCluster(cluster, true);
  }
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`.padEnd(9);
  console.log(
    `${"pairs".padEnd(7)}${"record".padEnd(9)}${"cpu".padEnd(9)}${"start".padEnd(9)}${"steps".padEnd(9)}${"routes steps".padEnd(15)}${"end".padEnd(9)}state`,
  );
  for (const r of rows) {
    const routes = r.routes.map((ms) => `${(ms / 1000).toFixed(1)} s`).join(" + ");
    console.log(
      `${String(r.pairs).padEnd(7)}${s(r.record)}${s(r.cpu * 1000)}${s(r.start)}${s(r.steps)}${routes.padEnd(15)}${s(r.end)}${(r.stateBytes / 1e6).toFixed(2)} MB`,
    );
  }
}

main().catch((e: unknown) => {
  console.error(`bench-record: ${(e as Error).stack ?? String(e)}`);
  process.exit(1);
});
