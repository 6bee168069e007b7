// Traffic shifts at their edges: the exact instants phases change, reversals
// before and after they happen, several shifts of one service, and the
// checks of a shift as written.
import { describe, expect, it } from "vitest";
import { shiftTable } from "../../routing/shift-report.js";
import {
  checkShift,
  newVersionShare,
  nextWeights,
  overlapProblem,
  overlaps,
  reverseShift,
  shiftFromSpec,
  shiftPhase,
  shiftSpec,
  shiftWeights,
  versionWeights,
  type Shift,
} from "../../routing/shifts.js";

const T0 = new Date("2026-11-30T10:00:00Z");
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
const shift = (policy: "linear" | "atomic", extra: Partial<Shift> = {}): Shift => ({
  service: "batch",
  from: "blue",
  to: "green",
  policy,
  start: T0,
  durationMs: 100 * 60_000,
  ...extra,
});

describe("the new version's share", () => {
  it("is none before the start, whatever the policy", () => {
    expect(newVersionShare(shift("linear"), at(-10))).toBe(0);
    expect(newVersionShare(shift("atomic"), at(-10))).toBe(0);
    expect(newVersionShare(shift("linear"), at(25))).toBe(0.25);
    expect(newVersionShare(shift("linear"), at(250))).toBe(1);
  });

  it("of a reversed shift follows the shift until the reversal, then goes back", () => {
    const r = reverseShift(shift("linear"), at(30));
    expect(shiftWeights(r, at(10))).toEqual({ from: 90, to: 10 });
    expect(shiftWeights(r, at(29))).toEqual({ from: 71, to: 29 });
    expect(shiftWeights(r, at(30))).toEqual({ from: 70, to: 30 });
    expect(shiftWeights(r, at(45))).toEqual({ from: 85, to: 15 });
  });
});

describe("phases", () => {
  it("change at the exact instants: the start, the end, the reversal and the return", () => {
    const s = shift("linear");
    expect(shiftPhase(s, at(-1))).toEqual({ phase: "pending", endsAt: T0 });
    expect(shiftPhase(s, T0)).toEqual({ phase: "shifting", endsAt: at(100) });
    expect(shiftPhase(s, new Date(at(100).getTime() - 1))).toEqual({ phase: "shifting", endsAt: at(100) });
    expect(shiftPhase(s, at(100))).toEqual({ phase: "done", endsAt: at(100) });
    const r = reverseShift(s, at(30));
    expect(shiftPhase(r, at(-1))).toEqual({ phase: "pending", endsAt: at(100) });
    expect(shiftPhase(r, at(10))).toEqual({ phase: "shifting", endsAt: at(100) });
    expect(shiftPhase(r, at(30))).toEqual({ phase: "reversing", endsAt: at(60) });
    expect(shiftPhase(r, new Date(at(60).getTime() - 1))).toEqual({ phase: "reversing", endsAt: at(60) });
    expect(shiftPhase(r, at(60))).toEqual({ phase: "reverted", endsAt: at(60) });
  });

  it("of a reversed atomic shift: reverted at once, nothing had moved", () => {
    const r = reverseShift(shift("atomic"), at(30));
    expect(shiftPhase(r, at(30))).toEqual({ phase: "reverted", endsAt: at(30) });
    expect(shiftWeights(r, at(31))).toEqual({ from: 100, to: 0 });
  });
});

describe("the next weights", () => {
  it("of an atomic shift: everything at the end, once; nothing after it or after a reversal", () => {
    expect(nextWeights(shift("atomic"), at(-30))).toEqual({ at: at(100), weights: { from: 0, to: 100 } });
    expect(nextWeights(shift("atomic"), at(50))).toEqual({ at: at(100), weights: { from: 0, to: 100 } });
    expect(nextWeights(shift("atomic"), at(100))).toBeUndefined();
    expect(nextWeights(reverseShift(shift("atomic"), at(30)), at(40))).toBeUndefined();
  });

  it("of a linear shift not started yet: the first point, a minute after the start", () => {
    expect(nextWeights(shift("linear"), at(-30))).toEqual({ at: at(1), weights: { from: 99, to: 1 } });
  });

  it("of a linear shift being reversed: each point back, and nothing once back at the old version", () => {
    const r = reverseShift(shift("linear"), at(30));
    expect(nextWeights(r, at(40.5))).toEqual({ at: new Date(at(41).getTime() + 1), weights: { from: 82, to: 18 } });
    expect(nextWeights(r, new Date(at(60).getTime() - 1))).toBeUndefined();
    expect(nextWeights(r, at(60))).toBeUndefined();
  });
});

