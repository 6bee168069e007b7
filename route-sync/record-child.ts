// The child process of route-sync/record-process.ts: runs each record it is
// asked for with route-sync/sync.ts `record`, as the watcher would in its own
// process, and answers with its progress lines and the state after it, or why
// it failed. One stack handle per stack, kept: the Automation API's stack is
// selected once, and the program's modules load on the first record only.
//
// The watcher decides when it stops: SIGTERM or SIGINT sent to its whole
// process group do not end a record here midway (its engine run would be left
// behind, holding the stack lock). The child ends when the watcher closes the
// channel, or goes away, once its records are done.
import type { RecordReply, RecordRequest } from "./record-process.js";
import { ProjectStack } from "./stack.js";
import { record } from "./sync.js";

const send = process.send?.bind(process);
if (!send) throw new Error("route-sync/record-child runs as a child process (route-sync/record-process.ts starts it)");

const stacks = new Map<string, ProjectStack>();

function stackOf(s: RecordRequest["stack"]): ProjectStack {
  const key = JSON.stringify([s.name, s.workDir, s.engineNiceness]);
  let stack = stacks.get(key);
  if (!stack) stacks.set(key, (stack = new ProjectStack(s.name, s.workDir, s.engineNiceness)));
  return stack;
}

let inFlight = 0;
let disconnected = false;

async function run(request: RecordRequest): Promise<void> {
  const reply = (r: RecordReply) => {
    if (process.connected) send!(r);
  };
  const { id } = request;
  inFlight++;
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
  } finally {
    inFlight--;
    if (disconnected && inFlight === 0) process.exit(0);
  }
}

for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => {});
process.on("message", (request: RecordRequest) => void run(request));
process.on("disconnect", () => {
  disconnected = true;
  if (inFlight === 0) process.exit(0);
});
