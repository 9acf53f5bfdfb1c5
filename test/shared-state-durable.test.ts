// No ended session comes back when Redis loses a server: an end is answered once a replica has it
// (Sentinel and Cluster, real redis-servers), a replica that stalls delays sign-outs 2 s at most,
// and what an instance knows that Redis lost goes back to Redis and to every other instance.
import { expect } from 'chai';
import { Redis } from 'ioredis';
import type { RedisTarget } from '../config/redis.js';
import { redisState } from '../gateway/state/redis-state.js';
import { LEASE_MS } from '../gateway/state/redis-sync.js';
import type { SharedState } from '../gateway/state/shared-state.js';
import { capturingObservability } from './support/gateway-harness.js';
import {
  asNodes,
  cutOffProxy,
  redisCli,
  startRedis,
  startRedisCluster,
  startSentinelRedis,
  type RedisCluster,
  type SentinelRedis,
  type TestRedis,
  type TopologyRedis,
} from './support/redis.js';
import { sleep, until } from './support/wait.js';

const epoch = () => Math.floor(Date.now() / 1000);
const session = (id: string) => ({ id, sub: 'alice', iat: epoch() - 10 });

async function openState(target: string | RedisTarget, keyPrefix = 'durable:', obs = capturingObservability()): Promise<SharedState> {
  const state = await redisState(target, obs, { keyPrefix });
  const deadline = Date.now() + 10_000;
  while (!state.ready().ok) {
    if (Date.now() > deadline) throw new Error(`not ready: ${state.ready().detail}`);
    await sleep(20);
  }
  return state;
}

interface Topology {
  name: string;
  start(): Promise<void>;
  target(): RedisTarget;
  /** the primary holding the ended sessions, and a replica of it */
  primary(): TopologyRedis;
  replica(): TopologyRedis;
  settled(): Promise<void>;
  stop(): Promise<void>;
}

let sentinel: SentinelRedis;
let cluster: RedisCluster;
const TOPOLOGIES: Topology[] = [
  {
    name: 'Sentinel',
    start: async () => void (sentinel = await startSentinelRedis()),
    target: () => ({ sentinel: { sentinels: asNodes(sentinel.sentinels), name: sentinel.name, tls: false } }),
    primary: () => sentinel.primary(),
    replica: () => sentinel.nodes.find((n) => n.alive() && n !== sentinel.primary())!,
    settled: () => sentinel.settled(),
    stop: () => sentinel.stop(),
  },
  {
    name: 'Cluster',
    start: async () => void (cluster = await startRedisCluster()),
    target: () => ({ cluster: { nodes: asNodes(cluster.nodesSetting), tls: false } }),
    primary: () => cluster.primaryOf('durable:ended'),
    replica() {
      const primary = cluster.primaryOf('durable:ended');
      // the live node whose INFO names the primary's port
      const follows = new RegExp(`^master_port:${primary.port}\\s*$`, 'm');
      return cluster.nodes.find((n) => n.alive() && n !== primary && follows.test(redisCli(n.port, 'info', 'replication')))!;
    },
    settled: () => cluster.settled(),
    stop: () => cluster.stop(),
  },
];

