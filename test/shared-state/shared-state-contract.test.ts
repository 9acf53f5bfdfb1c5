// One contract, every store: the shared state kept in this process and in real Redis servers (one
// server, Sentinel, Cluster: gateway/state/) answer every question the gateway asks them the same way.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { createObservability } from '../../gateway/observability/observability.js';
import { processState } from '../../gateway/state/process-state.js';
import { redisState } from '../../gateway/state/redis-state.js';
import type { SharedState } from '../../gateway/state/shared-state.js';
import type { RedisTarget } from '../../config/redis.js';
import {
  asNodes,
  redisCli,
  startRedis,
  startRedisCluster,
  startSentinelRedis,
  type RedisCluster,
  type SentinelRedis,
  type TestRedis,
} from '../support/redis.js';
import { sleep, until } from '../support/wait.js';

const now = () => Math.floor(Date.now() / 1000);
const quiet = () => createObservability({ level: 'silent' });

interface Store {
  name: string;
  open(): Promise<SharedState>;
  /** another instance's state on the same servers and key prefix as the last one opened (Redis only) */
  peer?(): Promise<SharedState>;
  /** servers with ACL users: what they refused them since last asked */
  refusals?(): string[];
  done(): Promise<void>;
}

let prefixes = 0;

/** A store in Redis reached through `target`, ready (subscribed, mirror loaded) before the test. */
async function openRedisState(target: string | RedisTarget, keyPrefix: string | null = `contract-${++prefixes}:`): Promise<SharedState> {
  lastOpened = { target, keyPrefix };
  // null: the gateway's own prefix
  const state = await redisState(target, quiet(), keyPrefix === null ? {} : { keyPrefix });
  const deadline = Date.now() + 10_000;
  while (!state.ready().ok) {
    if (Date.now() > deadline) throw new Error(`Redis state not ready: ${state.ready().detail}`);
    await sleep(20);
  }
  return state;
}

let lastOpened: { target: string | RedisTarget; keyPrefix: string | null } | undefined;
/** A second instance of the state opened last: the same servers, the same prefix, nothing flushed. */
const peerOfLast = () => openRedisState(lastOpened!.target, lastOpened!.keyPrefix);

let redis: TestRedis | undefined;
let sentinel: SentinelRedis | undefined;
let cluster: RedisCluster | undefined;
let signedRedis: TestRedis | undefined;
let signedSentinel: SentinelRedis | undefined;
let signedCluster: RedisCluster | undefined;

// The ACL users docs/operating/settings.md gives operators, read from it: the tests hold it true.
const ACL_LINES = [
  ...readFileSync(new URL('../../docs/operating/settings.md', import.meta.url), 'utf8').matchAll(/^user chat-gateway on >PASSWORD (.+)$/gm),
].map((m) => m[1]!.split(' '));
const [DATA_RULES, SENTINEL_RULES] = ACL_LINES as [string[], string[]];
// Passwords as operators write them, holding what a URL would have to escape.
const DATA_USER = { username: 'chat-gateway', password: 'data p@ss#word/?:%41' };
const SENTINEL_USER = { sentinelUsername: 'chat-gateway', sentinelPassword: 'sentinel p@ss#word' };

/** Every key of these servers gone (a replica refuses): each test's state starts empty under the gateway's own prefix. */
function flush(ports: number[]): void {
  for (const port of ports)
    try {
      redisCli(port, 'flushall');
    } catch {
      // a replica
    }
}

/** What these servers' ACL LOG holds: every command or key refused to a user since the last reset, which it then resets. */
function refusals(ports: number[]): string[] {
  return ports.flatMap((port) => {
    const log = redisCli(port, 'acl', 'log');
    redisCli(port, 'acl', 'log', 'reset');
    return log ? [`${port}: ${log.replace(/\n/g, ' ')}`] : [];
  });
}

/** The state as the gateway opens it (its own key prefix), ready before the test. */
const openGatewayState = (target: string | RedisTarget) => openRedisState(target, null);

