// The shared state kept in this process: one instance (no REDIS_URL), the sandbox.
import type { Observability } from '../observability/observability.js';
import { SingleFlight, TtlCache } from '../cache/cache.js';
import { epochNow, within, type SharedState } from './shared-state.js';
import { EndedMirror } from './ended-mirror.js';
import { limiterOf } from './rate-limit.js';

const SWEEP_MS = 60_000;

/** One process, no Redis: the mirror is the truth. */
export function processState(obs: Observability): SharedState {
  const ended = new EndedMirror();
  const idTokens = new TtlCache<string, string>(50_000, 12 * 3600_000);
  const usedJtis = new TtlCache<string, true>(20_000, 3600_000);
  const flights = new SingleFlight<string | undefined>();
  const answers = new TtlCache<string, string>(20_000, 3600_000);
  const sweep = setInterval(() => ended.sweep(epochNow()), SWEEP_MS).unref();
  obs.metrics.sharedStateUp.set(1);
  return {
    async end(by, until) {
      ended.add(EndedMirror.member(by), until);
      return 'durable';
    },
    isEnded: (s, now = epochNow()) => ended.has(s, now),
    settle: () => Promise.resolve(),
    keepIdToken: (id, token, until) => idTokens.set(id, token, Math.max(1, until - epochNow()) * 1000),
    idToken: async (id) => idTokens.get(id),
    async firstUse(jti, until) {
      if (usedJtis.get(jti)) return false;
      usedJtis.set(jti, true, Math.max(1, until - epochNow()) * 1000);
      return true;
    },
    rateLimit: (name, points, windowSeconds) => limiterOf((lib) => new lib.RateLimiterMemory({ keyPrefix: name, points, duration: windowSeconds })),
    async singleFlight(key, keepSeconds, waitMs, work, holdMs = waitMs) {
      const answered = answers.get(key);
      if (answered !== undefined) return answered;
      const flight = flights.run(key, () =>
        work().then((value) => {
          if (value !== undefined) answers.set(key, value, keepSeconds * 1000);
          return value;
        }),
      );
      return holdMs > waitMs ? within(flight, waitMs, undefined) : flight;
    },
    ready: () => ({ ok: true, detail: 'sessions and rate limits kept in this process (no REDIS_URL): run one instance' }),
    async close() {
      clearInterval(sweep);
    },
  };
}
