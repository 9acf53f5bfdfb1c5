// A session ended at one instance is ended at every instance by the time the sign-out answers
// (SharedState.end settles once Redis has taken it): two shared states on a real redis-server,
// Redis made slow to take writes with CLIENT PAUSE.
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { redisState } from '../gateway/state/redis-state.js';
import type { SharedState } from '../gateway/state/shared-state.js';
import { capturingObservability } from './support/gateway-harness.js';
import { startRedis, type TestRedis } from './support/redis.js';
import { sleep } from './support/wait.js';

describe('an ended session, as every instance learns it (REDIS_URL)', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  let a: SharedState;
  let b: SharedState;
  let admin: Redis;
  const epoch = () => Math.floor(Date.now() / 1000);
  const session = (id: string) => ({ id, sub: 'alice', iat: epoch() - 10 });

  before(async () => {
    redis = await startRedis();
    [a, b] = await Promise.all([redisState(redis.url, capturingObservability()), redisState(redis.url, capturingObservability())]);
    admin = new Redis(redis.url);
    for (const s of [a, b]) {
      const deadline = Date.now() + 5_000;
      while (!s.ready().ok && Date.now() < deadline) await sleep(50);
      expect(s.ready().ok).to.equal(true);
    }
  });
  after(async () => {
    admin?.disconnect();
    await Promise.all([a?.close(), b?.close()]);
    await redis?.stop();
  });

  /** B's mirror within `ms` (its subscriber reads the message Redis published before answering A) */
  async function endedAtB(id: string, ms = 100): Promise<boolean | undefined> {
    const deadline = Date.now() + ms;
    while (b.isEnded(session(id)) !== true && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    return b.isEnded(session(id));
  }

  it('end() settles only once Redis has the ended session: the other instance knows it then', async () => {
    await admin.call('CLIENT', 'PAUSE', '400', 'WRITE');
    const started = Date.now();
    await a.end({ id: 'session-1' }, epoch() + 600);
    expect(Date.now() - started, 'settled before Redis took the write').to.be.at.least(300);
    expect(a.isEnded(session('session-1'))).to.equal(true);
    expect(await endedAtB('session-1')).to.equal(true);
  });

  it('a Redis that takes neither the write nor fails holds a sign-out up 2 s at most; the others learn it when Redis comes back', async () => {
    await admin.call('CLIENT', 'PAUSE', '3500', 'WRITE');
    const started = Date.now();
    await a.end({ id: 'session-2' }, epoch() + 600);
    const waited = Date.now() - started;
    expect(waited).to.be.within(1_800, 3_000);
    expect(a.isEnded(session('session-2'))).to.equal(true);
    expect(await endedAtB('session-2', 3_000)).to.equal(true);
  });
  it('a Redis that answers nothing holds a sign-out\u2019s ID token lookup and a logout token\u2019s replay check 2 s at most (the token counts as new)', async () => {
    await admin.call('CLIENT', 'PAUSE', '3500', 'ALL');
    const started = Date.now();
    const [token, first] = await Promise.all([a.idToken('session-3'), a.firstUse('jti-3', epoch() + 60)]);
    expect(Date.now() - started).to.be.within(1_800, 3_000);
    expect(token).to.equal(undefined);
    expect(first).to.equal(true);
    await sleep(1_800); // the pause ends before the next file's Redis use
  });
});
