// The README's quick start on a bare Debian machine (scripts/bare-machine.sh): a minimal
// Debian 12 root file system with python3 and this machine's Go, nothing else. The quick
// start must install or build everything it runs, reach the gateway pod, run again warm,
// and --down must leave no process, mount or network device behind. One run of the script
// answers every test here (its "bare-machine: KEY=VALUE" lines and the runs' logs).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../support/components.js";

const facts: Record<string, string> = {};
let exitCode: number | null = null;
const dir = mkdtempSync(join(tmpdir(), "eg-bare-"));
const log = (name: string) => readFileSync(join(dir, "run", "logs", `${name}.log`), "utf8");

beforeAll(async () => {
  const child = spawn("bash", ["scripts/bare-machine.sh", "--keep", "--dir", join(dir, "run")], {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  exitCode = await new Promise<number | null>((resolve) => child.on("close", resolve));
  for (const match of out.matchAll(/^bare-machine: ([a-z-]+)=(.*)$/gm)) facts[match[1]!] = match[2]!.trim();
}, 3_600_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the quick start on a bare Debian machine", () => {
  it("starts from a machine with the table's Debian commands and Go, and none of what the scripts install", () => {
    expect(facts["machine-rows-missing"]).toBe("");
    expect(facts["other-rows-present-before"]).toBe("");
  });

  it("gets 200 through the gateway pod, and the dev/PR route 302 without credentials and 200 with them", () => {
    expect(facts["first-exit"]).toBe("0");
    const first = log("first");
    expect(first).toMatch(/^ {2}200 from pod www-/m);
    expect(first).toMatch(/^ {2}without credentials: 302 -> https:\/\/auth\./m);
    expect(first).toMatch(/^ {2}with "Authorization: Bearer [^"]+": 200 from pod batch-/m);
    // It installed the node's packages itself, and fetched Node and npm.
    expect(first).toMatch(/install-debian-packages: apt-get install .*containerd/);
    expect(first).toMatch(/Node \d+\.\d+\.\d+ and npm \d+\.\d+\.\d+ in /);
    // Every step was numbered against one plan.
    const counts = [...first.matchAll(/start: .* \[(\d+)\/(\d+)\]/g)].map((m) => [Number(m[1]), Number(m[2])]);
    expect(counts.length).toBeGreaterThan(10);
    expect(new Set(counts.map(([, total]) => total)).size).toBe(1);
    expect(counts.map(([n]) => n)).toEqual(counts.map((_, i) => i + 1));
  });

  it("installs and builds nothing of the development set", () => {
    expect(facts["development-rows-present-after"]).toBe("");
    expect(log("first")).not.toMatch(/start: (old-world-image|manifest-checkers|actionlint|shfmt)\b/);
  });

  it("runs again warm: nothing rebuilt, nothing installed, the same answers", () => {
    expect(facts["second-exit"]).toBe("0");
    const second = log("second");
    expect(second).not.toMatch(/rebuilding|apt-get install|start: npm ci/);
    expect(second).toMatch(/^ {2}200 from pod www-/m);
  });

  it("--down leaves no process, mount, network device or network namespace behind", () => {
    expect(facts["down-exit"]).toBe("0");
    expect(facts["processes-left"]).toBe("");
    expect(facts["mounts-left"]).toBe("");
    expect(facts["links-left"]).toBe("");
    expect(facts["netns-left"]).toBe("");
    expect(exitCode).toBe(0);
  });
});
