// Spec area B in a real browser: headless Chromium (Debian's, driven by playwright-core) against
// the gateway with its real sign-in module and the realm's OpenID Provider stand-in, whose login
// page shows the kc_idp_hint it received (`#idp-hint`).
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, openPage, signInAtRealm, type OpenPage } from '../support/browser.js';
import { startWorld, type World } from '../support/cookie-jar.js';

/** On the realm's login page: which hint did it get? */
async function realmHint(page: Page): Promise<string> {
  await page.waitForSelector('#kc-form-login');
  return (await page.locator('#idp-hint').getAttribute('data-hint')) ?? '';
}

describe('login pages in headless Chromium', function () {
  this.timeout(60_000);
  let browser: Browser;
  let w: World;
  let tab: OpenPage;

  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });
  beforeEach(async () => {
    tab = await openPage(browser);
  });
  afterEach(async () => {
    await tab?.close();
  });

  describe('welcome switch off', () => {
    before(async () => {
      w = await startWorld({ env: { IDP_TENANT_IDP_ALIASES: 'acme=acme-entra,globex=globex-okta,initech=partner-linkonly', SHOW_IDP_LOGIN: 'true' } });
    });
    after(async () => {
      await w?.close();
    });

    it('a tenant link lands at the provider with the hint, and the tenant becomes active after sign-in', async () => {
      const { page } = tab;
      const before = w.idp.authorizations.length;
      await page.goto(`${w.url}/globex`);
      expect(new URL(page.url()).origin).to.equal(w.idp.url);
      expect(await realmHint(page)).to.equal('globex-okta');
      const auth = w.idp.authorizations.slice(before);
      expect(auth).to.have.length(1);
      expect(auth[0]).to.include({ kc_idp_hint: 'globex-okta', idp_hint: 'globex-okta' });
      expect(tab.errors).to.deep.equal([]);
      expect(tab.failed).to.deep.equal([]);
      // carol is a member of acme and globex: the linked tenant wins over her first tenant
      await signInAtRealm(page, 'carol', 'carol-pass');
      expect(new URL(page.url()).origin).to.equal(w.url);
      const session = await (await tab.context.request.get(`${w.url}/auth/session`)).json();
      expect(session).to.include({ authenticated: true, active_tenant: 'globex' });
    });

    it('Back from the provider does not bounce: the tenant page never entered the history', async () => {
      const { page } = tab;
      await page.goto(`${w.url}/auth/login`);
      const entries = await page.evaluate(() => history.length);
      await page.goto(`${w.url}/acme`);
      expect(await realmHint(page)).to.equal('acme-entra');
      // one new entry (the realm's page): /acme and /auth/start were redirects, not documents
      expect(await page.evaluate(() => history.length)).to.equal(entries + 1);
      const before = w.idp.authorizations.length;
      await page.goBack();
      await page.waitForLoadState('load');
      expect(new URL(page.url()).pathname).to.equal('/auth/login');
      await page.waitForTimeout(300); // nothing sends it on again
      expect(new URL(page.url()).pathname).to.equal('/auth/login');
      expect(w.idp.authorizations.length).to.equal(before);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Sign in');
      // and Forward goes to the realm again, not to the tenant page
      await page.goForward();
      expect(new URL(page.url()).origin).to.equal(w.idp.url);
      expect(tab.documents.map((u) => new URL(u).pathname)).not.to.include('/acme');
    });

    it('the generic page: one button per visible provider, each starting the login with its hint', async () => {
      const { page } = tab;
      await page.goto(`${w.url}/auth/login`);
      expect(await page.getAttribute('html', 'lang')).to.equal('en');
      const buttons = page.getByRole('list', { name: 'Sign-in providers' }).getByRole('link');
      expect(await buttons.allTextContents()).to.deep.equal(['Sign in with Acme (Microsoft Entra ID)', 'Sign in with Globex (Okta)']);
      await page.getByRole('link', { name: 'Sign in with Acme (Microsoft Entra ID)' }).click();
      expect(await realmHint(page)).to.equal('acme-entra');
      expect(w.idp.authorizations.at(-1)).to.include({ kc_idp_hint: 'acme-entra', idp_hint: 'acme-entra' });
      expect(tab.errors).to.deep.equal([]);
    });

    it('the administrator link (direct login) sends no hint', async () => {
      const { page } = tab;
      await page.goto(`${w.url}/auth/login`);
      await page.getByRole('link', { name: 'Administrator login' }).click();
      expect(await realmHint(page)).to.equal('');
      const last = w.idp.authorizations.at(-1)!;
      expect(last).not.to.have.property('kc_idp_hint');
      expect(last).not.to.have.property('idp_hint');
    });

    it('a per-provider page has its one button, hidden providers included', async () => {
      const { page } = tab;
      await page.goto(`${w.url}/auth/login/hidden-saml`);
      const links = page.getByRole('link');
      expect(await links.count()).to.equal(1);
      expect(await links.first().textContent()).to.equal('Sign in with Hidden SAML partner');
      await links.first().click();
      expect(await realmHint(page)).to.equal('hidden-saml');
      expect(tab.errors).to.deep.equal([]);
    });

    it('a per-provider page for an unusable alias says so and leads to the generic page, in German under /de', async () => {
      const { page } = tab;
      const res = await page.goto(`${w.url}/de/auth/login/partner-linkonly`);
      expect(res?.status()).to.equal(404);
      expect(await page.getAttribute('html', 'lang')).to.equal('de');
      expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Dieser Anmeldelink ist nicht verfügbar');
      await page.getByRole('link', { name: 'Zur Anmeldeseite' }).click();
      expect(new URL(page.url()).pathname).to.equal('/de/auth/login');
      expect(await page.getByRole('link', { name: 'Anmelden mit Globex (Okta)' }).count()).to.equal(1);
      await page.getByRole('link', { name: 'Anmelden mit Globex (Okta)' }).click();
      expect(await realmHint(page)).to.equal('globex-okta');
    });

    it('a tenant whose provider is link-only ends on the generic page', async () => {
      const { page } = tab;
      await page.goto(`${w.url}/initech`);
      expect(new URL(page.url()).pathname).to.equal('/auth/login');
      expect(await page.locator('main#login-page').count()).to.equal(1);
    });
  });

  describe('welcome switch on', () => {
    before(async () => {
      w = await startWorld({ env: { IDP_LOGIN_WELCOME_PAGE: 'true', IDP_TENANT_IDP_ALIASES: 'acme=acme-entra' } });
    });
    after(async () => {
      await w?.close();
    });

    it('an unmapped tenant lands on the welcome page', async () => {
      const { page } = tab;
      await page.goto(`${w.url}/zzz-unknown`);
      expect(new URL(page.url()).pathname).to.equal('/auth/login');
      expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Welcome');
      expect(await page.locator('#welcome-text').isVisible()).to.equal(true);
      expect(await page.getByRole('link').count()).to.equal(0); // no SHOW_IDP_LOGIN: no administrator link
      expect(tab.documents.map((u) => new URL(u).pathname)).to.deep.equal(['/auth/login']);
      expect(tab.errors).to.deep.equal([]);
    });

    it('keeps the locale: /de/ gives the German welcome page', async () => {
      const { page } = tab;
      await page.goto(`${w.url}/de/zzz-unknown`);
      expect(new URL(page.url()).pathname).to.equal('/de/auth/login');
      expect(await page.getAttribute('html', 'lang')).to.equal('de');
      expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Willkommen');
    });

    it('a mapped tenant still reaches its provider', async () => {
      const { page } = tab;
      await page.goto(`${w.url}/de/acme`);
      expect(await realmHint(page)).to.equal('acme-entra');
    });
  });
});
