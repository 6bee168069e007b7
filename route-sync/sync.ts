// sync-routes: discovery plus a targeted update of the routes resources,
// through the Pulumi Automation API (the same engine, program and state as
// `pulumi up`). Used by CI after it creates or deletes a dev/PR namespace,
// and as a watcher that follows namespaces and Services as they change.
import * as k8s from "@kubernetes/client-node";
import { LocalWorkspace, type Stack } from "@pulumi/pulumi/automation";
import { fromPulumiConfig, parseStackConfig } from "../routing/config/load.js";
import type { StackConfig } from "../routing/config/schema.js";
import { ROUTED_SERVICE_SELECTOR } from "../routing/discovery.js";
import type { RouteEntry } from "../routing/routes-input.js";
import { loadKubeConfig } from "../kube/client.js";
import { isMoving, shiftFromInfo } from "../routing/shifts.js";

/** Route id -> route, per routes resource (one per gateway), as the stack's state holds them. */
export type SyncedRoutes = Record<string, Record<string, RouteEntry>>;

export interface SyncResult {
  added: string[];
  removed: string[];
  changed: string[];
  seconds: number;
}

/** The stack through the Automation API, with the pulumi CLI found on PATH. */
export async function openStack(stackName: string, projectDir: string): Promise<Stack> {
  try {
    return await LocalWorkspace.selectStack({ stackName, workDir: projectDir });
  } catch (e) {
    if (/ENOENT/.test(String((e as Error).message))) {
      throw new Error("the pulumi CLI is not on PATH: `source scripts/env.sh` puts the one scripts/build-components.sh built there, with the local backend");
    }
    throw new Error(`stack ${stackName} in ${projectDir}: ${explainFailure(e)}`);
  }
}

export async function stackConfigOf(stack: Stack): Promise<StackConfig> {
  const all = await stack.getAllConfig();
  return parseStackConfig(fromPulumiConfig(Object.fromEntries(Object.entries(all).map(([k, v]) => [k, v.value]))), `stack ${stack.name} config`);
}

/** The routes each routes resource holds in the stack's state, and their URNs. */
export async function routesInState(stack: Stack): Promise<{ urns: string[]; routes: SyncedRoutes }> {
  const deployment = await stack.exportStack();
  const resources = ((deployment.deployment as { resources?: { urn: string; type: string; outputs?: Record<string, unknown> }[] }).resources ?? []).filter((r) => r.type.endsWith(":Routes"));
  const routes: SyncedRoutes = {};
  for (const r of resources) routes[r.urn.slice(r.urn.lastIndexOf("::") + 2)] = (r.outputs?.routes ?? {}) as Record<string, RouteEntry>;
  return { urns: resources.map((r) => r.urn), routes };
}

/** True while any route's traffic shift is still moving its weights (sync-routes --watch then re-syncs on a timer). */
export function shiftsMoving(routes: SyncedRoutes, now: Date): boolean {
  return Object.values(routes).some((byId) => Object.values(byId).some((r) => r.shift !== undefined && isMoving(shiftFromInfo(r.service, r.shift), now)));
}

/** Lines describing what changed between two states of the routes resources. */
export function routeChanges(before: SyncedRoutes, after: SyncedRoutes): Omit<SyncResult, "seconds"> {
  const describe = (resource: string, id: string, r: RouteEntry) =>
    `${id} on ${resource.replace(/-routes$/, "")}: ${r.match} -> ${Object.entries(r.clusters)
      .map(([name, c]) => `${c.upstream} (${name}${Object.keys(r.clusters).length > 1 ? `, ${c.weight}%` : ""})`)
      .join(" + ")}`;
  const added: string[] = [];
  const removed: string[] = [];
  const changed: string[] = [];
  for (const resource of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const b = before[resource] ?? {};
    const a = after[resource] ?? {};
    for (const id of Object.keys(a).sort()) {
      if (!(id in b)) added.push(describe(resource, id, a[id]!));
      else if (JSON.stringify(a[id]) !== JSON.stringify(b[id])) changed.push(describe(resource, id, a[id]!));
    }
    for (const id of Object.keys(b).sort()) if (!(id in a)) removed.push(describe(resource, id, b[id]!));
  }
  return { added, removed, changed };
}

/**
 * One sync: the program runs (discovering the cluster's dev/PR namespaces)
 * and only the routes resources are updated. Throws with the engine's
 * message when anything fails; the ConfigMaps then keep their content.
 */
export async function syncRoutes(stack: Stack): Promise<SyncResult> {
  const start = Date.now();
  const before = await routesInState(stack);
  if (before.urns.length === 0) throw new Error(`stack ${stack.name} has no routes resources yet: run a full \`pulumi up\` first`);
  await stack.up({ target: before.urns, color: "never" });
  const after = await routesInState(stack);
  return { ...routeChanges(before.routes, after.routes), seconds: (Date.now() - start) / 1000 };
}

