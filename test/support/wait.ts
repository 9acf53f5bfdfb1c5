// Waiting in tests: a pause, and polling a condition until it holds. One copy, so that every wait
// names what it waited for when it runs out.

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface Polling {
  /** how long to wait in all (default 5 s) */
  ms?: number;
  /** between two checks (default 50 ms) */
  everyMs?: number;
}

/**
 * What `check` gives once it gives something (not undefined, null or false), checked every
 * `everyMs`; fails naming `what` after `ms`. A check that throws fails at once (wrap it to wait on).
 */
export async function until<T>(what: string, check: () => T | undefined | null | false | Promise<T | undefined | null | false>, o: Polling = {}): Promise<T> {
  const deadline = Date.now() + (o.ms ?? 5_000);
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${o.ms ?? 5_000} ms waiting for ${what}`);
    await sleep(o.everyMs ?? 50);
  }
}

/** Whether `check` holds within `ms` (for a test that asserts it does, or that it never does). */
export async function eventually(check: () => boolean | Promise<boolean>, o: Polling = {}): Promise<boolean> {
  const deadline = Date.now() + (o.ms ?? 5_000);
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await sleep(o.everyMs ?? 50);
  }
}
