// The gateway's caches, one abstraction each way they are used, all on lru-cache: TtlCache,
// LoadingCache (one load per key, stale-on-error) and SingleFlight (docs/design/caches.md, also why
// not lru-cache's own fetch() or node-cache).
import { LRUCache } from 'lru-cache';

/** A bounded cache with a time-to-live: repeated requests with one cookie or token cost a lookup. */
export class TtlCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>> {
  private readonly lru: LRUCache<K, V>;

  /** `sizeOf`: what an entry counts against `max` (1 each by default; an entry larger than `max` is not kept). */
  constructor(max: number, ttlMs: number, clock?: () => number, sizeOf: (value: V) => number = () => 1) {
    // Bounded by count through maxSize (each entry counts 1), not `max`: with `max` lru-cache
    // allocates its arrays for every slot up front (measured: +16 MB RSS for the gateway's caches).
    // A given clock is read on every lookup (lru-cache otherwise reuses its reading for a millisecond).
    this.lru = new LRUCache<K, V>({
      maxSize: max,
      sizeCalculation: (value) => sizeOf(value),
      ...(ttlMs > 0 ? { ttl: ttlMs } : {}),
      ...(clock ? { perf: { now: clock }, ttlResolution: 0 } : {}),
    });
  }

  get(key: K): V | undefined {
    return this.lru.get(key);
  }

  set(key: K, value: V, ttlMs?: number): void {
    this.lru.set(key, value, ttlMs === undefined ? undefined : { ttl: ttlMs });
  }

  delete(key: K): void {
    this.lru.delete(key);
  }

  clear(): void {
    this.lru.clear();
  }

  get size(): number {
    return this.lru.size;
  }
}

/**
 * One run of `work` per key at a time: callers that come while it runs share its promise; once it
 * settles the key is free again (what to keep of the answer is the caller's business). `work` is
 * called synchronously, so a run started on the hot path costs no extra turn.
 */
export class SingleFlight<V> {
  private readonly running = new Map<string, Promise<V>>();

  run(key: string, work: () => Promise<V>): Promise<V> {
    let p = this.running.get(key);
    if (!p) {
      p = work().finally(() => this.running.delete(key));
      this.running.set(key, p);
    }
    return p;
  }

  has(key: string): boolean {
    return this.running.has(key);
  }

  get size(): number {
    return this.running.size;
  }
}

export type LookupResult = 'hit' | 'miss' | 'coalesced' | 'stale' | 'error';

export interface LoadingCacheOptions {
  /** how long an answer is fresh */
  ttlMs: number;
  /** after a failed load: how long the last good answer (or the failure) is served before asking again */
  retryMs: number;
  /** bound on kept keys besides the pinned ones */
  maxEntries: number;
  now: () => number;
  /** keys never evicted for room (the answers the gateway must always have) */
  pinned: (key: string) => boolean;
  onLookup?: (key: string, result: LookupResult) => void;
  onLoaded?: (key: string) => void;
  onFailed?: (key: string, err: Error, servingStale: boolean) => void;
}

interface Loaded<V> {
  value: V;
  fetchedAt: number;
  /** set after a failed refresh: serve `value` without asking again until then */
  retryAt?: number;
}

/**
 * One load in flight per key, and stale-on-error. A key is fresh for `ttlMs`; after that the next
 * caller loads it and every concurrent caller waits for that one load. A failed load leaves the
 * last good value in place: it is served at once from then on, and every `retryMs` one background
 * load tries the source again. With no good value the failure itself is remembered for
 * `retryMs`, so callers do not queue on a dead source.
 */
export class LoadingCache<V> {
  /** answers past their TTL stay (they are the stale answers): the bound is by count only */
  private readonly values: TtlCache<string, Loaded<V>>;
  private readonly pinnedValues = new Map<string, Loaded<V>>();
  private readonly failures: TtlCache<string, { error: Error; until: number }>;
  private readonly inflight = new SingleFlight<V>();

  constructor(private readonly o: LoadingCacheOptions) {
    this.values = new TtlCache(o.maxEntries, 0);
    this.failures = new TtlCache(o.maxEntries, o.retryMs, o.now);
  }

  get(key: string, load: () => Promise<V>): Promise<V> {
    const t = this.o.now();
    const entry = this.entry(key);
    if (entry && t - entry.fetchedAt < this.o.ttlMs) {
      this.o.onLookup?.(key, 'hit');
      return Promise.resolve(entry.value);
    }
    if (entry?.retryAt !== undefined) {
      // The source failed the last time: keep serving the last good answer without waiting,
      // and after the retry period ask again in the background (one load at a time).
      if (t >= entry.retryAt && !this.inflight.has(key)) this.start(key, load).catch(() => undefined);
      this.o.onLookup?.(key, 'stale');
      return Promise.resolve(entry.value);
    }
    const failed = entry ? undefined : this.failures.get(key);
    if (failed && t < failed.until) {
      this.o.onLookup?.(key, 'error');
      return Promise.reject(failed.error);
    }
    if (this.inflight.has(key)) {
      this.o.onLookup?.(key, 'coalesced');
      return this.inflight.run(key, load);
    }
    this.o.onLookup?.(key, 'miss');
    return this.start(key, load);
  }

  /** One load of `key`; concurrent callers share it through `inflight`. */
  private start(key: string, load: () => Promise<V>): Promise<V> {
    return this.inflight.run(key, () =>
      Promise.resolve()
        .then(load)
        .then(
          (value) => {
            this.store(key, { value, fetchedAt: this.o.now() });
            this.failures.delete(key);
            this.o.onLoaded?.(key);
            return value;
          },
          (err: unknown) => {
            const error = err instanceof Error ? err : new Error(String(err));
            const last = this.entry(key);
            this.o.onFailed?.(key, error, !!last);
            if (last) {
              last.retryAt = this.o.now() + this.o.retryMs;
              this.o.onLookup?.(key, 'stale');
              return last.value;
            }
            this.failures.set(key, { error, until: this.o.now() + this.o.retryMs });
            throw error;
          },
        ),
    );
  }

  private entry(key: string): Loaded<V> | undefined {
    return this.pinnedValues.get(key) ?? this.values.get(key);
  }

  private store(key: string, loaded: Loaded<V>): void {
    if (this.o.pinned(key)) this.pinnedValues.set(key, loaded);
    else this.values.set(key, loaded);
  }

  get size(): number {
    return this.values.size + this.pinnedValues.size;
  }

  /** No load in flight. */
  idle(): boolean {
    return this.inflight.size === 0;
  }
}
