// The mirror's lease asked about while Redis is away: each renewal gives up within the lease, and
// what it waited on leaves with it, so an outage with steady traffic holds no more memory at its
// end than at its start.
import { EventEmitter } from 'node:events';
import { expect } from 'chai';
import { MirrorSync, type MirrorSyncParts } from '../../gateway/state/redis-sync.js';

/** Connections that never come back (Redis away), with a subscription whose heartbeat is never answered. */
function awayParts(): MirrorSyncParts {
  const connection = () => Object.assign(new EventEmitter(), { status: 'reconnecting' });
  const subscription = Object.assign(connection(), { heartbeat: async () => false });
  return {
    to: { url: 'redis://127.0.0.1:9/0' },
    conns: { client: connection(), subscription, primary: () => undefined, refresh: () => undefined },
    endedKey: 'ended',
    ended: {},
    ends: {},
    health: { set: () => undefined },
    where: 'redis://127.0.0.1:9/0',
    log: () => undefined,
  } as unknown as MirrorSyncParts;
}

describe('redis-sync: MirrorSync.renew while Redis is away', function () {
  this.timeout(10_000);

  it('answers untrusted within the lease each time, and keeps nothing of the looks it ended', async () => {
    const sync = new MirrorSync(awayParts());
    try {
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        expect(await sync.renew()).to.equal(false);
        expect(performance.now() - started).to.be.lessThan(1_500);
      }
      expect((sync as unknown as { syncedWaiters: Set<unknown> }).syncedWaiters.size).to.equal(0);
    } finally {
      sync.close();
    }
  });
});
