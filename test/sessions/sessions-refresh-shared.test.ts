// One refresh per session among every instance: with Keycloak's "Revoke Refresh Token"
// (reuse 0) a refresh token works once, so two instances refreshing the same session would spend it
// twice and end the session. The shared state's single flight (gateway/state/shared-state.ts) runs
// the refresh once and shares its outcome through Redis. Here: its contract on a real redis-server,
// then two gateways in front of the oidc-provider stand-in with rotating refresh tokens.
import { expect } from 'chai';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisState } from '../../gateway/state/redis-state.js';
import type { SharedState } from '../../gateway/state/shared-state.js';
import { createObservability } from '../../gateway/observability/observability.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { demoAccounts, demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { loadSettings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { capturingObservability, type LogLine } from '../support/gateway-harness.js';
import { freePort } from '../support/raw-http.js';
import { browse, signIn, startWorld, worldEnv, CLIENT_ID, CLIENT_SECRET, SESSION_SECRET, type Jar, type World } from '../support/cookie-jar.js';
import { SessionCodec, type SessionData } from '../../gateway/auth/session-cookie.js';
import { sleep, until } from '../support/wait.js';

describe('shared state: single flight through Redis', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  let one: SharedState;
  let two: SharedState;

  before(async () => {
    redis = await startRedis();
    const obs = createObservability({ level: 'silent' });
    [one, two] = [await redisState(redis.url, obs), await redisState(redis.url, obs)];
    await until('both in sync', async () => one.ready().ok && two.ready().ok, { ms: 10_000 });
  });
  after(async () => {
    await Promise.all([one?.close(), two?.close()]);
    await redis?.stop();
  });

  it('runs the work once among every instance; every caller, and later ones, get its answer', async () => {
    let runs = 0;
    const work = async () => {
      runs++;
      await sleep(200);
      return 'answer';
    };
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).singleFlight('k1', 60, 5_000, work)));
    expect(answers).to.deep.equal(Array(20).fill('answer'));
    expect(runs).to.equal(1);
    expect(await two.singleFlight('k1', 60, 5_000, work)).to.equal('answer');
    expect(runs).to.equal(1);
  });

  it('an answer of undefined is not shared: the waiters get undefined and a later call runs again', async () => {
    let runs = 0;
    const nothing = async () => {
      runs++;
      await sleep(200);
      return undefined;
    };
    const first = one.singleFlight('k2', 60, 5_000, nothing);
    await sleep(50);
    expect(await Promise.all([first, two.singleFlight('k2', 60, 5_000, nothing)])).to.deep.equal([undefined, undefined]);
    expect(runs).to.equal(1);
    expect(await two.singleFlight('k2', 60, 5_000, async () => 'now')).to.equal('now');
  });
});

/** gateway/auth/realm.ts HTTP_TIMEOUT_MS: how long a request waits for the realm */
const REALM_TIMEOUT_MS = 5_000;

