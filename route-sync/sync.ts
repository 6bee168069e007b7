// sync-routes: the routes resources in step with the cluster's dev/PR
// namespaces, in two steps.
//
//  1. Live: discover the namespaces (two list requests, or the watcher's
//     informer caches), and compare what the routes resources would be given
//     with what the stack's state holds. Nothing to change: done, no engine
//     run, no lock, no history entry. Otherwise write each changed gateway's
//     ConfigMap right away through the routes provider's own writeRoutes (the
//     same validated render, the same field manager; the gateway pods are
//     told, so their kubelets project it at once).
//  2. Record: a targeted update of the routes resources through the Pulumi
//     Automation API (the same engine, program and state as `pulumi up`),
//     once the stack is not locked by another update. The program runs inline,
//     in this process, given what step 1 discovered and wrote as its argument
//     (program/main.ts): the namespaces, and for each routes resource its
//     `syncWrite` input (the instant rendered at, the digest written). The
//     state then matches the ConfigMaps.
//
// A failure leaves the ConfigMaps as they were (step 1 renders and validates
// everything before it writes) or says that only the record step failed.
import { isDeepStrictEqual } from "node:util";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { listRoutedObjects, loadKubeConfig } from "../kube/client.js";
import type { SyncRecord } from "../program/main.js";
import {
  factsOf,
  renderRoutes,
  routesInputs,
  validated,
  writeRoutes,
  type RenderedRoutes,
  type RoutesFacts,
  type WriteFence,
} from "../routes-provider/core.js";
import type { StackConfig } from "../routing/config/schema.js";
import { routedDevNamespaces } from "../routing/capacity.js";
import {
  ROUTED_SERVICE_SELECTOR,
  type Discovered,
  type NamespaceObject,
  type ServiceObject,
} from "../routing/discovery.js";
import { routeStatusChanges } from "../routing/route-status.js";
import { writeRouteStatus, type StatusWritten } from "../kube/route-status.js";
import { routeLine, routeLines, type RouteEntry, type RouteLines, type RoutesView } from "../routing/routes-view.js";
import { isMoving, shiftFromSpec } from "../routing/shifts.js";
import type { DevNamespaces } from "../routing/table.js";
import { dataDigest } from "../routing/units.js";
import { PROJECT } from "../routing/config/load.js";
import { whenUnlocked, type LockWait } from "./lock.js";
import { routesInState, stackConfigOf, type ProjectStack, type RoutesResourceState } from "./stack.js";

/** Routes per routes resource (<gateway>-routes), a line each. */
export type SyncedRoutes = Record<string, RouteLines>;

export interface RouteChanges {
  added: string[];
  removed: string[];
  changed: string[];
}

export interface SyncResult extends RouteChanges {
  /** Nothing to change: no ConfigMap written, no engine run. */
  unchanged: boolean;
  /** Milliseconds each step took: reading the stack (config and state, in parallel), discovery, rendering, writing, the route status, recording. */
  steps: Partial<Record<"stack" | "discovery" | "render" | "write" | "status" | "record", number>>;
  /** Seconds until the ConfigMaps held the routes (the whole sync when unchanged). */
  liveSeconds: number;
  /** Seconds until the state recorded them (undefined: no engine run). */
  recordedSeconds?: number;
  /** What the route status step wrote on the Services and namespaces. */
  status: StatusWritten;
}

/** The stack config sync-routes works with: the routing config and the kubeconfig to write with. */
export interface SyncConfig {
  config: StackConfig;
  kubeconfig?: string;
}

/**
 * The routes the state records, a line each. State written before routes
 * were lines holds an object per route: it is read as the line it would be,
 * so the first sync after an upgrade reports only real changes.
 */
export function syncedRoutes(state: readonly RoutesResourceState[]): SyncedRoutes {
  const lines = (recorded: Record<string, string | RouteEntry>): RouteLines =>
    Object.fromEntries(Object.entries(recorded).map(([id, r]) => [id, typeof r === "string" ? r : routeLine(r)]));
  return Object.fromEntries(state.map((r) => [r.name, lines(r.outputs.routes ?? {})]));
}

/** True while any route's traffic shift is still moving its weights (the watcher then re-renders on a timer). */
export function shiftsMoving(views: readonly RoutesView[], now: Date): boolean {
  return views.some((view) =>
    Object.values(view).some((r) => r.shift !== undefined && isMoving(shiftFromSpec(r.service, r.shift), now)),
  );
}

