// npm run sync-routes -- --stack <name> [--watch] [--debounce 2s]
//
// For CI, after it creates or deletes a dev/PR namespace: discover the
// routed namespaces and Services and update only the routes resources,
// printing the routes added and removed. --watch keeps running and syncs
// on every change (after a short quiet period); SIGTERM stops it cleanly.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { explainFailure, openStack, report, routesInState, shiftsMoving, stackConfigOf, syncRoutes, watchAndSync } from "../route-sync/sync.js";

const USAGE = "usage: npm run sync-routes -- --stack <name> [--watch] [--debounce <ms|s>] [--project-dir <dir>]";

function millis(text: string): number {
  const m = /^(\d+)(ms|s)?$/.exec(text);
  if (!m) throw new Error(`--debounce ${text}: give milliseconds or seconds, such as 500ms or 2s`);
  return Number(m[1]) * (m[2] === "s" ? 1000 : 1);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { stack: { type: "string" }, watch: { type: "boolean" }, debounce: { type: "string", default: "2s" }, "project-dir": { type: "string" }, help: { type: "boolean" } },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (!values.stack) {
    console.error(`--stack is required\n${USAGE}`);
    return 2;
  }
  const projectDir = resolve(values["project-dir"] ?? resolve(__dirname, ".."));
  const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
  const stack = await openStack(values.stack, projectDir);
  if (!values.watch) {
    try {
      for (const line of report(await syncRoutes(stack))) console.log(line);
      return 0;
    } catch (e) {
      console.error(`sync-routes: stack ${values.stack}: failed; the xDS ConfigMaps keep their content:\n${explainFailure(e)}`);
      return 1;
    }
  }
  const config = await stackConfigOf(stack);
  // While a traffic shift moves, weights change with time alone: re-sync every 30 s.
  let moving = shiftsMoving((await routesInState(stack)).routes, new Date());
  const watcher = watchAndSync(stack, config, {
    debounceMs: millis(values.debounce!),
    resyncMs: 30_000,
    needsTimer: () => moving,
    onSync: () => {
      void routesInState(stack).then((s) => (moving = shiftsMoving(s.routes, new Date())));
    },
    log,
  });
  log(`watching namespaces labelled ${config.devNamespaces.selector} and their routed Services (stack ${values.stack}); SIGTERM stops`);
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

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`sync-routes: ${(e as Error).message}`);
    process.exit(1);
  },
);
