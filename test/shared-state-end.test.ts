// A session ended at one instance is ended at every instance by the time the sign-out answers
// (SharedState.end settles once Redis has taken it and the lease has run out): two shared states on
// a real redis-server, Redis made slow to take writes with CLIENT PAUSE. An end Redis does not take
// within the wait is answered as not written, logged and counted, and written once Redis takes it.
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { redisState } from '../gateway/state/redis-state.js';
import type { SharedState } from '../gateway/state/shared-state.js';
import { capturingObservability, type LogLine } from './support/gateway-harness.js';
import type { Observability } from '../gateway/observability/observability.js';
import { startRedis, type TestRedis } from './support/redis.js';
import { sleep } from './support/wait.js';

describe('an ended session, as every instance learns it (REDIS_URL)', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  let a: SharedState;
  let b: SharedState;
  let admin: Redis;
  const obsA = capturingObservability();
  const epoch = () => Math.floor(Date.now() / 1000);
  const session = (id: string) => ({ id, sub: 'alice', iat: epoch() - 10 });

  before(async () => {
    redis = await startRedis();
    // A waits 2 s at most for a Redis it cannot reach to take an end (the gateway: 10 s).
    [a, b] = await Promise.all([redisState(redis.url, obsA, { endWaitMs: 2_000 }), redisState(redis.url, capturingObservability())]);
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

  /** gateway_session_ends_not_durable_total{reason} */
  async function notDurable(obs: Observability, reason: string): Promise<number> {
    const metric = await obs.metrics.sessionEndsNotDurable.get();
    return metric.values.find((v) => v.labels.reason === reason)?.value ?? 0;
  }
  const warned = (lines: LogLine[], reason: string) => lines.filter((l) => l.event === 'session-end-not-durable' && l.reason === reason);

  /** B's mirror within `ms` (its subscriber reads the message Redis published before answering A) */
  async function endedAtB(id: string, ms = 100): Promise<boolean | undefined> {
    const deadline = Date.now() + ms;
    while (b.isEnded(session(id)) !== true && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    return b.isEnded(session(id));
  }

  it('end() settles only once Redis has the ended session: the other instance knows it then', async () => {
    await admin.call('CLIENT', 'PAUSE', '400', 'WRITE');
    const started = Date.now();
    expect(await a.end({ id: 'session-1' }, epoch() + 600)).to.equal('durable');
    expect(Date.now() - started, 'settled before Redis took the write').to.be.at.least(300);
    expect(a.isEnded(session('session-1'))).to.equal(true);
    expect(await endedAtB('session-1', 0)).to.equal(true);
  });

  it('a Redis that takes neither the write nor fails holds a sign-out up until it takes it, within the wait: the other instance knows it then', async () => {
    await admin.call('CLIENT', 'PAUSE', '1500', 'WRITE');
    const started = Date.now();
    expect(await a.end({ id: 'session-2' }, epoch() + 600)).to.equal('durable');
    const waited = Date.now() - started;
    expect(waited, 'answered a lease after Redis took it').to.be.within(1_500 + 1_000, 2_000 + 1_000 + 1_000);
    expect(a.isEnded(session('session-2'))).to.equal(true);
    expect(await endedAtB('session-2', 0)).to.equal(true);
  });

  it('a Redis that takes the write only after the wait: answered as not written, logged and counted; written, and known to the others, once Redis takes it', async () => {
    const counted = () => notDurable(obsA, 'redis_unreachable');
    const before = await counted();
    await admin.call('CLIENT', 'PAUSE', '3500', 'WRITE');
    const started = Date.now();
    expect(await a.end({ id: 'session-4' }, epoch() + 600)).to.equal('not written');
    expect(Date.now() - started, 'the wait').to.be.within(1_800, 3_000);
    expect(a.isEnded(session('session-4')), 'refused here at once').to.equal(true);
    expect(await counted()).to.equal(before + 1);
    expect(warned(obsA.lines, 'redis_unreachable'), 'logged with its reason').to.have.length(1);
    expect(await endedAtB('session-4', 5_000), 'the others learn it once Redis takes it').to.equal(true);
    const late = () => obsA.lines.filter((l) => /answered as not yet written are written to Redis now/.test(l.msg ?? ''));
    const deadline = Date.now() + 2_000;
    while (!late().length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(late(), 'its late write logged').to.have.length(1);
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