/** Lines describing what changed between two states of the routes resources. */
export function routeChanges(before: SyncedRoutes, after: SyncedRoutes): RouteChanges {
  const describe = (resource: string, id: string, lines: RouteLines) =>
    `${id} on ${resource.replace(/-routes$/, "")}: ${lines[id]}`;
  const added: string[] = [];
  const removed: string[] = [];
  const changed: string[] = [];
  for (const resource of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const b = before[resource] ?? {};
    const a = after[resource] ?? {};
    for (const id of Object.keys(a).sort()) {
      if (!(id in b)) added.push(describe(resource, id, a));
      else if (a[id] !== b[id]) changed.push(describe(resource, id, a));
    }
    for (const id of Object.keys(b).sort()) if (!(id in a)) removed.push(describe(resource, id, b));
  }
  return { added, removed, changed };
}

/** What one routes resource would be given now, and what that renders. */
export interface PlannedResource {
  /** The resource as the state holds it. */
  state: RoutesResourceState;
  facts: RoutesFacts;
  rendered: RenderedRoutes;
  routes: RoutesView;
  /** The routes as the state records them. */
  lines: RouteLines;
  digest: string;
}

/**
 * What each routes resource would be given by the program now: its wiring
 * (gateway, ConfigMap) from the state, the routing part of the current stack
 * config, and the discovered dev/PR namespaces, rendered at `now`.
 */
export function plan(
  state: readonly RoutesResourceState[],
  sync: SyncConfig,
  devNamespaces: DevNamespaces,
  now: Date,
): PlannedResource[] {
  return state.map((r) => {
    const facts: RoutesFacts = routesInputs(r.outputs, sync.config, devNamespaces, { kubeconfig: sync.kubeconfig });
    // Not validated: only what is written is (writeRoutes), and what matches the state was validated when it was written.
    const rendered = renderRoutes(facts, now, { validate: false });
    return {
      state: r,
      facts,
      rendered,
      routes: rendered.routes,
      lines: routeLines(rendered.routes),
      digest: dataDigest(rendered.files.xds),
    };
  });
}

/** True when the resource's state already holds these facts, routes and files. */
export function recorded(p: PlannedResource): boolean {
  return notRecorded(p) === undefined;
}

/**
 * Why the resource's state does not hold these facts, routes and files
 * (undefined when it does), in a few words. The kubeconfig is not compared:
 * it is a secret the state is read without (stack.ts), and a changed one is
 * recorded by the next sync that writes, or by `pulumi up` with the
 * Kubernetes provider's.
 */
export function notRecorded(p: PlannedResource): string | undefined {
  const o = p.state.outputs;
  if (o.devNamespaces === undefined) return "its state predates the routes resource's facts";
  const { kubeconfig: _, ...wanted } = p.facts;
  const facts = firstDifference(factsOf(o), wanted);
  if (facts !== undefined) return `its state's ${facts} differs`;
  if (!isDeepStrictEqual(o.routes, p.lines)) return "its state's routes differ";
  if (o.dataDigest !== p.digest) return "its state's files differ";
  if (o.drift !== undefined) return "its ConfigMap was edited out of band";
  return undefined;
}

