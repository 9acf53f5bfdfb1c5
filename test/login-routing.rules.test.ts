// Spec area B without I/O: the provider rules, the list response, the guard's reading of a path,
// and IDP_TENANT_IDP_ALIASES at startup (links rule 5).
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import {
  DIRECT_LOGIN_ALIAS,
  buttonList,
  isHiddenOnLoginPage,
  isUsableForLinks,
  loggedOutRedirect,
  providerEntry,
  providerListResponse,
  safeReturnTo,
  splitGuardPath,
  type IdentityProvider,
} from '../policies/login-routing.js';
import { clientKey } from '../gateway/http/client-key.js';
import { tokenUrlFor } from '../gateway/auth/realm.js';
import { escapeHtml } from '../gateway/pages/templates.js';
import { pageLocale, startHref } from '../gateway/pages/locale.js';
import { loadSettings, SettingsError } from '../config/settings.js';
import { parseTenantAliases } from '../config/tenant-aliases.js';
import { demoIdentityProviders, demoTenantAliases } from '../sandbox/demo-realm.js';
import { baseEnv } from './support/gateway-harness.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const idp = (alias: string, extra: Partial<IdentityProvider> = {}): IdentityProvider => ({
  alias,
  displayName: alias.toUpperCase(),
  enabled: true,
  linkOnly: false,
  ...extra,
});

