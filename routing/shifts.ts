// Traffic shifting between two versions of a service, with the
// semantics Nelson used: `linear` moves the old version's share down evenly
// over the duration, `atomic` keeps all traffic on the old version until the
// end and then moves it at once. A shift in progress can be reversed: it
// replays backwards from that instant at the same rate until all traffic is
// back on the old version. Weights are whole percentages summing to 100,
// rounded up on the old side. Pure functions of a shift and an instant.
import { formatDuration, parseDuration, parseTime } from "./units.js";

export type ShiftPolicy = "linear" | "atomic";

export interface Shift {
  /** Logical service whose traffic moves. */
  service: string;
  /** Version traffic moves away from. */
  from: string;
  /** Version traffic moves to. */
  to: string;
  policy: ShiftPolicy;
  /** When the shift starts. */
  start: Date;
  /** How long it takes, in milliseconds (1 minute to 5 days). */
  durationMs: number;
  /** When it was reversed, if it was. */
  reversedAt?: Date;
}

export const MIN_SHIFT_MS = 60_000;
export const MAX_SHIFT_MS = 5 * 24 * 3600_000;

/** "90s", "30m", "2h", "5d" -> milliseconds; undefined if not such a duration. */
export function parseShiftDuration(text: string): number | undefined {
  return parseDuration(text, ["s", "m", "h", "d"]);
}

export function shiftEnd(shift: Shift): Date {
  return new Date(shift.start.getTime() + shift.durationMs);
}

/** The share of traffic (0..1) the new version would have at `t` without any reversal. */
function forwardShare(shift: Shift, t: number): number {
  const elapsed = t - shift.start.getTime();
  if (elapsed <= 0) return 0;
  if (shift.policy === "atomic") return elapsed >= shift.durationMs ? 1 : 0;
  return Math.min(1, elapsed / shift.durationMs);
}

/** The share of traffic (0..1) on the new version at `now`. */
export function newVersionShare(shift: Shift, now: Date): number {
  const t = now.getTime();
  if (!shift.reversedAt || t < shift.reversedAt.getTime()) return forwardShare(shift, t);
  const r = shift.reversedAt.getTime();
  const atReversal = forwardShare(shift, r);
  // Backwards at the same rate; an atomic shift had moved nothing before its end.
  if (shift.policy === "atomic") return 0;
  return Math.max(0, atReversal - (t - r) / shift.durationMs);
}

/** Whole-percent weights at `now`: the old version's share rounded up, the new one gets the rest. */
export function shiftWeights(shift: Shift, now: Date): { from: number; to: number } {
  const oldShare = 1 - newVersionShare(shift, now);
  // A tiny epsilon keeps 0.9 * 100 = 90.00000000000001 from rounding up to 91.
  const from = Math.min(100, Math.max(0, Math.ceil(oldShare * 100 - 1e-9)));
  return { from, to: 100 - from };
}

export type ShiftPhase = "pending" | "shifting" | "done" | "reversing" | "reverted";

/** Where a shift stands at `now`, and when its current phase ends. */
export function shiftPhase(shift: Shift, now: Date): { phase: ShiftPhase; endsAt: Date } {
  const t = now.getTime();
  if (shift.reversedAt) {
    const r = shift.reversedAt.getTime();
    const back = shift.policy === "atomic" ? 0 : forwardShare(shift, r) * shift.durationMs;
    const revertedAt = new Date(r + back);
    if (t < r) return { phase: t < shift.start.getTime() ? "pending" : "shifting", endsAt: shiftEnd(shift) };
    return t < revertedAt.getTime()
      ? { phase: "reversing", endsAt: revertedAt }
      : { phase: "reverted", endsAt: revertedAt };
  }
  if (t < shift.start.getTime()) return { phase: "pending", endsAt: shift.start };
  if (t < shiftEnd(shift).getTime()) return { phase: "shifting", endsAt: shiftEnd(shift) };
  return { phase: "done", endsAt: shiftEnd(shift) };
}

/** True while weights can still move (the timer in sync-routes --watch re-syncs then). */
export function isMoving(shift: Shift, now: Date): boolean {
  const p = shiftPhase(shift, now).phase;
  return p === "shifting" || p === "reversing";
}

