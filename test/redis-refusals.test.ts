// Redis refusing the gateway's sign-in, as an operator meets it: the shared state is not ready,
// /readyz and the warning say which servers refused and which variables to check, and no password
// is shown anywhere.
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { createObservability } from '../gateway/observability/observability.js';
import { redisState } from '../gateway/state/redis-state.js';
import type { RedisTarget } from '../config/redis.js';
import { asNodes, startRedis, startRedisCluster, startSentinelRedis, type RedisCluster, type SentinelRedis, type TestRedis } from './support/redis.js';
import { sleep } from './support/wait.js';

const DATA = { username: 'chat-gateway', password: 'data-secret-p@ss#word' };
const SENTINEL = { sentinelUsername: 'chat-gateway', sentinelPassword: 'sentinel-secret-p@ss#word' };
const WRONG = 'wrong-secret-p@ss#word';

/** What the state says after its first connection attempts, and every line it logged meanwhile. */
async function refusedAs(target: string | RedisTarget): Promise<{ detail: string; logged: string }> {
  let logged = '';
  const destination = new Writable({ write: (chunk: Buffer, _enc, done) => ((logged += chunk.toString()), done()) });
  const state = await redisState(target, createObservability({ level: 'info', destination }), { downLogEveryMs: 60_000 });
  try {
    await sleep(3_000);
    const ready = state.ready();
    expect(ready.ok, ready.detail).to.equal(false);
    return { detail: ready.detail, logged };
  } finally {
    await state.close();
  }
}

describe('Redis refusing the gateway\u2019s sign-in', function () {
  this.timeout(60_000);
  let one: TestRedis;
  let sentinel: SentinelRedis;
  let cluster: RedisCluster;
  before(async () => {
    [one, sentinel, cluster] = await Promise.all([
      startRedis({ auth: DATA }),
      startSentinelRedis({ auth: { ...DATA, ...SENTINEL } }),
      startRedisCluster({ auth: DATA }),
    ]);
  });
  after(() => Promise.all([one?.stop(), sentinel?.stop(), cluster?.stop()]));

  const sentinelTarget = (o: Partial<typeof DATA & typeof SENTINEL>): RedisTarget => ({
    sentinel: { sentinels: asNodes(sentinel.sentinels), name: sentinel.name, tls: false, ...DATA, ...SENTINEL, ...o },
  });
  const noSecret = (r: { detail: string; logged: string }) => {
    for (const secret of [DATA.password, SENTINEL.sentinelPassword, WRONG, encodeURIComponent(WRONG)]) {
      expect(r.detail).to.not.include(secret);
      expect(r.logged).to.not.include(secret);
    }
  };

  it('one server (REDIS_URL): a wrong password names REDIS_URL', async () => {
    const r = await refusedAs(one.url.replace(encodeURIComponent(DATA.password), encodeURIComponent(WRONG)));
    expect(r.detail).to.include('WRONGPASS').and.include('check the user and password in REDIS_URL');
    expect(r.logged).to.include('shared-state-unreachable');
    noSecret(r);
  });

  it('Sentinel: the sentinels\u2019 refusal names their variables, a data node\u2019s the data nodes\u2019', async () => {
    const atSentinels = await refusedAs(sentinelTarget({ sentinelPassword: WRONG }));
    expect(atSentinels.detail).to.include('WRONGPASS').and.include('REDIS_SENTINEL_USERNAME and REDIS_SENTINEL_PASSWORD');
    const withoutUser = await refusedAs(sentinelTarget({ sentinelUsername: undefined }));
    expect(withoutUser.detail).to.include('REDIS_SENTINEL_USERNAME and REDIS_SENTINEL_PASSWORD');
    const atData = await refusedAs(sentinelTarget({ password: WRONG }));
    expect(atData.detail).to.include('WRONGPASS').and.include('REDIS_USERNAME and REDIS_PASSWORD');
    for (const r of [atSentinels, withoutUser, atData]) noSecret(r);
  });

  it('Cluster: a wrong password names the data nodes\u2019 variables', async () => {
    const r = await refusedAs({ cluster: { nodes: asNodes(cluster.nodesSetting), tls: false, ...DATA, password: WRONG } });
    expect(r.detail).to.include('WRONGPASS').and.include('REDIS_USERNAME and REDIS_PASSWORD');
    noSecret(r);
  });
});
