// dist/sync-routes --stack <name> [--watch] [--debounce 100ms] [--lock-wait 15m] [--record-niceness 10]
// (compiled by `npm run build`; from source: npm run sync-routes -- ...)
//
// For CI, after it creates or deletes a dev/PR namespace: discover the
// routed namespaces and Services, write the gateways' ConfigMaps that change
// (live within a second), then record that in the stack's state with a
// targeted update of the routes resources, printing the routes added and
// removed. With nothing to change it starts no engine run. While another
// update holds the stack (a production `pulumi up`, another CI job), the
// record step waits for the lock. --watch keeps running and follows every
// change; SIGTERM stops it cleanly. The record's engine run gets the CPU after
// everything else (nice 10 by default): the routes are already live.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { durationFlag, exitWith, logLine, parseFlags, UsageError } from "../route-sync/cli-flags.js";
import { MAX_NICENESS, parseNiceness } from "../route-sync/niced-cli.js";

const USAGE =
  "usage: dist/sync-routes --stack <name> [--watch] [--debounce <ms|s>] [--lock-wait <s|m>] [--record-niceness <0-19>] [--project-dir <dir>]";

/** --record-niceness: a whole number from 0 to 19, or an error naming the flag, the value and what is allowed. */
function nicenessFlag(text: string): number {
  const n = parseNiceness(text);
  if (n === undefined)
    throw new UsageError(
      `--record-niceness ${JSON.stringify(text)}: must be a whole number from 0 (the record's engine run as sync-routes itself) to ${MAX_NICENESS} (the lowest CPU priority)`,
    );
  return n;
}

async function main(): Promise<number> {
  const { values } = parseFlags(() =>
    parseArgs({
      options: {
        stack: { type: "string" },
        watch: { type: "boolean" },
        debounce: { type: "string", default: "100ms" },
        "lock-wait": { type: "string", default: "15m" },
        "record-niceness": { type: "string", default: "10" },
        "project-dir": { type: "string" },
        help: { type: "boolean" },
      },
    }),
  );
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (!values.stack) throw new UsageError("--stack is required");
  const debounceMs = durationFlag("debounce", values.debounce!, ["ms", "s"], "500ms or 2s");
  const lock = { maxWaitMs: durationFlag("lock-wait", values["lock-wait"]!, ["s", "m"], "90s or 15m") };
  const recordNiceness = nicenessFlag(values["record-niceness"]!);
  const projectDir = resolve(values["project-dir"] ?? resolve(__dirname, ".."));
  const log = logLine;
  // Loaded once the flags are good: a bad flag or --help answers without loading the Kubernetes client.
  const { ProjectStack, routesInState, stackConfigOf, engineErrorLines } = await import("../route-sync/stack.js");
  const stack = new ProjectStack(values.stack, projectDir, recordNiceness);
  if (!values.watch) {
    const { ControllerWritesError, report, syncRoutes } = await import("../route-sync/sync.js");
    try {
      for (const line of report(await syncRoutes(stack, { log, lock }))) console.log(line);
      return 0;
    } catch (e) {
      if (e instanceof ControllerWritesError) throw e;
      console.error(
        `sync-routes: stack ${values.stack}: failed; the xDS ConfigMaps keep their content:\n${engineErrorLines(e)}`,
      );
      return 1;
    }
  }
  const [sync, state] = await Promise.all([stackConfigOf(stack), routesInState(stack)]);
  if (state.length === 0)
    throw new Error(`stack ${values.stack} has no routes resources yet: run a full \`pulumi up\` first`);
  const { refuseWhileControllerWrites } = await import("../route-sync/sync.js");
  refuseWhileControllerWrites(values.stack, sync, state);
  const { watchRoutes } = await import("../route-sync/watch.js");
  // While a traffic shift moves, weights change with time alone: re-render every 10 s.
  const watcher = watchRoutes(stack, { sync, state }, { debounceMs, resyncMs: 10_000, lock, log });
  log(
    `watching namespaces labelled ${sync.config.devNamespaces.selector} and their routed Services (stack ${values.stack}); SIGTERM stops`,
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping after any sync in progress`);
    watcher.stop();
  };
  // `on`, not `once`: the Automation API's process helper (execa, through
  // signal-exit) re-raises a signal when no other listener is left, which
  // would kill this process before the sync in flight finishes.
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  await watcher.done;
  log("stopped");
  return 0;
}

main().then((code) => process.exit(code), exitWith("sync-routes", USAGE));
