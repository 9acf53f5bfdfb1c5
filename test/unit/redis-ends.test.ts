// An end waits for a replica's confirmation REPLICA_WAIT_MS at most, whatever the connection WAIT
// is sent on does with it: a Cluster that is not ready keeps the command queued until it is back.
import { expect } from 'chai';
import type { Cluster, Redis } from 'ioredis';
import { EndWriter, REPLICA_WAIT_MS } from '../../gateway/state/redis-ends.js';

/** A transaction whose commands chain and whose exec answers `answer` (never, when undefined). */
function transaction(answer: unknown[] | undefined) {
  const tx: Record<string, unknown> = {};
  for (const command of ['zadd', 'publish', 'spublish', 'role', 'set', 'wait']) tx[command] = () => tx;
  tx.exec = () => (answer ? Promise.resolve(answer) : new Promise(() => undefined));
  return tx;
}

describe('redis-ends: EndWriter.end while the replica\u2019s confirmation never comes back', function () {
  this.timeout(10_000);

  it('answers "primary only" within REPLICA_WAIT_MS and the lease, and says why', async () => {
    const warned: string[] = [];
    const primary = {
      status: 'ready',
      multi: () =>
        transaction([
          [null, 1],
          [null, 1],
          [null, ['master', 0, [['127.0.0.1', '6380', '0']]]],
        ]),
    };
    const queuedForever = { on: () => undefined, pipeline: () => transaction(undefined) };
    const writer = new EndWriter({
      client: primary as unknown as Redis | Cluster,
      writer: () => queuedForever as unknown as Redis | Cluster,
      publish: 'spublish',
      endedKey: 'ended',
      durableKey: 'durable',
      obs: {
        log: { warn: (o: { reason: string }) => warned.push(o.reason), info: () => undefined },
        metrics: { sessionEndsNotDurable: { inc: () => undefined } },
      } as never,
      where: 'cluster',
      leaseMs: 1_000,
      endWaitMs: 1_000,
      lost: () => undefined,
    });
    const started = performance.now();
    expect(await writer.end('session-1', Math.floor(Date.now() / 1000) + 60)).to.equal('primary only');
    expect(performance.now() - started).to.be.within(REPLICA_WAIT_MS - 50, REPLICA_WAIT_MS + 1_500);
    expect(warned).to.deep.equal(['replica_unconfirmed']);
  });
});
