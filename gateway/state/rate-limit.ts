// The rate limits (rate-limiter-flexible), loaded on first use: one instance without REDIS_URL and
// without a tenant-lookup limit needs neither it nor ioredis (measured alone: +12 MB RSS, 60 ms).
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateLimit } from './shared-state.js';

export type RateLimiters = typeof import('rate-limiter-flexible');

/** A limit whose library is loaded on first use; `make` builds the limiter from it. */
export function limiterOf(make: (lib: RateLimiters) => RateLimiterAbstract): RateLimit {
  let limiter: Promise<{ lib: RateLimiters; limiter: RateLimiterAbstract }> | undefined;
  return {
    async take(key) {
      limiter ??= import('rate-limiter-flexible').then((lib) => ({ lib, limiter: make(lib) }));
      const { lib, limiter: l } = await limiter;
      try {
        await l.consume(key);
        return { ok: true };
      } catch (res) {
        const ms = res instanceof lib.RateLimiterRes ? res.msBeforeNext : 1000;
        return { ok: false, retryAfter: Math.max(1, Math.ceil(ms / 1000)) };
      }
    },
  };
}
