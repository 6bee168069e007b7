// Conversions from stack config notation to Envoy's.
import { parseDuration } from "../units.js";

/** A stack config duration ("500ms", "5s", "10m", "1h") as Envoy's JSON duration ("0.5s", "5s", "600s", "3600s"). */
export function envoyDuration(d: string): string {
  const ms = parseDuration(d);
  if (ms === undefined) throw new Error(`not a duration: ${d}`);
  return `${ms / 1000}s`;
}

/** Kubernetes memory quantity ("1Gi", "512Mi", "1G") -> bytes. */
export function memoryBytes(q: string): number {
  const m = /^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(q);
  if (!m) throw new Error(`not a memory quantity: ${q}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2] ?? ""] ?? 1;
  return Number(m[1]) * unit;
}

/** Escapes text for an Envoy substitution format string (a literal % is written %%). */
export function formatLiteral(text: string): string {
  return text.replaceAll("%", "%%");
}
