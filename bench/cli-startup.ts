// Benchmark (not a test): the CLIs run from source the old way (`npm run -s <name> -- ...`:
// npm, then tsx compiling the TypeScript) against the compiled ones (`dist/<name>`: a
// launcher that execs Node on one bundle), side by side in one run, interleaved:
// `--help` (starting up), `render` of the prod stack with 1,500 dev/PR pairs (a
// namespaces file, as bench/render.ts makes them), and a `sync-routes` with nothing to
// change: of `--stack` when it exists in the project (as scripts/quickstart.sh leaves
// stack `local`), or, with --local-cluster, of the dev stack deployed on a local cluster
// this script starts and removes again (the real components: scripts/build-components.sh).
// Builds dist/ first. Prints wall time (median, min..max) and the CPU time of the
// command's processes (user + system, median; what a busy machine's load does not
// inflate).
//
//   npx tsx bench/cli-startup.ts [--rounds 5] [--stack local | --local-cluster]
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { syntheticNamespaces } from "../test/fixtures/namespaces.js";
import { startLocalCluster, stopLocalCluster, type LocalCluster } from "../test/support/cluster.js";
import { buildCli, ProgramStack } from "../test/support/program.js";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "5" },
    stack: { type: "string", default: "local" },
    "local-cluster": { type: "boolean" },
  },
});
const rounds = Number(values.rounds);
const root = join(__dirname, "..");
const time = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;