describe("a shift as written", () => {
  const spec = { from: "blue", to: "green", policy: "linear", start: "2026-11-30T10:00:00Z", duration: "100m" };
  const check = (change: Record<string, unknown>, versions = ["blue", "green"]) =>
    checkShift("batch", { ...spec, ...change }, versions);

  it("takes durations from one minute to five days in s, m, h or d", () => {
    for (const ok of ["60s", "90s", "1m", "2h", "1d", "5d", "7200m"])
      expect(check({ duration: ok }).problems, ok).toEqual([]);
    for (const bad of ["59s", "60000ms", "5d1s", "121h", "6d", 90, ["90s"]])
      expect(
        check({ duration: bad }).problems.map((p) => p.field),
        String(bad),
      ).toEqual(["duration"]);
  });

  it("names both versions missing without saying they are the same, and says when a service has none", () => {
    expect(check({ from: undefined, to: undefined }).problems).toEqual([
      { field: "from", message: "must be a version of batch (versions: blue, green)", value: undefined },
      { field: "to", message: "must be a version of batch (versions: blue, green)", value: undefined },
    ]);
    expect(check({}, []).problems.map((p) => p.message)).toEqual([
      "must be a version of batch (versions: none)",
      "must be a version of batch (versions: none)",
    ]);
  });

  it("can be reversed at its start, not before; a reversal with a bad start or duration is not checked again", () => {
    expect(check({ reversed: "2026-11-30T10:00:00Z" }).problems).toEqual([]);
    expect(check({ reversed: "2026-11-30T09:59:59Z" }).problems).toEqual([
      {
        field: "reversed",
        message:
          "is not while the shift was in progress (2026-11-30T10:00:00.000Z to 2026-11-30T11:40:00.000Z); only a shift in progress can be reversed",
        value: "2026-11-30T09:59:59Z",
      },
    ]);
    expect(check({ duration: "2 hours", reversed: "2026-11-30T09:00:00Z" }).problems.map((p) => p.field)).toEqual([
      "duration",
    ]);
    expect(check({ start: "soon", reversed: "2026-11-30T09:00:00Z" }).problems.map((p) => p.field)).toEqual(["start"]);
  });

  it("gives no shift when anything is wrong, and the shift when nothing is", () => {
    expect(check({ policy: "canary" })).toEqual({
      problems: [{ field: "policy", message: "must be linear or atomic", value: "canary" }],
    });
    expect(check({ reversed: "2026-11-30T10:30:00Z" })).toEqual({
      shift: { ...shift("linear"), reversedAt: at(30) },
      problems: [],
    });
  });

  it("reads back from its spec, and shows as its spec", () => {
    const written = {
      from: "blue",
      to: "green",
      policy: "atomic" as const,
      start: "2026-11-30T10:00:00.000Z",
      duration: "2d",
      reversed: "2026-11-30T11:00:00.000Z",
    };
    const s = shiftFromSpec("batch", written);
    expect(s).toEqual({
      service: "batch",
      from: "blue",
      to: "green",
      policy: "atomic",
      start: T0,
      durationMs: 2 * 86_400_000,
      reversedAt: at(60),
    });
    expect(shiftSpec(s)).toEqual(written);
    expect(shiftSpec(shift("linear", { durationMs: 90_000 })).duration).toBe("90s");
    expect(shiftSpec(shift("linear", { durationMs: 7_200_000 })).duration).toBe("2h");
    expect(shiftFromSpec("batch", { ...written, reversed: undefined })).not.toHaveProperty("reversedAt");
    expect(shiftFromSpec("batch", { ...written, duration: "soon" }).durationMs).toBeNaN();
  });
});

