// The pulumi CLI at a lower CPU priority, for the engine run that records a
// sync. The routes are live before it starts; on a busy machine the live step
// of the next change, the API server, the kubelets and Envoy should not wait
// for the cores it uses (at 5,000 dev/PR pairs, 15 s of CPU a record). The
// Automation API runs <root>/bin/pulumi: here a script that runs the real CLI
// under nice(1), whose niceness the engine's plugins inherit.
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

/** Niceness is 0 (as the caller) to 19 (the lowest priority). */
export const MAX_NICENESS = 19;

/** `text` as a niceness, a whole number from 0 to MAX_NICENESS as written (such as a flag's value); undefined if it is not one. */
export function parseNiceness(text: string): number | undefined {
  return /^\d{1,2}$/.test(text) && Number(text) <= MAX_NICENESS ? Number(text) : undefined;
}

/** The first executable file `name` in the directories of `path` (PATH's format); undefined if none. */
export function onPath(name: string, path: string): string | undefined {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** `text` as one single-quoted word of a POSIX shell. */
function shellWord(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * A new directory holding bin/pulumi, a script that runs `cli` with its
 * arguments at `niceness`; removed when this process exits.
 */
export function nicedCliRoot(cli: string, niceness: number): string {
  if (!Number.isInteger(niceness) || niceness < 1 || niceness > MAX_NICENESS)
    throw new RangeError(`niceness ${niceness}: must be a whole number from 1 to ${MAX_NICENESS}`);
  const root = mkdtempSync(join(tmpdir(), "envoy-gateways-pulumi-"));
  process.once("exit", () => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, "bin"));
  writeFileSync(join(root, "bin", "pulumi"), `#!/bin/sh\nexec nice -n ${niceness} ${shellWord(cli)} "$@"\n`, {
    mode: 0o755,
  });
  return root;
}
