// Leader election on a Lease (kube/leader.ts): its timing rules, what a
// candidate observes, and two candidates on one Lease held by a stand-in API
// server that refuses a write at a stale resourceVersion (409), as the real
// one does. test/e2e/route-controller.test.ts runs it on a real API server.
import { ApiException, V1MicroTime, type KubeConfig, type V1Lease } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  DEFAULT_TIMING,
  electLeader,
  mayTake,
  observe,
  takenSpec,
  timingProblems,
  type ElectionTiming,
  type LeaderElection,
} from "../../kube/leader.js";

const T: ElectionTiming = { leaseDurationMs: 10_000, renewDeadlineMs: 7_000, retryPeriodMs: 2_000 };

describe("timing", () => {
  it("takes the defaults: a renew deadline under the lease, a retry period under the deadline", () => {
    expect(timingProblems(DEFAULT_TIMING)).toEqual([]);
    expect(DEFAULT_TIMING.leaseDurationMs + DEFAULT_TIMING.retryPeriodMs).toBeLessThanOrEqual(15_000);
  });

  it("refuses a renew deadline as long as the lease (a cut-off leader could write while another starts)", () => {
    expect(timingProblems({ ...T, renewDeadlineMs: 10_000 })).toEqual([
      "renew deadline 10000 ms: must be shorter than the lease duration (10000 ms), so a leader that cannot renew stops before another may start",
    ]);
  });

  it("refuses a retry period as long as the renew deadline, or none", () => {
    expect(timingProblems({ ...T, retryPeriodMs: 7_000 })).toEqual([
      "retry period 7000 ms: must be above 0 and shorter than the renew deadline (7000 ms)",
    ]);
    expect(timingProblems({ ...T, retryPeriodMs: 0 })).toHaveLength(1);
  });

  it("refuses a lease duration the Lease cannot record (whole seconds)", () => {
    expect(timingProblems({ ...T, leaseDurationMs: 9_500 })).toEqual([
      "lease duration 9500 ms: must be a whole number of seconds, at least 1 s",
    ]);
    expect(timingProblems({ leaseDurationMs: 0, renewDeadlineMs: -2, retryPeriodMs: -3 })).toHaveLength(2);
  });

  it("will not start with a timing it refuses", () => {
    const kc = { makeApiClient: () => ({}) } as unknown as KubeConfig;
    expect(() =>
      electLeader(kc, { namespace: "default", name: "l" }, "a", { ...T, renewDeadlineMs: 12_000 }, callbacks()),
    ).toThrow("leader election on Lease default/l: renew deadline 12000 ms");
  });
});

describe("what a candidate observes", () => {
  const spec = (holder: string, renewMs: number, transitions = 1) => ({
    holderIdentity: holder,
    renewTime: new V1MicroTime(renewMs),
    leaseTransitions: transitions,
  });

  it("times a record from when it saw it change, by its own clock, not the holder's renew time", () => {
    const first = observe(undefined, spec("b", 0), 50_000);
    expect(first).toMatchObject({ holder: "b", observedAtMs: 50_000 });
    // The same record read again later: still seen at 50 s.
    expect(observe(first, spec("b", 0), 58_000)).toBe(first);
    // A renewal is a new record, seen now.
    expect(observe(first, spec("b", 1), 58_000)).toMatchObject({ observedAtMs: 58_000 });
    // A new holder or a new transition count too.
    expect(observe(first, spec("c", 0), 59_000).holder).toBe("c");
    expect(observe(first, spec("b", 0, 2), 59_000).observedAtMs).toBe(59_000);
  });

  it("takes a Lease nobody holds, its own, or one unrenewed for a lease duration as it observed it", () => {
    const seen = observe(undefined, spec("b", 0), 50_000);
    expect(mayTake(seen, "a", 59_999, T)).toBe(false);
    expect(mayTake(seen, "a", 60_000, T)).toBe(true);
    expect(mayTake(seen, "b", 50_001, T)).toBe(true);
    expect(mayTake(observe(undefined, { holderIdentity: "" }, 1), "a", 1, T)).toBe(true);
    expect(mayTake(observe(undefined, undefined, 1), "a", 1, T)).toBe(true);
  });

  it("counts a transition when it takes a Lease from another, not when it renews its own", () => {
    const now = new Date(70_000);
    const taken = takenSpec({ ...spec("b", 0, 4), acquireTime: new V1MicroTime(1000) }, "a", now, T);
    expect(taken).toMatchObject({ holderIdentity: "a", leaseDurationSeconds: 10, leaseTransitions: 5 });
    expect(new Date(taken.acquireTime!).getTime()).toBe(70_000);
    expect(new Date(taken.renewTime!).getTime()).toBe(70_000);
    const renewed = takenSpec(taken, "a", new Date(72_000), T);
    expect(renewed.leaseTransitions).toBe(5);
    expect(new Date(renewed.acquireTime!).getTime()).toBe(70_000);
    expect(new Date(renewed.renewTime!).getTime()).toBe(72_000);
    expect(takenSpec(undefined, "a", now, T).leaseTransitions).toBe(1);
  });

  it("writes times as the API server's MicroTime (microseconds)", () => {
    expect(JSON.stringify(takenSpec(undefined, "a", new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678)), T).renewTime)).toBe(
      '"2026-01-02T03:04:05.678000Z"',
    );
  });
});

