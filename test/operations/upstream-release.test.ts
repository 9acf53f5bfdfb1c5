// The Open WebUI release behind the gateway (policies/upstream-release.ts, gateway/upstream/release.ts):
// read from its public GET /api/version at start and at every readiness check, compared with the
// releases the route table was checked against (policies/open-webui-releases.ts), and what
// UPSTREAM_RELEASE_POLICY makes of one it was not: a warning, the metric and /readyz (warn), admins'
// API requests refused (refuse-admins), not ready (strict). Against the stand-in, whose reported
// release a test changes while the gateway runs; test/real-open-webui/upstream-release.test.ts
// does the same against the real Open WebUI.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Router } from 'express';
import { socketIoUpgradeStatus } from '../support/websocket-wire.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { baseEnv, capturingObservability, type LogLine } from '../support/gateway-harness.js';
import { loadSettings } from '../../config/settings.js';
import { type Env } from '../../config/env.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import type { Authenticator, Identity } from '../../gateway/auth/identity.js';
import type { Readiness } from '../../gateway/operations/operations.js';
import { UpstreamRelease } from '../../gateway/upstream/release.js';
import { createObservability } from '../../gateway/observability/observability.js';
import { Upstream } from '../../gateway/upstream/proxy.js';
import { freePort } from '../support/raw-http.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { CHECKED_VERSIONS } from '../../policies/open-webui-releases.js';
import { sleep } from '../support/wait.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

const person = (who: 'admin' | 'user'): Identity => ({
  sub: `${who}-sub`,
  email: `${who}@platform.test`,
  name: who,
  roles: who === 'admin' ? ['PlatformSysAdmin'] : [],
  admin: who === 'admin',
  groups: [],
  tenants: [],
  activeTenant: null,
  via: 'bearer',
});

/** Everyone is who their x-test-caller header says (admin or user); nobody without it. */
const headerAuthenticator: Authenticator = {
  router: Router(),
  authenticate: async (req) => {
    const who = req.headers['x-test-caller'];
    return who === 'admin' || who === 'user' ? person(who) : undefined;
  },
  ready: async () => ({ ok: true, detail: 'stub identity provider' }),
  close: async () => {},
};

interface World {
  upstream: OpenWebUIStandIn;
  gateway: Gateway;
  url: string;
  lines: LogLine[];
  close(): Promise<void>;
}

/** A gateway as `npm start` runs it (start(): the release read before it serves) in front of the stand-in reporting `version`. */
async function world(version: string, env: Env = {}): Promise<World> {
  const upstream = await startOpenWebUI({
    version,
    users: [
      { id: 'u-admin', email: 'admin@platform.test', name: 'admin', role: 'admin', groups: [] },
      { id: 'u-user', email: 'user@platform.test', name: 'user', role: 'user', groups: [] },
    ],
    bypassAdminAccessControl: false,
    enableAdminExport: false,
    enableAdminChatAccess: false,
  });
  const providers = join(mkdtempSync(join(tmpdir(), 'release-test-')), 'providers.json');
  writeFileSync(providers, JSON.stringify(demoIdentityProviders));
  const settings = loadSettings(baseEnv(upstream.url, { DRIFT_CHECK_SECONDS: '0', IDP_PROVIDERS_FILE: providers, ...env }), { stageFiles: false });
  const obs = capturingObservability();
  const gateway = await createGateway(settings, { obs, authenticator: headerAuthenticator });
  const { url } = await gateway.start(0, '127.0.0.1');
  return {
    upstream,
    gateway,
    url,
    lines: obs.lines,
    close: async () => {
      await gateway.close();
      await upstream.close();
    },
  };
}

const readyz = async (url: string) => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: (await res.json()) as Readiness };
};
const metric = async (url: string) =>
  (await (await fetch(`${url}/metrics`)).text()).split('\n').filter((l) => l.startsWith('gateway_upstream_release_supported'));
const as = (who: 'admin' | 'user', url: string, path: string, init: RequestInit = {}) =>
  fetch(`${url}${path}`, { ...init, headers: { 'x-test-caller': who, ...(init.headers as Record<string, string>) } });
