// The example GitHub Actions workflows (docs/examples/github-actions/): actionlint (built
// from its Go module into the cache by scripts/build-components.sh) finds nothing in them,
// with shellcheck on their `run:` scripts; and it does find a broken one. Then what
// actionlint does not check: permissions, pinned actions, where secrets go, and the
// commands and flags the docs promise.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { pinnedVersions, repoRoot, requireActionlint } from "../support/components.js";
import { tempDir } from "./temp-dir.js";

const EXAMPLES = join(repoRoot, "docs/examples/github-actions");
const exampleFiles = readdirSync(EXAMPLES)
  .filter((f) => /\.ya?ml$/.test(f))
  .sort();

interface Finding {
  message: string;
  filepath: string;
  line: number;
  column: number;
  kind: string;
}

/** shellcheck on PATH: without it actionlint silently skips the `run:` scripts. */
function shellcheck(): string {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const path = join(dir, "shellcheck");
    if (spawnSync(path, ["--version"]).status === 0) return path;
  }
  throw new Error(
    "shellcheck is not installed (actionlint lints the workflows' run: scripts with it): " +
      "run bash scripts/install-debian-packages.sh development (Debian package shellcheck)",
  );
}

/** actionlint's findings on the given files, and its exit status. */
function actionlint(files: string[]): { status: number | null; findings: Finding[]; stderr: string } {
  const r = spawnSync(requireActionlint(), ["-shellcheck", shellcheck(), "-format", "{{json .}}", ...files], {
    cwd: repoRoot,
    encoding: "utf8",
  });
  if (r.error) throw r.error;
  return { status: r.status, findings: r.stdout.trim() ? (JSON.parse(r.stdout) as Finding[]) : [], stderr: r.stderr };
}

const said = (findings: Finding[]) =>
  findings.map((f) => `${f.filepath}:${f.line}:${f.column} [${f.kind}] ${f.message}`);

type Step = { uses?: string; run?: string; with?: Record<string, unknown>; env?: Record<string, string> };
type Job = { permissions?: Record<string, string>; env?: Record<string, string>; steps: Step[] } & Record<
  string,
  unknown
>;
type Workflow = { on: Record<string, unknown>; permissions?: unknown; jobs: Record<string, Job> } & Record<
  string,
  unknown
>;

const workflow = (file: string) => parse(readFileSync(join(EXAMPLES, file), "utf8")) as Workflow;
const stepsOf = (w: Workflow) => Object.values(w.jobs).flatMap((job) => job.steps);
const pulumiStep = (file: string) => {
  const steps = stepsOf(workflow(file)).filter((s) => s.uses?.startsWith("pulumi/actions@"));
  expect(steps, file).toHaveLength(1);
  return steps[0]!;
};