describe('sessions: one refresh among two instances while refresh tokens rotate', function () {
  this.timeout(60_000);
  let redis: TestRedis;
  let idp: TestIdp;
  let upstream: OpenWebUIStandIn;
  const gateways: Gateway[] = [];
  const logs: LogLine[][] = [];
  let a: string;
  let b: string;
  const refreshes: string[] = [];
  // The realm's accounts, changed by a test (the stand-in reads them at every token).
  const accounts = structuredClone(demoAccounts);

  before(async () => {
    redis = await startRedis();
    upstream = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: false, groups: ['acme', 'globex', 'initech'] });
    const [portA, portB] = [await freePort(), await freePort()];
    a = `http://127.0.0.1:${portA}`;
    b = `http://127.0.0.1:${portB}`;
    idp = await startIdp({
      clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${a}/auth/callback`], post_logout_redirect_uris: [`${a}/auth/login`] }],
      accessTokenTtl: 8,
      rotateRefreshTokens: true,
      accounts,
    });
    idp.provider.on('grant.success', (ctx: { oidc: { params?: { grant_type?: unknown } } }) => {
      if (ctx.oidc.params?.grant_type === 'refresh_token') refreshes.push('ok');
    });
    idp.provider.on('grant.error', (ctx: { oidc: { params?: { grant_type?: unknown } } }) => {
      if (ctx.oidc.params?.grant_type === 'refresh_token') refreshes.push('error');
    });
    const providersFile = join(mkdtempSync(join(tmpdir(), 'refresh-shared-')), 'providers.json');
    writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
    const env = {
      ...worldEnv({ upstreamUrl: upstream.url, publicUrl: a, issuer: idp.issuer, providersFile }),
      REDIS_URL: redis.url,
      DRIFT_CHECK_SECONDS: '0',
      TOKEN_REFRESH_MARGIN_SECONDS: '4',
    };
    for (const [port, url] of [
      [portA, a],
      [portB, b],
    ] as const) {
      const obs = capturingObservability();
      logs.push(obs.lines);
      const gateway = await createGateway(loadSettings({ ...env, PUBLIC_URL: url }, { stageFiles: false }), { obs });
      await gateway.listen(port, '127.0.0.1');
      gateways.push(gateway);
    }
  });
  after(async () => {
    for (const g of gateways) await g.close();
    await Promise.all([idp?.close(), upstream?.close()]);
    await redis?.stop();
  });

  it('20 concurrent requests over both instances as the access token expires: one refresh, none fails, still signed in', async () => {
    const { jar } = await signIn(a, 'alice');
    const signedInAt = Date.now();
    await sleep(Math.max(0, signedInAt + 5_000 - Date.now()));
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => browse(jar.clone(), `${i % 2 ? b : a}/api/v1/auths/`)));
    expect(answers.map((x) => x.status)).to.deep.equal(Array(20).fill(200));
    expect(refreshes).to.deep.equal(['ok']);
    // The renewed cookie (and, for a while, the old one) is a live session at both instances.
    const renewed = jar.clone();
    renewed.store(answers[0]!.setCookies);
    for (const url of [a, b]) {
      for (const j of [renewed, jar]) expect((await browse(j, `${url}/auth/session`)).json<{ authenticated: boolean }>().authenticated).to.equal(true);
    }
    // The next refresh uses the new refresh token: accepted once more.
    await sleep(5_000);
    expect((await browse(renewed, `${b}/api/v1/auths/`)).status).to.equal(200);
    expect(refreshes).to.deep.equal(['ok', 'ok']);
  });

  it('a realm that hangs as the refresh comes due: served while the token lasts, then 503, each within the realm timeout; the refresh is awaited, never sent again; once the realm answers, the same session at both instances, one refresh, nothing ended', async () => {
    refreshes.length = 0;
    const sessionOf = async (j: Jar) =>
      (await new SessionCodec([SESSION_SECRET], { secure: false, rollingSeconds: 3600, absoluteSeconds: 86400 }).decrypt(j.get('appSession')!))!
        .data as SessionData;
    const timed = async (url: string, j: Jar) => {
      const started = Date.now();
      const r = await browse(j.clone(), url);
      return { status: r.status, ms: Date.now() - started, setCookies: r.setCookies };
    };
    // Both instances have found the realm (discovery) before it hangs, as a running platform's have.
    for (const url of [a, b]) expect((await fetch(`${url}/auth/start`, { redirect: 'manual' })).status).to.equal(302);
    const { jar } = await signIn(a, 'carol');
    const first = await sessionOf(jar);
    await sleep(Math.max(0, (first.expires_at - 4) * 1000 + 300 - Date.now()));
    idp.hang();
    try {
      for (const due of await Promise.all([timed(`${a}/api/v1/auths/`, jar), timed(`${b}/api/v1/auths/`, jar)])) {
        expect(due.status, 'the access token had not expired').to.equal(200);
        expect(due.ms).to.be.below(REALM_TIMEOUT_MS + 1_500);
      }
      await sleep(Math.max(0, first.expires_at * 1000 + 1_100 - Date.now()));
      for (const expired of await Promise.all([timed(`${a}/api/v1/auths/`, jar), timed(`${b}/api/v1/auths/`, jar)])) {
        expect(expired.status).to.equal(503);
        expect(expired.ms).to.be.below(REALM_TIMEOUT_MS + 1_500);
        expect(
          expired.setCookies.filter((c) => c.startsWith('appSession')),
          'the cookie is kept',
        ).to.deep.equal([]);
      }
    } finally {
      idp.resume();
    }
    const back = await browse(jar, `${b}/api/v1/auths/`);
    expect(back.status).to.equal(200);
    jar.store(back.setCookies);
    const renewed = await sessionOf(jar);
    expect(renewed.id, 'the same session').to.equal(first.id);
    expect(renewed.expires_at).to.be.greaterThan(first.expires_at);
    expect((await browse(jar, `${a}/api/v1/auths/`)).status).to.equal(200);
    // The refresh sent as the hang began is the one the realm carried out; none was sent again (with
    // rotation a second one would have been refused, and the session ended).
    expect(refreshes).to.deep.equal(['ok']);
    expect(logs.flat().filter((l) => l.event === 'session-ended')).to.deep.equal([]);
  });

  it('an instance a refresh behind catches up at once: the latest refresh’s roles, and no refresh of its own', async () => {
    refreshes.length = 0;
    const { jar } = await signIn(a, 'sysadmin');
    const original = jar.clone();
    await sleep(4_500);
    expect((await browse(jar, `${a}/api/v1/auths/`)).status).to.equal(200);
    accounts.find((x) => x.username === 'sysadmin')!.roles = [];
    await sleep(4_500);
    const atA = (await browse(jar, `${a}/auth/session`)).json<{ user: { admin: boolean } }>();
    expect(atA.user.admin).to.equal(false);
    expect(refreshes).to.deep.equal(['ok', 'ok']);
    // B has never seen this session: the first cookie, two refreshes old, is current there at once.
    const atB = (await browse(original, `${b}/auth/session`)).json<{ authenticated: boolean; user: { admin: boolean } }>();
    expect(atB.authenticated).to.equal(true);
    expect(atB.user.admin).to.equal(false);
    expect(refreshes).to.deep.equal(['ok', 'ok']);
  });
});

describe('sessions: refreshes with an identity provider that hands the same refresh token back', function () {
  this.timeout(60_000);
  let w: World;
  const refreshes: string[] = [];
  before(async () => {
    // Keycloak's default and the stand-in's: refresh tokens are not rotated. One instance, no Redis.
    w = await startWorld({ accessTokenTtl: 6, env: { TOKEN_REFRESH_MARGIN_SECONDS: '3' } });
    w.idp.provider.on('grant.success', (ctx: { oidc: { params?: { grant_type?: unknown } } }) => {
      if (ctx.oidc.params?.grant_type === 'refresh_token') refreshes.push('ok');
    });
  });
  after(async () => w?.close());

  it('every due refresh reaches the identity provider: an earlier outcome is never served again', async () => {
    const { jar } = await signIn(w.url, 'alice');
    for (const expected of [['ok'], ['ok', 'ok'], ['ok', 'ok', 'ok']]) {
      await sleep(3_500);
      expect((await browse(jar, `${w.url}/api/v1/auths/`)).status).to.equal(200);
      expect(refreshes).to.deep.equal(expected);
    }
  });
});