/** The path of the first place where two JSON-like values differ (undefined when they are equal). */
function firstDifference(a: unknown, b: unknown, path = ""): string | undefined {
  if (isDeepStrictEqual(a, b)) return undefined;
  if (a && b && typeof a === "object" && typeof b === "object" && Array.isArray(a) === Array.isArray(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    for (const k of keys) {
      const d = firstDifference(
        (a as Record<string, unknown>)[k],
        (b as Record<string, unknown>)[k],
        path ? `${path}.${k}` : k,
      );
      if (d !== undefined) return d;
    }
  }
  return path || "value";
}

/** What discovery listed, and what it found in it. */
export interface Discovery {
  namespaces: NamespaceObject[];
  services: ServiceObject[];
  found: Discovered;
}

/** Discovery as the program does it: the routed namespaces and Services (two list requests), cut to what fits at `now`. */
export async function discover(sync: SyncConfig, now: Date): Promise<Discovery> {
  const listed = await listRoutedObjects(
    loadKubeConfig(sync.kubeconfig),
    sync.config.devNamespaces.selector,
    ROUTED_SERVICE_SELECTOR,
  );
  return { ...listed, found: routedDevNamespaces(sync.config, listed.namespaces, listed.services, now) };
}

/**
 * Writes the route status of what `listed` holds (routing/route-status.ts):
 * each dev/PR Service's annotation and Events, the Events of namespaces left
 * out. `reported`: Events already created (kept by a watcher across syncs).
 */
export async function writeStatus(
  sync: SyncConfig,
  listed: Discovery,
  planned: readonly PlannedResource[],
  now: Date,
  reported?: Set<string>,
): Promise<StatusWritten> {
  const changes = routeStatusChanges({
    productionNamespace: sync.config.namespace,
    protectedNamespaces: sync.config.devNamespaces.protected,
    namespaces: listed.namespaces,
    services: listed.services,
    found: listed.found,
    routes: Object.fromEntries(planned.map((p) => [p.facts.gateway, p.routes])),
  });
  if (changes.length === 0) return { annotated: 0, events: 0, failures: [] };
  return writeRouteStatus(loadKubeConfig(sync.kubeconfig), changes, now, reported);
}

/** Lines saying what a status write did, when it did anything: one per failure first, then what was written. */
export function statusLines(s: StatusWritten): string[] {
  const lines = s.failures.map((f) => `route status not written: ${f}`);
  if (s.annotated + s.events > 0)
    lines.push(`route status: ${s.annotated} Service annotations written, ${s.events} Events created`);
  return lines;
}

/**
 * Step 1's write: each planned resource whose ConfigMap does not hold its
 * files yet (by `written`: digests known to be in place) gets them, guarded by
 * `fence` when the route controller writes. Returns what the record step gives
 * the program.
 */
export async function writeLive(
  planned: readonly PlannedResource[],
  devNamespaces: DevNamespaces,
  now: Date,
  written: Readonly<Record<string, string>> = {},
  fence?: WriteFence,
): Promise<SyncRecord> {
  // Every gateway's files are validated before any is written: never one gateway with the new routes and one refused.
  const changed = planned
    .filter((p) => written[p.state.name] !== p.digest)
    .map((p) => ({ ...p, rendered: validated(p.rendered) }));
  // The gateways' ConfigMaps are written at once, side by side: one does not wait for the other's request.
  const writes = await Promise.allSettled(
    changed.map((p) => writeRoutes(p.facts, now, { rendered: p.rendered, ...(fence ? { fence } : {}) })),
  );
  const failed = changed.flatMap((p, i) => {
    const w = writes[i]!;
    return w.status === "rejected" ? [{ gateway: p.facts.gateway, error: w.reason as Error }] : [];
  });
  if (failed.length > 0)
    throw new Error(
      failed
        .map((f) => `writing the routes of ${f.gateway} failed; its ConfigMap keeps its content: ${f.error.message}`)
        .join("\n"),
      { cause: failed[0]!.error },
    );
  return syncRecord(planned, devNamespaces, now);
}

/** What a sync rendered at `now` leaves in place, for the record step: every planned gateway's digest. */
export function syncRecord(planned: readonly PlannedResource[], devNamespaces: DevNamespaces, now: Date): SyncRecord {
  return {
    devNamespaces,
    renderedAt: now.toISOString(),
    written: Object.fromEntries(planned.map((p) => [p.facts.gateway, p.digest])),
  };
}

export interface SyncOptions {
  /** Progress lines (who holds the stack lock while waiting for it). */
  log: (line: string) => void;
  /** How long to wait for a stack lock held by another update (see lock.ts). */
  lock?: Omit<LockWait, "log">;
  /** Each event of the record's engine run, as the engine sends it (bench/record.ts times its steps). */
  onEvent?: (event: EngineEvent) => void;
}

/**
 * Step 2: the engine records `sync` in the routes resources' state (a
 * targeted update, once the stack is not locked) by running the program
 * inline, given `sync`, and returns the state after it.
 */
export async function record(
  stack: ProjectStack,
  state: readonly RoutesResourceState[],
  sync: SyncRecord,
  options: SyncOptions,
): Promise<RoutesResourceState[]> {
  // Loaded only for a record: a sync with nothing to change never loads the program's components.
  const program = async () => (await import("../program/main.js")).runProgram(sync);
  try {
    const engine = await stack.automation();
    // showSecrets false: after the run the Automation API reads the last update's summary, which a
    // record does not use; without its secrets the CLI does not derive the stack's key for it (0.14 s).
    const run = {
      target: state.map((r) => r.urn),
      color: "never" as const,
      program,
      onEvent: options.onEvent,
      showSecrets: false,
    };
    await whenUnlocked(() => engine.up(run), {
      ...options.lock,
      log: options.log,
    });
  } catch (e) {
    throw Object.assign(
      new Error(
        `the ConfigMaps hold the new routes, but recording them in the stack's state failed (the next sync or \`pulumi up\` records them): ${(e as Error).message}`,
      ),
      { stderr: (e as { stderr?: string }).stderr },
    );
  }
  return routesInState(stack);
}

/** sync-routes refused: the route controller in the cluster writes the dev/PR routes of this stack. */
export class ControllerWritesError extends Error {
  override name = "ControllerWritesError";
}

/**
 * Throws ControllerWritesError while the route controller writes the stack's
 * dev/PR routes: its config sets routeSync.inCluster (the next `pulumi up`
 * starts it), or its routes resources wait for the controller (the last
 * `pulumi up` started it, and none since has removed it). Two writers would
 * race; the controller's writes are fenced, a sync's are not.
 */
export function refuseWhileControllerWrites(
  stackName: string,
  sync: SyncConfig,
  state: readonly RoutesResourceState[],
): void {
  const configured = sync.config.routeSync.inCluster !== undefined;
  const running = state.find((r) => r.outputs.controller !== undefined);
  if (!configured && !running) return;
  const why = configured
    ? `its config sets ${PROJECT}:routeSync.inCluster`
    : `its last \`pulumi up\` declared the route controller (${running!.outputs.controller!.deployment}), and its config no longer sets ${PROJECT}:routeSync.inCluster: run \`pulumi up\` to remove it first`;
  throw new ControllerWritesError(
    `stack ${stackName}: not syncing, the route controller in the cluster writes the dev/PR routes (${why}). ` +
      `Two writers would race: to sync from here again, unset it (pulumi config rm --path ${PROJECT}:routeSync.inCluster) and run \`pulumi up\``,
  );
}

/** One sync, as CI runs it after it creates or deletes a dev/PR namespace. */
export async function syncRoutes(stack: ProjectStack, options: SyncOptions): Promise<SyncResult> {
  const start = Date.now();
  const seconds = () => (Date.now() - start) / 1000;
  const steps: SyncResult["steps"] = {};
  const timed = async <T>(step: keyof SyncResult["steps"], run: () => T | Promise<T>): Promise<T> => {
    const t = Date.now();
    try {
      return await run();
    } finally {
      steps[step] = Date.now() - t;
    }
  };
  const [sync, state] = await timed("stack", () => Promise.all([stackConfigOf(stack), routesInState(stack)]));
  if (state.length === 0)
    throw new Error(`stack ${stack.name} has no routes resources yet: run a full \`pulumi up\` first`);
  refuseWhileControllerWrites(stack.name, sync, state);
  const now = new Date();
  const listed = await timed("discovery", () => discover(sync, now));
  const found = listed.found;
  for (const p of [...found.problems, ...found.warnings]) options.log(`${p.key} ${p.message}`);
  const planned = await timed("render", () => plan(state, sync, found.devNamespaces, now));
  const changes = routeChanges(syncedRoutes(state), Object.fromEntries(planned.map((p) => [p.state.name, p.lines])));
  const reasons = planned.flatMap((p) => {
    const why = notRecorded(p);
    return why ? [`${p.state.name}: ${why}`] : [];
  });
  if (reasons.length === 0) {
    const status = await timed("status", () => writeStatus(sync, listed, planned, now));
    return { ...changes, unchanged: true, steps, liveSeconds: seconds(), status };
  }
  // With routes to add, remove or change, that is the reason; otherwise say why the state is behind.
  if (changes.added.length + changes.removed.length + changes.changed.length === 0)
    options.log(`recording, because ${reasons.join("; ")}`);
  const inState = Object.fromEntries(state.map((r) => [r.name, r.outputs.dataDigest]));
  const written = await timed("write", () => writeLive(planned, found.devNamespaces, now, inState));
  const liveSeconds = seconds();
  // The routes are live: say so on the Services before the (slower) record.
  const status = await timed("status", () => writeStatus(sync, listed, planned, now));
  await timed("record", () => record(stack, state, written, options));
  return { ...changes, unchanged: false, steps, liveSeconds, recordedSeconds: seconds(), status };
}

export function report(r: SyncResult): string[] {
  const lines = [
    ...r.added.map((l) => `+ ${l}`),
    ...r.removed.map((l) => `- ${l}`),
    ...r.changed.map((l) => `~ ${l}`),
    ...statusLines(r.status),
  ];
  const counts = `${r.added.length} added, ${r.removed.length} removed, ${r.changed.length} changed`;
  if (r.unchanged)
    lines.push(
      `nothing to change (${r.liveSeconds.toFixed(1)}s): the ConfigMaps and the state hold these routes; no engine run`,
    );
  else if (r.recordedSeconds === undefined) lines.push(`routes live in ${r.liveSeconds.toFixed(1)}s: ${counts}`);
  else
    lines.push(
      `routes live in ${r.liveSeconds.toFixed(1)}s, recorded in the state in ${r.recordedSeconds.toFixed(1)}s: ${counts}`,
    );
  return lines;
}