/** A Lease as the API server keeps it: each write at the current resourceVersion bumps it; a stale one is a 409. */
class LeaseServer {
  lease: V1Lease = { metadata: { name: "route-controller", namespace: "gateways", resourceVersion: "1" }, spec: {} };
  /** Candidates cut off from it (their requests fail). */
  cutOff = new Set<string>();
  writes: { by: string; holder: string }[] = [];
  reads: string[] = [];

  api(identity: string) {
    const failIfCut = () => {
      if (this.cutOff.has(identity)) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    };
    return {
      readNamespacedLease: async () => {
        failIfCut();
        this.reads.push(identity);
        return structuredClone(this.lease);
      },
      replaceNamespacedLease: async ({ body }: { body: V1Lease }) => {
        failIfCut();
        if (body.metadata?.resourceVersion !== this.lease.metadata!.resourceVersion)
          throw new ApiException(409, "Conflict", { message: "the object has been modified" }, {});
        const rv = String(Number(this.lease.metadata!.resourceVersion) + 1);
        this.lease = { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: rv } };
        this.writes.push({ by: identity, holder: body.spec?.holderIdentity ?? "" });
        return structuredClone(this.lease);
      },
    };
  }

  kubeConfig(identity: string): KubeConfig {
    return {
      makeApiClient: () => this.api(identity),
      getCurrentCluster: () => ({ server: "https://api" }),
      getCurrentUser: () => ({ name: identity }),
    } as unknown as KubeConfig;
  }
}

function callbacks(log: string[] = [], who = "") {
  return {
    onStartedLeading: (l: { epoch: number }) => log.push(`${who} leads (epoch ${l.epoch})`),
    onStoppedLeading: (why: string) => log.push(`${who} stops: ${why}`),
    onError: (message: string) => log.push(`${who} error: ${message}`),
  };
}