describe("the example GitHub Actions workflows", () => {
  it("are the PR preview, the production rollout and sync-routes", () => {
    expect(exampleFiles).toEqual(["pr-preview.yml", "rollout.yml", "sync-routes.yml"]);
  });

  it("pass actionlint, shellcheck included, with nothing reported", { timeout: 60_000 }, () => {
    const { status, findings, stderr } = actionlint(exampleFiles.map((f) => join(EXAMPLES, f)));
    expect(said(findings)).toEqual([]);
    expect(stderr).toBe("");
    expect(status).toBe(0);
  });

  it(
    "actionlint reports a broken workflow: a misspelled input of the preview, an unquoted variable, an untrusted value in a script",
    { timeout: 60_000 },
    () => {
      const dir = tempDir("eg-workflows-");
      const lines = readFileSync(join(EXAMPLES, "pr-preview.yml"), "utf8").split("\n");
      const policyLine = lines.findIndex((l) => l.trim() === "policyPacks: policy");
      expect(policyLine).toBeGreaterThan(0);
      lines[policyLine] = lines[policyLine]!.replace("policyPacks", "policy-packs");
      lines.push("      - run: echo ${{ github.event.pull_request.title }} $HOME", "");
      const broken = join(dir, "broken.yml");
      writeFileSync(broken, lines.join("\n"));

      const { status, findings } = actionlint([broken]);
      expect(status).toBe(1);
      expect(findings.map((f) => ({ line: f.line, kind: f.kind }))).toEqual([
        { line: policyLine + 1, kind: "action" },
        { line: lines.length - 1, kind: "shellcheck" },
        { line: lines.length - 1, kind: "expression" },
      ]);
      expect(findings[0]!.message).toContain('input "policy-packs" is not defined in action "pulumi/actions@v6"');
      expect(findings[1]!.message).toContain("SC2086");
      expect(findings[2]!.message).toContain('"github.event.pull_request.title" is potentially untrusted');
    },
  );

  it("fails naming the build command when the actionlint binary is missing", () => {
    const saved = process.env.EG_CACHE;
    process.env.EG_CACHE = tempDir("eg-empty-cache-");
    try {
      expect(() => requireActionlint()).toThrow(/build it with: bash scripts\/build-components\.sh --only actionlint/);
    } finally {
      if (saved === undefined) delete process.env.EG_CACHE;
      else process.env.EG_CACHE = saved;
    }
  });

  it("grant nothing by default and each job only what it needs", () => {
    const granted = Object.fromEntries(
      exampleFiles.map((f) => {
        const w = workflow(f);
        expect(w.permissions, f).toEqual({});
        return [f, Object.fromEntries(Object.entries(w.jobs).map(([name, job]) => [name, job.permissions]))];
      }),
    );
    expect(granted).toEqual({
      "pr-preview.yml": { preview: { contents: "read", "pull-requests": "write" } },
      "rollout.yml": { up: { contents: "read" } },
      "sync-routes.yml": { sync: { contents: "read" } },
    });
  });

  it("pin every action to a version (a tag vN[.N.N] or a commit), and checkout keeps no token", () => {
    for (const f of exampleFiles)
      for (const step of stepsOf(workflow(f)).filter((s) => s.uses)) {
        expect(step.uses, f).toMatch(/^[\w.-]+\/[\w.-]+@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$/);
        if (step.uses!.startsWith("actions/checkout@")) expect(step.with?.["persist-credentials"], f).toBe(false);
      }
  });

  it("take secrets only through env, and write them to files under $RUNNER_TEMP, never to the log", () => {
    for (const f of exampleFiles) {
      const w = workflow(f);
      expect(JSON.stringify(w.on), f).not.toContain("secrets.");
      for (const job of Object.values(w.jobs)) {
        const secretEnv = (env: Record<string, string> = {}) =>
          Object.entries(env)
            .filter(([, value]) => String(value).includes("secrets."))
            .map(([name]) => name);
        // Read by pulumi from the environment; no script touches them.
        const jobSecrets = secretEnv(job.env);
        expect(jobSecrets.sort(), f).toEqual(["PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE"]);
        for (const step of job.steps) {
          expect(JSON.stringify(step.with ?? {}), `${f}: ${step.uses}`).not.toContain("secrets.");
          if (!step.run) continue;
          expect(step.run, f).not.toContain("secrets.");
          for (const name of [...jobSecrets, ...secretEnv(step.env)])
            for (const line of step.run.split("\n").filter((l) => new RegExp(`\\$\\{?${name}\\b`).test(l)))
              expect(line, `${f}: $${name}`).toMatch(/^\s*printf '%s\\n' "\$\w+" >"\$RUNNER_TEMP\/[\w.-]+"$/);
        }
      }
    }
  });

  it("preview the prod stack on pull requests with the diff, a PR comment and the policy pack in its prod config", () => {
    const w = workflow("pr-preview.yml");
    expect(Object.keys(w.on)).toEqual(["pull_request"]);
    expect(pulumiStep("pr-preview.yml").with).toMatchObject({
      command: "preview",
      "stack-name": "prod",
      diff: true,
      "comment-on-pr": true,
      policyPacks: "policy",
      policyPackConfigs: "policy/prod.json",
    });
    expect(JSON.parse(readFileSync(join(repoRoot, "policy/prod.json"), "utf8"))).toHaveProperty("envoy-image-pinned");
  });

  it("roll out with pulumi up from main, one at a time, with the same policy pack and config", () => {
    const w = workflow("rollout.yml");
    expect(w.on.push).toEqual({ branches: ["main"] });
    expect(w.jobs.up!.if).toBe("github.ref == 'refs/heads/main'");
    expect(w.concurrency).toEqual({ group: "envoy-gateways-rollout-prod", "cancel-in-progress": false });
    expect(pulumiStep("rollout.yml").with).toMatchObject({
      command: "up",
      "stack-name": "prod",
      policyPacks: "policy",
      policyPackConfigs: "policy/prod.json",
    });
  });

  it("run sync-routes for the prod stack after a namespace event, compiled after npm ci, one at a time", () => {
    const w = workflow("sync-routes.yml");
    expect(w.on).toEqual({
      repository_dispatch: { types: ["namespace-created", "namespace-deleted"] },
      workflow_dispatch: null,
    });
    expect(w.concurrency).toEqual({ group: "envoy-gateways-sync-routes-prod", "cancel-in-progress": false });
    expect(w.jobs.sync!.if).toBe("github.ref == 'refs/heads/main'");
    const runs = stepsOf(w).map((s) => s.run ?? "");
    const npmCi = runs.findIndex((r) => r.startsWith("npm ci"));
    const build = runs.indexOf("npm run build");
    // The compiled CLI (dist/, built after npm ci), not `npm run`: no tsx compiling at every run.
    const sync = runs.findIndex((r) => /^dist\/sync-routes --stack prod$/m.test(r));
    expect(npmCi).toBeGreaterThanOrEqual(0);
    expect(build).toBeGreaterThan(npmCi);
    expect(sync).toBeGreaterThan(build);
    // The CLI is there for the Automation API: the pulumi action with no command only installs it.
    expect(pulumiStep("sync-routes.yml").with).toEqual({ "pulumi-version": pinnedVersions().PULUMI_VERSION });
  });

  it("install the pinned Pulumi CLI, build Envoy's API descriptors before npm ci, and run only npm scripts that exist", () => {
    const scripts = Object.keys(
      (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts,
    );
    for (const f of exampleFiles) {
      expect(pulumiStep(f).with?.["pulumi-version"], f).toBe(pinnedVersions().PULUMI_VERSION);
      const runs = stepsOf(workflow(f)).map((s) => s.run ?? "");
      const descriptors = runs.indexOf("bash scripts/build-components.sh --only envoy-api");
      expect(descriptors, f).toBeGreaterThanOrEqual(0);
      expect(
        runs.findIndex((r) => r.startsWith("npm ci")),
        f,
      ).toBeGreaterThan(descriptors);
      for (const [, name] of runs.join("\n").matchAll(/npm run (?:-s )?([\w:-]+)/g)) expect(scripts, f).toContain(name);
    }
  });
});
