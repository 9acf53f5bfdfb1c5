// Sign-in: `Authorization: Bearer <JWT>` issued by the realm is an identity when jose
// accepts it against the issuer's JWKS, issuer, audience and expiry. Anything else is the chat
// front-end's own credential, never an identity of the gateway. What reaches the stand-in decides.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPair, exportJWK, SignJWT, decodeJwt } from 'jose';
import { demoAccounts } from '../../sandbox/demo-realm.js';
import { browse, signIn, startWorld, CLIENT_ID, SESSION_SECRET, type World } from '../support/cookie-jar.js';
import { capturingObservability } from '../support/gateway-harness.js';
import { loadSettings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';

const alice = demoAccounts.find((a) => a.username === 'alice')!;
const sysadmin = demoAccounts.find((a) => a.username === 'sysadmin')!;
const tina = demoAccounts.find((a) => a.username === 'tina')!;
const now = () => Math.floor(Date.now() / 1000);

describe('sign-in: bearer tokens', function () {
  this.timeout(20_000);
  let w: World;

  before(async () => {
    w = await startWorld();
  });
  after(async () => {
    await w?.close();
  });

  /** Call the chat API with a bearer value; returns the status and what the upstream received (if anything). */
  async function call(token: string, extra: Record<string, string> = {}) {
    const n = w.upstream.requests.length;
    const r = await browse(undefined, `${w.url}/api/v1/auths/`, { headers: { authorization: `Bearer ${token}`, ...extra } });
    const forwarded = w.upstream.requests.slice(n).filter((q) => q.url === '/api/v1/auths/');
    return { status: r.status, body: r.text, forwarded, upstreamCalls: w.upstream.requests.length - n };
  }

  const claimsOf = (a: typeof alice, more: Record<string, unknown> = {}) => ({
    sub: a.sub,
    aud: CLIENT_ID,
    azp: CLIENT_ID,
    typ: 'Bearer',
    email: a.email,
    name: a.name,
    roles: a.roles,
    groups: a.groups,
    tenants: a.tenants,
    realm_access: { roles: a.roles },
    ...more,
  });

  it('a realm access token alone works: trusted headers from its claims, the upstream credential supplied by the gateway', async () => {
    const token = await w.idp.accessTokenFor('alice', CLIENT_ID);
    const r = await call(token);
    expect(r.status).to.equal(200);
    expect(r.forwarded).to.have.length(1);
    const seen = r.forwarded[0]!;
    expect(seen.headers).to.include({
      'x-forwarded-email': alice.email,
      'x-forwarded-name': alice.name,
      'x-forwarded-role': 'user',
      'x-forwarded-groups': 'acme',
    });
    // the realm JWT is the gateway's: the chat front-end gets its own token instead
    expect(seen.headers.authorization).to.not.include(token);
    expect(decodeJwt(String(seen.headers.authorization).slice(7))).to.have.property('id');
    expect(JSON.parse(r.body)).to.include({ email: alice.email, role: 'user' });
  });

  it('a realm access token whose session the realm ended (back-channel logout, by sid or by sub) is refused from then on; one issued after works', async () => {
    // tina: no other test of this world signs in as her, so ending her sessions leaves theirs alone
    const bySid = await w.idp.signJwt(claimsOf(tina, { sid: 'realm-session-1' }));
    const other = await w.idp.signJwt(claimsOf(tina, { sid: 'realm-session-2', iat: now() + 5 }));
    for (const token of [bySid, other]) expect((await call(token)).status).to.equal(200);
    const logout = async (claims: Record<string, unknown>) => {
      const token = await w.idp.signJwt({
        aud: CLIENT_ID,
        jti: `bcl-${Math.random()}`,
        events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
        exp: undefined,
        ...claims,
      });
      const posted = await fetch(`${w.url}/auth/backchannel-logout`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ logout_token: token }),
      });
      expect(posted.status).to.equal(204);
    };
    await logout({ sub: tina.sub, sid: 'realm-session-1' });
    const refused = await call(bySid);
    expect(refused.status, 'the ended session').to.equal(401);
    expect(refused.upstreamCalls).to.equal(0);
    expect((await call(other)).status, 'another session of the same user').to.equal(200);
    // by sub: every token issued before the logout token
    const before = await w.idp.signJwt(claimsOf(tina, { iat: now() - 5 }));
    expect((await call(before)).status).to.equal(200);
    await logout({ sub: tina.sub });
    expect((await call(before)).status, 'issued before the logout').to.equal(401);
    expect((await call(other)).status, 'issued after it').to.equal(200);
  });

  it('Keycloak\'s shape: aud "account", the client in azp, realm roles only in realm_access.roles', async () => {
    const token = await w.idp.signJwt(claimsOf(sysadmin, { aud: 'account', roles: undefined }));
    const r = await call(token);
    expect(r.status).to.equal(200);
    expect(r.forwarded[0]!.headers).to.include({ 'x-forwarded-email': sysadmin.email, 'x-forwarded-role': 'admin' });
  });

  it('a provider that names no typ in its access tokens (Auth0, Okta, Entra ID): its access token, known by its scope, works', async () => {
    const r = await call(await w.idp.signJwt(claimsOf(alice, { typ: undefined, scope: 'openid profile email' })));
    expect(r.status).to.equal(200);
    expect(r.forwarded[0]!.headers).to.include({ 'x-forwarded-email': alice.email });
  });

  it('PlatformAdmin is never an admin role, even if a token carried it; PlatformSysAdmin in roles is', async () => {
    const tenantAdmin = await call(await w.idp.signJwt(claimsOf(alice, { roles: ['PlatformAdmin'], realm_access: { roles: ['PlatformAdmin'] } })));
    expect(tenantAdmin.status).to.equal(200);
    expect(tenantAdmin.forwarded[0]!.headers['x-forwarded-role']).to.equal('user');
    const sys = await call(await w.idp.signJwt(claimsOf(sysadmin, { realm_access: undefined })));
    expect(sys.forwarded[0]!.headers['x-forwarded-role']).to.equal('admin');
  });

  it('the published key is used only with the algorithm it is published for (RS256)', async () => {
    expect((await call(await w.idp.signJwt(claimsOf(alice), { alg: 'RS256' }))).status).to.equal(200);
    for (const alg of ['RS384', 'RS512', 'PS256']) {
      const r = await call(await w.idp.signJwt(claimsOf(alice), { alg }));
      expect(r.status, alg).to.equal(401);
      expect(r.upstreamCalls).to.equal(0);
    }
  });

  const refused: Array<[string, () => Promise<string>]> = [
    ['expired', () => w.idp.signJwt(claimsOf(alice, { iat: now() - 600, exp: now() - 60 }))],
    ['not valid yet (nbf)', () => w.idp.signJwt(claimsOf(alice, { nbf: now() + 600 }))],
    ['no exp', () => w.idp.signJwt(claimsOf(alice, { exp: undefined }))],
    ['wrong issuer', () => w.idp.signJwt(claimsOf(alice, { iss: 'http://127.0.0.1:1/realms/platform' }))],
    ['issuer with a suffix', () => w.idp.signJwt(claimsOf(alice, { iss: `${w.idp.issuer}-evil` }))],
    ['issuer with a trailing slash', () => w.idp.signJwt(claimsOf(alice, { iss: `${w.idp.issuer}/` }))],
    ['wrong audience', () => w.idp.signJwt(claimsOf(alice, { aud: 'another-client', azp: 'another-client' }))],
    ['no audience, no azp', () => w.idp.signJwt(claimsOf(alice, { aud: undefined, azp: undefined }))],
    ['access token of another client', () => w.idp.accessTokenFor('alice', 'another-client')],
    ['alg: none', () => w.idp.signJwt(claimsOf(alice), { alg: 'none' })],
    ['HS256 keyed with the public key', () => w.idp.signJwt(claimsOf(alice), { alg: 'HS256' })],
    ['a key the issuer never published', () => w.idp.signForeignJwt(claimsOf(alice))],
    ['an ID token (typ ID)', () => w.idp.signJwt(claimsOf(alice, { typ: 'ID' }))],
    ['a refresh token (typ Refresh)', () => w.idp.signJwt(claimsOf(alice, { typ: 'Refresh' }))],
    ['an ID token of a provider that names no typ (at_hash)', () => w.idp.signJwt(claimsOf(alice, { typ: undefined, at_hash: 'x4Q8HQk3_bAOB6Ev5yWrOg' }))],
    ['an ID token of a provider that names no typ (c_hash)', () => w.idp.signJwt(claimsOf(alice, { typ: undefined, c_hash: 'LDktKdoQak3Pk0cnXxCltA' }))],
    [
      'an ID token of a provider that names no typ, without nonce or hashes (no scope: nothing says it is an access token)',
      () => w.idp.signJwt(claimsOf(alice, { typ: undefined })),
    ],
    ['an ID token of a provider that names no typ (nonce)', () => w.idp.signJwt(claimsOf(alice, { typ: undefined, nonce: 'n-0S6_WzA2Mj' }))],
    [
      'a logout token (events)',
      () => w.idp.signJwt(claimsOf(alice, { typ: undefined, events: { 'http://schemas.openid.net/event/backchannel-logout': {} }, jti: 'j1' })),
    ],
    ['no email', () => w.idp.signJwt(claimsOf(alice, { email: undefined }))],
    [
      'a tampered payload',
      async () => {
        const [h, , s] = (await w.idp.signJwt(claimsOf(alice))).split('.');
        return `${h}.${Buffer.from(JSON.stringify({ ...claimsOf(sysadmin), iss: w.idp.issuer, exp: now() + 300 })).toString('base64url')}.${s}`;
      },
    ],
  ];
  for (const [name, make] of refused) {
    it(`refuses a bearer JWT: ${name} (401, the upstream is not called)`, async () => {
      const r = await call(await make());
      expect(r.status).to.equal(401);
      expect(JSON.parse(r.body)).to.deep.equal({ detail: 'Not authenticated' });
      expect(r.upstreamCalls).to.equal(0);
    });
  }

  it("non-JWT bearer values and the chat front-end's own token are not identities of the gateway", async () => {
    const { jar } = await signIn(w.url, 'alice');
    await browse(jar, '/api/v1/auths/');
    const user = [...w.upstream.users.values()].find((u) => u.email === alice.email)!;
    for (const token of ['abc', 'abc.def.ghi', await w.upstream.tokenFor(user.id), w.upstream.apiKeyFor(user.id)]) {
      const r = await call(token);
      expect(r.status, token.slice(0, 12)).to.equal(401);
      expect(r.upstreamCalls).to.equal(0);
    }
  });

  it("with a session, the client's own upstream token is not forwarded: the session's own credential is", async () => {
    // Before: another user's token passed untouched beside the session (the chat front-end then
    // answered "User mismatch"; an upstream checking less would have acted as that other user).
    const { jar } = await signIn(w.url, 'alice');
    const bob =
      [...w.upstream.users.values()].find((u) => u.email === 'bob@globex.example') ??
      (await (async () => {
        const b = await signIn(w.url, 'bob');
        await browse(b.jar, '/api/v1/auths/');
        return [...w.upstream.users.values()].find((u) => u.email === 'bob@globex.example')!;
      })());
    const bobToken = await w.upstream.tokenFor(bob.id);
    const n = w.upstream.requests.length;
    const r = await browse(jar, '/api/v1/auths/', { headers: { authorization: `Bearer ${bobToken}` } });
    const seen = w.upstream.requests.slice(n).find((q) => q.url === '/api/v1/auths/')!;
    expect(seen.headers.authorization).to.be.a('string').and.not.equal(`Bearer ${bobToken}`);
    expect(seen.headers['x-forwarded-email']).to.equal(alice.email);
    expect(r.status).to.equal(200);
    expect((r.json() as { email: string }).email).to.equal(alice.email);
  });

  it('ALLOW_UPSTREAM_API_KEYS=true lets sk- keys through without a session and without trusted headers', async () => {
    const { jar } = await signIn(w.url, 'alice');
    await browse(jar, '/api/v1/auths/');
    const user = [...w.upstream.users.values()].find((u) => u.email === alice.email)!;
    const key = w.upstream.apiKeyFor(user.id);
    const obs = capturingObservability();
    const keyed = await createGateway({ ...w.settings, allowUpstreamApiKeys: true }, { obs });
    const { url } = await keyed.listen(0, '127.0.0.1');
    try {
      for (const headers of [{ authorization: `Bearer ${key}` }, { 'x-api-key': key }] as Array<Record<string, string>>) {
        const n = w.upstream.requests.length;
        const r = await browse(undefined, `${url}/api/v1/auths/`, {
          headers: { ...headers, 'X-Forwarded-Email': sysadmin.email, 'X-Forwarded-Role': 'admin' },
        });
        expect(r.status).to.equal(200);
        expect(r.json<{ email: string }>().email).to.equal(alice.email);
        const forwarded = w.upstream.requests.slice(n).filter((q) => q.url === '/api/v1/auths/');
        for (const q of forwarded) {
          const names = Object.keys(q.headers).map((h) => h.replace(/_/g, '-'));
          expect(
            names.filter((h) => /^x-forwarded-(email|name|role|groups)$/.test(h)),
            'no trusted header without a verified identity',
          ).to.deep.equal([]);
        }
      }
      expect((await browse(undefined, `${url}/api/v1/auths/`, { headers: { authorization: 'Bearer sk-0000' } })).status).to.equal(401);
      // default off: the same key gets nothing from the main gateway
      expect((await call(key)).status).to.equal(401);
    } finally {
      await keyed.close();
    }
  });
});

