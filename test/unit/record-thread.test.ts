// The watcher's record thread (route-sync/record-thread.ts) with a stand-in
// worker (test/fixtures/record-worker/fake.mjs): what `record` is given
// crosses into the thread, its progress lines and the state come back to the
// caller, a failure comes back with the engine's lines, and a thread that dies
// fails the record in flight and is started again for the next one. The real
// worker runs in the e2e tests of `dist/sync-routes --watch`.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { SyncRecord } from "../../program/main.js";
import { recordThread, recordWorkerFile, type RecordThread } from "../../route-sync/record-thread.js";
import { engineErrorLines, ProjectStack, type RoutesResourceState } from "../../route-sync/stack.js";
import { ROOT } from "./fixtures.js";

const FAKE = join(ROOT, "test", "fixtures", "record-worker", "fake.mjs");

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

let thread: RecordThread | undefined;
afterEach(async () => {
  await thread?.stop();
  thread = undefined;
});

function recordOn(name: string, options: { lock?: { maxWaitMs: number; sleep?: (ms: number) => Promise<void> } } = {}) {
  thread ??= recordThread(FAKE);
  const lines: string[] = [];
  const result = thread.record(new ProjectStack(name, "/srv/project", 10), state, sync, {
    log: (line) => lines.push(line),
    ...options,
  });
  return { lines, result };
}

describe("recordThread", () => {
  it("gives the worker the stack, the state, the sync and the lock wait, and returns its lines and the state after", async () => {
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

  it("fails the record with the worker's message and the engine's error lines", async () => {
    const { result } = recordOn("refused");
    const e = await result.then(
      () => undefined,
      (err: unknown) => err as Error & { stderr?: string },
    );
    expect(e?.message).toBe("recording failed: the stack is locked");
    expect(e?.stderr).toBe("error: the stack is currently locked by 1 lock(s)");
    expect(engineErrorLines(e)).toBe("error: the stack is currently locked by 1 lock(s)");
  });

  it("fails the record in flight when the thread exits, and starts a new thread for the next record", async () => {
    await expect(recordOn("exits").result).rejects.toThrow(
      "the record's thread stopped (exit code 3) before the record ended; the next record writes the routes",
    );
    await expect(recordOn("records").result).resolves.toHaveLength(1);
  });

  it("fails the record in flight when the thread throws, and starts a new thread for the next record", async () => {
    await expect(recordOn("throws").result).rejects.toThrow(
      /^the record's thread failed \(the worker broke\) before the record ended/,
    );
    await expect(recordOn("records").result).resolves.toHaveLength(1);
  });

  it("keeps one thread for records one after the other, each answered on its own", async () => {
    const first = recordOn("slow");
    const second = recordOn("records");
    await expect(second.result).resolves.toHaveLength(1);
    await expect(first.result).resolves.toEqual([]);
    expect(first.lines).toEqual([]);
  });

  it("stop ends the thread; a later record starts another", async () => {
    await recordOn("records").result;
    await thread!.stop();
    await expect(recordOn("records").result).resolves.toHaveLength(1);
  });
});

describe("recordWorkerFile", () => {
  it("is the TypeScript source beside the module run from source, the bundle beside a bundle", () => {
    expect(recordWorkerFile("/repo/route-sync/record-thread.ts")).toBe("/repo/route-sync/record-worker.ts");
    expect(recordWorkerFile("/repo/dist/sync-routes.bundle.js")).toBe("/repo/dist/record-worker.bundle.js");
  });
});
