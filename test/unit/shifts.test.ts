// Traffic shifting: the weight curves, reversal, rounding, and every way a
// shift can be wrong (in stack config or in Service annotations).
import { describe, expect, it } from "vitest";
import { InputError } from "../../routing/config/errors.js";
import { parseStackConfig } from "../../routing/config/load.js";
import { shiftTable } from "../../routing/shift-report.js";
import {
  checkShift,
  nextWeights,
  reverseShift,
  shiftPhase,
  shiftWeights,
  versionWeights,
  type Shift,
} from "../../routing/shifts.js";
import { buildRoutingTable } from "../../routing/table.js";
import { discoverRoutes } from "../../routing/discovery.js";
import { routingLabels, SHIFT_ANNOTATION } from "../../routing/labels.js";
import { minimalRaw, withValue } from "./fixtures.js";

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

describe("weights", () => {
  it("linear: the old version's share falls evenly, rounded up", () => {
    const s = shift("linear");
    expect(shiftWeights(s, at(-5))).toEqual({ from: 100, to: 0 }); // before start
    expect(shiftWeights(s, at(0))).toEqual({ from: 100, to: 0 }); // at start
    expect(shiftWeights(s, at(10))).toEqual({ from: 90, to: 10 });
    expect(shiftWeights(s, at(50))).toEqual({ from: 50, to: 50 }); // middle
    expect(shiftWeights(s, at(50.5))).toEqual({ from: 50, to: 50 }); // 49.5% old -> ceil 50
    expect(shiftWeights(s, at(99.99))).toEqual({ from: 1, to: 99 });
    expect(shiftWeights(s, at(100))).toEqual({ from: 0, to: 100 }); // end
    expect(shiftWeights(s, at(500))).toEqual({ from: 0, to: 100 }); // after end
  });

  it("atomic: everything stays on the old version until the end, then moves at once", () => {
    const s = shift("atomic");
    expect(shiftWeights(s, at(-1))).toEqual({ from: 100, to: 0 });
    expect(shiftWeights(s, at(0))).toEqual({ from: 100, to: 0 });
    expect(shiftWeights(s, at(99.9))).toEqual({ from: 100, to: 0 });
    expect(shiftWeights(s, at(100))).toEqual({ from: 0, to: 100 });
    expect(shiftWeights(s, at(1000))).toEqual({ from: 0, to: 100 });
  });

  it("always sums to 100 in whole percentages, with the old side rounded up", () => {
    for (const policy of ["linear", "atomic"] as const) {
      for (let ms = -60_000; ms <= 101 * 60_000; ms += 7_919) {
        const w = shiftWeights(shift(policy), new Date(T0.getTime() + ms));
        expect(Number.isInteger(w.from) && Number.isInteger(w.to) && w.from + w.to === 100).toBe(true);
        if (policy === "linear" && ms > 0 && ms < 100 * 60_000)
          expect(w.from).toBe(Math.ceil(100 - ms / 60_000 - 1e-9));
      }
    }
  });
});

describe("reversal", () => {
  it("replays a linear shift backwards from the reversal at the same rate", () => {
    const r = reverseShift(shift("linear"), at(30)); // 70/30 at the reversal
    expect(shiftWeights(r, at(30))).toEqual({ from: 70, to: 30 });
    expect(shiftWeights(r, at(40))).toEqual({ from: 80, to: 20 });
    expect(shiftWeights(r, at(59.9))).toEqual({ from: 100, to: 0 });
    expect(shiftWeights(r, at(60))).toEqual({ from: 100, to: 0 });
    expect(shiftWeights(r, at(200))).toEqual({ from: 100, to: 0 });
    expect(shiftPhase(r, at(45))).toEqual({ phase: "reversing", endsAt: at(60) });
    expect(shiftPhase(r, at(61)).phase).toBe("reverted");
  });

  it("reverses at several instants: the way back takes as long as the way there", () => {
    for (const minutes of [1, 25, 50, 99]) {
      const r = reverseShift(shift("linear"), at(minutes));
      expect(shiftWeights(r, at(minutes + minutes / 2)).to).toBe(
        Math.floor(minutes / 2 + 1e-9) === minutes / 2 ? minutes / 2 : Math.floor(minutes / 2),
      );
      expect(shiftWeights(r, at(2 * minutes))).toEqual({ from: 100, to: 0 });
    }
  });

  it("reverses an atomic shift before its end: traffic never moved and stays on the old version", () => {
    const r = reverseShift(shift("atomic"), at(99));
    expect(shiftWeights(r, at(100))).toEqual({ from: 100, to: 0 });
    expect(shiftWeights(r, at(150))).toEqual({ from: 100, to: 0 });
  });

  it("refuses to reverse a shift that is not in progress, or twice, saying what to do instead", () => {
    expect(() => reverseShift(shift("linear"), at(-1))).toThrow(
      "the shift of batch from blue to green has not started (it starts at 2026-11-30T10:00:00.000Z); remove it instead of reversing it",
    );
    expect(() => reverseShift(shift("linear"), at(100))).toThrow(
      "the shift of batch from blue to green ended at 2026-11-30T11:40:00.000Z; start a new shift from green to blue instead",
    );
    expect(() => reverseShift(reverseShift(shift("linear"), at(10)), at(20))).toThrow(
      "the shift of batch from blue to green was already reversed at 2026-11-30T10:10:00.000Z; it cannot be reversed twice",
    );
  });
});

