// The watcher's records in a child process of their own. A record's engine
// run also works in the process that starts it: the inline program (the
// routing table and the routes of every pair), its gRPC with the engine, and
// reading the state back. In the watcher's process that work came in blocks
// of up to about 220 ms at 5,000 dev/PR pairs, and a namespace's live write
// that fell into a record waited behind them (docs/benchmarks.md). In a child
// the watcher's event loop stays free for the live writes; the engine's
// processes are the same, started by the child at the record's niceness.
//
// A process, not a worker thread: Pulumi serializes the routes resources'
// dynamic provider through a Node inspector session, which a worker thread
// refuses (ERR_TRACE_EVENTS_UNAVAILABLE).
import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { SyncRecord } from "../program/main.js";
import type { LockWait } from "./lock.js";
import type { ProjectStack, RoutesResourceState } from "./stack.js";
import type { SyncOptions } from "./sync.js";

/** What records a sync in the stack's state and returns the routes resources' state after it (route-sync/sync.ts `record`). */
export type Recorder = (
  stack: ProjectStack,
  state: readonly RoutesResourceState[],
  sync: SyncRecord,
  options: SyncOptions,
) => Promise<RoutesResourceState[]>;

/** A record asked of the child: everything `record` takes, as data. */
export interface RecordRequest {
  id: number;
  stack: { name: string; workDir: string; engineNiceness: number };
  state: readonly RoutesResourceState[];
  sync: SyncRecord;
  lock?: Omit<LockWait, "log" | "sleep">;
}

/** What the child answers a request with: progress lines, then the state after the record or why it failed. */
export type RecordReply =
  | { id: number; log: string }
  | { id: number; state: RoutesResourceState[] }
  | { id: number; error: { message: string; stderr?: string } };

export interface RecordProcess {
  record: Recorder;
  /** Ends the child once no record runs (the watcher has stopped); a later record would start another. */
  stop(): Promise<void>;
}

/**
 * The child's module beside this one: the bundle in dist/ (scripts/build-cli.mjs
 * builds it next to sync-routes'), or the TypeScript source when this runs
 * through tsx (the child gets this process's Node options, tsx's loader with them).
 */
export function recordChildFile(module: string = __filename): string {
  return module.endsWith(".ts") ? join(module, "..", "record-child.ts") : join(module, "..", "record-child.bundle.js");
}

/** A record in flight: where its lines and its outcome go. */
interface Waiting {
  log: (line: string) => void;
  resolve: (state: RoutesResourceState[]) => void;
  reject: (e: Error) => void;
}

/** Records in a child started on the first record and kept for the next ones (its modules loaded once). */
export function recordProcess(childFile: string = recordChildFile()): RecordProcess {
  let current: { child: ChildProcess; waiting: Map<number, Waiting> } | undefined;
  let nextId = 1;
  const started = () => {
    if (current) return current;
    const child = fork(childFile, [], { serialization: "advanced", stdio: ["ignore", "inherit", "inherit", "ipc"] });
    const waiting = new Map<number, Waiting>();
    const running = { child, waiting };
    // A child that failed or ended fails its records in flight; the next record starts another.
    const end = (why: string) => {
      if (current === running) current = undefined;
      for (const w of waiting.values())
        w.reject(new Error(`the record's process ${why} before the record ended; the next record writes the routes`));
      waiting.clear();
    };
    child.on("message", (reply: RecordReply) => {
      const to = waiting.get(reply.id);
      if (!to) return;
      if ("log" in reply) return to.log(reply.log);
      waiting.delete(reply.id);
      if ("state" in reply) to.resolve(reply.state);
      else to.reject(Object.assign(new Error(reply.error.message), { stderr: reply.error.stderr }));
    });
    child.on("error", (e) => end(`failed (${e.message})`));
    child.on("exit", (code, signal) => end(`ended (${signal ?? `exit code ${code}`})`));
    current = running;
    return running;
  };
  return {
    record: (stack, state, sync, options) =>
      new Promise((resolve, reject) => {
        const running = started();
        const id = nextId++;
        running.waiting.set(id, { log: options.log, resolve, reject });
        // The lock wait's settings cross as data; its sleep (a test's clock) stays here.
        const { sleep: _sleep, ...lock } = options.lock ?? {};
        const request: RecordRequest = {
          id,
          stack: { name: stack.name, workDir: stack.workDir, engineNiceness: stack.engineNiceness },
          state,
          sync,
          ...(options.lock ? { lock } : {}),
        };
        running.child.send(request);
      }),
    async stop() {
      const running = current;
      current = undefined;
      if (!running || running.child.exitCode !== null || running.child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => running.child.once("exit", () => resolve()));
      // The child ends once its channel closes, after any record in progress.
      running.child.disconnect();
      await exited;
    },
  };
}
