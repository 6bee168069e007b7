// The serial runner behind sync-routes --watch: one step at a time, requests coalesced,
// failures retried with backoff (2 s doubling to 5 minutes), stop() after the step in progress.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { serialRunner } from "../../route-sync/serial-runner.js";

/** A step whose runs the test ends one by one: each run waits until `finish(i)` or `fail(i)`. */
function controlledStep() {
  const runs: { resolve: () => void; reject: (e: Error) => void; done: boolean }[] = [];
  let active = 0;
  let mostActive = 0;
  const step = () =>
    new Promise<void>((resolve, reject) => {
      active++;
      mostActive = Math.max(mostActive, active);
      const run = {
        done: false,
        resolve: () => ((run.done = true), active--, resolve()),
        reject: (e: Error) => ((run.done = true), active--, reject(e)),
      };
      runs.push(run);
    });
  return {
    step,
    runs,
    mostActive: () => mostActive,
    finish: async (i: number) => {
      runs[i]!.resolve();
      await vi.advanceTimersByTimeAsync(0);
    },
    fail: async (i: number, message = `failure ${i}`) => {
      runs[i]!.reject(new Error(message));
      await vi.advanceTimersByTimeAsync(0);
    },
  };
}

/** The runner's failures as it reports them: the message and when it runs again. */
function errors() {
  const seen: [string, number | undefined][] = [];
  return { seen, onError: (e: unknown, retryMs: number | undefined) => seen.push([(e as Error).message, retryMs]) };
}

