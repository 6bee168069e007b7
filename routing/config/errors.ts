// Errors that name what is wrong: the stack config key (or file and field),
// the bad value, and what is allowed. Collected, never only the first.

/** One problem with one value. */
export interface Problem {
  /** Where: a stack config key such as `envoy-gateways:gateways.gateway.replicas`, or a file and field. */
  key: string;
  /** What is wrong and what is allowed. */
  message: string;
  /** The offending value, when there is one (printed compactly). */
  value?: unknown;
}

/** Prints a value for an error message: short, on one line, secrets never included by callers. */
export function showValue(value: unknown): string {
  if (value === undefined) return "nothing";
  let text: string;
  try {
    text = typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

export function formatProblem(p: Problem): string {
  return "value" in p ? `${p.key}: ${p.message} (got ${showValue(p.value)})` : `${p.key}: ${p.message}`;
}

/** Bad input: carries every problem found, each on its own line in `message`. */
export class InputError extends Error {
  constructor(
    /** What was being read, such as "stack config" or "namespaces file dev.yaml". */
    readonly subject: string,
    readonly problems: readonly Problem[],
  ) {
    super(`${subject}: ${problems.length} problem${problems.length === 1 ? "" : "s"}\n${problems.map((p) => `  - ${formatProblem(p)}`).join("\n")}`);
    this.name = "InputError";
  }
}
