// The shared state in Redis (one server, Sentinel or Cluster). Every instance keeps a mirror of the
// ended sessions, so the check made on every request is a map lookup, not a round trip; while the
// mirror cannot be trusted, cookie sessions are answered 503 (docs/design/sign-out-everywhere.md,
// "In Redis").
import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { RedisTarget } from '../../config/redis.js';
import type { Observability } from '../observability/observability.js';
import { SharedStateUnavailable } from '../http/respond.js';
import { SingleFlight, TtlCache } from '../cache/cache.js';
import { epochNow, within, type RateLimit, type SharedState } from './shared-state.js';
import { EndedMirror } from './ended-mirror.js';
import { limiterOf } from './rate-limit.js';
import { redisCredentialsProblem, redisPasswordHint } from '../../config/redis.js';
import { redisConnections, redisWhere, type RedisConnections } from './redis-connections.js';
import { EndWriter, REPLICA_WAIT_MS } from './redis-ends.js';
import { RedisHealth } from './redis-health.js';
import { LEASE_MS, MirrorSync } from './redis-sync.js';

const SWEEP_MS = 60_000;
/**
 * How long an ID token lookup or a logout token's replay check waits for Redis before going on
 * without it (every connection also drops a server that stays silent for a second).
 */
const LOOKUP_WAIT_MS = 2_000;
/**
 * How long an end (a sign-out, a back-channel logout) waits for a Redis it cannot reach to take it:
 * long enough for a Sentinel or Cluster failover with 5 s detection. Then it is answered as not
 * yet written (the sign-out page says so), and written as soon as Redis is back.
 */
export const END_WAIT_MS = 10_000;

/** While Redis is unreachable, a warning this often (and once at start, after the connect timeout). */
const REDIS_DOWN_LOG_MS = 60_000;

export interface RedisStateOptions {
  keyPrefix?: string;
  downLogEveryMs?: number;
  /** END_WAIT_MS unless told (tests) */
  endWaitMs?: number;
}

export async function redisState(target: string | RedisTarget, obs: Observability, options: RedisStateOptions = {}): Promise<SharedState> {
  const ioredis = await import('ioredis');
  const to: RedisTarget = typeof target === 'string' ? { url: target } : target;
  if ('url' in to) {
    // A password ioredis would read only in part would send the rest to a host of that name, and
    // into every log line and error naming the connection: refused before any is made.
    const problem = URL.canParse(to.url) ? redisCredentialsProblem(to.url) : `not a redis:// URL${redisPasswordHint(to.url)}`;
    if (problem) throw new Error(`REDIS_URL: ${problem}`);
  }
  const prefix = options.keyPrefix ?? 'chat-gateway:';
  return sharedState(statePartsFor(redisConnections(ioredis, to, { channel: `${prefix}ended`, waitMs: REPLICA_WAIT_MS }), to, obs, options), prefix);
}

/** What the state is made of, each part in its file (see the top of this one). */
interface StateParts {
  conns: RedisConnections;
  ended: EndedMirror;
  health: RedisHealth;
  ends: EndWriter;
  sync: MirrorSync;
  obs: Observability;
}

function statePartsFor(conns: RedisConnections, to: RedisTarget, obs: Observability, options: RedisStateOptions): StateParts {
  const endedKey = `${options.keyPrefix ?? 'chat-gateway:'}ended`;
  const where = redisWhere(to);
  const ended = new EndedMirror();
  const downLogEveryMs = options.downLogEveryMs ?? REDIS_DOWN_LOG_MS;
  const health = new RedisHealth(obs, where, { firstCheckMs: conns.connectTimeout + 500, downLogEveryMs }, () => ended.size);
  const ends = new EndWriter({
    client: conns.client,
    writer: conns.writer,
    publish: conns.publish,
    endedKey,
    // in the ended set's slot (a Cluster hashes `{chat-gateway:ended}` as the key `chat-gateway:ended`)
    durableKey: `{${endedKey}}:durable`,
    obs,
    where,
    leaseMs: LEASE_MS,
    endWaitMs: options.endWaitMs ?? END_WAIT_MS,
    // called only once an end is written, after the sync below exists
    lost: (reason) => sync.lose(reason),
  });
  const sync = new MirrorSync({ to, conns, endedKey, ended, ends, health, where, log: (fields, msg) => obs.log.info(fields, msg) });
  return { conns, ended, health, ends, sync, obs };
}

