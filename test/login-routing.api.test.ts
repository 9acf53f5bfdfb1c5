// Spec area B over real sockets: the gateway against the Keycloak admin API stand-in
// (test/support/keycloak-admin.ts), which counts its calls. Switches in every combination, the
// one five-minute cache under a fake clock, single flight, the last good answer when Keycloak
// fails, the tenant lookup's identical answers, the rate limit, the guard and the pages.
import { mkdtempSync, rmSync, writeFileSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import request from 'supertest';
import { ANONYMOUS_AUDIT_PER_MINUTE, AnonymousAuditLimiter } from '../gateway/observability/observability.js';
import { Router } from 'express';
import { loadSettings, type Settings } from '../config/settings.js';
import { type Env } from '../config/env.js';
import { createGateway, type Gateway } from '../gateway/app.js';
import { LivePolicy, snapshotOf } from '../config/policy.js';
import { createLoginRouting, type LoginRoutingImpl, type LoginRoutingOptions } from '../gateway/login/routes.js';
import type { Authenticator } from '../gateway/auth/identity.js';
import { startKeycloakAdmin, type KeycloakAdmin, type KeycloakAdminOptions } from './support/keycloak-admin.js';
import { demoIdentityProviders, demoTenantAliases, type KeycloakIdentityProvider } from '../sandbox/demo-realm.js';
import { baseEnv, capturingObservability, type LogLine } from './support/gateway-harness.js';
import { sleep, until } from './support/wait.js';

const CLIENT_ID = 'gateway-admin';
const CLIENT_SECRET = 'gateway-admin-secret';
const FIVE_MINUTES = 300_000;
/** The catalog's time limit per Keycloak request in the failure tests: long next to a request served from the cache. */
const KEYCLOAK_TIMEOUT = 1_000;

/** Nobody is signed in: these tests are about the anonymous routes and the logged-out guard. */
const nobody: Authenticator = {
  router: Router(),
  authenticate: async () => undefined,
  ready: async () => ({ ok: true, detail: 'test' }),
  close: async () => {},
};

interface Rig {
  kc: KeycloakAdmin;
  clock: { t: number };
  settings: Settings;
  routing: LoginRoutingImpl;
  gateway: Gateway;
  url: string;
  lines: LogLine[];
  get(path: string): request.Test;
  close(): Promise<void>;
}

async function rig(o: { env?: Env; kc?: Partial<KeycloakAdminOptions>; routing?: LoginRoutingOptions; warm?: boolean } = {}): Promise<Rig> {
  const kc = await startKeycloakAdmin({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, ...o.kc });
  const clock = { t: Date.now() };
  const settings = loadSettings(
    baseEnv('http://127.0.0.1:9', {
      IDP_ADMIN_URL: kc.adminUrl,
      IDP_ADMIN_CLIENT_ID: CLIENT_ID,
      IDP_ADMIN_CLIENT_SECRET: CLIENT_SECRET,
      IDP_TENANT_IDP_ALIASES: demoTenantAliases,
      ...o.env,
    }),
    { stageFiles: false },
  );
  const obs = capturingObservability();
  const policy = new LivePolicy(snapshotOf(settings.policy, 'environment', Date.now()));
  const routing = await createLoginRouting(settings, policy, obs, { now: () => clock.t, warm: o.warm ?? false, ...o.routing });
  const gateway = await createGateway(settings, { obs, authenticator: nobody, loginRouting: routing, policy });
  const { url } = await gateway.listen(0, '127.0.0.1');
  return {
    kc,
    clock,
    settings,
    routing,
    gateway,
    url,
    lines: obs.lines,
    get: (path) => request(url).get(path),
    async close() {
      await gateway.close();
      await kc.close();
    },
  };
}

const calls = (kc: KeycloakAdmin) => ({ ...kc.calls });
const BUTTONS = [
  { alias: 'acme-entra', display_name: 'Acme (Microsoft Entra ID)' },
  { alias: 'globex-okta', display_name: 'Globex (Okta)' },
];
const DIRECT = { alias: 'direct-login', display_name: 'Administrator login' };

/** The headers a client sees, minus the ones that differ per response by nature. */
function stableHeaders(res: request.Response): Record<string, string> {
  const h = { ...(res.headers as Record<string, string>) };
  delete h.date;
  delete h['x-request-id'];
  return h;
}

/** Wait until `check` holds (background refreshes finish on real sockets). */
function hrefs(html: string): string[] {
  return [...html.matchAll(/<a\b[^>]*\bhref="([^"]*)"/g)].map((m) => m[1]!.replace(/&#38;/g, '&'));
}

describe('login routing over HTTP, against the Keycloak admin API stand-in', function () {
  this.timeout(20_000);

  describe('GET /api/v1/auth-providers/: the switches in every combination', () => {
    for (const version of [25, 26] as const) {
      for (const welcome of [false, true]) {
        for (const show of [false, true]) {
          it(`Keycloak ${version}, IDP_LOGIN_WELCOME_PAGE=${welcome}, SHOW_IDP_LOGIN=${show}`, async () => {
            const r = await rig({
              kc: { version },
              env: { IDP_LOGIN_WELCOME_PAGE: String(welcome), SHOW_IDP_LOGIN: String(show), IDP_TENANT_IDP_ALIASES: '' },
            });
            try {
              const res = await r
                .get('/api/v1/auth-providers/')
                .expect(200)
                .expect('content-type', /application\/json/);
              const expected = welcome
                ? { welcome_page: true, providers: show ? [DIRECT] : [] }
                : { welcome_page: false, providers: show ? [...BUTTONS, DIRECT] : BUTTONS };
              expect(res.body).to.deep.equal(expected);
              // Without the trailing slash too (contract: trailing slashes are accepted).
              expect((await r.get('/api/v1/auth-providers').expect(200)).body).to.deep.equal(expected);
              // B2: with the welcome switch on, the identity provider server is not queried at all.
              if (welcome) expect(calls(r.kc)).to.deep.equal({ token: 0, list: 0, get: 0 });
              else expect(calls(r.kc)).to.deep.equal({ token: 1, list: 1, get: 0 });

              const page = await r
                .get('/auth/login')
                .expect(200)
                .expect('content-type', /text\/html/);
              const links = hrefs(page.text);
              if (welcome) {
                expect(page.text).to.contain('id="welcome-page"');
                expect(links).to.deep.equal(show ? ['/auth/start'] : []);
                expect(calls(r.kc)).to.deep.equal({ token: 0, list: 0, get: 0 });
              } else {
                expect(page.text).to.contain('id="login-page"');
                expect(links).to.deep.equal(['/auth/start?idp=acme-entra', '/auth/start?idp=globex-okta', ...(show ? ['/auth/start'] : [])]);
                expect(page.text).not.to.contain('hidden-saml');
                expect(page.text).not.to.contain('partner-linkonly');
                expect(page.text).not.to.contain('legacy-disabled');
              }
            } finally {
              await r.close();
            }
          });
        }
      }
    }

    it('hides a provider flagged either way, whichever version answers', async () => {
      const providers: KeycloakIdentityProvider[] = [
        { alias: 'old-style', providerId: 'oidc', enabled: true, config: { hideOnLoginPage: 'true' } },
        { alias: 'new-style', providerId: 'oidc', enabled: true, hideOnLogin: true },
        { alias: 'shown', providerId: 'oidc', enabled: true },
      ];
      for (const version of [25, 26] as const) {
        const r = await rig({ kc: { version, providers: structuredClone(providers) } });
        try {
          expect((await r.get('/api/v1/auth-providers/')).body.providers).to.deep.equal([{ alias: 'shown', display_name: 'shown' }]);
          // hidden, but still found by alias (B4, B5)
          expect((await r.get('/api/v1/auth-providers/old-style')).body).to.deep.equal({ alias: 'old-style', display_name: 'old-style' });
          expect((await r.get('/api/v1/auth-providers/new-style')).body).to.deep.equal({ alias: 'new-style', display_name: 'new-style' });
        } finally {
          await r.close();
        }
      }
    });

    it('pages through a large realm in full representations (link-only read on every page)', async () => {
      const providers: KeycloakIdentityProvider[] = Array.from({ length: 250 }, (_, i) => ({
        alias: `idp-${String(i).padStart(3, '0')}`,
        providerId: 'oidc',
        enabled: true,
        linkOnly: i % 50 === 49,
        config: (i === 120 ? { hideOnLoginPage: 'true' } : {}) as Record<string, string>,
      }));
      const r = await rig({ kc: { providers } });
      try {
        const body = (await r.get('/api/v1/auth-providers/').expect(200)).body as { providers: Array<{ alias: string }> };
        expect(body.providers).to.have.length(250 - 5 - 1);
        expect(body.providers.map((p) => p.alias)).not.to.include.members(['idp-049', 'idp-249', 'idp-120']);
        expect(body.providers.map((p) => p.alias)).to.include.members(['idp-000', 'idp-100', 'idp-200', 'idp-248']);
        expect(r.kc.calls.list).to.equal(3);
        expect(r.kc.calls.token).to.equal(1);
      } finally {
        await r.close();
      }
    });
  });

  describe('GET /api/v1/auth-providers/{alias} (B4)', () => {
    let r: Rig;
    before(async () => {
      r = await rig({ env: { IDP_LOGIN_WELCOME_PAGE: 'true' } });
    });
    after(() => r.close());

    const cases: Array<[string, unknown]> = [
      ['acme-entra', { alias: 'acme-entra', display_name: 'Acme (Microsoft Entra ID)' }],
      ['hidden-saml', { alias: 'hidden-saml', display_name: 'Hidden SAML partner' }],
      ['partner-linkonly', null],
      ['legacy-disabled', null],
      ['no-such-provider', null],
      ['direct-login', null],
    ];
    for (const [alias, expected] of cases) {
      it(`${alias}: ${expected === null ? 'null' : 'the provider'}, 200, also with the welcome switch on`, async () => {
        const res = await r
          .get(`/api/v1/auth-providers/${alias}`)
          .expect(200)
          .expect('content-type', /application\/json/)
          .expect('cache-control', 'no-store');
        expect(res.text).to.equal(JSON.stringify(expected));
      });
    }

    it('hands out alias and display name only, never the configuration', async () => {
      const res = await r.get('/api/v1/auth-providers/acme-entra/').expect(200);
      expect(Object.keys(res.body)).to.deep.equal(['alias', 'display_name']);
      expect(res.text).not.to.match(/secret|clientId|\*\*\*/);
    });

    it('asks Keycloak for one alias, not for the list', async () => {
      const before = calls(r.kc);
      await r.get('/api/v1/auth-providers/globex-okta').expect(200);
      expect(r.kc.calls.get - before.get).to.equal(1);
      expect(r.kc.calls.list).to.equal(0);
    });
  });

  describe('GET /api/v1/auth-providers/tenants/{tenant_id} (links 2, 3, 4)', () => {
    let r: Rig;
    before(async () => {
      r = await rig({ env: { IDP_TENANT_IDP_ALIASES: `${demoTenantAliases},acme-eu=acme-entra,gone=legacy-disabled,ghost=no-such-idp` } });
    });
    after(() => r.close());

    it('a mapped tenant with a usable provider gets its alias', async () => {
      expect((await r.get('/api/v1/auth-providers/tenants/acme').expect(200)).body).to.deep.equal({ alias: 'acme-entra' });
      expect((await r.get('/api/v1/auth-providers/tenants/globex').expect(200)).body).to.deep.equal({ alias: 'globex-okta' });
    });

    it('several tenants may share one alias', async () => {
      expect((await r.get('/api/v1/auth-providers/tenants/acme-eu').expect(200)).body).to.deep.equal({ alias: 'acme-entra' });
    });

    it('unknown, unmapped and unusable tenants get identical answers: status, headers, body', async () => {
      const outcomes = ['initech' /* link-only */, 'gone' /* disabled */, 'ghost' /* absent alias */, 'nobody-here' /* unmapped */, 'x'.repeat(120), '~weird~'];
      const answers = [];
      for (const t of outcomes) answers.push(await r.get(`/api/v1/auth-providers/tenants/${t}`));
      for (const a of answers) {
        expect(a.status).to.equal(200);
        expect(a.text).to.equal('{"alias":null}');
        expect(stableHeaders(a)).to.deep.equal(stableHeaders(answers[0]!));
      }
      // and the same header set as a positive answer (only the body differs)
      const linked = await r.get('/api/v1/auth-providers/tenants/acme');
      const { 'content-length': _a, ...positive } = stableHeaders(linked);
      const { 'content-length': _b, ...negative } = stableHeaders(answers[0]!);
      expect(positive).to.deep.equal(negative);
      expect(positive['cache-control']).to.equal('no-store');
    });

    it('never asks Keycloak about tenants, only about the mapped aliases', async () => {
      const r2 = await rig();
      try {
        await r2.get('/api/v1/auth-providers/tenants/acme').expect(200);
        // one fetch per distinct mapped alias (acme-entra, globex-okta, partner-linkonly), then the cache
        expect(calls(r2.kc)).to.deep.equal({ token: 1, list: 0, get: 3 });
        await r2.get('/api/v1/auth-providers/tenants/zzz').expect(200);
        await r2.get('/api/v1/auth-providers/tenants/initech').expect(200);
        expect(calls(r2.kc)).to.deep.equal({ token: 1, list: 0, get: 3 });
      } finally {
        await r2.close();
      }
    });

    it('does the same Keycloak work for an unmapped tenant as for a mapped one (no timing tell on a cold cache)', async () => {
      const cold = async (tenant: string) => {
        const r2 = await rig();
        try {
          await r2.get(`/api/v1/auth-providers/tenants/${tenant}`).expect(200);
          return calls(r2.kc);
        } finally {
          await r2.close();
        }
      };
      const mapped = await cold('acme');
      expect(await cold('unknown-tenant')).to.deep.equal(mapped);
      expect(await cold('initech')).to.deep.equal(mapped);
    });

    it('with an empty mapping, answers null without any Keycloak call', async () => {
      const r2 = await rig({ env: { IDP_TENANT_IDP_ALIASES: '' } });
      try {
        for (const t of ['acme', 'globex', 'zzz'])
          expect((await r2.get(`/api/v1/auth-providers/tenants/${t}`).expect(200)).body).to.deep.equal({ alias: null });
        expect(calls(r2.kc)).to.deep.equal({ token: 0, list: 0, get: 0 });
      } finally {
        await r2.close();
      }
    });

    it('writes every lookup to the audit stream', async () => {
      await r.get('/api/v1/auth-providers/tenants/initech').expect(200);
      const line = r.lines.filter((l) => l.event === 'tenant-lookup').at(-1)!;
      expect(line).to.include({ name: 'audit', via: 'api', tenant: 'initech', outcome: 'unusable', client: '127.0.0.1' });
    });
  });

  describe('one cache of five minutes (limits; links 4) under a fake clock', () => {
    it('the per-alias lookup is cached for five minutes, then asked again', async () => {
      const r = await rig();
      try {
        await r.get('/api/v1/auth-providers/acme-entra').expect(200);
        await r.get('/api/v1/auth-providers/acme-entra').expect(200);
        expect(r.kc.calls.get).to.equal(1);
        r.clock.t += FIVE_MINUTES - 1;
        await r.get('/api/v1/auth-providers/acme-entra').expect(200);
        expect(r.kc.calls.get).to.equal(1);
        r.clock.t += 1;
        await r.get('/api/v1/auth-providers/acme-entra').expect(200);
        expect(r.kc.calls.get).to.equal(2);
      } finally {
        await r.close();
      }
    });

    it('the tenant lookup and the per-alias lookup share it', async () => {
      const r = await rig();
      try {
        await r.get('/api/v1/auth-providers/tenants/acme').expect(200);
        const after = calls(r.kc);
        await r.get('/api/v1/auth-providers/acme-entra').expect(200);
        await r.get('/api/v1/auth-providers/partner-linkonly').expect(200);
        await r.get('/auth/login/globex-okta').expect(200);
        expect(calls(r.kc)).to.deep.equal(after);
      } finally {
        await r.close();
      }
    });

    it('a change in the realm shows within five minutes, not before', async () => {
      const r = await rig();
      try {
        expect((await r.get('/api/v1/auth-providers/tenants/acme')).body).to.deep.equal({ alias: 'acme-entra' });
        r.kc.providers.find((p) => p.alias === 'acme-entra')!.enabled = false;
        r.clock.t += FIVE_MINUTES - 1000;
        expect((await r.get('/api/v1/auth-providers/tenants/acme')).body).to.deep.equal({ alias: 'acme-entra' });
        r.clock.t += 1000;
        expect((await r.get('/api/v1/auth-providers/tenants/acme')).body).to.deep.equal({ alias: null });
        expect((await r.get('/api/v1/auth-providers/acme-entra')).body).to.equal(null);
      } finally {
        await r.close();
      }
    });

    it('the list answer changes with the realm after the cache period, and not before', async () => {
      const r = await rig();
      try {
        const aliases = async () =>
          ((await r.get('/api/v1/auth-providers/').expect(200)).body as { providers: Array<{ alias?: string }> }).providers.map((p) => p.alias);
        expect(await aliases()).to.include('acme-entra');
        r.kc.providers.find((p) => p.alias === 'acme-entra')!.enabled = false;
        r.clock.t += FIVE_MINUTES - 1000;
        expect(await aliases()).to.include('acme-entra');
        r.clock.t += 1000;
        expect(await aliases()).to.not.include('acme-entra');
      } finally {
        await r.close();
      }
    });

    it('the list is cached for five minutes too', async () => {
      const r = await rig();
      try {
        await r.get('/api/v1/auth-providers/').expect(200);
        await r.get('/auth/login').expect(200);
        r.clock.t += FIVE_MINUTES - 1;
        await r.get('/api/v1/auth-providers/').expect(200);
        expect(r.kc.calls.list).to.equal(1);
        r.clock.t += 1;
        await r.get('/api/v1/auth-providers/').expect(200);
        expect(r.kc.calls.list).to.equal(2);
      } finally {
        await r.close();
      }
    });

    it('reuses the service-account token until 30 s before it expires', async () => {
      const r = await rig({ kc: { tokenTtl: 300 } });
      try {
        await r.get('/api/v1/auth-providers/a1').expect(200);
        r.clock.t += 269_000;
        await r.get('/api/v1/auth-providers/a2').expect(200);
        expect(r.kc.calls.token).to.equal(1);
        r.clock.t += 1_000;
        await r.get('/api/v1/auth-providers/a3').expect(200);
        expect(r.kc.calls.token).to.equal(2);
      } finally {
        await r.close();
      }
    });

    it('gets a new token once when Keycloak refuses the old one', async () => {
      const r = await rig();
      try {
        await r.get('/api/v1/auth-providers/a1').expect(200);
        r.kc.expireTokens();
        expect((await r.get('/api/v1/auth-providers/acme-entra').expect(200)).body).to.deep.equal({
          alias: 'acme-entra',
          display_name: 'Acme (Microsoft Entra ID)',
        });
        expect(r.kc.calls.token).to.equal(2);
      } finally {
        await r.close();
      }
    });

    it('one request in flight per key: no stampede when an entry expires under load', async () => {
      const r = await rig();
      try {
        await r.get('/api/v1/auth-providers/').expect(200);
        await r.get('/api/v1/auth-providers/acme-entra').expect(200);
        await r.get('/api/v1/auth-providers/tenants/acme').expect(200);
        const before = calls(r.kc);
        r.clock.t += FIVE_MINUTES;
        r.kc.slowMs = 200;
        await r.kc.setFault('slow');
        const burst = await Promise.all([
          ...Array.from({ length: 30 }, () => r.get('/api/v1/auth-providers/')),
          ...Array.from({ length: 30 }, () => r.get('/api/v1/auth-providers/acme-entra')),
          ...Array.from({ length: 30 }, (_, i) => r.get(`/api/v1/auth-providers/tenants/${i % 2 ? 'acme' : 'zzz'}`)),
          ...Array.from({ length: 30 }, () => r.get('/auth/login')),
        ]);
        for (const res of burst) expect(res.status).to.equal(200);
        // one list fetch, one fetch per mapped alias (acme-entra, globex-okta, partner-linkonly), one token
        expect(r.kc.calls.list - before.list).to.equal(1);
        expect(r.kc.calls.get - before.get).to.equal(3);
        expect(r.kc.calls.token - before.token).to.equal(1);
      } finally {
        await r.close();
      }
    });
  });

  describe('when Keycloak fails, the last good answer is served', () => {
    for (const fault of ['down', '500', 'invalid-json', 'token-fail', 'slow'] as const) {
      it(`fault ${fault}: same answers as before, readiness says stale, then fresh again`, async () => {
        const r = await rig({ routing: { timeoutMs: KEYCLOAK_TIMEOUT, retryMs: 15_000 } });
        try {
          const list = (await r.get('/api/v1/auth-providers/').expect(200)).body;
          const alias = (await r.get('/api/v1/auth-providers/acme-entra').expect(200)).body;
          const tenant = (await r.get('/api/v1/auth-providers/tenants/acme').expect(200)).body;
          expect(r.routing.ready()).to.deep.include({ ok: true });
          expect(r.routing.ready().detail).to.match(/fresh/);

          r.kc.slowMs = 2 * KEYCLOAK_TIMEOUT;
          await r.kc.setFault(fault);
          r.clock.t += FIVE_MINUTES + 1; // everything expired, the token too
          const failedBefore = calls(r.kc);
          expect((await r.get('/api/v1/auth-providers/').expect(200)).body).to.deep.equal(list);
          expect((await r.get('/api/v1/auth-providers/acme-entra').expect(200)).body).to.deep.equal(alias);
          expect((await r.get('/api/v1/auth-providers/tenants/acme').expect(200)).body).to.deep.equal(tenant);
          expect((await r.get('/auth/login').expect(200)).text).to.contain('acme-entra');
          expect((await r.get('/acme').expect(302)).headers.location).to.equal('/auth/start?idp=acme-entra&tenant=acme&returnTo=%2F');
          const ready = r.routing.ready();
          expect(ready.ok).to.equal(true);
          expect(ready.detail).to.match(/stale, serving the last good answer since/);

          // Within the retry period Keycloak is not asked again: requests do not wait for it (a
          // request that waited would take the whole Keycloak time limit).
          const asked = calls(r.kc);
          if (fault !== 'down') expect(asked).not.to.deep.equal(failedBefore);
          const started = Date.now();
          for (let i = 0; i < 5; i++) await r.get('/api/v1/auth-providers/tenants/acme').expect(200);
          expect(Date.now() - started).to.be.below(KEYCLOAK_TIMEOUT / 2);
          expect(calls(r.kc)).to.deep.equal(asked);

          // After the retry period, still failing: answers come at once, one background attempt per key.
          r.clock.t += 15_000;
          const again = Date.now();
          expect((await r.get('/api/v1/auth-providers/').expect(200)).body).to.deep.equal(list);
          expect((await r.get('/api/v1/auth-providers/tenants/acme').expect(200)).body).to.deep.equal(tenant);
          expect(Date.now() - again).to.be.below(KEYCLOAK_TIMEOUT / 2);
          await until('the catalog idle', () => r.routing.catalog.idle(), { everyMs: 10 });
          if (fault !== 'down') expect(calls(r.kc)).not.to.deep.equal(asked);

          // Keycloak is back: after the retry period the next request starts the refresh, and
          // the new answer and a fresh readiness follow.
          await r.kc.setFault(null);
          r.clock.t += 15_000;
          r.kc.providers.find((p) => p.alias === 'globex-okta')!.displayName = 'Globex (renamed)';
          await r.get('/api/v1/auth-providers/').expect(200);
          await r.get('/api/v1/auth-providers/tenants/acme').expect(200);
          await r.get('/api/v1/auth-providers/acme-entra').expect(200);
          await until(
            'the renamed provider listed',
            async () => (await r.get('/api/v1/auth-providers/')).body.providers[1]?.display_name === 'Globex (renamed)',
            { everyMs: 10 },
          );
          await until('a fresh catalog', () => r.routing.ready().detail.endsWith('fresh'), { everyMs: 10 });
          expect(r.routing.ready()).to.deep.equal({ ok: true, detail: 'identity provider catalog (Keycloak admin API): fresh' });
        } finally {
          await r.close();
        }
      });
    }

    it('with no good answer yet: the list 503, the tenant lookup still 200 null, pages say so, readiness unavailable', async () => {
      const r = await rig({ routing: { timeoutMs: 300 } });
      try {
        await r.kc.setFault('500');
        await r.get('/api/v1/auth-providers/').expect(503).expect('content-type', /json/).expect('retry-after', '15');
        await r.get('/api/v1/auth-providers/acme-entra').expect(503);
        expect((await r.get('/api/v1/auth-providers/tenants/acme').expect(200)).body).to.deep.equal({ alias: null });
        expect((await r.get('/api/v1/auth-providers/tenants/zzz').expect(200)).body).to.deep.equal({ alias: null });
        const page = await r.get('/auth/login').expect(503);
        expect(page.text).to.contain('id="catalog-down"').and.to.contain('role="alert"');
        expect((await r.get('/de/auth/login/acme-entra').expect(503)).text).to.contain('vorübergehend');
        expect((await r.get('/acme').expect(302)).headers.location).to.equal('/auth/login?returnTo=%2Facme');
        const ready = r.routing.ready();
        expect(ready.ok).to.equal(false);
        expect(ready.detail).to.match(/unavailable \(identity provider list: HTTP 500\)|unavailable \(identity provider "[^"]+": HTTP 500\)/);
      } finally {
        await r.close();
      }
    });

    it('readiness retries by itself once Keycloak is back', async () => {
      const r = await rig({ routing: { retryMs: 1_000 } });
      try {
        await r.kc.setFault('500');
        await r.get('/api/v1/auth-providers/').expect(503);
        expect(r.routing.ready().ok).to.equal(false);
        await r.kc.setFault(null);
        r.clock.t += 1_000;
        r.routing.ready(); // kicks a background refresh
        await until('routing ready', () => r.routing.ready().ok, { everyMs: 10 });
      } finally {
        await r.close();
      }
    });

    it('the start-up fill reads the list and every mapped alias', async () => {
      const r = await rig({ warm: true });
      try {
        await r.routing.warmed;
        expect(calls(r.kc)).to.deep.equal({ token: 1, list: 1, get: 3 });
        expect(r.routing.ready().detail).to.match(/fresh/);
        await r.get('/api/v1/auth-providers/tenants/acme').expect(200);
        await r.get('/api/v1/auth-providers/').expect(200);
        expect(calls(r.kc)).to.deep.equal({ token: 1, list: 1, get: 3 });
      } finally {
        await r.close();
      }
    });

    it('the start-up fill leaves the list alone with the welcome switch on', async () => {
      const r = await rig({ warm: true, env: { IDP_LOGIN_WELCOME_PAGE: 'true', IDP_TENANT_IDP_ALIASES: '' } });
      try {
        await r.routing.warmed;
        await r.get('/api/v1/auth-providers/').expect(200);
        await r.get('/auth/login').expect(200);
        expect(calls(r.kc)).to.deep.equal({ token: 0, list: 0, get: 0 });
      } finally {
        await r.close();
      }
    });
  });

  describe('IDP_PROVIDERS_FILE instead of the admin API', () => {
    let dir: string;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'idp-file-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('serves the same rules from the file, re-read after the cache period when it changed', async () => {
      const file = join(dir, 'providers.json');
      writeFileSync(file, JSON.stringify(demoIdentityProviders));
      const r = await rig({ env: { IDP_PROVIDERS_FILE: file } });
      try {
        expect((await r.get('/api/v1/auth-providers/').expect(200)).body).to.deep.equal({ welcome_page: false, providers: BUTTONS });
        expect((await r.get('/api/v1/auth-providers/hidden-saml').expect(200)).body).to.deep.equal({
          alias: 'hidden-saml',
          display_name: 'Hidden SAML partner',
        });
        expect((await r.get('/api/v1/auth-providers/tenants/initech').expect(200)).body).to.deep.equal({ alias: null });
        expect((await r.get('/api/v1/auth-providers/tenants/globex').expect(200)).body).to.deep.equal({ alias: 'globex-okta' });
        expect(calls(r.kc)).to.deep.equal({ token: 0, list: 0, get: 0 });

        const changed = structuredClone(demoIdentityProviders).map((p) => (p.alias === 'globex-okta' ? { ...p, enabled: false } : p));
        writeFileSync(file, JSON.stringify(changed));
        utimesSync(file, new Date(), new Date(Date.now() + 5_000));
        expect((await r.get('/api/v1/auth-providers/tenants/globex').expect(200)).body).to.deep.equal({ alias: 'globex-okta' });
        r.clock.t += FIVE_MINUTES;
        expect((await r.get('/api/v1/auth-providers/tenants/globex').expect(200)).body).to.deep.equal({ alias: null });
        expect((await r.get('/api/v1/auth-providers/').expect(200)).body.providers).to.deep.equal([BUTTONS[0]]);

        // a broken file: the last good answer stays
        writeFileSync(file, '[{"alias": ');
        utimesSync(file, new Date(), new Date(Date.now() + 10_000));
        r.clock.t += FIVE_MINUTES;
        expect((await r.get('/api/v1/auth-providers/').expect(200)).body.providers).to.deep.equal([BUTTONS[0]]);
        expect(r.routing.ready().detail).to.match(/IDP_PROVIDERS_FILE.*stale/);
      } finally {
        await r.close();
      }
    });
  });

  describe('audit lines anonymous clients cause are bounded per client', () => {
    it(`one client's logged-out visits write at most ${ANONYMOUS_AUDIT_PER_MINUTE} tenant-lookup lines a minute; metrics count them all`, async () => {
      // Regression: one audit line per logged-out page visit, so anyone could fill the audit disk.
      const r = await rig();
      try {
        for (let i = 0; i < 60; i++) await r.get(i % 2 ? '/acme' : `/api/v1/auth-providers/tenants/t${i}`).expect(i % 2 ? 302 : 200);
        expect(r.lines.filter((l) => l.event === 'tenant-lookup')).to.have.length(ANONYMOUS_AUDIT_PER_MINUTE);
        const metrics = await r.gateway.obs.metrics.registry.getSingleMetricAsString('gateway_anonymous_audit_events_total');
        expect(metrics).to.include(`gateway_anonymous_audit_events_total{event="tenant-lookup",written="yes"} ${ANONYMOUS_AUDIT_PER_MINUTE}`);
        expect(metrics).to.include(`gateway_anonymous_audit_events_total{event="tenant-lookup",written="no"} ${60 - ANONYMOUS_AUDIT_PER_MINUTE}`);
      } finally {
        await r.close();
      }
    });

    it('the next minute writes again, after one line that sums up what was held back', () => {
      const clock = { t: 0 };
      const limiter = new AnonymousAuditLimiter(2, () => clock.t);
      const held: Array<{ client: string; suppressed: number }> = [];
      const take = (c: string) => limiter.take(c, (h) => held.push(...h));
      expect([take('a'), take('a'), take('a'), take('a'), take('b')]).to.deep.equal([true, true, false, false, true]);
      clock.t += 60_000;
      expect(take('a')).to.equal(true);
      expect(held).to.deep.equal([{ client: 'a', suppressed: 2 }]);
    });
  });

  describe('rate limit on tenant lookups and guard redirects (links 12)', () => {
    it('is off by default', async () => {
      const r = await rig();
      try {
        for (let i = 0; i < 60; i++) await r.get(`/api/v1/auth-providers/tenants/t${i}`).expect(200);
      } finally {
        await r.close();
      }
    });

    it('answers 429 with Retry-After past the limit, the same for every tenant; the guard ends on /auth/login', async () => {
      const r = await rig({ env: { TENANT_LOOKUP_RATE_LIMIT: '3', TENANT_LOOKUP_RATE_WINDOW_SECONDS: '60' } });
      try {
        await r.get('/api/v1/auth-providers/tenants/acme').expect(200);
        await r.get('/api/v1/auth-providers/tenants/zzz').expect(200);
        expect((await r.get('/acme').expect(302)).headers.location).to.match(/^\/auth\/start\?idp=acme-entra/);
        const over = [await r.get('/api/v1/auth-providers/tenants/acme'), await r.get('/api/v1/auth-providers/tenants/zzz')];
        for (const res of over) {
          expect(res.status).to.equal(429);
          expect(res.headers['retry-after']).to.equal('60');
          expect(res.body).to.deep.equal({ detail: 'Too many requests' });
        }
        expect(stableHeaders(over[0]!)).to.deep.equal(stableHeaders(over[1]!));
        expect((await r.get('/acme').expect(302)).headers.location).to.equal('/auth/login?returnTo=%2Facme');
        // pages and the other lookups are not limited
        await r.get('/auth/login').expect(200);
        await r.get('/api/v1/auth-providers/acme-entra').expect(200);
        expect(r.lines.filter((l) => l.event === 'tenant-lookup' && l.outcome === 'rate-limited')).to.have.length(3);
      } finally {
        await r.close();
      }
    });

    it('counts in fixed windows: once the window is over, lookups are answered again', async () => {
      const r = await rig({ env: { TENANT_LOOKUP_RATE_LIMIT: '2', TENANT_LOOKUP_RATE_WINDOW_SECONDS: '1' } });
      try {
        await r.get('/api/v1/auth-providers/tenants/acme').expect(200);
        await r.get('/api/v1/auth-providers/tenants/acme').expect(200);
        const over = await r.get('/api/v1/auth-providers/tenants/acme').expect(429);
        expect(over.headers['retry-after']).to.equal('1');
        await sleep(1_100);
        expect((await r.get('/api/v1/auth-providers/tenants/acme').expect(200)).body).to.deep.equal({ alias: 'acme-entra' });
      } finally {
        await r.close();
      }
    });
  });

  describe('the logged-out guard (links 6 to 8)', () => {
    let r: Rig;
    before(async () => {
      r = await rig();
    });
    after(() => r.close());

    const cases: Array<[string, string]> = [
      ['/acme', '/auth/start?idp=acme-entra&tenant=acme&returnTo=%2F'],
      ['/acme/', '/auth/start?idp=acme-entra&tenant=acme&returnTo=%2F'],
      ['/globex/c/42?x=1', '/auth/start?idp=globex-okta&tenant=globex&returnTo=%2Fc%2F42%3Fx%3D1'],
      ['/de/acme', '/de/auth/start?idp=acme-entra&tenant=acme&returnTo=%2F'],
      ['/de-CH/globex/workspace', '/de-CH/auth/start?idp=globex-okta&tenant=globex&returnTo=%2Fworkspace'],
      ['/initech', '/auth/login?returnTo=%2Finitech'], // link-only provider
      ['/zzz', '/auth/login?returnTo=%2Fzzz'], // unmapped
      ['/de/zzz/c/1', '/de/auth/login?returnTo=%2Fde%2Fzzz%2Fc%2F1'],
      ['/de', '/de/auth/login?returnTo=%2Fde'],
      ['/', '/auth/login'],
      ['/c/123', '/auth/login?returnTo=%2Fc%2F123'],
    ];
    for (const [path, location] of cases) {
      it(`${path} -> ${location}`, async () => {
        const res = await r.get(path).redirects(0).expect(302);
        expect(res.headers.location).to.equal(location);
        expect(res.headers['cache-control']).to.equal('private, no-store');
      });
    }

    it('API paths get 401, not the guard', async () => {
      await r.get('/api/v1/files/').expect(401);
    });

    it('with the welcome switch on, an unmapped tenant ends on the welcome page', async () => {
      const w = await rig({ env: { IDP_LOGIN_WELCOME_PAGE: 'true' } });
      try {
        const res = await w.get('/zzz').expect(302);
        expect(res.headers.location).to.equal('/auth/login?returnTo=%2Fzzz');
        expect((await w.get(res.headers.location!).expect(200)).text).to.contain('id="welcome-page"');
        expect((await w.get('/acme').expect(302)).headers.location).to.equal('/auth/start?idp=acme-entra&tenant=acme&returnTo=%2F');
      } finally {
        await w.close();
      }
    });
  });

  describe('Open WebUI\u2019s own sign-in page (/auth?redirect=...): the gateway\u2019s sign-in, its return address kept when safe', () => {
    let r: Rig;
    before(async () => {
      r = await rig();
    });
    after(() => r.close());

    const cases: Array<[string, string]> = [
      // what its front-end links after its own sign-out, and Back leads to
      ['/auth?redirect=%2F', '/auth/login'],
      ['/auth?redirect=%2Fc%2F42', '/auth/login?returnTo=%2Fc%2F42'],
      ['/auth?redirect=%2F%3Fmodel%3Dcanned-answers', '/auth/login?returnTo=%2F%3Fmodel%3Dcanned-answers'],
      ['/auth?state=logout&form=signin', '/auth/login'],
      ['/auth', '/auth/login'],
      ['/auth/', '/auth/login'],
      ['/AUTH?redirect=%2Fworkspace', '/auth/login?returnTo=%2Fworkspace'],
      // any locale prefix, any query
      ['/de/auth?redirect=%2Fc%2F42&state=x', '/de/auth/login?returnTo=%2Fc%2F42'],
      ['/de-CH/auth?redirect=%2Fnotes', '/de-CH/auth/login?returnTo=%2Fnotes'],
      // an address off this site, or a sign-in route again, is dropped
      ['/auth?redirect=https%3A%2F%2Fevil.example%2F', '/auth/login'],
      ['/auth?redirect=%2F%2Fevil.example', '/auth/login'],
      ['/auth?redirect=%2F%5Cevil.example', '/auth/login'],
      ['/auth?redirect=javascript%3Aalert(1)', '/auth/login'],
      ['/auth?redirect=%2Fauth%3Fredirect%3D%252F', '/auth/login'],
      ['/auth?redirect=%2Fde%2Fauth%2Flogout', '/auth/login'],
    ];
    for (const [path, location] of cases) {
      it(`${path} -> ${location}`, async () => {
        const res = await r.get(path).redirects(0).expect(302);
        expect(res.headers.location).to.equal(location);
        expect(res.headers['cache-control']).to.equal('no-store');
      });
    }

    it('a sign-in page that works: it lists the providers and returns to the chat', async () => {
      const res = await r.get('/auth?redirect=%2Fc%2F42').redirects(1).expect(200);
      expect(hrefs(res.text)[0]).to.equal('/auth/start?idp=acme-entra&returnTo=%2Fc%2F42');
    });

    it('only for GET and HEAD, and only under a language tag (another first segment is a page: the logged-out guard)', async () => {
      await r.get('/zzzzzzzzz/auth?redirect=%2F').redirects(0).expect(302).expect('location', '/auth/login?returnTo=%2Fzzzzzzzzz%2Fauth%3Fredirect%3D%252F');
      await request(r.url).head('/auth?redirect=%2Fc%2F1').redirects(0).expect(302).expect('location', '/auth/login?returnTo=%2Fc%2F1');
      await request(r.url).post('/auth').redirects(0).expect(404);
    });
  });

  describe('the pages', () => {
    let r: Rig;
    before(async () => {
      r = await rig({ env: { SHOW_IDP_LOGIN: 'true' } });
    });
    after(() => r.close());

    it('carry security headers and no outside resources', async () => {
      for (const path of ['/auth/login', '/auth/login/acme-entra', '/auth/login/nope', '/de/auth/login']) {
        const res = await r.get(path);
        expect(res.headers['content-security-policy']).to.contain("default-src 'none'").and.to.contain("frame-ancestors 'none'");
        expect(res.headers['x-content-type-options']).to.equal('nosniff');
        expect(res.headers['referrer-policy']).to.equal('no-referrer');
        expect(res.headers['cache-control']).to.equal('no-store');
        expect(res.text).not.to.match(/<script|<link|<img|https?:\/\//);
      }
    });

    it('the per-provider page has one button, for hidden providers too', async () => {
      for (const alias of ['acme-entra', 'hidden-saml']) {
        const res = await r.get(`/auth/login/${alias}`).expect(200);
        expect(hrefs(res.text)).to.deep.equal([`/auth/start?idp=${alias}`]);
      }
    });

    it('an unusable alias says so and leads to the generic page', async () => {
      for (const alias of ['partner-linkonly', 'legacy-disabled', 'nope', 'direct-login']) {
        const res = await r.get(`/auth/login/${alias}`).expect(404);
        expect(res.text).to.contain('This sign-in link is not available');
        expect(hrefs(res.text)).to.deep.equal(['/auth/login']);
      }
    });

    it('keeps the locale: German texts, lang, and every link under /de', async () => {
      const list = await r.get('/de/auth/login').expect(200);
      expect(list.text).to.contain('<html lang="de">').and.to.contain('Anmelden mit Acme (Microsoft Entra ID)').and.to.contain('Anmeldung für Administratoren');
      expect(hrefs(list.text)).to.deep.equal(['/de/auth/start?idp=acme-entra', '/de/auth/start?idp=globex-okta', '/de/auth/start']);
      const one = await r.get('/de-AT/auth/login/globex-okta').expect(200);
      expect(one.text).to.contain('<html lang="de-AT">');
      expect(hrefs(one.text)).to.deep.equal(['/de-AT/auth/start?idp=globex-okta']);
      const missing = await r.get('/de/auth/login/nope').expect(404);
      expect(missing.text).to.contain('Dieser Anmeldelink ist nicht verfügbar');
      expect(hrefs(missing.text)).to.deep.equal(['/de/auth/login']);
      const fr = await r.get('/fr/auth/login').expect(200);
      expect(fr.text).to.contain('<html lang="en">');
      expect(hrefs(fr.text)[0]).to.equal('/fr/auth/start?idp=acme-entra');
    });

    it('carries a local returnTo into the buttons and drops any other', async () => {
      const res = await r.get('/auth/login?returnTo=%2Fc%2F1').expect(200);
      expect(hrefs(res.text)[0]).to.equal('/auth/start?idp=acme-entra&returnTo=%2Fc%2F1');
      const evil = await r.get('/auth/login?returnTo=https%3A%2F%2Fevil.example').expect(200);
      expect(evil.text).not.to.contain('evil');
      const missing = await r.get('/auth/login/nope?returnTo=%2Fc%2F1').expect(404);
      expect(hrefs(missing.text)).to.deep.equal(['/auth/login?returnTo=%2Fc%2F1']);
    });

    it('escapes what the realm says', async () => {
      r.kc.providers.push({ alias: 'xss', displayName: '<script>alert(1)</script>"\'&', providerId: 'oidc', enabled: true });
      r.clock.t += FIVE_MINUTES;
      const res = await r.get('/auth/login').expect(200);
      expect(res.text).not.to.contain('<script>');
      expect(res.text).to.contain('&#60;script&#62;alert(1)&#60;/script&#62;&#34;&#39;&#38;');
      const one = await r.get('/auth/login/xss').expect(200);
      expect(one.text).not.to.contain('<script>');
    });

    it('answers HEAD like GET without a body', async () => {
      const res = await request(r.url).head('/auth/login').expect(200);
      expect(res.headers['content-type']).to.match(/text\/html/);
      await request(r.url).head('/api/v1/auth-providers/tenants/acme').expect(200);
    });

    it('is not served for a prefix that is no language tag', async () => {
      await r.get('/not_a_locale/auth/login').redirects(0).expect(302);
    });
  });
});