describe("sign-in: the issuer's JWKS is cached and follows key rotation", function () {
  this.timeout(20_000);
  let issuerServer: http.Server;
  let issuer: string;
  let gateway: Gateway;
  let gatewayUrl: string;
  let w: World;
  let jwksFetches = 0;
  let published: object[] = [];
  const keys: Array<{ kid: string; privateKey: CryptoKey }> = [];

  before(async () => {
    w = await startWorld();
    for (const kid of ['key-1', 'key-2']) {
      const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
      keys.push({ kid, privateKey: privateKey as CryptoKey });
      published.push({ ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' });
    }
    const both = published;
    published = [both[0]!];
    issuerServer = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/realms/r/.well-known/openid-configuration') {
        return res.end(
          JSON.stringify({
            issuer,
            authorization_endpoint: `${issuer}/auth`,
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}/certs`,
            response_types_supported: ['code'],
            subject_types_supported: ['public'],
            id_token_signing_alg_values_supported: ['ES256'],
          }),
        );
      }
      if (req.url === '/realms/r/certs') {
        jwksFetches++;
        return res.end(JSON.stringify({ keys: published }));
      }
      res.statusCode = 404;
      res.end('{}');
    });
    await new Promise<void>((r) => issuerServer.listen(0, '127.0.0.1', r));
    issuer = `http://127.0.0.1:${(issuerServer.address() as AddressInfo).port}/realms/r`;
    (issuerServer as unknown as { both: object[] }).both = both;
    const settings = loadSettings(
      {
        UPSTREAM_URL: w.upstream.url,
        OIDC_ISSUER_URL: issuer,
        OIDC_CLIENT_ID: CLIENT_ID,
        OIDC_CLIENT_SECRET: 's',
        SESSION_SECRET,
        CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
        CHATUI_ENABLE_ADMIN_EXPORT: 'false',
      },
      { stageFiles: false },
    );
    gateway = await createGateway(settings, { obs: capturingObservability() });
    gatewayUrl = (await gateway.listen(0, '127.0.0.1')).url;
  });
  after(async () => {
    await gateway?.close();
    await new Promise((r) => issuerServer?.close(r));
    await w?.close();
  });

  const sign = (i: number, sub = alice.sub) =>
    new SignJWT({ sub, aud: CLIENT_ID, azp: CLIENT_ID, scope: 'openid', email: alice.email, name: alice.name, groups: ['acme'] })
      .setProtectedHeader({ alg: 'ES256', kid: keys[i]!.kid })
      .setIssuer(issuer)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(keys[i]!.privateKey);
  const status = async (token: string) => (await browse(undefined, `${gatewayUrl}/api/v1/auths/`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('many tokens, one JWKS fetch', async () => {
    for (let i = 0; i < 5; i++) expect(await status(await sign(0, `${alice.sub}`))).to.equal(200);
    expect(jwksFetches).to.equal(1);
  });

  it('a token signed with a newly published key is accepted once the issuer publishes it (unknown kid refetches)', async () => {
    const token = await sign(1);
    // not published yet: refused
    expect(await status(token)).to.equal(401);
    published = (issuerServer as unknown as { both: object[] }).both;
    // jose refetches an unknown kid after its 30 s cool-down: step the clock past it
    const realNow = Date.now;
    Date.now = () => realNow() + 31_000;
    try {
      expect(await status(await sign(1))).to.equal(200);
    } finally {
      Date.now = realNow;
    }
    expect(jwksFetches).to.be.greaterThan(1);
    expect(await status(await sign(0))).to.equal(200);
  });
});