/** Explains a failed sync in a line or two: the engine's own error lines, without its progress output. */
export function explainFailure(e: unknown): string {
  const text = String((e as { stderr?: string }).stderr || (e as { stdout?: string }).stdout || (e as Error).message || e);
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => /error|failed|forbidden|cannot|refused|not allowed/i.test(l) && !/^\s*$/.test(l));
  return [...new Set(lines)].slice(0, 8).join("\n") || text.slice(0, 2000);
}

export interface Watcher {
  /** Resolves when the watcher has stopped (after stop(), once an in-flight sync finished). */
  done: Promise<void>;
  stop(): void;
}

/**
 * Watches routed namespaces and labelled Services; after each burst of
 * changes (quiet for `debounceMs`) runs one sync, never two at once.
 * `resyncMs` also re-syncs on a timer while `needsTimer()` says so (a
 * traffic shift in progress).
 */
export function watchAndSync(
  stack: Stack,
  config: StackConfig,
  options: { debounceMs: number; resyncMs?: number; needsTimer?: () => boolean; log: (line: string) => void; onSync?: (r: SyncResult) => void },
): Watcher {
  const kc = loadKubeConfig(config.kubeconfig);
  const watch = new k8s.Watch(kc);
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let pending = false;
  const aborts: AbortController[] = [];
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));

  const runSync = async () => {
    if (running) {
      pending = true;
      return;
    }
    running = (async () => {
      do {
        pending = false;
        try {
          const result = await syncRoutes(stack);
          options.onSync?.(result);
          for (const line of report(result)) options.log(line);
        } catch (e) {
          options.log(`sync failed; the ConfigMaps keep their content:\n${explainFailure(e)}`);
        }
      } while (pending && !stopping);
    })();
    await running;
    running = undefined;
    if (stopping) finish();
  };
  // What changed since the last sync, for the log line.
  let reasons: string[] = [];
  const schedule = (why: string) => {
    if (stopping) return;
    if (!reasons.includes(why)) reasons.push(why);
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      const shown = reasons.length > 5 ? `${reasons.slice(0, 5).join(", ")} and ${reasons.length - 5} more` : reasons.join(", ");
      reasons = [];
      options.log(`change seen (${shown}); syncing`);
      void runSync();
    }, options.debounceMs);
  };
  // Watches end every so often (timeoutSeconds, or the connection drops): each
  // restarts from the last resourceVersion seen, so nothing is replayed or
  // missed. The first watch (no resourceVersion) lists what exists, which
  // gives the first sync; a resourceVersion too old to resume from (410)
  // starts over with a fresh list.
  const lastVersion = new Map<string, string | undefined>();
  const start = (path: string, labelSelector: string, what: string) => {
    if (stopping) return;
    const restart = (delayMs: number) => {
      if (!stopping) setTimeout(() => start(path, labelSelector, what), delayMs);
    };
    watch
      .watch(
        path,
        { labelSelector, resourceVersion: lastVersion.get(path), allowWatchBookmarks: true, timeoutSeconds: 25 },
        (phase, obj) => {
          if (phase === "ERROR") {
            lastVersion.set(path, undefined);
            schedule(`${what}s listed again`);
            return;
          }
          if (obj?.metadata?.resourceVersion) lastVersion.set(path, obj.metadata.resourceVersion);
          if (phase === "BOOKMARK") return;
          schedule(`${what} ${obj?.metadata?.namespace ? `${obj.metadata.namespace}/` : ""}${obj?.metadata?.name} ${phase.toLowerCase()}`);
        },
        (err) => restart(err ? 1000 : 0),
      )
      .then((abort) => aborts.push(abort))
      .catch((e) => {
        options.log(`watching ${what}s failed (${(e as Error).message}); retrying in 5s`);
        restart(5000);
      });
  };
  start("/api/v1/namespaces", config.devNamespaces.selector, "namespace");
  start("/api/v1/services", ROUTED_SERVICE_SELECTOR, "Service");
  const ticker = options.resyncMs
    ? setInterval(() => {
        if (options.needsTimer?.()) schedule("traffic shift in progress");
      }, options.resyncMs)
    : undefined;
  return {
    done,
    stop() {
      stopping = true;
      if (timer) clearTimeout(timer);
      if (ticker) clearInterval(ticker);
      for (const a of aborts) a.abort();
      if (!running) finish();
    },
  };
}

export function report(r: SyncResult): string[] {
  const lines = [...r.added.map((l) => `+ ${l}`), ...r.removed.map((l) => `- ${l}`), ...r.changed.map((l) => `~ ${l}`)];
  lines.push(`synced in ${r.seconds.toFixed(1)}s: ${r.added.length} added, ${r.removed.length} removed, ${r.changed.length} changed`);
  return lines;
}
