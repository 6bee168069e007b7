// The watcher's record process (route-sync/record-process.ts) with a stand-in
// child (test/fixtures/record-child/fake.mjs): what `record` is given crosses
// into the child, its progress lines and the state come back to the caller, a
// failure comes back with the engine's lines, and a child that dies fails the
// record in flight and is started again for the next one. The real child runs
// in the e2e tests of `dist/sync-routes --watch`.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { SyncRecord } from "../../program/main.js";
import { recordChildFile, recordProcess, type RecordProcess } from "../../route-sync/record-process.js";
import { engineErrorLines, ProjectStack, type RoutesResourceState } from "../../route-sync/stack.js";
import { ROOT } from "./fixtures.js";

const FAKE = join(ROOT, "test", "fixtures", "record-child", "fake.mjs");

const state: RoutesResourceState[] = [
  {
    urn: "urn:pulumi:dev::envoy-gateways::pulumi-nodejs:dynamic/envoy-gateways:Routes::gateway-routes",
    name: "gateway-routes",
    outputs: { dataDigest: "d0" } as RoutesResourceState["outputs"],
  },
];
const sync: SyncRecord = {
  devNamespaces: { "pr-1": ["web"] },
  renderedAt: "2026-12-05T08:00:00.000Z",
  written: { gateway: "d1" },
};

let child: RecordProcess | undefined;
afterEach(async () => {
  await child?.stop();
  child = undefined;
});

function recordOn(name: string, options: { lock?: { maxWaitMs: number; sleep?: (ms: number) => Promise<void> } } = {}) {
  child ??= recordProcess(FAKE);
  const lines: string[] = [];
  const result = child.record(new ProjectStack(name, "/srv/project", 10), state, sync, {
    log: (line) => lines.push(line),
    ...options,
  });
  return { lines, result };
}

describe("recordProcess", () => {
  it("gives the child the stack, the state, the sync and the lock wait, and returns its lines and the state after", async () => {
    const { lines, result } = recordOn("records", { lock: { maxWaitMs: 90_000, sleep: async () => {} } });
    const after = await result;
    expect(after).toEqual([{ ...state[0], outputs: { dataDigest: "d1" } }]);
    // The lock wait crosses as data: its sleep (a function) stays behind.
    expect(lines).toEqual(["recording records in /srv/project at niceness 10", 'lock: {"maxWaitMs":90000}']);
  });

  it("without a lock wait sends none", async () => {
    const { lines, result } = recordOn("records");
    await result;
    expect(lines[1]).toBe("lock: null");
  });

  it("fails the record with the child's message and the engine's error lines", async () => {
    const { result } = recordOn("refused");
    const e = await result.then(
      () => undefined,
      (err: unknown) => err as Error & { stderr?: string },
    );
    expect(e?.message).toBe("recording failed: the stack is locked");
    expect(e?.stderr).toBe("error: the stack is currently locked by 1 lock(s)");
    expect(engineErrorLines(e)).toBe("error: the stack is currently locked by 1 lock(s)");
  });

  it("fails the record in flight when the child exits, and starts a new child for the next record", async () => {
    await expect(recordOn("exits").result).rejects.toThrow(
      "the record's process ended (exit code 3) before the record ended; the next record writes the routes",
    );
    await expect(recordOn("records").result).resolves.toHaveLength(1);
  });

  it("fails the record in flight when the child is killed, and starts a new child for the next record", async () => {
    await expect(recordOn("killed").result).rejects.toThrow(
      "the record's process ended (SIGKILL) before the record ended; the next record writes the routes",
    );
    await expect(recordOn("records").result).resolves.toHaveLength(1);
  });

  it("fails the record when the child cannot start", async () => {
    child = recordProcess(join(ROOT, "test", "fixtures", "record-child", "missing.mjs"));
    await expect(recordOn("records").result).rejects.toThrow(
      /^the record's process ended \(exit code 1\) before the record ended/,
    );
  });

  it("keeps one child for records one after the other, each answered on its own", async () => {
    const first = recordOn("slow");
    const second = recordOn("records");
    await expect(second.result).resolves.toHaveLength(1);
    await expect(first.result).resolves.toEqual([]);
    expect(first.lines).toEqual([]);
  });

  it("stop ends the child; a later record starts another", async () => {
    await recordOn("records").result;
    await child!.stop();
    await expect(recordOn("records").result).resolves.toHaveLength(1);
  });
});

describe("recordChildFile", () => {
  it("is the TypeScript source beside the module run from source, the bundle beside a bundle", () => {
    expect(recordChildFile("/repo/route-sync/record-process.ts")).toBe("/repo/route-sync/record-child.ts");
    expect(recordChildFile("/repo/dist/sync-routes.bundle.js")).toBe("/repo/dist/record-child.bundle.js");
  });
});
