// Leader election on a coordination.k8s.io Lease, as client-go's
// leaderelection does it (client-node 2.0 has none): every candidate but the
// holder reads the Lease each retry period; one whose holder has not renewed it
// for a lease duration, as this process observed it (its own clock, never the
// holder's renewTime, so clock skew between nodes does not matter), takes it
// with an update guarded by the resourceVersion it read (two candidates: one
// wins, the other gets 409). The holder renews it each retry period from the
// Lease its last write returned, without a read first (client-go reads first):
// a write by anyone since makes the renewal a 409, and it reads at its next
// round. It counts itself the leader only until its last successful renewal
// plus the renew deadline, which is shorter than the lease duration: a holder
// cut off from the API server stops writing before any other candidate may
// take the Lease. The Lease's leaseTransitions after a take is the leader's
// epoch, the fencing token its writes carry (routes-provider/core.ts refuses to
// write over a newer epoch).
import * as k8s from "@kubernetes/client-node";
import { describeKubeError, withTimeout } from "./client.js";

/** The election's periods, in milliseconds. */
export interface ElectionTiming {
  /** How long a holder's last renewal keeps other candidates off, as they observe it. */
  leaseDurationMs: number;
  /** How long after its last successful renewal the holder still counts itself the leader (shorter than the lease). */
  renewDeadlineMs: number;
  /** How often candidates read the Lease and the holder renews it. */
  retryPeriodMs: number;
}

/** Failover within leaseDuration + retryPeriod (12 s) of a leader that died without releasing the Lease. */
export const DEFAULT_TIMING: ElectionTiming = { leaseDurationMs: 10_000, renewDeadlineMs: 7_000, retryPeriodMs: 2_000 };

/**
 * What is wrong with `t`, one sentence each: the renew deadline must be shorter
 * than the lease duration (else a cut-off leader could still write when another
 * takes over), and the retry period shorter than the renew deadline (else one
 * slow renewal loses the Lease). Whole seconds, as the Lease records them.
 */
export function timingProblems(t: ElectionTiming): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(t.leaseDurationMs / 1000) || t.leaseDurationMs < 1000)
    problems.push(`lease duration ${t.leaseDurationMs} ms: must be a whole number of seconds, at least 1 s`);
  if (t.renewDeadlineMs >= t.leaseDurationMs)
    problems.push(
      `renew deadline ${t.renewDeadlineMs} ms: must be shorter than the lease duration (${t.leaseDurationMs} ms), so a leader that cannot renew stops before another may start`,
    );
  if (t.retryPeriodMs <= 0 || t.retryPeriodMs >= t.renewDeadlineMs)
    problems.push(
      `retry period ${t.retryPeriodMs} ms: must be above 0 and shorter than the renew deadline (${t.renewDeadlineMs} ms)`,
    );
  return problems;
}

/** What a candidate last saw of the Lease's record, and when (its own clock). */
export interface Observation {
  /** Holder, renew time and transitions: a change of any is a new record. */
  record: string;
  holder: string;
  observedAtMs: number;
}

/** The record of a Lease as a string that changes whenever its holder renews or changes. */
function recordOf(spec: k8s.V1LeaseSpec | undefined): string {
  return JSON.stringify([
    spec?.holderIdentity ?? "",
    spec?.renewTime ? new Date(spec.renewTime).getTime() : 0,
    spec?.leaseTransitions ?? 0,
  ]);
}

/** The observation after reading `spec` at `nowMs`: kept when the record is the same, else a new one seen now. */
export function observe(
  before: Observation | undefined,
  spec: k8s.V1LeaseSpec | undefined,
  nowMs: number,
): Observation {
  const record = recordOf(spec);
  if (before?.record === record) return before;
  return { record, holder: spec?.holderIdentity ?? "", observedAtMs: nowMs };
}

/**
 * Whether `identity` may write the Lease now: it holds it already (a renewal),
 * nobody does, or its holder's last record is older than the lease duration as
 * this candidate observed it.
 */
export function mayTake(seen: Observation, identity: string, nowMs: number, timing: ElectionTiming): boolean {
  return seen.holder === "" || seen.holder === identity || nowMs >= seen.observedAtMs + timing.leaseDurationMs;
}

/** The Lease's spec after `identity` takes or renews it at `now`. */
export function takenSpec(
  spec: k8s.V1LeaseSpec | undefined,
  identity: string,
  now: Date,
  timing: ElectionTiming,
): k8s.V1LeaseSpec {
  const renewing = spec?.holderIdentity === identity;
  return {
    ...spec,
    holderIdentity: identity,
    leaseDurationSeconds: timing.leaseDurationMs / 1000,
    acquireTime: renewing && spec?.acquireTime ? spec.acquireTime : new k8s.V1MicroTime(now.getTime()),
    renewTime: new k8s.V1MicroTime(now.getTime()),
    leaseTransitions: renewing ? (spec?.leaseTransitions ?? 0) : (spec?.leaseTransitions ?? 0) + 1,
  };
}

/** Leadership as it is now. */
export interface Leadership {
  /** The epoch (the Lease's transitions when this process took it). */
  epoch: number;
  /** When it took the Lease. */
  sinceMs: number;
}

export interface ElectionCallbacks {
  /** This process took the Lease; `signal` aborts when it stops leading. */
  onStartedLeading(leadership: Leadership, signal: AbortSignal): void;
  /** It stopped leading (lost the Lease, could not renew it in time, or released it). */
  onStoppedLeading(why: string): void;
  /** A Lease read or write failed (the loop goes on). */
  onError?(message: string): void;
  /** A new holder was observed (including none). */
  onNewHolder?(holder: string): void;
}

