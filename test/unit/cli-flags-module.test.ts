// route-sync/cli-flags.ts in-process (the subprocess tests in cli-flags.test.ts check
// the CLIs' whole answers): which errors are usage errors, the durations, the exit codes.
import { afterEach, describe, expect, it, vi } from "vitest";
import { durationFlag, exitWith, logLine, parseFlags, UsageError } from "../../route-sync/cli-flags.js";

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe("parseFlags", () => {
  it("gives the parse's flags, and turns what it throws into a usage error with the same message", () => {
    expect(parseFlags(() => ({ port: "8080" }))).toEqual({ port: "8080" });
    const thrown = (() => {
      try {
        parseFlags(() => {
          throw new TypeError("Unknown option '--lease'");
        });
      } catch (e) {
        return e;
      }
    })();
    expect(thrown).toBeInstanceOf(UsageError);
    expect((thrown as Error).message).toBe("Unknown option '--lease'");
  });
});

describe("durationFlag", () => {
  it("reads a whole number with one of the allowed units, in milliseconds", () => {
    expect(durationFlag("stuck-after", "90s", ["s", "m"], "90s or 5m")).toBe(90_000);
    expect(durationFlag("stuck-after", "5m", ["s", "m"], "90s or 5m")).toBe(300_000);
    expect(durationFlag("debounce", "250ms", ["ms", "s"], "500ms or 2s")).toBe(250);
  });

  it("refuses a value without a unit, or with a unit not allowed, naming the flag, the value and the units", () => {
    expect(() => durationFlag("stuck-after", "5", ["s", "m"], "90s or 5m")).toThrow(
      new UsageError('--stuck-after "5": must be a whole number with a unit (s, m), such as 90s or 5m'),
    );
    expect(() => durationFlag("debounce", "2m", ["ms", "s"], "500ms or 2s")).toThrow(
      new UsageError('--debounce "2m": must be a whole number with a unit (ms, s), such as 500ms or 2s'),
    );
    expect(() => durationFlag("debounce", "2m", ["ms", "s"], "x")).toThrow(UsageError);
  });
});

describe("exitWith", () => {
  const capture = () => {
    const exit = vi.spyOn(process, "exit").mockImplementation((() => undefined) as never);
    const error = vi.spyOn(console, "error").mockImplementation(() => undefined);
    return { exit, error };
  };

  it("ends a usage error with exit 2, the CLI's name, the message and the usage line", () => {
    const { exit, error } = capture();
    exitWith("route-controller", "usage: dist/route-controller [--port N]")(new UsageError('--port "0": bad'));
    expect(error).toHaveBeenCalledWith('route-controller: --port "0": bad\nusage: dist/route-controller [--port N]');
    expect(exit).toHaveBeenCalledWith(2);
  });

  it("ends any other error with exit 1 and no usage line", () => {
    const { exit, error } = capture();
    exitWith("sync-routes", "usage: dist/sync-routes")(new Error("the API server did not answer"));
    expect(error).toHaveBeenCalledWith("sync-routes: the API server did not answer");
    expect(exit).toHaveBeenCalledWith(1);
    expect(exit).not.toHaveBeenCalledWith(2);
  });
});

describe("logLine", () => {
  it("prints the line after the UTC time of day", () => {
    vi.useFakeTimers({ now: new Date("2026-12-07T09:05:03.250Z") });
    const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
    logLine("leading with epoch 3");
    expect(log).toHaveBeenCalledWith("[09:05:03] leading with epoch 3");
  });
});
