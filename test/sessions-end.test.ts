// Sessions end when they should, one instance: one-click logout (id_token_hint), the
// chat front-end's own sign-out answered by the gateway, and OIDC Back-Channel Logout from the
// realm, against the real oidc-provider over real sockets. Several instances: sessions-shared.test.ts.
import { expect } from 'chai';
import { browse, signIn, startWorld, CLIENT_ID, type World } from './support/cookie-jar.js';
import { logoutThroughIdp, peekJwt } from '../sandbox/idp-browser.js';
import { sleep } from './support/wait.js';

const SIGNOUT = '/api/v1/auths/signout';
const LOGOUT_EVENT = { 'http://schemas.openid.net/event/backchannel-logout': {} };

describe("sessions that end: logout, the chat front-end's sign-out, back-channel logout", function () {
  this.timeout(30_000);
  let w: World;
  before(async () => {
    w = await startWorld();
  });
  after(() => w?.close());

  const postLogoutToken = (token: string) =>
    fetch(`${w.url}/auth/backchannel-logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ logout_token: token }),
    });

  describe('one-click logout', () => {
    it('/auth/logout sends the realm the ID token of this session as id_token_hint: no confirmation page, back on the login page', async () => {
      const { jar, idpJar } = await signIn(w.url, 'alice');
      const out = await browse(jar, '/auth/logout');
      expect(out.status).to.equal(302);
      const end = new URL(out.location!);
      expect(end.searchParams.get('client_id')).to.equal(CLIENT_ID);
      expect(end.searchParams.get('post_logout_redirect_uri')).to.equal(`${w.url}/auth/login`);
      const hint = end.searchParams.get('id_token_hint');
      expect(hint, 'id_token_hint').to.be.a('string');
      const claims = peekJwt(hint!);
      expect(claims.aud).to.equal(CLIENT_ID);
      expect(claims.email).to.equal('alice@acme.example');
      // The realm (like Keycloak with a valid hint) ends its session without asking.
      const page = await fetch(end, { headers: { cookie: idpJar.header(end.href) } });
      expect(await page.text()).to.include('<script id="auto-logout">');
      const back = await logoutThroughIdp(end.href, idpJar);
      expect(back.redirectUrl).to.equal(`${w.url}/auth/login`);
    });

    it('/de/auth/logout comes back to the German login page', async () => {
      const { jar } = await signIn(w.url, 'bob');
      const out = await browse(jar, '/de/auth/logout');
      expect(out.status).to.equal(302);
      expect(new URL(out.location!).searchParams.get('post_logout_redirect_uri')).to.equal(`${w.url}/de/auth/login`);
      expect(jar.get('appSession')).to.equal(undefined);
    });
  });

  describe("the chat front-end's own sign-out (POST /api/v1/auths/signout since Open WebUI 0.10.2, GET before)", () => {
    for (const method of ['POST', 'GET'])
      it(`${method}: ends the gateway session and the chat front-end’s cookies, and sends the browser through the realm to the login page`, async () => {
        const { jar, idpJar } = await signIn(w.url, 'alice');
        expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
        const stolen = jar.clone();
        const before = w.upstream.requests.length;
        // As Open WebUI 0.12.4's front-end sends it: same origin, JSON content type, cookies included.
        const out = await browse(
          jar,
          SIGNOUT,
          method === 'POST' ? { method, headers: { 'content-type': 'application/json', origin: w.url, 'sec-fetch-site': 'same-origin' } } : {},
        );
        expect(out.status).to.equal(200);
        const body = out.json<{ status: boolean; redirect_url: string }>();
        expect(body.status).to.equal(true);
        const end = new URL(body.redirect_url);
        expect(end.origin + end.pathname).to.equal(`${w.idp.issuer}/protocol/openid-connect/logout`);
        expect(end.searchParams.get('post_logout_redirect_uri')).to.equal(`${w.url}/auth/login`);
        expect(end.searchParams.get('id_token_hint')).to.be.a('string');
        for (const name of ['appSession', 'token', 'owui-session', 'oui-session', 'oauth_id_token']) {
          expect(
            out.setCookies.some((c) => c.startsWith(`${name}=;`) && /Expires=Thu, 01 Jan 1970/.test(c)),
            `${name} cleared`,
          ).to.equal(true);
        }
        expect(
          w.upstream.requests.slice(before).some((r) => r.url.includes('/auths/signout')),
          'never forwarded',
        ).to.equal(false);
        expect((await browse(jar, '/api/v1/auths/')).status).to.equal(401);
        expect((await browse(stolen, '/api/v1/auths/')).status, 'a copy of the old cookie').to.equal(401);
        const back = await logoutThroughIdp(end.href, idpJar);
        expect(back.redirectUrl).to.equal(`${w.url}/auth/login`);
        expect(w.obs.lines.some((l) => l.event === 'sign-out' && l.via === 'chat front-end')).to.equal(true);
      });

    it('without a session it still answers as the chat front-end expects; other methods 405; a cross-site request 403', async () => {
      for (const method of ['POST', 'GET']) {
        const anonymous = await fetch(`${w.url}${SIGNOUT}`, { method });
        expect(anonymous.status).to.equal(200);
        expect(((await anonymous.json()) as { status: boolean }).status).to.equal(true);
      }
      const put = await fetch(`${w.url}${SIGNOUT}`, { method: 'PUT' });
      expect(put.status).to.equal(405);
      expect(put.headers.get('allow')).to.equal('GET, POST');
      const { jar } = await signIn(w.url, 'alice');
      for (const method of ['POST', 'GET']) {
        const crossSite = await browse(jar, SIGNOUT, { method, headers: { 'sec-fetch-site': 'cross-site' } });
        expect(crossSite.status, `${method} cross-site`).to.equal(403);
      }
      const foreign = await browse(jar, SIGNOUT, { method: 'POST', headers: { origin: 'https://evil.example' } });
      expect(foreign.status, 'POST from another origin').to.equal(403);
      expect((await browse(jar, '/api/v1/auths/')).status, 'still signed in').to.equal(200);
    });
  });

  describe('OIDC Back-Channel Logout (POST /auth/backchannel-logout)', () => {
    it('the realm ending the session (signed out elsewhere) ends the gateway session at once', async () => {
      const { jar, idpJar } = await signIn(w.url, 'alice');
      const other = await signIn(w.url, 'alice'); // another browser, another realm session
      expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
      // The user signs out at the realm itself (another application, or the account console).
      const events: string[] = [];
      w.idp.provider.on('backchannel.error', (_ctx: unknown, err: Error) => events.push(`error ${err.message}`));
      w.idp.provider.on('backchannel.success', () => events.push('success'));
      const back = await logoutThroughIdp(`${w.idp.issuer}/protocol/openid-connect/logout?client_id=${CLIENT_ID}`, idpJar);
      expect(events, 'the realm posted its logout token and the gateway took it').to.deep.equal(['success']);
      expect(back.redirectUrl).to.equal(undefined);
      expect((await browse(jar, '/api/v1/auths/')).status).to.equal(401);
      expect((await browse(other.jar, '/api/v1/auths/')).status, 'the other realm session is not named').to.equal(200);
      expect(w.obs.lines.some((l) => l.event === 'backchannel-logout' && typeof l.sid === 'string')).to.equal(true);
    });

    it('a token naming only the subject ends every session of that user begun before it', async () => {
      const a = await signIn(w.url, 'bob');
      const b = await signIn(w.url, 'bob');
      const carol = await signIn(w.url, 'alice');
      const sub = (await browse(a.jar, '/auth/session')).json<{ user: { sub: string } }>().user.sub;
      await sleep(1_100); // iat has a resolution of one second
      const token = await w.idp.signJwt({ aud: CLIENT_ID, sub, jti: 'sub-only-1', events: LOGOUT_EVENT, exp: undefined });
      expect((await postLogoutToken(token)).status).to.equal(204);
      expect((await browse(a.jar, '/api/v1/auths/')).status).to.equal(401);
      expect((await browse(b.jar, '/api/v1/auths/')).status).to.equal(401);
      expect((await browse(carol.jar, '/api/v1/auths/')).status, 'another user').to.equal(200);
      await sleep(1_100); // a session begun in the token's own second counts as before it
      const after = await signIn(w.url, 'bob');
      expect((await browse(after.jar, '/api/v1/auths/')).status, 'a session begun after the token').to.equal(200);
    });

    it('refuses what is not a valid, fresh, unused logout token from the realm (400) and ends nothing', async () => {
      const { jar } = await signIn(w.url, 'alice');
      const sub = (await browse(jar, '/auth/session')).json<{ user: { sub: string } }>().user.sub;
      const base = { aud: CLIENT_ID, sub, events: LOGOUT_EVENT, exp: undefined };
      // invalid_request: no token the realm signed for this client (OIDC Back-Channel Logout 2.6);
      // application_error: one that verifies but the gateway cannot act on once only (no jti, stale)
      const refused: Array<[string, string, 'invalid_request' | 'application_error']> = [
        ['no token', '', 'invalid_request'],
        ['not a JWT', 'garbage', 'invalid_request'],
        ['foreign key', await w.idp.signForeignJwt({ ...base, jti: 'f1' }), 'invalid_request'],
        ['another audience', await w.idp.signJwt({ ...base, aud: 'someone-else', jti: 'f2' }), 'invalid_request'],
        ['another issuer', await w.idp.signJwt({ ...base, iss: 'https://evil.example/realms/platform', jti: 'f3' }), 'invalid_request'],
        ['no events claim', await w.idp.signJwt({ ...base, events: undefined, jti: 'f4' }), 'invalid_request'],
        ['a nonce (an ID token, not a logout token)', await w.idp.signJwt({ ...base, nonce: 'n', jti: 'f5' }), 'invalid_request'],
        ['no jti', await w.idp.signJwt({ ...base }), 'application_error'],
        ['no iat', await w.idp.signJwt({ ...base, iat: undefined, jti: 'f6' }), 'application_error'],
        ['iat an hour old', await w.idp.signJwt({ ...base, iat: Math.floor(Date.now() / 1000) - 3600, jti: 'f7' }), 'application_error'],
        ['neither sid nor sub', await w.idp.signJwt({ ...base, sub: undefined, jti: 'f8' }), 'invalid_request'],
        ['unsigned (alg none)', await w.idp.signJwt({ ...base, jti: 'f9' }, { alg: 'none' }), 'invalid_request'],
      ];
      for (const [why, token, error] of refused) {
        const res = await postLogoutToken(token);
        expect(res.status, why).to.equal(400);
        expect(((await res.json()) as { error: string }).error, why).to.equal(error);
      }
      expect((await browse(jar, '/api/v1/auths/')).status, 'nothing ended').to.equal(200);

      // A valid token is used once: the same jti again is a replay.
      const once = await w.idp.signJwt({ ...base, sub: 'someone-else', jti: 'once-1' });
      expect((await postLogoutToken(once)).status).to.equal(204);
      expect((await postLogoutToken(once)).status).to.equal(400);
    });
  });
});
