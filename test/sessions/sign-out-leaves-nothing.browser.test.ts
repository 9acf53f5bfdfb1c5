// Signing out, in headless Chromium: after signing out, Back shows no personal data, and the
// browser keeps nothing usable (cookies, storage), whichever way the session ended: the chat
// front-end's own menu entry, the gateway's /auth/logout, or a refresh the realm refused (the
// next request clears it). The chat front-end's API answers and pages are never stored; its
// static assets keep the upstream's caching.
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { browserWorld, signInToChat } from '../support/browser-world.js';
import { CLIENT_ID } from '../support/cookie-jar.js';

/** Everything the page shows, and what its scripts may still read. */
async function visible(page: Page): Promise<string> {
  await page.waitForLoadState('load');
  await page.waitForTimeout(300); // the chat page's script fetches /api/v1/auths/ after load
  const storage = await page.evaluate(() => {
    try {
      return JSON.stringify({ ...localStorage });
    } catch {
      return ''; // a document without storage (an error page of the browser's own)
    }
  });
  return `${page.url()}\n${await page.content()}\n${storage}`;
}

describe('signing out leaves nothing behind, in headless Chromium', function () {
  this.timeout(90_000);
  // 4-second access tokens: refreshed once 2 s old (the margin is at most half their lifetime).
  const bw = browserWorld({ env: { TOKEN_REFRESH_MARGIN_SECONDS: '2' }, accessTokenTtl: 4 });

  it('the chat front-end\'s "Sign out", then Back: no name, no email, no token on the screen or in storage', async () => {
    const tab = await bw.open();
    const { page } = tab;
    await signInToChat(page, bw.w.url, 'alice');
    // Open WebUI keeps its token in localStorage; so does this page now.
    await page.evaluate(() => localStorage.setItem('token', 'chat-front-end-token'));
    await Promise.all([page.waitForURL(`${bw.w.url}/auth/login`, { timeout: 10_000 }), page.click('#sign-out')]);
    for (let i = 0; i < 3; i++) {
      await page.goBack().catch(() => undefined);
      const shown = await visible(page);
      expect(shown, `Back ${i + 1}: ${page.url()}`).to.not.include('alice');
      expect(shown).to.not.include('chat-front-end-token');
    }
    expect(await tab.context.cookies(bw.w.url)).to.deep.equal([]);
    await page.goto(`${bw.w.url}/auth/login`);
    expect(await page.evaluate(() => localStorage.length), "the chat front-end's storage").to.equal(0);
  });

  it("the gateway's /auth/logout, then Back: the same", async () => {
    const tab = await bw.open();
    const { page } = tab;
    await signInToChat(page, bw.w.url, 'bob');
    await page.goto(`${bw.w.url}/auth/session`);
    expect(await page.textContent('body')).to.include('bob@');
    await page.goto(`${bw.w.url}/auth/logout`);
    await page.waitForURL(`${bw.w.url}/auth/login`);
    for (let i = 0; i < 3; i++) {
      await page.goBack().catch(() => undefined);
      expect(await visible(page), `Back ${i + 1}: ${page.url()}`).to.not.include('bob');
    }
    expect(await tab.context.cookies(bw.w.url)).to.deep.equal([]);
  });

  it('a session the realm ended (refresh refused): the next request clears what the browser kept', async () => {
    const tab = await bw.open();
    const { page } = tab;
    await signInToChat(page, bw.w.url, 'carol');
    await page.evaluate(() => localStorage.setItem('token', 'chat-front-end-token'));
    bw.w.idp.failRefresh = true;
    try {
      await page.waitForTimeout(2_100); // the access token is now inside the refresh margin
      await page.goto(`${bw.w.url}/`);
      await page.waitForURL((u) => u.pathname === '/auth/login');
      const shown = await visible(page);
      expect(shown).to.not.include('carol');
      expect(shown).to.not.include('chat-front-end-token');
      await page.goBack().catch(() => undefined);
      expect(await visible(page)).to.not.include('carol');
    } finally {
      bw.w.idp.failRefresh = false;
    }
  });

  it('a session the realm ended by back-channel logout: the next request clears what the browser kept', async () => {
    const tab = await bw.open();
    const { page } = tab;
    await signInToChat(page, bw.w.url, 'tina');
    await page.evaluate(() => localStorage.setItem('token', 'chat-front-end-token'));
    const sub = ((await (await tab.context.request.get(`${bw.w.url}/auth/session`)).json()) as { user: { sub: string } }).user.sub;
    await page.waitForTimeout(1_100); // the token's iat must be after the sign-in (one-second resolution)
    const token = await bw.w.idp.signJwt({
      aud: CLIENT_ID,
      sub,
      jti: `bcl-${Date.now()}`,
      events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
      exp: undefined,
    });
    const posted = await fetch(`${bw.w.url}/auth/backchannel-logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ logout_token: token }),
    });
    expect(posted.status).to.equal(204);
    await page.goto(`${bw.w.url}/`);
    await page.waitForURL((u) => u.pathname === '/auth/login');
    const shown = await visible(page);
    expect(shown).to.not.include('tina');
    expect(shown).to.not.include('chat-front-end-token');
    expect(await tab.context.cookies(bw.w.url)).to.deep.equal([]);
  });

  it('what the headers say: the API and pages never stored, static assets as the upstream says', async () => {
    const tab = await bw.open();
    const { page } = tab;
    const seen = new Map<string, Record<string, string>>();
    page.on('response', (r) => seen.set(new URL(r.url()).pathname, r.headers()));
    await signInToChat(page, bw.w.url, 'alice');
    await page.goto(`${bw.w.url}/static/favicon.png`);
    expect(seen.get('/')!['cache-control']).to.equal('private, no-store');
    expect(seen.get('/api/v1/auths/')!['cache-control']).to.equal('private, no-store');
    expect(seen.get('/static/favicon.png')!['cache-control']).to.equal('public, max-age=3600');
    expect(seen.get('/static/app.js')!['cache-control']).to.equal(undefined);
  });
});
