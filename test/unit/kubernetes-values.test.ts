// What Kubernetes accepts (names, label and annotation keys, label values,
// selectors, quantities), durations and times as the stack config writes
// them, and the digests of what is written.
import { describe, expect, it } from "vitest";
import {
  isDnsSubdomain,
  isLabelValue,
  isQualifiedName,
  labelSelectorProblem,
} from "../../routing/config/kubernetes.js";
import { envoyDuration, formatLiteral, memoryBytes } from "../../routing/envoy/units.js";
import {
  contentVersion,
  jsonDigest,
  dataDigest,
  formatDuration,
  parseDuration,
  parseQuantity,
  parseTime,
} from "../../routing/units.js";

describe("Kubernetes names", () => {
  it("a DNS subdomain: lower-case labels of at most 63, joined by dots, 253 in all", () => {
    for (const ok of ["a", "example.org", "a-b.c0", `${"a".repeat(63)}.org`, `${"a.".repeat(126)}a`])
      expect(isDnsSubdomain(ok), ok).toBe(true);
    for (const bad of [
      "",
      "A.org",
      "a..b",
      ".a",
      "a.",
      "-a",
      "a-",
      "a_b",
      `${"a".repeat(64)}.org`,
      `${"a.".repeat(126)}ab`,
    ])
      expect(isDnsSubdomain(bad), bad).toBe(false);
  });

  it("a label or annotation key: an optional DNS-subdomain prefix and /, then 1 to 63 name characters", () => {
    for (const ok of [
      "app",
      "app.kubernetes.io/name",
      "A_b.c-D",
      "x/y",
      "a".repeat(63),
      `example.org/${"a".repeat(63)}`,
    ])
      expect(isQualifiedName(ok), ok).toBe(true);
    for (const bad of [
      "",
      "/name",
      "Example.org/name",
      "a/b/c",
      "name/",
      "-a",
      "a-",
      "a b",
      "a".repeat(64),
      `example.org/${"a".repeat(64)}`,
    ])
      expect(isQualifiedName(bad), bad).toBe(false);
  });

  it("a label value: empty, or up to 63 of letters, digits, - _ . starting and ending alphanumeric", () => {
    for (const ok of ["", "dev", "v1.2_3-a", "A", "a".repeat(63)]) expect(isLabelValue(ok), ok).toBe(true);
    for (const bad of ["-dev", "dev-", ".a", "a b", "a/b", "a".repeat(64)]) expect(isLabelValue(bad), bad).toBe(false);
  });

  it("an equality-based selector: key=value, key==value or key!=value terms joined by commas, each part checked", () => {
    for (const ok of ["envoy-gateways.io/routes=dev", "a==b", "a!=b", " a = b , c != d ", "a="])
      expect(labelSelectorProblem(ok), ok).toBeUndefined();
    expect(labelSelectorProblem("  ")).toBe("is empty");
    expect(labelSelectorProblem("a=b,c")).toBe('term "c" is not key=value or key!=value');
    expect(labelSelectorProblem("a in (b)")).toBe('term "a in (b)" is not key=value or key!=value');
    expect(labelSelectorProblem("=b")).toBe(
      `key "" is not a Kubernetes label or annotation key: an optional DNS-subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
    );
    expect(labelSelectorProblem("a=b c")).toBe(
      `value "b c" of a is not a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`,
    );
  });
});

describe("durations", () => {
  it("are a whole number and one unit, among those allowed", () => {
    expect([
      parseDuration("500ms"),
      parseDuration("5s"),
      parseDuration("10m"),
      parseDuration("2h"),
      parseDuration("5d"),
      parseDuration("0s"),
    ]).toEqual([500, 5000, 600_000, 7_200_000, 432_000_000, 0]);
    expect(parseDuration("5d", ["ms", "s", "m", "h"])).toBeUndefined();
    expect(parseDuration("500ms", ["s", "m"])).toBeUndefined();
    for (const bad of ["", "5", "1.5s", "-1s", "5 s", "5sec", "s", "1h30m", "1234567890123s", " 5s"])
      expect(parseDuration(bad), bad).toBeUndefined();
    expect(parseDuration("123456789012s")).toBe(123456789012000);
  });

  it("are written with the largest unit that divides them", () => {
    expect([
      formatDuration(90_000),
      formatDuration(5_400_000),
      formatDuration(86_400_000),
      formatDuration(1500),
      formatDuration(0),
    ]).toEqual(["90s", "90m", "1d", "1500ms", "0d"]);
    expect(formatDuration(5_400_000, ["h", "m"])).toBe("90m");
    expect(formatDuration(90_000, ["h", "m"])).toBe("90000ms");
    expect(formatDuration(1500, ["d", "h", "m", "s"])).toBe("1500ms");
  });

  it("become Envoy's seconds", () => {
    expect([
      envoyDuration("500ms"),
      envoyDuration("5s"),
      envoyDuration("10m"),
      envoyDuration("1h"),
      envoyDuration("0s"),
    ]).toEqual(["0.5s", "5s", "600s", "3600s", "0s"]);
    expect(() => envoyDuration("5 s")).toThrow("not a duration: 5 s");
  });
});

describe("times", () => {
  it("are RFC 3339, with a zone, and real dates and times", () => {
    expect(parseTime("2026-11-30T10:00:00Z")?.toISOString()).toBe("2026-11-30T10:00:00.000Z");
    expect(parseTime("2026-11-30T10:00:00.25+01:30")?.toISOString()).toBe("2026-11-30T08:30:00.250Z");
    expect(parseTime("2028-02-29T23:59:59-00:00")?.toISOString()).toBe("2028-02-29T23:59:59.000Z");
    for (const bad of [
      "2026-11-31T10:00:00Z",
      "2027-02-29T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-00-01T00:00:00Z",
      "2026-11-00T00:00:00Z",
      "2026-11-30T24:00:00Z",
      "2026-11-30T10:60:00Z",
      "2026-11-30T10:00:60Z",
      "2026-11-30T10:00:00+24:00",
      "2026-11-30T10:00:00+01:60",
      "2026-11-30T10:00:00",
      "2026-11-30 10:00:00Z",
      "tomorrow",
      "",
    ]) {
      expect(parseTime(bad), bad).toBeUndefined();
    }
    expect(parseTime(1_700_000_000_000)).toBeUndefined();
    expect(parseTime(undefined)).toBeUndefined();
  });
});

describe("quantities", () => {
  it("are what Kubernetes parses: binary and decimal suffixes, exponents, signs", () => {
    expect([
      parseQuantity("250m"),
      parseQuantity("2"),
      parseQuantity("1.5Gi"),
      parseQuantity("1e3"),
      parseQuantity("1E-3"),
      parseQuantity("512Mi"),
      parseQuantity("1Ki"),
      parseQuantity(".5"),
      parseQuantity("5."),
      parseQuantity("-1"),
      parseQuantity("+2k"),
    ]).toEqual([0.25, 2, 1.5 * 2 ** 30, 1000, 0.001, 512 * 2 ** 20, 1024, 0.5, 5, -1, 2000]);
    expect([
      parseQuantity("1n"),
      parseQuantity("1u"),
      parseQuantity("1M"),
      parseQuantity("1G"),
      parseQuantity("1T"),
      parseQuantity("1P"),
      parseQuantity("1E"),
      parseQuantity("1Ti"),
      parseQuantity("1Pi"),
      parseQuantity("1Ei"),
    ]).toEqual([1e-9, 1e-6, 1e6, 1e9, 1e12, 1e15, 1e18, 2 ** 40, 2 ** 50, 2 ** 60]);
    for (const bad of ["1GB", "1 Gi", "Gi", "", "1.2.3", "e3", "1e400", "--1"])
      expect(parseQuantity(bad), bad).toBeUndefined();
  });

  it("of memory become bytes for Envoy's heap limit", () => {
    expect(memoryBytes("1Gi")).toBe(2 ** 30);
    expect(() => memoryBytes("1GB")).toThrow("not a memory quantity: 1GB");
  });
});

describe("digests", () => {
  it("of ConfigMap data do not depend on key order, and tell keys from values", () => {
    expect(dataDigest({ a: "1", b: "2" })).toBe(dataDigest({ b: "2", a: "1" }));
    expect(dataDigest({ a: "1", b: "2" })).toMatch(/^[0-9a-f]{64}$/);
    expect(dataDigest({ a: "1", b: "2" })).not.toBe(dataDigest({ a: "1", b: "3" }));
    expect(dataDigest({ ab: "" })).not.toBe(dataDigest({ a: "b" }));
    expect(dataDigest({})).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  });

  it("version the same content the same, in 16 hex digits", () => {
    expect(contentVersion([{ a: 1 }])).toBe(contentVersion([{ a: 1 }]));
    expect(contentVersion([{ a: 1 }])).not.toBe(contentVersion([{ a: 2 }]));
    expect(contentVersion([])).toBe("4f53cda18c2baa0c");
  });

  it("digest a JSON value whatever order its keys were set in, at any depth, but not whatever its lists' order", () => {
    const digest = jsonDigest({ b: 1, a: { d: [1, 2], c: "x" } });
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(jsonDigest({ a: { c: "x", d: [1, 2] }, b: 1 })).toBe(digest);
    expect(jsonDigest({ a: { c: "x", d: [1, 2], e: undefined }, b: 1 })).toBe(digest);
    expect(jsonDigest({ a: { c: "x", d: [2, 1] }, b: 1 })).not.toBe(digest);
    expect(jsonDigest({ a: { c: "y", d: [1, 2] }, b: 1 })).not.toBe(digest);
    expect(jsonDigest(null)).toBe("74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b");
  });
});

describe("Envoy format strings", () => {
  it("write a literal % as %%", () => {
    expect(formatLiteral("a%20b%")).toBe("a%%20b%%");
    expect(formatLiteral("plain")).toBe("plain");
  });
});
