import * as crypto from 'node:crypto';
import { expect } from 'chai';
import { createRemoteJWKSet, jwtVerify, decodeProtectedHeader } from 'jose';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { loginThroughIdp, logoutThroughIdp } from '../../sandbox/idp-browser.js';
import { apiClientToken } from '../support/cookie-jar.js';
import { demoAccounts } from '../../sandbox/demo-realm.js';

const CLIENT_ID = 'gateway';
const CLIENT_SECRET = 'gateway-secret-for-tests';
const REDIRECT_URI = 'http://127.0.0.1:9/auth/callback'; // never requested
const POST_LOGOUT = 'http://127.0.0.1:9/after-logout';
/** Another client of the realm, its access tokens meant for the gateway (Keycloak's audience mapper). */
const API_CLIENT = { client_id: 'platform-cli', client_secret: 'platform-cli-secret', redirect_uris: ['http://127.0.0.1:9/cli/callback'], audience: CLIENT_ID };

interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  userinfo_endpoint: string;
  jwks_uri: string;
  end_session_endpoint: string;
}

/** A tiny hand-written relying party. */
function rp(d: Discovery) {
  const basic = 'Basic ' + Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64');
  return {
    authorizeUrl(extra: Record<string, string> = {}) {
      const state = crypto.randomBytes(12).toString('base64url');
      const nonce = crypto.randomBytes(12).toString('base64url');
      const verifier = crypto.randomBytes(32).toString('base64url');
      const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
      const u = new URL(d.authorization_endpoint);
      const params = {
        client_id: CLIENT_ID,
        redirect_uri: REDIRECT_URI,
        response_type: 'code',
        scope: 'openid profile email',
        state,
        nonce,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        ...extra,
      };
      for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
      return { url: u.href, state, nonce, verifier };
    },
    async token(form: Record<string, string>, auth: 'basic' | 'post' = 'basic') {
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
      const body = new URLSearchParams(form);
      if (auth === 'basic') headers.authorization = basic;
      else {
        body.set('client_id', CLIENT_ID);
        body.set('client_secret', CLIENT_SECRET);
      }
      const res = await fetch(d.token_endpoint, { method: 'POST', headers, body });
      return { status: res.status, json: (await res.json()) as Record<string, any> };
    },
  };
}