describe("two candidates on one Lease", () => {
  let server: LeaseServer;
  let log: string[];
  let a: LeaderElection;
  let b: LeaderElection;
  const tick = (ms = 0) => vi.advanceTimersByTimeAsync(ms);
  const start = (id: string) =>
    electLeader(server.kubeConfig(id), { namespace: "gateways", name: "route-controller" }, id, T, callbacks(log, id));

  beforeEach(async () => {
    vi.useFakeTimers();
    server = new LeaseServer();
    log = [];
    a = start("a");
    await tick();
    b = start("b");
    await tick();
  });

  afterEach(async () => {
    await Promise.all([a.stop(), b.stop()]);
    vi.useRealTimers();
  });

  it("lets exactly one lead, and the other see it as the holder", async () => {
    await tick(10_000);
    expect(log).toEqual(["a leads (epoch 1)"]);
    expect(a.leading()).toEqual({ epoch: 1, sinceMs: expect.any(Number) });
    expect(b.leading()).toBeUndefined();
    expect(b.holder()).toBe("a");
    expect(server.writes.every((w) => w.by === "a")).toBe(true);
  });

  it("renews each retry period while it leads, without reading the Lease first", async () => {
    const before = { writes: server.writes.length, reads: server.reads.filter((r) => r === "a").length };
    await tick(10_000);
    expect(server.writes.length - before.writes).toBe(5);
    expect(server.reads.filter((r) => r === "a").length - before.reads).toBe(0);
    // The other candidate reads each round.
    expect(server.reads.filter((r) => r === "b").length).toBeGreaterThanOrEqual(5);
    expect(a.lastReadMs()).toBe(Date.now());
  });

  /** Another process's write of the Lease, as the API server records it: a new resourceVersion. */
  const writtenByOther = (spec: V1Lease["spec"]) => {
    const rv = String(Number(server.lease.metadata!.resourceVersion) + 1);
    server.lease = {
      metadata: { ...server.lease.metadata, resourceVersion: rv },
      spec: { ...server.lease.spec, ...spec },
    };
  };

  it("hands over when the leader stops: released, the other takes it at its next round", async () => {
    await a.stop();
    expect(server.lease.spec?.holderIdentity).toBe("");
    await tick(2_000);
    expect(log).toEqual(["a leads (epoch 1)", "a stops: stopping", "b leads (epoch 2)"]);
    expect(b.leading()?.epoch).toBe(2);
  });

  it("fences a leader cut off from the API server: it stops at its renew deadline, before the other may take over", async () => {
    server.cutOff.add("a");
    const cut = Date.now();
    // A leader counts itself the leader until its last renewal plus the renew deadline.
    await tick(4_000);
    expect(a.leading()).toBeDefined();
    let stoppedAt: number | undefined;
    let takenAt: number | undefined;
    for (let i = 0; i < 20 && takenAt === undefined; i++) {
      await tick(500);
      if (stoppedAt === undefined && a.leading() === undefined) stoppedAt = Date.now();
      if (b.leading()) takenAt = Date.now();
    }
    expect(stoppedAt).toBeDefined();
    expect(takenAt).toBeDefined();
    expect(stoppedAt!).toBeLessThan(takenAt!);
    // Within the lease duration plus a retry period of the last renewal (at most 2 s before the cut).
    expect(takenAt! - cut).toBeLessThanOrEqual(T.leaseDurationMs + T.retryPeriodMs);
    expect(log).toContain("a stops: Lease gateways/route-controller not renewed for 7 s");
    expect(b.leading()?.epoch).toBe(2);
  });

  it("steps down when another wrote the Lease: its renewal is refused, and it reads the new holder at the next round", async () => {
    writtenByOther({ holderIdentity: "c", leaseTransitions: 2, renewTime: new V1MicroTime(Date.now()) });
    const writes = server.writes.length;
    await tick(2_000);
    expect(server.lease.spec?.holderIdentity).toBe("c");
    await tick(2_000);
    expect(a.leading()).toBeUndefined();
    expect(log.at(-1)).toBe("a stops: Lease gateways/route-controller is held by c now");
    expect(server.writes.slice(writes).filter((w) => w.by === "a")).toEqual([]);
  });

  it("renews again after a refused renewal when the Lease is still its own (another field changed)", async () => {
    const before = server.writes.length;
    writtenByOther({ leaseDurationSeconds: 10 });
    await tick(2_000);
    expect(server.writes.length, "the renewal from its own last write is refused").toBe(before);
    await tick(2_000);
    expect(server.writes.slice(before)).toEqual([{ by: "a", holder: "a" }]);
    expect(a.leading()?.epoch).toBe(1);
  });

  it("loses a race for the Lease without an error: the write at a stale resourceVersion is refused", async () => {
    await a.stop();
    // Both read the released Lease; one write wins, the other gets 409 and waits.
    const c = start("c");
    await tick(2_000);
    const leaders = [b, c].filter((e) => e.leading());
    expect(leaders).toHaveLength(1);
    expect(log.filter((l) => l.includes("error"))).toEqual([]);
    await c.stop();
  });

  it("says a failed read and goes on", async () => {
    server.cutOff.add("b");
    await tick(2_000);
    expect(log).toContain(
      "b error: reading Lease gateways/route-controller: cannot reach the Kubernetes API at https://api (ECONNREFUSED)",
    );
    // The loop goes on (what liveness looks at) though no read succeeds.
    expect(b.lastRoundMs()).toBe(Date.now());
    const failedSince = b.lastReadMs()!;
    expect(failedSince).toBeLessThan(Date.now());
    server.cutOff.delete("b");
    await tick(2_000);
    expect(b.lastReadMs()).toBe(Date.now());
  });
});
