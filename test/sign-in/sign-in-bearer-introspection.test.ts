// Sign-in: a realm bearer token of another client (its `azp` not the gateway's), whose session's
// end the realm would never tell the gateway, is confirmed with the realm by token introspection
// (RFC 7662): served while the realm says it is active, refused like an expired token once the
// realm says its session ended (within BEARER_INTROSPECTION_CACHE_SECONDS, at once with 0), a 503
// when the realm cannot say. Against the embedded realm (the real oidc-provider: an API client of
// its own signs a person in and gets a token meant for the gateway), and a realm of this file's for
// what the real one does not do on demand (hang, answer garbage).
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPair, exportJWK, SignJWT } from 'jose';
import { API_CLIENT, apiClientToken as apiClientTokenAt, browse, CLIENT_ID, SESSION_SECRET, startWorld, type World } from '../support/cookie-jar.js';
import { capturingObservability, type LogLine } from '../support/gateway-harness.js';
import { CookieJar } from '../../sandbox/cookie-jar.js';
import { logoutThroughIdp } from '../../sandbox/idp-browser.js';
import { demoAccounts } from '../../sandbox/demo-realm.js';
import { loadSettings, type Settings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import type { Observability } from '../../gateway/observability/observability.js';
import { sleep } from '../support/wait.js';
import { rawWebSocket } from '../support/websocket-wire.js';

const NOT_AUTHENTICATED = { detail: 'Not authenticated' };
const UNCHECKABLE = { detail: 'Your sign-in cannot be checked right now; try again in a few seconds' };

/** The realm's answers counted by result (gateway_bearer_introspections_total). */
async function introspections(obs: Observability): Promise<Record<string, number>> {
  return Object.fromEntries((await obs.metrics.bearerIntrospections.get()).values.map((v) => [String(v.labels.result), v.value]));
}

/** A call of the chat API with a bearer token at `url`: the status, the body, whether Open WebUI was reached. */
async function callAs(w: World, url: string, token: string) {
  const n = w.upstream.requests.length;
  const r = await browse(undefined, `${url}/api/v1/auths/`, { headers: { authorization: `Bearer ${token}` } });
  return {
    status: r.status,
    body: r.text ? (JSON.parse(r.text) as unknown) : undefined,
    retryAfter: r.headers.get('retry-after'),
    reached: w.upstream.requests.length > n,
  };
}

describe('sign-in: another client’s bearer token, confirmed with the realm (the embedded realm)', function () {
  this.timeout(30_000);
  const CACHE_SECONDS = 2;
  let w: World;

  before(async () => {
    w = await startWorld({ clients: [API_CLIENT], env: { BEARER_INTROSPECTION_CACHE_SECONDS: String(CACHE_SECONDS) } });
  });
  after(async () => {
    await w?.close();
  });

  const apiClientToken = (username: string) => apiClientTokenAt(w.idp.issuer, username);
  const signOutAtRealm = (jar: CookieJar) => logoutThroughIdp(`${w.idp.issuer}/protocol/openid-connect/logout`, jar);
  const call = (token: string, url = w.url) => callAs(w, url, token);

  it('served while the realm says active (one question per cache time), refused like an expired token within the cache time once its session ended at the realm; one audit line, the token in no log line', async () => {
    const carol = demoAccounts.find((a) => a.username === 'carol')!;
    const { token, realmSession } = await apiClientToken('carol');
    const before = await introspections(w.obs);
    for (let i = 0; i < 3; i++) expect((await call(token)).status).to.equal(200);
    expect((await introspections(w.obs)).active ?? 0, 'one question for three requests within the cache time').to.equal((before.active ?? 0) + 1);

    await signOutAtRealm(realmSession);
    const signedOut = Date.now();
    expect(
      w.obs.lines.some((l) => l.event === 'backchannel-logout'),
      'the realm told the gateway nothing: its client had no part in that session',
    ).to.equal(false);
    let refused: Awaited<ReturnType<typeof call>> | undefined;
    while (Date.now() - signedOut < (CACHE_SECONDS + 2) * 1000) {
      const r = await call(token);
      if (r.status !== 200) {
        refused = r;
        break;
      }
      await sleep(100);
    }
    const after = Date.now() - signedOut;
    expect(refused?.status, 'refused once the realm says its session ended').to.equal(401);
    expect(after, 'within the cache time').to.be.at.most(CACHE_SECONDS * 1000 + 500);
    expect(refused!.body).to.deep.equal(NOT_AUTHENTICATED);
    expect(refused!.reached).to.equal(false);
    for (let i = 0; i < 3; i++) expect((await call(token)).status, 'and from then on').to.equal(401);

    const ended = w.obs.lines.filter((l: LogLine) => l.event === 'bearer-session-ended');
    expect(ended, 'logged once').to.have.length(1);
    expect(ended[0]).to.include({ sub: carol.sub, client: API_CLIENT.client_id, name: 'audit' });
    expect((await introspections(w.obs)).ended).to.equal(1);
    expect(JSON.stringify(w.obs.lines)).to.not.include(token);
    expect(JSON.stringify(w.obs.lines)).to.not.include(token.split('.')[2]);
  });

  it('BEARER_INTROSPECTION_CACHE_SECONDS=0: the realm asked on every request, and the token refused at the first request after its session ended', async () => {
    const obs = capturingObservability();
    const eager = await createGateway({ ...w.settings, oidc: { ...w.settings.oidc, introspectionCacheSeconds: 0 } }, { obs });
    const { url } = await eager.listen(0, '127.0.0.1');
    try {
      const { token, realmSession } = await apiClientToken('bob');
      for (let i = 0; i < 3; i++) expect((await call(token, url)).status).to.equal(200);
      expect((await introspections(obs)).active).to.equal(3);
      await signOutAtRealm(realmSession);
      expect((await call(token, url)).status).to.equal(401);
    } finally {
      await eager.close();
    }
  });

  it('the gateway’s own client’s token (its sessions’ ends come by back-channel logout) is never asked about; nor is any token with BEARER_INTROSPECTION=false, whose ended sessions are then served', async () => {
    // Signed by the realm's key but issued by no session of it: the realm would say "not active" if asked.
    const own = await w.idp.accessTokenFor('alice', CLIENT_ID);
    const before = await introspections(w.obs);
    for (let i = 0; i < 3; i++) expect((await call(own)).status).to.equal(200);
    expect(await introspections(w.obs)).to.deep.equal(before);

    const obs = capturingObservability();
    const off = await createGateway({ ...w.settings, oidc: { ...w.settings.oidc, bearerIntrospection: false } }, { obs });
    const { url } = await off.listen(0, '127.0.0.1');
    try {
      const { token, realmSession } = await apiClientToken('bob');
      await signOutAtRealm(realmSession);
      expect((await call(token, url)).status, 'its session ended, and nobody asked').to.equal(200);
      expect(await introspections(obs)).to.deep.equal({});
    } finally {
      await off.close();
    }
  });

  it('the realm down: a kept "active" serves until its cache time ends, then 503 with Retry-After (not 401); a token never asked about gets 503 at once; the realm back, served again', async () => {
    const { token } = await apiClientToken('bob');
    const { token: unseen } = await apiClientToken('bob');
    expect((await call(token)).status).to.equal(200);
    const kept = Date.now();
    await w.idp.down();
    try {
      expect((await call(token)).status, 'the answer kept').to.equal(200);
      const fresh = await call(unseen);
      expect(fresh.status, 'nothing kept: fail closed').to.equal(503);
      expect(fresh.body).to.deep.equal(UNCHECKABLE);
      expect(fresh.retryAfter).to.equal('5');
      expect(fresh.reached).to.equal(false);
      await sleep(CACHE_SECONDS * 1000 - (Date.now() - kept) + 100);
      const expired = await call(token);
      expect(expired.status, 'the kept answer’s time is up').to.equal(503);
      expect(expired.reached).to.equal(false);
    } finally {
      await w.idp.up();
    }
    expect((await call(token)).status).to.equal(200);
    expect((await call(unseen)).status).to.equal(200);
    expect((await introspections(w.obs)).unavailable).to.be.at.least(2);
  });
});

describe('sign-in: another client’s bearer token when the realm hangs or answers garbage', function () {
  this.timeout(30_000);
  let realm: http.Server;
  let issuer: string;
  let w: World;
  let gateway: Gateway;
  let url: string;
  let obs: Observability & { lines: LogLine[] };
  let settings: Settings;
  let calls = 0;
  /** whether discovery names the introspection endpoint */
  let advertised = true;
  /** what the introspection endpoint does next */
  let mode: 'active' | 'slow-active' | 'hang' | 'html' | 'status-500' | 'active-not-boolean' | 'another-subject' = 'active';
  let signingKey: CryptoKey;
  let publicJwk: object;
  const alice = demoAccounts.find((a) => a.username === 'alice')!;

  const introspectionAnswer = (res: http.ServerResponse) => {
    const json = (status: number, body: object) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (mode === 'hang') return; // never answers; the server's close cuts it
    if (mode === 'html') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy error</html>');
    if (mode === 'status-500') return json(500, { error: 'unknown_error' });
    if (mode === 'active-not-boolean') return json(200, { active: 'true', sub: alice.sub });
    if (mode === 'another-subject') return json(200, { active: true, sub: 'someone-else' });
    if (mode === 'slow-active') return void setTimeout(() => json(200, { active: true, sub: alice.sub }), 300);
    json(200, { active: true, sub: alice.sub });
  };

  before(async () => {
    w = await startWorld();
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    signingKey = privateKey as CryptoKey;
    publicJwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    realm = http.createServer((req, res) => {
      const json = (body: object) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/realms/r/.well-known/openid-configuration')
        return json({
          issuer,
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `${issuer}/token`,
          ...(advertised ? { introspection_endpoint: `${issuer}/introspect` } : {}),
          jwks_uri: `${issuer}/certs`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['ES256'],
        });
      if (req.url === '/realms/r/certs') return json({ keys: [publicJwk] });
      if (req.url === '/realms/r/introspect' && req.method === 'POST') {
        calls++;
        return void req.resume().on('end', () => introspectionAnswer(res));
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => realm.listen(0, '127.0.0.1', r));
    issuer = `http://127.0.0.1:${(realm.address() as AddressInfo).port}/realms/r`;
    settings = loadSettings(
      {
        UPSTREAM_URL: w.upstream.url,
        OIDC_ISSUER_URL: issuer,
        OIDC_CLIENT_ID: CLIENT_ID,
        OIDC_CLIENT_SECRET: 's',
        SESSION_SECRET,
        CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
        CHATUI_ENABLE_ADMIN_EXPORT: 'false',
        BEARER_INTROSPECTION_CACHE_SECONDS: '30',
      },
      { stageFiles: false },
    );
    obs = capturingObservability();
    gateway = await createGateway(settings, { obs });
    url = (await gateway.listen(0, '127.0.0.1')).url;
  });
  after(async () => {
    await gateway?.close();
    realm?.closeAllConnections();
    await new Promise((r) => realm?.close(r));
    await w?.close();
  });

  /** A token of another client, meant for the gateway. */
  const apiToken = () =>
    new SignJWT({ sub: alice.sub, aud: CLIENT_ID, azp: 'platform-cli', typ: 'Bearer', scope: 'openid', email: alice.email, name: alice.name, groups: ['acme'] })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(issuer)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(signingKey);
  const call = (token: string) => callAs(w, url, token);

  it('twenty requests at once with one new token: one question to the realm, twenty answers', async () => {
    mode = 'slow-active';
    const token = await apiToken();
    const n = calls;
    const answers = await Promise.all(Array.from({ length: 20 }, () => call(token)));
    expect(answers.map((a) => a.status)).to.deep.equal(Array(20).fill(200));
    expect(calls - n).to.equal(1);
  });

  for (const [what, m] of [
    ['an HTML page', 'html'],
    ['a 500', 'status-500'],
    ['"active" that is not a boolean', 'active-not-boolean'],
    ['"active" about another subject', 'another-subject'],
  ] as const)
    it(`the realm answers ${what}: 503 with Retry-After, Open WebUI not reached`, async () => {
      mode = m;
      const r = await call(await apiToken());
      expect(r.status).to.equal(503);
      expect(r.body).to.deep.equal(UNCHECKABLE);
      expect(r.retryAfter).to.equal('5');
      expect(r.reached).to.equal(false);
    });

  it('the realm hangs: 503 once the realm call’s timeout (5 s) is up, not before, not never', async () => {
    mode = 'hang';
    const t0 = Date.now();
    const r = await call(await apiToken());
    const took = Date.now() - t0;
    expect(r.status).to.equal(503);
    expect(r.body).to.deep.equal(UNCHECKABLE);
    expect(took).to.be.within(4_500, 9_000);
    expect(obs.lines.some((l) => l.msg === 'bearer token refused: the realm cannot confirm its session')).to.equal(true);
  });

  it('a realm whose discovery names no introspection endpoint: another client’s token gets 503 (turn BEARER_INTROSPECTION off there), the gateway’s own client’s is served', async () => {
    advertised = false;
    const silent = await createGateway(settings, { obs: capturingObservability() });
    const at = (await silent.listen(0, '127.0.0.1')).url;
    try {
      const r = await callAs(w, at, await apiToken());
      expect(r.status).to.equal(503);
      expect(r.body).to.deep.equal(UNCHECKABLE);
      const own = await new SignJWT({ sub: alice.sub, aud: CLIENT_ID, azp: CLIENT_ID, typ: 'Bearer', scope: 'openid', email: alice.email, name: alice.name })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuer(issuer)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(signingKey);
      expect((await callAs(w, at, own)).status).to.equal(200);
    } finally {
      advertised = true;
      await silent.close();
    }
  });

  it('a WebSocket upgrade with another client’s token: 101 while the realm says active, 503 with Retry-After when it cannot say', async () => {
    mode = 'active';
    const open = await rawWebSocket(url, { authorization: `Bearer ${await apiToken()}` });
    open.destroy();
    expect(open.head).to.match(/^HTTP\/1\.1 101 /);
    mode = 'status-500';
    const refused = await rawWebSocket(url, { authorization: `Bearer ${await apiToken()}` });
    refused.destroy();
    expect(refused.head).to.match(/^HTTP\/1\.1 503 /);
    expect(refused.head).to.match(/\r\nretry-after: 5\r\n/i);
  });
});