for (const topology of TOPOLOGIES) {
  describe(`ended sessions survive losing a Redis server: ${topology.name}`, function () {
    this.timeout(60_000);
    const opened: SharedState[] = [];
    const open = async () => {
      const s = await openState(topology.target());
      opened.push(s);
      return s;
    };
    before(() => topology.start());
    after(async () => {
      await Promise.all(opened.map((s) => s.close()));
      await topology.stop();
    });

    it('a replica that stops confirming delays sign-outs 2 s at most, however many there are; each is answered as on the primary only, logged and counted', async () => {
      const obs = capturingObservability();
      const a = await openState(topology.target(), 'durable:', obs);
      opened.push(a);
      const replica = topology.replica();
      replica.freeze();
      try {
        const started = Date.now();
        const outcomes = await Promise.all(Array.from({ length: 5 }, (_, i) => a.end({ id: `stalled-${i}` }, epoch() + 600)));
        expect(Date.now() - started).to.be.within(1_500, 3_000);
        expect(outcomes).to.deep.equal(Array(5).fill('primary only'));
        const counted = (await obs.metrics.sessionEndsNotDurable.get()).values.find((v) => v.labels.reason === 'replica_unconfirmed')?.value;
        expect(counted).to.equal(5);
        expect(obs.lines.filter((l) => l.event === 'session-end-not-durable' && l.reason === 'replica_unconfirmed')).to.have.length(5);
        for (let i = 0; i < 5; i++) expect(a.isEnded(session(`stalled-${i}`))).to.equal(true);
      } finally {
        replica.thaw();
      }
    });

    it('a sign-out answers once the replica has its end: the primary killed right after, the promoted replica holds it though the instance that ended it is gone', async () => {
      const a = await open();
      const replica = topology.replica();
      replica.freeze();
      const ending = a.end({ id: 'kept' }, epoch() + 600);
      const first = await Promise.race([ending.then(() => 'answered' as const), sleep(300).then(() => 'waiting' as const)]);
      if (first === 'answered') {
        // answered before any replica could have it: the primary's loss takes it along
        await a.close();
        await topology.primary().stop();
        replica.thaw();
      } else {
        replica.thaw();
        await ending;
        await a.close();
        await topology.primary().stop();
      }
      await topology.settled();
      const c = await open();
      expect(first, 'the sign-out waited for the replica').to.equal('waiting');
      expect(c.isEnded(session('kept')), 'a new instance reads it from the promoted replica').to.equal(true);
    });
  });
}

describe('ends an instance holds and Redis lacks reach Redis and every other instance', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  let admin: Redis;
  const opened: SharedState[] = [];
  after(async () => {
    admin?.disconnect();
    await Promise.all(opened.map((s) => s.close()));
    await redis?.stop();
  });

  it('a sign-out at an instance cut off from Redis answers once its end is written, when Redis is back within the wait: the other instances know it then', async () => {
    redis ??= await startRedis();
    const toA = await cutOffProxy(redis.port);
    try {
      const a = await openState(`redis://127.0.0.1:${toA.port}/0`, 'cut:');
      const b = await openState(redis.url, 'cut:');
      opened.push(a, b);
      toA.cut();
      const deadline = Date.now() + 5_000;
      while (a.ready().ok && Date.now() < deadline) await sleep(20);
      const started = Date.now();
      const ending = a.end({ id: 'while-cut' }, epoch() + 600);
      await sleep(300);
      expect(b.isEnded(session('while-cut')), 'not written yet').to.equal(false);
      toA.reopen();
      expect(await ending, 'written (no replica here)').to.equal('durable');
      expect(Date.now() - started, 'answered a lease after it was written, once A was back').to.be.at.least(300 + LEASE_MS);
      expect(b.isEnded(session('while-cut')), 'the other instance knows it when the sign-out answers').to.equal(true);
    } finally {
      await toA.close();
    }
  });

  it('an instance that re-read a Redis lacking an end (a replica promoted before it had it) learns it when the instance that ended it is back', async () => {
    redis ??= await startRedis();
    admin = new Redis(redis.url);
    const [toA, toB] = [await cutOffProxy(redis.port), await cutOffProxy(redis.port)];
    try {
      const a = await openState(`redis://127.0.0.1:${toA.port}/0`, 'lost:');
      const b = await openState(`redis://127.0.0.1:${toB.port}/0`, 'lost:');
      opened.push(a, b);
      // B is cut off when A ends the session: B never hears its message.
      toB.cut();
      await until('B to notice', () => !b.ready().ok, { everyMs: 20 });
      await a.end({ id: 'lost' }, epoch() + 600);
      // Then A is cut off, and Redis loses the end (a replica promoted before it had it).
      toA.cut();
      await until('A to notice', () => !a.ready().ok, { everyMs: 20 });
      expect(await admin.zrem('lost:ended', 'id:lost')).to.equal(1);
      // B comes back first and re-reads Redis, which lacks it.
      toB.reopen();
      await until('B back', () => b.ready().ok, { everyMs: 20 });
      expect(b.isEnded(session('lost')), 'B re-read a Redis that lacks it').to.equal(false);
      // A comes back: it writes the end back, and B learns it at once, not at its next reconnection.
      toA.reopen();
      await until('A back', () => a.ready().ok, { everyMs: 20 });
      await until('B to learn the end A wrote back', () => b.isEnded(session('lost')) === true, { ms: 1_000, everyMs: 20 });
      expect(await admin.zscore('lost:ended', 'id:lost')).to.not.equal(null);
    } finally {
      await Promise.all([toA.close(), toB.close()]);
    }
  });
});
