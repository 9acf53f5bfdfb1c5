// Sign-in: the access token is refreshed shortly before it expires; a refused refresh
// ends the session (logged-out guard for pages, 401 for the API); an unreachable or hung realm does
// not (503 once the token has expired).
// The realm issues 4-second access tokens and the gateway refreshes 2 seconds before expiry.
import { expect } from 'chai';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { changeableDemoAccounts, browse, signIn, startWorld, Jar, SESSION_SECRET, type World } from '../support/cookie-jar.js';
import { SessionCodec, type SessionData } from '../../gateway/auth/session-cookie.js';
import WebSocket from 'ws';
import { sleep } from '../support/wait.js';
import { SESSION_RENEWAL_UNAVAILABLE } from '../../gateway/http/respond.js';

const TTL = 4;
const MARGIN = 2;
/** gateway/auth/realm.ts HTTP_TIMEOUT_MS: each request of the gateway's to the realm */
const REALM_TIMEOUT_MS = 5_000;

describe('sign-in: token refresh', function () {
  this.timeout(20_000);
  let w: World;
  let codec: SessionCodec;
  const accounts = changeableDemoAccounts();
  const grants: Array<{ type: string; ok: boolean }> = [];

  const sessionOf = async (jar: Jar) => (await codec.decrypt(jar.get('appSession')!))!.data as SessionData;
  /** Wait until the session's access token is inside the refresh margin. */
  const untilRefreshDue = async (jar: Jar) => {
    const due = ((await sessionOf(jar)).expires_at - MARGIN) * 1000 + 50;
    await sleep(Math.max(0, due - Date.now()));
  };
  const refreshes = () => grants.filter((g) => g.type === 'refresh_token');

  before(async () => {
    w = await startWorld({ accessTokenTtl: TTL, accounts, env: { TOKEN_REFRESH_MARGIN_SECONDS: String(MARGIN) } });
    codec = new SessionCodec([SESSION_SECRET], {
      secure: false,
      rollingSeconds: w.settings.oidc.rollingSeconds,
      absoluteSeconds: w.settings.oidc.absoluteSeconds,
    });
    w.idp.provider.on('grant.success', (ctx: KoaContextWithOIDC) => grants.push({ type: String(ctx.oidc.params?.grant_type), ok: true }));
    w.idp.provider.on('grant.error', (ctx: KoaContextWithOIDC) => grants.push({ type: String(ctx.oidc.params?.grant_type), ok: false }));
  });
  after(async () => {
    await w?.close();
  });

  it('refreshes shortly before expiry, once for concurrent requests, and renews the cookie', async () => {
    const { jar } = await signIn(w.url, 'alice');
    const first = await sessionOf(jar);
    // not yet due: no refresh, no new cookie
    const early = await browse(jar, '/api/v1/auths/');
    expect(early.status).to.equal(200);
    expect(early.setCookies.some((c) => c.startsWith('appSession'))).to.equal(false);
    expect(refreshes()).to.have.length(0);

    await untilRefreshDue(jar);
    const old = jar.clone();
    const answers = await Promise.all(Array.from({ length: 5 }, () => browse(old.clone(), '/api/v1/auths/')));
    expect(answers.map((a) => a.status)).to.deep.equal([200, 200, 200, 200, 200]);
    expect(refreshes(), 'one refresh for five concurrent requests').to.deep.equal([{ type: 'refresh_token', ok: true }]);
    const renewed = answers.map((a) => a.setCookies.find((c) => c.startsWith('appSession='))!.split(';')[0]);
    expect(new Set(renewed).size, 'every answer carries the same renewed cookie').to.equal(1);
    // ... beside the chat front-end's own cookie of the same proxied answer: neither replaces the other
    expect(
      answers.every((a) => a.setCookies.some((c) => c.startsWith('token='))),
      "the upstream's token cookie",
    ).to.equal(true);
    jar.store(answers[0]!.setCookies);
    const second = await sessionOf(jar);
    expect(second.expires_at).to.be.greaterThan(first.expires_at);
    expect(second.id).to.equal(first.id);
    expect(second.user).to.deep.equal(first.user);
    // the upstream saw alice all along
    const seen = w.upstream.requests.filter((r) => r.url === '/api/v1/auths/').slice(-5);
    expect(seen.every((r) => r.headers['x-forwarded-email'] === 'alice@acme.example' && r.headers['x-forwarded-role'] === 'user')).to.equal(true);
    // the renewed cookie works without another refresh
    expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
    expect(refreshes()).to.have.length(1);
  });

  it('a realm role granted meanwhile reaches the chat front-end at the next refresh', async () => {
    const { jar } = await signIn(w.url, 'tina');
    expect((await browse(jar, '/api/v1/auths/')).json<{ role: string }>().role).to.equal('user');
    accounts.find((a) => a.username === 'tina')!.roles.push('PlatformSysAdmin');
    try {
      await untilRefreshDue(jar);
      const r = await browse(jar, '/api/v1/auths/');
      expect(r.json<{ role: string }>().role).to.equal('admin');
      const seen = w.upstream.requests.filter((q) => q.url === '/api/v1/auths/').pop()!;
      expect(seen.headers['x-forwarded-role']).to.equal('admin');
      expect((await browse(jar, '/auth/session')).json<{ user: { roles: string[]; admin: boolean } }>().user).to.deep.include({
        roles: ['PlatformSysAdmin'],
        admin: true,
      });
    } finally {
      accounts.find((a) => a.username === 'tina')!.roles = [];
    }
  });

  it('a refused refresh ends the session: 401 for the API, the logged-out guard for pages, the cookie cleared', async () => {
    const { jar } = await signIn(w.url, 'bob');
    const copy = jar.clone();
    expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
    w.idp.failRefresh = true;
    try {
      await untilRefreshDue(jar);
      const upstreamBefore = w.upstream.requests.length;
      const api = await browse(jar, '/api/v1/auths/');
      expect(api.status).to.equal(401);
      expect(api.json()).to.deep.equal({ detail: 'Not authenticated' });
      expect(api.setCookies.some((c) => /^appSession=;/.test(c))).to.equal(true);
      expect(jar.get('appSession')).to.equal(undefined);
      expect(refreshes().pop()).to.deep.equal({ type: 'refresh_token', ok: false });
      // a page with the same (ended) session: the logged-out guard runs again (login links rule 9)
      const page = await browse(copy.clone(), '/globex/c/9');
      expect(page.status).to.equal(302);
      expect(new URL(page.location!).pathname).to.equal('/auth/start');
      expect(new URL(page.location!).searchParams.get('tenant')).to.equal('globex');
      expect(w.upstream.requests.length, 'nothing reached the chat front-end').to.equal(upstreamBefore);
      expect((await browse(copy.clone(), '/auth/session')).json()).to.deep.equal({ authenticated: false });
    } finally {
      w.idp.failRefresh = false;
    }
    // the realm would refresh again now, but the session has ended
    expect((await browse(copy.clone(), '/api/v1/auths/')).status).to.equal(401);
    expect(w.obs.lines.some((l) => l.event === 'session-ended' && l.email === 'bob@globex.example')).to.equal(true);
  });

  it('an unreachable realm does not end the session; an expired token is not honoured until it answers again: 503, a page for a browser, never the 401 of a signed-out one (regression: 401 and the login page)', async () => {
    const { jar } = await signIn(w.url, 'carol');
    await untilRefreshDue(jar);
    await w.idp.down();
    try {
      const grace = await browse(jar, '/api/v1/auths/');
      expect(grace.status, 'the access token has not expired yet').to.equal(200);
      expect((await w.gateway.authenticator.ready()).ok).to.equal(false);
      await sleep(Math.max(0, (await sessionOf(jar)).expires_at * 1000 + 1100 - Date.now()));
      const expired = await browse(jar, '/api/v1/auths/');
      expect(expired.status).to.equal(503);
      expect(expired.json()).to.deep.equal({ detail: SESSION_RENEWAL_UNAVAILABLE });
      expect(expired.headers.get('retry-after')).to.equal('5');
      const page = await browse(jar, '/c/1', { headers: { accept: 'text/html' } });
      expect(page.status).to.equal(503);
      expect(page.text).to.include('Your sign-in cannot be renewed right now');
      const session = await browse(jar, '/auth/session');
      expect(session.status, 'not "authenticated: false"').to.equal(503);
      // a Socket.IO reconnection's upgrade: the same 503
      const upgrade = await new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`${w.url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, {
          headers: { cookie: jar.header('/ws/socket.io/') },
        });
        ws.once('unexpected-response', (_req, res) => (res.resume(), ws.terminate(), resolve(res.statusCode ?? 0)));
        ws.once('open', () => (ws.terminate(), resolve(101)));
        ws.once('error', reject);
      });
      expect(upgrade).to.equal(503);
      for (const r of [expired, page, session])
        expect(
          r.setCookies.some((c) => c.startsWith('appSession')),
          'the cookie is kept',
        ).to.equal(false);
    } finally {
      await w.idp.up();
    }
    const back = await browse(jar, '/api/v1/auths/');
    expect(back.status).to.equal(200);
    expect(back.setCookies.some((c) => c.startsWith('appSession='))).to.equal(true);
  });

  it('a realm that hangs (it takes connections, answers nothing) ends nothing either: each refresh waits the realm timeout; the token served while it lasts; once it answers again, the same session (regression: the timeout ended the session)', async () => {
    const { jar } = await signIn(w.url, 'carol');
    const first = await sessionOf(jar);
    await untilRefreshDue(jar);
    w.idp.hang();
    try {
      let started = Date.now();
      const grace = await browse(jar, '/api/v1/auths/');
      expect(grace.status, 'the access token had not expired').to.equal(200);
      expect(Date.now() - started, 'one refresh attempt, bounded').to.be.within(REALM_TIMEOUT_MS - 100, REALM_TIMEOUT_MS + 1_500);
      await sleep(Math.max(0, first.expires_at * 1000 + 1100 - Date.now()));
      started = Date.now();
      const expired = await browse(jar, '/api/v1/auths/');
      expect(expired.status).to.equal(503);
      expect(Date.now() - started).to.be.below(REALM_TIMEOUT_MS + 1_500);
      for (const r of [grace, expired])
        expect(
          r.setCookies.filter((c) => c.startsWith('appSession')),
          'the cookie is kept',
        ).to.deep.equal([]);
    } finally {
      w.idp.resume();
    }
    const back = await browse(jar, '/api/v1/auths/');
    expect(back.status).to.equal(200);
    jar.store(back.setCookies);
    expect((await sessionOf(jar)).id, 'the same session').to.equal(first.id);
    expect(w.obs.lines.filter((l) => l.event === 'session-ended' && l.email === 'carol@acme.example')).to.deep.equal([]);
  });

  it('a refreshed ID token whose signature does not verify ends the session; its claims are never used', async () => {
    // The token endpoint's answer is tampered with on the way: the ID token claims the admin role
    // while keeping the old signature. Regression: its claims were taken without a signature check.
    const { jar } = await signIn(w.url, 'alice');
    let tampered = 0;
    // 'grant.success' is emitted synchronously once the token endpoint has set its answer.
    const tamper = (ctx: KoaContextWithOIDC) => {
      const body = ctx.body as { id_token?: string } | undefined;
      if (ctx.oidc?.params?.grant_type === 'refresh_token' && typeof body?.id_token === 'string') {
        const [h, p, sig] = body.id_token.split('.');
        const claims = JSON.parse(Buffer.from(p!, 'base64url').toString('utf8'));
        claims.roles = ['PlatformSysAdmin'];
        body.id_token = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${sig}`;
        tampered++;
      }
    };
    w.idp.provider.on('grant.success', tamper);
    try {
      await untilRefreshDue(jar);
      const after = await browse(jar, '/auth/session');
      expect(tampered).to.equal(1);
      expect(after.json()).to.deep.equal({ authenticated: false });
      expect((await browse(jar, '/api/v1/auths/')).status).to.equal(401);
    } finally {
      w.idp.provider.off('grant.success', tamper);
    }
  });
});

