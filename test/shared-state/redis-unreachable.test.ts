// A Redis unreachable from the start is no longer silent. The gateway (its own
// process, real sockets) logs it once the first connection attempt has had its time and again
// while it lasts, /metrics shows it, and /readyz answers 503 naming it, with everything else up:
// an instance that cannot check sessions answers every signed-in user 503, so it is not ready.
// A server that takes connections and never answers (a hung process's listen backlog) is treated
// as lost within a second on every connection, and one such sentinel or cluster node among good
// ones holds nothing up.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { redisState } from '../../gateway/state/redis-state.js';
import { SESSION_CHECK_UNAVAILABLE } from '../../gateway/http/respond.js';
import { capturingObservability, gatewayProcess } from '../support/gateway-harness.js';
import { CLIENT_ID, CLIENT_SECRET, signIn, worldEnv, browse } from '../support/cookie-jar.js';
import { freePort } from '../support/raw-http.js';
import { sleep } from '../support/wait.js';
import { asNodes, silentServer, startRedisCluster, startSentinelRedis, type SilentServer } from '../support/redis.js';
import type { RedisTarget } from '../../config/redis.js';
import type { SharedState } from '../../gateway/state/shared-state.js';

describe('Redis unreachable from the start', function () {
  this.timeout(60_000);
  let idp: TestIdp;
  let upstream: OpenWebUIStandIn;
  let gw: Awaited<ReturnType<typeof gatewayProcess>>;
  let url: string;
  let dir: string;

  before(async () => {
    upstream = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: false, groups: ['acme', 'globex'] });
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    idp = await startIdp({
      clients: [
        { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${url}/auth/callback`], post_logout_redirect_uris: [`${url}/auth/login`] },
      ],
    });
    dir = mkdtempSync(join(tmpdir(), 'redis-down-'));
    const providersFile = join(dir, 'providers.json');
    writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
    const nothing = await freePort(); // nobody listens there
    gw = await gatewayProcess({
      ...worldEnv({ upstreamUrl: upstream.url, publicUrl: url, issuer: idp.issuer, providersFile }),
      HOST: '127.0.0.1',
      PORT: String(port),
      DRIFT_CHECK_SECONDS: '0',
      REDIS_URL: `redis://127.0.0.1:${nothing}/0`,
    });
  });
  after(async () => {
    gw?.child.kill('SIGKILL');
    await Promise.all([idp?.close(), upstream?.close()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a warning line at start, /metrics says so, /readyz is 503 naming Redis while the rest is up, signed-in requests 503', async () => {
    const deadline = Date.now() + 5_000;
    while (!gw.output().includes('shared-state-unreachable') && Date.now() < deadline) await sleep(100);
    const line = gw
      .output()
      .split('\n')
      .find((l) => l.includes('shared-state-unreachable'));
    expect(line, gw.output().slice(-2000)).to.be.a('string');
    const warning = JSON.parse(line!) as { level: number; msg: string; sinceStart: boolean };
    expect(warning.level).to.equal(40);
    expect(warning.sinceStart).to.equal(true);
    expect(warning.msg).to.match(/^Redis redis:\/\/127\.0\.0\.1:\d+\/0 unreachable since start .*signed-in requests answer 503/);

    const ready = await fetch(`${url}/readyz`);
    const body = (await ready.json()) as { ready: boolean; checks: Record<string, { ok: boolean; detail: string }> };
    expect(ready.status).to.equal(503);
    expect(body.ready).to.equal(false);
    expect(body.checks.sharedState!.ok).to.equal(false);
    expect(body.checks.sharedState!.detail).to.match(/Redis redis:\/\/127\.0\.0\.1:\d+\/0 unreachable for \d+ s \(never reached since start\)/);
    for (const other of ['upstream', 'identityProvider', 'catalog']) expect(body.checks[other]!.ok, `${other}: ${body.checks[other]!.detail}`).to.equal(true);

    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).to.match(/^gateway_shared_state_up 0$/m);
    const down = Number(/^gateway_shared_state_unreachable_seconds (\S+)$/m.exec(metrics)?.[1]);
    expect(down).to.be.greaterThan(1);

    const { jar } = await signIn(url, 'alice');
    const refused = await browse(jar, `${url}/api/v1/auths/`);
    expect(refused.status).to.equal(503);
    expect(refused.json<{ detail: string }>().detail).to.equal(SESSION_CHECK_UNAVAILABLE);
  });

  it('and again every so often while it lasts', async () => {
    const obs = capturingObservability();
    const nothing = await freePort();
    const state = await redisState(`redis://user:pw@127.0.0.1:${nothing}/0`, obs, { downLogEveryMs: 400 });
    try {
      await sleep(3_700);
      const warnings = obs.lines.filter((l) => l.event === 'shared-state-unreachable');
      expect(warnings.length).to.be.at.least(3);
      expect(state.ready().ok).to.equal(false);
      expect(JSON.stringify(obs.lines)).to.not.include('pw@');
    } finally {
      await state.close();
    }
    const after = obs.lines.length;
    await sleep(900);
    expect(
      obs.lines.slice(after).filter((l) => l.event === 'shared-state-unreachable'),
      'quiet once closed',
    ).to.deep.equal([]);
  });
});

describe('a Redis server that takes connections and never answers', function () {
  this.timeout(60_000);
  let silent: SilentServer;
  before(async () => (silent = await silentServer()));
  after(() => silent?.close());
  const epoch = () => Math.floor(Date.now() / 1000);

  async function readyWithin(state: SharedState, ms: number): Promise<number> {
    const started = Date.now();
    while (!state.ready().ok) {
      if (Date.now() - started > ms) throw new Error(`not ready within ${ms} ms: ${state.ready().detail}`);
      await sleep(20);
    }
    return Date.now() - started;
  }

  it('REDIS_URL: not ready, saying why, within the second it is given; lookups and a sign-out are bounded; nothing is left open on close', async () => {
    const obs = capturingObservability();
    const state = await redisState(`redis://127.0.0.1:${silent.port}/0`, obs, { endWaitMs: 1_500 });
    try {
      await sleep(1_500);
      expect(state.ready().ok).to.equal(false);
      expect(state.ready().detail).to.match(/Socket timeout|did not answer/);
      expect(state.isEnded({ id: 'x', sub: 'alice', iat: epoch() - 10 }), 'cannot be known').to.equal(undefined);
      const started = Date.now();
      const [token, first, end] = await Promise.all([state.idToken('x'), state.firstUse('jti-x', epoch() + 60), state.end({ id: 'x' }, epoch() + 600)]);
      expect([token, first, end]).to.deep.equal([undefined, true, 'not written']);
      expect(Date.now() - started, 'the sign-out’s wait bounds it all').to.be.within(1_400, 2_500);
    } finally {
      await state.close();
    }
  });

  it('Sentinel: a silent sentinel listed first is passed over within a second', async () => {
    const sentinel = await startSentinelRedis();
    const target: RedisTarget = {
      sentinel: { sentinels: [{ host: '127.0.0.1', port: silent.port }, ...asNodes(sentinel.sentinels)], name: sentinel.name, tls: false },
    };
    const state = await redisState(target, capturingObservability());
    try {
      const took = await readyWithin(state, 6_000);
      console.log(`    [silent] Sentinel, the first sentinel silent: ready after ${took} ms`);
    } finally {
      await state.close();
      await sentinel.stop();
    }
  });

  it('Cluster: a silent node listed first is passed over within a second', async () => {
    const cluster = await startRedisCluster();
    const target: RedisTarget = { cluster: { nodes: [{ host: '127.0.0.1', port: silent.port }, ...asNodes(cluster.nodesSetting)], tls: false } };
    const state = await redisState(target, capturingObservability());
    try {
      const took = await readyWithin(state, 6_000);
      console.log(`    [silent] Cluster, the first node silent: ready after ${took} ms`);
    } finally {
      await state.close();
      await cluster.stop();
    }
  });
});
