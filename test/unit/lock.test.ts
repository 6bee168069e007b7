// Waiting for the stack lock: who holds it, bounded backoff, and every other failure at once.
import { describe, expect, it } from "vitest";
import { lockHolder, whenUnlocked } from "../../route-sync/lock.js";

/** A refusal as the Automation API raises it for a file backend's lock. */
const locked = (pid: number) =>
  Object.assign(new Error("code: 255"), {
    stderr: `error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with \`pulumi cancel\`.\n  file:///b/.pulumi/locks/organization/envoy-gateways/prod/1.json: created by ci@runner-7 (pid ${pid}) at 2026-12-01T10:00:00Z\n  file:///b/.pulumi/locks/organization/envoy-gateways/prod/1.json: created by ci@runner-7 (pid ${pid}) at 2026-12-01T10:00:00Z\n`,
  });

describe("the stack lock", () => {
  it("names who holds it, once", () => {
    expect(lockHolder(locked(42))).toBe("ci@runner-7 (pid 42) since 2026-12-01T10:00:00Z");
    expect(lockHolder(Object.assign(new Error("x"), { stderr: "error: [409] Conflict: Another update is currently in progress." }))).toBe("another update (the backend does not say whose)");
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
    expect(lines[0]).toBe("the stack is locked by ci@runner-7 (pid 42) since 2026-12-01T10:00:00Z: waiting 1s, then trying again");
  });

  it("gives up after the longest total wait, saying who still holds it", async () => {
    const waits: number[] = [];
    await expect(whenUnlocked(async () => Promise.reject(locked(7)), { firstDelayMs: 1000, maxDelayMs: 4000, maxWaitMs: 6000, log: () => {}, sleep: async (ms) => void waits.push(ms) })).rejects.toThrow(
      "the stack is still locked by ci@runner-7 (pid 7) since 2026-12-01T10:00:00Z after waiting 6s; nothing was changed",
    );
    expect(waits).toEqual([1000, 2000, 3000]);
  });

  it("does not retry any other failure", async () => {
    let calls = 0;
    await expect(whenUnlocked(async () => Promise.reject(new Error(`failed ${++calls}`)), { log: () => {}, sleep: async () => {} })).rejects.toThrow("failed 1");
    expect(calls).toBe(1);
  });
});
