// The record's engine run at a lower CPU priority: the script the Automation
// API runs as <root>/bin/pulumi, and finding the real CLI on PATH.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { getPriority, tmpdir } from "node:os";
import { basename, delimiter, dirname, join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { MAX_NICENESS, nicedCliRoot, onPath } from "../../route-sync/niced-cli.js";
import { tempDir } from "./temp-dir.js";

/** An executable script at `file` that prints its niceness, then each argument on a line. */
function fakeCli(file: string): string {
  writeFileSync(file, `#!/bin/sh\nnice\nprintf '%s\\n' "$@"\n`);
  chmodSync(file, 0o755);
  return file;
}

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
