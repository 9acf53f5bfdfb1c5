// The shared state in Redis: one server (REDIS_URL), Sentinel (REDIS_SENTINELS) or Cluster
// (REDIS_CLUSTER_NODES). Every instance keeps a mirror of the ended sessions, so the check made on
// every request is a map lookup, not a round trip:
//   - ZSET `<prefix>ended`: members `id:<gateway session id>`, `sid:<realm session id>` or
//     `sub:<epoch s>:<subject>` (every session of the subject begun at or before then); the score is
//     when the entry may go (no session it names can live longer). No count cap.
//   - channel `<prefix>ended`: every new member, so the other mirrors learn it at once (in a Cluster
//     a PUBLISH reaches the subscribers of every node).
//   - `<prefix>sf-lock:{<key>}` / `<prefix>sf:{<key>}`: single flights (a session's token refresh runs
//     once among every instance; its outcome, encrypted with the session key, kept 5 minutes); the
//     hash tag keeps a lock and its answer in one Cluster slot.
//   - `{<prefix>ended}:durable`: written just before WAIT, in the ended set's slot (see `durable`).
// Durable ends: an end is acknowledged once the primary has it and, when the primary has a replica
// online, once a replica has it too (WAIT, within the same 2 s); after a failover each instance
// writes back, and publishes, every end it knows that the new primary lacks.
// Reconnection and failover: a probe every second asks the primary holding the ended set (and the
// subscription) whether it is there and still a primary. Whenever the connection, the subscription
// or the probe fails, the mirror is not trusted; once both are back the instance subscribes again,
// writes what it ended meanwhile, re-reads the whole ZSET (what was published while it was cut off
// is not lost), and writes back what Redis lacks: only then is the mirror trusted again.
// Fail closed: while the mirror cannot be trusted, "has this session ended?" answers "unknown" and
// the data plane answers cookie sessions 503 (the user sees "Your sign-in cannot be checked right
// now", and is let in again once Redis is back).
// Everything else keeps working: bearer JWTs, anonymous routes, the rate limit (on a per-process
// insurance limiter), logout (queued and written on reconnection).
// ioredis and rate-limiter-flexible are loaded only when used (measured alone: +24 MB and +12 MB
// RSS, 170 and 60 ms): one instance without REDIS_URL and without a tenant-lookup limit needs neither.
import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import type { Cluster, Redis } from 'ioredis';
import type { RedisTarget } from '../../config/redis.js';
import type { Observability } from '../observability/observability.js';
import { SharedStateUnavailable } from '../http/respond.js';
import { SingleFlight, TtlCache } from '../cache/cache.js';
import { epochNow, type SharedState } from './shared-state.js';
import { EndedMirror } from './ended-mirror.js';
import { limiterOf } from './rate-limit.js';
import { redisCredentialsProblem, redisPasswordHint } from '../../config/redis.js';
import { redisConnections, redisWhere, REFUSED, refusalHint, roleOf } from './redis-connections.js';

const SWEEP_MS = 60_000;
/**
 * How long a sign-out or a logout waits for Redis (to take its ended session and have a replica
 * confirm it, to give back an ID token, to say whether a logout token was seen) before going on
 * without it: a Redis that neither answers nor fails (no command timeout is set, but in a
 * Cluster's nodes) holds nobody's sign-out up for longer.
 */
const REDIS_WAIT_MS = 2_000;
/** How often the primary holding the ended set is asked whether it is still there, and how long it has to answer. */
const PROBE_EVERY_MS = 1_000;
const PROBE_TIMEOUT_MS = 1_500;

const TIMED_OUT = Symbol('timed out');

