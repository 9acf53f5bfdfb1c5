// What becomes of the realm's refresh token at sign-out: a browser sent on to the realm's logout
// with id_token_hint ends the realm session there, so the gateway leaves the token alone for the
// grace (revoking first ends a Keycloak session without its brokered provider's logout: the real
// Keycloak suite shows that); a browser that never gets there still has it revoked after the grace,
// unless the realm's back-channel logout said its session ended, and a gateway stopping meanwhile
// revokes it at once. The real oidc-provider answers introspection.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { browse, CLIENT_ID, CLIENT_SECRET, gatewayClient, SESSION_SECRET, signIn, worldEnv, type Jar } from '../support/cookie-jar.js';
import { capturingObservability } from '../support/gateway-harness.js';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { loadSettings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { createAuthenticator } from '../../gateway/auth/authenticator.js';
import { processState } from '../../gateway/state/process-state.js';
import { SessionCodec, type SessionData } from '../../gateway/auth/session-cookie.js';
import { freePort } from '../support/raw-http.js';
import { sleep, until } from '../support/wait.js';

const GRACE_MS = 1_500;
const LOGOUT_EVENT = { 'http://schemas.openid.net/event/backchannel-logout': {} };

describe('sign-out: the realm refresh token, revoked once the realm’s own logout has had its chance', function () {
  this.timeout(60_000);
  let idp: TestIdp;
  let upstream: OpenWebUIStandIn;
  let dir: string;
  let url: string;
  let gateway: Gateway | undefined;
  const codec = new SessionCodec([SESSION_SECRET], { secure: false, rollingSeconds: 86_400, absoluteSeconds: 604_800 });

  const start = async () => {
    const settings = loadSettings(worldEnv({ upstreamUrl: upstream.url, publicUrl: url, issuer: idp.issuer, providersFile: join(dir, 'providers.json') }), {
      stageFiles: false,
    });
    const obs = capturingObservability();
    const sharedState = processState(obs);
    const authenticator = await createAuthenticator(settings, obs, sharedState, { realmLogoutGraceMs: GRACE_MS });
    gateway = await createGateway(settings, { obs, sharedState, authenticator });
    await gateway.listen(Number(new URL(url).port), '127.0.0.1');
  };
  const refreshTokenIn = async (jar: Jar) => ((await codec.decrypt(jar.get('appSession')!))!.data as SessionData).refresh_token!;
  /** The realm's word on a token (RFC 7662), asked as the gateway's client. */
  const active = async (token: string) => {
    const res = await fetch(`${idp.issuer}/protocol/openid-connect/token/introspect`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${btoa(`${CLIENT_ID}:${CLIENT_SECRET}`)}` },
      body: new URLSearchParams({ token, token_type_hint: 'refresh_token' }).toString(),
    });
    return ((await res.json()) as { active: boolean }).active;
  };

  before(async () => {
    upstream = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: false, groups: ['acme', 'globex', 'initech'] });
    url = `http://127.0.0.1:${await freePort()}`;
    idp = await startIdp({ clients: [gatewayClient(url)], accessTokenTtl: 300 });
    dir = mkdtempSync(join(tmpdir(), 'sign-out-refresh-'));
    writeFileSync(join(dir, 'providers.json'), JSON.stringify(demoIdentityProviders));
  });
  beforeEach(start);
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });
  after(async () => {
    await Promise.all([idp?.close(), upstream?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('the browser is sent to the realm’s logout with id_token_hint; the refresh token stays live for the grace (the realm ends it there), then is revoked for a browser that never arrived', async () => {
    const { jar } = await signIn(url, 'alice');
    const token = await refreshTokenIn(jar);
    expect(await active(token), 'signed in').to.equal(true);

    const out = await browse(jar, '/auth/logout');
    expect(out.status).to.equal(302);
    const realmLogout = new URL(out.location!);
    expect(realmLogout.href.startsWith(`${idp.issuer}/protocol/openid-connect/logout`), out.location).to.equal(true);
    expect(realmLogout.searchParams.get('id_token_hint'), 'the realm ends its session without asking').to.be.a('string');
    const signedOutAt = Date.now();
    expect(await active(token), 'left to the realm’s logout for now').to.equal(true);

    // the browser never goes on to the realm: the gateway revokes the token itself
    await until('the refresh token revoked', async () => !(await active(token)), { ms: 20_000, everyMs: 100 });
    expect(Date.now() - signedOutAt, 'not before the grace').to.be.at.least(GRACE_MS - 100);
  });

  it('the chat front-end’s sign-out: the same, its redirect_url the realm’s logout', async () => {
    const { jar } = await signIn(url, 'alice');
    const token = await refreshTokenIn(jar);
    const out = await browse(jar, '/api/v1/auths/signout', { method: 'POST', headers: { origin: url, 'sec-fetch-site': 'same-origin' } });
    expect(out.status, out.text).to.equal(200);
    expect(new URL(out.json<{ redirect_url: string }>().redirect_url).searchParams.get('id_token_hint')).to.be.a('string');
    expect(await active(token), 'left to the realm’s logout for now').to.equal(true);
    await until('the refresh token revoked', async () => !(await active(token)), { ms: 20_000, everyMs: 100 });
  });

  it('the realm’s back-channel logout names that realm session within the grace: nothing left to revoke, nothing revoked', async () => {
    const { jar } = await signIn(url, 'alice');
    const session = (await codec.decrypt(jar.get('appSession')!))!.data as SessionData;
    expect(session.sid, 'the realm session').to.be.a('string');
    expect((await browse(jar, '/auth/logout')).status).to.equal(302);
    // what the realm sends once the browser's logout ended its session (that stand-in session
    // stays, so a revocation would show)
    const logoutToken = await idp.signJwt({
      aud: CLIENT_ID,
      sub: session.user.sub,
      sid: session.sid,
      jti: `lt-${Date.now()}`,
      events: LOGOUT_EVENT,
      exp: undefined,
    });
    const told = await fetch(`${url}/auth/backchannel-logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ logout_token: logoutToken }),
    });
    expect(told.status).to.equal(204);
    await sleep(GRACE_MS + 1_000);
    expect(await active(session.refresh_token!), 'not revoked').to.equal(true);
  });

  it('a gateway stopping within the grace revokes what still waits, at once', async () => {
    const { jar } = await signIn(url, 'alice');
    const token = await refreshTokenIn(jar);
    expect((await browse(jar, '/auth/logout')).status).to.equal(302);
    await gateway!.close();
    gateway = undefined;
    expect(await active(token), 'revoked as the gateway stopped').to.equal(false);
  });
});
