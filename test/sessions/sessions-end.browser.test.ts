// The chat front-end's own "Sign out", clicked in headless Chromium: the stand-in's page
// does what Open WebUI's menu does (POST /api/v1/auths/signout since 0.10.2, then follow `redirect_url`). The
// gateway answers it: its session ends, the realm ends its own without asking (id_token_hint),
// and the browser lands on the gateway's login page, signed out for good.
import { expect } from 'chai';
import { browserWorld, signInToChat } from '../support/browser-world.js';

describe("signing out from the chat front-end's menu, in headless Chromium", function () {
  this.timeout(60_000);
  const bw = browserWorld();

  it("ends on the gateway's login page, with no confirmation at the realm, and stays signed out", async () => {
    const tab = await bw.open();
    const { page } = tab;
    await signInToChat(page, bw.w.url, 'alice');

    await Promise.all([page.waitForURL(`${bw.w.url}/auth/login`, { timeout: 10_000 }), page.click('#sign-out')]);
    expect(await page.textContent('h1')).to.equal('Sign in');
    const session = await (await tab.context.request.get(`${bw.w.url}/auth/session`)).json();
    expect(session).to.deep.equal({ authenticated: false });
    // Back to the chat: the logged-out guard sends the browser to sign in again.
    await page.goto(`${bw.w.url}/`);
    expect(new URL(page.url()).pathname).to.equal('/auth/login');
    // And the realm session is over too: starting a sign-in asks for the password again.
    await page.goto(`${bw.w.url}/auth/start?returnTo=%2F`);
    await page.waitForSelector('#kc-form-login');
    expect(tab.errors).to.deep.equal([]);
  });
});
