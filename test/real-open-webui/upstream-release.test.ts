// The Open WebUI release behind the gateway, on the REAL Open WebUI: the installed release, started
// unmodified, made to report another one (0.12.5, a release the route table was not checked
// against) the way Python finds a package's version: a distribution record of that version ahead of
// site-packages on PYTHONPATH, which importlib.metadata (Open WebUI's env.py VERSION) reads first.
// Behind it the gateway warns at start naming it and the checked releases, the metric and /readyz
// say so, check-config says so; UPSTREAM_RELEASE_POLICY=refuse-admins refuses the admin's API
// requests and Socket.IO and nothing of a plain user's; strict makes /readyz 503; once Open WebUI
// stops answering, the release is "unreachable", never supported. How the release comes to report
// 0.12.5 is its own, so that runs against every release; what the gateway does once it reads
// 0.12.5 is the same whichever release is behind it, so the rest runs against the table's release
// only (itOnTableRelease).
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { socketIoUpgradeStatus } from '../support/websocket-wire.js';
import { CHECKED_VERSIONS } from '../../policies/open-webui-releases.js';
import { loadSettings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import type { Readiness } from '../../gateway/operations/operations.js';
import { browse, signIn, type Jar } from '../support/cookie-jar.js';
import { launchChromium, openPage, signInAtRealm } from '../support/browser.js';
import { capturingObservability } from '../support/gateway-harness.js';
import { itOnTableRelease, OPEN_WEBUI_VERSION, startRealWorld, type RealWorld } from '../support/open-webui.js';
import { freePort } from '../support/raw-http.js';
import { sleep } from '../support/wait.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const REPORTED = '0.12.5';

/** A folder whose distribution record makes importlib.metadata report `version` for open-webui. */
function reportingVersion(version: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'owui-version-'));
  mkdirSync(join(dir, `open_webui-${version}.dist-info`));
  writeFileSync(join(dir, `open_webui-${version}.dist-info`, 'METADATA'), `Metadata-Version: 2.1\nName: open-webui\nVersion: ${version}\n`);
  return dir;
}

const readyz = async (url: string) => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: (await res.json()) as Readiness };
};

