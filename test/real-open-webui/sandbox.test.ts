// `npm run sandbox:open-webui` as a newcomer meets it: the command itself, spawned for real (the
// real Open WebUI 0.12.4, the canned-answers model provider, the embedded OpenID provider, the
// gateway), driven in headless Chromium. One boot for the file; the steps build on each other: the
// banner says only what was done; alice chats and sees the answer stream in, uploads a file, signs
// out and goes Back; sysadmin finds neither her chat nor her file, and their own page loads leave
// no warning in the audit log; SIGTERM to the npm process leaves no process and no listening port.
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import type { Browser } from 'playwright-core';
import { launchChromium, openPage, signInAtRealm, type OpenPage } from '../support/browser.js';
import { freePort } from '../support/raw-http.js';
import { accepts, alive, descendants, exited, listeningPorts, runSandbox, type SandboxRun } from '../support/process-tree.js';
import { CANNED_WORDS } from '../../sandbox/canned-model.js';
import { demoAccounts } from '../../sandbox/demo-realm.js';
import { seededFileNames } from '../../sandbox/seed.js';
import { eventually } from '../support/wait.js';

const ANSWER = CANNED_WORDS.join('');

interface LogLine {
  level: number;
  name?: string;
  event?: string;
  caller?: string;
  email?: string;
  path?: string;
  msg?: string;
}

