// The REAL Keycloak hung (SIGSTOP: the process is there and its port still takes connections, but
// nothing answers), then resumed (SIGCONT), behind the suite's two gateway instances
// (test/keycloak/world.ts): what signed-in users, new visitors, API clients and an operator see.
// Every answer is timed against the gateway's own realm bounds, never against the client's. A
// failing test never leaves Keycloak stopped. Killed and started again is not here: a Keycloak
// boot costs 60 to 110 s on the shared machine; a realm that refuses connections is the
// stand-in's in test/hardening/hardening-faults.test.ts and test/sign-in/sign-in-refresh.test.ts.
import { expect } from 'chai';
import { generateKeyPair, SignJWT } from 'jose';
import { browse, Jar, signIn } from '../support/cookie-jar.js';
import { loginThroughIdp } from '../../sandbox/idp-browser.js';
import { SessionCodec, type SessionData } from '../../gateway/auth/session-cookie.js';
import { loadSettings } from '../../config/settings.js';
import { createGateway } from '../../gateway/app.js';
import { capturingObservability } from '../support/gateway-harness.js';
import { freePort, STACK_TRACE } from '../support/raw-http.js';
import { sleep, until } from '../support/wait.js';
import { groupStates } from '../support/process-tree.js';
import { apiClient, kcWorld, CLIENT_ID, CLIENT_SECRET, REALM, SESSION_SECRET, type GatewayInstance, type KcWorld } from './world.js';

/** gateway/auth/realm.ts HTTP_TIMEOUT_MS: each request of the gateway's to the realm (discovery, tokens, keys) */
const REALM_TIMEOUT_MS = 5_000;
/** gateway/login/routes.ts: each request of the provider catalog's to Keycloak's admin API */
const CATALOG_TIMEOUT_MS = 5_000;
/** what a loaded machine may add to a bound (two shared cores, other suites running) */
const SLACK_MS = 2_000;
/** the access token lifespan of the refresh tests; the suite's gateways refresh 5 s before expiry */
const LIFESPAN_S = 10;
const MARGIN_S = 5;
/** a public client of the platform whose password-grant tokens are meant for the gateway (an API client) */
const BEARER_CLIENT = 'kc-hung-bearer';

interface Timed {
  status: number;
  ms: number;
  text: string;
  headers: Headers;
  setCookies: string[];
}