describe("next weights", () => {
  it("tells when the rounded weights next move and to what", () => {
    // At 10.5 minutes the old share is 89.5% (shown as 90); it reaches 89% at 11 minutes.
    expect(nextWeights(shift("linear"), at(10.5))).toEqual({ at: at(11), weights: { from: 89, to: 11 } });
    expect(nextWeights(shift("atomic"), at(10))).toEqual({ at: at(100), weights: { from: 0, to: 100 } });
    expect(nextWeights(shift("linear"), at(120))).toBeUndefined();
  });
});

describe("the checks every shift gets", () => {
  const spec = { from: "blue", to: "green", policy: "linear", start: "2026-11-30T10:00:00Z", duration: "100m" };
  const problems = (change: Record<string, unknown>, versions = ["blue", "green"]) =>
    checkShift("batch", { ...spec, ...change }, versions).problems;
  it("accepts a shift between two versions and returns it", () => {
    expect(checkShift("batch", spec, ["blue", "green"])).toEqual({ shift: shift("linear"), problems: [] });
  });
  it("names the field, the value as written and what is allowed", () => {
    expect(problems({ to: "red" })).toEqual([
      { field: "to", message: "must be a version of batch (versions: blue, green)", value: "red" },
    ]);
    expect(problems({ to: "blue" })).toEqual([
      { field: "to", message: "must differ from from (both are blue)", value: "blue" },
    ]);
    expect(problems({ policy: "canary" })).toEqual([
      { field: "policy", message: "must be linear or atomic", value: "canary" },
    ]);
    expect(problems({ start: "2026-11-31T10:00:00Z" })).toEqual([
      {
        field: "start",
        message: "must be an RFC 3339 time such as 2026-11-30T10:00:00Z",
        value: "2026-11-31T10:00:00Z",
      },
    ]);
    expect(problems({ duration: "2 hours" })).toEqual([
      {
        field: "duration",
        message: "must be a duration from 1 minute to 5 days, such as 90s, 30m, 2h or 5d",
        value: "2 hours",
      },
    ]);
    expect(problems({ duration: "59s" })[0]!.field).toBe("duration");
    expect(problems({ duration: "6d" })[0]!.field).toBe("duration");
    expect(problems({ duration: "5d" })).toEqual([]);
    expect(problems({ reversed: "yesterday" })).toEqual([
      { field: "reversed", message: "must be an RFC 3339 time such as 2026-11-30T10:00:00Z", value: "yesterday" },
    ]);
    expect(problems({ reversed: "2026-11-30T11:40:00Z" })).toEqual([
      {
        field: "reversed",
        message:
          "is not while the shift was in progress (2026-11-30T10:00:00.000Z to 2026-11-30T11:40:00.000Z); only a shift in progress can be reversed",
        value: "2026-11-30T11:40:00Z",
      },
    ]);
    expect(problems({ reversed: "2026-11-30T11:39:59Z" })).toEqual([]);
  });
});

describe("versions of one service", () => {
  const s = shift("linear");
  it("gives a single version everything, and splits several by the shift (others get none)", () => {
    expect(versionWeights("batch", ["v1"], [], at(0))).toEqual({ weights: { v1: 100 } });
    expect(versionWeights("batch", ["blue", "green", "red"], [s], at(25))).toEqual({
      weights: { blue: 75, green: 25, red: 0 },
      shift: s,
    });
  });
  it("refuses versions without a shift, and overlapping shifts, naming the service", () => {
    expect(versionWeights("batch", ["blue", "green"], [], at(0))).toEqual({
      problem: "batch has 2 versions (blue, green) but no traffic shift says how to split traffic between them",
    });
    const second = shift("atomic", { from: "green", to: "blue", start: at(50) });
    expect(versionWeights("batch", ["blue", "green"], [s, second], at(0))).toEqual({
      problem:
        "shifts of batch overlap (blue->green from 2026-11-30T10:00:00.000Z, green->blue from 2026-11-30T10:50:00.000Z); one service moves one way at a time",
    });
  });
  it("follows the latest shift started when shifts follow one another", () => {
    const back = shift("linear", { from: "green", to: "blue", start: at(200) });
    expect(versionWeights("batch", ["blue", "green"], [s, back], at(150))).toMatchObject({
      weights: { blue: 0, green: 100 },
    });
    expect(versionWeights("batch", ["blue", "green"], [s, back], at(250))).toMatchObject({
      weights: { blue: 50, green: 50 },
    });
  });
});

