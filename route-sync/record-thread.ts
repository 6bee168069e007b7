// The watcher's records on a worker thread of their own. A record's engine
// run also works in the process that starts it: the inline program (the
// routing table and the routes of every pair), its gRPC with the engine, and
// reading the state back. On the watcher's own event loop that work came in
// blocks of up to about 220 ms at 5,000 dev/PR pairs, and a namespace's live
// write that fell into a record waited behind them (docs/benchmarks.md). On a
// thread of its own the watcher's loop stays free for the live writes; the
// engine's processes are the same, started from that thread at the record's
// niceness.
import { join } from "node:path";
import { SHARE_ENV, Worker } from "node:worker_threads";
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

/** A record asked of the worker: everything `record` takes, as data. */
export interface RecordRequest {
  id: number;
  stack: { name: string; workDir: string; engineNiceness: number };
  state: readonly RoutesResourceState[];
  sync: SyncRecord;
  lock?: Omit<LockWait, "log" | "sleep">;
}

/** What the worker answers a request with: progress lines, then the state after the record or why it failed. */
export type RecordReply =
  | { id: number; log: string }
  | { id: number; state: RoutesResourceState[] }
  | { id: number; error: { message: string; stderr?: string } };

export interface RecordThread {
  record: Recorder;
  /** Ends the thread once no record runs (the watcher has stopped); a later record would start another. */
  stop(): Promise<void>;
}

/**
 * The worker beside this module: the bundle in dist/ (scripts/build-cli.mjs
 * builds it next to sync-routes'), or the TypeScript source when this runs
 * through tsx (the worker inherits Node's options, tsx's loader with them).
 */
export function recordWorkerFile(module: string = __filename): string {
  return module.endsWith(".ts")
    ? join(module, "..", "record-worker.ts")
    : join(module, "..", "record-worker.bundle.js");
}

/** Records on a worker thread started on the first record and kept for the next ones (its modules loaded once). */
export function recordThread(workerFile: string = recordWorkerFile()): RecordThread {
  let current: { worker: Worker; waiting: Map<number, Waiting> } | undefined;
  let nextId = 1;
  const started = () => {
    if (current) return current;
    const worker = new Worker(workerFile, { env: SHARE_ENV });
    const waiting = new Map<number, Waiting>();
    const thread = { worker, waiting };
    // A thread that failed or ended fails its records in flight; the next record starts another.
    const end = (why: string) => {
      if (current === thread) current = undefined;
      for (const w of waiting.values())
        w.reject(new Error(`the record's thread ${why} before the record ended; the next record writes the routes`));
      waiting.clear();
    };
    worker.on("message", (reply: RecordReply) => {
      const to = waiting.get(reply.id);
      if (!to) return;
      if ("log" in reply) return to.log(reply.log);
      waiting.delete(reply.id);
      if ("state" in reply) to.resolve(reply.state);
      else to.reject(Object.assign(new Error(reply.error.message), { stderr: reply.error.stderr }));
    });
    worker.on("error", (e) => end(`failed (${e.message})`));
    worker.on("exit", (code) => end(`stopped (exit code ${code})`));
    current = thread;
    return thread;
  };
  return {
    record: (stack, state, sync, options) =>
      new Promise((resolve, reject) => {
        const thread = started();
        const id = nextId++;
        thread.waiting.set(id, { log: options.log, resolve, reject });
        // The lock wait's settings cross as data; its sleep (a test's clock) stays here.
        const { sleep: _sleep, ...lock } = options.lock ?? {};
        const request: RecordRequest = {
          id,
          stack: { name: stack.name, workDir: stack.workDir, engineNiceness: stack.engineNiceness },
          state,
          sync,
          ...(options.lock ? { lock } : {}),
        };
        thread.worker.postMessage(request);
      }),
    async stop() {
      const thread = current;
      current = undefined;
      if (thread) await thread.worker.terminate();
    },
  };
}

/** A record in flight: where its lines and its outcome go. */
interface Waiting {
  log: (line: string) => void;
  resolve: (state: RoutesResourceState[]) => void;
  reject: (e: Error) => void;
}
