// A Redis unreachable from the start is no longer silent. The gateway (its own
// process, real sockets) logs it once the first connection attempt has had its time and again
// while it lasts, /metrics shows it, and /readyz answers 503 naming it, with everything else up:
// an instance that cannot check sessions answers every signed-in user 503, so it is not ready.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startIdp, type TestIdp } from '../sandbox/idp.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../sandbox/open-webui.js';
import { demoIdentityProviders } from '../sandbox/demo-realm.js';
import { redisState } from '../gateway/state/redis-state.js';
import { SESSION_CHECK_UNAVAILABLE } from '../gateway/http/respond.js';
import { capturingObservability, gatewayProcess } from './support/gateway-harness.js';
import { CLIENT_ID, CLIENT_SECRET, signIn, worldEnv, browse } from './support/cookie-jar.js';
import { freePort } from './support/raw-http.js';
import { sleep } from './support/wait.js';

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
