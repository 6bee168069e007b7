// Child processes of the harness (Envoy, dnsmasq, nginx, load generators):
// each in its own process group, output to a log file, stopped by group
// (SIGTERM, then SIGKILL after a bounded wait). Every group still running
// when this Node process exits is killed, so a failed test leaves nothing behind.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, readFileSync } from "node:fs";

export interface ManagedProcess {
  name: string;
  pid: number;
  child: ChildProcess;
  /** Combined stdout and stderr so far (from the log file). */
  log(): string;
  logPath: string;
  /** True once the process has exited. */
  exited(): boolean;
  exitCode(): number | null;
  /** Resolves when the process exits. */
  exit: Promise<void>;
  /** Stops the whole process group: SIGTERM, SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  /** Sends a signal to the process itself (not its group). */
  signal(sig: NodeJS.Signals): void;
}

const running = new Set<ManagedProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const p of running) {
      try {
        process.kill(-p.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Starts `command` in a new process group with stdout and stderr appended to
 * `logPath` (stdin closed).
 */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  logPath: string,
  env?: NodeJS.ProcessEnv,
): ManagedProcess {
  installExitHook();
  const fd = openSync(logPath, "a");
  let child: ChildProcess;
  try {
    child = spawn(command, args, { detached: true, stdio: ["ignore", fd, fd], env: env ?? process.env });
  } finally {
    closeSync(fd);
  }
  if (child.pid === undefined) throw new Error(`${name}: could not start ${command}`);
  let done = false;
  let code: number | null = null;
  const exit = new Promise<void>((resolve) => {
    child.on("exit", (c, sig) => {
      done = true;
      code = c ?? (sig ? 128 : null);
      running.delete(managed);
      resolve();
    });
    child.on("error", () => {
      done = true;
      running.delete(managed);
      resolve();
    });
  });
  const managed: ManagedProcess = {
    name,
    pid: child.pid,
    child,
    logPath,
    log: () => (existsSync(logPath) ? readFileSync(logPath, "utf8") : ""),
    exited: () => done,
    exitCode: () => code,
    exit,
    signal: (sig) => {
      if (!done) child.kill(sig);
    },
    async stop(graceMs = 5_000) {
      if (!done) {
        try {
          process.kill(-child.pid!, "SIGTERM");
        } catch {
          // group gone
        }
        const stopped = await Promise.race([exit.then(() => true), sleep(graceMs).then(() => false)]);
        if (!stopped) {
          try {
            process.kill(-child.pid!, "SIGKILL");
          } catch {
            // group gone
          }
          await Promise.race([exit, sleep(5_000)]);
        }
      }
      // Children left in the group (nginx workers) die with it.
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // nothing left
      }
      running.delete(managed);
    },
  };
  running.add(managed);
  return managed;
}

/**
 * Polls `check` every `intervalMs` until it returns a value other than
 * undefined/false, or throws after `timeoutMs` with `what` and the last error.
 */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ""}`,
      );
    }
    await sleep(intervalMs);
  }
}

/** A process as /proc shows it: its parent, its start time (so that a reused pid is not taken for it) and its niceness. */
export interface Proc {
  pid: number;
  ppid: number;
  start: string;
  nice: number;
  command: string;
}

/**
 * A process's /proc/<pid>/stat: its command name, and the fields after it
 * (the name is in parentheses and may hold spaces), from its state on;
 * undefined once the process is gone.
 */
export function procStat(pid: number | "self"): { name: string; fields: string[] } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined; // gone between the listing and the read
  }
  const close = stat.lastIndexOf(")");
  return { name: stat.slice(stat.indexOf("(") + 1, close), fields: stat.slice(close + 2).split(" ") };
}

/** Every pid /proc lists now. */
export function pids(): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}

export function proc(pid: number): Proc | undefined {
  const stat = procStat(pid);
  if (!stat || stat.fields[0] === "Z") return undefined; // exited, not yet reaped: gone for this test's purpose
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
    return { pid, ppid: Number(stat.fields[1]), start: stat.fields[19]!, nice: Number(stat.fields[16]), command };
  } catch {
    return undefined; // gone between the two reads
  }
}

/** Every live process descended from `root`. */
export function descendants(root: number): Proc[] {
  const all = pids()
    .map(proc)
    .filter((p): p is Proc => p !== undefined);
  const found: Proc[] = [];
  const parents = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all) {
      if (parents.has(p.ppid) && !parents.has(p.pid)) {
        parents.add(p.pid);
        found.push(p);
        grew = true;
      }
    }
  }
  return found;
}

/**
 * SIGKILLs a process and every process it started, as when a CI job is
 * killed whole: a `pulumi up` killed alone leaves its provider plugins
 * running, re-parented to init, for as long as the machine runs.
 */
export function killWithDescendants(pid: number): void {
  for (const p of [{ pid }, ...descendants(pid)]) {
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
}