export interface LeaderElection {
  /** The leadership if this process holds the Lease and renewed it within the renew deadline; else undefined. */
  leading(): Leadership | undefined;
  /** The holder last observed ("" for none). */
  holder(): string;
  /** When the loop last read the Lease successfully, or wrote it (a write answers with the Lease as it is; undefined: never yet). */
  lastReadMs(): number | undefined;
  /** When the loop last ran a round (a stuck loop is a liveness failure). */
  lastRoundMs(): number;
  /** Stops the loop; a holder releases the Lease (another candidate takes it at its next round). */
  stop(): Promise<void>;
}

/**
 * Runs for the Lease `namespace/name` as `identity` until stopped. The Lease
 * must exist (the program declares it), so the identity needs only get and
 * update on it, not create.
 */
export function electLeader(
  kc: k8s.KubeConfig,
  lease: { namespace: string; name: string },
  identity: string,
  timing: ElectionTiming,
  callbacks: ElectionCallbacks,
  clock: () => number = Date.now,
): LeaderElection {
  const problems = timingProblems(timing);
  if (problems.length > 0)
    throw new Error(`leader election on Lease ${lease.namespace}/${lease.name}: ${problems.join("; ")}`);
  const api = kc.makeApiClient(k8s.CoordinationV1Api);
  const where = `Lease ${lease.namespace}/${lease.name}`;
  let seen: Observation | undefined;
  let leadership: Leadership | undefined;
  let lastRenewMs = 0;
  let lastReadMs: number | undefined;
  let lastRoundMs = clock();
  /**
   * The Lease as this holder last wrote it: while it leads, it renews from
   * that without reading first (half the calls of a read and a write each
   * retry period). Any write since by anyone else bumped the resourceVersion,
   * so the renewal is a 409, and the next round reads again.
   */
  let mine: k8s.V1Lease | undefined;
  let abort: AbortController | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> = Promise.resolve();

  const stopLeading = (why: string) => {
    mine = undefined;
    if (!leadership) return;
    leadership = undefined;
    abort?.abort();
    abort = undefined;
    callbacks.onStoppedLeading(why);
  };

  const tryRound = async () => {
    lastRoundMs = clock();
    let current: k8s.V1Lease;
    if (leadership && mine) current = mine;
    else
      try {
        current = await api.readNamespacedLease(lease, withTimeout());
        lastReadMs = clock();
      } catch (e) {
        callbacks.onError?.(describeKubeError(kc, `reading ${where}`, e).message);
        return;
      }
    mine = undefined;
    const nowMs = clock();
    const before = seen?.holder;
    seen = observe(seen, current.spec, nowMs);
    if (seen.holder !== before) callbacks.onNewHolder?.(seen.holder);
    if (leadership && seen.holder !== identity)
      return stopLeading(`${where} is held by ${seen.holder || "nobody"} now`);
    if (!mayTake(seen, identity, nowMs, timing)) return;
    const spec = takenSpec(current.spec, identity, new Date(nowMs), timing);
    try {
      // The resourceVersion read: a candidate that wrote meanwhile makes this a 409, and this one waits.
      const written = await api.replaceNamespacedLease({ ...lease, body: { ...current, spec } }, withTimeout());
      lastReadMs = clock();
      seen = observe(seen, written.spec, lastReadMs);
      mine = written;
    } catch (e) {
      if (!(e instanceof k8s.ApiException && e.code === 409))
        callbacks.onError?.(describeKubeError(kc, `writing ${where}`, e).message);
      return;
    }
    lastRenewMs = nowMs;
    if (!leadership) {
      leadership = { epoch: spec.leaseTransitions ?? 0, sinceMs: nowMs };
      abort = new AbortController();
      callbacks.onNewHolder?.(identity);
      callbacks.onStartedLeading(leadership, abort.signal);
    }
  };

  /** A holder that has not renewed within the deadline stops, whether or not the API answers. */
  const checkDeadline = () => {
    if (leadership && clock() - lastRenewMs >= timing.renewDeadlineMs)
      stopLeading(`${where} not renewed for ${timing.renewDeadlineMs / 1000} s`);
  };

  const loop = () => {
    if (stopped) return;
    round = tryRound().finally(() => {
      checkDeadline();
      if (!stopped) timer = setTimeout(loop, timing.retryPeriodMs);
    });
  };
  loop();

  return {
    leading() {
      checkDeadline();
      return leadership;
    },
    holder: () => seen?.holder ?? "",
    lastReadMs: () => lastReadMs,
    lastRoundMs: () => lastRoundMs,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await round;
      if (!leadership) return;
      stopLeading("stopping");
      // Released: the next candidate takes it at its next round instead of waiting a lease duration.
      try {
        const current = await api.readNamespacedLease(lease, withTimeout());
        if (current.spec?.holderIdentity !== identity) return;
        const spec = {
          ...current.spec,
          holderIdentity: "",
          leaseDurationSeconds: 1,
          renewTime: new k8s.V1MicroTime(clock()),
        };
        await api.replaceNamespacedLease({ ...lease, body: { ...current, spec } }, withTimeout());
      } catch (e) {
        callbacks.onError?.(describeKubeError(kc, `releasing ${where}`, e).message);
      }
    },
  };
}
