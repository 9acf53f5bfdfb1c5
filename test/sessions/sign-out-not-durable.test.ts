// A sign-out is told as it stands: two gateways in this process (each its own connections to a
// real redis-server and its own mirror, as two instances), the real oidc-provider, the chat
// front-end stand-in. While Redis cannot take the end, the sign-out waits (here 3 s; 10 s in the
// gateway) and, when Redis is back within it, answers as usual once every instance refuses the
// session; otherwise it goes on through the realm's logout all the same, back to a page that says
// the sign-out is still being written, logged and counted, and the end is written as soon as Redis
// is back.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { browse, gatewayClient, signIn, worldEnv, type Jar } from '../support/cookie-jar.js';
import { logoutThroughIdp } from '../../sandbox/idp-browser.js';
import { capturingObservability, type LogLine } from '../support/gateway-harness.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { loadSettings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { redisState } from '../../gateway/state/redis-state.js';
import { freePort } from '../support/raw-http.js';
import { sleep } from '../support/wait.js';

const END_WAIT_MS = 3_000;
const SIGNOUT = '/api/v1/auths/signout';

interface Instance {
  url: string;
  gateway: Gateway;
  lines: LogLine[];
}

describe('a sign-out while Redis cannot take its end (two instances, REDIS_URL)', function () {
  this.timeout(60_000);
  let redis: TestRedis;
  let idp: TestIdp;
  let upstream: OpenWebUIStandIn;
  let dir: string;
  const instances: Instance[] = [];
  let a: Instance;
  let b: Instance;

  before(async () => {
    redis = await startRedis();
    upstream = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: false, groups: ['acme', 'globex', 'initech'] });
    const ports = [await freePort(), await freePort()];
    const publicUrl = `http://127.0.0.1:${ports[0]}`;
    idp = await startIdp({ clients: [gatewayClient(publicUrl)], accessTokenTtl: 300 });
    dir = mkdtempSync(join(tmpdir(), 'sign-out-'));
    const providersFile = join(dir, 'providers.json');
    writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
    for (const port of ports) {
      const settings = loadSettings(
        { ...worldEnv({ upstreamUrl: upstream.url, publicUrl, issuer: idp.issuer, providersFile }), REDIS_URL: redis.url },
        { stageFiles: false },
      );
      const obs = capturingObservability();
      const sharedState = await redisState(redis.url, obs, { endWaitMs: END_WAIT_MS });
      const gateway = await createGateway(settings, { obs, sharedState });
      await gateway.listen(port, '127.0.0.1');
      instances.push({ url: `http://127.0.0.1:${port}`, gateway, lines: obs.lines });
    }
    [a, b] = instances as [Instance, Instance];
    await everyInstance(true);
  });
  after(async () => {
    for (const i of instances) await i.gateway.close();
    await Promise.all([idp?.close(), upstream?.close(), redis?.stop()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Every instance trusts its mirror (true) or none does (false). */
  async function everyInstance(synced: boolean): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!instances.every((i) => i.gateway.sharedState.ready().ok === synced)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for every instance ${synced ? 'in sync' : 'to lose Redis'}`);
      await sleep(20);
    }
  }
  const status = (jar: Jar, at: Instance) => browse(jar.clone(), `${at.url}/api/v1/auths/`).then((r) => r.status);
  const notDurable = async (at: Instance) =>
    /gateway_session_ends_not_durable_total\{reason="redis_unreachable"\} (\d+)/.exec(await (await fetch(`${at.url}/metrics`)).text())?.[1];

  it('Redis not back within the wait: both sign-outs still end the realm session first, then a page says the sign-out is still being written; logged and counted; refused here at once, everywhere once Redis is back', async () => {
    const first = await signIn(a.url, 'alice');
    const second = await signIn(a.url, 'bob');
    const [firstCopy, secondCopy] = [first.jar.clone(), second.jar.clone()];
    await redis.stop();
    await everyInstance(false);
    const started = Date.now();
    const [logout, signout] = await Promise.all([
      browse(first.jar, `${a.url}/auth/logout`, { headers: { accept: 'text/html' } }),
      browse(second.jar, `${a.url}${SIGNOUT}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: a.url, 'sec-fetch-site': 'same-origin' },
      }),
    ]);
    expect(Date.now() - started, 'the wait').to.be.within(END_WAIT_MS - 100, END_WAIT_MS + 1_500);
    expect(first.jar.get('appSession'), 'cookie cleared').to.equal(undefined);

    // told and counted, once each (the realm's back-channel logouts that follow its own are ends too)
    expect(await notDurable(a)).to.equal('2');
    expect(a.lines.filter((l) => l.event === 'session-end-not-durable' && l.reason === 'redis_unreachable')).to.have.length(2);
    expect(a.lines.filter((l) => l.event === 'sign-out' && l.end === 'not written')).to.have.length(2);

    // both: on to the realm's logout with this session's ID token and the state that brings the words back
    expect(logout.status).to.equal(302);
    expect(signout.status).to.equal(200);
    const ends = [new URL(logout.location!), new URL(signout.json<{ status: boolean; redirect_url: string }>().redirect_url)];
    for (const [end, { idpJar }] of [
      [ends[0]!, first],
      [ends[1]!, second],
    ] as const) {
      expect(end.origin + end.pathname).to.equal(`${idp.issuer}/protocol/openid-connect/logout`);
      expect(end.searchParams.get('id_token_hint')).to.be.a('string');
      expect(end.searchParams.get('state')).to.equal('sign-out-pending');
      // the realm ends its session without asking, and hands the browser back to the login page with the state
      const back = await logoutThroughIdp(end.href, idpJar);
      expect(back.redirectUrl).to.equal(`${a.url}/auth/login?state=sign-out-pending`);
      const page = await browse(first.jar, back.redirectUrl!, { headers: { 'accept-language': 'de-CH, en;q=0.5' } });
      expect(page.status).to.equal(200);
      expect(page.text).to.include('Sie sind in diesem Browser abgemeldet').and.include('href="/auth/login"');
      // the realm session is over: a new sign-in there asks for the password again
      let at = (await browse(idpJar, `${a.url}/auth/start?returnTo=%2F`)).location!;
      let asked = await browse(idpJar, at);
      for (let hop = 0; hop < 5 && asked.location; hop++) asked = await browse(idpJar, (at = new URL(asked.location, at).href));
      expect(asked.text, 'the realm asks again').to.include('kc-form-login');
    }
    const english = await browse(first.jar, `${a.url}/auth/login?state=sign-out-pending`);
    expect(english.text).to.include('You are signed out in this browser').and.include('still being written');

    // refused here at once (this instance knows it), 503 at the other (it cannot know)
    for (const copy of [firstCopy, secondCopy]) {
      expect(await status(copy, a), 'here').to.equal(401);
      expect(await status(copy, b), 'elsewhere, while Redis is away').to.equal(503);
    }
    await redis.start(); // empty: the ends come back from the instance that made them
    await everyInstance(true);
    for (const copy of [firstCopy, secondCopy]) expect(await status(copy, b), 'elsewhere, once Redis is back').to.equal(401);
  });

  it('Redis back within the wait: answered as usual once it is written, and refused at every instance from that answer on', async () => {
    const { jar } = await signIn(a.url, 'alice');
    const copy = jar.clone();
    expect(await status(copy, b)).to.equal(200);
    await redis.stop();
    await everyInstance(false);
    const started = Date.now();
    const answer = browse(jar, `${a.url}/auth/logout`);
    await sleep(300);
    await redis.start();
    const out = await answer;
    expect(Date.now() - started, 'answered within the wait').to.be.below(END_WAIT_MS);
    expect(out.status, 'on to the realm').to.equal(302);
    expect(new URL(out.location!).searchParams.get('id_token_hint')).to.be.a('string');
    // at once, at both instances: refused (401), or not yet trusted (503), never served
    for (const at of [b, a]) expect([401, 503], 'never served').to.include(await status(copy, at));
    await everyInstance(true);
    for (const at of [a, b]) expect(await status(copy, at)).to.equal(401);
    expect(a.lines.filter((l) => l.event === 'sign-out' && l.end === 'durable')).to.have.length(1);
  });
});