/** The next instant the whole-percent weights change, and what they become; undefined once they no longer move. */
export function nextWeights(shift: Shift, now: Date): { at: Date; weights: { from: number; to: number } } | undefined {
  const { phase, endsAt } = shiftPhase(shift, now);
  if (phase === "done" || phase === "reverted") return undefined;
  if (phase === "pending" && shift.policy === "atomic") return { at: shiftEnd(shift), weights: { from: 0, to: 100 } };
  const current = shiftWeights(shift, now);
  if (shift.policy === "atomic")
    return { at: endsAt, weights: phase === "reversing" ? { from: 100, to: 0 } : { from: 0, to: 100 } };
  // Linear: find when the rounded-up old share next moves by one point (binary search over the phase).
  let lo = Math.max(now.getTime(), phase === "pending" ? shift.start.getTime() : now.getTime());
  // A pending shift's phase ends at its start; its weights first move after that.
  let hi = phase === "pending" ? shiftEnd(shift).getTime() : endsAt.getTime();
  if (shiftWeights(shift, new Date(hi)).from === current.from) return undefined;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (shiftWeights(shift, new Date(mid)).from === current.from) lo = mid;
    else hi = mid;
  }
  return { at: new Date(hi), weights: shiftWeights(shift, new Date(hi)) };
}

/**
 * Reverses a shift at `at`. Only a shift in progress can be reversed, and
 * only once: otherwise the error says what to do instead.
 */
export function reverseShift(shift: Shift, at: Date): Shift {
  if (shift.reversedAt)
    throw new Error(
      `the shift of ${shift.service} from ${shift.from} to ${shift.to} was already reversed at ${shift.reversedAt.toISOString()}; it cannot be reversed twice`,
    );
  const { phase } = shiftPhase(shift, at);
  if (phase === "pending")
    throw new Error(
      `the shift of ${shift.service} from ${shift.from} to ${shift.to} has not started (it starts at ${shift.start.toISOString()}); remove it instead of reversing it`,
    );
  if (phase === "done")
    throw new Error(
      `the shift of ${shift.service} from ${shift.from} to ${shift.to} ended at ${shiftEnd(shift).toISOString()}; start a new shift from ${shift.to} to ${shift.from} instead`,
    );
  return { ...shift, reversedAt: at };
}

/** One problem with a shift as written; `field` is the key it concerns (absent: the shift as a whole). */
export interface ShiftProblem {
  field?: keyof ShiftSpec;
  message: string;
  value?: unknown;
}

const TIME_HINT = "must be an RFC 3339 time such as 2026-11-30T10:00:00Z";

/**
 * The checks every traffic shift gets, wherever it is written (stack config,
 * a namespaces file, Service annotations): its versions, policy, start,
 * duration and reversal. Returns the shift when there is no problem.
 */
export function checkShift(
  service: string,
  written: object,
  versions: readonly string[],
): { shift?: Shift; problems: ShiftProblem[] } {
  const spec = written as Readonly<Record<string, unknown>>;
  const problems: ShiftProblem[] = [];
  for (const field of ["from", "to"] as const) {
    const v = spec[field];
    if (typeof v !== "string" || !versions.includes(v))
      problems.push({
        field,
        message: `must be a version of ${service} (versions: ${versions.join(", ") || "none"})`,
        value: v,
      });
  }
  if (typeof spec.from === "string" && spec.from === spec.to)
    problems.push({ field: "to", message: `must differ from from (both are ${spec.from})`, value: spec.to });
  if (spec.policy !== "linear" && spec.policy !== "atomic")
    problems.push({ field: "policy", message: "must be linear or atomic", value: spec.policy });
  const start = parseTime(spec.start);
  if (!start) problems.push({ field: "start", message: TIME_HINT, value: spec.start });
  const durationMs = typeof spec.duration === "string" ? parseShiftDuration(spec.duration) : undefined;
  if (durationMs === undefined || durationMs < MIN_SHIFT_MS || durationMs > MAX_SHIFT_MS) {
    problems.push({
      field: "duration",
      message: "must be a duration from 1 minute to 5 days, such as 90s, 30m, 2h or 5d",
      value: spec.duration,
    });
  }
  let reversedAt: Date | undefined;
  if (spec.reversed !== undefined) {
    reversedAt = parseTime(spec.reversed);
    if (!reversedAt) problems.push({ field: "reversed", message: TIME_HINT, value: spec.reversed });
    else if (
      start &&
      durationMs !== undefined &&
      (reversedAt < start || reversedAt.getTime() >= start.getTime() + durationMs)
    ) {
      problems.push({
        field: "reversed",
        message: `is not while the shift was in progress (${start.toISOString()} to ${new Date(start.getTime() + durationMs).toISOString()}); only a shift in progress can be reversed`,
        value: spec.reversed,
      });
    }
  }
  if (problems.length) return { problems };
  return {
    shift: {
      service,
      from: spec.from as string,
      to: spec.to as string,
      policy: spec.policy as ShiftPolicy,
      start: start!,
      durationMs: durationMs!,
      ...(reversedAt ? { reversedAt } : {}),
    },
    problems,
  };
}

