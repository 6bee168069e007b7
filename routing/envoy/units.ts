// Conversions from stack config notation to Envoy's.
import { parseDuration, parseQuantity } from "../units.js";

/** A stack config duration ("500ms", "5s", "10m", "1h") as Envoy's JSON duration ("0.5s", "5s", "600s", "3600s"). */
export function envoyDuration(d: string): string {
  const ms = parseDuration(d);
  if (ms === undefined) throw new Error(`not a duration: ${d}`);
  return `${ms / 1000}s`;
}

/** Kubernetes memory quantity ("1Gi", "512Mi", "1G") -> bytes. */
export function memoryBytes(q: string): number {
  const bytes = parseQuantity(q);
  if (bytes === undefined) throw new Error(`not a memory quantity: ${q}`);
  return bytes;
}

/** Escapes text for an Envoy substitution format string (a literal % is written %%). */
export function formatLiteral(text: string): string {
  return text.replaceAll("%", "%%");
}
