// Well-known checkers on what the program declares: the dev and prod stacks (their stack
// files as they are) rendered by the real engine and Kubernetes provider
// (renderYamlToDirectory), then
//   kubeconform, strict, against the Kubernetes schemas of the pinned version (made offline
//     from the k8s.io/kubernetes module's OpenAPI document): every object valid, no unknown field;
//   kube-score: no warning or critical finding but those test/manifest-exceptions.txt lists,
//     each with its reason, and no listed exception that no finding needs.
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { componentPaths, repoRoot } from "../support/components.js";
import { PulumiWorkspace } from "../support/pulumi.js";

const run = promisify(execFile);
const STACKS = ["dev", "prod"] as const;
type Stack = (typeof STACKS)[number];
const EXCEPTIONS = join(repoRoot, "test", "manifest-exceptions.txt");

/** One line of the exceptions file: a kube-score check on an object (`Kind/*`: all of that kind), and why. */
interface Exception {
  check: string;
  object: string;
  reason: string;
}

function readExceptions(): Exception[] {
  return readFileSync(EXCEPTIONS, "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .map((line) => {
      const m = /^(\S+)\s+(\S+)\s+--\s+(.+)$/.exec(line);
      if (!m) throw new Error(`${EXCEPTIONS}: not "<check> <Kind>/<name or *> -- <reason>": ${line}`);
      return { check: m[1]!, object: m[2]!, reason: m[3]! };
    });
}

/** A kube-score finding of grade warning or critical: its check, the object, what it says. */
interface Finding {
  check: string;
  object: string;
  says: string;
}

const covers = (e: Exception, f: Finding) =>
  e.check === f.check &&
  (e.object === f.object || (e.object.endsWith("/*") && f.object.startsWith(e.object.slice(0, -1))));

/** Runs a checker; a non-zero exit (a finding) still gives its report. */
async function report(command: string, args: string[]): Promise<string> {
  const { stdout } = await run(command, args, { maxBuffer: 64 << 20 }).catch(
    (e: { stdout?: string; stderr?: string }) => {
      if (!e.stdout) throw new Error(`${command} failed: ${e.stderr}`, { cause: e });
      return { stdout: e.stdout };
    },
  );
  return stdout;
}

async function kubeScore(files: string[]): Promise<Finding[]> {
  const scored = JSON.parse(
    await report(componentPaths().kubeScore, ["score", "--output-format", "json", ...files]),
  ) as {
    type_meta: { kind: string };
    object_meta: { name: string };
    checks: { check: { id: string }; grade: number; skipped: boolean; comments: { path: string; summary: string }[] }[];
  }[];
  return scored.flatMap((o) =>
    o.checks
      // kube-score's grades: 1 critical, 5 warning, 7 almost OK, 10 OK (it fails a run on the first two).
      .filter((c) => !c.skipped && c.grade <= 5)
      .map((c) => ({
        check: c.check.id,
        object: `${o.type_meta.kind}/${o.object_meta.name}`,
        says: c.comments.map((m) => `${m.path ? `(${m.path}) ` : ""}${m.summary}`).join("; "),
      })),
  );
}

const manifests = {} as Record<Stack, string[]>;
const findings = {} as Record<Stack, Finding[]>;
const workspaces: PulumiWorkspace[] = [];

/** The stack file as it is, rendered to YAML in a temporary checkout by `pulumi up`. */
async function render(stack: Stack): Promise<string[]> {
  const ws = new PulumiWorkspace({ programDir: repoRoot, stack, keepStackFiles: true });
  workspaces.push(ws);
  await ws.init();
  const out = join(ws.dir, "manifests");
  await ws.setConfig("envoy-gateways:renderYamlToDirectory", out);
  await ws.ok(["up", "--yes", "--skip-preview"], 600_000);
  const dir = join(out, "1-manifest");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .map((f) => join(dir, f))
    .sort();
}

beforeAll(async () => {
  for (const stack of STACKS) {
    manifests[stack] = await render(stack);
    findings[stack] = await kubeScore(manifests[stack]);
  }
}, 900_000);

afterAll(async () => {
  for (const ws of workspaces) await ws.dispose();
});

describe.each(STACKS)("the %s stack's rendered manifests", (stack) => {
  it("are valid and strict against the Kubernetes schemas of the pinned version (kubeconform)", async () => {
    const c = componentPaths();
    const files = manifests[stack];
    expect(files.length).toBeGreaterThan(20);
    const args = ["-strict", "-summary", "-output", "json", "-kubernetes-version", c.versions.KUBERNETES_VERSION!];
    const out = JSON.parse(
      await report(c.kubeconform, [...args, "-schema-location", c.kubernetesSchemas, ...files]),
    ) as {
      resources?: { kind: string; name: string; status: string; msg: string }[];
      summary: { valid: number; invalid: number; errors: number; skipped: number };
    };
    const bad = (out.resources ?? []).filter((r) => r.status !== "statusValid");
    expect(bad.map((r) => `${r.kind}/${r.name}: ${r.status} ${r.msg}`)).toEqual([]);
    expect(out.summary).toEqual({ valid: files.length, invalid: 0, errors: 0, skipped: 0 });
  });

  it("have no kube-score warning or critical finding but the listed exceptions", () => {
    const exceptions = readExceptions();
    const unexcused = findings[stack].filter((f) => !exceptions.some((e) => covers(e, f)));
    expect(unexcused.map((f) => `${f.check} ${f.object}: ${f.says}`)).toEqual([]);
  });
});

describe("the exceptions file", () => {
  it("lists only exceptions a finding of the dev or prod stack needs, each with a reason", () => {
    const all = STACKS.flatMap((s) => findings[s]);
    const unused = readExceptions().filter((e) => !all.some((f) => covers(e, f)));
    expect(unused.map((e) => `${e.check} ${e.object}`)).toEqual([]);
  });
});
