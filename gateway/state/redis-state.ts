// The shared state in Redis (REDIS_URL): every instance keeps a mirror of the ended sessions, so the
// check made on every request is a map lookup, not a round trip:
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
import { randomUUID } from 'node:crypto';
import type { Observability } from '../observability/observability.js';
import { SharedStateUnavailable } from '../http/respond.js';
import { SingleFlight, TtlCache } from '../cache/cache.js';
import { epochNow, type SharedState } from './shared-state.js';
import { EndedMirror } from './ended-mirror.js';
import { limiterOf } from './rate-limit.js';
import { urlWithoutCredentials } from '../../config/redact.js';
import { redisCredentialsProblem, redisPasswordHint } from '../../config/redis-url.js';

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

/** `redis://user:secret@host:port/db` as it may be logged: no credentials. */
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
