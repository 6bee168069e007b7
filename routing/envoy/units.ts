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

/**
 * A CEL string literal of `text`, for a %CEL(...)% command: every character
 * but letters, digits and a few safe ones is written as a \u or \U escape, so
 * no quote, backslash, `)` or `%` of the text can end the literal or the
 * command around it.
 */
export function celString(text: string): string {
  const escaped = [...text].map((ch) => {
    if (/[A-Za-z0-9 ./:?=&_~-]/.test(ch)) return ch;
    const code = ch.codePointAt(0)!;
    return code <= 0xffff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\U${code.toString(16).padStart(8, "0")}`;
  });
  return `'${escaped.join("")}'`;
}