/** The SharedState over its parts: the check on every request is the mirror and the lease. */
function sharedState({ conns, ended, health, ends, sync, obs }: StateParts, prefix: string): SharedState {
  const { client } = conns;
  const sweep = setInterval(() => {
    const now = epochNow();
    ended.sweep(now);
    if (sync.trusted()) client.zremrangebyscore(`${prefix}ended`, '-inf', now).catch(() => undefined);
  }, SWEEP_MS).unref();
  const idTokens = new TtlCache<string, string>(50_000, 12 * 3600_000);
  return {
    async end(by, until) {
      const member = EndedMirror.member(by);
      ended.add(member, until);
      return ends.end(member, until);
    },
    isEnded(s, now = epochNow()) {
      if (ended.has(s, now)) return true;
      return sync.trusted() ? false : undefined;
    },
    async settle() {
      await sync.renew();
    },
    keepIdToken(id, token, until) {
      const ttl = Math.max(1, until - epochNow());
      idTokens.set(id, token, ttl * 1000);
      client
        .set(`${prefix}idt:${id}`, token, 'EX', ttl)
        .catch((err: Error) => obs.log.info({ reason: err.message }, 'ID token not kept in Redis: logout there asks the user to confirm'));
    },
    idToken: async (id) => idTokens.get(id) ?? idTokenInRedis(client, `${prefix}idt:${id}`),
    firstUse: (jti, until) => firstUse(client, `${prefix}jti:${jti}`, until),
    rateLimit: (name, points, windowSeconds) => rateLimit(client, `${prefix}rl:${name}`, name, points, windowSeconds),
    singleFlight: singleFlights(client, prefix),
    ready: () => health.ready(),
    async close() {
      clearInterval(sweep);
      sync.close();
      health.close();
      ends.close();
      conns.close();
    },
  };
}

async function idTokenInRedis(client: Redis | Cluster, key: string): Promise<string | undefined> {
  try {
    return (await within(client.get(key), LOOKUP_WAIT_MS, null)) ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * False when this logout token id was seen before. A replayed logout token can only end sessions
 * begun before its `iat`: harmless, so when Redis cannot say, the token counts as new.
 */
async function firstUse(client: Redis | Cluster, key: string, until: number): Promise<boolean> {
  try {
    const set = client.set(key, '1', 'EX', Math.max(1, until - epochNow()), 'NX');
    return (await within(set, LOOKUP_WAIT_MS, 'OK')) === 'OK';
  } catch {
    return true;
  }
}

function rateLimit(client: Redis | Cluster, keyPrefix: string, name: string, points: number, duration: number): RateLimit {
  return limiterOf(
    (lib) =>
      new lib.RateLimiterRedis({
        storeClient: client,
        keyPrefix,
        points,
        duration,
        // Redis down: counted in this process meanwhile (the limit per instance, not off).
        insuranceLimiter: new lib.RateLimiterMemory({ keyPrefix: name, points, duration }),
      }),
  );
}

/** SharedState.singleFlight with Redis: a lock and an answer per key, in one slot. */
function singleFlights(client: Redis | Cluster, prefix: string): SharedState['singleFlight'] {
  const flights = new SingleFlight<string | undefined>();
  return (key, keepSeconds, waitMs, work, holdMs = waitMs) =>
    flights.run(key, async () => {
      try {
        const keys = { answer: `${prefix}sf:{${key}}`, lock: `${prefix}sf-lock:{${key}}` };
        const answered = await client.get(keys.answer);
        if (answered !== null) return answered;
        const mine = randomUUID();
        if ((await client.set(keys.lock, mine, 'PX', waitMs, 'NX')) !== 'OK') return await answerOfHolder(client, keys, waitMs);
        const run = runHolding(client, keys, { mine, keepSeconds, lockMs: waitMs, holdMs }, work);
        // Work held past the wait goes on; later callers here wait for its answer as the others do.
        return holdMs > waitMs ? await within(run, waitMs, undefined) : await run;
      } catch (err) {
        if (err instanceof SharedStateUnavailable) throw err;
        throw new SharedStateUnavailable((err as Error).message);
      }
    });
}

type FlightKeys = { answer: string; lock: string };
type Holding = { mine: string; keepSeconds: number; lockMs: number; holdMs: number };

/** This caller holds the lock: run the work, share its answer, let go of the lock. */
async function runHolding(client: Redis | Cluster, keys: FlightKeys, h: Holding, work: () => Promise<string | undefined>) {
  const renewal = h.holdMs > h.lockMs ? keepLock(client, keys.lock, h) : undefined;
  try {
    const value = await work();
    if (value !== undefined) await client.set(keys.answer, value, 'EX', h.keepSeconds);
    return value;
  } finally {
    clearInterval(renewal);
    // Only our own lock (it may have run out and been taken since).
    await client
      .eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end", 1, keys.lock, h.mine)
      .catch(() => undefined);
  }
}

/**
 * The lock of work that outlasts `lockMs`, renewed while it runs (at most `holdMs`): kept short,
 * so that when this instance dies the others may run the work again soon.
 */
function keepLock(client: Redis | Cluster, lock: string, h: Holding): NodeJS.Timeout {
  const until = Date.now() + h.holdMs;
  const timer = setInterval(
    () => {
      if (Date.now() >= until) return clearInterval(timer);
      client
        .eval(
          "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) else return 0 end",
          1,
          lock,
          h.mine,
          h.lockMs,
        )
        .catch(() => undefined);
    },
    Math.max(100, Math.floor(h.lockMs / 3)),
  );
  return timer.unref();
}

/** Another caller runs it: wait for its answer while its lock lives. */
async function answerOfHolder(client: Redis | Cluster, keys: FlightKeys, waitMs: number): Promise<string | undefined> {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 25));
    const [answer, locked] = await Promise.all([client.get(keys.answer), client.exists(keys.lock)]);
    if (answer !== null) return answer;
    if (!locked) return (await client.get(keys.answer)) ?? undefined;
  }
  return undefined;
}
