// Every command in the README's shell blocks is run by a test or by CI: this list says
// which file runs it and the code there that does, and fails when the README gains a
// command nobody runs, loses one the list still names, or a runner stops running it.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/components.js";

interface Runner {
  /** The file that runs the command (repository-relative). */
  file: string;
  /** Code in that file that runs it. */
  runs: string;
}

const RUN_BY: Record<string, Runner[]> = {
  // Quick start: the bare-machine test runs both, in a minimal Debian root.
  "bash scripts/quickstart.sh": [
    { file: "scripts/bare-machine.sh", runs: 'run_timed first "bash scripts/quickstart.sh"' },
    { file: "test/bare/quickstart.test.ts", runs: '"scripts/bare-machine.sh"' },
  ],
  "bash scripts/quickstart.sh --down": [
    { file: "scripts/bare-machine.sh", runs: 'run_timed down "bash scripts/quickstart.sh --down"' },
  ],
  // On a real cluster: the e2e stacks run the same engine commands on the local cluster.
  "source scripts/env.sh": [{ file: ".ci/run", runs: "source scripts/env.sh" }],
  "export PULUMI_BACKEND_URL=s3://...": [{ file: "test/support/pulumi.ts", runs: "PULUMI_BACKEND_URL: `file://" }],
  "pulumi stack select prod": [{ file: "test/support/program.ts", runs: 'ws.ok(["stack", "select", ws.stack])' }],
  'pulumi config set --secret envoy-gateways:kubeconfig -- "$(cat ~/.kube/prod)"': [
    { file: "test/support/program.ts", runs: '"envoy-gateways:kubeconfig",' },
  ],
  "pulumi preview --diff --policy-pack policy --policy-pack-config policy/prod.json": [
    { file: "test/e2e/policy.test.ts", runs: '["prod", ["--policy-pack-config", join(packDir, "prod.json")]]' },
  ],
  "pulumi up": [{ file: "test/e2e/checkouts.test.ts", runs: '["up", "--yes", "--skip-preview"]' }],
  // The CLIs.
  "dist/sync-routes --stack prod": [{ file: "test/e2e/routes.test.ts", runs: 'stack.runScript("sync-routes", args)' }],
  "dist/sync-routes --stack prod --watch": [
    { file: "test/e2e/routes.test.ts", runs: 'stack.spawnScript("sync-routes", ["--watch"' },
  ],
  "dist/render --stack prod --out out/": [{ file: "test/unit/render-command.test.ts", runs: '"--out", out' }],
  "dist/shifts --stack prod": [{ file: "test/e2e/shifts.test.ts", runs: 'script("shifts", [])' }],
  "dist/adopt --stack prod headless": [{ file: "test/e2e/adoption.test.ts", runs: 'runScript("adopt", ["headless"' }],
  // Development: what CI runs (.ci/run), and the setup it starts with.
  "bash scripts/setup.sh": [{ file: ".ci/run", runs: "bash scripts/setup.sh" }],
  "npm test": [
    { file: "package.json", runs: '"test": "npm run check && vitest run --project unit"' },
    { file: ".ci/run", runs: "npm run check" },
    { file: ".ci/run", runs: "suite unit npm run test:unit" },
  ],
  "npm run build": [{ file: "scripts/lib.sh", runs: 'step "CLIs (dist/)" npm run -s build' }],
  "npm run test:envoy": [{ file: ".ci/run", runs: "suite envoy npm run test:envoy" }],
  "npm run test:bare": [{ file: ".ci/run", runs: "suite bare npm run test:bare" }],
  "npm run test:e2e": [{ file: ".ci/run", runs: "suite e2e npm run test:e2e" }],
  "bash .ci/run": [{ file: ".ci/run", runs: 'cd "$(dirname "${BASH_SOURCE[0]}")/.."' }],
};

/** The command lines of a Markdown text's ```sh blocks, without their trailing comments. */
export function shellCommands(markdown: string): string[] {
  const commands: string[] = [];
  let inBlock = false;
  for (const line of markdown.split("\n")) {
    if (/^```sh\s*$/.test(line)) inBlock = true;
    else if (/^```\s*$/.test(line)) inBlock = false;
    else if (inBlock) {
      const command = line.replace(/\s{2,}#.*$/, "").trim();
      if (command && !command.startsWith("#")) commands.push(command);
    }
  }
  return commands;
}

const readme = readFileSync(join(repoRoot, "README.md"), "utf8");

describe("the README's commands", () => {
  it("reads the commands out of the sh blocks only, without their comments", () => {
    const text = "run\n```sh\na --b   # what a does\n  # a comment line\n\nc\n```\n```\nnot sh\n```\n";
    expect(shellCommands(text)).toEqual(["a --b", "c"]);
  });

  it("has a runner for every command, and the list names no command the README lost", () => {
    const commands = [...new Set(shellCommands(readme))];
    expect(commands.filter((c) => !(c in RUN_BY))).toEqual([]);
    expect(Object.keys(RUN_BY).filter((c) => !commands.includes(c))).toEqual([]);
  });

  it.each(Object.entries(RUN_BY))("%s: its runners still run it", (_command, runners) => {
    for (const { file, runs } of runners) {
      const path = join(repoRoot, file);
      expect(existsSync(path), file).toBe(true);
      expect(readFileSync(path, "utf8"), file).toContain(runs);
    }
  });

  it("is at most 200 lines, a five-minute read", () => {
    expect(readme.replace(/\n$/, "").split("\n").length).toBeLessThanOrEqual(200);
  });
});