describe('login routing rules (policies/login-routing.ts)', () => {
  describe('usable for links: enabled and not link-only', () => {
    it('accepts an enabled provider, hidden or not (B4, B5)', () => {
      expect(isUsableForLinks(idp('a'))).to.equal(true);
      expect(isUsableForLinks(idp('a', { hideOnLogin: true }))).to.equal(true);
      expect(isUsableForLinks(idp('a', { config: { hideOnLoginPage: 'true' } }))).to.equal(true);
    });
    it('refuses disabled, link-only, absent and half-described providers', () => {
      expect(isUsableForLinks(idp('a', { enabled: false }))).to.equal(false);
      expect(isUsableForLinks(idp('a', { linkOnly: true }))).to.equal(false);
      expect(isUsableForLinks(null)).to.equal(false);
      expect(isUsableForLinks(undefined)).to.equal(false);
      // no `enabled` at all: not usable (the catalog asks for full representations, never the brief form)
      expect(isUsableForLinks({ alias: 'a' })).to.equal(false);
    });
  });

  describe('hidden on the login page: both Keycloak generations', () => {
    it('reads the pre-26 config key as the spec says (B5)', () => {
      expect(isHiddenOnLoginPage(idp('a', { config: { hideOnLoginPage: 'true' } }))).to.equal(true);
      expect(isHiddenOnLoginPage(idp('a', { config: { hideOnLoginPage: 'false' } }))).to.equal(false);
    });
    it("reads Keycloak 26's top-level hideOnLogin", () => {
      expect(isHiddenOnLoginPage(idp('a', { hideOnLogin: true }))).to.equal(true);
      expect(isHiddenOnLoginPage(idp('a', { hideOnLogin: false, config: {} }))).to.equal(false);
    });
    it('is not hidden without either', () => {
      expect(isHiddenOnLoginPage(idp('a'))).to.equal(false);
    });
  });

  describe('the button list (B1, B5)', () => {
    it('keeps the enabled, not link-only, not hidden providers of the demo realm', () => {
      expect(buttonList(demoIdentityProviders).map((p) => p.alias)).to.deep.equal(['acme-entra', 'globex-okta']);
    });
    it('orders by config.guiOrder, then as listed', () => {
      const list = [idp('c', { config: { guiOrder: '2' } }), idp('b'), idp('a', { config: { guiOrder: '1' } }), idp('d')];
      expect(buttonList(list).map((p) => p.alias)).to.deep.equal(['a', 'c', 'b', 'd']);
    });
    it('never lets a realm provider pose as the synthetic direct-login entry', () => {
      expect(buttonList([idp(DIRECT_LOGIN_ALIAS)])).to.deep.equal([]);
    });
    it('prints alias and display_name only, the name falling back to the alias', () => {
      expect(providerEntry(demoIdentityProviders[0]!)).to.deep.equal({ alias: 'acme-entra', display_name: 'Acme (Microsoft Entra ID)' });
      expect(providerEntry({ alias: 'x', enabled: true })).to.deep.equal({ alias: 'x', display_name: 'x' });
      expect(providerEntry({ alias: 'x', displayName: '  ', enabled: true })).to.deep.equal({ alias: 'x', display_name: 'x' });
    });
  });

  describe('the provider list response (B1, B2, versioning 2)', () => {
    const direct = { alias: 'direct-login', display_name: 'Administrator login' };
    const buttons = [
      { alias: 'acme-entra', display_name: 'Acme (Microsoft Entra ID)' },
      { alias: 'globex-okta', display_name: 'Globex (Okta)' },
    ];
    it('switch off: welcome_page false and the buttons', () => {
      expect(providerListResponse({ welcomePage: false, showIdpLogin: false }, demoIdentityProviders)).to.deep.equal({
        welcome_page: false,
        providers: buttons,
      });
    });
    it('switch off with SHOW_IDP_LOGIN: the buttons and the direct-login entry', () => {
      expect(providerListResponse({ welcomePage: false, showIdpLogin: true }, demoIdentityProviders)).to.deep.equal({
        welcome_page: false,
        providers: [...buttons, direct],
      });
    });
    it('switch on: no providers, without needing the catalog', () => {
      expect(providerListResponse({ welcomePage: true, showIdpLogin: false })).to.deep.equal({ welcome_page: true, providers: [] });
    });
    it('switch on with SHOW_IDP_LOGIN: only the direct-login entry, whatever the realm holds', () => {
      expect(providerListResponse({ welcomePage: true, showIdpLogin: true }, demoIdentityProviders)).to.deep.equal({ welcome_page: true, providers: [direct] });
    });
    it('refuses to build the switch-off answer without the catalog', () => {
      expect(() => providerListResponse({ welcomePage: false, showIdpLogin: false })).to.throw(/needed/);
    });
  });

  describe('the tenant a logged-out page names (links 6)', () => {
    const cases: Array<[string, string | undefined, string]> = [
      ['/acme', 'acme', '/'],
      ['/acme/', 'acme', '/'],
      ['/acme/c/123', 'acme', '/c/123'],
      ['/de/acme', 'acme', '/'],
      ['/de-CH/acme/workspace/', 'acme', '/workspace/'],
      ['/en/acme-eu.1', 'acme-eu.1', '/'],
      ['/ibm', 'ibm', '/'], // a lone segment is the tenant, even when it looks like a language tag
      ['/de', 'de', '/'],
      ['/', undefined, '/'],
      ['/auth/login', undefined, '/login'],
      ['/de/auth/login', undefined, '/login'],
      ['/%7Eacme', undefined, '/'], // not a tenant id
      ['/-acme', undefined, '/'],
      [`/${'a'.repeat(129)}`, undefined, '/'],
    ];
    for (const [path, tenant, rest] of cases) {
      it(`${path} names ${tenant ?? 'no tenant'}`, () => {
        expect(splitGuardPath(path).tenant).to.equal(tenant);
        expect(splitGuardPath(path).rest).to.equal(rest);
      });
    }
    it('keeps the locale only in front of more segments', () => {
      expect(splitGuardPath('/de/acme').locale).to.equal('de');
      expect(splitGuardPath('/de').locale).to.equal(undefined);
    });

    describe('where the visit goes (loggedOutRedirect, links 6 to 8)', () => {
      const go = (path: string, search: string, alias: string | null, loginLocale?: string) =>
        loggedOutRedirect(splitGuardPath(path), path, search, alias, loginLocale);
      it('a tenant with a usable provider: straight to its sign-in, back to what follows the tenant segment', () => {
        expect(go('/de/acme/c/1', '?x=1', 'acme-oidc')).to.deep.equal({
          to: 'tenant-provider',
          idp: 'acme-oidc',
          tenant: 'acme',
          locale: 'de',
          returnTo: '/c/1?x=1',
        });
        expect(go('/acme', '', 'acme-oidc')).to.deep.equal({ to: 'tenant-provider', idp: 'acme-oidc', tenant: 'acme', returnTo: '/' });
      });
      it('no usable provider, no tenant, or no lookup: the login page, with the visited page to come back to', () => {
        expect(go('/acme/c/1', '', null, 'de')).to.deep.equal({ to: 'login', locale: 'de', returnTo: '/acme/c/1' });
        expect(go('/', '', null)).to.deep.equal({ to: 'login' });
        expect(go('/%7Eacme/c', '', 'acme-oidc'), 'not a tenant id: no tenant, whatever was looked up').to.deep.equal({ to: 'login', returnTo: '/%7Eacme/c' });
      });
      it('never offers a way back off the site', () => {
        expect(go('//evil.example/x', '', null).to).to.equal('login');
        expect(go('//evil.example/x', '', null)).to.not.have.property('returnTo', '//evil.example/x');
      });
    });
  });

  describe('returnTo stays on this site', () => {
    it('accepts local paths', () => {
      expect(safeReturnTo('/')).to.equal('/');
      expect(safeReturnTo('/c/1?x=2')).to.equal('/c/1?x=2');
    });
    for (const bad of ['//evil.example', '/\\evil.example', 'https://evil.example', 'evil', '', '/a\nb', `/${'a'.repeat(3000)}`, ['/a'], 5]) {
      it(`drops ${JSON.stringify(bad).slice(0, 40)}`, () => expect(safeReturnTo(bad)).to.equal(undefined));
    }
  });

  describe('page helpers', () => {
    it('escapes markup', () => {
      expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).to.equal('&#60;a href=&#34;x&#34; onclick=&#39;y&#39;&#62;&#38;&#60;/a&#62;');
    });
    it('builds /auth/start links: hint only with an alias, the locale as a path prefix', () => {
      expect(startHref({ idp: 'acme-entra', returnTo: '/c/1' })).to.equal('/auth/start?idp=acme-entra&returnTo=%2Fc%2F1');
      expect(startHref({ idp: 'acme-entra', tenant: 'acme', locale: 'de' })).to.equal('/de/auth/start?idp=acme-entra&tenant=acme');
      expect(startHref({})).to.equal('/auth/start');
    });
    it('speaks German for de and its regions, English otherwise', () => {
      expect(pageLocale('de')).to.deep.equal({ prefix: 'de', lang: 'de', htmlLang: 'de' });
      expect(pageLocale('de-CH')).to.deep.equal({ prefix: 'de-CH', lang: 'de', htmlLang: 'de-CH' });
      expect(pageLocale('fr')).to.deep.equal({ prefix: 'fr', lang: 'en', htmlLang: 'en' });
      expect(pageLocale(undefined)).to.deep.equal({ prefix: undefined, lang: 'en', htmlLang: 'en' });
    });
  });

  describe('rate limit keys and windows (links 12)', () => {
    it('keys IPv4 by address and IPv6 by /64', () => {
      expect(clientKey('10.1.2.3')).to.equal('10.1.2.3');
      expect(clientKey('::ffff:10.1.2.3')).to.equal('10.1.2.3');
      expect(clientKey('2001:db8:1:2:aaaa::1')).to.equal('2001:db8:1:2::/64');
      expect(clientKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).to.equal('2001:db8:1:2::/64');
      expect(clientKey('2001:db8::1')).to.equal('2001:db8:0:0::/64');
      expect(clientKey('::1')).to.equal('0:0:0:0::/64');
      expect(clientKey(undefined)).to.equal('unknown');
    });
  });

  it('derives the service-account token endpoint from the admin URL', () => {
    expect(tokenUrlFor('https://kc.example/admin/realms/platform')).to.equal('https://kc.example/realms/platform/protocol/openid-connect/token');
    expect(tokenUrlFor('https://kc.example/auth/admin/realms/p/')).to.equal('https://kc.example/auth/realms/p/protocol/openid-connect/token');
    expect(() => tokenUrlFor('https://kc.example/realms/platform')).to.throw(/admin\/realms/);
  });
});

