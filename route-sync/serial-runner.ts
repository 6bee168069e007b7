// One step at a time, for sync-routes --watch (its live writes and its
// records): a request runs the step at once if none is running; requests
// that arrive while one runs are coalesced into one run after it. A failed
// step is retried after a backoff (2 s doubling to 5 minutes by default,
// back to the first delay after a success); a request that arrives meanwhile
// runs at once (it is newer than what failed, and does what the retry would
// have done), the next failure waiting longer all the same. stop() starts
// nothing more and resolves once the step in progress, if any, has finished.

export interface SerialRunnerOptions {
  /** Retry a failed step after `firstMs`, doubling up to `maxMs` (default 2 s to 5 minutes). */
  retry?: { firstMs: number; maxMs: number };
  /**
   * Told of each failed step and when the next run starts: `retryMs` after it
   * (0 when a request is already waiting), or never (`undefined`) once stopped.
   */
  onError: (error: unknown, retryMs: number | undefined) => void;
}

export interface SerialRunner {
  /** Asks for a run of the step: at once if none is running, else once after the one in progress. */
  request(): void;
  /** Starts no more steps; resolves once the step in progress, if any, has finished. */
  stop(): Promise<void>;
}

export const DEFAULT_RETRY = { firstMs: 2000, maxMs: 5 * 60_000 };

export function serialRunner(step: () => Promise<void>, options: SerialRunnerOptions): SerialRunner {
  const retry = options.retry ?? DEFAULT_RETRY;
  let delay = retry.firstMs;
  let requested = false;
  let stopped = false;
  let running: Promise<void> | undefined;
  let retryTimer: NodeJS.Timeout | undefined;

  const run = async () => {
    try {
      while (requested && !stopped) {
        requested = false;
        try {
          await step();
          delay = retry.firstMs;
        } catch (e) {
          const retryMs = stopped ? undefined : requested ? 0 : delay;
          delay = Math.min(delay * 2, retry.maxMs);
          options.onError(e, retryMs);
          if (retryMs) retryTimer = setTimeout(request, retryMs);
        }
      }
    } finally {
      // Set in the same turn as the loop's last check, so no request falls between the two.
      running = undefined;
    }
  };

  function request() {
    if (stopped) return;
    requested = true;
    clearTimeout(retryTimer);
    retryTimer = undefined;
    running ??= run();
  }

  return {
    request,
    stop() {
      stopped = true;
      clearTimeout(retryTimer);
      retryTimer = undefined;
      return running ?? Promise.resolve();
    },
  };
}
