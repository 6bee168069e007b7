// sync-routes --watch: one warm process that follows the routed namespaces
// and their Services (client-node informers, whose caches answer discovery
// without a request) and keeps the routes in step:
//  - live: the debounce time after the first change not yet written (later
//    changes join it) it renders what the routes resources would be given
//    and writes each ConfigMap whose files change (sync.ts, step 1), in
//    parallel, within about a second;
//  - record: an engine run records the latest write in state (sync.ts, step
//    2: the program runs inline, given what was discovered and written), one
//    at a time; changes that arrive while it runs, or while it waits for the
//    stack lock, are written live and coalesced into the next record;
//  - status: the route status of what the latest live step saw (annotations
//    and Events, thousands of requests the first time at thousands of
//    Services), written beside the next live steps, never holding them up.
// Each of the three runs one step at a time through its own serial runner
// (serial-runner.ts), which coalesces requests and retries a failed step with
// backoff; while a traffic shift moves, a timer re-renders so the weights
// follow. stop() starts nothing more: the steps in progress finish, and a
// write left unrecorded is said.
import { isDeepStrictEqual } from "node:util";
import { loadKubeConfig } from "../kube/client.js";
import { watchRoutedObjects, type RoutedObjectsWatch } from "../kube/watch.js";
import { InputError, formatProblem } from "../routing/config/errors.js";
import { routedDevNamespaces } from "../routing/capacity.js";
import { ROUTED_SERVICE_SELECTOR } from "../routing/discovery.js";
import { ROUTE_STATUS_ANNOTATION } from "../routing/labels.js";
import { withLatestStatus } from "../routing/route-status.js";
import type { SyncRecord } from "../program/main.js";
import { engineErrorLines, stackConfigOf, type ProjectStack, type RoutesResourceState } from "./stack.js";
import {
  plan,
  record,
  recorded,
  routeChanges,
  shiftsMoving,
  statusLines,
  syncedRoutes,
  syncRecord,
  writeLive,
  writeStatus,
  type SyncConfig,
  type PlannedResource,
  type SyncedRoutes,
  type SyncOptions,
} from "./sync.js";
import type { LockWait } from "./lock.js";
import { serialRunner } from "./serial-runner.js";
import { RoutesInputError, type WriteFence } from "../routes-provider/core.js";
import type { StatusWritten } from "../kube/route-status.js";
import type { RoutesView } from "../routing/routes-view.js";
import type { Discovered } from "../routing/discovery.js";
import type { GatewayName } from "../routing/config/schema.js";
import { configMapBytes, CONFIGMAP_LIMIT_BYTES } from "../routing/render.js";

export interface WatchOptions {
  /** How long after a change the write starts; changes meanwhile join it. */
  debounceMs: number;
  /** Re-render this often while a traffic shift moves its weights. */
  resyncMs?: number;
  /** Retry a failed step after this long, doubling up to `maxMs` (default 2 s to 5 minutes). */
  retry?: { firstMs: number; maxMs: number };
  lock?: Omit<LockWait, "log">;
  log: (line: string) => void;
  /** Called after each live write and each record (for tests, benchmarks and the route controller's metrics). */
  onEvent?: (event: WatchEvent) => void;
  /**
   * Guards every ConfigMap write (the route controller's leadership: its
   * epoch, whether it still holds the Lease, the config it renders from).
   */
  fence?: () => WriteFence;
}

/** What a step routed: dev/PR namespaces routed and left out, and each gateway's ConfigMap fill (0 to 1). */
export interface RoutedFigures {
  routed: number;
  leftOut: number;
  fill: Partial<Record<GatewayName, number>>;
}

/** What a step did: a live write (how long after the change was seen, what it routed), one with nothing to write, a record, or a failure. */
export type WatchEvent =
  | ({ kind: "live"; seconds: number } & RoutedFigures)
  | ({ kind: "in-step" } & RoutedFigures)
  | { kind: "recorded"; seconds: number }
  | { kind: "failed"; step: "live" | "record" | "status" };

export interface Watcher {
  /** Resolves when the watcher has stopped (after stop(), once a step in flight has finished). */
  done: Promise<void>;
  stop(): void;
  /** True once its informers have read both lists (their caches hold what exists). */
  synced(): boolean;
  /** When its live step last started and finished (a step running for minutes is stuck). */
  lastStep(): { startedMs?: number; finishedMs?: number };
}