describe('IDP_TENANT_IDP_ALIASES at startup (links 5)', () => {
  const env = (value: string | undefined) => baseEnv('http://127.0.0.1:9', { IDP_TENANT_IDP_ALIASES: value });

  it('reads the demo mapping; several tenants may share one alias', () => {
    const parsed = parseTenantAliases(`${demoTenantAliases}, acme-eu = acme-entra`);
    expect(parsed.ok).to.equal(true);
    if (!parsed.ok) return;
    expect([...parsed.map]).to.deep.equal([
      ['acme', 'acme-entra'],
      ['globex', 'globex-okta'],
      ['initech', 'partner-linkonly'],
      ['acme-eu', 'acme-entra'],
    ]);
  });

  it('an empty value (or none) is valid and turns tenant links off', () => {
    for (const v of [undefined, '', '   ']) {
      const parsed = parseTenantAliases(v);
      expect(parsed.ok && parsed.map.size).to.equal(0);
      expect(loadSettings(env(v), { stageFiles: false }).policy.tenantAliases.size).to.equal(0);
    }
  });

  const malformed = [
    'acme',
    'acme=',
    '=acme-entra',
    'acme=acme-entra,globex',
    'acme==x',
    'acme=a=b',
    'ac me=x',
    'acme=x y',
    'acme=x,,globex=y',
    'acme=x,',
    '-acme=x',
    'acme=%41',
  ];
  for (const value of malformed) {
    it(`fails on the malformed pair in ${JSON.stringify(value)}`, () => {
      expect(parseTenantAliases(value).ok).to.equal(false);
      expect(() => loadSettings(env(value), { stageFiles: false }))
        .to.throw(SettingsError)
        .with.property('message')
        .that.matches(/IDP_TENANT_IDP_ALIASES: malformed pair/);
    });
  }

  it('fails on a tenant that appears twice, even with the same alias', () => {
    for (const value of ['acme=a,acme=b', 'acme=a,globex=g,acme=a']) {
      const parsed = parseTenantAliases(value);
      expect(parsed).to.deep.equal({ ok: false, error: 'tenant "acme" appears twice' });
      expect(() => loadSettings(env(value), { stageFiles: false })).to.throw(/IDP_TENANT_IDP_ALIASES: tenant "acme" appears twice/);
    }
  });

  it('stops `npm start` before listening, naming the variable', function () {
    this.timeout(20_000);
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'gateway/main.ts'], {
      cwd: root,
      env: { PATH: process.env.PATH, ...env('acme=acme-entra,acme=globex-okta'), NODE_ENV: 'production', PUBLIC_URL: 'http://localhost:8080', PORT: '0' },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(run.status).to.equal(2);
    expect(run.stderr).to.match(/IDP_TENANT_IDP_ALIASES: tenant "acme" appears twice/);
    expect(run.stdout).not.to.match(/listening/);
  });
});

describe('locale prefixes: reserved first segments are never a locale', () => {
  it('`api` and `ws` look like language tags but name routes: /api/auth/... and /ws/auth/... stay the chat front-end\u2019s', async () => {
    const { classify } = await import('../policies/routes.js');
    const { splitGuardPath } = await import('../policies/login-routing.js');
    const { isLocaleSegment, RESERVED_FIRST_SEGMENTS } = await import('../policies/syntax.js');
    // Regression: the locale pattern took `api` for a language, so /api/auth/login was the gateway's login page.
    expect(classify('/api/auth/login')).to.equal('api');
    expect(classify('/api/auth/start')).to.equal('api');
    expect(classify('/ws/auth/logout')).to.equal('api');
    expect(classify('/de/auth/login')).to.equal('control');
    expect(classify('/de-CH/auth/login')).to.equal('control');
    for (const seg of RESERVED_FIRST_SEGMENTS) expect(isLocaleSegment(seg), seg).to.equal(false);
    expect(isLocaleSegment('API')).to.equal(false);
    expect(isLocaleSegment('de')).to.equal(true);
    expect(splitGuardPath('/api/acme').locale).to.equal(undefined);
  });
});
