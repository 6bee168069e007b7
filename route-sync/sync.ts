// sync-routes: one sync of the routes resources with the cluster's dev/PR
// namespaces, through a targeted update of the stack (the same engine,
// program and state as `pulumi up`). Used by CI after it creates or deletes a
// dev/PR namespace, and by the watcher (watch.ts) after each burst of changes.
import type { Stack } from "@pulumi/pulumi/automation";
import { routeTarget, type RoutesView } from "../routing/routes-view.js";
import { isMoving, shiftFromSpec } from "../routing/shifts.js";
import { whenUnlocked, type LockWait } from "./lock.js";
import { routesInState, type RoutesResourceState } from "./stack.js";

/** Routes per routes resource (<gateway>-routes), as the stack's state holds them. */
export type SyncedRoutes = Record<string, RoutesView>;

export interface SyncResult {
  added: string[];
  removed: string[];
  changed: string[];
  seconds: number;
}

export function syncedRoutes(state: readonly RoutesResourceState[]): SyncedRoutes {
  return Object.fromEntries(state.map((r) => [r.name, r.outputs.routes ?? {}]));
}

/** True while any route's traffic shift is still moving its weights (the watcher then re-syncs on a timer). */
export function shiftsMoving(routes: SyncedRoutes, now: Date): boolean {
  return Object.values(routes).some((view) => Object.values(view).some((r) => r.shift !== undefined && isMoving(shiftFromSpec(r.service, r.shift), now)));
}

/** Lines describing what changed between two states of the routes resources. */
export function routeChanges(before: SyncedRoutes, after: SyncedRoutes): Omit<SyncResult, "seconds"> {
  const describe = (resource: string, id: string, view: RoutesView) => `${id} on ${resource.replace(/-routes$/, "")}: ${view[id]!.match} -> ${routeTarget(view[id]!)}`;
  const added: string[] = [];
  const removed: string[] = [];
  const changed: string[] = [];
  for (const resource of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const b = before[resource] ?? {};
    const a = after[resource] ?? {};
    for (const id of Object.keys(a).sort()) {
      if (!(id in b)) added.push(describe(resource, id, a));
      else if (JSON.stringify(a[id]) !== JSON.stringify(b[id])) changed.push(describe(resource, id, a));
    }
    for (const id of Object.keys(b).sort()) if (!(id in a)) removed.push(describe(resource, id, b));
  }
  return { added, removed, changed };
}

export interface SyncOptions {
  /** Progress lines (who holds the stack lock while waiting for it). */
  log: (line: string) => void;
  /** How long to wait for a stack lock held by another update (see lock.ts). */
  lock?: Omit<LockWait, "log">;
}

/**
 * One sync: the program runs (discovering the cluster's dev/PR namespaces)
 * and only the routes resources are updated, once the stack is not locked by
 * another update. Throws with the engine's message when anything fails; the
 * ConfigMaps then keep their content.
 */
export async function syncRoutes(stack: Stack, options: SyncOptions): Promise<SyncResult> {
  const start = Date.now();
  const before = await routesInState(stack);
  if (before.length === 0) throw new Error(`stack ${stack.name} has no routes resources yet: run a full \`pulumi up\` first`);
  await whenUnlocked(() => stack.up({ target: before.map((r) => r.urn), color: "never" }), { ...options.lock, log: options.log });
  const after = await routesInState(stack);
  return { ...routeChanges(syncedRoutes(before), syncedRoutes(after)), seconds: (Date.now() - start) / 1000 };
}

export function report(r: SyncResult): string[] {
  const lines = [...r.added.map((l) => `+ ${l}`), ...r.removed.map((l) => `- ${l}`), ...r.changed.map((l) => `~ ${l}`)];
  lines.push(`synced in ${r.seconds.toFixed(1)}s: ${r.added.length} added, ${r.removed.length} removed, ${r.changed.length} changed`);
  return lines;
}
