// Sign-in: full code-flow logins against the realm (the real oidc-provider, in process)
// over real sockets with a cookie jar; what reaches the chat front-end stand-in is the proof.
import { expect } from 'chai';
import { loginThroughIdp, logoutThroughIdp } from '../../sandbox/idp-browser.js';
import { demoAccounts } from '../../sandbox/demo-realm.js';
import { browse, signIn, startWorld, Jar, CLIENT_ID, SESSION_SECRET, type World } from '../support/cookie-jar.js';
import type { RecordedRequest } from '../../sandbox/open-webui/stand-in.js';
import { readSessionCookie, SessionCodec, type SessionData } from '../../gateway/auth/session-cookie.js';
import { returnToAfterSignIn as safeReturnTo } from '../../gateway/auth/authenticator.js';
import { oldLayoutChunks, oldLayoutCookie } from '../support/old-session-cookie.js';

const account = (username: string) => demoAccounts.find((a) => a.username === username)!;

/** The last request the stand-in received for a path (query ignored). */
function lastAt(w: World, path: string): RecordedRequest {
  const hits = w.upstream.requests.filter((r) => r.url.split('?')[0] === path);
  expect(hits, `no upstream request for ${path}`).to.not.be.empty;
  return hits[hits.length - 1]!;
}

function decodeState(authorizeUrl: string): Record<string, unknown> {
  const state = new URL(authorizeUrl).searchParams.get('state')!;
  return JSON.parse(Buffer.from(state, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** Does the realm still have a browser session for this jar (the authorize request ends at the callback without a form)? */
async function idpSessionActive(authorizeUrl: string, idpJar: Jar): Promise<boolean> {
  let url = authorizeUrl;
  for (let i = 0; i < 10; i++) {
    const res = await fetch(url, { headers: { cookie: idpJar.header(url) }, redirect: 'manual' });
    idpJar.store(res.headers.getSetCookie(), url);
    const text = await res.text();
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      const next = new URL(location, url);
      if (next.pathname === '/auth/callback') return true;
      url = next.href;
      continue;
    }
    if (!/kc-form-login/.test(text)) throw new Error(`unexpected realm answer ${res.status} at ${url}`);
    return false;
  }
  return false;
}

describe('sign-in: OIDC code flow through the gateway', function () {
  this.timeout(20_000);
  let w: World;

  before(async () => {
    w = await startWorld();
  });
  after(async () => {
    await w?.close();
  });

  describe('/auth/start', () => {
    it('sends the browser to the realm with the code flow, the hints and a state bound to a transaction cookie', async () => {
      const r = await browse(undefined, `${w.url}/auth/start?idp=acme-entra&returnTo=/c/42`);
      expect(r.status).to.equal(302);
      const u = new URL(r.location!);
      expect(u.origin + u.pathname).to.equal(`${w.idp.issuer}/protocol/openid-connect/auth`);
      const q = Object.fromEntries(u.searchParams);
      expect(q).to.include({
        response_type: 'code',
        client_id: CLIENT_ID,
        redirect_uri: `${w.url}/auth/callback`,
        kc_idp_hint: 'acme-entra',
        idp_hint: 'acme-entra',
        code_challenge_method: 'S256',
      });
      expect(q.scope!.split(' ')).to.include('openid');
      expect(decodeState(r.location!)).to.deep.include({ returnTo: '/c/42' });
      expect(r.setCookies.some((c) => c.startsWith('auth_verification='))).to.equal(true);
      expect(r.headers.get('cache-control')).to.equal('no-store');
    });

    it('sends no hint when no idp is given', async () => {
      for (const query of ['', 'idp=']) {
        const r = await browse(undefined, `${w.url}/auth/start?${query}`);
        expect(r.status, query).to.equal(302);
        const q = new URL(r.location!).searchParams;
        expect(q.has('kc_idp_hint'), query).to.equal(false);
        expect(q.has('idp_hint'), query).to.equal(false);
      }
    });

    it('refuses an idp that names no usable provider with the per-provider "not available" page; the realm is never asked', async () => {
      const before = w.idp.authorizations.length;
      for (const query of ['idp=a%20b', 'idp=../x', 'idp=a&idp=b', 'idp=no-such-provider', 'idp=partner-linkonly', 'idp=direct-login']) {
        const r = await browse(undefined, `${w.url}/auth/start?${query}`);
        expect(r.status, query).to.equal(404);
        expect(r.headers.get('content-type'), query).to.match(/^text\/html/);
        expect(r.text, query).to.include('id="generic-login"');
      }
      const de = await browse(undefined, `${w.url}/de/auth/start?idp=no-such-provider`);
      expect(de.status).to.equal(404);
      expect(de.text).to.include('lang="de"');
      expect(w.idp.authorizations.length).to.equal(before);
      // a usable one still goes to the realm with its hint
      const ok = await browse(undefined, `${w.url}/auth/start?idp=globex-okta`);
      expect(new URL(ok.location!).searchParams.get('kc_idp_hint')).to.equal('globex-okta');
    });

    it('accepts the locale-prefixed form and passes the locale on as ui_locales', async () => {
      const r = await browse(undefined, `${w.url}/de-CH/auth/start?idp=globex-okta&locale=de-CH&returnTo=/x`);
      expect(r.status).to.equal(302);
      const q = new URL(r.location!).searchParams;
      expect(q.get('kc_idp_hint')).to.equal('globex-okta');
      expect(q.get('ui_locales')).to.equal('de-CH');
    });

    it('returnTo: only a local path survives; everything else becomes /', async () => {
      const evil = [
        'https://evil.example/',
        '//evil.example/x',
        '///evil.example',
        '/\\evil.example',
        '\\\\evil.example',
        '/%09/evil.example',
        '/\t/evil.example',
        '/\n/evil.example',
        'javascript:alert(1)',
        'evil.example',
        ' /x',
        '/auth/logout',
        '',
      ];
      for (const value of evil) {
        expect(safeReturnTo(value), JSON.stringify(value)).to.equal(value === '/%09/evil.example' ? value : '/');
        const r = await browse(undefined, `${w.url}/auth/start?${new URLSearchParams({ returnTo: value })}`);
        // control bytes are already refused by the path canonicalizer, before any redirect
        if (/[\t\n]/.test(value)) {
          expect(r.status).to.equal(400);
          continue;
        }
        const returnTo = decodeState(r.location!).returnTo as string;
        expect(returnTo, JSON.stringify(value)).to.equal(value === '/%09/evil.example' ? '/%09/evil.example' : '/');
      }
      expect(safeReturnTo('/c/1?x=1#frag')).to.equal('/c/1?x=1#frag');
      expect(safeReturnTo(['/a', '/b'])).to.equal('/');
    });

    it('an evil returnTo does not redirect off-site after a real login', async () => {
      const { callback } = await signIn(w.url, 'alice', `returnTo=${encodeURIComponent('//evil.example/steal')}`);
      expect(callback.location).to.equal(`${w.url}/`);
    });
  });

  describe('a login', () => {
    let admin: Jar;
    let loginSetCookie: string[];

    before(async () => {
      const r = await signIn(w.url, 'sysadmin', 'idp=acme-entra&returnTo=/c/42');
      admin = r.jar;
      loginSetCookie = r.callback.setCookies;
      expect(r.callback.location).to.equal(`${w.url}/c/42`);
      // the realm received the hints and the gateway's redirect URI
      const last = w.idp.authorizations[w.idp.authorizations.length - 1]!;
      expect(last).to.include({ kc_idp_hint: 'acme-entra', idp_hint: 'acme-entra', redirect_uri: `${w.url}/auth/callback` });
    });

    it('sets one small HttpOnly, SameSite=Lax session cookie holding no ID or access token', async () => {
      const line = loginSetCookie.find((c) => c.startsWith('appSession='))!;
      expect(line)
        .to.match(/; Path=\/;/)
        .and.match(/; HttpOnly/)
        .and.match(/; SameSite=Lax/);
      expect(loginSetCookie.some((c) => /^appSession\.\d=/.test(c))).to.equal(false);
      const value = admin.get('appSession')!;
      const codec = new SessionCodec([SESSION_SECRET], { secure: false, rollingSeconds: 86400, absoluteSeconds: 7 * 86400 });
      const { data, header } = (await codec.decrypt(value))!;
      const s = data as SessionData & Record<string, unknown>;
      // `sid`: the realm's session id, by which a back-channel logout names the session (the ID token itself stays out);
      // `at_hash`: the access token's hash (which refresh replaces which state), not the token
      expect(Object.keys(s).sort()).to.deep.equal([
        'active_tenant',
        'at_hash',
        'expires_at',
        'facts_at',
        'id',
        'refresh_token',
        'sid',
        'token_lifetime',
        'user',
        'v',
      ]);
      expect(s.at_hash).to.match(/^[A-Za-z0-9_-]{22}$/);
      expect(s.token_lifetime).to.equal(300);
      expect(s.user).to.deep.equal({
        sub: account('sysadmin').sub,
        email: 'sysadmin@platform.example',
        name: 'Sam Sysadmin',
        roles: ['PlatformSysAdmin'],
        groups: [],
        tenants: ['acme'],
      });
      expect(s.refresh_token).to.be.a('string');
      expect(header.exp - header.iat).to.equal(86400);
      // measured: the whole Set-Cookie line stays far below the 4 KB browser limit
      expect(line.length).to.be.below(1200);
      console.log(`      session cookie: ${value.length} bytes value, ${line.length} bytes Set-Cookie line (refresh token ${s.refresh_token!.length} bytes)`);
    });

    it('GET /auth/session describes the session', async () => {
      const r = await browse(admin, '/auth/session');
      expect(r.status).to.equal(200);
      expect(r.json()).to.deep.equal({
        authenticated: true,
        user: { sub: account('sysadmin').sub, email: 'sysadmin@platform.example', name: 'Sam Sysadmin', roles: ['PlatformSysAdmin'], admin: true },
        tenants: ['acme'],
        active_tenant: 'acme',
      });
      expect((await browse(undefined, `${w.url}/auth/session`)).json()).to.deep.equal({ authenticated: false });
    });

    it('the session cookie alone works against the chat API: trusted headers from the identity and an upstream token', async () => {
      const r = await browse(admin, '/api/v1/auths/');
      expect(r.status).to.equal(200);
      expect(r.json<{ email: string; role: string }>()).to.include({ email: 'sysadmin@platform.example', role: 'admin' });
      const signin = lastAt(w, '/api/v1/auths/signin');
      expect(signin.headers).to.include({ 'x-forwarded-email': 'sysadmin@platform.example', 'x-forwarded-name': 'Sam Sysadmin', 'x-forwarded-role': 'admin' });
      // sysadmin is in no realm group: the header names the group no one has (Open WebUI ignores an empty one)
      expect(signin.headers['x-forwarded-groups'])
        .to.equal(w.settings.trustedHeaders.noGroups)
        .and.match(/^no-group-[0-9a-f]{32}$/);
      const seen = lastAt(w, '/api/v1/auths/');
      expect(seen.headers).to.include({ 'x-forwarded-email': 'sysadmin@platform.example', 'x-forwarded-role': 'admin' });
      expect(seen.headers.authorization).to.match(/^Bearer ey/);
      // the gateway's own cookie never reaches the chat front-end
      expect(String(seen.headers.cookie ?? '')).to.not.include('appSession');
    });

    it('a repeated request reuses the session (no new cookie) and the cached upstream sign-in', async () => {
      const before = w.upstream.requests.filter((r) => r.url === '/api/v1/auths/signin').length;
      const r = await browse(admin, '/api/v1/auths/');
      expect(r.status).to.equal(200);
      expect(r.setCookies.some((c) => c.startsWith('appSession'))).to.equal(false);
      expect(w.upstream.requests.filter((q) => q.url === '/api/v1/auths/signin').length).to.equal(before);
    });

    it('the upstream user id of that sign-in is the caller of the file policy', async () => {
      const me = (await browse(admin, '/api/v1/auths/')).json<{ id: string }>();
      const other = [...w.upstream.users.values()].find((u) => u.id !== me.id) ?? { id: 'someone-else' };
      const now = Math.floor(Date.now() / 1000);
      for (const [id, owner] of [
        ['f-mine', me.id],
        ['f-other', other.id],
      ] as const) {
        w.upstream.files.set(id, {
          id,
          user_id: owner,
          hash: null,
          filename: `${id}.txt`,
          data: { content: 'x' },
          meta: { name: `${id}.txt`, content_type: 'text/plain', size: 1 },
          created_at: now,
          updated_at: now,
        });
      }
      w.upstream.flags.bypassAdminAccessControl = true; // the upstream would show an admin everything
      try {
        const list = (await browse(admin, '/api/v1/files/')).json<{ items: Array<{ id: string }> }>();
        expect(list.items.map((f) => f.id)).to.deep.equal(['f-mine']);
      } finally {
        w.upstream.flags.bypassAdminAccessControl = false;
      }
    });

    it('a plain user and a tenant admin (PlatformAdmin is not a realm role) are ordinary chat users', async () => {
      for (const username of ['alice', 'tina']) {
        const { jar } = await signIn(w.url, username);
        const session = (await browse(jar, '/auth/session')).json<{ user: { roles: string[]; admin: boolean } }>();
        expect(session.user, username).to.deep.include({ roles: [], admin: false });
        const r = await browse(jar, '/api/v1/auths/');
        expect(r.json<{ role: string }>().role, username).to.equal('user');
        const seen = lastAt(w, '/api/v1/auths/');
        expect(seen.headers['x-forwarded-email']).to.equal(account(username).email);
        expect(seen.headers['x-forwarded-role']).to.equal('user');
        expect(seen.headers['x-forwarded-groups']).to.equal('acme');
        // the admin-only export is refused upstream for them
        expect((await browse(jar, '/api/v1/chats/all/db')).status).to.equal(401);
      }
    });

    it('a page visit with the session goes to the chat front-end; without one, the logged-out guard answers', async () => {
      // (not a chat's page: an admin's visit of /c/{id} needs the chat to be theirs, test/admin-scoping/admin-routes.test.ts)
      const page = await browse(admin, '/workspace/models');
      expect(page.status).to.equal(200);
      expect(lastAt(w, '/workspace/models').headers['x-forwarded-email']).to.equal('sysadmin@platform.example');
      const anon = await browse(undefined, `${w.url}/c/42`);
      expect(anon.status).to.equal(302);
      expect(anon.location).to.match(/\/auth\/login/);
      expect((await browse(undefined, `${w.url}/api/v1/auths/`)).json()).to.deep.equal({ detail: 'Not authenticated' });
    });

    it('a tampered or foreign session cookie is no identity', async () => {
      const value = admin.get('appSession')!;
      const flipped = value.slice(0, -3) + (value.endsWith('A') ? 'BAA' : 'AAA');
      // a well-formed session under a key the gateway does not hold
      const other = new SessionCodec(['another-secret-another-secret-0123456789'], { secure: false, rollingSeconds: 86400, absoluteSeconds: 86400 });
      const now = Math.floor(Date.now() / 1000);
      const user = { sub: 's', email: 'sysadmin@platform.example', name: 'n', roles: ['PlatformSysAdmin'], groups: [], tenants: [] };
      const forged = await other.encrypt(
        { v: 1, id: 'x', user, active_tenant: null, refresh_token: null, expires_at: now + 3600 },
        { iat: now, uat: now, exp: now + 3600 },
      );
      for (const cookie of [`appSession=${flipped}`, `appSession=${forged}`, 'appSession=garbage', `appSession.0=${value.slice(0, 10)}`]) {
        const n = w.upstream.requests.length;
        const r = await browse(undefined, `${w.url}/api/v1/auths/`, { headers: { cookie } });
        expect(r.status, cookie.slice(0, 30)).to.equal(401);
        expect(w.upstream.requests.length).to.equal(n);
      }
    });
  });

  describe('tenants (login links rules 10 and 11)', () => {
    it('a login through a tenant link makes that tenant active for a member', async () => {
      // carol belongs to acme and globex; without a link her first tenant (acme) would be active
      const { jar } = await signIn(w.url, 'carol', 'idp=globex-okta&tenant=globex&returnTo=/');
      const s = (await browse(jar, '/auth/session')).json<{ tenants: string[]; active_tenant: string }>();
      expect(s.tenants).to.deep.equal(['acme', 'globex']);
      expect(s.active_tenant).to.equal('globex');
      const plain = await signIn(w.url, 'carol');
      expect((await browse(plain.jar, '/auth/session')).json<{ active_tenant: string }>().active_tenant).to.equal('acme');
    });

    it('the whole way from a logged-out tenant page: guard, /auth/start, realm, callback, active tenant', async () => {
      const j = new Jar(w.url);
      const guard = await browse(j, '/globex/c/7');
      expect(guard.status).to.equal(302);
      const start = new URL(guard.location!);
      expect(start.pathname).to.equal('/auth/start');
      expect(Object.fromEntries(start.searchParams)).to.include({ idp: 'globex-okta', tenant: 'globex' });
      const { callback } = await signIn(w.url, 'carol', start.search.slice(1), j);
      expect(callback.location).to.equal(`${w.url}/c/7`);
      expect((await browse(j, '/auth/session')).json<{ active_tenant: string }>().active_tenant).to.equal('globex');
    });

    it('a non-member coming through another tenant link does not get that tenant, and cannot switch to it', async () => {
      const { jar } = await signIn(w.url, 'bob', 'idp=acme-entra&tenant=acme');
      const s = (await browse(jar, '/auth/session')).json<{ tenants: string[]; active_tenant: string }>();
      expect(s.tenants).to.deep.equal(['globex']);
      expect(s.active_tenant).to.equal('globex');
      const denied = await browse(jar, '/auth/session/tenant', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tenant_id: 'acme' }),
      });
      expect(denied.status).to.equal(403);
      expect((await browse(jar, '/auth/session')).json<{ active_tenant: string }>().active_tenant).to.equal('globex');
      expect(
        w.obs.lines.some((l) => l.event === 'sign-in' && l.email === 'bob@globex.example' && l.tenantLink === 'acme' && l.tenantLinkMember === false),
      ).to.equal(true);
    });

    it('POST /auth/session/tenant switches a member, and answers 401, 400, 415 and 403 where it must', async () => {
      const { jar } = await signIn(w.url, 'carol');
      const post = (body: string, headers: Record<string, string> = { 'content-type': 'application/json' }, j: Jar | undefined = jar) =>
        browse(j, `${w.url}/auth/session/tenant`, { method: 'POST', headers, body });
      const ok = await post(JSON.stringify({ tenant_id: 'globex' }));
      expect(ok.status).to.equal(200);
      expect(ok.json<{ active_tenant: string }>().active_tenant).to.equal('globex');
      expect(ok.setCookies.some((c) => c.startsWith('appSession='))).to.equal(true);
      expect((await browse(jar, '/auth/session')).json<{ active_tenant: string }>().active_tenant).to.equal('globex');
      // the data plane reads the rewritten cookie
      expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
      const anonymous = await browse(undefined, `${w.url}/auth/session/tenant`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"tenant_id":"globex"}',
      });
      expect(anonymous.status).to.equal(401);
      expect((await post('{"tenant_id": 7}')).status).to.equal(400);
      expect((await post('not json')).status).to.equal(400);
      expect((await post('tenant_id=acme', { 'content-type': 'application/x-www-form-urlencoded' })).status).to.equal(415);
      expect((await post(JSON.stringify({ tenant_id: 'acme' }), { 'content-type': 'application/json', origin: 'https://evil.example' })).status).to.equal(403);
      expect((await post(JSON.stringify({ tenant_id: 'initech' }))).status).to.equal(403);
    });
  });

  describe('/auth/logout', () => {
    it('clears the session, ends the realm session and the old cookie no longer works', async () => {
      const { jar, idpJar, authorizeUrl } = await signIn(w.url, 'alice');
      const stolen = jar.clone();
      expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
      expect(await idpSessionActive(authorizeUrl.href, idpJar)).to.equal(true);

      const out = await browse(jar, '/auth/logout');
      expect(out.status).to.equal(302);
      const end = new URL(out.location!);
      expect(end.origin + end.pathname).to.equal(`${w.idp.issuer}/protocol/openid-connect/logout`);
      expect(Object.fromEntries(end.searchParams)).to.include({ client_id: CLIENT_ID, post_logout_redirect_uri: `${w.url}/auth/login` });
      expect(out.setCookies.some((c) => /^appSession=;/.test(c) && /Expires=Thu, 01 Jan 1970/.test(c))).to.equal(true);
      // the chat front-end's own session cookie ends too (contract: "and the upstream's")
      expect(out.setCookies.some((c) => /^token=;/.test(c) && /Path=\//.test(c) && /Expires=Thu, 01 Jan 1970/.test(c))).to.equal(true);
      expect(jar.get('appSession')).to.equal(undefined);

      // the browser goes on to the realm, which ends its session and comes back to the login page
      const back = await logoutThroughIdp(out.location!, idpJar);
      expect(back.redirectUrl).to.equal(`${w.url}/auth/login`);
      expect(await idpSessionActive(authorizeUrl.href, idpJar)).to.equal(false);

      expect((await browse(jar, '/api/v1/auths/')).status).to.equal(401);
      expect((await browse(stolen, '/api/v1/auths/')).status, 'a copy of the old cookie').to.equal(401);
      expect(w.obs.lines.some((l) => l.event === 'sign-out' && l.email === 'alice@acme.example')).to.equal(true);
    });
  });

  describe('one browser, two users', () => {
    it("after logout the next user is not taken for the last one (the chat front-end's token cookie ends too)", async () => {
      const { jar } = await signIn(w.url, 'alice');
      const me = await browse(jar, '/api/v1/auths/');
      expect(me.status).to.equal(200);
      expect(jar.get('token'), 'the chat front-end set its own session cookie').to.be.a('string');
      await browse(jar, '/auth/logout');
      expect(jar.get('token')).to.equal(undefined);
      await signIn(w.url, 'bob', '', jar);
      const next = await browse(jar, '/api/v1/auths/');
      expect(next.status).to.equal(200);
      expect(next.json<{ email: string }>().email).to.equal('bob@globex.example');
    });
  });

  describe('the session cookie: one format, and the cookies written before it', () => {
    const big = (n: number): SessionData => ({
      v: 1,
      id: 'big',
      user: { sub: 's', email: 'e@x', name: 'n', roles: [], groups: Array.from({ length: n }, (_, i) => `group-with-a-long-name-${i}`), tenants: [] },
      active_tenant: null,
      refresh_token: null,
      expires_at: 9e9,
    });
    const codecOf = () =>
      new SessionCodec([SESSION_SECRET], { secure: false, rollingSeconds: w.settings.oidc.rollingSeconds, absoluteSeconds: w.settings.oidc.absoluteSeconds });

    it('a cookie the gateway rewrote (tenant switch) is read back', async () => {
      const { jar } = await signIn(w.url, 'carol');
      await browse(jar, '/auth/session/tenant', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"tenant_id":"globex"}' });
      const seen = (await codecOf().decrypt(jar.get('appSession')!))!.data as SessionData;
      expect(seen).to.deep.include({ active_tenant: 'globex' });
      expect(seen.user.email).to.equal('carol@acme.example');
      expect((await browse(jar, '/auth/session')).json()).to.deep.include({ active_tenant: 'globex' });
    });

    it('chunked cookies: the gateway reads its own, and those of the layout before version 2 (express-openid-connect)', async () => {
      const codec = codecOf();
      const now = Math.floor(Date.now() / 1000);
      const header = { iat: now, uat: now, exp: codec.expiry(now, now) };
      const lines = codec.setCookieLines(await codec.encrypt(big(200), header), header.exp, ['appSession']);
      expect(lines.filter((l) => /^appSession\.\d=/.test(l)).length).to.be.greaterThan(1);
      expect(lines.every((l) => l.length <= 4096)).to.equal(true);
      expect(
        lines.some((l) => /^appSession=;/.test(l)),
        'the unchunked cookie is cleared',
      ).to.equal(true);
      const cookie = lines
        .filter((l) => /^appSession\.\d=/.test(l))
        .map((l) => l.split(';')[0])
        .join('; ');
      const sessionAt = async (c: string) => (await browse(undefined, `${w.url}/auth/session`, { headers: { cookie: c } })).json<{ authenticated: boolean }>();
      expect(await sessionAt(cookie)).to.include({ authenticated: true });
      expect(((await codec.decrypt(readSessionCookie(cookie)!.value))!.data as SessionData).user.groups).to.have.length(200);
      // written before version 2: the gateway reads
      const chunks = oldLayoutChunks(oldLayoutCookie(SESSION_SECRET, big(200), header));
      const found = readSessionCookie(chunks)!;
      expect(found.names.length).to.be.greaterThan(1);
      expect(((await codec.decrypt(found.value))!.data as SessionData).user.groups).to.have.length(200);
      expect(await sessionAt(chunks)).to.include({ authenticated: true });
    });

    it('SESSION_SECRET rotation: a cookie of the old key is still read, new cookies use the first key', async () => {
      const now = Math.floor(Date.now() / 1000);
      const old = new SessionCodec([SESSION_SECRET], { secure: false, rollingSeconds: 100, absoluteSeconds: 100 });
      const rotated = new SessionCodec(['a-brand-new-session-secret-0123456789abcdef', SESSION_SECRET], {
        secure: false,
        rollingSeconds: 100,
        absoluteSeconds: 100,
      });
      const value = await old.encrypt(big(1), { iat: now, uat: now, exp: now + 100 });
      expect(await rotated.decrypt(value)).to.not.equal(undefined);
      expect(await old.decrypt(await rotated.encrypt(big(1), { iat: now, uat: now, exp: now + 100 }))).to.equal(undefined);
    });

    it('an expired session (header exp, rolling or absolute) is no identity', async () => {
      const codec = new SessionCodec([SESSION_SECRET], {
        secure: false,
        rollingSeconds: w.settings.oidc.rollingSeconds,
        absoluteSeconds: w.settings.oidc.absoluteSeconds,
      });
      const now = Math.floor(Date.now() / 1000);
      const data = { ...big(1), id: 'expired', user: { ...big(1).user, email: 'alice@acme.example' }, expires_at: now + 3600 };
      for (const header of [
        { iat: now - 10, uat: now - 10, exp: now - 1 },
        { iat: now - 90000, uat: now - 90000, exp: now + 1000 },
        { iat: now - 8 * 86400, uat: now - 10, exp: now + 1000 },
      ]) {
        const r = await browse(undefined, `${w.url}/api/v1/auths/`, { headers: { cookie: `appSession=${await codec.encrypt(data, header)}` } });
        expect(r.status, JSON.stringify(header)).to.equal(401);
      }
      const fresh = await browse(undefined, `${w.url}/api/v1/auths/`, {
        headers: { cookie: `appSession=${await codec.encrypt(data, { iat: now, uat: now, exp: now + 1000 })}` },
      });
      expect(fresh.status).to.equal(200);
    });
  });
});

