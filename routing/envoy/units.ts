// Conversions from stack config notation to Envoy's.

/** "500ms" | "5s" | "10m" | "1h" -> Envoy's JSON duration ("0.5s", "5s", "600s", "3600s"). */
export function envoyDuration(d: string): string {
  const m = /^(\d+)(ms|s|m|h)$/.exec(d);
  if (!m) throw new Error(`not a duration: ${d}`);
  const n = Number(m[1]);
  const factor = { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] as "ms" | "s" | "m" | "h"];
  const seconds = n * factor;
  return `${Number.isInteger(seconds) ? seconds : Number(seconds.toFixed(3))}s`;
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