describe("shifts in stack config", () => {
  const base = () => {
    let raw = withValue(minimalRaw(), "services", [
      { name: "batch", replicas: 3, versions: ["blue", "green"] },
      { name: "www", replicas: 2 },
    ]);
    raw = withValue(raw, "shifts", [
      { service: "batch", from: "blue", to: "green", policy: "linear", start: T0.toISOString(), duration: "100m" },
    ]);
    return raw;
  };
  const problems = (raw: Record<string, unknown>) => {
    try {
      parseStackConfig(raw);
    } catch (e) {
      return (e as InputError).problems.map((p) => `${p.key}: ${p.message}`);
    }
    return [];
  };

  it("routes each version to its own headless Service with the shift's weights at the given instant", () => {
    const config = parseStackConfig(base());
    const batch = buildRoutingTable(config, {}, "stack config", at(40)).production.find((s) => s.name === "batch")!;
    expect(batch.versions).toEqual([
      { version: "blue", service: "batch-blue", cluster: "default_batch_blue", weight: 60 },
      { version: "green", service: "batch-green", cluster: "default_batch_green", weight: 40 },
    ]);
    expect(batch.shift).toEqual({
      from: "blue",
      to: "green",
      policy: "linear",
      start: "2026-11-30T10:00:00.000Z",
      duration: "100m",
    });
  });

  const cases: [string, (r: Record<string, unknown>) => Record<string, unknown>, string][] = [
    [
      "an unknown service",
      (r) =>
        withValue(r, "shifts", [
          { service: "batchh", from: "blue", to: "green", policy: "linear", start: T0.toISOString(), duration: "10m" },
        ]),
      "envoy-gateways:shifts[0].service: is not a service of this stack (envoy-gateways:services)",
    ],
    [
      "an unknown version",
      (r) =>
        withValue(r, "shifts", [
          { service: "batch", from: "blue", to: "red", policy: "linear", start: T0.toISOString(), duration: "10m" },
        ]),
      "envoy-gateways:shifts[0].to: must be a version of batch (versions: blue, green)",
    ],
    [
      "a duration under a minute",
      (r) =>
        withValue(r, "shifts", [
          { service: "batch", from: "blue", to: "green", policy: "linear", start: T0.toISOString(), duration: "30s" },
        ]),
      "envoy-gateways:shifts[0].duration: must be a duration from 1 minute to 5 days, such as 90s, 30m, 2h or 5d",
    ],
    [
      "a duration over five days",
      (r) =>
        withValue(r, "shifts", [
          { service: "batch", from: "blue", to: "green", policy: "linear", start: T0.toISOString(), duration: "6d" },
        ]),
      "envoy-gateways:shifts[0].duration: must be a duration from 1 minute to 5 days, such as 90s, 30m, 2h or 5d",
    ],
    [
      "an unknown policy",
      (r) =>
        withValue(r, "shifts", [
          { service: "batch", from: "blue", to: "green", policy: "canary", start: T0.toISOString(), duration: "10m" },
        ]),
      "envoy-gateways:shifts[0].policy: must be linear or atomic",
    ],
    [
      "a start that is not a time",
      (r) =>
        withValue(r, "shifts", [
          { service: "batch", from: "blue", to: "green", policy: "linear", start: "tomorrow", duration: "10m" },
        ]),
      "envoy-gateways:shifts[0].start: must be an RFC 3339 time such as 2026-11-30T10:00:00Z",
    ],
    [
      "overlapping shifts",
      (r) =>
        withValue(r, "shifts", [
          ...(r.shifts as object[]),
          {
            service: "batch",
            from: "green",
            to: "blue",
            policy: "atomic",
            start: at(30).toISOString(),
            duration: "10m",
          },
        ]),
      "envoy-gateways:shifts: shifts of batch overlap (blue->green from 2026-11-30T10:00:00.000Z, green->blue from 2026-11-30T10:30:00.000Z); one service moves one way at a time",
    ],
    [
      "a reversal outside the shift",
      (r) => withValue(r, "shifts", [{ ...(r.shifts as object[])[0]!, reversed: at(120).toISOString() }]),
      "envoy-gateways:shifts[0].reversed: is not while the shift was in progress (2026-11-30T10:00:00.000Z to 2026-11-30T11:40:00.000Z); only a shift in progress can be reversed",
    ],
    [
      "versions without a shift",
      (r) => withValue(r, "shifts", []),
      "envoy-gateways:services[0].versions: batch has several versions but no shift in envoy-gateways:shifts says how to split its traffic",
    ],
    [
      "a shift of a service without versions",
      (r) =>
        withValue(r, "shifts", [
          { service: "www", from: "a", to: "b", policy: "linear", start: T0.toISOString(), duration: "10m" },
        ]),
      "envoy-gateways:shifts[0].service: has no versions to shift between; list them in its versions",
    ],
  ];
  it.each(cases)("rejects %s with a clear error", (_, change, expected) => {
    expect(problems(change(base()))).toContain(expected);
  });
});

