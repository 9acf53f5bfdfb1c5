// What a newcomer sees in a browser, in headless Chromium against the real sign-in
// module: gateway errors as pages with a way back, /auth/login while signed in, the browser's
// language on unprefixed pages, an unknown provider hint refused, the administrator's way in.
import { expect } from 'chai';
import { signInAtRealm } from '../support/browser.js';
import { browserWorld } from '../support/browser-world.js';

describe('what a newcomer sees, in headless Chromium', function () {
  this.timeout(60_000);
  const bw = browserWorld();

  it('a bare or replayed /auth/callback is a page that says so and leads back to signing in; API clients keep JSON', async () => {
    const tab = await bw.open();
    const { page } = tab;
    const answer = await page.goto(`${bw.w.url}/auth/callback?code=replayed&state=old`);
    expect(answer!.status()).to.equal(400);
    expect(await page.textContent('h1')).to.equal('Sign-in did not complete');
    await Promise.all([page.waitForURL(`${bw.w.url}/auth/login`), page.click('#back-to-login')]);
    const api = await fetch(`${bw.w.url}/auth/callback?code=replayed&state=old`, { headers: { accept: 'application/json' } });
    expect(api.status).to.equal(400);
    expect(((await api.json()) as { detail: string }).detail).to.equal('Sign-in failed, please start again');
  });

  it('an unknown /auth/ address is a 404 page (German under /de), JSON for API clients', async () => {
    const tab = await bw.open();
    const { page } = tab;
    const answer = await page.goto(`${bw.w.url}/auth/nothing-here`);
    expect(answer!.status()).to.equal(404);
    expect(await page.textContent('h1')).to.equal('Page not found');
    await page.goto(`${bw.w.url}/de/auth/nothing-here`);
    expect(await page.textContent('h1')).to.equal('Seite nicht gefunden');
    expect(await page.getAttribute('#back-to-login', 'href')).to.equal('/de/auth/login');
    const api = await fetch(`${bw.w.url}/auth/nothing-here`);
    expect(api.status).to.equal(404);
    expect(await api.json()).to.deep.equal({ detail: 'Not Found' });
  });

  it('/auth/login while signed in shows who is signed in, with the way on and the way out', async () => {
    const tab = await bw.open();
    const { page } = tab;
    await page.goto(`${bw.w.url}/auth/start?returnTo=%2F`);
    await signInAtRealm(page, 'alice', 'alice-pass');
    await page.goto(`${bw.w.url}/auth/login`);
    expect(await page.textContent('#signed-in-as')).to.include('alice@acme.example');
    expect(await page.getAttribute('#sign-out', 'href')).to.equal('/auth/logout');
    await Promise.all([page.waitForURL(`${bw.w.url}/`), page.click('#continue')]);
    await page.waitForSelector('#who');
    // the chat front-end's home (stand-in) shows the switches in force
    expect(await page.textContent('#switches'))
      .to.include('CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=false')
      .and.include('CHATUI_ENABLE_ADMIN_EXPORT=false');
  });

  it("an unprefixed login page speaks the browser's language (Accept-Language); the path prefix still wins", async () => {
    const tab = await bw.open({ locale: 'de-DE' });
    const { page } = tab;
    await page.goto(`${bw.w.url}/auth/login`);
    expect(await page.getAttribute('html', 'lang')).to.equal('de');
    expect(await page.title()).to.match(/Anmeld/);
    // links stay unprefixed: the address decides the page, the language only its words
    expect(await page.getAttribute('a.button >> nth=0', 'href')).to.match(/^\/auth\/start\?/);
    await page.goto(`${bw.w.url}/en/auth/login`);
    expect(await page.getAttribute('html', 'lang')).to.equal('en');
  });

  it('/auth/start with an unknown provider hint never reaches the realm: the page says the link is not available', async () => {
    const tab = await bw.open();
    const { page } = tab;
    const before = bw.w.idp.authorizations.length;
    const answer = await page.goto(`${bw.w.url}/auth/start?idp=no-such-provider`);
    expect(answer!.status()).to.equal(404);
    expect(new URL(page.url()).origin).to.equal(bw.w.url);
    await Promise.all([page.waitForURL(`${bw.w.url}/auth/login`), page.click('#generic-login')]);
    expect(bw.w.idp.authorizations.length).to.equal(before);
  });

  it("the platform administrator signs in through /auth/start (the realm's own form, no hint) and is the chat admin", async () => {
    const tab = await bw.open();
    const { page } = tab;
    const before = bw.w.idp.authorizations.length;
    await page.goto(`${bw.w.url}/auth/start?returnTo=%2F`);
    expect(bw.w.idp.authorizations.slice(before)[0]).to.not.have.property('kc_idp_hint');
    await signInAtRealm(page, 'sysadmin', 'sysadmin-pass');
    await page.waitForSelector('#role');
    expect(await page.textContent('#role')).to.equal('admin');
    const session = await (await tab.context.request.get(`${bw.w.url}/auth/session`)).json();
    expect(session.user).to.include({ admin: true, email: 'sysadmin@platform.example' });
  });
  it('a user of two tenants switches the active one in the stand-in, as the platform\u2019s front-end does; a user of one sees no such control', async () => {
    const tab = await bw.open();
    const { page } = tab;
    await page.goto(`${bw.w.url}/auth/start?returnTo=%2F`);
    await signInAtRealm(page, 'carol', 'carol-pass');
    await page.waitForSelector('#tenant-switch');
    expect(await page.textContent('#tenant')).to.equal('acme');
    expect(await page.locator('#tenant-choice option').allTextContents()).to.deep.equal(['acme', 'globex']);
    await page.selectOption('#tenant-choice', 'globex');
    await Promise.all([page.waitForEvent('load'), page.click('#tenant-switch button[type=submit]')]);
    await page.waitForSelector('#tenant');
    expect(await page.textContent('#tenant')).to.equal('globex');
    expect((await (await tab.context.request.get(`${bw.w.url}/auth/session`)).json()).active_tenant).to.equal('globex');
    expect(tab.errors).to.deep.equal([]);

    const single = await bw.open();
    await single.page.goto(`${bw.w.url}/auth/start?returnTo=%2F`);
    await signInAtRealm(single.page, 'alice', 'alice-pass');
    await single.page.waitForSelector('#tenant');
    expect(await single.page.locator('#tenant-switch').count()).to.equal(0);
  });
});