/**
 * What a step routed: the dev/PR namespaces routed, those labelled but left
 * out (refused, or past capacity: a problem about the Namespace), and how full
 * each gateway's ConfigMap is (of the bytes Kubernetes allows).
 */
export function routedFigures(found: Discovered, planned: readonly PlannedResource[]): RoutedFigures {
  return {
    routed: Object.keys(found.devNamespaces).length,
    leftOut: found.problems.filter((p) => p.objects?.some((o) => o.kind === "Namespace")).length,
    fill: Object.fromEntries(
      planned.map((p) => [p.facts.gateway, configMapBytes(p.rendered.files.xds) / CONFIGMAP_LIMIT_BYTES]),
    ),
  };
}

/**
 * Starts watching; `sync` and `state` are the stack config and routes
 * resources as they are now. `recordIn`: the stack whose state records each
 * write (an engine run), or undefined where the ConfigMaps are the record (the
 * route controller in the cluster, route-sync/controller.ts: `state` then holds
 * the routes resources' wiring only, and the first step writes whatever its
 * ConfigMap does not hold).
 */
export function watchRoutes(
  recordIn: ProjectStack | undefined,
  start: { sync: SyncConfig; state: RoutesResourceState[] },
  options: WatchOptions,
): Watcher {
  let sync = start.sync;
  let state = start.state;
  const syncOptions: SyncOptions = { log: options.log, ...(options.lock ? { lock: options.lock } : {}) };
  // What each routes resource's ConfigMap holds (as far as this process knows), and the routes that gives.
  const written: Record<string, string> = recordIn
    ? Object.fromEntries(state.map((r) => [r.name, r.outputs.dataDigest]))
    : {};
  /** The routes live before the first write (unknown to a route controller that just took the Lease). */
  let live: SyncedRoutes | undefined = recordIn ? syncedRoutes(state) : undefined;
  let stepStartedMs: number | undefined;
  let stepFinishedMs: number | undefined;
  /** The routes the latest step planned (their traffic shifts decide whether the ticker re-renders). */
  let views: RoutesView[] = [];
  /** Whether a step has run on everything the watch read when it started. */
  let caughtUp = false;
  let stopping = false;
  let debounce: NodeJS.Timeout | undefined;
  /** Why the next live step runs, and since when a change waits for it. */
  let reasons: string[] = [];
  let firstSeen: number | undefined;
  /** The latest write not yet recorded (or being recorded). */
  let pending: SyncRecord | undefined;
  /** The problems and status failures the last step said: said again only once they were gone. */
  let said = new Set<string>();
  let statusSaid = new Set<string>();
  /** The route status write the latest live step asked for, not started yet. */
  let pendingStatus: (() => Promise<StatusWritten>) | undefined;
  /** Events already created (or found there): not asked for again while this watcher runs. */
  const reported = new Set<string>();
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));

  const noteChange = (why: string) => {
    firstSeen ??= Date.now();
    if (!reasons.includes(why)) reasons.push(why);
  };
  /** When the pending timer fires. */
  let debounceDue = 0;
  // The quiet time counts from the first change not written yet: later
  // changes join that write instead of putting it off, so a steady stream of
  // changes (a script creating hundreds of namespaces) is written as it goes.
  const schedule = (why: string, delayMs = options.debounceMs) => {
    if (stopping) return;
    noteChange(why);
    const due = Date.now() + delayMs;
    if (debounce !== undefined && debounceDue <= due) return;
    clearTimeout(debounce);
    debounceDue = due;
    debounce = setTimeout(() => {
      debounce = undefined;
      liveRunner.request();
    }, delayMs);
  };

  /** Step 1: render from the informers' caches, write what changed. */
  const liveRunner = serialRunner(
    async () => {
      const seen = firstSeen ?? Date.now();
      const why =
        reasons.length > 5 ? `${reasons.slice(0, 5).join(", ")} and ${reasons.length - 5} more` : reasons.join(", ");
      firstSeen = undefined;
      reasons = [];
      stepStartedMs = Date.now();
      try {
        await liveStep(objects, seen, why);
      } catch (e) {
        // Routes the config or the validator refuses: said, not retried (the next change may mend them).
        if (!(e instanceof RoutesInputError || e instanceof InputError)) throw e;
        const problems = e instanceof RoutesInputError ? e.problems.map((p) => p.problem) : e.problems;
        options.log(
          `not written, the ConfigMaps keep their content: the routes would be refused:\n${problems.map((p) => `  - ${formatProblem(p)}`).join("\n")}`,
        );
      } finally {
        stepFinishedMs = Date.now();
      }
    },
    {
      ...(options.retry ? { retry: options.retry } : {}),
      onError: (e, retryMs) => {
        options.onEvent?.({ kind: "failed", step: "live" });
        if (retryMs === undefined) return options.log(`${(e as Error).message}; stopping, not trying again`);
        noteChange("retrying the failed write");
        options.log(`${(e as Error).message}; trying again in ${Math.round(retryMs / 1000)}s`);
      },
    },
  );

  const liveStep = async (objects: RoutedObjectsWatch, seen: number, why: string) => {
    // Until both lists are read, the caches say nothing (not "no dev/PR namespace"): wait for them.
    if (!objects.ready()) {
      reasons.push(why);
      await objects.synced;
    }
    const now = new Date();
    const listed = { namespaces: objects.namespaces(), services: objects.services() };
    const found = routedDevNamespaces(sync.config, listed.namespaces, listed.services, now);
    // Each problem said once while it lasts, not again at every change (hundreds of namespaces past capacity).
    said = sayOnce(
      [...found.problems, ...found.warnings].map((p) => `${p.key} ${p.message}`),
      said,
    );
    const renderStart = Date.now();
    const planned = plan(state, sync, found.devNamespaces, now);
    views = planned.map((p) => p.routes);
    const renderMs = Date.now() - renderStart;
    const changed = planned.filter((p) => written[p.state.name] !== p.digest);
    // After any write: the routes are live when the Services say so.
    const status = () => {
      // Compared with the Services' annotations as the cache holds them when it runs, not as listed:
      // a long status write still going (5,000 Services the first time) is then not done twice.
      pendingStatus = () =>
        writeStatus(
          sync,
          { ...listed, services: withLatestStatus(listed.services, objects.services()), found },
          planned,
          now,
          reported,
        );
      statusRunner.request();
    };
    if (changed.length === 0) {
      // Said once, after the first step on everything the watch read: from here on it only acts on changes.
      if (!caughtUp)
        options.log(
          `routes in step: nothing to write (${Object.keys(found.devNamespaces).length} dev/PR namespaces routed)`,
        );
      caughtUp = true;
      if (recordIn && !planned.every(recorded)) queueRecord(syncRecord(planned, found.devNamespaces, now));
      // Measured only for a listener: the bytes of every gateway's files.
      if (options.onEvent) options.onEvent({ kind: "in-step", ...routedFigures(found, planned) });
      status();
      return;
    }
    caughtUp = true;
    const writeStart = Date.now();
    const wrote = await writeLive(planned, found.devNamespaces, now, written, options.fence?.());
    const writeMs = Date.now() - writeStart;
    const next: SyncedRoutes = Object.fromEntries(planned.map((p) => [p.state.name, p.lines]));
    for (const p of planned) written[p.state.name] = p.digest;
    const seconds = (Date.now() - seen) / 1000;
    const timing = `${seconds.toFixed(1)}s after the change was seen (${why}; render ${renderMs} ms, write ${writeMs} ms)`;
    if (live === undefined) {
      // What was live before is unknown here: the routes as a count, not thousands of "added" lines.
      const counts = planned.map((p) => `${Object.keys(p.lines).length} on ${p.facts.gateway}`).join(", ");
      options.log(`routes live ${timing}: ${counts}`);
    } else {
      const changes = routeChanges(live, next);
      for (const line of [
        ...changes.added.map((l) => `+ ${l}`),
        ...changes.removed.map((l) => `- ${l}`),
        ...changes.changed.map((l) => `~ ${l}`),
      ])
        options.log(line);
      options.log(
        `routes live ${timing}: ${changes.added.length} added, ${changes.removed.length} removed, ${changes.changed.length} changed`,
      );
    }
    live = next;
    if (options.onEvent) options.onEvent({ kind: "live", seconds, ...routedFigures(found, planned) });
    if (recordIn) queueRecord(wrote);
    status();
  };

  /** Logs the lines not in `before`; returns them all, what is said now. */
  const sayOnce = (lines: string[], before: ReadonlySet<string>): Set<string> => {
    for (const line of lines) if (!before.has(line)) options.log(line);
    return new Set(lines);
  };

  /** Step 3: the route status of the latest live step (a newer one replaces one not started yet). */
  const statusRunner = serialRunner(
    async () => {
      const write = pendingStatus;
      if (!write) return;
      const wrote = await write();
      // Kept until written (a step that throws is retried); a newer one asked for meanwhile stays.
      if (pendingStatus === write) pendingStatus = undefined;
      // What was written is said each time; a failure (no access, say) once while it lasts.
      const lines = statusLines(wrote);
      statusSaid = sayOnce(lines.slice(0, wrote.failures.length), statusSaid);
      for (const line of lines.slice(wrote.failures.length)) options.log(line);
    },
    {
      ...(options.retry ? { retry: options.retry } : {}),
      // writeStatus reports failures as lines; what it throws is said, and the write retried (or a newer one written).
      onError: (e, retryMs) => {
        options.onEvent?.({ kind: "failed", step: "status" });
        options.log(
          `route status not written: ${e instanceof Error ? e.message : String(e)}${retryMs === undefined ? "" : `; trying again in ${Math.round(retryMs / 1000)}s`}`,
        );
      },
    },
  );

  const queueRecord = (wrote: SyncRecord) => {
    pending = wrote;
    recordRunner.request();
  };

  /** Step 2: an engine run records the latest write in state. */
  const recordRunner = serialRunner(
    async () => {
      const wrote = pending;
      if (!wrote || !recordIn) return;
      const stack = recordIn;
      pending = undefined;
      const started = Date.now();
      try {
        state = await record(stack, state, wrote, syncOptions);
        const seconds = (Date.now() - started) / 1000;
        // Say whether this record is the last word, so a reader (or a test) knows when the state has caught up.
        options.log(
          `recorded in the stack's state (${seconds.toFixed(1)}s): ${pending ? "routes written meanwhile go in the next record" : "every route written so far"}`,
        );
        options.onEvent?.({ kind: "recorded", seconds });
        // The stack config may have changed meanwhile (someone's `pulumi config set`): write with the new one.
        const latest = await stackConfigOf(stack);
        if (!isDeepStrictEqual(latest, sync)) {
          sync = latest;
          schedule("the stack config changed");
        }
      } catch (e) {
        pending ??= wrote;
        throw e;
      }
    },
    {
      ...(options.retry ? { retry: options.retry } : {}),
      onError: (e, retryMs) => {
        options.onEvent?.({ kind: "failed", step: "record" });
        options.log(
          `${engineErrorLines(e)}\n${retryMs === undefined ? "stopping, not trying again" : `trying again in ${Math.round(retryMs / 1000)}s`}`,
        );
      },
    },
  );

  const objects = watchRoutedObjects(
    loadKubeConfig(sync.kubeconfig),
    sync.config.devNamespaces.selector,
    ROUTED_SERVICE_SELECTOR,
    {
      onChange: (what) => schedule(what),
      onError: (message, retryMs) => options.log(`${message}; watching again in ${Math.round(retryMs / 1000)}s`),
    },
    // The route status this watcher writes on the Services is not a change to their routes.
    [ROUTE_STATUS_ANNOTATION],
  );
  // Once both lists are read: what changed while nothing watched.
  void objects.synced.then(() => schedule("watch started", 0));
  const ticker = options.resyncMs
    ? setInterval(() => {
        if (shiftsMoving(views, new Date())) schedule("traffic shift in progress", 0);
      }, options.resyncMs)
    : undefined;
  return {
    done,
    synced: () => objects.ready(),
    lastStep: () => ({ startedMs: stepStartedMs, finishedMs: stepFinishedMs }),
    stop() {
      if (stopping) return;
      stopping = true;
      clearTimeout(debounce);
      if (ticker) clearInterval(ticker);
      void objects.stop();
      // Nothing new starts (a record the live step in progress queues included); the steps in progress finish.
      void Promise.all([liveRunner.stop(), recordRunner.stop(), statusRunner.stop()]).then(() => {
        if (pending)
          options.log(
            "stopped before recording the routes written since the last record: the ConfigMaps hold them; the next sync-routes or `pulumi up` records them",
          );
        // Asked for by a step that finished while stopping, or waiting to be retried: not started on the way out.
        if (pendingStatus)
          options.log(
            "stopped before writing the route status of the last routes written: the next sync-routes writes it",
          );
        finish();
      });
    },
  };
}
