// sync-routes --watch: follows the routed namespaces and their Services
// (client-node informers) and runs one sync after each burst of changes
// (quiet for the debounce time), never two at once; changes that arrive
// while a sync runs, or waits for the stack lock, are coalesced into one
// more. A failed sync is retried with backoff; while a traffic shift moves,
// a timer re-syncs.
import type { KubeConfig } from "@kubernetes/client-node";
import type { StackConfig } from "../routing/config/schema.js";
import { ROUTED_SERVICE_SELECTOR } from "../routing/discovery.js";
import { watchRoutedObjects, type RoutedObjectsWatch } from "../kube/watch.js";
import { engineErrorLines } from "./stack.js";
import { report, type SyncResult } from "./sync.js";

export interface WatchOptions {
  /** Quiet time after a change before syncing. */
  debounceMs: number;
  /** Re-sync this often while `needsTimer()` says so (a traffic shift moves). */
  resyncMs?: number;
  needsTimer?: () => boolean;
  /** Retry a failed sync after this long, doubling up to `maxMs` (default 5 s to 5 minutes). */
  retry?: { firstMs: number; maxMs: number };
  /** Runs one sync (given the informers' caches). */
  sync(objects: RoutedObjectsWatch): Promise<SyncResult>;
  onSync?: (r: SyncResult) => void;
  log: (line: string) => void;
}

export interface Watcher {
  /** Resolves when the watcher has stopped (after stop(), once a sync in flight has finished). */
  done: Promise<void>;
  stop(): void;
}

export function watchAndSync(kc: KubeConfig, config: StackConfig, options: WatchOptions): Watcher {
  let stopping = false;
  let debounce: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let pending = false;
  const retry = options.retry ?? { firstMs: 5000, maxMs: 5 * 60_000 };
  let retryDelay = retry.firstMs;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  // What changed since the last sync, for the log line.
  let reasons: string[] = [];

  const runSync = async () => {
    if (running) {
      pending = true;
      return;
    }
    running = (async () => {
      do {
        pending = false;
        try {
          const result = await options.sync(objects);
          retryDelay = retry.firstMs;
          options.onSync?.(result);
          for (const line of report(result)) options.log(line);
        } catch (e) {
          options.log(`sync failed; the ConfigMaps keep their content; retrying in ${Math.round(retryDelay / 1000)}s:\n${engineErrorLines(e)}`);
          if (!stopping) {
            clearTimeout(retryTimer);
            retryTimer = setTimeout(() => schedule("retrying the failed sync", 0), retryDelay);
            retryDelay = Math.min(retryDelay * 2, retry.maxMs);
          }
        }
      } while (pending && !stopping);
    })();
    await running;
    running = undefined;
    if (stopping) finish();
  };

  const schedule = (why: string, delayMs = options.debounceMs) => {
    if (stopping) return;
    if (!reasons.includes(why)) reasons.push(why);
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      debounce = undefined;
      clearTimeout(retryTimer);
      const shown = reasons.length > 5 ? `${reasons.slice(0, 5).join(", ")} and ${reasons.length - 5} more` : reasons.join(", ");
      reasons = [];
      options.log(`change seen (${shown}); syncing`);
      void runSync();
    }, delayMs);
  };

  const objects = watchRoutedObjects(kc, config.devNamespaces.selector, ROUTED_SERVICE_SELECTOR, {
    onChange: (what) => schedule(what),
    onError: (message, retryMs) => options.log(`${message}; watching again in ${Math.round(retryMs / 1000)}s`),
  });
  // A first sync once both lists are read: what changed while nothing watched.
  void objects.synced.then(() => schedule("watch started"));
  const ticker = options.resyncMs
    ? setInterval(() => {
        if (options.needsTimer?.()) schedule("traffic shift in progress");
      }, options.resyncMs)
    : undefined;
  return {
    done,
    stop() {
      stopping = true;
      clearTimeout(debounce);
      clearTimeout(retryTimer);
      if (ticker) clearInterval(ticker);
      void objects.stop();
      if (!running) finish();
    },
  };
}