describe('sign-in: claims configuration', function () {
  this.timeout(20_000);
  let w: World;
  // an account the realm knows without an email address
  const accounts = [
    ...demoAccounts,
    { ...account('alice'), sub: '5f1c2a9e-0b1d-4c3e-9a41-6d2f7e8a0099', username: 'nomail', password: 'nomail-pass', email: '' },
  ];

  before(async () => {
    w = await startWorld({
      accounts,
      env: {
        OAUTH_ROLES_CLAIM: 'realm_access.roles',
        OAUTH_ADMIN_ROLES: 'SomeOtherRole, PlatformSysAdmin',
        OAUTH_GROUPS_CLAIM: 'tenants',
        TENANTS_CLAIM: 'groups',
      },
    });
  });
  after(async () => {
    await w?.close();
  });

  it('dotted OAUTH_ROLES_CLAIM (realm_access.roles, in the access token only), a list of admin roles, other claim names', async () => {
    const { jar } = await signIn(w.url, 'sysadmin');
    const s = (await browse(jar, '/auth/session')).json<{ user: { roles: string[]; admin: boolean }; tenants: string[] }>();
    expect(s.user).to.deep.include({ roles: ['PlatformSysAdmin'], admin: true });
    expect(s.tenants).to.deep.equal([]); // TENANTS_CLAIM=groups, and sysadmin is in no group
    await browse(jar, '/api/v1/auths/');
    const seen = w.upstream.requests.filter((r) => r.url === '/api/v1/auths/').pop()!;
    expect(seen.headers).to.include({ 'x-forwarded-role': 'admin', 'x-forwarded-groups': 'acme' }); // OAUTH_GROUPS_CLAIM=tenants
  });

  it('a login without an email address is refused (403) and leaves no session', async () => {
    const jar = new Jar(w.url);
    const start = await browse(jar, '/auth/start');
    const { callbackUrl } = await loginThroughIdp(start.location!, 'nomail', 'nomail-pass');
    const callback = await browse(jar, callbackUrl);
    expect(callback.status).to.equal(403);
    expect(callback.json<{ detail: string }>().detail).to.match(/no email/);
    expect(jar.get('appSession')).to.equal(undefined);
    expect((await browse(jar, '/api/v1/auths/')).status).to.equal(401);
  });
});