const warnings = (w: World) => w.lines.filter((l) => l.event === 'upstream-release-unsupported');
/** /readyz answers are shared for one second: the next one reads the release again. */
const nextReadiness = () => sleep(1_100);

/** Does this caller's Socket.IO WebSocket open through the gateway? The status of the refusal, or 101. */
const socketStatus = (url: string, who: 'admin' | 'user') => socketIoUpgradeStatus(url, { 'x-test-caller': who });

describe('the Open WebUI release behind the gateway', function () {
  this.timeout(30_000);

  describe('UPSTREAM_RELEASE_POLICY=warn (the default)', () => {
    let w: World;
    afterEach(async () => w?.close());

    it('behind a checked release (0.12.4): supported in the metric and /readyz, said once in the log, admins served', async () => {
      w = await world('0.12.4');
      expect(await metric(w.url)).to.deep.equal(['gateway_upstream_release_supported{release="0.12.4"} 1']);
      const r = await readyz(w.url);
      expect(r.status).to.equal(200);
      expect(r.body.checks.upstreamRelease).to.deep.equal({ ok: true, detail: 'Open WebUI 0.12.4: a release the route table was checked against' });
      expect(warnings(w)).to.deep.equal([]);
      expect(w.lines.filter((l) => l.event === 'upstream-release').map((l) => l.release)).to.deep.equal(['0.12.4']);
      expect((await as('admin', w.url, '/api/v1/users/groups')).status).to.equal(200);
    });

    it('behind a release the table was not checked against: a warning at start naming it and the checked ones, the metric 0, /readyz says so and stays ready; everyone served', async () => {
      w = await world('0.12.5');
      const [warning] = warnings(w);
      expect(warning, 'a warning at start').to.not.equal(undefined);
      expect(warning).to.include({ level: 40, release: '0.12.5', policy: 'warn' });
      expect(warning!.supported).to.include.members(['0.12.4']);
      expect(warning!.msg).to.include('Open WebUI 0.12.5: NOT a release the route table was checked against').and.to.include('npm run routes:check -- 0.12.5');
      expect(await metric(w.url)).to.deep.equal(['gateway_upstream_release_supported{release="0.12.5"} 0']);
      const r = await readyz(w.url);
      expect(r.status).to.equal(200);
      expect(r.body.ready).to.equal(true);
      expect(r.body.checks.upstreamRelease.ok).to.equal(false);
      expect(r.body.checks.upstreamRelease.detail).to.include('0.12.5: NOT a release').and.to.include('UPSTREAM_RELEASE_POLICY=warn');
      expect((await as('admin', w.url, '/api/v1/users/groups')).status).to.equal(200);
      expect((await as('user', w.url, '/api/v1/users/groups')).status).to.equal(200);
    });

    it('a release changed behind the running gateway is seen at the next readiness check: warning, metric and /readyz, and back when it is a checked one again', async () => {
      w = await world('0.12.4');
      expect((await readyz(w.url)).body.checks.upstreamRelease.ok).to.equal(true);
      w.upstream.release.version = '0.13.0';
      await nextReadiness();
      const r = await readyz(w.url);
      expect(r.body.checks.upstreamRelease.detail).to.include('Open WebUI 0.13.0: NOT a release');
      expect(warnings(w).map((l) => l.release)).to.deep.equal(['0.13.0']);
      expect(await metric(w.url)).to.deep.equal(['gateway_upstream_release_supported{release="0.13.0"} 0']);
      w.upstream.release.version = '0.12.4';
      await nextReadiness();
      expect((await readyz(w.url)).body.checks.upstreamRelease.ok).to.equal(true);
      expect(await metric(w.url)).to.deep.equal(['gateway_upstream_release_supported{release="0.12.4"} 1']);
      expect(w.lines.filter((l) => l.event === 'upstream-release').map((l) => l.msg)).to.deep.equal([
        'Open WebUI 0.12.4: a release the route table was checked against',
        'Open WebUI 0.12.4: a release the route table was checked against (again)',
      ]);
    });

    it('a /api/version that is not JSON, not a version, or not 200 is "unreadable", an upstream that does not answer "unreachable": never supported', async () => {
      w = await world('0.12.4');
      for (const [answer, why] of [
        [{ status: 200, body: '<html>not json</html>' }, 'not JSON'],
        [{ status: 200, body: '{"name":"Open WebUI"}' }, 'not of the expected shape'],
        [{ status: 200, body: '{"version":"0.12.4 <script>"}' }, 'not a release name'],
        [{ status: 404, body: '{"detail":"Not Found"}' }, 'answered 404'],
      ] as const) {
        w.upstream.release.answer = answer;
        await nextReadiness();
        const check = (await readyz(w.url)).body.checks.upstreamRelease;
        expect(check.ok, why).to.equal(false);
        expect(check.detail, why).to.include('could not be read (unreadable').and.to.include(why);
        expect(await metric(w.url)).to.deep.equal(['gateway_upstream_release_supported{release="unreadable"} 0']);
      }
      expect(warnings(w).map((l) => l.release)).to.deep.equal(['unreadable']);
      await w.upstream.close();
      await nextReadiness();
      const down = await readyz(w.url);
      expect(down.status).to.equal(503);
      expect(down.body.checks.upstreamRelease.detail).to.include('could not be read (unreachable');
      expect(await metric(w.url)).to.deep.equal(['gateway_upstream_release_supported{release="unreachable"} 0']);
    });
  });

  describe('UPSTREAM_RELEASE_POLICY=refuse-admins', () => {
    let w: World;
    afterEach(async () => w?.close());

    it('behind a release not checked: every admin API request (and Socket.IO) refused with why, audited; their pages a page of the gateway\u2019s; every plain user served', async () => {
      const startedAt = Date.now();
      w = await world('0.12.5', { UPSTREAM_RELEASE_POLICY: 'refuse-admins' });
      const before = w.upstream.requests.length;
      for (const path of ['/api/v1/users/groups', '/api/config', '/API/v1/chats/', '/ollama/api/tags', '/openai/models']) {
        const res = await as('admin', w.url, path);
        expect(res.status, path).to.equal(403);
        expect(((await res.json()) as { detail: string }).detail).to.equal(
          'The chat front-end runs a release this gateway was not checked against: admin requests are refused until it is (Open WebUI 0.12.5)',
        );
      }
      expect(
        w.upstream.requests.slice(before).filter((r) => r.url !== '/api/version' && r.url !== '/health' && !r.url.startsWith('/api/v1/auths/')),
        'none forwarded',
      ).to.deep.equal([]);
      expect(w.lines.filter((l) => l.event === 'policy-denied' && l.rule === 'upstream release not checked: admins refused').length).to.be.at.least(5);
      expect(await socketStatus(w.url, 'admin')).to.equal(403);
      // their pages: the gateway's own, saying why, since when and what to tell the operator; never forwarded
      const pagesBefore = w.upstream.requests.length;
      for (const path of ['/', '/workspace', '/c/c-1']) {
        const res = await as('admin', w.url, path, { headers: { 'accept-language': 'en' } });
        expect(res.status, path).to.equal(403);
        expect(res.headers.get('content-type')).to.equal('text/html; charset=utf-8');
        const html = await res.text();
        expect(html).to.include('id="release-not-checked"');
        expect(html).to.include('The chat front-end now runs Open WebUI 0.12.5, a release this gateway was not checked against.');
        const since = /Since (\d{4}-\d\d-\d\d \d\d:\d\d) UTC\./.exec(html)?.[1];
        expect(since, 'since when').to.be.a('string');
        expect(Date.parse(`${since}Z`)).to.be.within(Math.floor(startedAt / 60_000) * 60_000, Date.now());
        expect(html).to.include(
          `not a release its route table was checked against (${CHECKED_VERSIONS.join(', ')}). Check it with &#34;npm run routes:check -- 0.12.5&#34;`,
        );
        expect(html).to.include('href="/auth/logout"');
      }
      const german = await (await as('admin', w.url, '/', { headers: { 'accept-language': 'de' } })).text();
      expect(german).to.include('Der Chat ist für Administratoren vorübergehend geschlossen');
      expect(
        w.upstream.requests.slice(pagesBefore).filter((r) => r.url !== '/api/version' && r.url !== '/health' && !r.url.startsWith('/api/v1/auths/')),
        'no page forwarded',
      ).to.deep.equal([]);
      expect(
        w.lines.some((l) => l.event === 'policy-denied' && l.rule === 'upstream release not checked: admins refused (a page)' && l.path === '/workspace'),
      ).to.equal(true);
      // the public assets are not refused; a plain user's pages are Open WebUI's
      expect((await as('admin', w.url, '/static/favicon.png')).status).to.equal(200);
      expect((await as('user', w.url, '/workspace')).status).to.equal(200);
      // plain users are unaffected
      expect((await as('user', w.url, '/api/v1/users/groups')).status).to.equal(200);
      expect((await as('user', w.url, '/api/config')).status).to.equal(200);
      expect(await socketStatus(w.url, 'user')).to.equal(101);
      // ready: refuse-admins keeps serving users
      expect((await readyz(w.url)).status).to.equal(200);
      // once the release is a checked one, admins are served at the next check
      w.upstream.release.version = '0.12.4';
      await nextReadiness();
      await readyz(w.url);
      expect((await as('admin', w.url, '/api/v1/users/groups')).status).to.equal(200);
      expect(await socketStatus(w.url, 'admin')).to.equal(101);
      expect((await as('admin', w.url, '/workspace')).status, 'the admin\u2019s pages again').to.equal(200);
    });

    it('a release that cannot be read refuses admins too; behind a checked release nothing is refused', async () => {
      w = await world('0.12.4', { UPSTREAM_RELEASE_POLICY: 'refuse-admins' });
      expect((await as('admin', w.url, '/api/v1/users/groups')).status).to.equal(200);
      w.upstream.release.answer = { status: 200, body: 'oops' };
      await nextReadiness();
      await readyz(w.url);
      const res = await as('admin', w.url, '/api/v1/users/groups');
      expect(res.status).to.equal(403);
      expect(((await res.json()) as { detail: string }).detail).to.equal(
        'The chat front-end runs a release this gateway was not checked against: admin requests are refused until it is',
      );
      const html = await (await as('admin', w.url, '/')).text();
      expect(html).to.include('The gateway cannot tell which release of Open WebUI the chat front-end runs (GET /api/version answered a body');
      expect(html).to.include('release from /api/version (GET /api/version answered a body');
      expect((await as('user', w.url, '/api/v1/users/groups')).status).to.equal(200);
    });
  });

  describe('UPSTREAM_RELEASE_POLICY=strict', () => {
    let w: World;
    afterEach(async () => w?.close());

    it('behind a release not checked /readyz is 503 naming it (everything else as with warn); behind a checked one 200', async () => {
      w = await world('0.11.9', { UPSTREAM_RELEASE_POLICY: 'strict' });
      const r = await readyz(w.url);
      expect(r.status).to.equal(503);
      expect(r.body.ready).to.equal(false);
      expect(r.body.checks.upstream.ok, 'the chat front-end itself is up').to.equal(true);
      expect(r.body.checks.upstreamRelease.detail).to.include('Open WebUI 0.11.9: NOT a release').and.to.include('UPSTREAM_RELEASE_POLICY=strict: not ready');
      expect(warnings(w)[0]).to.include({ release: '0.11.9', policy: 'strict' });
      expect((await as('admin', w.url, '/api/v1/users/groups')).status).to.equal(200);
      w.upstream.release.version = '0.12.4';
      await nextReadiness();
      expect((await readyz(w.url)).status).to.equal(200);
      w.upstream.release.answer = { status: 500, body: '{}' };
      await nextReadiness();
      expect((await readyz(w.url)).status, 'unreadable is not ready either').to.equal(503);
    });
  });

  it('the warning repeats every five minutes while the release is not a checked one, and at once when it changes', async () => {
    const upstream = await startOpenWebUI({ version: '0.12.5' });
    const obs = capturingObservability();
    const client = new Upstream(
      { url: upstream.url, timeoutMs: 5_000, maxSockets: 4, rewriteMaxBytes: 1 << 20, idleTimeoutMs: 10_000 },
      createObservability({ level: 'silent' }),
    );
    let now = 1_000_000;
    const release = new UpstreamRelease(client.calls, obs, { policy: () => 'warn', now: () => now });
    try {
      const seen = () => obs.lines.filter((l) => l.event === 'upstream-release-unsupported').map((l) => l.release);
      await release.check();
      expect(release.status.since, 'since the first reading').to.equal(1_000_000);
      now += 60_000;
      await release.check();
      now += 3 * 60_000;
      await release.check();
      expect(seen(), 'once in the first five minutes').to.deep.equal(['0.12.5']);
      now += 60_000;
      await release.check();
      expect(seen(), 'again five minutes later').to.deep.equal(['0.12.5', '0.12.5']);
      upstream.release.version = '0.13.0';
      now += 1_000;
      await release.check();
      expect(seen(), 'at once for another release').to.deep.equal(['0.12.5', '0.12.5', '0.13.0']);
      // since when: the moment it was first read, kept while it stays (what an admin's page says)
      expect(release.status).to.deep.equal({ state: 'unsupported', version: '0.13.0', since: now });
      const firstSeen = now;
      now += 60_000;
      await release.check();
      expect(release.status.since).to.equal(firstSeen);
    } finally {
      client.close();
      await upstream.close();
    }
  });

  describe('`npm run check-config` reads the release', () => {
    function checkConfig(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
      return new Promise((done) => {
        const child = spawn('npm', ['run', '--silent', 'check-config'], {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH ?? '',
            HOME: process.env.HOME ?? '',
            NODE_ENV: 'production',
            PUBLIC_URL: 'https://chat.example',
            OIDC_ISSUER_URL: 'https://kc.example/realms/platform',
            OIDC_CLIENT_ID: 'chat-gateway',
            OIDC_CLIENT_SECRET: 'check-config-client-secret',
            SESSION_SECRET: 'check-config-session-secret-0123456789abcdef',
            ...env,
          },
        });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.stderr.on('data', (d) => (out += d));
        child.on('close', (code) => done({ code, out }));
      });
    }
    let upstream: OpenWebUIStandIn;
    before(async () => (upstream = await startOpenWebUI({})));
    after(async () => upstream?.close());

    it('a checked release: said, no warning', async () => {
      upstream.release.version = '0.12.4';
      const r = await checkConfig({ UPSTREAM_URL: upstream.url });
      expect(r.code, r.out).to.equal(0);
      expect(r.out).to.include(`Upstream release (${upstream.url}/api/version): Open WebUI 0.12.4: a release the route table was checked against`);
      expect(r.out).to.not.include('Warnings');
    });

    it('a release not checked, one that cannot be read, an upstream that does not answer: each a warning naming it (exit 0: the settings are valid)', async () => {
      upstream.release.version = '0.12.5';
      let r = await checkConfig({ UPSTREAM_URL: upstream.url, UPSTREAM_RELEASE_POLICY: 'strict' });
      expect(r.code, r.out).to.equal(0);
      expect(r.out).to.match(/Warnings \(1\):\n {2}- UPSTREAM_URL: Open WebUI 0\.12\.5: NOT a release the route table was checked against \(0\.12\.4/);
      expect(r.out).to.include('UPSTREAM_RELEASE_POLICY=strict: not ready');
      upstream.release.answer = { status: 200, body: 'not json' };
      r = await checkConfig({ UPSTREAM_URL: upstream.url });
      expect(r.out).to.include('- UPSTREAM_URL: the Open WebUI release could not be read (unreadable: GET /api/version answered a body not JSON)');
      delete upstream.release.answer;
      r = await checkConfig({ UPSTREAM_URL: `http://127.0.0.1:${await freePort()}` });
      expect(r.out).to.include('- UPSTREAM_URL: the Open WebUI release could not be read (unreachable');
      expect(r.out).to.include('configuration OK, with 1 warning');
    });
  });
});