describe("several shifts of one service", () => {
  const first = shift("linear");
  const back = shift("linear", { from: "green", to: "blue", start: at(200) });

  it("overlap only when their spans intersect, whichever comes first; one ending as the next starts does not", () => {
    expect(overlaps(first, back)).toBe(false);
    expect(overlaps(back, first)).toBe(false);
    expect(overlaps(first, shift("linear", { start: at(100) }))).toBe(false);
    expect(overlaps(shift("linear", { start: at(100) }), first)).toBe(false);
    expect(overlaps(first, shift("linear", { start: at(99) }))).toBe(true);
    expect(overlaps(shift("linear", { start: at(99) }), first)).toBe(true);
    expect(overlapProblem("batch", [shift("linear", { start: at(150) }), back, first])).toBe(
      "shifts of batch overlap (blue->green from 2026-11-30T12:30:00.000Z, green->blue from 2026-11-30T13:20:00.000Z); one service moves one way at a time",
    );
    expect(overlapProblem("batch", [back, first])).toBeUndefined();
  });

  it("are decided by the latest started, or before any starts by the first to come, in whatever order they are listed", () => {
    for (const listed of [
      [first, back],
      [back, first],
    ]) {
      expect(versionWeights("batch", ["blue", "green"], listed, at(-10))).toEqual({
        weights: { blue: 100, green: 0 },
        shift: first,
      });
      expect(versionWeights("batch", ["blue", "green"], listed, at(150))).toEqual({
        weights: { blue: 0, green: 100 },
        shift: first,
      });
      expect(versionWeights("batch", ["blue", "green"], listed, at(250))).toEqual({
        weights: { blue: 50, green: 50 },
        shift: back,
      });
    }
  });

  it("the one starting at that instant decides, even after a reversal", () => {
    const reverted = reverseShift(first, at(10));
    const again = shift("atomic", { from: "green", to: "blue", start: at(200), durationMs: 60_000 });
    expect(versionWeights("batch", ["blue", "green"], [reverted, again], at(200))).toEqual({
      weights: { blue: 0, green: 100 },
      shift: again,
    });
    expect(versionWeights("batch", ["blue", "green"], [reverted, again], at(199))).toEqual({
      weights: { blue: 100, green: 0 },
      shift: reverted,
    });
  });

  it("a single version with a shift still needs the shift's versions", () => {
    expect(versionWeights("batch", ["blue"], [first], at(50))).toEqual({
      weights: { blue: 50, green: 50 },
      shift: first,
    });
  });
});

describe("the shifts table (npm run shifts)", () => {
  const rows = [
    { id: "pr-3/web", shift: shift("linear", { service: "web", start: at(20) }) },
    { id: "default/batch", shift: reverseShift(shift("linear"), at(10)) },
    { id: "default/api", shift: shift("atomic", { service: "api", start: at(-200) }) },
  ];

  it("lists shifts in progress or pending, by service, with the next weights; finished and reverted ones on request", () => {
    expect(shiftTable(rows, at(5))).toEqual([
      "SERVICE        FROM -> TO     POLICY  PHASE     NOW (from/to)  NEXT (from/to at)                 PHASE ENDS",
      "default/batch  blue -> green  linear  shifting  95/5           94/6 at 2026-11-30T10:06:00.000Z  2026-11-30T11:40:00.000Z",
      "pr-3/web       blue -> green  linear  pending   100/0          99/1 at 2026-11-30T10:21:00.000Z  2026-11-30T10:20:00.000Z",
    ]);
    expect(shiftTable(rows, at(30), true)).toEqual([
      "SERVICE        FROM -> TO     POLICY  PHASE     NOW (from/to)  NEXT (from/to at)                  PHASE ENDS",
      "default/api    blue -> green  atomic  done      0/100          -                                  2026-11-30T08:20:00.000Z",
      "default/batch  blue -> green  linear  reverted  100/0          -                                  2026-11-30T10:20:00.000Z",
      "pr-3/web       blue -> green  linear  shifting  90/10          89/11 at 2026-11-30T10:31:00.000Z  2026-11-30T12:00:00.000Z",
    ]);
  });

  it("says when there is nothing to list", () => {
    expect(shiftTable(rows.slice(1), at(30))).toEqual(["no traffic shifts in progress"]);
    expect(shiftTable([], at(30), true)).toEqual(["no traffic shifts"]);
  });
});
