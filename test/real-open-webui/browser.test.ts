// The REAL Open WebUI 0.12.4 behind the gateway, driven by headless Chromium. Nothing of
// Open WebUI is a stand-in: its own front-end, its own API, its own Socket.IO server. The one
// stand-in is the model provider (sandbox/canned-model.ts, canned answers). One boot of
// Open WebUI for the whole file; the steps build on each other, as one user's visit.
import { expect } from 'chai';
import type { Browser, WebSocket as PwWebSocket } from 'playwright-core';
import { launchChromium, openPage, signInAtRealm, type OpenPage } from '../support/browser.js';
import { OPEN_WEBUI_VERSION, releaseAtLeast, startRealWorld, type RealWorld } from '../support/open-webui.js';

const PLATFORM_FLAGS = { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false };

describe(`the real Open WebUI ${OPEN_WEBUI_VERSION} behind the gateway, in headless Chromium`, function () {
  this.timeout(120_000);
  let browser: Browser;
  let w: RealWorld;
  let tab: OpenPage;
  const sockets: PwWebSocket[] = [];
  const socketFrames: string[] = [];
  const socketIoPolling: string[] = [];
  let chatUrl = '';

  before(async function () {
    this.timeout(240_000);
    // one after the other: a peer that fails to start leaves no browser open behind it
    browser = await launchChromium();
    w = await startRealWorld({ flags: PLATFORM_FLAGS, model: true });
    tab = await openPage(browser);
    tab.page.on('websocket', (ws) => {
      sockets.push(ws);
      ws.on('framereceived', (f) => socketFrames.push(String(f.payload)));
    });
    tab.page.on('request', (r) => {
      if (r.url().includes('/ws/socket.io') && r.url().includes('transport=polling')) socketIoPolling.push(r.url());
    });
  });
  after(async () => {
    await tab?.close();
    await browser?.close();
    await w?.close();
  });

  it('loads the real front-end at / through the gateway and signs the user in without a second login', async () => {
    const { page } = tab;
    // Not signed in: the gateway's logged-out guard, not Open WebUI, answers the page.
    await page.goto(`${w.url}/`);
    expect(new URL(page.url()).pathname).to.equal('/auth/login');
    const signins: Array<{ status: number; body: { email?: string; role?: string } }> = [];
    page.on('response', async (r) => {
      if (r.request().method() === 'POST' && new URL(r.url()).pathname === '/api/v1/auths/signin')
        signins.push({ status: r.status(), body: await r.json().catch(() => ({})) });
    });
    await page.goto(`${w.url}/auth/start?returnTo=%2F`);
    await signInAtRealm(page, 'sysadmin', 'sysadmin-pass');
    await page.waitForURL(`${w.url}/`);
    // Open WebUI's own chat page, with its message box: its trusted-header sign-in did the rest.
    await page.waitForSelector('#chat-input', { timeout: 60_000 });
    expect(await page.title()).to.include('Open WebUI');
    expect(signins.length, 'the front-end signed itself in once').to.equal(1);
    expect(signins[0]).to.deep.include({ status: 200 });
    expect(signins[0]!.body).to.include({ email: 'sysadmin@platform.example', role: 'admin' });
    expect(w.idp.authorizations.length, 'one sign-in at the realm, no second login').to.equal(1);
    expect(await page.locator('input[type=password]').count(), 'no password form of Open WebUI').to.equal(0);
    // Its release-notes dialog on a first visit, as a user sees it.
    const whatsNew = page.getByText("Okay, Let's Go!");
    if (await whatsNew.isVisible().catch(() => false)) await whatsNew.click();
  });

  it('streams a chat completion from the model over Socket.IO on the WebSocket transport, through the gateway', async () => {
    const { page, context } = tab;
    // With BYPASS_ADMIN_ACCESS_CONTROL false even an admin may use only a registered model it may
    // read (0.12.4 check_model_access): the admin registers the connection's model, as operators do.
    const created = await context.request.post(`${w.url}/api/v1/models/create`, {
      data: { id: w.model!.model, name: 'Tiny test model', base_model_id: null, meta: {}, params: {} },
    });
    expect(created.status(), await created.text()).to.equal(200);
    await page.reload();
    await page.waitForSelector('#chat-input');
    const before = w.model!.completions.length;
    await page.click('#chat-input');
    await page.keyboard.type('Hello tiny model, please answer.');
    await page.keyboard.press('Enter');
    const answer = w.model!.words.join('');
    await page.waitForFunction((text) => document.querySelector('#chat-container')?.textContent?.includes(text), answer, { timeout: 60_000 });
    chatUrl = page.url();
    expect(new URL(chatUrl).pathname).to.match(/^\/c\/[0-9a-f-]{36}$/);
    const asked = w.model!.completions.slice(before).filter((c) => c.stream === true);
    expect(asked.length, 'the model was asked for a stream').to.be.at.least(1);
    expect(JSON.stringify(asked[0]!.messages)).to.include('Hello tiny model, please answer.');

    // The Socket.IO connection is a WebSocket through the gateway (no long-polling), and the
    // answer reached the browser on it piece by piece.
    const socketUrls = sockets.map((s) => new URL(s.url()));
    expect(
      socketUrls.some((u) => u.host === new URL(w.url).host && u.pathname === '/ws/socket.io/' && u.searchParams.get('transport') === 'websocket'),
    ).to.equal(true);
    expect(socketIoPolling, 'no long-polling').to.deep.equal([]);
    // 0.12.4 sends `events` of type `response:completion` carrying `response.output_text.delta`s.
    const deltas = socketFrames.filter(
      (f) =>
        f.startsWith('42["events"') &&
        f.includes('"response:completion"') &&
        w.model!.words.slice(1, -1).some((word) => f.includes(`"delta":${JSON.stringify(word)}`)),
    );
    expect(deltas.length, 'several events carried parts of the answer, one at a time').to.be.at.least(w.model!.words.length - 2);
    expect(tab.errors).to.deep.equal([]);
  });

  it('shows the chat in its chat list', async () => {
    const { page } = tab;
    const chatId = new URL(chatUrl).pathname.split('/').pop()!;
    const list = await tab.context.request.get(`${w.url}/api/v1/chats/?page=1`);
    expect(list.status()).to.equal(200);
    expect(((await list.json()) as Array<{ id: string }>).map((c) => c.id)).to.include(chatId);
    // In the sidebar, as the user sees it.
    const open = page.getByLabel('Open Sidebar').first();
    if (await open.isVisible().catch(() => false)) await open.click();
    await page.waitForSelector(`a[href="/c/${chatId}"]`, { state: 'attached' });
  });

  it("uploads a file through the UI, stored as the user's own", async () => {
    const { page, context } = tab;
    await page.click('#input-menu-button');
    const uploaded = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/api/v1/files/');
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByText('Upload Files').first().click()]);
    await chooser.setFiles({ name: 'field-notes.txt', mimeType: 'text/plain', buffer: Buffer.from('Notes uploaded through the gateway.\n') });
    const res = await uploaded;
    expect(res.status()).to.equal(200);
    const file = (await res.json()) as { id: string; filename: string; user_id: string };
    expect(file.filename).to.equal('field-notes.txt');
    await page.waitForSelector('text=field-notes.txt');
    const mine = (await (await context.request.get(`${w.url}/api/v1/files/?content=false`)).json()) as { items: Array<{ id: string; user_id: string }> };
    expect(mine.items.map((f) => f.id)).to.include(file.id);
    const me = (await (await context.request.get(`${w.url}/api/v1/auths/`)).json()) as { id: string };
    expect(file.user_id).to.equal(me.id);
  });

  it('Open WebUI\'s own "Sign Out" signs the user out of the gateway and the realm: signed-out page, not signed straight back in', async () => {
    const { page, context } = tab;
    await page.keyboard.press('Escape');
    await page.goto(chatUrl);
    await page.waitForSelector('#chat-input');
    const signout = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v1/auths/signout');
    await page.getByLabel('Open User Profile Menu').first().click();
    // a menu item since 0.12.4; a plain button of the menu before
    await page.getByRole(releaseAtLeast('0.12.4') ? 'menuitem' : 'button', { name: 'Sign Out' }).click();
    const answered = await signout;
    expect(answered.request().method(), 'the front-end POSTs it').to.equal('POST');
    expect(answered.status()).to.equal(200);
    await page.waitForURL((u) => u.origin === w.url && u.pathname === '/auth/login', { timeout: 30_000 });
    // Stays there: the gateway's login page, no chat page behind it.
    await page.waitForTimeout(1_500);
    expect(new URL(page.url()).pathname).to.equal('/auth/login');
    expect(await page.locator('#chat-input').count()).to.equal(0);
    expect(await (await context.request.get(`${w.url}/auth/session`)).json()).to.deep.equal({ authenticated: false });
    // Back to the chat: the logged-out guard, not a silent sign-in.
    await page.goto(`${w.url}/`);
    expect(new URL(page.url()).pathname).to.equal('/auth/login');
    // The realm session is over too: a new sign-in asks for the password.
    await page.goto(`${w.url}/auth/start?returnTo=%2F`);
    await page.waitForSelector('#kc-form-login');
    expect(w.obs.lines.some((l) => l.event === 'sign-out' && l.via === 'chat front-end')).to.equal(true);
  });
});