describe('test IdP (oidc-provider dressed as a Keycloak realm)', function () {
  this.timeout(10_000);
  let idp: TestIdp;
  let d: Discovery;
  let jwks: ReturnType<typeof createRemoteJWKSet>;
  let client: ReturnType<typeof rp>;

  before(async () => {
    idp = await startIdp({
      clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [REDIRECT_URI], post_logout_redirect_uris: [POST_LOGOUT] }, API_CLIENT],
    });
    d = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as Discovery;
    jwks = createRemoteJWKSet(new URL(d.jwks_uri));
    client = rp(d);
  });
  after(async () => {
    await idp?.close();
  });

  it('looks like a Keycloak realm: issuer, endpoints, loopback listener', () => {
    expect(idp.issuer).to.match(/^http:\/\/127\.0\.0\.1:\d+\/realms\/platform$/);
    expect(idp.url).to.equal(new URL(idp.issuer).origin);
    expect(d.issuer).to.equal(idp.issuer);
    expect(d.authorization_endpoint).to.equal(`${idp.issuer}/protocol/openid-connect/auth`);
    expect(d.token_endpoint).to.equal(`${idp.issuer}/protocol/openid-connect/token`);
    expect(d.jwks_uri).to.equal(`${idp.issuer}/protocol/openid-connect/certs`);
    expect(d.end_session_endpoint).to.equal(`${idp.issuer}/protocol/openid-connect/logout`);
  });

  let tokens: Record<string, any>;
  let nonce: string;

  it('runs a full code flow with PKCE and kc_idp_hint, recording the authorization request', async () => {
    const before = idp.authorizations.length;
    const req = client.authorizeUrl({ kc_idp_hint: 'acme-entra', idp_hint: 'acme-entra' });
    nonce = req.nonce;
    const { callbackUrl } = await loginThroughIdp(req.url, 'sysadmin');
    const cb = new URL(callbackUrl);
    expect(`${cb.origin}${cb.pathname}`).to.equal(REDIRECT_URI);
    expect(cb.searchParams.get('state')).to.equal(req.state);
    expect(cb.searchParams.get('iss')).to.equal(idp.issuer);
    const code = cb.searchParams.get('code');
    expect(code).to.be.a('string');

    const rec = idp.authorizations.slice(before);
    expect(rec).to.have.length(1);
    expect(rec[0]).to.include({ client_id: CLIENT_ID, redirect_uri: REDIRECT_URI, kc_idp_hint: 'acme-entra', idp_hint: 'acme-entra', state: req.state });

    const res = await client.token({ grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT_URI, code_verifier: req.verifier });
    expect(res.status, JSON.stringify(res.json)).to.equal(200);
    tokens = res.json;
    expect(tokens).to.include.keys('access_token', 'id_token', 'refresh_token', 'expires_in');
    expect(tokens.token_type).to.equal('Bearer');
  });

  it('puts roles, groups, tenants and email in the ID token', async () => {
    const { payload } = await jwtVerify(tokens.id_token, jwks, { issuer: idp.issuer, audience: CLIENT_ID });
    const sysadmin = demoAccounts.find((a) => a.username === 'sysadmin')!;
    expect(payload.nonce).to.equal(nonce);
    expect(payload.sub).to.equal(sysadmin.sub);
    expect(payload).to.deep.include({
      roles: ['PlatformSysAdmin'],
      groups: [],
      tenants: ['acme'],
      email: sysadmin.email,
      email_verified: true,
      name: sysadmin.name,
      preferred_username: 'sysadmin',
    });
  });

  it('issues the access token as a JWT with realm_access.roles, usable at userinfo', async () => {
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, { issuer: idp.issuer, audience: CLIENT_ID });
    expect(protectedHeader.alg).to.equal('RS256');
    expect(payload).to.deep.include({ azp: CLIENT_ID, realm_access: { roles: ['PlatformSysAdmin'] }, roles: ['PlatformSysAdmin'], tenants: ['acme'] });
    expect(payload.exp! - payload.iat!).to.equal(300);

    const ui = await fetch(d.userinfo_endpoint, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(ui.status).to.equal(200);
    expect(await ui.json()).to.deep.include({ preferred_username: 'sysadmin', roles: ['PlatformSysAdmin'], groups: [], tenants: ['acme'] });

    const bad = await fetch(d.userinfo_endpoint, { headers: { authorization: `Bearer ${await idp.signForeignJwt({ sub: 'x', aud: CLIENT_ID })}` } });
    expect(bad.status).to.equal(401);
  });

  it('refreshes (basic or post), and refuses while failRefresh is set', async () => {
    const r1 = await client.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, 'post');
    expect(r1.status, JSON.stringify(r1.json)).to.equal(200);
    const { payload } = await jwtVerify(r1.json.access_token, jwks, { issuer: idp.issuer, audience: CLIENT_ID });
    expect(payload.realm_access).to.deep.equal({ roles: ['PlatformSysAdmin'] });
    expect(r1.json.id_token).to.be.a('string');

    idp.failRefresh = true;
    try {
      const r2 = await client.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
      expect(r2.status).to.equal(400);
      expect(r2.json.error).to.equal('invalid_grant');
    } finally {
      idp.failRefresh = false;
    }
    const r3 = await client.token({ grant_type: 'refresh_token', refresh_token: r1.json.refresh_token ?? tokens.refresh_token });
    expect(r3.status).to.equal(200);
  });

  it('rejects a wrong client secret at the token endpoint', async () => {
    const res = await fetch(d.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Basic ' + Buffer.from(`${CLIENT_ID}:nope`).toString('base64') },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }),
    });
    expect(res.status).to.equal(401);
    expect(((await res.json()) as { error: string }).error).to.equal('invalid_client');
  });

  it('shows kc_idp_hint on its login page, re-renders on a wrong password, and never shows consent', async () => {
    const req = client.authorizeUrl({ kc_idp_hint: 'globex-okta' });
    const r1 = await fetch(req.url, { redirect: 'manual' });
    expect(r1.status).to.equal(303);
    const loginUrl = new URL(r1.headers.get('location')!, req.url);
    expect(loginUrl.pathname).to.match(/^\/interaction\/[^/]+$/);
    const cookie = r1.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const r2 = await fetch(loginUrl, { headers: { cookie } });
    const html = await r2.text();
    expect(r2.status).to.equal(200);
    expect(html).to.match(/id="idp-hint"[^>]*>globex-okta</);
    expect(html).to.include('id="kc-login"').and.include('name="username"').and.include('name="password"');

    const wrong = await fetch(new URL(`${loginUrl.pathname}/login`, loginUrl), {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: 'bob', password: 'wrong' }),
      redirect: 'manual',
    });
    expect(wrong.status).to.equal(200);
    const again = await wrong.text();
    expect(again).to.include('Invalid username or password.').and.include('id="kc-login"');

    let err: Error | undefined;
    await loginThroughIdp(client.authorizeUrl().url, 'bob', 'wrong').catch((e: Error) => (err = e));
    expect(err?.message).to.match(/Invalid username or password/);
    // the right password straight through to the callback (no consent screen)
    const ok = await loginThroughIdp(client.authorizeUrl().url, 'bob');
    expect(new URL(ok.callbackUrl).searchParams.get('code')).to.be.a('string');
  });

  it('gives tina (tenant admin) no realm roles in her tokens', async () => {
    const req = client.authorizeUrl();
    const { callbackUrl } = await loginThroughIdp(req.url, 'tina');
    const code = new URL(callbackUrl).searchParams.get('code')!;
    const res = await client.token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: req.verifier });
    const { payload } = await jwtVerify(res.json.id_token, jwks, { issuer: idp.issuer, audience: CLIENT_ID });
    expect(payload).to.deep.include({ roles: [], tenants: ['acme'], groups: ['acme'] });
    const at = await jwtVerify(res.json.access_token, jwks, { issuer: idp.issuer, audience: CLIENT_ID });
    expect(at.payload.realm_access).to.deep.equal({ roles: [] });
  });

  it('signJwt verifies against the published JWKS, signForeignJwt does not', async () => {
    const own = await idp.signJwt({ sub: 'someone', aud: CLIENT_ID });
    const { payload } = await jwtVerify(own, jwks, { issuer: idp.issuer, audience: CLIENT_ID });
    expect(payload.sub).to.equal('someone');

    const foreign = await idp.signForeignJwt({ sub: 'someone', aud: CLIENT_ID });
    expect(decodeProtectedHeader(foreign).kid).to.equal(decodeProtectedHeader(own).kid);
    let failed: Error | undefined;
    await jwtVerify(foreign, jwks, { issuer: idp.issuer }).catch((e: Error) => (failed = e));
    expect(failed?.name).to.equal('JWSSignatureVerificationFailed');

    const expired = await idp.signJwt({ sub: 'someone', aud: CLIENT_ID, exp: Math.floor(Date.now() / 1000) - 60 });
    let expErr: Error | undefined;
    await jwtVerify(expired, jwks, { issuer: idp.issuer }).catch((e: Error) => (expErr = e));
    expect(expErr?.name).to.equal('JWTExpired');

    const confused = await idp.signJwt({ sub: 'someone' }, { alg: 'HS256' });
    let algErr: Error | undefined;
    await jwtVerify(confused, jwks).catch((e: Error) => (algErr = e));
    expect(algErr).to.be.instanceOf(Error);
  });

  it('accessTokenFor makes a Keycloak-shaped access token for an audience', async () => {
    const t = await idp.accessTokenFor('alice', 'some-api');
    const { payload } = await jwtVerify(t, jwks, { issuer: idp.issuer, audience: 'some-api' });
    expect(payload).to.deep.include({
      azp: 'some-api',
      email: 'alice@acme.example',
      roles: [],
      groups: ['acme'],
      tenants: ['acme'],
      realm_access: { roles: [] },
      typ: 'Bearer',
    });
    expect(payload.sub).to.equal(demoAccounts.find((a) => a.username === 'alice')!.sub);
  });

  it('ends the session with RP-initiated logout and redirects to the post-logout URI', async () => {
    const req = client.authorizeUrl();
    const { callbackUrl, jar } = await loginThroughIdp(req.url, 'alice');
    const code = new URL(callbackUrl).searchParams.get('code')!;
    const res = await client.token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: req.verifier });
    // while the IdP session lives, the same jar signs in without a login page (SSO)
    const sso = await fetch(client.authorizeUrl().url, { redirect: 'manual', headers: { cookie: jar.header(d.authorization_endpoint) } });
    expect(sso.headers.get('location')).to.match(/^http:\/\/127\.0\.0\.1:9\/auth\/callback\?code=/);
    const u = new URL(d.end_session_endpoint);
    u.searchParams.set('id_token_hint', res.json.id_token);
    u.searchParams.set('post_logout_redirect_uri', POST_LOGOUT);
    u.searchParams.set('state', 'bye');
    const { redirectUrl } = await logoutThroughIdp(u.href, jar);
    expect(redirectUrl).to.equal(`${POST_LOGOUT}?state=bye`);
    // the IdP session is gone: the same jar must log in again
    const again = await fetch(client.authorizeUrl().url, { redirect: 'manual', headers: { cookie: jar.header(d.authorization_endpoint) } });
    expect(new URL(again.headers.get('location')!, d.authorization_endpoint).pathname).to.match(/^\/interaction\//);
  });

  it('introspects its JWT access tokens as Keycloak does (oidc-provider alone refuses structured tokens): the calling client authenticated, another client’s token active until its session ends at the realm, a token it never issued not active', async () => {
    const { token, realmSession: jar } = await apiClientToken(idp.issuer, 'bob', API_CLIENT);
    const { payload } = await jwtVerify(token, jwks, { issuer: idp.issuer, audience: CLIENT_ID });
    expect(payload).to.include({ azp: API_CLIENT.client_id });
    const introspect = (t: string, secret = CLIENT_SECRET) =>
      fetch(`${idp.issuer}/protocol/openid-connect/token/introspect`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${btoa(`${CLIENT_ID}:${secret}`)}` },
        body: new URLSearchParams({ token: t, token_type_hint: 'access_token' }),
      });
    const refused = await introspect(token, 'not-the-secret');
    expect(refused.status, 'a client that does not authenticate').to.equal(401);
    expect(((await refused.json()) as { error: string }).error).to.equal('invalid_client');
    const live = await introspect(token);
    expect(live.status).to.equal(200);
    expect(await live.json()).to.include({
      active: true,
      client_id: API_CLIENT.client_id,
      azp: API_CLIENT.client_id,
      aud: CLIENT_ID,
      username: 'bob',
      token_type: 'Bearer',
    });
    const never = await introspect(await idp.accessTokenFor('bob', CLIENT_ID));
    expect(await never.json(), 'a token the realm never issued').to.deep.equal({ active: false });
    await logoutThroughIdp(d.end_session_endpoint, jar);
    expect(await (await introspect(token)).json(), 'its session ended at the realm').to.deep.equal({ active: false });
  });

  it('goes down and comes back on the same port', async () => {
    await idp.down();
    let refused: Error | undefined;
    await fetch(`${idp.issuer}/.well-known/openid-configuration`).catch((e: Error) => (refused = e));
    expect(refused).to.be.instanceOf(Error);
    await idp.up();
    const res = await fetch(`${idp.issuer}/.well-known/openid-configuration`);
    expect(res.status).to.equal(200);
  });
});
