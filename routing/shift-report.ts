// The table `npm run shifts` prints: each shift with its phase, the weights
// now, the next weights and when they apply, and when the phase ends.
import { nextWeights, shiftPhase, shiftWeights, type Shift } from "./shifts.js";

export interface ShiftRow {
  /** <namespace>/<service>. */
  id: string;
  shift: Shift;
}

export function shiftTable(rows: readonly ShiftRow[], now: Date, includeFinished = false): string[] {
  const lines: string[][] = [
    ["SERVICE", "FROM -> TO", "POLICY", "PHASE", "NOW (from/to)", "NEXT (from/to at)", "PHASE ENDS"],
  ];
  for (const { id, shift } of [...rows].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    const { phase, endsAt } = shiftPhase(shift, now);
    if (!includeFinished && (phase === "done" || phase === "reverted")) continue;
    const w = shiftWeights(shift, now);
    const next = nextWeights(shift, now);
    lines.push([
      id,
      `${shift.from} -> ${shift.to}`,
      shift.policy,
      phase,
      `${w.from}/${w.to}`,
      next ? `${next.weights.from}/${next.weights.to} at ${next.at.toISOString()}` : "-",
      endsAt.toISOString(),
    ]);
  }
  if (lines.length === 1) return [includeFinished ? "no traffic shifts" : "no traffic shifts in progress"];
  const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  return lines.map((l) =>
    l
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd(),
  );
}
