// Several instances: two gateway processes sharing SESSION_SECRET and REDIS_URL, a real
// redis-server started for this file, the real oidc-provider and the chat front-end stand-in. A
// session ended at one instance is ended at the other; the tenant-lookup limit is one limit; the
// realm's back-channel logout reaches every instance; Redis stopped mid-run fails cookie sessions
// closed (503) while bearer tokens keep working, and everything comes back with Redis.
import { expect } from 'chai';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { browse, signIn, worldEnv, CLIENT_ID, CLIENT_SECRET } from '../support/cookie-jar.js';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { logoutThroughIdp } from '../../sandbox/idp-browser.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { freePort } from '../support/raw-http.js';
import { gatewayProcess } from '../support/gateway-harness.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { SESSION_CHECK_UNAVAILABLE } from '../../gateway/http/respond.js';
import { until } from '../support/wait.js';

describe('sessions shared by several instances through REDIS_URL', function () {
  this.timeout(60_000);
  let redis: TestRedis;
  let idp: TestIdp;
  let upstream: OpenWebUIStandIn;
  const gateways: Array<{ child: ChildProcess; url: string }> = [];
  let a: string;
  let b: string;

  before(async () => {
    redis = await startRedis();
    upstream = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: false, groups: ['acme', 'globex', 'initech'] });
    const [portA, portB] = [await freePort(), await freePort()];
    // A is also the address the users (and the realm) know: the load balancer's, in production.
    a = `http://127.0.0.1:${portA}`;
    b = `http://127.0.0.1:${portB}`;
    idp = await startIdp({
      clients: [
        {
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          redirect_uris: [`${a}/auth/callback`],
          post_logout_redirect_uris: [`${a}/auth/login`],
          backchannel_logout_uri: `${a}/auth/backchannel-logout`,
        },
      ],
      accessTokenTtl: 300,
    });
    const providersFile = join(mkdtempSync(join(tmpdir(), 'shared-')), 'providers.json');
    writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
    const env = {
      ...worldEnv({ upstreamUrl: upstream.url, publicUrl: a, issuer: idp.issuer, providersFile }),
      HOST: '127.0.0.1',
      TENANT_LOOKUP_RATE_LIMIT: '4',
      TENANT_LOOKUP_RATE_WINDOW_SECONDS: '600',
      REDIS_URL: redis.url,
      DRIFT_CHECK_SECONDS: '0',
    };
    for (const port of [portA, portB]) {
      const gw = await gatewayProcess({ ...env, PORT: String(port) });
      gateways.push({ child: gw.child, url: `http://127.0.0.1:${gw.port}` });
    }
    for (const url of [a, b]) await until(`${url} in sync with Redis`, async () => (await readiness(url)).sharedState!.ok, { ms: 10_000, everyMs: 100 });
  });

  after(async () => {
    for (const g of gateways) g.child.kill('SIGTERM');
    await Promise.all([idp?.close(), upstream?.close(), redis?.stop()]);
  });

  async function readiness(url: string): Promise<Record<string, { ok: boolean; detail: string }>> {
    const res = await fetch(`${url}/readyz`);
    return ((await res.json()) as { checks: Record<string, { ok: boolean; detail: string }> }).checks;
  }
  const atB = (jar: Parameters<typeof browse>[0], path: string) => browse(jar, `${b}${path}`);

  it('a session signed in at A is served at B; logged out at A, its old cookie is logged out at B too', async () => {
    const { jar } = await signIn(a, 'alice');
    const stolen = jar.clone();
    expect((await atB(jar, '/api/v1/auths/')).status).to.equal(200);
    await browse(jar, '/auth/logout');
    expect((await atB(stolen, '/api/v1/auths/')).status).to.equal(401);
  });

  it("the chat front-end's sign-out at B ends the session at A", async () => {
    const { jar } = await signIn(a, 'bob');
    const stolen = jar.clone();
    expect((await atB(jar, '/api/v1/auths/signout')).status).to.equal(200);
    expect((await browse(stolen, '/api/v1/auths/')).status).to.equal(401);
  });

  it("the realm's back-channel logout, posted to one instance, ends the session on every instance", async () => {
    const { jar, idpJar } = await signIn(a, 'alice');
    expect((await atB(jar, '/api/v1/auths/')).status).to.equal(200);
    await logoutThroughIdp(`${idp.issuer}/protocol/openid-connect/logout?client_id=${CLIENT_ID}`, idpJar);
    await until('B to learn of the logout', async () => (await atB(jar, '/api/v1/auths/')).status === 401, { ms: 3_000, everyMs: 100 });
  });

  it('the tenant-lookup rate limit is one limit across instances', async () => {
    const lookup = (url: string) => fetch(`${url}/api/v1/auth-providers/tenants/acme`);
    expect((await lookup(a)).status).to.equal(200);
    expect((await lookup(b)).status).to.equal(200);
    expect((await lookup(a)).status).to.equal(200);
    expect((await lookup(b)).status).to.equal(200);
    expect((await lookup(a)).status).to.equal(429);
    expect((await lookup(b)).status).to.equal(429);
  });

  it('Redis stopped mid-run: cookie sessions get 503 (not let in, not logged out), bearer tokens work, /readyz and metrics say so; a logout meanwhile still reaches every instance once Redis is back', async () => {
    const kept = await signIn(a, 'alice');
    const ended = await signIn(a, 'bob');
    const endedCopy = ended.jar.clone();
    const bearer = await idp.accessTokenFor('alice', CLIENT_ID);
    await redis.stop();
    await until('B to notice Redis is gone', async () => !(await readiness(b)).sharedState!.ok, { ms: 10_000, everyMs: 100 });

    const refused = await atB(kept.jar, '/api/v1/auths/');
    expect(refused.status).to.equal(503);
    expect(refused.json<{ detail: string }>().detail).to.equal(SESSION_CHECK_UNAVAILABLE);
    expect(refused.headers.get('retry-after')).to.equal('5');
    const page = await browse(kept.jar, `${b}/`, { headers: { accept: 'text/html' } });
    expect(page.status).to.equal(503);
    expect(page.text).to.include('Your sign-in cannot be checked right now');
    expect((await fetch(`${b}/api/v1/auths/`, { headers: { authorization: `Bearer ${bearer}` } })).status, 'bearer JWT').to.equal(200);
    expect((await fetch(`${b}/api/v1/auth-providers/`)).status, 'anonymous routes').to.equal(200);
    const ready = await fetch(`${b}/readyz`);
    const body = (await ready.json()) as { ready: boolean; checks: { sharedState: { ok: boolean; detail: string } } };
    expect(body.checks.sharedState.detail).to.match(/Redis redis:\/\/127\.0\.0\.1:\d+\/0 unreachable/);
    expect(await (await fetch(`${b}/metrics`)).text())
      .to.match(/gateway_shared_state_up 0/)
      .and.match(/gateway_session_checks_unavailable_total [1-9]/);

    // Logged out at A while Redis is down: A forgets it at once, the others learn it on reconnection.
    await browse(ended.jar, '/auth/logout');
    await redis.start(); // empty: nothing persisted
    for (const url of [a, b]) await until(`${url} back in sync`, async () => (await readiness(url)).sharedState!.ok, { ms: 10_000, everyMs: 100 });
    expect((await atB(endedCopy, '/api/v1/auths/')).status, 'the session ended while Redis was down').to.equal(401);
    expect((await atB(kept.jar, '/api/v1/auths/')).status, 'the other session is back').to.equal(200);
    expect(await (await fetch(`${b}/metrics`)).text()).to.match(/gateway_shared_state_up 1/);
  });
});
