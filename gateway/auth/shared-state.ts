// The state every gateway instance must agree on, in one place: sessions that have ended (logout,
// the chat front-end's sign-out, back-channel logout, a refused refresh), the ID token a session
// keeps for one-click logout, logout tokens already used, and the tenant-lookup rate limit.
//
// Without REDIS_URL it lives in this process (one instance; the sandbox). With REDIS_URL it lives in
// Redis, and every instance keeps a mirror of the ended sessions, so the check made on every
// request is a map lookup, not a round trip:
//   - ZSET `<prefix>ended`: members `id:<gateway session id>`, `sid:<realm session id>` or
//     `sub:<epoch s>:<subject>` (every session of the subject begun at or before then); the score is
//     when the entry may go (no session it names can live longer). No count cap.
//   - channel `<prefix>ended`: every new member, so the other mirrors learn it at once.
//   - `<prefix>sf-lock:<key>` / `<prefix>sf:<key>`: single flights (a session's token refresh runs
//     once among every instance; its outcome, encrypted with the session key, kept 5 minutes).
//   - on every (re)connection the mirror is reloaded from the ZSET (a message published while an
//     instance was cut off is not lost), after writing what this instance ended meanwhile.
// Fail closed: while the mirror cannot be trusted (Redis unreachable, reload not done), "has this
// session ended?" answers "unknown" and the data plane answers cookie sessions 503 (the user sees
// "Your sign-in cannot be checked right now", and is let in again once Redis is back).
// Everything else keeps working: bearer JWTs, anonymous routes, the rate limit (on a per-process
// insurance limiter), logout (queued and written on reconnection).
// ioredis and rate-limiter-flexible are loaded only when used (measured alone: +24 MB and +12 MB
// RSS, 170 and 60 ms): one instance without REDIS_URL and without a tenant-lookup limit needs neither.
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Observability } from '../ops/observability.js';
import { SharedStateUnavailable } from './session.js';
import { SingleFlight, TtlCache } from '../cache.js';
import { randomUUID } from 'node:crypto';
import { urlWithoutCredentials } from '../../config/redact.js';
import { redisCredentialsProblem, redisPasswordHint } from '../../config/settings.js';

export { SharedStateUnavailable };

/** What a session is ended by: its own id, the realm session (`sid`), or its subject before a time. */
export type EndedBy = { id: string } | { sid: string } | { sub: string; before: number };

/** What a session's check needs to know about it. */
export interface SessionFacts {
  id: string;
  sid?: string | null;
  sub: string;
  /** login time, epoch seconds */
  iat: number;
}

export interface RateLimit {
  /** Count one event for `key`; over the limit, how many seconds until it may come back. */
  take(key: string): Promise<{ ok: true } | { ok: false; retryAfter: number }>;
}

export interface SharedState {
  /**
   * Take effect here at once and, with Redis, on every instance. The promise settles once Redis has
   * taken and published it (2 s at most), so that a sign-out answering after it leaves the session
   * ended at every instance for the next request. Redis unreachable from this instance: queued,
   * written when it is back; this instance refuses cookie sessions meanwhile, but instances that
   * still reach Redis learn of this end only then.
   */
  end(by: EndedBy, untilEpoch: number): Promise<void>;
  /** true: ended; false: live; undefined: cannot be known now (fail closed). */
  isEnded(session: SessionFacts, now?: number): boolean | undefined;
  keepIdToken(sessionId: string, idToken: string, untilEpoch: number): void;
  idToken(sessionId: string): Promise<string | undefined>;
  /** false when this logout token id was seen before (replay). */
  firstUse(jti: string, untilEpoch: number): Promise<boolean>;
  rateLimit(name: string, points: number, windowSeconds: number): RateLimit;
  /**
   * Run `work` once for `key` among every instance and share its answer for `keepSeconds`: the
   * first caller runs it, the others (here or on other instances) wait for its answer. `work`
   * answering undefined shares nothing (the others then get undefined too, and may try again).
   * Without Redis, once in this process. With Redis: a lock `<prefix>sf-lock:<key>` (SET NX PX)
   * and the answer `<prefix>sf:<key>`; a waiter gives up (undefined) when the holder's lock goes
   * without an answer or after `waitMs`. Redis unreachable: throws SharedStateUnavailable.
   */
  singleFlight(key: string, keepSeconds: number, waitMs: number, work: () => Promise<string | undefined>): Promise<string | undefined>;
  ready(): { ok: boolean; detail: string };
  close(): Promise<void>;
}

