// Waiting for the stack lock: who holds it, bounded backoff, and every other failure at once.
import { ConcurrentUpdateError } from "@pulumi/pulumi/automation";
import { describe, expect, it, vi } from "vitest";
import { lockHolder, whenUnlocked } from "../../route-sync/lock.js";

/** The Automation API's own error for a locked stack: the CLI's output is in its message, not in a stderr property. */
function concurrentUpdate(stderr: string): Error {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a module path its package does not export
  const { CommandResult } = require("@pulumi/pulumi/automation/cmd") as {
    CommandResult: new (stdout: string, stderr: string, code: number) => unknown;
  };
  return new (ConcurrentUpdateError as unknown as new (result: unknown) => Error)(new CommandResult("", stderr, 255));
}

/** A refusal as the Automation API raises it for a file backend's lock. */
const locked = (pid: number) =>
  Object.assign(new Error("code: 255"), {
    stderr: `error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with \`pulumi cancel\`.\n  file:///b/.pulumi/locks/organization/envoy-gateways/prod/1.json: created by ci@runner-7 (pid ${pid}) at 2026-12-01T10:00:00Z\n  file:///b/.pulumi/locks/organization/envoy-gateways/prod/1.json: created by ci@runner-7 (pid ${pid}) at 2026-12-01T10:00:00Z\n`,
  });

describe("the stack lock", () => {
  it("names who holds it, once", () => {
    expect(lockHolder(locked(42))).toBe("ci@runner-7 (pid 42) since 2026-12-01T10:00:00Z");
    expect(
      lockHolder(
        Object.assign(new Error("x"), { stderr: "error: [409] Conflict: Another update is currently in progress." }),
      ),
    ).toBe("another update (the backend does not say whose)");
    expect(lockHolder(new Error("error: cannot reach the Kubernetes API"))).toBeUndefined();
  });

  it("waits with doubling delays up to the longest, then runs the update", async () => {
    const waits: number[] = [];
    const lines: string[] = [];
    let calls = 0;
    const result = await whenUnlocked(
      async () => {
        if (++calls < 6) throw locked(42);
        return "done";
      },
      { firstDelayMs: 1000, maxDelayMs: 5000, log: (l) => lines.push(l), sleep: async (ms) => void waits.push(ms) },
    );
    expect(result).toBe("done");
    expect(waits).toEqual([1000, 2000, 4000, 5000, 5000]);
    expect(lines[0]).toBe(
      "the stack is locked by ci@runner-7 (pid 42) since 2026-12-01T10:00:00Z: waiting 1s, then trying again",
    );
  });

  it("gives up after the longest total wait, saying who still holds it", async () => {
    const waits: number[] = [];
    await expect(
      whenUnlocked(async () => Promise.reject(locked(7)), {
        firstDelayMs: 1000,
        maxDelayMs: 4000,
        maxWaitMs: 6000,
        log: () => {},
        sleep: async (ms) => void waits.push(ms),
      }),
    ).rejects.toThrow(
      "the stack is still locked by ci@runner-7 (pid 7) since 2026-12-01T10:00:00Z after waiting 6s; nothing was changed",
    );
    expect(waits).toEqual([1000, 2000, 3000]);
  });

  it("does not retry any other failure", async () => {
    let calls = 0;
    await expect(
      whenUnlocked(async () => Promise.reject(new Error(`failed ${++calls}`)), {
        log: () => {},
        sleep: async () => {},
      }),
    ).rejects.toThrow("failed 1");
    expect(calls).toBe(1);
  });

  it("reads the holders from the Automation API's own error, each once, in the order the backend lists them", () => {
    const stderr =
      "error: the stack is currently locked by 2 lock(s).\n  file:///b/.pulumi/locks/x/1.json: created by ci@runner-7 (pid 42) at 2026-12-01T10:00:00Z\n  file:///b/.pulumi/locks/x/2.json: created by root@laptop (pid 7) at 2026-12-01T10:05:00Z\n";
    expect(lockHolder(concurrentUpdate(stderr))).toBe(
      "ci@runner-7 (pid 42) since 2026-12-01T10:00:00Z, root@laptop (pid 7) since 2026-12-01T10:05:00Z",
    );
    expect(lockHolder(concurrentUpdate("error: [409] Conflict: Another update is currently in progress."))).toBe(
      "another update (the backend does not say whose)",
    );
    expect(lockHolder(undefined)).toBeUndefined();
    expect(
      lockHolder(Object.assign(new Error("x"), { stderr: "error: the stack is currently locked by 1 lock(s)." })),
    ).toBe("another update (the backend does not say whose)");
  });

  it("by default waits 2 s, doubling up to 30 s apart, 15 minutes in all", async () => {
    const waits: number[] = [];
    const lines: string[] = [];
    await expect(
      whenUnlocked(async () => Promise.reject(locked(1)), {
        log: (l) => lines.push(l),
        sleep: async (ms) => void waits.push(ms),
      }),
    ).rejects.toThrow(
      "the stack is still locked by ci@runner-7 (pid 1) since 2026-12-01T10:00:00Z after waiting 900s; nothing was changed (if that update is gone, `pulumi cancel` removes its lock)",
    );
    expect(waits.slice(0, 6)).toEqual([2000, 4000, 8000, 16000, 30000, 30000]);
    expect(waits.reduce((a, b) => a + b, 0)).toBe(900_000);
    expect(waits.every((w) => w <= 30_000)).toBe(true);
    expect(lines).toHaveLength(waits.length);
    expect(lines[4]).toBe(
      "the stack is locked by ci@runner-7 (pid 1) since 2026-12-01T10:00:00Z: waiting 30s, then trying again",
    );
  });

  it("says the waits in whole seconds, the last one cut to what is left", async () => {
    const lines: string[] = [];
    const waits: number[] = [];
    await expect(
      whenUnlocked(async () => Promise.reject(locked(3)), {
        firstDelayMs: 1400,
        maxWaitMs: 4000,
        log: (l) => lines.push(l),
        sleep: async (ms) => void waits.push(ms),
      }),
    ).rejects.toThrow("after waiting 4s;");
    expect(waits).toEqual([1400, 2600]);
    expect(lines.map((l) => l.slice(l.indexOf("waiting")))).toEqual([
      "waiting 1s, then trying again",
      "waiting 3s, then trying again",
    ]);
  });

  it("really waits between tries when not given a sleep", async () => {
    vi.useFakeTimers();
    try {
      let calls = 0;
      let result: string | undefined;
      void whenUnlocked(async () => (++calls < 2 ? Promise.reject(locked(5)) : "done"), {
        firstDelayMs: 30,
        log: () => {},
      }).then((r) => (result = r));
      await vi.advanceTimersByTimeAsync(29);
      expect([calls, result]).toEqual([1, undefined]);
      await vi.advanceTimersByTimeAsync(1);
      expect([calls, result]).toEqual([2, "done"]);
    } finally {
      vi.useRealTimers();
    }
  });
});
