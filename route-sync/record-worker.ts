// The worker thread of route-sync/record-thread.ts: runs each record it is
// asked for with route-sync/sync.ts `record`, as the watcher would in its own
// thread, and answers with its progress lines and the state after it, or why
// it failed. One stack handle per stack, kept: the Automation API's stack is
// selected once, and the program's modules load on the first record only.
import { parentPort } from "node:worker_threads";
import type { RecordReply, RecordRequest } from "./record-thread.js";
import { ProjectStack } from "./stack.js";
import { record } from "./sync.js";

const port = parentPort;
if (!port) throw new Error("route-sync/record-worker runs as a worker thread (route-sync/record-thread.ts starts it)");

const stacks = new Map<string, ProjectStack>();

function stackOf(s: RecordRequest["stack"]): ProjectStack {
  const key = JSON.stringify([s.name, s.workDir, s.engineNiceness]);
  let stack = stacks.get(key);
  if (!stack) stacks.set(key, (stack = new ProjectStack(s.name, s.workDir, s.engineNiceness)));
  return stack;
}

async function run(request: RecordRequest): Promise<void> {
  const reply = (r: RecordReply) => port!.postMessage(r);
  const { id } = request;
  try {
    const state = await record(stackOf(request.stack), request.state, request.sync, {
      log: (line) => reply({ id, log: line }),
      ...(request.lock ? { lock: request.lock } : {}),
    });
    reply({ id, state });
  } catch (e) {
    const stderr = (e as { stderr?: unknown }).stderr;
    reply({
      id,
      error: {
        message: e instanceof Error ? e.message : String(e),
        ...(typeof stderr === "string" ? { stderr } : {}),
      },
    });
  }
}

port.on("message", (request: RecordRequest) => void run(request));