/** One request, timed; the client's own limit (30 s) is far past every bound asserted. */
async function timed(url: string, headers: Record<string, string> = {}): Promise<Timed> {
  const started = Date.now();
  const res = await fetch(url, { headers, redirect: 'manual', signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  return { status: res.status, ms: Date.now() - started, text, headers: res.headers, setCookies: res.headers.getSetCookie() };
}

describe('the real Keycloak hung (SIGSTOP), then resumed (SIGCONT), behind two gateway instances', function () {
  this.timeout(300_000);
  let w: KcWorld;
  let stopped = false;
  const codec = new SessionCodec([SESSION_SECRET], { secure: false, rollingSeconds: 86_400, absoluteSeconds: 604_800 });
  const sessionOf = async (jar: Jar) => (await codec.decrypt(jar.get('appSession')!))!.data as SessionData;
  /** A request of a signed-in browser (its cookie) at instance `g`. */
  const asUser = (g: GatewayInstance, jar: Jar, path = '/api/v1/auths/') => timed(`${g.url}${path}`, { cookie: jar.header(`${w.a.url}${path}`) });
  const asBearer = (g: GatewayInstance, token: string) => timed(`${g.url}/api/v1/auths/`, { authorization: `Bearer ${token}` });
  const sessionEnds = (email: string) => [...w.a.obs.lines, ...w.b.obs.lines].filter((l) => l.event === 'session-ended' && l.email === email);

  /** SIGSTOP to every process of Keycloak's group; resolves once each one is stopped. */
  const hang = async () => {
    stopped = true;
    process.kill(-w.kc.pid, 'SIGSTOP');
    await until('every process of Keycloak stopped', () => groupStates(w.kc.pid).every((s) => s === 'T'), { ms: 5_000, everyMs: 10 });
    return Date.now();
  };
  const resume = () => {
    if (!stopped) return;
    stopped = false;
    process.kill(-w.kc.pid, 'SIGCONT');
  };
  /** Straight at Keycloak: the realm answers again. */
  const answering = () =>
    until(
      'Keycloak answering again',
      () =>
        fetch(`${w.kc.issuer(REALM)}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(2_000) }).then(
          (r) => r.status === 200,
          () => false,
        ),
      { ms: 60_000, everyMs: 100 },
    );
  let api: Awaited<ReturnType<typeof apiClient>>;

  before(async function () {
    this.timeout(400_000);
    w = await kcWorld();
    api = await apiClient(w, BEARER_CLIENT);
  });
  // Whatever a test came to, Keycloak runs again (and answers) before the next one.
  afterEach(async function () {
    this.timeout(90_000);
    if (!stopped) return;
    resume();
    await answering();
  });
  after(async function () {
    this.timeout(90_000);
    resume();
    if (!w) return;
    await answering();
    await api?.remove();
  });

  it('signed-in users keep using the chat at both instances; the login page, the provider list and /auth/session answer at once; /healthz 200, /readyz 503 naming the identity provider within its bounds', async () => {
    const alice = (await signIn(w.a.url, 'alice')).jar;
    const hungAt = await hang();
    for (const g of [w.a, w.b]) {
      const api = await asUser(g, alice);
      expect(api.status, api.text).to.equal(200);
      expect(api.ms).to.be.below(1_000);
    }
    for (const path of ['/auth/login', '/api/v1/auth-providers/', '/healthz']) {
      const own = await timed(`${w.a.url}${path}`);
      expect(own.status, path).to.equal(200);
      expect(own.ms, path).to.be.below(1_000);
    }
    expect(JSON.parse((await asUser(w.a, alice, '/auth/session')).text)).to.include({ authenticated: true });
    // the realm probe's last answer is kept 5 s, then asked with 2 s to answer; readiness answers are shared for 1 s
    const notReady = await until(
      '/readyz 503',
      async () => {
        const r = await timed(`${w.a.url}/readyz`);
        return r.status === 503 && r;
      },
      { ms: 8_000 + SLACK_MS, everyMs: 250 },
    );
    const checks = (JSON.parse(notReady.text) as { checks: Record<string, { ok: boolean; detail: string }> }).checks;
    expect(checks.identityProvider!.ok).to.equal(false);
    expect(checks.identityProvider!.detail).to.include(w.kc.issuer(REALM));
    expect(checks.upstream!.ok, 'the chat front-end is fine').to.equal(true);
    console.log(`      (/readyz 503 ${Date.now() - hungAt} ms after SIGSTOP)`);
  });

  it('the provider list answers from the last good catalog, also past its cache period (the first request then waits at most the catalog’s timeout); /readyz says stale, then fresh again once Keycloak answers', async () => {
    const providers = () => timed(`${w.a.url}/api/v1/auth-providers/`);
    const tenant = () => timed(`${w.a.url}/api/v1/auth-providers/tenants/acme`);
    const catalogCheck = async () =>
      (JSON.parse((await timed(`${w.a.url}/readyz`)).text) as { checks: { catalog: { ok: boolean; detail: string } } }).checks.catalog;
    const [list, lookup] = await Promise.all([providers(), tenant()]);
    expect([list.status, JSON.parse(lookup.text)]).to.deep.equal([200, { alias: 'acme-entra' }]);
    await hang();
    const cached = await providers();
    expect([cached.status, cached.text]).to.deep.equal([200, list.text]);
    expect(cached.ms).to.be.below(1_000);
    w.clock.offsetMs += 5 * 60_000 + 1_000; // the cache period (IDP_CACHE_SECONDS, 300) passes
    const [first, firstLookup] = await Promise.all([providers(), tenant()]);
    for (const [answer, body] of [
      [first, list.text],
      [firstLookup, lookup.text],
    ] as const) {
      expect([answer.status, answer.text]).to.deep.equal([200, body]);
      expect(answer.ms).to.be.below(CATALOG_TIMEOUT_MS + SLACK_MS);
    }
    const next = await providers();
    expect([next.status, next.text]).to.deep.equal([200, list.text]);
    expect(next.ms, 'served at once from then on').to.be.below(1_000);
    const stale = await until('readiness saying stale', async () => ((c) => /stale/.test(c.detail) && c)(await catalogCheck()), {
      ms: 2_000 + SLACK_MS,
      everyMs: 250,
    });
    expect(stale.ok, 'a stale catalog keeps the instance ready').to.equal(true);
    resume();
    await answering();
    // the catalog asks again (in the background, while serving the last answer) once its retry period (15 s) has passed
    w.clock.offsetMs += 16_000;
    await Promise.all([providers(), tenant()]);
    await until('the catalog fresh again', async () => !/stale/.test((await catalogCheck()).detail), { ms: CATALOG_TIMEOUT_MS + SLACK_MS, everyMs: 250 });
    console.log(`      (the first provider list past the cache period: ${first.ms} ms)`);
  });

  it('realm bearer tokens: one already seen is still served; one signed by a key the realm never published is refused (401) within the realm timeout, never reaching the chat front-end; the same once resumed', async () => {
    const seen = await api.tokenFor('alice', 'alice-pass');
    expect((await asBearer(w.a, seen)).status).to.equal(200);
    const { privateKey } = await generateKeyPair('RS256');
    const now = Math.floor(Date.now() / 1000);
    const forged = await new SignJWT({ typ: 'Bearer', azp: CLIENT_ID, scope: 'openid email', email: 'forger@platform.example', name: 'Forger' })
      .setProtectedHeader({ alg: 'RS256', kid: 'a-key-the-realm-never-published', typ: 'JWT' })
      .setIssuer(w.kc.issuer(REALM))
      .setAudience(CLIENT_ID)
      .setSubject('forger')
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(privateKey);
    await hang();
    const served = await asBearer(w.a, seen);
    expect(served.status).to.equal(200);
    expect(served.ms).to.be.below(1_000);
    const refused = await asBearer(w.a, forged);
    expect(refused.status, refused.text).to.equal(401);
    expect(refused.ms).to.be.below(REALM_TIMEOUT_MS + SLACK_MS);
    expect(refused.text).to.not.match(STACK_TRACE);
    resume();
    await answering();
    expect((await asBearer(w.a, seen)).status).to.equal(200);
    expect((await asBearer(w.a, forged)).status).to.equal(401);
    expect(
      w.upstream.requests.some((r) => r.headers['x-forwarded-email'] === 'forger@platform.example'),
      'the forged token reached the chat front-end',
    ).to.equal(false);
    console.log(`      (the forged token refused in ${refused.ms} ms)`);
  });

  it('a new sign-in: /auth/start still sends the browser to the realm at once; one whose code comes back gets the gateway’s 503 page within the realm timeout; a gateway started meanwhile answers /auth/start and its login page so too, its provider list 503; once resumed the person signs in without a password', async () => {
    const jar = new Jar(w.a.url);
    const idpJar = new Jar();
    const start = await browse(jar, '/auth/start');
    expect(start.status).to.equal(302);
    // at Keycloak's form before the hang; the code comes back after it
    const { callbackUrl } = await loginThroughIdp(start.location!, 'bob', undefined, idpJar);
    await hang();
    const again = await timed(`${w.a.url}/auth/start`, { accept: 'text/html' });
    expect(again.status).to.equal(302);
    expect(again.headers.get('location')).to.match(new RegExp(`^${w.kc.issuer(REALM)}/protocol/openid-connect/auth\\?`));
    expect(again.ms).to.be.below(1_000);

    const port = await freePort();
    const startedAt = Date.now();
    const cold = await createGateway(
      loadSettings(
        {
          NODE_ENV: 'test',
          UPSTREAM_URL: w.upstream.url,
          PUBLIC_URL: `http://127.0.0.1:${port}`,
          OIDC_ISSUER_URL: w.kc.issuer(REALM),
          OIDC_CLIENT_ID: CLIENT_ID,
          OIDC_CLIENT_SECRET: CLIENT_SECRET,
          SESSION_SECRET,
          CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
          CHATUI_ENABLE_ADMIN_EXPORT: 'false',
          DRIFT_CHECK_SECONDS: '0',
          LOG_LEVEL: 'silent',
        },
        { stageFiles: false },
      ),
      { obs: capturingObservability() },
    );
    try {
      await cold.listen(port, '127.0.0.1');
      const coldStartMs = Date.now() - startedAt;
      expect(coldStartMs, 'a gateway starts without the realm').to.be.below(1_000 + SLACK_MS);
      const coldUrl = `http://127.0.0.1:${port}`;
      const [callback, coldStart, coldLogin, coldList] = await Promise.all([
        timed(callbackUrl, { cookie: jar.header(callbackUrl), accept: 'text/html' }),
        timed(`${coldUrl}/auth/start`, { accept: 'text/html' }),
        timed(`${coldUrl}/auth/login`, { accept: 'text/html' }),
        timed(`${coldUrl}/api/v1/auth-providers/`),
      ]);
      for (const [what, page] of [
        ['the callback', callback],
        ['a new gateway’s /auth/start', coldStart],
        ['a new gateway’s login page', coldLogin],
      ] as const) {
        expect(page.status, what).to.equal(503);
        expect(page.headers.get('content-type'), what).to.match(/^text\/html/);
        expect(page.text, what).to.match(/Sign-in is temporarily unavailable/);
        expect(page.text, what).to.not.match(STACK_TRACE);
        expect(page.ms, what).to.be.within(REALM_TIMEOUT_MS - 100, REALM_TIMEOUT_MS + SLACK_MS);
        expect(
          page.setCookies.filter((c) => c.startsWith('appSession=')),
          what,
        ).to.deep.equal([]);
      }
      for (const page of [callback, coldStart]) expect(page.headers.get('retry-after')).to.equal('30');
      expect([coldList.status, JSON.parse(coldList.text), coldList.headers.get('retry-after')]).to.deep.equal([
        503,
        { detail: 'The identity provider catalog is not reachable' },
        '15',
      ]);
      expect(coldList.ms).to.be.below(CATALOG_TIMEOUT_MS + SLACK_MS);
      console.log(`      (a gateway started while Keycloak hangs listened after ${coldStartMs} ms; the callback's page came after ${callback.ms} ms)`);
    } finally {
      await cold.close();
    }
    resume();
    await answering();
    // "Try again": a new sign-in; Keycloak's own session of that browser needs no password (a wrong one is never asked for)
    const retry = await browse(jar, '/auth/start');
    const { callbackUrl: back } = await loginThroughIdp(retry.location!, 'bob', 'not-asked', idpJar);
    expect((await browse(jar, back)).status).to.equal(302);
    expect(JSON.parse((await asUser(w.b, jar, '/auth/session')).text)).to.include({ authenticated: true });
  });

  for (const rotation of [false, true]) {
    describe(`a session due for a refresh (${LIFESPAN_S} s access tokens; refresh tokens ${rotation ? 'rotated: Revoke Refresh Token on, reuse 0' : 'not rotated, as the realm file sets them'})`, () => {
      let realmBefore: Record<string, unknown>;
      before(async () => {
        realmBefore = (await w.kc.admin<Record<string, unknown>>('GET', `/admin/realms/${REALM}`)).body;
        await w.kc.admin('PUT', `/admin/realms/${REALM}`, {
          accessTokenLifespan: LIFESPAN_S,
          revokeRefreshToken: rotation,
          refreshTokenMaxReuse: 0,
          eventsEnabled: true,
          enabledEventTypes: ['REFRESH_TOKEN', 'REFRESH_TOKEN_ERROR'],
        });
      });
      after(async function () {
        this.timeout(90_000);
        resume();
        await answering();
        await w.kc.admin('PUT', `/admin/realms/${REALM}`, {
          accessTokenLifespan: realmBefore.accessTokenLifespan,
          revokeRefreshToken: realmBefore.revokeRefreshToken,
          refreshTokenMaxReuse: realmBefore.refreshTokenMaxReuse,
          eventsEnabled: realmBefore.eventsEnabled ?? false,
          enabledEventTypes: realmBefore.enabledEventTypes ?? [],
        });
      });

      it('served at both instances while its token lasts, each request after one refresh attempt bounded by the realm timeout; once expired 503, a page for a browser, never signed out; once resumed the same session, one refresh, nothing ended', async () => {
        const username = rotation ? 'tina' : 'carol';
        const signedInAt = Date.now();
        const jar = (await signIn(w.a.url, username)).jar;
        const first = await sessionOf(jar);
        expect(first.expires_at - Date.now() / 1000, 'the lifespan set').to.be.at.most(LIFESPAN_S);
        await sleep(Math.max(0, (first.expires_at - MARGIN_S) * 1000 + 200 - Date.now()));
        await hang();
        for (const due of await Promise.all([asUser(w.a, jar), asUser(w.b, jar)])) {
          expect(due.status, due.text).to.equal(200);
          expect(due.ms).to.be.below(REALM_TIMEOUT_MS + SLACK_MS);
          expect(
            due.setCookies.filter((c) => c.startsWith('appSession')),
            'nothing renewed, nothing cleared',
          ).to.deep.equal([]);
        }
        await sleep(Math.max(0, first.expires_at * 1000 + 1_100 - Date.now()));
        const [api, apiB, session, page] = await Promise.all([
          asUser(w.a, jar),
          asUser(w.b, jar),
          asUser(w.a, jar, '/auth/session'),
          timed(`${w.a.url}/c/1`, { cookie: jar.header(`${w.a.url}/c/1`), accept: 'text/html' }),
        ]);
        for (const r of [api, apiB, session]) {
          expect(r.status, r.text).to.equal(503);
          expect(JSON.parse(r.text)).to.deep.equal({ detail: 'Your sign-in cannot be renewed right now; try again in a few seconds' });
        }
        expect(page.status).to.equal(503);
        expect(page.text).to.include('Your sign-in cannot be renewed right now');
        for (const r of [api, apiB, session, page]) {
          expect(r.headers.get('retry-after')).to.equal('5');
          expect(r.ms).to.be.below(REALM_TIMEOUT_MS + SLACK_MS);
          expect(
            r.setCookies.filter((c) => c.startsWith('appSession')),
            'the cookie is kept',
          ).to.deep.equal([]);
        }
        resume();
        await answering();
        const back = await asUser(w.a, jar);
        expect(back.status, back.text).to.equal(200);
        jar.store(back.setCookies, w.a.url);
        const renewed = await sessionOf(jar);
        expect(renewed.id, 'the same session').to.equal(first.id);
        expect(renewed.expires_at).to.be.greaterThan(first.expires_at);
        expect((await asUser(w.b, jar)).status).to.equal(200);
        expect(sessionEnds(first.user.email)).to.deep.equal([]);
        // Keycloak works through its listen backlog once it runs again: the refresh sent as the hang
        // began is carried out then, and the gateway, still awaiting it, takes its answer. None was
        // sent again meanwhile (with rotation a second use would have ended the session).
        const events = (
          await w.kc.admin<Array<{ type: string; time: number }>>('GET', `/admin/realms/${REALM}/events?user=${first.user.sub}&max=100`)
        ).body.filter((e) => e.time >= signedInAt);
        expect(events.map((e) => e.type)).to.deep.equal(['REFRESH_TOKEN']);
      });
    });
  }

  it('once resumed, the realm’s back-channel logout reaches the gateway again: an administrator ending a user’s sessions signs them out at both instances; both ready again, without a restart', async () => {
    const carol = (await signIn(w.a.url, 'carol')).jar;
    await hang();
    expect((await asUser(w.b, carol)).status).to.equal(200);
    resume();
    await answering();
    await w.kc.admin('POST', `/admin/realms/${REALM}/users/${await w.userId('carol')}/logout`);
    for (const g of [w.a, w.b]) await until(`carol signed out at ${g.url}`, async () => (await asUser(g, carol)).status === 401, { ms: 20_000, everyMs: 200 });
    for (const g of [w.a, w.b]) await until(`${g.url} ready`, async () => (await timed(`${g.url}/readyz`)).status === 200, { ms: 10_000, everyMs: 250 });
  });
});