const STORES: Store[] = [
  { name: 'in this process', open: async () => processState(quiet()), done: async () => {} },
  {
    name: 'in Redis',
    async open() {
      redis ??= await startRedis();
      return openRedisState(redis.url);
    },
    peer: peerOfLast,
    async done() {
      await redis?.stop();
      redis = undefined;
    },
  },
  {
    name: 'in Redis Sentinel (a primary, a replica, three sentinels)',
    async open() {
      sentinel ??= await startSentinelRedis();
      return openRedisState({ sentinel: { sentinels: asNodes(sentinel.sentinels), name: sentinel.name, tls: false } });
    },
    peer: peerOfLast,
    async done() {
      await sentinel?.stop();
      sentinel = undefined;
    },
  },
  {
    name: 'in a Redis Cluster (three primaries, a replica each)',
    async open() {
      cluster ??= await startRedisCluster();
      return openRedisState({ cluster: { nodes: asNodes(cluster.nodesSetting), tls: false } });
    },
    peer: peerOfLast,
    async done() {
      await cluster?.stop();
      cluster = undefined;
    },
  },
  {
    name: 'in Redis, signed in as the narrowest ACL user the gateway needs (REDIS_URL, the password percent-encoded)',
    async open() {
      signedRedis ??= await startRedis({ auth: { ...DATA_USER, rules: DATA_RULES } });
      flush([signedRedis.port]);
      return openGatewayState(signedRedis.url);
    },
    refusals: () => refusals([signedRedis!.port]),
    peer: peerOfLast,
    async done() {
      await signedRedis?.stop();
      signedRedis = undefined;
    },
  },
  {
    name: 'in Redis Sentinel whose data nodes and sentinels each ask the narrowest ACL user the gateway needs',
    async open() {
      signedSentinel ??= await startSentinelRedis({ auth: { ...DATA_USER, rules: DATA_RULES, ...SENTINEL_USER, sentinelRules: SENTINEL_RULES } });
      flush(signedSentinel.nodes.map((n) => n.port));
      return openGatewayState({
        sentinel: { sentinels: asNodes(signedSentinel.sentinels), name: signedSentinel.name, tls: false, ...DATA_USER, ...SENTINEL_USER },
      });
    },
    refusals: () => refusals([...signedSentinel!.nodes, ...signedSentinel!.sentinelProcesses].map((n) => n.port)),
    peer: peerOfLast,
    async done() {
      await signedSentinel?.stop();
      signedSentinel = undefined;
    },
  },
  {
    name: 'in a Redis Cluster whose nodes ask the narrowest ACL user the gateway needs',
    async open() {
      signedCluster ??= await startRedisCluster({ auth: { ...DATA_USER, rules: DATA_RULES } });
      flush(signedCluster.nodes.map((n) => n.port));
      return openGatewayState({ cluster: { nodes: asNodes(signedCluster.nodesSetting), tls: false, ...DATA_USER } });
    },
    refusals: () => refusals(signedCluster!.nodes.map((n) => n.port)),
    peer: peerOfLast,
    async done() {
      await signedCluster?.stop();
      signedCluster = undefined;
    },
  },
];

