// Every sign-in flow against the real Keycloak: `npm run test:keycloak`, after
// `scripts/keycloak.sh install`. One Keycloak boot for the whole suite (test/keycloak/world.ts),
// real sockets, real Chromium where a person clicks (Keycloak's own login form, its broker).
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, openPage } from '../support/browser.js';
import type { RecordedRequest } from '../../sandbox/open-webui/stand-in.js';
import {
  apiClient,
  kcWorld,
  REALM,
  CLIENT_ID,
  CLIENT_SECRET,
  INTROSPECTION_CACHE_SECONDS,
  SESSION_SECRET,
  type KcWorld,
  type GatewayInstance,
} from './world.js';
import { pointRealmAt } from '../../sandbox/keycloak.js';
import { noGroupsName } from '../../config/settings.js';
import { SessionCodec, type SessionData } from '../../gateway/auth/session-cookie.js';
import { sleep, until } from '../support/wait.js';

/** The groups header of a user in no realm group: the group no one has (Open WebUI ignores an empty header). */
const NO_GROUP = noGroupsName(SESSION_SECRET);

const TRUSTED = ['x-forwarded-email', 'x-forwarded-name', 'x-forwarded-role', 'x-forwarded-groups'] as const;

/** The trusted headers of the last request the chat front-end received for `path` with this email. */
function trustedSeen(requests: RecordedRequest[], email: string, path = '/api/v1/auths/'): Record<string, string | undefined> {
  const r = [...requests].reverse().find((q) => q.url === path && q.headers['x-forwarded-email'] === email);
  if (!r) throw new Error(`the chat front-end received no ${path} for ${email}`);
  return Object.fromEntries(TRUSTED.map((h) => [h, r.headers[h] as string | undefined]));
}

/** On Keycloak's own login form (any realm): type the password and press "Sign In". */
async function signInAtKeycloak(page: Page, username: string, password: string, landsOn: string): Promise<void> {
  await page.waitForSelector('#kc-form-login');
  await page.fill('#username', username);
  await page.fill('#password', password);
  await Promise.all([page.waitForURL((u) => u.href.startsWith(landsOn), { timeout: 30_000 }), page.click('#kc-login')]);
}

const cookieHeader = async (context: BrowserContext, url: string) => (await context.cookies(url)).map((c) => `${c.name}=${c.value}`).join('; ');

async function sessionAt(
  url: string,
  cookie: string,
): Promise<{ authenticated: boolean; user?: { email: string; roles: string[]; admin: boolean }; tenants?: string[]; active_tenant?: string | null }> {
  const res = await fetch(`${url}/auth/session`, { headers: { cookie } });
  return (await res.json()) as never;
}

