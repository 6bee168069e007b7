// The record's engine run at a lower CPU priority: the script the Automation
// API runs as <root>/bin/pulumi, finding the real CLI on PATH, and
// ProjectStack's engine started through it (a stand-in pulumi on PATH).
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { getPriority, tmpdir } from "node:os";
import { basename, delimiter, dirname, join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { MAX_NICENESS, nicedCliRoot, onPath, parseNiceness } from "../../route-sync/niced-cli.js";
import { ProjectStack } from "../../route-sync/stack.js";
import { tempDir } from "./temp-dir.js";

/** An executable script at `file` that prints its niceness, then each argument on a line. */
function fakeCli(file: string): string {
  writeFileSync(file, `#!/bin/sh\nnice\nprintf '%s\\n' "$@"\n`);
  chmodSync(file, 0o755);
  return file;
}

describe("parseNiceness", () => {
  it("reads a whole number from 0 to 19 as written, and nothing else", () => {
    expect(["0", "1", "07", "10", "19"].map(parseNiceness)).toEqual([0, 1, 7, 10, 19]);
    for (const t of ["20", "99", "100", "-1", "1.5", "", " 5", "5 ", "ten", "1e1", "0x1"])
      expect(parseNiceness(t), JSON.stringify(t)).toBeUndefined();
  });
});

describe("onPath", () => {
  it("finds the first executable file of that name, skipping a missing directory and a file that is not executable", () => {
    const dir = tempDir("eg-onpath-");
    for (const d of ["a", "b", "c"]) mkdirSync(join(dir, d));
    writeFileSync(join(dir, "a", "pulumi"), "not executable");
    const b = fakeCli(join(dir, "b", "pulumi"));
    fakeCli(join(dir, "c", "pulumi"));
    const path = [join(dir, "missing"), join(dir, "a"), "", join(dir, "b"), join(dir, "c")].join(delimiter);
    expect(onPath("pulumi", path)).toBe(b);
    expect(onPath("pulumi", join(dir, "a"))).toBeUndefined();
    expect(onPath("pulumi", "")).toBeUndefined();
  });
});

/**
 * nicedCliRoot in a test: what it made is removed when the test finishes (its own
 * removal runs at the process's exit, which a test worker may never see).
 */
function niced(cli: string, niceness: number): string {
  const before = new Set(process.listeners("exit"));
  const root = nicedCliRoot(cli, niceness);
  const added = process.listeners("exit").filter((l) => !before.has(l));
  onTestFinished(() => {
    for (const l of added) process.removeListener("exit", l);
    rmSync(root, { recursive: true, force: true });
  });
  return root;
}

describe("nicedCliRoot", () => {
  it("makes bin/pulumi run the CLI at that niceness, with every argument as given", () => {
    // A path a shell would split or unquote, and arguments it would.
    const dir = tempDir("eg-niced-");
    mkdirSync(join(dir, "it's a dir"));
    const cli = fakeCli(join(dir, "it's a dir", "pulumi"));
    const root = niced(cli, 10);
    const args = ["up", "--yes", "two words", "it's", "$HOME", "*"];
    const out = execFileSync(join(root, "bin", "pulumi"), args, { encoding: "utf8" });
    expect(out.split("\n").slice(0, -1)).toEqual([String(Math.min(MAX_NICENESS, getPriority() + 10)), ...args]);
  });

  it("takes a niceness from 1 to 19, and refuses one outside", () => {
    const cli = fakeCli(join(tempDir("eg-niced-range-"), "pulumi"));
    for (const n of [1, 19]) {
      const out = execFileSync(join(niced(cli, n), "bin", "pulumi"), [], { encoding: "utf8" });
      expect(out.trim(), String(n)).toBe(String(Math.min(MAX_NICENESS, getPriority() + n)));
    }
    for (const n of [0, 20, 2.5, -1]) expect(() => nicedCliRoot(cli, n), String(n)).toThrow(RangeError);
    expect(() => nicedCliRoot(cli, 20)).toThrow("niceness 20: must be a whole number from 1 to 19");
  });

  it("makes its directory under the system's temp directory, and removes it, with the script, when the process exits", () => {
    const before = new Set(process.listeners("exit"));
    const root = nicedCliRoot("/bin/true", 5);
    const added = process.listeners("exit").filter((l) => !before.has(l));
    try {
      expect(dirname(root)).toBe(tmpdir());
      expect(basename(root)).toMatch(/^envoy-gateways-pulumi-\w{6}$/);
      expect(existsSync(join(root, "bin", "pulumi"))).toBe(true);
      expect(added).toHaveLength(1);
      added[0]!.call(process, 0);
      expect(existsSync(root)).toBe(false);
    } finally {
      for (const l of added) process.removeListener("exit", l);
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("ProjectStack's engine runs", () => {
  /** A pulumi on PATH that logs its niceness and arguments, and answers `version`; the log's lines. */
  function fakePulumiOnPath(): () => string[] {
    const dir = tempDir("eg-fake-pulumi-");
    const log = join(dir, "calls");
    writeFileSync(
      join(dir, "pulumi"),
      `#!/bin/sh\necho "$(nice) $*" >> '${log}'\n[ "$1" = version ] && echo v3.999.0\nexit 0\n`,
    );
    chmodSync(join(dir, "pulumi"), 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${dir}${delimiter}${path}`;
    onTestFinished(() => {
      process.env.PATH = path;
    });
    return () => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : []);
  }

  /** `stack.automation()`; what it made for the niced CLI is removed when the test finishes. */
  async function automation(stack: ProjectStack) {
    const before = new Set(process.listeners("exit"));
    try {
      return await stack.automation();
    } finally {
      const added = process.listeners("exit").filter((l) => !before.has(l));
      onTestFinished(() => {
        for (const l of added) {
          l.call(process, 0);
          process.removeListener("exit", l);
        }
      });
    }
  }

  it("start the pulumi CLI found on PATH under nice, at the stack's engine niceness", async () => {
    const calls = fakePulumiOnPath();
    const engine = await automation(new ProjectStack("dev", tempDir("eg-project-"), 10));
    expect(engine.workspace.pulumiCommand.command).toMatch(/envoy-gateways-pulumi-\w{6}\/bin\/pulumi$/);
    const nice = Math.min(MAX_NICENESS, getPriority() + 10);
    expect(calls()).toEqual([`${nice} version`, `${nice} stack select --stack dev --non-interactive`]);
  });

  it("start it as this process at niceness 0", async () => {
    const calls = fakePulumiOnPath();
    const engine = await automation(new ProjectStack("dev", tempDir("eg-project-"), 0));
    expect(engine.workspace.pulumiCommand.command).toBe("pulumi");
    expect(calls()).toEqual([
      `${getPriority()} version`,
      `${getPriority()} stack select --stack dev --non-interactive`,
    ]);
  });

  it("say how to get the CLI when none is on PATH", async () => {
    const path = process.env.PATH;
    process.env.PATH = tempDir("eg-empty-path-");
    try {
      await expect(new ProjectStack("dev", tempDir("eg-project-"), 10).automation()).rejects.toThrow(
        /^the pulumi CLI is not on PATH: `source scripts\/env\.sh` puts the one scripts\/build-components\.sh built there/,
      );
    } finally {
      process.env.PATH = path;
    }
  });
});