describe('sign-in: a renewed session survives a failed upstream answer', function () {
  this.timeout(20_000);
  it('the 502 of an unreachable chat front-end still carries the renewed session cookie (its rotated refresh token is not lost)', async () => {
    const accounts = changeableDemoAccounts();
    const w = await startWorld({ accessTokenTtl: TTL, accounts, env: { TOKEN_REFRESH_MARGIN_SECONDS: String(MARGIN) } });
    try {
      const codec = new SessionCodec([SESSION_SECRET], {
        secure: false,
        rollingSeconds: w.settings.oidc.rollingSeconds,
        absoluteSeconds: w.settings.oidc.absoluteSeconds,
      });
      const { jar } = await signIn(w.url, 'alice');
      expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
      const before = (await codec.decrypt(jar.get('appSession')!))!.data as SessionData;
      await sleep(Math.max(0, (before.expires_at - MARGIN) * 1000 + 50 - Date.now()));
      await w.upstream.close();
      const failed = await browse(jar, '/api/v1/auths/');
      expect(failed.status).to.equal(502);
      const renewed = failed.setCookies.find((c) => c.startsWith('appSession='));
      expect(renewed, 'the renewed session cookie on the 502').to.not.equal(undefined);
      jar.store(failed.setCookies);
      expect(((await codec.decrypt(jar.get('appSession')!))!.data as SessionData).expires_at).to.be.greaterThan(before.expires_at);
    } finally {
      await w.close();
    }
  });
});