describe("npm run shifts table", () => {
  it("lists shifts in progress with current and next weights and when each phase ends", () => {
    const lines = shiftTable(
      [
        { id: "default/batch", shift: shift("linear") },
        { id: "pr-3/web", shift: shift("atomic", { service: "web", start: at(-200) }) },
      ],
      at(30),
    );
    expect(lines).toEqual([
      "SERVICE        FROM -> TO     POLICY  PHASE     NOW (from/to)  NEXT (from/to at)                  PHASE ENDS",
      "default/batch  blue -> green  linear  shifting  70/30          69/31 at 2026-11-30T10:31:00.000Z  2026-11-30T11:40:00.000Z",
    ]);
    expect(shiftTable([{ id: "pr-3/web", shift: shift("atomic", { start: at(-200) }) }], at(30))).toEqual([
      "no traffic shifts in progress",
    ]);
  });
});

describe("a shift gets the same checks wherever it is written", () => {
  const good = { from: "blue", to: "green", policy: "linear", start: "2026-11-30T10:00:00Z", duration: "100m" };
  const bad: [string, Record<string, string>][] = [
    ["policy", { policy: "canary" }],
    ["start", { start: "2026-11-31T10:00:00Z" }],
    ["duration", { duration: "2 hours" }],
    ["duration", { duration: "6d" }],
    ["reversed", { reversed: "2026-11-30T12:00:00Z" }],
  ];
  it.each(bad)(
    "%s %j: the same message in stack config, a namespaces file and Service annotations",
    (field, change) => {
      const shift = { ...good, ...change };
      // Stack config.
      let raw = withValue(minimalRaw(), "services", [{ name: "web", replicas: 2, versions: ["blue", "green"] }]);
      raw = withValue(raw, "shifts", [{ service: "web", ...shift }]);
      let fromConfig: string[] = [];
      try {
        parseStackConfig(raw);
      } catch (e) {
        fromConfig = (e as InputError).problems.map((p) => `${p.key}: ${p.message}`);
      }
      // A namespaces file (the routing table's facts).
      let fromFile: string[] = [];
      try {
        buildRoutingTable(parseStackConfig(minimalRaw()), {
          "pr-1": [
            {
              name: "web",
              versions: [
                { version: "blue", service: "web-blue" },
                { version: "green", service: "web-green" },
              ],
              shifts: [shift as never],
            },
          ],
        });
      } catch (e) {
        fromFile = (e as InputError).problems.map((p) => `${p.key}: ${p.message}`);
      }
      // Service annotations (discovery).
      const annotations: Record<string, string> = {
        [SHIFT_ANNOTATION.from]: shift.from,
        [SHIFT_ANNOTATION.policy]: shift.policy,
        [SHIFT_ANNOTATION.start]: shift.start,
        [SHIFT_ANNOTATION.duration]: shift.duration,
      };
      if ("reversed" in shift) annotations[SHIFT_ANNOTATION.reversed] = (shift as { reversed: string }).reversed;
      const svc = (version: string, a: Record<string, string> = {}) => ({
        metadata: {
          namespace: "pr-1",
          name: `web-${version}`,
          labels: routingLabels({ service: "web", version, weight: 100, replicas: 1, websocket: false }),
          annotations: a,
        },
        spec: { clusterIP: "None", ports: [{ name: "https", port: 443 }] },
      });
      const discovered = discoverRoutes(
        [{ metadata: { name: "pr-1" } }],
        [svc("blue"), svc("green", annotations)],
        "default",
      ).problems.map((p) => p.message);

      const message = checkShift("web", shift, ["blue", "green"]).problems[0]!.message;
      expect(fromConfig).toEqual([`envoy-gateways:shifts[0].${field}: ${message}`]);
      expect(fromFile).toEqual([`pr-1[0] (web).shifts[0].${field}: ${message}`]);
      expect(discovered).toEqual([
        `left out: annotation ${SHIFT_ANNOTATION[field as keyof typeof SHIFT_ANNOTATION]}=${JSON.stringify(shift[field as keyof typeof shift])} ${message}`,
      ]);
    },
  );
});