const epochNow = () => Math.floor(Date.now() / 1000);
const SWEEP_MS = 60_000;
/**
 * How long a sign-out or a logout waits for Redis (to take its ended session, to give back an ID
 * token, to say whether a logout token was seen) before going on without it: a Redis that neither
 * answers nor fails (no command timeout is set) holds nobody's sign-out up for longer.
 */
const REDIS_WAIT_MS = 2_000;

/** `p`'s value, or `fallback` once `ms` have passed first. */
async function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
/** Ended entries written while Redis was down, kept for the reconnection. */
const MAX_PENDING = 100_000;

/** The ended sessions this instance knows of, by member; swept of what can no longer matter. */
export class EndedMirror {
  private readonly members = new Map<string, number>();
  /** per subject: every session begun at or before `before` has ended */
  private readonly subjects = new Map<string, { before: number; until: number }>();

  static member(by: EndedBy): string {
    if ('id' in by) return `id:${by.id}`;
    if ('sid' in by) return `sid:${by.sid}`;
    return `sub:${Math.floor(by.before)}:${by.sub}`;
  }

  add(member: string, until: number): void {
    if (member.startsWith('sub:')) {
      const colon = member.indexOf(':', 4);
      const before = Number(member.slice(4, colon));
      const sub = member.slice(colon + 1);
      if (colon < 0 || !Number.isFinite(before)) return;
      const had = this.subjects.get(sub);
      this.subjects.set(sub, { before: Math.max(before, had?.before ?? 0), until: Math.max(until, had?.until ?? 0) });
      return;
    }
    this.members.set(member, Math.max(until, this.members.get(member) ?? 0));
  }

  has(s: SessionFacts, now: number): boolean {
    const live = (until: number | undefined) => until !== undefined && until > now;
    if (live(this.members.get(`id:${s.id}`))) return true;
    if (s.sid && live(this.members.get(`sid:${s.sid}`))) return true;
    const subject = this.subjects.get(s.sub);
    return !!subject && subject.until > now && s.iat <= subject.before;
  }

  /** Every entry as a member and its `until` (to write them back to a Redis that lost them). */
  *entries(): Generator<[string, number]> {
    yield* this.members;
    for (const [sub, v] of this.subjects) yield [`sub:${v.before}:${sub}`, v.until];
  }

  sweep(now: number): void {
    for (const [k, until] of this.members) if (until <= now) this.members.delete(k);
    for (const [k, v] of this.subjects) if (v.until <= now) this.subjects.delete(k);
  }

  get size(): number {
    return this.members.size + this.subjects.size;
  }
}

type RateLimiters = typeof import('rate-limiter-flexible');

/** A limit whose library is loaded on first use; `make` builds the limiter from it. */
function limiterOf(make: (lib: RateLimiters) => RateLimiterAbstract): RateLimit {
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
    end: async (by, until) => ended.add(EndedMirror.member(by), until),
    isEnded: (s, now = epochNow()) => ended.has(s, now),
    keepIdToken: (id, token, until) => idTokens.set(id, token, Math.max(1, until - epochNow()) * 1000),
    idToken: async (id) => idTokens.get(id),
    async firstUse(jti, until) {
      if (usedJtis.get(jti)) return false;
      usedJtis.set(jti, true, Math.max(1, until - epochNow()) * 1000);
      return true;
    },
    rateLimit: (name, points, windowSeconds) => limiterOf((lib) => new lib.RateLimiterMemory({ keyPrefix: name, points, duration: windowSeconds })),
    async singleFlight(key, keepSeconds, _waitMs, work) {
      const answered = answers.get(key);
      if (answered !== undefined) return answered;
      return flights.run(key, () =>
        work().then((value) => {
          if (value !== undefined) answers.set(key, value, keepSeconds * 1000);
          return value;
        }),
      );
    },
    ready: () => ({ ok: true, detail: 'sessions and rate limits kept in this process (no REDIS_URL): run one instance' }),
    async close() {
      clearInterval(sweep);
    },
  };
}

/**
 * `redis://user:secret@host:port/db` as it may be logged: `redis://host:port/db`. Everything
 * between `//` and the last '@' goes, however a URL parser would split it (config/redact.ts).
 */
export function redactedRedisUrl(url: string): string {
  return urlWithoutCredentials(url);
}

/** While Redis is unreachable, a warning this often (and once at start, after the connect timeout). */
const REDIS_DOWN_LOG_MS = 60_000;

