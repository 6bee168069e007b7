// Benchmark (not a test): the CLIs run from source the old way (`npm run -s <name> -- ...`:
// npm, then tsx compiling the TypeScript) against the compiled ones (`dist/<name>`: a
// launcher that execs Node on one bundle), side by side in one run, interleaved:
// `--help` (starting up), `render` of the prod stack with 1,500 dev/PR pairs (a
// namespaces file, as bench/render.ts makes them), and, when the stack exists (as
// scripts/quickstart.sh leaves stack `local`), a `sync-routes` with nothing to change.
// Builds dist/ first. Prints wall time (median, min..max) and the CPU time of the
// command's processes (user + system, median; what a busy machine's load does not
// inflate).
//
//   npx tsx bench/cli-startup.ts [--rounds 5] [--stack local]
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { syntheticNamespaces } from "../test/fixtures/namespaces.js";
import { buildCli } from "../test/support/program.js";

const { values } = parseArgs({
  options: { rounds: { type: "string", default: "5" }, stack: { type: "string", default: "local" } },
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
function run(command: string[]): Run {
  const argv = time ? [time, "-f", "\ncli-startup-cpu %U %S", ...command] : command;
  const start = performance.now();
  const r = spawnSync(argv[0]!, argv.slice(1), { cwd: root, encoding: "utf8", maxBuffer: 1 << 28 });
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

const pulumiOnPath = spawnSync("pulumi", ["version"], { encoding: "utf8" }).status === 0;
const stackFile = join(root, `Pulumi.${values.stack}.yaml`);
if (pulumiOnPath && existsSync(stackFile)) {
  cases.push({
    name: `sync-routes, no change (stack ${values.stack})`,
    cli: "sync-routes",
    args: () => ["--stack", values.stack],
    expect: /nothing to change \([\d.]+s\)/,
  });
} else {
  console.log(
    `(no sync-routes row: ${pulumiOnPath ? `no stack file ${stackFile}` : "the pulumi CLI is not on PATH"}; scripts/quickstart.sh deploys stack local, and \`source scripts/env.sh\` puts pulumi on PATH)`,
  );
}

const built = performance.now();
buildCli();
console.log(`npm run build: ${((performance.now() - built) / 1000).toFixed(1)} s (once, not per run)\n`);

const ways = {
  source: (c: Case) => ["npm", "run", "-s", c.cli, "--", ...c.args("source")],
  compiled: (c: Case) => [join(root, "dist", c.cli), ...c.args("compiled")],
} as const;
const results = new Map<string, Run[]>();
// Interleaved, so that a change in the machine's load hits both ways alike.
for (let round = 0; round < rounds; round++) {
  for (const c of cases) {
    for (const way of ["source", "compiled"] as const) {
      const r = run(ways[way](c));
      if (r.code !== 0 || !c.expect.test(r.stdout))
        throw new Error(
          `${c.name} (${way}) failed: exit ${r.code}\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`,
        );
      const key = `${c.name}\0${way}`;
      results.set(key, [...(results.get(key) ?? []), r]);
    }
  }
}
rmSync(scratch, { recursive: true, force: true });

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