for (const store of STORES) {
  describe(`shared state contract: ${store.name}`, function () {
    this.timeout(20_000);
    let state: SharedState;
    beforeEach(async () => (state = await store.open()));
    afterEach(async function () {
      await state.close();
      // a missing permission can hide behind a fallback (rate limits count per instance then)
      if (store.refusals && this.currentTest?.state === 'passed') expect(store.refusals(), 'ACL LOG: refused to the gateway\u2019s user').to.deep.equal([]);
    });
    after(() => store.done());

    it('is ready, and says where its state lives', () => {
      const r = state.ready();
      expect(r.ok).to.equal(true);
      expect(r.detail).to.be.a('string').and.not.equal('');
    });

    it('a session is live until it is ended, by its own id, its realm session, or its subject before a time', async () => {
      const t = now();
      const a = { id: 'a', sid: 'realm-a', sub: 'alice', iat: t - 100 };
      const b = { id: 'b', sid: 'realm-b', sub: 'bob', iat: t - 100 };
      const c = { id: 'c', sid: null, sub: 'carol', iat: t - 100 };
      const laterCarol = { id: 'c2', sub: 'carol', iat: t + 10 };
      for (const s of [a, b, c, laterCarol]) expect(state.isEnded(s), s.id).to.equal(false);
      // answered as done: every instance refuses it, and losing one server loses nothing
      expect(await state.end({ id: 'a' }, t + 600)).to.equal('durable');
      expect(await state.end({ sid: 'realm-b' }, t + 600)).to.equal('durable');
      expect(await state.end({ sub: 'carol', before: t }, t + 600)).to.equal('durable');
      expect(state.isEnded(a)).to.equal(true);
      expect(state.isEnded(b)).to.equal(true);
      expect(state.isEnded(c)).to.equal(true);
      expect(state.isEnded(laterCarol), 'a session begun after the subject was ended').to.equal(false);
      expect(state.isEnded({ id: 'other', sub: 'alice', iat: t - 100 }), 'another session of the same subject').to.equal(false);
    });

    it('an end counts until its time, not after', async () => {
      const t = now();
      await state.end({ id: 'short' }, t + 5);
      const s = { id: 'short', sub: 'dana', iat: t - 10 };
      expect(state.isEnded(s, t + 4)).to.equal(true);
      expect(state.isEnded(s, t + 6)).to.equal(false);
    });

    it('keeps a session\u2019s ID token for one-click logout, and knows none it was not given', async () => {
      state.keepIdToken('s1', 'id-token-1', now() + 600);
      expect(await state.idToken('s1')).to.equal('id-token-1');
      expect(await state.idToken('nobody')).to.equal(undefined);
    });

    it('a logout token id is new once, then a replay', async () => {
      expect(await state.firstUse('jti-1', now() + 600)).to.equal(true);
      expect(await state.firstUse('jti-1', now() + 600)).to.equal(false);
      expect(await state.firstUse('jti-2', now() + 600)).to.equal(true);
    });

    it('a rate limit lets `points` through per window, then says when to come back', async () => {
      const limit = state.rateLimit(`t-${prefixes}`, 2, 60);
      expect(await limit.take('k')).to.deep.equal({ ok: true });
      expect(await limit.take('k')).to.deep.equal({ ok: true });
      const third = await limit.take('k');
      expect(third.ok).to.equal(false);
      expect(third.ok === false && third.retryAfter).to.be.within(1, 60);
      expect(await limit.take('another key')).to.deep.equal({ ok: true });
    });

    it('a single flight runs its work once for concurrent callers and shares the answer', async () => {
      let runs = 0;
      const work = async () => {
        runs++;
        await sleep(50);
        return 'answer';
      };
      const answers = await Promise.all([1, 2, 3].map(() => state.singleFlight('flight-1', 60, 2_000, work)));
      expect(answers).to.deep.equal(['answer', 'answer', 'answer']);
      expect(runs).to.equal(1);
      expect(await state.singleFlight('flight-1', 60, 2_000, work), 'kept for keepSeconds').to.equal('answer');
      expect(runs).to.equal(1);
    });

    it('a single flight held past its wait: every caller, the one running it too, gets nothing after waitMs; the work goes on, run once here and at another instance meanwhile; its answer shared when it comes', async () => {
      let runs = 0;
      let release!: () => void;
      const answered = new Promise<void>((resolve) => (release = resolve));
      const work = async () => {
        runs++;
        await answered;
        return 'late answer';
      };
      const flight = () => state.singleFlight('flight-held', 60, 300, work, 10_000);
      const started = Date.now();
      expect(await Promise.all([flight(), flight()])).to.deep.equal([undefined, undefined]);
      expect(Date.now() - started, 'waitMs, not the work').to.be.below(1_000);
      // Past the lock's first life (300 ms): kept while the work runs, or another instance would run it again.
      await sleep(800);
      const peer = await store.peer?.();
      try {
        expect(await flight()).to.equal(undefined);
        if (peer) expect(await peer.singleFlight('flight-held', 60, 300, work, 10_000)).to.equal(undefined);
        expect(runs, 'one run among every caller').to.equal(1);
        release();
        await until('the late answer shared', async () => (await flight()) === 'late answer');
        if (peer) expect(await peer.singleFlight('flight-held', 60, 300, work, 10_000)).to.equal('late answer');
        expect(runs).to.equal(1);
      } finally {
        await peer?.close();
      }
    });

    it('a single flight whose work answers nothing shares nothing: the next caller runs it again', async () => {
      let runs = 0;
      const nothing = async () => {
        runs++;
        return undefined;
      };
      expect(await state.singleFlight('flight-2', 60, 2_000, nothing)).to.equal(undefined);
      expect(await state.singleFlight('flight-2', 60, 2_000, async () => (runs++, 'now'))).to.equal('now');
      expect(runs).to.equal(2);
    });
  });
}