export async function redisState(url: string, obs: Observability, options: { keyPrefix?: string; downLogEveryMs?: number } = {}): Promise<SharedState> {
  // A password ioredis would read only in part would send the rest to a host of that name, and
  // into every log line and error naming the connection: refused before any is made.
  const problem = URL.canParse(url) ? redisCredentialsProblem(url) : `not a redis:// URL${redisPasswordHint(url)}`;
  if (problem) throw new Error(`REDIS_URL: ${problem}`);
  const { Redis } = await import('ioredis');
  const prefix = options.keyPrefix ?? 'chat-gateway:';
  const endedKey = `${prefix}ended`;
  const where = redactedRedisUrl(url);
  const connection = {
    // Fail fast while disconnected (the callers fail closed or fall back) instead of queueing.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (attempt: number) => Math.min(100 * attempt, 2_000),
    autoResubscribe: false,
  };
  const client = new Redis(url, connection);
  const subscriber = new Redis(url, connection);
  const ended = new EndedMirror();
  const idTokens = new TtlCache<string, string>(50_000, 12 * 3600_000);
  const flights = new SingleFlight<string | undefined>();
  const pending: Array<[string, number]> = [];
  let synced = false;
  let downSince: number | undefined = Date.now();
  let lastError = 'connecting';
  let generation = 0;
  let closed = false;
  let everSynced = false;

  const setSynced = (value: boolean, reason?: string) => {
    if (reason) lastError = reason;
    if (value === synced) return;
    synced = value;
    obs.metrics.sharedStateUp.set(value ? 1 : 0);
    if (value) {
      obs.log.info({ redis: where, downForMs: downSince ? Date.now() - downSince : 0, ended: ended.size }, 'shared session state in sync with Redis');
      downSince = undefined;
      everSynced = true;
    } else {
      downSince = Date.now();
      if (!closed) obs.log.warn({ redis: where, reason: lastError }, 'shared session state lost Redis: cookie sessions answer 503 until it is back');
    }
  };
  obs.metrics.sharedStateUp.set(0);
  obs.metrics.sharedStateDownSince = () => downSince;

  // A Redis unreachable from the start never fires a transition: say so once the first connection
  // attempt has had its time, then again every downLogEveryMs while it lasts (issue 28 item 2).
  const stillDown = () => {
    if (synced || closed || downSince === undefined) return;
    const seconds = Math.round((Date.now() - downSince) / 1000);
    obs.log.warn(
      { event: 'shared-state-unreachable', redis: where, reason: lastError, downForSeconds: seconds, sinceStart: !everSynced },
      `Redis ${where} unreachable ${everSynced ? `for ${seconds} s` : `since start (${seconds} s)`}: signed-in requests answer 503 and /readyz reports not ready until it is back`,
    );
  };
  const firstCheck = setTimeout(stillDown, connection.connectTimeout + 500);
  firstCheck.unref();
  const repeat = setInterval(stillDown, options.downLogEveryMs ?? REDIS_DOWN_LOG_MS);
  repeat.unref();

  const publish = (member: string, until: number) =>
    client
      .multi()
      .zadd(endedKey, 'GT', until, member)
      .publish(endedKey, `${until} ${member}`)
      .exec()
      .then((r) => {
        const failed = r?.find(([err]) => err);
        if (!r || failed) throw failed?.[0] ?? new Error('transaction aborted');
      });

  async function resync(): Promise<void> {
    const mine = ++generation;
    if (client.status !== 'ready' || subscriber.status !== 'ready') return;
    try {
      await subscriber.subscribe(endedKey);
      while (pending.length) {
        const [member, until] = pending[0]!;
        await publish(member, until);
        pending.shift();
      }
      const now = epochNow();
      await client.zremrangebyscore(endedKey, '-inf', now);
      const all = await client.zrangebyscore(endedKey, now + 1, '+inf', 'WITHSCORES');
      for (let i = 0; i + 1 < all.length; i += 2) ended.add(all[i]!, Number(all[i + 1]));
      // A Redis restarted empty (no persistence) gets back what this instance knows.
      ended.sweep(now);
      let batch: Array<string | number> = [];
      for (const [member, until] of ended.entries()) {
        batch.push(until, member);
        if (batch.length >= 2_000) {
          await client.zadd(endedKey, 'GT', ...batch);
          batch = [];
        }
      }
      if (batch.length) await client.zadd(endedKey, 'GT', ...batch);
      if (mine === generation && client.status === 'ready' && subscriber.status === 'ready') setSynced(true);
    } catch (err) {
      setSynced(false, (err as Error).message);
    }
  }

  for (const conn of [client, subscriber]) {
    conn.on('ready', () => void resync());
    conn.on('error', (err: Error) => setSynced(false, err.message));
    conn.on('close', () => setSynced(false, 'connection closed'));
  }
  subscriber.on('message', (_channel: string, message: string) => {
    const space = message.indexOf(' ');
    const until = Number(message.slice(0, space));
    if (space > 0 && Number.isFinite(until)) ended.add(message.slice(space + 1), until);
  });
  const sweep = setInterval(() => {
    const now = epochNow();
    ended.sweep(now);
    if (synced) client.zremrangebyscore(endedKey, '-inf', now).catch(() => undefined);
  }, SWEEP_MS).unref();

  return {
    async end(by, until) {
      const member = EndedMirror.member(by);
      ended.add(member, until);
      const queue = () => {
        if (pending.length >= MAX_PENDING) pending.shift();
        pending.push([member, until]);
      };
      if (!synced) return queue();
      const written = publish(member, until).catch((err: Error) => {
        obs.log.warn({ redis: where, reason: err.message }, 'ended session not written to Redis yet: written on reconnection');
        queue();
        setSynced(false, err.message);
      });
      await within(written, REDIS_WAIT_MS, undefined);
    },
    isEnded(s, now = epochNow()) {
      if (ended.has(s, now)) return true;
      return synced ? false : undefined;
    },
    keepIdToken(id, token, until) {
      const ttl = Math.max(1, until - epochNow());
      idTokens.set(id, token, ttl * 1000);
      client
        .set(`${prefix}idt:${id}`, token, 'EX', ttl)
        .catch((err: Error) => obs.log.info({ reason: err.message }, 'ID token not kept in Redis: logout there asks the user to confirm'));
    },
    async idToken(id) {
      const local = idTokens.get(id);
      if (local) return local;
      try {
        return (await within(client.get(`${prefix}idt:${id}`), REDIS_WAIT_MS, null)) ?? undefined;
      } catch {
        return undefined;
      }
    },
    async firstUse(jti, until) {
      // A replayed logout token can only end sessions begun before its `iat`: harmless, so when
      // Redis cannot say, the token counts as new.
      try {
        const set = client.set(`${prefix}jti:${jti}`, '1', 'EX', Math.max(1, until - epochNow()), 'NX');
        return (await within(set, REDIS_WAIT_MS, 'OK')) === 'OK';
      } catch {
        return true;
      }
    },
    rateLimit(name, points, windowSeconds) {
      return limiterOf(
        (lib) =>
          new lib.RateLimiterRedis({
            storeClient: client,
            keyPrefix: `${prefix}rl:${name}`,
            points,
            duration: windowSeconds,
            // Redis down: counted in this process meanwhile (the limit per instance, not off).
            insuranceLimiter: new lib.RateLimiterMemory({ keyPrefix: name, points, duration: windowSeconds }),
          }),
      );
    },
    async singleFlight(key, keepSeconds, waitMs, work) {
      return flights.run(key, async () => {
        const answerKey = `${prefix}sf:${key}`;
        const lockKey = `${prefix}sf-lock:${key}`;
        try {
          const answered = await client.get(answerKey);
          if (answered !== null) return answered;
          const mine = randomUUID();
          if ((await client.set(lockKey, mine, 'PX', waitMs, 'NX')) === 'OK') {
            try {
              const value = await work();
              if (value !== undefined) await client.set(answerKey, value, 'EX', keepSeconds);
              return value;
            } finally {
              // Only our own lock (it may have run out and been taken since).
              await client
                .eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end", 1, lockKey, mine)
                .catch(() => undefined);
            }
          }
          // Another caller runs it: wait for its answer while its lock lives.
          const deadline = Date.now() + waitMs;
          while (Date.now() < deadline) {
            await new Promise((r) => setTimeout(r, 25));
            const [answer, locked] = await Promise.all([client.get(answerKey), client.exists(lockKey)]);
            if (answer !== null) return answer;
            if (!locked) return (await client.get(answerKey)) ?? undefined;
          }
          return undefined;
        } catch (err) {
          if (err instanceof SharedStateUnavailable) throw err;
          throw new SharedStateUnavailable((err as Error).message);
        }
      });
    },
    ready() {
      if (synced) return { ok: true, detail: `sessions and rate limits shared through Redis ${where}` };
      const since = downSince ? ` for ${Math.round((Date.now() - downSince) / 1000)} s` : '';
      return {
        ok: false,
        detail: `Redis ${where} unreachable${since}${everSynced ? '' : ' (never reached since start)'} (${lastError}): signed-in requests (cookie sessions) answer 503, rate limits count per instance`,
      };
    },
    async close() {
      closed = true;
      clearInterval(sweep);
      clearTimeout(firstCheck);
      clearInterval(repeat);
      obs.metrics.sharedStateDownSince = () => undefined;
      client.disconnect();
      subscriber.disconnect();
    },
  };
}

export async function createSharedState(redisUrl: string | undefined, obs: Observability): Promise<SharedState> {
  return redisUrl ? redisState(redisUrl, obs) : processState(obs);
}