describe(`the real Open WebUI ${OPEN_WEBUI_VERSION} reporting ${REPORTED}: a release the route table was not checked against`, function () {
  this.timeout(120_000);
  let w: RealWorld;
  let versionDir: string;
  let admin: Jar;
  let user: Jar;

  before(async function () {
    this.timeout(240_000);
    versionDir = reportingVersion(REPORTED);
    w = await startRealWorld({
      flags: { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false },
      env: { UPSTREAM_RELEASE_POLICY: 'refuse-admins' },
      owuiEnv: { PYTHONPATH: versionDir },
    });
    admin = (await signIn(w.url, 'sysadmin')).jar;
    user = (await signIn(w.url, 'alice')).jar;
  });
  after(async () => {
    await w?.close();
    if (versionDir) rmSync(versionDir, { recursive: true, force: true });
  });

  it(`Open WebUI itself reports ${REPORTED} (GET /api/version, public)`, async () => {
    const res = await fetch(`${w.owui.url}/api/version`);
    expect(await res.json()).to.deep.equal({ version: REPORTED, deployment_id: '' });
    expect(CHECKED_VERSIONS).to.not.include(REPORTED);
  });

  itOnTableRelease('the gateway warned at start, naming the release seen, the checked ones and the policy', () => {
    const warning = w.obs.lines.find((l) => l.event === 'upstream-release-unsupported');
    expect(warning, 'a warning at start').to.not.equal(undefined);
    expect(warning).to.include({ level: 40, release: REPORTED, policy: 'refuse-admins' });
    expect(warning!.supported).to.deep.equal([...CHECKED_VERSIONS]);
    expect(warning!.msg).to.include(`Open WebUI ${REPORTED}: NOT a release the route table was checked against (${CHECKED_VERSIONS.join(', ')})`);
  });

  itOnTableRelease('the metric and /readyz say so (refuse-admins stays ready)', async () => {
    const metrics = await (await fetch(`${w.url}/metrics`)).text();
    expect(metrics).to.include(`gateway_upstream_release_supported{release="${REPORTED}"} 0`);
    const r = await readyz(w.url);
    expect(r.status).to.equal(200);
    expect(r.body.checks.upstreamRelease.ok).to.equal(false);
    expect(r.body.checks.upstreamRelease.detail).to.include(`Open WebUI ${REPORTED}: NOT a release`).and.to.include('UPSTREAM_RELEASE_POLICY=refuse-admins');
  });

  itOnTableRelease(
    'refuse-admins: the admin\u2019s API requests and Socket.IO are refused with why; the admin\u2019s pages are the gateway\u2019s; the plain user is served',
    async () => {
      for (const path of ['/api/v1/auths/', '/api/config', '/api/v1/chats/', '/api/v1/models']) {
        const res = await browse(admin, path);
        expect(res.status, path).to.equal(403);
        expect(res.text).to.include(`not checked against: admin requests are refused until it is (Open WebUI ${REPORTED})`);
      }
      const page = await browse(admin, '/');
      expect(page.status, 'the web app itself: a page of the gateway').to.equal(403);
      expect(page.text).to.include('id="release-not-checked"');
      expect((await browse(user, '/api/v1/auths/')).status).to.equal(200);
      expect((await browse(user, '/api/config')).status).to.equal(200);
      const socket = (jar: Jar) => socketIoUpgradeStatus(w.url, { cookie: jar.header('/ws/socket.io/'), origin: w.url });
      expect(await socket(admin)).to.equal(403);
      expect(await socket(user)).to.equal(101);
    },
  );

  itOnTableRelease(
    'refuse-admins in Chromium: the admin signing in gets a page in the gateway\u2019s words (why, since when, what to tell the operator), not Open WebUI\u2019s error page; the plain user gets the chat',
    async () => {
      const browser = await launchChromium();
      try {
        const sysadmin = await openPage(browser);
        await sysadmin.page.goto(`${w.url}/auth/start?returnTo=%2F`);
        await signInAtRealm(sysadmin.page, 'sysadmin', 'sysadmin-pass');
        await sysadmin.page.waitForURL(`${w.url}/`);
        await sysadmin.page.waitForSelector('#release-not-checked');
        // what the admin sees
        expect(await sysadmin.page.title()).to.equal('The chat is closed to administrators for now');
        const why = await sysadmin.page.locator('#why-refused').innerText();
        expect(why).to.include(`The chat front-end now runs Open WebUI ${REPORTED}, a release this gateway was not checked against.`);
        expect(await sysadmin.page.locator('#refused-since').innerText()).to.match(/^Since \d{4}-\d\d-\d\d \d\d:\d\d UTC\.$/);
        const tell = await sysadmin.page.locator('#tell-operator').innerText();
        expect(tell).to.include(`Open WebUI ${REPORTED} is not a release its route table was checked against (${CHECKED_VERSIONS.join(', ')})`);
        expect(tell).to.include(`npm run routes:check -- ${REPORTED}`);
        // nothing of Open WebUI's own error page ("Open WebUI Backend Required"), and it stays
        await sysadmin.page.waitForTimeout(1_500);
        expect(new URL(sysadmin.page.url()).pathname).to.equal('/');
        expect(await sysadmin.page.locator('body').innerText()).to.not.include('Backend Required');
        expect(sysadmin.errors, 'no script, nothing failed in the page').to.deep.equal([]);
        // a deep link too, and its sign-out works
        await sysadmin.page.goto(`${w.url}/workspace/models`);
        await sysadmin.page.waitForSelector('#release-not-checked');
        await sysadmin.page.click('#sign-out');
        await sysadmin.page.waitForURL((u) => u.pathname === '/auth/login');
        await sysadmin.close();

        const alice = await openPage(browser);
        await alice.page.goto(`${w.url}/auth/start?returnTo=%2F`);
        await signInAtRealm(alice.page, 'alice', 'alice-pass');
        await alice.page.waitForSelector('#chat-input', { timeout: 60_000 });
        expect(await alice.page.locator('#release-not-checked').count()).to.equal(0);
        await alice.close();
      } finally {
        await browser.close();
      }
    },
  );

  itOnTableRelease('`npm run check-config` against it says so', async () => {
    const out = await new Promise<string>((done) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'gateway/check-config.ts'], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          NODE_ENV: 'production',
          UPSTREAM_URL: w.owui.url,
          PUBLIC_URL: 'https://chat.example',
          OIDC_ISSUER_URL: 'https://kc.example/realms/platform',
          OIDC_CLIENT_ID: 'chat-gateway',
          OIDC_CLIENT_SECRET: 'check-config-client-secret',
          SESSION_SECRET: 'check-config-session-secret-0123456789abcdef',
        },
      });
      let text = '';
      child.stdout.on('data', (d) => (text += d));
      child.stderr.on('data', (d) => (text += d));
      child.on('close', () => done(text));
    });
    expect(out).to.include(`- UPSTREAM_URL: Open WebUI ${REPORTED}: NOT a release the route table was checked against`);
    expect(out).to.include('configuration OK, with 1 warning');
  });

  itOnTableRelease('strict: a gateway in front of the same Open WebUI reports not ready, naming the release', async () => {
    const settings = loadSettings({ ...w.settingsEnv, UPSTREAM_RELEASE_POLICY: 'strict', DRIFT_CHECK_SECONDS: '0' }, { stageFiles: false });
    const strict: Gateway = await createGateway(settings, { obs: capturingObservability() });
    try {
      const { url } = await strict.start(await freePort(), '127.0.0.1');
      const r = await readyz(url);
      expect(r.status).to.equal(503);
      expect(r.body.checks.upstream.ok, 'Open WebUI itself is up').to.equal(true);
      expect(r.body.checks.upstreamRelease.detail)
        .to.include(`Open WebUI ${REPORTED}: NOT a release`)
        .and.to.include('UPSTREAM_RELEASE_POLICY=strict: not ready');
    } finally {
      await strict.close();
    }
  });

  itOnTableRelease('last: Open WebUI gone, the release is "unreachable" at the next readiness check, never supported', async () => {
    await w.owui.close();
    await sleep(1_100);
    const r = await readyz(w.url);
    expect(r.status).to.equal(503);
    expect(r.body.checks.upstreamRelease.detail).to.include('could not be read (unreachable');
    expect(await (await fetch(`${w.url}/metrics`)).text()).to.include('gateway_upstream_release_supported{release="unreachable"} 0');
    expect((await browse(admin, '/api/v1/auths/')).status, 'admins still refused').to.equal(403);
  });
});