describe("the serial runner", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("runs a request at once, and one more run for all the requests that came while a step ran", async () => {
    const s = controlledStep();
    const runner = serialRunner(s.step, errors());
    runner.request();
    expect(s.runs).toHaveLength(1);
    runner.request();
    runner.request();
    runner.request();
    await vi.advanceTimersByTimeAsync(0);
    expect(s.runs).toHaveLength(1);
    await s.finish(0);
    expect(s.runs).toHaveLength(2);
    await s.finish(1);
    // Nothing asked for since the second run started: nothing more runs.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(s.runs).toHaveLength(2);
    runner.request();
    expect(s.runs).toHaveLength(3);
    await s.finish(2);
    expect(s.mostActive()).toBe(1);
  });

  it("never runs two steps at once", async () => {
    const s = controlledStep();
    const runner = serialRunner(s.step, errors());
    for (let i = 0; i < 5; i++) {
      runner.request();
      runner.request();
      await s.finish(s.runs.length - 1);
    }
    await s.finish(s.runs.length - 1);
    expect(s.runs.every((r) => r.done)).toBe(true);
    expect(s.runs).toHaveLength(6);
    expect(s.mostActive()).toBe(1);
  });

  it("takes a request made by the step itself as one more run after it", async () => {
    let runs = 0;
    const runner = serialRunner(async () => {
      if (++runs < 3) runner.request();
    }, errors());
    runner.request();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(3);
  });

  it("retries a failed step after 2 s, doubling to 5 minutes", async () => {
    const e = errors();
    const starts: number[] = [];
    const runner = serialRunner(async () => {
      starts.push(Date.now());
      throw new Error("the API server did not answer");
    }, e);
    const t0 = Date.now();
    runner.request();
    await vi.advanceTimersByTimeAsync(30 * 60_000);
    const waits = starts.slice(1).map((t, i) => t - starts[i]!);
    expect(starts[0]).toBe(t0);
    expect(waits.slice(0, 10)).toEqual([2, 4, 8, 16, 32, 64, 128, 256, 300, 300].map((s) => s * 1000));
    expect(e.seen.slice(0, 10)).toEqual(
      [2, 4, 8, 16, 32, 64, 128, 256, 300, 300].map((s) => ["the API server did not answer", s * 1000]),
    );
    await runner.stop();
  });

  it("takes other retry delays when given", async () => {
    const e = errors();
    const runner = serialRunner(
      async () => {
        throw new Error("no");
      },
      { retry: { firstMs: 100, maxMs: 350 }, ...e },
    );
    runner.request();
    await vi.advanceTimersByTimeAsync(100 + 200 + 350 + 350);
    expect(e.seen.map(([, ms]) => ms)).toEqual([100, 200, 350, 350, 350]);
    await runner.stop();
  });

  it("starts again from 2 s after a success", async () => {
    const e = errors();
    const s = controlledStep();
    const runner = serialRunner(s.step, e);
    runner.request();
    await s.fail(0);
    await vi.advanceTimersByTimeAsync(2000);
    await s.fail(1);
    await vi.advanceTimersByTimeAsync(4000);
    await s.finish(2);
    expect(e.seen.map(([, ms]) => ms)).toEqual([2000, 4000]);
    // Succeeded: no retry is due.
    await vi.advanceTimersByTimeAsync(600_000);
    expect(s.runs).toHaveLength(3);
    runner.request();
    await s.fail(3);
    expect(e.seen.map(([, ms]) => ms)).toEqual([2000, 4000, 2000]);
    await vi.advanceTimersByTimeAsync(1999);
    expect(s.runs).toHaveLength(4);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.runs).toHaveLength(5);
    await s.finish(4);
  });

  it("runs a request made while a retry waits at once, and the next failure waits longer", async () => {
    const e = errors();
    const s = controlledStep();
    const runner = serialRunner(s.step, e);
    runner.request();
    await s.fail(0);
    await vi.advanceTimersByTimeAsync(500);
    runner.request();
    expect(s.runs).toHaveLength(2);
    await s.fail(1);
    expect(e.seen.map(([, ms]) => ms)).toEqual([2000, 4000]);
    // The first retry's timer is gone: the only run due is 4 s after the second failure.
    await vi.advanceTimersByTimeAsync(3999);
    expect(s.runs).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.runs).toHaveLength(3);
    await s.finish(2);
  });

  it("runs again at once after a failed step when a request came while it ran", async () => {
    const e = errors();
    const s = controlledStep();
    const runner = serialRunner(s.step, e);
    runner.request();
    runner.request();
    await s.fail(0);
    expect(e.seen).toEqual([["failure 0", 0]]);
    expect(s.runs).toHaveLength(2);
    await s.finish(1);
    // That run did what the retry would have: none is left due.
    await vi.advanceTimersByTimeAsync(600_000);
    expect(s.runs).toHaveLength(2);
  });

  it("stops after the step in progress and runs no more", async () => {
    const e = errors();
    const s = controlledStep();
    const runner = serialRunner(s.step, e);
    runner.request();
    runner.request();
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    await s.finish(0);
    await stopping;
    expect(stopped).toBe(true);
    // The request coalesced before stop() and every one after it: never run.
    runner.request();
    await vi.advanceTimersByTimeAsync(600_000);
    expect(s.runs).toHaveLength(1);
    expect(e.seen).toEqual([]);
  });

  it("does not retry a step that fails after stop(), and says so", async () => {
    const e = errors();
    const s = controlledStep();
    const runner = serialRunner(s.step, e);
    runner.request();
    const stopping = runner.stop();
    await s.fail(0, "the engine failed");
    await stopping;
    await vi.advanceTimersByTimeAsync(600_000);
    expect(s.runs).toHaveLength(1);
    expect(e.seen).toEqual([["the engine failed", undefined]]);
  });

  it("cancels a retry that waits when stopped, and stops at once when no step runs", async () => {
    const e = errors();
    const s = controlledStep();
    const runner = serialRunner(s.step, e);
    runner.request();
    await s.fail(0);
    expect(vi.getTimerCount()).toBe(1);
    await runner.stop();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(600_000);
    expect(s.runs).toHaveLength(1);
    // A second stop() resolves too.
    await runner.stop();
  });
});