describe('the real Keycloak: every sign-in flow against the deployment realm', function () {
  this.timeout(300_000);
  let w: KcWorld;
  let browser: Browser;

  before(async function () {
    this.timeout(400_000);
    // the browser first: a Keycloak that fails to start then leaves nothing open
    browser = await launchChromium();
    w = await kcWorld();
  });
  after(async () => {
    await browser?.close();
  });

  /** A person signs in at gateway A through Keycloak's own form; the page the gateway lands on. */
  async function browserSignIn(username: string, password: string, start = '/auth/start') {
    const opened = await openPage(browser);
    await opened.page.goto(`${w.a.url}${start}`);
    await signInAtKeycloak(opened.page, username, password, w.a.url);
    return opened;
  }

  describe('code flow through Keycloak’s login form', () => {
    const cases = [
      { username: 'alice', password: 'alice-pass', email: 'alice@acme.example', name: 'Alice Acme', role: 'user', groups: 'acme', what: 'a tenant user' },
      {
        username: 'sysadmin',
        password: 'sysadmin-pass',
        email: 'sysadmin@platform.example',
        name: 'Sam Sysadmin',
        role: 'admin',
        groups: NO_GROUP,
        what: 'PlatformSysAdmin: a chat admin',
      },
      {
        username: 'tina',
        password: 'tina-pass',
        email: 'tina@acme.example',
        name: 'Tina Tenantadmin',
        role: 'user',
        groups: 'acme',
        what: 'PlatformAdmin in the platform store only: an ordinary chat user',
      },
    ];
    for (const c of cases) {
      it(`${c.username} (${c.what}) signs in; the chat front-end is told exactly who they are`, async () => {
        const { page, context, close, errors } = await browserSignIn(c.username, c.password);
        try {
          // The stand-in's page shows who the chat front-end thinks is signed in.
          await page.waitForSelector('#who');
          expect(await page.textContent('#role')).to.equal(c.role);
          expect(await page.textContent('#who')).to.contain(c.email);
          expect(trustedSeen(w.upstream.requests, c.email)).to.deep.equal({
            'x-forwarded-email': c.email,
            'x-forwarded-name': c.name,
            'x-forwarded-role': c.role,
            'x-forwarded-groups': c.groups,
          });
          const session = await sessionAt(w.a.url, await cookieHeader(context, w.a.url));
          expect(session.authenticated).to.equal(true);
          expect(session.user!.admin).to.equal(c.role === 'admin');
          expect(session.user!.roles).to.not.include('PlatformAdmin');
          expect(errors).to.deep.equal([]);
        } finally {
          await close();
        }
      });
    }
  });

  describe('the provider catalog from Keycloak’s Admin REST API', () => {
    const list = async (url = w.a.url) => (await fetch(`${url}/api/v1/auth-providers/`)).json();
    const one = async (alias: string) => (await fetch(`${w.a.url}/api/v1/auth-providers/${alias}`)).json();
    const tenant = async (id: string) => {
      const res = await fetch(`${w.a.url}/api/v1/auth-providers/tenants/${id}`);
      expect(res.status).to.equal(200);
      return res.json();
    };

    it('the gateway’s service account holds only view-identity-providers', async () => {
      const clients = await w.kc.admin<Array<{ id: string }>>('GET', `/admin/realms/${REALM}/clients?clientId=${CLIENT_ID}`);
      const sa = await w.kc.admin<{ id: string }>('GET', `/admin/realms/${REALM}/clients/${clients.body[0]!.id}/service-account-user`);
      const mappings = await w.kc.admin<{ clientMappings?: Record<string, { mappings: Array<{ name: string }> }> }>(
        'GET',
        `/admin/realms/${REALM}/users/${sa.body.id}/role-mappings`,
      );
      const clientRoles = Object.entries(mappings.body.clientMappings ?? {}).flatMap(([client, m]) => m.mappings.map((r) => `${client}:${r.name}`));
      expect(clientRoles).to.deep.equal(['realm-management:view-identity-providers']);
    });

    it('enabled, disabled, hidden and link-only providers give exactly the spec’s answers', async () => {
      expect(await list()).to.deep.equal({
        welcome_page: false,
        providers: [
          { alias: 'acme-entra', display_name: 'Acme (Microsoft Entra ID)' },
          { alias: 'globex-okta', display_name: 'Globex (Okta)' },
        ],
      });
      expect(await one('acme-entra')).to.deep.equal({ alias: 'acme-entra', display_name: 'Acme (Microsoft Entra ID)' });
      expect(await one('hidden-saml')).to.deep.equal({ alias: 'hidden-saml', display_name: 'Hidden SAML partner' });
      expect(await one('partner-linkonly')).to.equal(null);
      expect(await one('legacy-disabled')).to.equal(null);
      expect(await one('no-such-provider')).to.equal(null);
      expect(await tenant('acme')).to.deep.equal({ alias: 'acme-entra' });
      expect(await tenant('hidden')).to.deep.equal({ alias: 'hidden-saml' });
      expect(await tenant('partner')).to.deep.equal({ alias: null });
      expect(await tenant('legacy')).to.deep.equal({ alias: null });
      expect(await tenant('initech')).to.deep.equal({ alias: null });
      expect(await tenant('nobody')).to.deep.equal({ alias: null });
    });

    it('more providers than one page of the admin API: every page is read', async () => {
      const extra = Array.from({ length: 101 }, (_, i) => `bulk-${String(i).padStart(3, '0')}`);
      const create = (alias: string, i: number) =>
        w.kc.admin('POST', `/admin/realms/${REALM}/identity-provider/instances`, {
          alias,
          displayName: `Bulk ${alias}`,
          providerId: 'oidc',
          enabled: true,
          config: {
            clientId: 'x',
            clientSecret: 'x',
            authorizationUrl: 'https://bulk.example/auth',
            tokenUrl: 'https://bulk.example/token',
            guiOrder: String(100 + i),
          },
        });
      try {
        for (let i = 0; i < extra.length; i += 10) await Promise.all(extra.slice(i, i + 10).map((alias, j) => create(alias, i + j)));
        // Once the cache turns, the list is read again: 103 providers, two pages of 100.
        w.clock.offsetMs += 5 * 60_000 + 1_000;
        const answer = (await list()) as { providers: Array<{ alias: string }> };
        expect(answer.providers.map((p) => p.alias)).to.deep.equal(['acme-entra', 'globex-okta', ...extra]);
      } finally {
        for (let i = 0; i < extra.length; i += 10)
          await Promise.all(
            extra.slice(i, i + 10).map((alias) => w.kc.admin('DELETE', `/admin/realms/${REALM}/identity-provider/instances/${alias}`).catch(() => undefined)),
          );
        w.clock.offsetMs += 5 * 60_000 + 1_000;
      }
    });

    it('a provider disabled in Keycloak while the gateway runs disappears once the 5-minute cache turns', async () => {
      const path = `/admin/realms/${REALM}/identity-provider/instances/globex-okta`;
      const globex = (await w.kc.admin<Record<string, unknown>>('GET', path)).body;
      // Visitors have just read the list and the tenant link: both are in the cache.
      expect(((await list()) as { providers: unknown[] }).providers).to.have.length(2);
      expect(await tenant('globex')).to.deep.equal({ alias: 'globex-okta' });
      await w.kc.admin('PUT', path, { ...globex, enabled: false });
      try {
        // Still cached: the same answers.
        expect(((await list()) as { providers: unknown[] }).providers).to.have.length(2);
        expect(await tenant('globex')).to.deep.equal({ alias: 'globex-okta' });
        w.clock.offsetMs += 5 * 60_000 + 1_000;
        expect(await list()).to.deep.equal({ welcome_page: false, providers: [{ alias: 'acme-entra', display_name: 'Acme (Microsoft Entra ID)' }] });
        expect(await one('globex-okta')).to.equal(null);
        expect(await tenant('globex')).to.deep.equal({ alias: null });
      } finally {
        await w.kc.admin('PUT', path, { ...globex, enabled: true });
        w.clock.offsetMs += 5 * 60_000 + 1_000;
      }
      expect(await tenant('globex')).to.deep.equal({ alias: 'globex-okta' });
    });
  });

  describe('a tenant link while signed out', () => {
    it('/acme goes through kc_idp_hint to Acme’s own provider; the brokered login comes back signed in, tenant acme active', async () => {
      const { page, context, close, documents } = await openPage(browser);
      try {
        await page.goto(`${w.a.url}/acme`);
        // Keycloak sent the browser straight on to the tenant's provider: its form, not the platform's.
        await page.waitForSelector('#kc-form-login');
        expect(new URL(page.url()).pathname).to.match(/^\/realms\/acme-idp\/protocol\/openid-connect\/auth/);
        expect(documents.some((d) => new URL(d).pathname.startsWith('/realms/platform/login-actions/authenticate'))).to.equal(false);
        await signInAtKeycloak(page, 'dana', 'dana-pass', w.a.url);
        await page.waitForSelector('#who');
        expect(await page.textContent('#tenant')).to.equal('acme');
        const session = await sessionAt(w.a.url, await cookieHeader(context, w.a.url));
        expect(session).to.deep.include({ authenticated: true, tenants: ['acme'], active_tenant: 'acme' });
        expect(session.user!.email).to.equal('dana@acme.example');
        expect(trustedSeen(w.upstream.requests, 'dana@acme.example')).to.deep.equal({
          'x-forwarded-email': 'dana@acme.example',
          'x-forwarded-name': 'Dana Acme',
          'x-forwarded-role': 'user',
          'x-forwarded-groups': NO_GROUP,
        });
      } finally {
        await close();
      }
    });
  });

  describe('signing out', () => {
    it('one click at the gateway also ends the Keycloak session, with no confirmation page', async () => {
      const { page, context, close, documents } = await browserSignIn('bob', 'bob-pass');
      try {
        await page.waitForSelector('#who');
        const bob = await w.userId('bob');
        expect((await w.kc.admin<unknown[]>('GET', `/admin/realms/${REALM}/users/${bob}/sessions`)).body).to.have.length(1);
        const before = documents.length;
        await Promise.all([page.waitForURL(`${w.a.url}/auth/login`), page.click('#sign-out')]);
        // Straight from the chat front-end to the login page: no Keycloak page in between.
        expect(documents.slice(before).map((d) => new URL(d).origin)).to.deep.equal([w.a.url]);
        expect((await w.kc.admin<unknown[]>('GET', `/admin/realms/${REALM}/users/${bob}/sessions`)).body).to.deep.equal([]);
        expect((await sessionAt(w.a.url, await cookieHeader(context, w.a.url))).authenticated).to.equal(false);
        // Signing in again asks for the password: Keycloak's session is gone.
        await page.goto(`${w.a.url}/auth/start`);
        await page.waitForSelector('#kc-form-login');
      } finally {
        await close();
      }
    });

    it('a brokered user signing out also ends their session at the tenant\u2019s provider (Keycloak\u2019s back-channel logout to it), so the tenant link asks for the password again; without it that session survives the sign-out', async () => {
      // Here the gateway and Keycloak share a host (127.0.0.1), so the sign-out's Clear-Site-Data
      // drops Keycloak's cookies as well; in a deployment they do not share one, and a provider's
      // session that survives signs the person straight back in. What Keycloak holds is read here.
      // It holds only while the gateway leaves the realm session to the browser's logout: a refresh
      // token revoked first ends that session without the provider's logout (sign-out.ts).
      // dana's sessions at the provider, by id: an earlier test's sign-in may have left one there
      const idpSessions = async () => {
        const dana = (await w.kc.admin<Array<{ id: string }>>('GET', '/admin/realms/acme-idp/users?username=dana&exact=true')).body[0]!;
        return (await w.kc.admin<Array<{ id: string }>>('GET', `/admin/realms/acme-idp/users/${dana.id}/sessions`)).body.map((s) => s.id);
      };
      const signedInNow = async (before: string[]) => {
        const added = (await idpSessions()).filter((id) => !before.includes(id));
        expect(added, 'dana is signed in at Acme\u2019s provider: one new session').to.have.length(1);
        return added[0]!;
      };
      const signInThroughTenantLink = async (page: Page) => {
        await page.goto(`${w.a.url}/acme`, { timeout: 60_000 });
        expect(new URL(page.url()).pathname, 'the provider\u2019s own form').to.match(/^\/realms\/acme-idp\/protocol\/openid-connect\/auth/);
        await signInAtKeycloak(page, 'dana', 'dana-pass', w.a.url);
        await page.waitForSelector('#who');
      };
      const signOut = (page: Page) => Promise.all([page.waitForURL(`${w.a.url}/auth/login`), page.click('#sign-out')]);
      const { page, close } = await openPage(browser);
      try {
        // as the demo realm is set (sandbox/keycloak.ts pointRealmAt): the provider's session ends too
        const before = await idpSessions();
        await signInThroughTenantLink(page);
        const first = await signedInNow(before);
        await signOut(page);
        expect(await idpSessions(), 'ended there too').to.not.include(first);
        await page.goto(`${w.a.url}/acme`, { timeout: 60_000 });
        await page.waitForSelector('#kc-form-login');

        // without it (Keycloak's default for a provider): signed out of the gateway and the platform
        // realm, yet the provider's session stays
        await pointRealmAt(w.kc, { gatewayUrls: [w.a.url, w.b.url], backchannelUrl: `${w.a.url}/auth/backchannel-logout`, tenantLogout: false });
        const again = await idpSessions();
        await signInThroughTenantLink(page);
        const second = await signedInNow(again);
        await signOut(page);
        expect(await idpSessions(), 'the provider\u2019s session survives the sign-out').to.include(second);
      } finally {
        await pointRealmAt(w.kc, { gatewayUrls: [w.a.url, w.b.url], backchannelUrl: `${w.a.url}/auth/backchannel-logout` });
        await close();
      }
    });

    it('an administrator ending the user’s sessions in Keycloak signs them out on every instance (back-channel logout)', async () => {
      const { page, context, close } = await browserSignIn('carol', 'carol-pass');
      try {
        await page.waitForSelector('#who');
        const cookie = await cookieHeader(context, w.a.url);
        for (const g of [w.a, w.b]) expect((await sessionAt(g.url, cookie)).authenticated).to.equal(true);
        const carol = await w.userId('carol');
        await w.kc.admin('POST', `/admin/realms/${REALM}/users/${carol}/logout`);
        // Keycloak posted its logout token to A; B learns it through Redis.
        for (const g of [w.a, w.b])
          await until(`carol signed out at ${g.url}`, async () => !(await sessionAt(g.url, cookie)).authenticated, { ms: 20_000, everyMs: 200 });
        expect(w.a.obs.lines.some((l) => l.event === 'backchannel-logout')).to.equal(true);
        const api = await fetch(`${w.b.url}/api/v1/auths/`, { headers: { cookie } });
        expect(api.status).to.equal(401);
      } finally {
        await close();
      }
    });
  });

  describe('a realm bearer token once the realm ended its session', () => {
    // A command-line client of the platform: public, its access tokens meant for the gateway (`aud`
    // names the gateway's client, as gateway/auth/realm.ts requires of a bearer token).
    const CLI = 'kc-suite-cli';
    const callbackOf = (url: string) => `${url}/kc-suite-cli/callback`;
    const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as { sid?: string; exp: number; azp: string };
    const asBearer = (url: string, token: string) => fetch(`${url}/api/v1/auths/`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
    const tokenRequest = async (form: Record<string, string>) => {
      const res = await fetch(`${w.kc.issuer(REALM)}/protocol/openid-connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: CLI, ...form }).toString(),
      });
      const body = (await res.json()) as { access_token: string };
      expect(res.status, JSON.stringify(body)).to.equal(200);
      return body.access_token;
    };

    before(async () => {
      await w.kc.admin('POST', `/admin/realms/${REALM}/clients`, {
        clientId: CLI,
        publicClient: true,
        standardFlowEnabled: true,
        directAccessGrantsEnabled: true,
        redirectUris: [callbackOf(w.a.url)],
        attributes: { 'pkce.code.challenge.method': 'S256' },
        protocolMappers: [
          {
            name: 'audience',
            protocol: 'openid-connect',
            protocolMapper: 'oidc-audience-mapper',
            config: { 'included.client.audience': CLIENT_ID, 'access.token.claim': 'true', 'id.token.claim': 'false' },
          },
        ],
      });
    });

    /** The command-line client signs in through the browser the person signed in to the gateway with (Keycloak's single sign-on: no password asked). */
    async function cliToken(page: Page): Promise<string> {
      const verifier = randomBytes(32).toString('base64url');
      const auth = new URL(`${w.kc.issuer(REALM)}/protocol/openid-connect/auth`);
      auth.search = new URLSearchParams({
        client_id: CLI,
        response_type: 'code',
        scope: 'openid',
        redirect_uri: callbackOf(w.a.url),
        state: 'cli',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      }).toString();
      const [callback] = await Promise.all([
        page.waitForRequest((r) => r.url().startsWith(callbackOf(w.a.url))),
        page.goto(auth.href, { waitUntil: 'commit' }),
      ]);
      const code = new URL(callback.url()).searchParams.get('code');
      expect(code, callback.url()).to.be.a('string');
      return tokenRequest({ grant_type: 'authorization_code', code: code!, redirect_uri: callbackOf(w.a.url), code_verifier: verifier });
    }

    // The Admin REST API's two ways to end it (the console's "Sign out" of a session, of a user).
    const ends = [
      { how: 'deletes that session', end: (sid: string) => w.kc.admin('DELETE', `/admin/realms/${REALM}/sessions/${sid}`) },
      { how: 'signs the user out', end: async () => w.kc.admin('POST', `/admin/realms/${REALM}/users/${await w.userId('tina')}/logout`) },
    ];
    for (const { how, end } of ends)
      it(`a client’s access token of the realm session the person signed in to the gateway with: served on both instances, then refused on both once an administrator ${how} in Keycloak, before it expires`, async () => {
        const { page, close } = await browserSignIn('tina', 'tina-pass');
        try {
          await page.waitForSelector('#who');
          const token = await cliToken(page);
          const { sid, exp, azp } = claimsOf(token);
          expect(azp).to.equal(CLI);
          const tina = await w.userId('tina');
          const sessions = (await w.kc.admin<Array<{ id: string; clients: Record<string, string> }>>('GET', `/admin/realms/${REALM}/users/${tina}/sessions`))
            .body;
          const shared = sessions.find((s) => s.id === sid);
          expect(Object.values(shared?.clients ?? {}), 'one realm session: the gateway’s and the client’s').to.have.members([CLIENT_ID, CLI]);
          for (const g of [w.a, w.b]) expect(await asBearer(g.url, token), `served at ${g.url}`).to.equal(200);

          expect((await end(sid!)).status).to.equal(204);
          for (const g of [w.a, w.b])
            await until(`the token refused at ${g.url}`, async () => (await asBearer(g.url, token)) === 401, { ms: 20_000, everyMs: 200 });
          expect(exp, 'the token has not expired').to.be.greaterThan(Date.now() / 1000 + 30);
          expect(
            w.a.obs.lines.some((l) => l.event === 'backchannel-logout' && l.sid === sid),
            'Keycloak told the gateway, naming that session',
          ).to.equal(true);
        } finally {
          await close();
        }
      });

    /** Keycloak's realm sessions of a user, with the clients that took part in each. */
    const sessionsOf = async (username: string) =>
      (await w.kc.admin<Array<{ id: string; clients: Record<string, string> }>>('GET', `/admin/realms/${REALM}/users/${await w.userId(username)}/sessions`))
        .body;
    /** How often a gateway asked Keycloak about a bearer token's session, by answer. */
    const introspections = async (g: GatewayInstance) =>
      Object.fromEntries((await g.obs.metrics.bearerIntrospections.get()).values.map((v) => [String(v.labels.result), v.value]));

    it('a token of a realm session the gateway’s client has no part in (the client’s own password grant): Keycloak tells the gateway nothing when that session ends, so the gateway asks Keycloak (token introspection) and refuses it on both instances within the cache time', async () => {
      const token = await tokenRequest({ grant_type: 'password', username: 'tina', password: 'tina-pass', scope: 'openid' });
      const { sid, exp, azp } = claimsOf(token);
      expect(azp).to.equal(CLI);
      expect(Object.values((await sessionsOf('tina')).find((s) => s.id === sid)?.clients ?? {}), 'a realm session of the client alone').to.deep.equal([CLI]);
      for (const g of [w.a, w.b]) expect(await asBearer(g.url, token), `served at ${g.url}`).to.equal(200);
      for (const g of [w.a, w.b]) expect((await introspections(g)).active, `Keycloak asked by ${g.url}`).to.be.at.least(1);

      expect((await w.kc.admin('DELETE', `/admin/realms/${REALM}/sessions/${sid}`)).status).to.equal(204);
      const deleted = Date.now();
      for (const g of [w.a, w.b])
        await until(`the token refused at ${g.url}`, async () => (await asBearer(g.url, token)) === 401, { ms: 20_000, everyMs: 100 });
      const refusedMs = Date.now() - deleted;
      console.log(`      (refused on both instances ${refusedMs} ms after the session was deleted; the cache time is ${INTROSPECTION_CACHE_SECONDS} s)`);
      expect(refusedMs, 'within the cache time (and a round trip)').to.be.at.most(INTROSPECTION_CACHE_SECONDS * 1000 + 1_500);
      const userinfo = await fetch(`${w.kc.issuer(REALM)}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${token}` } });
      expect(userinfo.status, 'Keycloak itself no longer takes it').to.equal(401);
      expect(
        [w.a, w.b].some((g) => g.obs.lines.some((l) => l.event === 'backchannel-logout' && l.sid === sid)),
        'Keycloak told the gateway nothing',
      ).to.equal(false);
      for (const g of [w.a, w.b]) {
        expect(
          g.obs.lines.filter((l) => l.event === 'bearer-session-ended' && l.sid === sid),
          `told once at ${g.url}`,
        ).to.have.length(1);
        expect(await asBearer(g.url, token), `still refused at ${g.url}`).to.equal(401);
      }
      expect(exp, 'the token has not expired').to.be.greaterThan(Date.now() / 1000);
    });

    it('a token of the gateway’s own client (a password grant of its own): Keycloak lists the gateway’s client in that session and tells the gateway of its end (back-channel logout), so the gateway never asks Keycloak about it', async () => {
      const clients = await w.kc.admin<Array<{ id: string; directAccessGrantsEnabled: boolean }>>(
        'GET',
        `/admin/realms/${REALM}/clients?clientId=${CLIENT_ID}`,
      );
      const gatewayClient = clients.body[0]!;
      await w.kc.admin('PUT', `/admin/realms/${REALM}/clients/${gatewayClient.id}`, { ...gatewayClient, directAccessGrantsEnabled: true });
      try {
        const res = await fetch(`${w.kc.issuer(REALM)}/protocol/openid-connect/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${btoa(`${CLIENT_ID}:${CLIENT_SECRET}`)}` },
          body: new URLSearchParams({ grant_type: 'password', username: 'tina', password: 'tina-pass', scope: 'openid' }).toString(),
        });
        const body = (await res.json()) as { access_token: string };
        expect(res.status, JSON.stringify(body)).to.equal(200);
        const token = body.access_token;
        const { sid, azp } = claimsOf(token);
        expect(azp).to.equal(CLIENT_ID);
        expect(Object.values((await sessionsOf('tina')).find((s) => s.id === sid)?.clients ?? {}), 'the gateway’s client took part').to.deep.equal([CLIENT_ID]);
        const asked = await Promise.all([w.a, w.b].map(introspections));
        for (const g of [w.a, w.b]) expect(await asBearer(g.url, token), `served at ${g.url}`).to.equal(200);

        expect((await w.kc.admin('DELETE', `/admin/realms/${REALM}/sessions/${sid}`)).status).to.equal(204);
        for (const g of [w.a, w.b])
          await until(`the token refused at ${g.url}`, async () => (await asBearer(g.url, token)) === 401, { ms: 20_000, everyMs: 200 });
        expect(
          w.a.obs.lines.some((l) => l.event === 'backchannel-logout' && l.sid === sid),
          'Keycloak told the gateway, naming that session',
        ).to.equal(true);
        expect(await Promise.all([w.a, w.b].map(introspections)), 'Keycloak never asked').to.deep.equal(asked);
      } finally {
        await w.kc.admin('PUT', `/admin/realms/${REALM}/clients/${gatewayClient.id}`, gatewayClient);
      }
    });
  });

  describe('a sign-out Redis did not confirm in time', () => {
    const everyInstance = (synced: boolean) =>
      until(`every instance ${synced ? 'in step with Redis' : 'without Redis'}`, () => [w.a, w.b].every((g) => g.gateway.sharedState.ready().ok === synced), {
        ms: 30_000,
      });
    // the suite's Redis, stopped here: started again once, whatever the test came to
    let redisStopped = false;
    const redisBack = async () => {
      if (!redisStopped) return;
      redisStopped = false;
      await w.redis.start();
      await everyInstance(true);
    };
    after(redisBack);

    it('goes through Keycloak’s logout first with the state, which Keycloak hands back to the login page: the pending notice shows, the realm session is gone, a new sign-in asks for the password', async () => {
      const bob = await w.userId('bob');
      const sessionsOfBob = async () => (await w.kc.admin<Array<{ id: string }>>('GET', `/admin/realms/${REALM}/users/${bob}/sessions`)).body.map((s) => s.id);
      const earlier = await sessionsOfBob();
      const { page, close } = await browserSignIn('bob', 'bob-pass');
      try {
        await page.waitForSelector('#who');
        const mine = (await sessionsOfBob()).filter((id) => !earlier.includes(id));
        expect(mine).to.have.length(1);
        redisStopped = true;
        await w.redis.stop();
        await everyInstance(false);
        const logoutAt = `${w.kc.issuer(REALM)}/protocol/openid-connect/logout`;
        const [toKeycloak] = await Promise.all([
          page.waitForRequest((r) => r.url().startsWith(logoutAt), { timeout: 30_000 }),
          page.waitForURL((u) => u.origin === w.a.url && u.pathname === '/auth/login', { timeout: 30_000 }),
          page.click('#sign-out'),
        ]);
        const sent = new URL(toKeycloak.url()).searchParams;
        expect(sent.get('state')).to.equal('sign-out-pending');
        expect(sent.get('id_token_hint')).to.be.a('string');
        // Keycloak itself hands the state back, without a confirmation page
        const handedBack = await toKeycloak.response();
        expect(handedBack?.status()).to.equal(302);
        expect(handedBack?.headers().location).to.equal(`${w.a.url}/auth/login?state=sign-out-pending`);
        expect(page.url()).to.equal(`${w.a.url}/auth/login?state=sign-out-pending`);
        expect(await page.textContent('body'))
          .to.include('You are signed out in this browser')
          .and.include('still being written');
        // read at Keycloak: on this shared host the sign-out's Clear-Site-Data drops Keycloak's cookies too
        expect(await sessionsOfBob(), 'the realm session ended').to.not.include(mine[0]);
        await redisBack();
        await page.goto(`${w.a.url}/auth/start`);
        await page.waitForSelector('#kc-form-login');
      } finally {
        await close();
      }
    });
  });

  describe('refresh under refresh-token rotation (Revoke Refresh Token on, reuse 0, 15 s access tokens)', () => {
    const LIFESPAN_S = 15;
    const MARGIN_S = 5;
    let realmBefore: Record<string, unknown>;
    const signedIn = new Map<string, { cookie: string; at: number; close: () => Promise<void> }>();

    before(async () => {
      realmBefore = (await w.kc.admin<Record<string, unknown>>('GET', `/admin/realms/${REALM}`)).body;
      await w.kc.admin('PUT', `/admin/realms/${REALM}`, {
        revokeRefreshToken: true,
        refreshTokenMaxReuse: 0,
        accessTokenLifespan: LIFESPAN_S,
        eventsEnabled: true,
        enabledEventTypes: ['REFRESH_TOKEN', 'REFRESH_TOKEN_ERROR'],
      });
      // Three people sign in now; the tests below act when their access tokens run out.
      for (const [username, password] of [
        ['superuser', 'superuser-pass'],
        ['sysadmin', 'sysadmin-pass'],
        ['bob', 'bob-pass'],
      ] as const) {
        const { page, context, close } = await browserSignIn(username, password);
        await page.waitForSelector('#who');
        signedIn.set(username, { cookie: await cookieHeader(context, w.a.url), at: Date.now(), close });
      }
    });
    after(async () => {
      for (const s of signedIn.values()) await s.close();
      await w.kc.admin('PUT', `/admin/realms/${REALM}`, {
        revokeRefreshToken: realmBefore.revokeRefreshToken,
        refreshTokenMaxReuse: realmBefore.refreshTokenMaxReuse,
        accessTokenLifespan: realmBefore.accessTokenLifespan,
        eventsEnabled: false,
      });
    });

    /** Wait until this session's access token is inside the refresh margin (the gateway then refreshes). */
    const refreshDue = async (username: string) => {
      const due = signedIn.get(username)!.at + (LIFESPAN_S - MARGIN_S + 1) * 1000;
      if (Date.now() < due) await sleep(due - Date.now());
    };
    const events = async (username: string, type: string) =>
      (await w.kc.admin<unknown[]>('GET', `/admin/realms/${REALM}/events?type=${type}&user=${await w.userId(username)}&max=100`)).body.length;

    it('20 concurrent requests of one session over two instances as its access token expires: none fails, one refresh, still signed in', async () => {
      const { cookie } = signedIn.get('superuser')!;
      await refreshDue('superuser');
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          fetch(`${(i % 2 ? w.b : w.a).url}/api/v1/auths/`, { headers: { cookie } }).then(async (r) => ({
            status: r.status,
            body: await r.text(),
            setCookie: r.headers.getSetCookie(),
          })),
        ),
      );
      expect(answers.map((a) => a.status)).to.deep.equal(Array(20).fill(200));
      expect(await events('superuser', 'REFRESH_TOKEN')).to.equal(1);
      expect(await events('superuser', 'REFRESH_TOKEN_ERROR')).to.equal(0);
      // Every answer carries a renewed cookie (each instance encrypts its own copy); with any of
      // them, and with the old one still, the user is signed in at both instances.
      const renewed = new Set(answers.map((a) => a.setCookie.find((c) => c.startsWith('appSession='))?.split(';')[0]));
      expect(renewed).to.not.include(undefined);
      expect(renewed.size).to.be.within(1, 2);
      for (const g of [w.a, w.b]) {
        for (const c of [...renewed, cookie]) expect((await sessionAt(g.url, c!)).authenticated).to.equal(true);
      }
      expect((await w.kc.admin<unknown[]>('GET', `/admin/realms/${REALM}/users/${await w.userId('superuser')}/sessions`)).body).to.have.length(1);
    });

    it('a realm role removed in Keycloak reaches the chat front-end at the next refresh', async () => {
      const { cookie } = signedIn.get('sysadmin')!;
      const id = await w.userId('sysadmin');
      const role = (await w.kc.admin<Record<string, unknown>>('GET', `/admin/realms/${REALM}/roles/PlatformSysAdmin`)).body;
      expect((await fetch(`${w.b.url}/api/v1/auths/`, { headers: { cookie } })).status).to.equal(200);
      expect(trustedSeen(w.upstream.requests, 'sysadmin@platform.example')['x-forwarded-role']).to.equal('admin');
      await w.kc.admin('DELETE', `/admin/realms/${REALM}/users/${id}/role-mappings/realm`, [role]);
      try {
        // The access token in hand may have just been renewed: within one lifetime, the next refresh
        // brings the change; meanwhile every request is answered.
        const statuses = new Set<number>();
        await until(
          'the chat front-end told role user',
          async () => {
            const res = await fetch(`${w.b.url}/api/v1/auths/`, { headers: { cookie } });
            statuses.add(res.status);
            return res.status === 200 && ((await res.json()) as { role: string }).role === 'user';
          },
          { ms: (LIFESPAN_S + MARGIN_S) * 1000, everyMs: 500 },
        );
        expect([...statuses]).to.deep.equal([200]);
        expect(trustedSeen(w.upstream.requests, 'sysadmin@platform.example')['x-forwarded-role']).to.equal('user');
        expect((await sessionAt(w.a.url, cookie)).user!.admin).to.equal(false);
      } finally {
        await w.kc.admin('POST', `/admin/realms/${REALM}/users/${id}/role-mappings/realm`, [role]);
      }
    });

    it('a user disabled in Keycloak loses access at the next refresh, on every instance', async () => {
      const { cookie } = signedIn.get('bob')!;
      const id = await w.userId('bob');
      const user = (await w.kc.admin<Record<string, unknown>>('GET', `/admin/realms/${REALM}/users/${id}`)).body;
      await w.kc.admin('PUT', `/admin/realms/${REALM}/users/${id}`, { ...user, enabled: false });
      try {
        // At the next refresh (within one access token lifetime) the session ends: 401 from then on.
        await until('bob refused', async () => (await fetch(`${w.a.url}/api/v1/auths/`, { headers: { cookie } })).status === 401, {
          ms: (LIFESPAN_S + MARGIN_S) * 1000,
          everyMs: 500,
        });
        for (const g of [w.a, w.b])
          await until(`bob signed out at ${g.url}`, async () => !(await sessionAt(g.url, cookie)).authenticated, { ms: 20_000, everyMs: 200 });
      } finally {
        await w.kc.admin('PUT', `/admin/realms/${REALM}/users/${id}`, { ...user, enabled: true });
      }
    });
  });

  describe('access tokens shorter than the refresh margin (a 5 s lifespan; refresh tokens as Keycloak leaves them, not revoked)', () => {
    const LIFESPAN_S = 5;
    let realmBefore: Record<string, unknown>;
    const codec = new SessionCodec([SESSION_SECRET], { secure: false, rollingSeconds: 86_400, absoluteSeconds: 604_800 });
    const sessionIn = async (context: BrowserContext) => {
      const value = (await context.cookies(w.a.url)).find((c) => c.name === 'appSession')!.value;
      return (await codec.decrypt(value))!.data as SessionData;
    };
    const refreshEvents = async (username: string) =>
      (await w.kc.admin<Array<{ type: string }>>('GET', `/admin/realms/${REALM}/events?user=${await w.userId(username)}&max=1000`)).body.filter((e) =>
        e.type.startsWith('REFRESH_TOKEN'),
      );

    before(async () => {
      realmBefore = (await w.kc.admin<Record<string, unknown>>('GET', `/admin/realms/${REALM}`)).body;
      // At or under the gateway's margin (TOKEN_REFRESH_MARGIN_SECONDS=5 here, as 29 s is under the default 30).
      await w.kc.admin('PUT', `/admin/realms/${REALM}`, {
        revokeRefreshToken: false,
        accessTokenLifespan: LIFESPAN_S,
        eventsEnabled: true,
        enabledEventTypes: ['REFRESH_TOKEN', 'REFRESH_TOKEN_ERROR'],
      });
    });
    after(async () => {
      await w.kc.admin('PUT', `/admin/realms/${REALM}`, {
        revokeRefreshToken: realmBefore.revokeRefreshToken,
        accessTokenLifespan: realmBefore.accessTokenLifespan,
        eventsEnabled: false,
      });
    });

    it('a person signed in with Chromium, requests at both instances, the page loaded again past the token’s expiry: still signed in, one refresh', async () => {
      const earlier = (await refreshEvents('alice')).map((e) => e.type);
      const { page, context, close, errors } = await browserSignIn('alice', 'alice-pass');
      try {
        await page.waitForSelector('#who');
        const signedIn = await sessionIn(context);
        expect(signedIn.expires_at - Math.floor(Date.now() / 1000), 'Keycloak issued the short lifespan').to.be.at.most(LIFESPAN_S);
        // The chat front-end's requests right after sign-in, at both instances.
        const cookie = await cookieHeader(context, w.a.url);
        const early = await Promise.all([w.a, w.b, w.a, w.b].map((g) => fetch(`${g.url}/api/v1/auths/`, { headers: { cookie } }).then((r) => r.status)));
        expect(early).to.deep.equal([200, 200, 200, 200]);
        expect(
          (await refreshEvents('alice')).map((e) => e.type),
          'refreshes right after sign-in',
        ).to.deep.equal(earlier);

        await sleep(Math.max(0, (signedIn.expires_at + 1) * 1000 + 100 - Date.now()));
        await page.reload();
        await page.waitForSelector('#who');
        expect(await page.textContent('#who')).to.contain('alice@acme.example');
        const renewed = await sessionIn(context);
        expect(renewed.id, 'the same session, not a new sign-in').to.equal(signedIn.id);
        expect(renewed.expires_at).to.be.greaterThan(signedIn.expires_at);
        const now = await cookieHeader(context, w.a.url);
        for (const g of [w.a, w.b]) {
          expect((await fetch(`${g.url}/api/v1/auths/`, { headers: { cookie: now } })).status).to.equal(200);
          expect((await sessionAt(g.url, now)).authenticated).to.equal(true);
        }
        // Keycloak lists the newest event first.
        expect((await refreshEvents('alice')).map((e) => e.type)).to.deep.equal(['REFRESH_TOKEN', ...earlier]);
        expect([...w.a.obs.lines, ...w.b.obs.lines].filter((l) => l.event === 'session-ended' && l.email === 'alice@acme.example')).to.deep.equal([]);
        expect(errors).to.deep.equal([]);
      } finally {
        await close();
      }
    });
  });

  describe('Keycloak’s signing key rotated while users are signed in', () => {
    const BEARER_CLIENT = 'kc-suite-bearer';
    let api: Awaited<ReturnType<typeof apiClient>>;
    const kidOf = (jwt: string) => (JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString()) as { kid: string }).kid;
    const asBearer = (url: string, token: string) => fetch(`${url}/api/v1/auths/`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);

    before(async () => {
      // A test-only API client, its tokens meant for the gateway (audience).
      api = await apiClient(w, BEARER_CLIENT);
    });
    after(async () => api?.remove());

    it('a new RS256 key, the old one disabled: new tokens are accepted without a restart, the old key’s tokens refused', async () => {
      const old = await api.tokenFor('alice', 'alice-pass');
      expect(await asBearer(w.a.url, old)).to.equal(200);
      expect(await asBearer(w.b.url, old)).to.equal(200);
      const realmId = (await w.kc.admin<{ id: string }>('GET', `/admin/realms/${REALM}`)).body.id;
      const providers = (
        await w.kc.admin<Array<{ id: string; name: string; providerId: string; config: Record<string, string[]> }>>(
          'GET',
          `/admin/realms/${REALM}/components?type=org.keycloak.keys.KeyProvider`,
        )
      ).body;
      const oldRsa = providers.filter((p) => p.providerId === 'rsa-generated');
      expect(oldRsa).to.have.length(1);
      await w.kc.admin('POST', `/admin/realms/${REALM}/components`, {
        name: 'rsa-rotated',
        providerId: 'rsa-generated',
        providerType: 'org.keycloak.keys.KeyProvider',
        parentId: realmId,
        config: { priority: ['1000'], keySize: ['2048'], algorithm: ['RS256'], active: ['true'], enabled: ['true'] },
      });
      await w.kc.admin('PUT', `/admin/realms/${REALM}/components/${oldRsa[0]!.id}`, {
        ...oldRsa[0],
        config: { ...oldRsa[0]!.config, enabled: ['false'], active: ['false'] },
      });

      const fresh = await api.tokenFor('alice', 'alice-pass');
      expect(kidOf(fresh)).to.not.equal(kidOf(old));
      const jwks = (await (await fetch(`${w.kc.issuer(REALM)}/protocol/openid-connect/certs`)).json()) as { keys: Array<{ kid: string }> };
      expect(jwks.keys.map((k) => k.kid))
        .to.include(kidOf(fresh))
        .and.not.include(kidOf(old));
      const t0 = Date.now();
      for (const g of [w.a, w.b])
        await until(`the new key's token accepted at ${g.url}`, async () => (await asBearer(g.url, fresh)) === 200, { ms: 10_000, everyMs: 500 });
      const acceptedMs = Date.now() - t0;
      for (const g of [w.a, w.b])
        await until(`the old key's token refused at ${g.url}`, async () => (await asBearer(g.url, old)) === 401, { ms: 90_000, everyMs: 1_000 });
      console.log(`      (new key accepted after ${acceptedMs} ms, old key refused after ${Date.now() - t0} ms)`);
      // A sign-in after the rotation: its ID token, signed with the new key, is verified and accepted.
      const { page, close } = await browserSignIn('carol', 'carol-pass');
      try {
        await page.waitForSelector('#who');
        expect(await page.textContent('#role')).to.equal('user');
      } finally {
        await close();
      }
    });
  });
});