interface Run {
  wallMs: number;
  cpuMs?: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command from the project's directory; its wall time, and its processes' CPU time when /usr/bin/time is there. */
function run(command: string[], env: NodeJS.ProcessEnv = process.env): Run {
  const argv = time ? [time, "-f", "\ncli-startup-cpu %U %S", ...command] : command;
  const start = performance.now();
  const r = spawnSync(argv[0]!, argv.slice(1), { cwd: root, env, encoding: "utf8", maxBuffer: 1 << 28 });
  const wallMs = performance.now() - start;
  const cpu = /\ncli-startup-cpu ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
  return {
    wallMs,
    ...(cpu ? { cpuMs: (Number(cpu[1]) + Number(cpu[2])) * 1000 } : {}),
    code: r.status,
    stdout: r.stdout,
    stderr: cpu ? r.stderr.slice(0, cpu.index) : r.stderr,
  };
}

interface Case {
  name: string;
  /** The same CLI and arguments, run each way. */
  cli: string;
  args: (way: "source" | "compiled") => string[];
  /** What a good run prints (checked on every run: a failed run is not a figure). */
  expect: RegExp;
  /** The environment to run it in (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

const scratch = mkdtempSync(join(tmpdir(), "cli-startup-"));
const namespacesFile = join(scratch, "namespaces.yaml");
// JSON is YAML: 1,500 pairs in 375 namespaces of 4 services.
writeFileSync(namespacesFile, JSON.stringify(syntheticNamespaces(1500)));
const outFor = (way: string) => join(scratch, `out-${way}`);

const cases: Case[] = [
  { name: "render --help", cli: "render", args: () => ["--help"], expect: /^usage: / },
  { name: "sync-routes --help", cli: "sync-routes", args: () => ["--help"], expect: /^usage: / },
  { name: "shifts --help", cli: "shifts", args: () => ["--help"], expect: /^usage: / },
  {
    name: "render, 1,500 pairs",
    cli: "render",
    args: (way) => ["--stack", "prod", "--out", outFor(way), "--namespaces", namespacesFile],
    expect: /1500 dev routes in 375 namespaces/,
  },
];

/** The no-op sync's row: of --stack in the project, or of the dev stack on a local cluster (started here). */
async function syncCase(): Promise<{ sync?: Case; cleanup: () => Promise<void> }> {
  if (values["local-cluster"]) {
    console.error("starting a local cluster, then pulumi up of the dev stack on it ...");
    const cluster: LocalCluster = await startLocalCluster();
    let stack: ProgramStack | undefined;
    const cleanup = async () => {
      try {
        await stack?.dispose();
      } finally {
        await stopLocalCluster(cluster, true);
      }
    };
    try {
      stack = await ProgramStack.create(cluster, { from: "dev", stack: "startup" });
      await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    } catch (e) {
      await cleanup();
      throw e;
    }
    const args = ["--stack", stack.ws.stack, "--project-dir", stack.ws.programDir];
    const sync = {
      name: "sync-routes, no change (local cluster)",
      cli: "sync-routes",
      args: () => args,
      expect: /nothing to change \([\d.]+s\)/,
      env: stack.ws.env,
    };
    return { sync, cleanup };
  }
  const pulumiOnPath = spawnSync("pulumi", ["version"], { encoding: "utf8" }).status === 0;
  const stackFile = join(root, `Pulumi.${values.stack}.yaml`);
  if (pulumiOnPath && existsSync(stackFile)) {
    const sync = {
      name: `sync-routes, no change (stack ${values.stack})`,
      cli: "sync-routes",
      args: () => ["--stack", values.stack],
      expect: /nothing to change \([\d.]+s\)/,
    };
    return { sync, cleanup: async () => {} };
  }
  console.log(
    `(no sync-routes row: ${pulumiOnPath ? `no stack file ${stackFile}` : "the pulumi CLI is not on PATH"}; --local-cluster deploys one, or scripts/quickstart.sh stack local)`,
  );
  return { cleanup: async () => {} };
}

async function main(): Promise<void> {
  const built = performance.now();
  buildCli();
  console.log(`npm run build: ${((performance.now() - built) / 1000).toFixed(1)} s (once, not per run)\n`);
  const { sync, cleanup } = await syncCase();
  if (sync) cases.push(sync);
  const ways = {
    source: (c: Case) => ["npm", "run", "-s", c.cli, "--", ...c.args("source")],
    compiled: (c: Case) => [join(root, "dist", c.cli), ...c.args("compiled")],
  } as const;
  const results = new Map<string, Run[]>();
  try {
    // Interleaved, so that a change in the machine's load hits both ways alike.
    for (let round = 0; round < rounds; round++) {
      for (const c of cases) {
        for (const way of ["source", "compiled"] as const) {
          const r = run(ways[way](c), c.env);
          if (r.code !== 0 || !c.expect.test(r.stdout))
            throw new Error(
              `${c.name} (${way}) failed: exit ${r.code}\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`,
            );
          const key = `${c.name}\0${way}`;
          results.set(key, [...(results.get(key) ?? []), r]);
        }
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    await cleanup();
  }
  print(results);
}

function print(results: Map<string, Run[]>): void {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  const seconds = (ms: number) => (ms / 1000).toFixed(2);
  const wall = (runs: Run[]) => {
    const w = runs.map((r) => r.wallMs);
    return `${seconds(median(w))} (${seconds(Math.min(...w))}..${seconds(Math.max(...w))})`;
  };
  const cpu = (runs: Run[]) =>
    runs.every((r) => r.cpuMs !== undefined) ? seconds(median(runs.map((r) => r.cpuMs!))) : "-";

  console.log(`wall s: median of ${rounds} (min..max); CPU s: user + system of the command's processes, median`);
  console.log(
    [
      "command".padEnd(40),
      "npm run -s (tsx) wall".padStart(22),
      "CPU".padStart(6),
      "dist/<name> wall".padStart(22),
      "CPU".padStart(6),
      "wall ratio".padStart(11),
    ].join("  "),
  );
  for (const c of cases) {
    const source = results.get(`${c.name}\0source`)!;
    const compiled = results.get(`${c.name}\0compiled`)!;
    console.log(
      [
        c.name.padEnd(40),
        wall(source).padStart(22),
        cpu(source).padStart(6),
        wall(compiled).padStart(22),
        cpu(compiled).padStart(6),
        `${(median(compiled.map((r) => r.wallMs)) / median(source.map((r) => r.wallMs))).toFixed(2)}x`.padStart(11),
      ].join("  "),
    );
  }
}

main().catch((e: unknown) => {
  console.error(`cli-startup: ${(e as Error).stack ?? String(e)}`);
  process.exit(1);
});
