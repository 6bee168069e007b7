// Benchmark (not a test): what the record step costs (the engine run that
// writes a sync's routes into the stack's state) at 100, 1,000 and 5,000
// dev/PR pairs, and where its time goes. On a fresh local cluster with the
// dev stack deployed (dev/PR routes on demand, the layout that holds 5,000),
// for each size it writes a sync of that many synthetic pairs (namespaces of
// 10 Services) as sync-routes does, and records it with the same targeted
// engine run as route-sync/sync.ts `record`, timed from the engine's events:
//
//   start         until the engine's first event (the CLI and its plugins)
//   steps         from there to the last resource step done (the program
//                 declaring the stack, and every step)
//   routes steps  each routes resource's step (check, diff, update)
//   end           from the last step to the end (stack outputs, the state)
//
// Then one namespace more, recorded by `record` itself, as a sync-routes run
// does it: the stack selected, the program loaded, the engine run and the
// state read back ("record"). Prints the sizes side by side, with the size of
// the stack's exported state.
//
//   npx tsx bench/record.ts [--sizes 100,1000,5000]
//
// Needs the real components (bash scripts/build-components.sh) and root (the
// local node). Takes a few minutes.
import { parseArgs } from "node:util";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { plan, record, writeLive } from "../route-sync/sync.js";
import { ProjectStack, routesInState, stackConfigOf } from "../route-sync/stack.js";
import type { DevNamespaces } from "../routing/table.js";
import { startLocalCluster, stopLocalCluster } from "../test/support/cluster.js";
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
  /** The instrumented engine run and its parts, in milliseconds. */
  total: number;
  start: number;
  steps: number;
  routes: number[];
  end: number;
  /** `record` as sync-routes runs it, one namespace later. */
  recordMs: number;
  stateBytes: number;
}

/** Plans and writes a sync of `devNamespaces` as sync-routes does: what its record step is given. */
async function writeSync(stack: ProjectStack, devNamespaces: DevNamespaces) {
  const [sync, state] = await Promise.all([stackConfigOf(stack), routesInState(stack)]);
  const now = new Date();
  const planned = plan(state, sync, devNamespaces, now);
  const inState = Object.fromEntries(state.map((r) => [r.name, r.outputs.dataDigest]));
  return { state, written: await writeLive(planned, devNamespaces, now, inState) };
}

/** The engine run of `record`, timed from the engine's own events. */
async function engineRun(stack: ProjectStack, pairs: number): Promise<Omit<Row, "recordMs" | "stateBytes">> {
  const { state, written } = await writeSync(stack, syntheticNamespaces(pairs, 10));
  const program = async () => (await import("../program/main.js")).runProgram(written);
  const engine = await stack.automation();
  const events: { at: number; event: EngineEvent }[] = [];
  const t0 = Date.now();
  await engine.up({
    target: state.map((r) => r.urn),
    color: "never",
    program,
    onEvent: (event) => events.push({ at: Date.now(), event }),
  });
  const total = Date.now() - t0;
  const first = events[0]?.at ?? t0;
  const done = events.filter((e) => e.event.resOutputsEvent);
  const lastStep = done.at(-1)?.at ?? first;
  const routes = events
    .filter((e) => e.event.resourcePreEvent?.metadata.urn.endsWith("-routes"))
    .map((e) => {
      const urn = e.event.resourcePreEvent!.metadata.urn;
      const out = done.find((o) => o.event.resOutputsEvent!.metadata.urn === urn);
      return out ? out.at - e.at : NaN;
    });
  return { pairs, total, start: first - t0, steps: lastStep - first, routes, end: t0 + total - lastStep };
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
      const row = await engineRun(stack, pairs);
      // As a sync-routes run records: its own stack handle (selected again), one namespace more.
      const fresh = new ProjectStack(stack.name, stack.workDir);
      const more = { ...syntheticNamespaces(pairs, 10), "pr-one-more": ["web"] };
      const { state, written } = await writeSync(fresh, more);
      const t = Date.now();
      await record(fresh, state, written, { log: (line) => console.error(line) });
      const recordMs = Date.now() - t;
      rows.push({ ...row, recordMs, stateBytes: Buffer.byteLength(await stack.pulumi(["stack", "export"])) });
    }
  } finally {
    await stopLocalCluster(cluster, true);
  }
  const s = (ms: number, width = 9) => `${(ms / 1000).toFixed(1)} s`.padEnd(width);
  console.log(
    `${"pairs".padEnd(7)}${"engine run".padEnd(12)}${"start".padEnd(9)}${"steps".padEnd(9)}${"routes steps".padEnd(15)}${"end".padEnd(9)}${"record".padEnd(9)}state`,
  );
  for (const r of rows) {
    const routes = r.routes.map((ms) => `${(ms / 1000).toFixed(1)} s`).join(" + ");
    console.log(
      `${String(r.pairs).padEnd(7)}${s(r.total, 12)}${s(r.start)}${s(r.steps)}${routes.padEnd(15)}${s(r.end)}${s(r.recordMs)}${(r.stateBytes / 1e6).toFixed(2)} MB`,
    );
  }
}

main().catch((e: unknown) => {
  console.error(`bench-record: ${(e as Error).stack ?? String(e)}`);
  process.exit(1);
});
