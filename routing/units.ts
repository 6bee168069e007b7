// Durations and digests, one way each, wherever they are written: stack
// config (250ms, 5s, 10m, 1h), traffic shifts (90s, 30m, 2h, 5d), CLI flags
// (500ms, 2s); the digests of ConfigMap data and xDS versions.
import { createHash } from "node:crypto";

export type DurationUnit = "ms" | "s" | "m" | "h" | "d";

const UNIT_MS: Record<DurationUnit, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A whole number and one unit ("500ms", "90s", "2h") in milliseconds, or
 * undefined when `text` is not such a duration in one of `units`.
 */
export function parseDuration(
  text: string,
  units: readonly DurationUnit[] = ["ms", "s", "m", "h", "d"],
): number | undefined {
  const m = /^(\d{1,12})(ms|s|m|h|d)$/.exec(text);
  if (!m || !units.includes(m[2] as DurationUnit)) return undefined;
  return Number(m[1]) * UNIT_MS[m[2] as DurationUnit];
}

/** Milliseconds written with the largest unit that divides them exactly (`units` in descending size). */
export function formatDuration(ms: number, units: readonly DurationUnit[] = ["d", "h", "m", "s", "ms"]): string {
  for (const unit of units) if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  return `${ms}ms`;
}

/** sha256 (hex) of the parts, one after the other. */
function sha256(...parts: string[]): string {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest("hex");
}

/** The digest of key/value data (ConfigMap data), independent of key order. */
export function dataDigest(data: Readonly<Record<string, string>>): string {
  return sha256(
    ...Object.keys(data)
      .sort()
      .flatMap((key) => [key, "\0", data[key]!, "\0"]),
  );
}

/**
 * The digest of a JSON value, independent of the order its objects' keys were
 * set in (and of keys set to undefined, which JSON leaves out).
 */
export function jsonDigest(value: unknown): string {
  return sha256(JSON.stringify(value, sortedKeys));
}

/** A JSON.stringify replacer that writes every object's keys in one order. */
function sortedKeys(_key: string, value: unknown): unknown {
  if (!value || typeof value !== "object" || Array.isArray(value)) return value;
  const fields = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(fields)
      .sort()
      .map((k) => [k, fields[k]]),
  );
}

/** A short digest of a JSON value: same content, same version. */
export function contentVersion(value: unknown): string {
  return sha256(JSON.stringify(value)).slice(0, 16);
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))$/;

/** An RFC 3339 time ("2026-11-30T10:00:00Z", "...+01:00"), or undefined: no day past the month's end, no hour 24. */
export function parseTime(text: unknown): Date | undefined {
  if (typeof text !== "string") return undefined;
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59)
    return undefined;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return undefined;
  const t = new Date(text);
  return Number.isNaN(t.getTime()) ? undefined : t;
}

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;
const QUANTITY_SUFFIX: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

/**
 * A Kubernetes resource quantity ("250m", "2", "1.5Gi", "1e3") as a number
 * (cores, bytes), or undefined when Kubernetes would not parse it.
 */
export function parseQuantity(text: string): number | undefined {
  const m = QUANTITY.exec(text);
  if (!m) return undefined;
  const [, sign, digits, suffix = ""] = m as unknown as [string, string, string, string | undefined];
  // An exponent (e3, E-3), not the exa suffixes E and Ei.
  const factor = /^[eE][+-]?\d/.test(suffix) ? 10 ** Number(suffix.slice(1)) : QUANTITY_SUFFIX[suffix]!;
  const value = Number(digits) * factor * (sign === "-" ? -1 : 1);
  return Number.isFinite(value) ? value : undefined;
}