/** `p`'s value, or `fallback` once `ms` have passed first. */
async function within<T, F = T>(p: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<F>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
/** Ended entries written while Redis was down, kept for the reconnection. */
const MAX_PENDING = 100_000;

/** While Redis is unreachable, a warning this often (and once at start, after the connect timeout). */
const REDIS_DOWN_LOG_MS = 60_000;

export async function redisState(
  target: string | RedisTarget,
  obs: Observability,
  options: { keyPrefix?: string; downLogEveryMs?: number } = {},
): Promise<SharedState> {
  const ioredis = await import('ioredis');
  const to: RedisTarget = typeof target === 'string' ? { url: target } : target;
  if ('url' in to) {
    // A password ioredis would read only in part would send the rest to a host of that name, and
    // into every log line and error naming the connection: refused before any is made.
    const problem = URL.canParse(to.url) ? redisCredentialsProblem(to.url) : `not a redis:// URL${redisPasswordHint(to.url)}`;
    if (problem) throw new Error(`REDIS_URL: ${problem}`);
  }
  const prefix = options.keyPrefix ?? 'chat-gateway:';
  const endedKey = `${prefix}ended`;
  // In the ended set's slot (a Cluster hashes `{chat-gateway:ended}` as the key `chat-gateway:ended`).
  const durableKey = `{${endedKey}}:durable`;
  const where = redisWhere(to);
  const { client, subscriber, writer, connectTimeout } = redisConnections(ioredis, to);
  let durableWriter: Redis | Cluster | undefined;
  /** Opened once a replica is seen (never, for a Redis without replicas). */
  const writerNow = () => {
    if (!durableWriter) {
      durableWriter = writer();
      durableWriter.on('error', () => undefined);
    }
    return durableWriter;
  };

  const ended = new EndedMirror();
  const idTokens = new TtlCache<string, string>(50_000, 12 * 3600_000);
  const flights = new SingleFlight<string | undefined>();
  const pending: Array<[string, number]> = [];
  /** sign-outs made while Redis was unreachable, waiting (2 s at most) for their end to be written */
  const flushed: Array<() => void> = [];
  let synced = false;
  let resyncing = false;
  let downSince: number | undefined = Date.now();
  let lastError = 'connecting';
  let generation = 0;
  let closed = false;
  let everSynced = false;

  const setSynced = (value: boolean, reason?: string) => {
    // a refusal (a wrong password, a missing permission) stays the reason until Redis is reached:
    // the closes and lost nodes that follow it are its consequences
    if (reason && !(REFUSED.test(lastError) && !REFUSED.test(reason))) lastError = reason;
    if (value) lastError = 'connecting';
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
  // attempt has had its time, then again every downLogEveryMs while it lasts.
  const stillDown = () => {
    if (synced || closed || downSince === undefined) return;
    const seconds = Math.round((Date.now() - downSince) / 1000);
    obs.log.warn(
      { event: 'shared-state-unreachable', redis: where, reason: lastError, downForSeconds: seconds, sinceStart: !everSynced },
      `Redis ${where} unreachable ${everSynced ? `for ${seconds} s` : `since start (${seconds} s)`}: signed-in requests answer 503 and /readyz reports not ready until it is back`,
    );
  };
  const firstCheck = setTimeout(stillDown, connectTimeout + 500);
  firstCheck.unref();
  const repeat = setInterval(stillDown, options.downLogEveryMs ?? REDIS_DOWN_LOG_MS);
  repeat.unref();

  /** Write and publish ended entries in one transaction; how many replicas the primary has online then. */
  const publish = async (entries: Array<[string, number]>): Promise<number> => {
    const tx = client.multi().zadd(endedKey, 'GT', ...entries.flatMap(([member, until]) => [until, member]));
    for (const [member, until] of entries) tx.publish(endedKey, `${until} ${member}`);
    const r = await tx.role().exec();
    const failed = r?.find(([err]) => err);
    if (!r || failed) throw failed?.[0] ?? new Error('transaction aborted');
    return roleOf(r.at(-1)?.[1])?.replicas ?? 0;
  };

  // WAIT blocks the connection it is sent on until a replica confirms (or its time runs out), so it
  // is sent on a connection of its own, after a write of that connection's (WAIT counts what the
  // connection itself wrote, and that write follows the ended entries in the replication stream).
  // One WAIT at a time: those asked for meanwhile share the next one, so a replica that stops
  // confirming delays sign-outs by 2 s at most, never by a queue of WAITs.
  let waiting: Promise<number> | undefined;
  let waitingNext: Promise<number> | undefined;
  const confirmed = (ms: number): Promise<number> => {
    if (!waiting) {
      waiting = writerNow()
        .pipeline()
        .set(durableKey, String(Date.now()), 'PX', 60_000)
        .wait(1, ms)
        .exec()
        .then((r) => {
          const failed = r?.find(([err]) => err);
          if (!r || failed) throw failed?.[0] ?? new Error('WAIT not answered');
          return Number(r[1]![1]);
        })
        .finally(() => (waiting = undefined));
      return waiting;
    }
    waitingNext ??= waiting
      .catch(() => 0)
      .then(() => {
        waitingNext = undefined;
        return confirmed(ms);
      });
    return waitingNext;
  };

  /** The ended entry written, published and, with a replica online, confirmed by one, within `ms`. */
  const durable = async (member: string, until: number, ms: number): Promise<'confirmed' | 'primary only' | 'no replica'> => {
    const started = Date.now();
    const replicas = await publish([[member, until]]);
    if (replicas === 0) return 'no replica';
    writerNow();
    const acks = await confirmed(Math.max(1, ms - (Date.now() - started))).catch(() => 0);
    return acks > 0 ? 'confirmed' : 'primary only';
  };

  const connected = () => client.status === 'ready' && subscriber.status === 'ready';

  /** Write what was ended while Redis could not take it; the sign-outs waiting for that go on. */
  async function flushPending(): Promise<void> {
    while (pending.length) {
      const batch = pending.slice(0, 500);
      await publish(batch);
      pending.splice(0, batch.length);
    }
    for (const done of flushed.splice(0)) done();
  }

  async function resync(): Promise<void> {
    const mine = ++generation;
    if (!connected()) return;
    resyncing = true;
    try {
      await subscriber.subscribe(endedKey);
      await flushPending();
      const now = epochNow();
      await client.zremrangebyscore(endedKey, '-inf', now);
      const all = await client.zrangebyscore(endedKey, now + 1, '+inf', 'WITHSCORES');
      const held = new Map<string, number>();
      for (let i = 0; i + 1 < all.length; i += 2) {
        ended.add(all[i]!, Number(all[i + 1]));
        held.set(all[i]!, Number(all[i + 1]));
      }
      // What this instance knows and Redis lacks (a replica promoted before it had them, a Redis
      // restarted empty) goes back, published: an instance that re-read before it came back learns it now.
      ended.sweep(now);
      const missing = [...ended.entries()].filter(([member, until]) => (held.get(member) ?? 0) < until);
      for (let i = 0; i < missing.length; i += 500) await publish(missing.slice(i, i + 500));
      if (missing.length) obs.log.info({ redis: where, written: missing.length }, 'ended sessions Redis lacked written back');
      // Ends made meanwhile (this instance was not yet trusted) are written before it is: nothing
      // is awaited between the last of them and the switch.
      await flushPending();
      if (mine === generation && connected()) setSynced(true);
    } catch (err) {
      setSynced(false, (err as Error).message);
    } finally {
      if (mine === generation) resyncing = false;
    }
  }

  // The probe: the primary holding the ended set answers, is still a primary, and the
  // subscription answers. A failover that closed no connection of ours (a Cluster's other
  // shard took the slot over, a primary demoted) is seen here, and so is its end: the next answer
  // starts the resync.
  let probing = false;
  async function probe(): Promise<void> {
    // Not connected: the connections' own events say so, and their 'ready' starts the resync.
    if (closed || probing || resyncing || !connected()) return;
    probing = true;
    try {
      // A Cluster follows the slot by itself (MOVED); one server or Sentinel's primary says its role.
      const primary =
        'cluster' in to ? client.exists(endedKey).then((n) => [[null, n]] as Array<[Error | null, unknown]>) : client.pipeline().exists(endedKey).role().exec();
      const answered = await within(Promise.all([primary, subscriber.ping()]), PROBE_TIMEOUT_MS, TIMED_OUT);
      if (answered === TIMED_OUT) throw new Error(`Redis did not answer within ${PROBE_TIMEOUT_MS} ms`);
      const [exists, role] = answered[0] ?? [];
      if (exists?.[0]) throw exists[0];
      // ROLE refused (a managed Redis may rename it): not a reason to distrust the state.
      const found = role?.[0] ? undefined : roleOf(role?.[1]);
      if (found?.primary === false) {
        // A Sentinel's connection finds the primary again through the sentinels.
        if ('sentinel' in to) (client as Redis).disconnect(true);
        throw new Error('the Redis answering is a replica now, not the primary');
      }
      if (found?.replicas) writerNow();
      if (!synced && !resyncing) void resync();
    } catch (err) {
      setSynced(false, (err as Error).message);
    } finally {
      probing = false;
    }
  }
  const probes = setInterval(() => void probe(), PROBE_EVERY_MS);
  probes.unref();
  // A Cluster primary's connection ended: the cluster refuses every slot once it is marked failing
  // (with cluster-require-full-coverage, the default), so the state is not trusted from now until
  // a probe answers again.
  if ('cluster' in to) {
    (client as Cluster).on('-node', (node: Redis) => {
      if (!node.options.readOnly && !closed) setSynced(false, `cluster primary ${node.options.host}:${node.options.port} lost`);
    });
  }

  for (const conn of [client, subscriber] as EventEmitter[]) {
    // a close that follows an error keeps the error as the reason (a refused sign-in says WRONGPASS)
    let failed = false;
    conn.on('ready', () => {
      failed = false;
      void resync();
    });
    conn.on('error', (err: Error & { lastNodeError?: Error }) => {
      failed = true;
      // a Cluster's "Failed to refresh slots cache." carries what the nodes said in lastNodeError
      const message = err.lastNodeError ? `${err.message} (${err.lastNodeError.message})` : err.message;
      setSynced(false, message + refusalHint(to, message));
    });
    conn.on('close', () => setSynced(false, failed ? undefined : 'connection closed'));
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
      if (!synced) {
        // Written when Redis is back: this sign-out waits for that, 2 s at most.
        queue();
        await within(new Promise<void>((resolve) => flushed.push(resolve)), REDIS_WAIT_MS, undefined);
        return;
      }
      const written = durable(member, until, REDIS_WAIT_MS).then(
        (how) => {
          if (how === 'primary only')
            obs.log.warn(
              { redis: where },
              'ended session not confirmed by a replica in time: after a failover it is written back by the instances that know it',
            );
        },
        (err: Error) => {
          obs.log.warn({ redis: where, reason: err.message }, 'ended session not written to Redis yet: written on reconnection');
          queue();
          setSynced(false, err.message);
        },
      );
      const outcome = await within(written, REDIS_WAIT_MS, TIMED_OUT);
      if (outcome === TIMED_OUT) obs.log.warn({ redis: where }, `ended session not confirmed by Redis within ${REDIS_WAIT_MS} ms: answered anyway`);
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
        const answerKey = `${prefix}sf:{${key}}`;
        const lockKey = `${prefix}sf-lock:{${key}}`;
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
      clearInterval(probes);
      clearTimeout(firstCheck);
      clearInterval(repeat);
      obs.metrics.sharedStateDownSince = () => undefined;
      for (const done of flushed.splice(0)) done();
      client.disconnect();
      subscriber.disconnect();
      durableWriter?.disconnect();
    },
  };
}
