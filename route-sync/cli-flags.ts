// What the route-sync CLIs (sync-routes, route-controller) share in reading
// their flags and ending: a usage error (exit 2, with the usage line), a
// duration flag read as a whole number with a unit, and their log lines.
import { parseDuration } from "../routing/units.js";

/** A bad flag or value: the CLI prints it with its usage line and exits 2. */
export class UsageError extends Error {}

/** The flags, or a usage error for an unknown flag or a missing value. */
export function parseFlags<T>(parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/** A flag's duration in milliseconds, or an error naming the flag, the value and what is allowed. */
export function durationFlag(flag: string, text: string, units: ("ms" | "s" | "m")[], example: string): number {
  const ms = parseDuration(text, units);
  if (ms === undefined)
    throw new UsageError(
      `--${flag} ${JSON.stringify(text)}: must be a whole number with a unit (${units.join(", ")}), such as ${example}`,
    );
  return ms;
}

/** Ends the CLI `name` on the error its main() threw: a usage error exits 2 with `usage`, anything else 1. */
export function exitWith(name: string, usage: string): (e: unknown) => never {
  return (e) => {
    if (e instanceof UsageError) {
      console.error(`${name}: ${e.message}\n${usage}`);
      process.exit(2);
    }
    console.error(`${name}: ${(e as Error).message}`);
    process.exit(1);
  };
}

/** Prints a log line on stdout after the time of day (UTC, hh:mm:ss). */
export function logLine(line: string): void {
  console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
}
