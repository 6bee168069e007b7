// The stack lock. An update (a production `pulumi up`, another CI job's
// sync) holds the stack while it runs; a sync that finds it held waits and
// retries with bounded backoff, saying who holds it, instead of failing or
// losing its change.
/** Who holds the lock, from the engine's refusal: "root@ci-7 (pid 4242) since 2026-12-01T10:00:00Z", or what the backend says. */
export function lockHolder(e: unknown): string | undefined {
  if (
    // The Automation API's ConcurrentUpdateError, by name: importing the class would load the Automation API.
    (e as Error | undefined)?.name !== "ConcurrentUpdateError" &&
    !/the stack is currently locked|Another update is currently in progress/.test(
      String((e as { stderr?: string })?.stderr ?? ""),
    )
  )
    return undefined;
  const text = String((e as { stderr?: string }).stderr ?? (e as Error).message);
  const holders = new Set(
    [...text.matchAll(/created by (\S+) \(pid (\d+)\) at (\S+)/g)].map((m) => `${m[1]} (pid ${m[2]}) since ${m[3]}`),
  );
  return holders.size ? [...holders].join(", ") : "another update (the backend does not say whose)";
}

export interface LockWait {
  /** Give up after waiting this long in all (default 15 minutes). */
  maxWaitMs?: number;
  /** First wait (default 2 s); each next one doubles, up to `maxDelayMs`. */
  firstDelayMs?: number;
  /** Longest single wait (default 30 s). */
  maxDelayMs?: number;
  log: (line: string) => void;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs `update`; while the stack is locked by another update, waits and runs
 * it again (2 s, 4 s, 8 s ... at most 30 s apart, 15 minutes in all by
 * default), logging who holds the lock. Any other failure is thrown at once.
 */
export async function whenUnlocked<T>(update: () => Promise<T>, options: LockWait): Promise<T> {
  const maxWaitMs = options.maxWaitMs ?? 15 * 60_000;
  const maxDelayMs = options.maxDelayMs ?? 30_000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let delay = options.firstDelayMs ?? 2000;
  let waited = 0;
  for (;;) {
    try {
      return await update();
    } catch (e) {
      const holder = lockHolder(e);
      if (holder === undefined) throw e;
      if (waited >= maxWaitMs)
        throw new Error(
          `the stack is still locked by ${holder} after waiting ${Math.round(waited / 1000)}s; nothing was changed (if that update is gone, \`pulumi cancel\` removes its lock)`,
          { cause: e },
        );
      const wait = Math.min(delay, maxDelayMs, maxWaitMs - waited);
      options.log(`the stack is locked by ${holder}: waiting ${Math.round(wait / 1000)}s, then trying again`);
      await sleep(wait);
      waited += wait;
      delay = Math.min(delay * 2, maxDelayMs);
    }
  }
}