describe('`npm run sandbox:open-webui` in Chromium: a chat that answers, a true banner, a clean stop', function () {
  this.timeout(120_000);
  let npm: ChildProcess;
  let run: SandboxRun | undefined;
  const output = () => run?.output() ?? '';
  let url = '';
  let browser: Browser;
  let alice: OpenPage;
  let aliceChat = '';
  let aliceFile = '';

  /** The JSON lines the sandbox logged from `from` (an offset in its output) on. */
  const logged = (from = 0): LogLine[] =>
    output()
      .slice(from)
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as LogLine);
  const banner = () => output().slice(output().indexOf('Chat policy gateway: SANDBOX'), output().indexOf('Stop with Ctrl-C.'));

  before(async function () {
    this.timeout(300_000);
    const [port, idpPort] = [await freePort(), await freePort()];
    run = runSandbox('sandbox:open-webui', { port, idpPort });
    npm = run.npm;
    browser = await launchChromium();
    const ready = await eventually(() => output().includes('Stop with Ctrl-C.') || exited(npm), { ms: 280_000, everyMs: 100 });
    if (!ready || exited(npm)) throw new Error(`no banner:\n${output().slice(-6000)}`);
    url = /Sandbox ready: (http:\/\/\S+?)\/?\s/.exec(output())![1]!;
  });

  after(async () => {
    await alice?.close();
    await browser?.close();
    // Whatever happened above, nothing of the command stays behind.
    if (npm?.pid && npm.exitCode === null) {
      const left = descendants(npm.pid);
      try {
        process.kill(-npm.pid, 'SIGKILL');
      } catch {
        // gone
      }
      for (const pid of left) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  });

  it('the banner says what was done: the model, each account\u2019s files and chat in Open WebUI, the hints of this command', async () => {
    const text = banner();
    expect(text).to.include('chat front-end   the real Open WebUI 0.12.4, unmodified');
    expect(text).to.include('"Canned answers (not a language model)"');
    expect(text).to.include('Demo logins (username / password), each owning 2 files and 1 chat in Open WebUI (put there through the gateway at start):');
    expect(text).to.include('Files seeded for sysadmin: sysadmin-notes.md, sysadmin-figures.csv.');
    expect(text).to.include('CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true npm run sandbox:open-webui');
    expect(text, 'no hint leaves the real Open WebUI').to.not.match(/\bnpm start\b/);
    expect(text).to.not.include('WARNING');
    // ... and it is true: what sysadmin owns in Open WebUI, asked through the gateway
    const tab = await openPage(browser);
    try {
      await signIn(tab, 'sysadmin', 'sysadmin-pass');
      const files = (await (await tab.context.request.get(`${url}/api/v1/files/?content=false`)).json()) as { items: Array<{ filename: string }> };
      expect(files.items.map((f) => f.filename).sort()).to.deep.equal([...seededFileNames(demoAccounts[0]!)].sort());
      const chats = (await (await tab.context.request.get(`${url}/api/v1/chats/?page=1`)).json()) as Array<{ title: string }>;
      expect(chats.map((c) => c.title)).to.deep.equal(['Sam Sysadmin: private conversation']);
    } finally {
      await tab.close();
    }
  });

  async function signIn(tab: OpenPage, username: string, password: string): Promise<void> {
    await tab.page.goto(`${url}/auth/start?returnTo=%2F`);
    await signInAtRealm(tab.page, username, password);
    await tab.page.waitForURL(`${url}/`);
    await tab.page.waitForSelector('#chat-input', { timeout: 60_000 });
    const whatsNew = tab.page.getByText("Okay, Let's Go!");
    if (await whatsNew.isVisible().catch(() => false)) await whatsNew.click();
  }

  it('alice sends a message and sees the canned answer stream in, word by word, through the gateway', async () => {
    alice = await openPage(browser);
    const { page } = alice;
    const frames: string[] = [];
    page.on('websocket', (ws) => ws.on('framereceived', (f) => frames.push(String(f.payload))));
    await signIn(alice, 'alice', 'alice-pass');
    // her seeded chat is in her list
    const mine = (await (await alice.context.request.get(`${url}/api/v1/chats/?page=1`)).json()) as Array<{ title: string }>;
    expect(mine.map((c) => c.title)).to.deep.equal(['Alice Acme: private conversation']);
    await page.click('#chat-input');
    await page.keyboard.type('Hello, is anyone there?');
    await page.keyboard.press('Enter');
    // seen part way, then whole
    const partial = CANNED_WORDS.slice(0, 6).join('');
    await page.waitForFunction((t) => document.querySelector('#chat-container')?.textContent?.includes(t), partial, { timeout: 60_000 });
    const seenEarly = await page.evaluate((t) => document.querySelector('#chat-container')?.textContent?.includes(t) ?? false, ANSWER);
    await page.waitForFunction((t) => document.querySelector('#chat-container')?.textContent?.includes(t), ANSWER, { timeout: 60_000 });
    expect(seenEarly, 'the first words showed before the last had come').to.equal(false);
    const deltas = frames.filter((f) => f.startsWith('42["events"') && f.includes('"response:completion"') && f.includes('"delta"'));
    expect(deltas.length, 'the answer came in pieces').to.be.at.least(CANNED_WORDS.length - 2);
    aliceChat = new URL(page.url()).pathname;
    expect(aliceChat).to.match(/^\/c\/[0-9a-f-]{36}$/);
    expect(alice.errors).to.deep.equal([]);
  });

  it('alice uploads a file through the chat page, stored as her own', async () => {
    const { page } = alice;
    await page.click('#input-menu-button');
    const uploaded = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/api/v1/files/');
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByText('Upload Files').first().click()]);
    await chooser.setFiles({ name: 'alice-travel-plans.txt', mimeType: 'text/plain', buffer: Buffer.from('Alice travels to Lisbon in May.\n') });
    const res = await uploaded;
    expect(res.status()).to.equal(200);
    aliceFile = ((await res.json()) as { id: string }).id;
    await page.waitForSelector('text=alice-travel-plans.txt');
    await page.keyboard.press('Escape');
  });

  it('after Open WebUI\u2019s own sign-out, Back and Open WebUI\u2019s sign-in route lead to the gateway\u2019s sign-in page, not a 404', async () => {
    const { page } = alice;
    await page.goto(`${url}${aliceChat}`);
    await page.waitForSelector('#chat-input');
    await page.getByLabel('Open User Profile Menu').first().click();
    await page.getByRole('menuitem', { name: 'Sign Out' }).click();
    await page.waitForURL((u) => u.pathname === '/auth/login', { timeout: 30_000 });
    await page.goBack();
    await page.waitForURL((u) => u.pathname === '/auth/login', { timeout: 30_000 });
    expect(await page.locator('h1').first().textContent()).to.equal('Sign in');
    // where the front-end itself sends a browser without a token, in any language, with its return address
    const answered = await page.goto(`${url}/de/auth?redirect=${encodeURIComponent(aliceChat)}`);
    expect(answered!.status()).to.equal(200);
    expect(new URL(page.url()).pathname + new URL(page.url()).search).to.equal(`/de/auth/login?returnTo=${encodeURIComponent(aliceChat)}`);
    expect(await page.locator('h1').first().textContent()).to.equal('Anmelden');
  });

  it('sysadmin finds neither alice\u2019s chat nor her file; their own page loads leave no warning in the audit log', async () => {
    const tab = await openPage(browser);
    try {
      const from = output().length;
      await signIn(tab, 'sysadmin', 'sysadmin-pass');
      const { page, context } = tab;
      // what an admin opens: the home page again, Admin Settings (a dialog over the home page) and the workspace
      const webhooks = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/events/webhooks');
      await page.goto(`${url}/?settings=admin%3Ageneral`);
      expect((await webhooks).status(), 'Admin Settings read the configured webhooks').to.equal(200);
      for (const at of ['/?settings=admin%3Aconnections', '/admin/users', '/workspace/models', '/workspace/knowledge', '/']) {
        await page.goto(`${url}${at}`);
        await page.waitForTimeout(1_500);
      }
      // what the front-end asks while no model is chosen: no object, no refusal
      expect((await context.request.get(`${url}/api/v1/models/model/profile/image?id=undefined`)).status()).to.equal(404);
      // neither alice's chat nor her file, in any list or search of theirs
      const chatId = aliceChat.split('/').pop()!;
      const chats = JSON.stringify(await (await context.request.get(`${url}/api/v1/chats/?page=1`)).json());
      expect(chats).to.not.include(chatId).and.not.include('Alice');
      const files = JSON.stringify(await (await context.request.get(`${url}/api/v1/files/?content=false`)).json());
      expect(files).to.not.include(aliceFile).and.not.include('alice-');
      const search = JSON.stringify(await (await context.request.get(`${url}/api/v1/files/search?filename=*alice*`)).json());
      expect(search).to.not.include(aliceFile).and.not.include('alice-');
      expect(await page.locator(`a[href="${aliceChat}"]`).count(), 'not in the sidebar').to.equal(0);
      const refusals = logged(from).filter((l) => l.level >= 40 || /denied|refused/.test(l.event ?? ''));
      expect(refusals, 'no warning and no refusal for sysadmin\u2019s own page loads').to.deep.equal([]);
      expect(tab.failed.filter((f) => /^40[13] /.test(f))).to.deep.equal([]);

      // alice's chat link, opened by sysadmin: a page saying why, the refusal audited
      const opened = await page.goto(`${url}${aliceChat}`);
      expect(opened!.status()).to.equal(403);
      expect(await page.locator('#why-not').textContent()).to.include('administrators open only their own chats');
      expect(await page.locator('#chat-input').count()).to.equal(0);
      const warned = logged(from).filter((l) => l.level >= 40);
      expect(warned.map((l) => [l.event, l.caller, l.path])).to.deep.equal([['admin-chat-access-denied', 'sysadmin@platform.example', aliceChat]]);
    } finally {
      await tab.close();
    }
  });

  it('SIGTERM to the npm process stops everything it started: no process and no listening port left', async () => {
    const started = descendants(npm.pid!);
    const ports = listeningPorts(started);
    // the gateway, the OpenID provider, Open WebUI and the model provider
    expect(ports.length, `listening: ${ports.join(', ')}`).to.be.at.least(4);
    process.kill(npm.pid!, 'SIGTERM');
    const stopped = await eventually(() => exited(npm) && started.every((p) => !alive(p)), { ms: 30_000, everyMs: 100 });
    expect(stopped, `still running: ${started.filter(alive).join(', ')}\n${output().slice(-3000)}`).to.equal(true);
    for (const port of ports) expect(await accepts(port), `port ${port}`).to.equal(false);
  });
});
