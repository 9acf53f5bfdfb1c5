// An end answered at one instance is refused at every instance from that answer on, whatever
// happens to the connections in between: an instance trusts its mirror only while its lease runs
// (a heartbeat on its subscription, answered, sent less than LEASE_MS ago), and an end is answered
// a lease after Redis took it (gateway/state/redis-sync.ts, redis-ends.ts). Two shared states on a
// real redis-server, one of them reaching it through a proxy that partitions it (nothing closed,
// nothing answered).
import { expect } from 'chai';
import { redisState } from '../gateway/state/redis-state.js';
import { LEASE_MS } from '../gateway/state/redis-sync.js';
import type { SharedState } from '../gateway/state/shared-state.js';
import { capturingObservability } from './support/gateway-harness.js';
import { cutOffProxy, startRedis, type CutOffProxy, type TestRedis } from './support/redis.js';
import { sleep } from './support/wait.js';

const epoch = () => Math.floor(Date.now() / 1000);
const session = (id: string) => ({ id, sub: 'alice', iat: epoch() - 10 });

async function openState(url: string): Promise<SharedState> {
  const state = await redisState(url, capturingObservability(), { keyPrefix: 'lease:' });
  const deadline = Date.now() + 10_000;
  while (!state.ready().ok) {
    if (Date.now() > deadline) throw new Error(`not ready: ${state.ready().detail}`);
    await sleep(20);
  }
  return state;
}

describe('an end answered at one instance is refused at every instance from then on (REDIS_URL)', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  let toB: CutOffProxy;
  let a: SharedState;
  let b: SharedState;
  before(async () => {
    redis = await startRedis();
    toB = await cutOffProxy(redis.port);
    [a, b] = await Promise.all([openState(redis.url), openState(`redis://127.0.0.1:${toB.port}/0`)]);
  });
  after(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await toB?.close();
    await redis?.stop();
  });

  it('an instance partitioned from Redis stops trusting its mirror within the lease: an end answered elsewhere meanwhile is never served there, and is known there once the partition heals', async () => {
    expect(b.isEnded(session('partitioned'))).to.equal(false);
    toB.stall();
    const stalledAt = Date.now();
    expect(await a.end({ id: 'partitioned' }, epoch() + 600)).to.equal('durable');
    expect(Date.now() - stalledAt, 'answered a lease after Redis took it').to.be.at.least(LEASE_MS);
    // From the answer on, B says "ended" or "cannot know", never "live".
    const seen = new Set<boolean | undefined>();
    for (const until = Date.now() + 1_500; Date.now() < until; await sleep(5)) seen.add(b.isEnded(session('partitioned')));
    expect([...seen]).to.not.include(false);
    expect(b.ready().ok, '/readyz says so').to.equal(false);
    toB.reopen();
    const deadline = Date.now() + 10_000;
    while (b.isEnded(session('partitioned')) !== true && Date.now() < deadline) await sleep(20);
    expect(b.isEnded(session('partitioned')), 'learnt once the partition heals').to.equal(true);
    expect(b.isEnded(session('another')), 'and trusted again').to.equal(false);
  });

  it('how long a partitioned instance goes on trusting its mirror: at most the lease and one heartbeat', async () => {
    while (!b.ready().ok) await sleep(20);
    toB.stall();
    const stalledAt = Date.now();
    try {
      while (b.isEnded(session('nobody')) === false && Date.now() - stalledAt < 5_000) await sleep(2);
      const trustedFor = Date.now() - stalledAt;
      console.log(`    [lease] a partitioned instance stopped trusting its mirror ${trustedFor} ms after the partition`);
      expect(trustedFor).to.be.at.most(LEASE_MS + 250 + 100);
    } finally {
      toB.reopen();
    }
    while (!b.ready().ok) await sleep(20);
  });

  it('a lease that only lapsed (this process stalled, Redis there) is renewed when asked: the check answers again within the lease, the connections the stall dropped included', async () => {
    while (!b.ready().ok) await sleep(20);
    // a busy event loop: no heartbeat is sent or heard meanwhile
    for (const until = Date.now() + LEASE_MS + 300; Date.now() < until;);
    expect(b.isEnded(session('stalled')), 'the lapsed lease cannot vouch for the mirror').to.equal(undefined);
    const askedAt = Date.now();
    await b.settle();
    expect(Date.now() - askedAt, 'within the lease').to.be.at.most(LEASE_MS + 50);
    expect(b.isEnded(session('stalled')), 'trusted again').to.equal(false);
  });

  it('asking cannot vouch for a partitioned mirror: settle gives up within the lease and the check stays unknown', async () => {
    while (!b.ready().ok) await sleep(20);
    toB.stall();
    try {
      while (b.isEnded(session('cut off')) === false) await sleep(20);
      const askedAt = Date.now();
      await b.settle();
      expect(Date.now() - askedAt).to.be.at.most(LEASE_MS + 200);
      expect(b.isEnded(session('cut off'))).to.equal(undefined);
    } finally {
      toB.reopen();
    }
    while (!b.ready().ok) await sleep(20);
  });
});