/** Two shifts of one service overlap when their time spans intersect. */
export function overlaps(a: Shift, b: Shift): boolean {
  return a.start.getTime() < shiftEnd(b).getTime() && b.start.getTime() < shiftEnd(a).getTime();
}

/** A shift as written (stack config, namespaces file, annotations) and as the routes show it: plain strings. */
export interface ShiftSpec {
  from: string;
  to: string;
  policy: ShiftPolicy;
  start: string;
  duration: string;
  reversed?: string;
}

/** A shift from its spec, which `checkShift` has accepted. */
export function shiftFromSpec(service: string, spec: ShiftSpec): Shift {
  return {
    service,
    from: spec.from,
    to: spec.to,
    policy: spec.policy,
    start: new Date(spec.start),
    durationMs: parseShiftDuration(spec.duration) ?? Number.NaN,
    ...(spec.reversed ? { reversedAt: new Date(spec.reversed) } : {}),
  };
}

/** What is wrong when shifts of one service overlap in time (one service moves one way at a time); undefined when none do. */
export function overlapProblem(service: string, shifts: readonly Shift[]): string | undefined {
  const sorted = [...shifts].sort((a, b) => a.start.getTime() - b.start.getTime());
  for (let i = 1; i < sorted.length; i++) {
    const [a, b] = [sorted[i - 1]!, sorted[i]!];
    if (overlaps(a, b))
      return `shifts of ${service} overlap (${a.from}->${a.to} from ${a.start.toISOString()}, ${b.from}->${b.to} from ${b.start.toISOString()}); one service moves one way at a time`;
  }
  return undefined;
}

/**
 * The weight of each version of a service at `now`, from its shifts (each
 * accepted by `checkShift`): a single version takes everything; several need
 * a shift saying how traffic moves between two of them (other versions get
 * none). Shifts must not overlap; the latest one started (or else the first
 * to come) decides.
 */
export function versionWeights(
  service: string,
  versions: readonly string[],
  shifts: readonly Shift[],
  now: Date,
): { weights: Record<string, number>; shift?: Shift } | { problem: string } {
  if (versions.length === 1 && shifts.length === 0) return { weights: { [versions[0]!]: 100 } };
  const overlap = overlapProblem(service, shifts);
  if (overlap) return { problem: overlap };
  const sorted = [...shifts].sort((a, b) => a.start.getTime() - b.start.getTime());
  if (sorted.length === 0)
    return {
      problem: `${service} has ${versions.length} versions (${versions.join(", ")}) but no traffic shift says how to split traffic between them`,
    };
  const started = sorted.filter((s) => s.start.getTime() <= now.getTime());
  const shift = started.length ? started[started.length - 1]! : sorted[0]!;
  const w = shiftWeights(shift, now);
  const weights: Record<string, number> = Object.fromEntries(versions.map((v) => [v, 0]));
  weights[shift.from] = w.from;
  weights[shift.to] = w.to;
  return { weights, shift };
}

/** A shift's spec, as the routes show it. */
export function shiftSpec(shift: Shift): ShiftSpec {
  return {
    from: shift.from,
    to: shift.to,
    policy: shift.policy,
    start: shift.start.toISOString(),
    duration: formatDuration(shift.durationMs, ["d", "h", "m", "s"]),
    ...(shift.reversedAt ? { reversed: shift.reversedAt.toISOString() } : {}),
  };
}
