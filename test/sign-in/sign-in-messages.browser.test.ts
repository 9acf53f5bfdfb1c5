// What a failed or unusual sign-in tells the user, as a person sees them in headless Chromium (and over HTTP for every
// error code): a failed sign-in says what happened (per OAuth error code, localized, with the way
// back), /{locale}/auth/callback is a page in that language, signing in through another tenant's
// link says so once, and the sandbox realm's form looks like a realm login page with the provider
// hint in a small note and no debugging lines.
import { expect } from 'chai';
import { signInAtRealm } from '../support/browser.js';
import { browserWorld } from '../support/browser-world.js';
import { browse, Jar } from '../support/cookie-jar.js';

describe('what a failed or unusual sign-in tells the user', function () {
  this.timeout(90_000);
  const bw = browserWorld();

  it('Cancel at the realm: "Sign-in was cancelled", with a link to sign in again, not "already used"', async () => {
    const tab = await bw.open();
    const { page } = tab;
    await page.goto(`${bw.w.url}/auth/start?returnTo=%2F`);
    await page.waitForSelector('#kc-form-login');
    await Promise.all([page.waitForURL((u) => u.pathname === '/auth/callback'), page.click('#kc-cancel')]);
    expect(await page.textContent('h1')).to.equal('Sign-in was cancelled');
    const text = await page.textContent('body');
    expect(text).to.include('Nothing was changed');
    expect(text).to.not.include('already used');
    expect(await page.textContent('#error-code')).to.include('access_denied');
    await Promise.all([page.waitForURL((u) => u.pathname === '/auth/login'), page.click('#back-to-login')]);
    expect(await page.textContent('h1')).to.equal('Sign in');
    expect(tab.errors).to.deep.equal([]);
  });

  /** A real sign-in begun (the browser holds the transaction cookie), answered by the realm with `error`. */
  async function realmError(code: string, acceptLanguage = 'en'): Promise<{ status: number; title: string; text: string }> {
    const jar = new Jar(bw.w.url);
    const start = await browse(jar, '/auth/start?returnTo=%2F');
    const state = new URL(start.location!).searchParams.get('state')!;
    const r = await browse(jar, `/auth/callback?${new URLSearchParams({ error: code, error_description: 'described by the realm', state })}`, {
      headers: { accept: 'text/html', 'accept-language': acceptLanguage },
    });
    expect(r.headers.get('content-type')).to.match(/^text\/html/);
    return { status: r.status, title: /<h1[^>]*>([^<]*)</.exec(r.text)![1]!, text: r.text };
  }

  it('one message per OAuth error code, each with the way back', async () => {
    const expected: Record<string, string> = {
      access_denied: 'Sign-in was cancelled',
      login_required: 'Please sign in',
      interaction_required: 'Your sign-in service needs something from you',
      consent_required: 'Consent needed',
      account_selection_required: 'Choose an account',
      temporarily_unavailable: 'Sign-in is temporarily unavailable',
      server_error: 'Your sign-in service had a problem',
      invalid_scope: 'Sign-in is not set up correctly',
      unauthorized_client: 'Sign-in is not set up correctly',
      made_up_error: 'Sign-in did not complete',
    };
    for (const [code, title] of Object.entries(expected)) {
      const r = await realmError(code);
      expect(r.status, code).to.equal(400);
      expect(r.title, code).to.equal(title);
      expect(r.text, code).to.include('href="/auth/login"');
      expect(r.text, code).to.not.include('already used');
    }
    expect((await realmError('temporarily_unavailable')).text).to.include('try again in a few minutes');
  });

  it('localized like the other pages', async () => {
    expect((await realmError('access_denied', 'de-DE,de;q=0.9')).title).to.equal('Die Anmeldung wurde abgebrochen');
    expect((await realmError('server_error', 'de')).title).to.equal('Ihr Anmeldedienst hatte ein Problem');
  });

  it('/de/auth/callback is a German page, not JSON', async () => {
    const tab = await bw.open();
    const { page } = tab;
    const res = await page.goto(`${bw.w.url}/de/auth/callback?error=access_denied&state=x`);
    expect(res!.status()).to.equal(400);
    expect(res!.headers()['content-type']).to.match(/^text\/html/);
    expect(await page.getAttribute('html', 'lang')).to.equal('de');
    expect(await page.textContent('h1')).to.equal('Die Anmeldung wurde abgebrochen');
    expect(await page.getAttribute('#back-to-login', 'href')).to.equal('/de/auth/login');
    await page.goto(`${bw.w.url}/de/auth/callback`);
    expect(await page.textContent('h1')).to.equal('Die Anmeldung wurde nicht abgeschlossen');
    expect(tab.errors).to.deep.equal([]);
  });

  it("signing in through another tenant's link says so once, then the chat in the user's own tenant", async () => {
    const tab = await bw.open();
    const { page } = tab;
    await page.goto(`${bw.w.url}/acme`);
    expect(await page.getAttribute('#idp-hint', 'data-hint')).to.equal('acme-entra');
    await signInAtRealm(page, 'bob', 'bob-pass');
    await page.waitForSelector('#tenant-notice');
    expect(await page.textContent('h1')).to.equal('Signed in, but not to the organisation of your link');
    expect(await page.textContent('#tenant-notice')).to.equal(
      'You signed in through the sign-in link of "acme", but your account is not a member of it. You are working in "globex", your own organisation.',
    );
    await Promise.all([page.waitForURL(`${bw.w.url}/`), page.click('#continue')]);
    await page.waitForSelector('#who');
    expect(await page.textContent('#tenant')).to.equal('globex');
    // Once: the chat again does not say it again.
    await page.reload();
    await page.waitForSelector('#who');
    expect(new URL(page.url()).pathname).to.equal('/');
    expect(tab.errors).to.deep.equal([]);
  });

  it("a member signing in through their tenant's link sees no notice", async () => {
    const tab = await bw.open();
    const { page } = tab;
    await page.goto(`${bw.w.url}/acme`);
    await signInAtRealm(page, 'alice', 'alice-pass');
    await page.waitForSelector('#who');
    expect(await page.textContent('#tenant')).to.equal('acme');
    expect(tab.documents.some((d) => d.includes('/auth/signed-in'))).to.equal(false);
  });

  it("the sandbox realm's form: a realm login page, the provider hint in a small note, no debugging lines", async () => {
    const tab = await bw.open();
    const { page } = tab;
    await page.goto(`${bw.w.url}/auth/start?idp=globex-okta&returnTo=%2F`);
    await page.waitForSelector('#kc-form-login');
    const text = (await page.textContent('body'))!;
    expect(text).to.not.match(/Client:|kc_idp_hint|Plain idp_hint/);
    expect(await page.textContent('#hint-note')).to.include('globex-okta');
    expect(await page.textContent('#kc-header')).to.equal('Platform');
    const style = await page.evaluate(() => {
      const card = getComputedStyle(document.getElementById('kc-content')!);
      const button = getComputedStyle(document.getElementById('kc-login')!);
      const note = getComputedStyle(document.getElementById('hint-note')!);
      return {
        card: card.backgroundColor,
        width: card.maxWidth,
        button: button.backgroundColor,
        note: parseFloat(note.fontSize),
        body: parseFloat(getComputedStyle(document.body).fontSize),
      };
    });
    expect(style.card).to.equal('rgb(255, 255, 255)');
    expect(style.width).to.not.equal('none');
    expect(style.button).to.equal('rgb(0, 102, 204)');
    expect(style.note).to.be.lessThan(style.body);
    await page.goto(`${bw.w.url}/auth/start?returnTo=%2F`);
    await page.waitForSelector('#kc-form-login');
    expect(await page.locator('#hint-note').count(), 'no note without a hint').to.equal(0);
  });
});
