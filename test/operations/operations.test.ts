// Operations: /healthz, /readyz, /metrics (also on their own port), request ids and
// request logs, no secrets in any log line, the policy drift check, `npm run check-config`,
// graceful shutdown (a real `npm start` receiving SIGTERM, WebSockets closed with 1001), and two
// gateway instances serving the same sessions.
import { expect } from 'chai';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Router } from 'express';
import { WebSocket } from 'ws';
import { startOpenWebUI, type OpenWebUIStandIn, type StandInFile } from '../../sandbox/open-webui/stand-in.js';
import { baseEnv, capturingObservability, startGateway, type RunningGateway } from '../support/gateway-harness.js';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { loginThroughIdp } from '../../sandbox/idp-browser.js';
import { browse, Jar } from '../support/cookie-jar.js';
import { loadSettings } from '../../config/settings.js';
import { type Env } from '../../config/env.js';
import { type Operations, type Readiness } from '../../gateway/operations/operations.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../gateway/app.js';
import type { Authenticator, Identity } from '../../gateway/auth/identity.js';
import { closeFrame, FrameBoundaries, WebSocketTracker } from '../../gateway/http/websockets.js';
import { freePort } from '../support/raw-http.js';
import { sleep, until } from '../support/wait.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const now = Math.floor(Date.now() / 1000);
const file = (id: string, user_id: string): StandInFile => ({
  id,
  user_id,
  hash: null,
  filename: `${id}.txt`,
  data: { content: `content of ${id}` },
  meta: { name: `${id}.txt`, content_type: 'text/plain', size: 13 },
  created_at: now,
  updated_at: now,
});

function providersFile(content: unknown = demoIdentityProviders): string {
  const f = join(mkdtempSync(join(tmpdir(), 'ops-test-')), 'providers.json');
  writeFileSync(f, typeof content === 'string' ? content : JSON.stringify(content));
  return f;
}

/** An authenticator that says who everyone is (or nobody), for tests that are not about sign-in. */
function stubAuthenticator(identity?: Identity): Authenticator {
  return { router: Router(), authenticate: async () => identity, ready: async () => ({ ok: true, detail: 'stub identity provider' }), close: async () => {} };
}

const admin: Identity = {
  sub: 'admin-sub',
  email: 'admin@platform.test',
  name: 'Admin',
  roles: ['PlatformSysAdmin'],
  admin: true,
  groups: [],
  tenants: [],
  activeTenant: null,
  via: 'bearer',
};

type OpsGateway = RunningGateway & { ops: Operations };

async function opsGateway(env: Env, options: GatewayOptions = {}): Promise<OpsGateway> {
  const gw = await startGateway(env, { authenticator: stubAuthenticator(), ...options });
  return Object.assign(gw, { ops: gw.gateway.ops });
}

const readyz = async (url: string) => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: (await res.json()) as Readiness };
};

describe('operations: health, readiness, metrics, request logs, drift', function () {
  this.timeout(20_000);
  let upstream: OpenWebUIStandIn;
  let gw: OpsGateway;
  let key: string;

  before(async () => {
    upstream = await startOpenWebUI({
      users: [
        { id: 'u-admin', email: 'admin@platform.test', name: 'Admin', role: 'admin', groups: [] },
        { id: 'u-bob', email: 'bob@globex.test', name: 'Bob', role: 'user', groups: [] },
      ],
      files: [file('f-admin', 'u-admin'), file('f-bob', 'u-bob')],
      // set like the platform: no drift
      bypassAdminAccessControl: false,
      enableAdminExport: false,
      enableAdminChatAccess: false,
      // an upstream that tells anyone its admin flags (0.11.0 as the reference describes): what the drift check compares
      adminFlagsInConfig: 'anyone',
    });
    key = upstream.apiKeyFor('u-admin');
    gw = await opsGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true', IDP_PROVIDERS_FILE: providersFile(), DRIFT_CHECK_SECONDS: '0' }));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('/healthz answers without identity', async () => {
    const res = await fetch(`${gw.url}/healthz`);
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ status: 'ok' });
  });

  it('/readyz: 200 with every check named when the upstream, identity provider and catalog are fine', async () => {
    const { status, body } = await until('a fresh catalog', async () => {
      const r = await readyz(gw.url);
      return r.body.checks.catalog.detail.includes('fresh') ? r : undefined;
    });
    expect(status).to.equal(200);
    expect(body.ready).to.equal(true);
    expect(Object.keys(body.checks)).to.have.members(['upstream', 'identityProvider', 'catalog', 'policyDrift', 'sharedState', 'upstreamRelease']);
    // no REDIS_URL: one process, and it says so
    expect(body.checks.sharedState).to.deep.equal({ ok: true, detail: 'sessions and rate limits kept in this process (no REDIS_URL): run one instance' });
    expect(body.checks.upstream).to.include({ ok: true });
    expect(body.checks.identityProvider).to.deep.equal({ ok: true, detail: 'stub identity provider' });
    expect(body.checks.policyDrift.detail).to.include('DRIFT_CHECK_SECONDS=0');
  });

  it('a refused request is logged and counted as it was judged: its canonical path and route class', async () => {
    const res = await fetch(`${gw.url}/api%2Fv1/files%2Ff-admin`, { method: 'POST', headers: { 'x-http-method-override': 'DELETE' } });
    expect(res.status).to.equal(400);
    const id = res.headers.get('x-request-id');
    const line = await until('the request log line', () => gw.obs.lines.find((l) => l.msg === 'request' && l.requestId === id));
    expect(line).to.include({ method: 'POST', path: '/api/v1/files/f-admin', status: 400, routeClass: 'api' });
  });

  it('the request id goes upstream, back to the client, and into the request log line (without headers or query)', async () => {
    const res = await fetch(`${gw.url}/api/v1/files/f-admin?content=true&token=should-not-be-logged`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).to.equal(200);
    const id = res.headers.get('x-request-id');
    expect(id).to.match(/^[0-9a-f-]{36}$/);
    const seen = upstream.requests.find((r) => r.headers['x-request-id'] === id);
    expect(seen, 'upstream saw the request id').to.not.equal(undefined);
    const line = await until('the request log line', () => gw.obs.lines.find((l) => l.msg === 'request' && l.requestId === id));
    expect(line).to.include({ method: 'GET', path: '/api/v1/files/f-admin', status: 200, routeClass: 'api' });
    expect(line.ms).to.be.a('number');
    const text = JSON.stringify(line);
    expect(text).to.not.include(key);
    expect(text).to.not.include('should-not-be-logged');
    expect(line).to.not.have.any.keys('headers', 'req', 'authorization', 'cookie');
  });

  it('/metrics: Prometheus text with requests, latency, policy decisions, drift, cache, upstream errors, websockets', async () => {
    const auth = { authorization: `Bearer ${key}` };
    await fetch(`${gw.url}/api/v1/files/`, { headers: auth });
    await fetch(`${gw.url}/api/v1/files/`, { headers: auth });
    expect((await fetch(`${gw.url}/api/v1/chats/all/db`, { headers: auth })).status).to.equal(401);
    const res = await fetch(`${gw.url}/metrics`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    for (const series of [
      'gateway_requests_total',
      'gateway_request_duration_seconds',
      'gateway_policy_decisions_total',
      'gateway_policy_drift_total',
      'gateway_cache_lookups_total',
      'gateway_upstream_errors_total',
      'gateway_websockets_open',
    ]) {
      expect(text, series).to.include(`# TYPE ${series} `);
    }
    expect(text).to.match(/gateway_requests_total\{route_class="api",status="200"\} [1-9]/);
    expect(text).to.match(/gateway_requests_total\{route_class="api",status="401"\} [1-9]/);
    expect(text).to.match(/gateway_request_duration_seconds_bucket\{le="0.1",route_class="api"\} [1-9]/);
    expect(text).to.match(/gateway_policy_decisions_total\{action="deny",rule="[^"]+"\} [1-9]/);
    expect(text).to.match(/gateway_policy_decisions_total\{action="filter-own-files",rule="[^"]+"\} [1-9]/);
    expect(text).to.match(/gateway_cache_lookups_total\{cache="upstream-account",result="hit"\} [1-9]/);
    expect(text).to.match(/gateway_cache_lookups_total\{cache="upstream-account",result="miss"\} [1-9]/);
    expect(text).to.include('gateway_process_cpu_seconds_total');
  });

  it('/metrics: request counts are exact from one scrape to the next (counted once, never twice)', async () => {
    const auth = { authorization: `Bearer ${key}` };
    const series = /gateway_policy_decisions_total\{action="deny",rule="([^"]+)"\} (\d+)/;
    const denials = async () => Number(series.exec(await (await fetch(`${gw.url}/metrics`)).text())?.[2] ?? 0);
    const before = await denials();
    for (let i = 0; i < 3; i++) expect((await fetch(`${gw.url}/api/v1/chats/all/db`, { headers: auth })).status).to.equal(401);
    expect(await denials()).to.equal(before + 3);
    expect(await denials(), 'a scrape with nothing new changes nothing').to.equal(before + 3);
    await fetch(`${gw.url}/api/v1/chats/all/db`, { headers: auth });
    expect(await denials()).to.equal(before + 4);
  });

  it('policy drift: an upstream with the admin export and chat access on is a warning (log, metric, readiness detail), not unready', async () => {
    upstream.flags.enableAdminExport = true;
    upstream.flags.enableAdminChatAccess = true;
    try {
      const drift = await gw.ops.checkDrift();
      expect(drift.ok).to.equal(false);
      expect(drift.detail).to.include('ENABLE_ADMIN_EXPORT is true upstream, the gateway enforces false');
      expect(drift.detail).to.include('ENABLE_ADMIN_CHAT_ACCESS is true upstream, the gateway enforces false');
      const warn = gw.obs.lines.find((l) => l.event === 'policy-drift');
      expect(warn?.level).to.equal(40);
      const metrics = await (await fetch(`${gw.url}/metrics`)).text();
      expect(metrics).to.match(/gateway_policy_drift_total\{kind="enable_admin_export"\} 1/);
      expect(metrics).to.match(/gateway_policy_drift_total\{kind="enable_admin_chat_access"\} 1/);
      await sleep(1_100); // past the readiness cache
      const { status, body } = await readyz(gw.url);
      expect(status).to.equal(200);
      expect(body.ready).to.equal(true);
      expect(body.checks.policyDrift).to.deep.equal(drift);
    } finally {
      upstream.flags.enableAdminExport = false;
      upstream.flags.enableAdminChatAccess = false;
    }
    const cleared = await gw.ops.checkDrift();
    expect(cleared.ok).to.equal(true);
    expect(gw.obs.lines.some((l) => l.event === 'policy-drift-cleared')).to.equal(true);
  });

  it('policy drift against an upstream that reports its admin flags to signed-in callers only (Open WebUI 0.12.4): "not checked", never "matches"', async () => {
    const quiet = await startOpenWebUI({ enableAdminExport: true, enableAdminChatAccess: true });
    const other = await opsGateway(baseEnv(quiet.url, { IDP_PROVIDERS_FILE: providersFile(), DRIFT_CHECK_SECONDS: '0' }));
    try {
      const drift = await other.ops.checkDrift();
      expect(drift.ok).to.equal(true);
      expect(drift.detail).to.match(/^not checked/);
      expect(drift.detail).to.not.include('matches');
    } finally {
      await other.close();
      await quiet.close();
    }
  });

  it('the drift check runs at start and on its timer', async () => {
    const other = await opsGateway(baseEnv(upstream.url, { IDP_PROVIDERS_FILE: providersFile(), DRIFT_CHECK_SECONDS: '1' }));
    try {
      upstream.flags.enableAdminExport = true;
      const before = upstream.requests.filter((r) => r.url === '/api/config').length;
      await other.ops.start();
      // one at start, one a second later
      await until('two drift checks', () => upstream.requests.filter((r) => r.url === '/api/config').length >= before + 2 || undefined, { ms: 3_000 });
      const body = await until('drift in readiness', async () => {
        const r = await readyz(other.url);
        return r.body.checks.policyDrift.ok === false ? r.body : undefined;
      });
      expect(body.checks.policyDrift.detail).to.include('ENABLE_ADMIN_EXPORT');
    } finally {
      upstream.flags.enableAdminExport = false;
      await other.close();
    }
  });

  it('/readyz under a probe storm: thirty at once cost the chat front-end one health check, a second later one more', async () => {
    const healthChecks = () => upstream.requests.filter((r) => r.url === '/health').length;
    await sleep(1_100); // past any earlier test's answer
    const before = healthChecks();
    const answers = await Promise.all(Array.from({ length: 30 }, () => readyz(gw.url)));
    expect(answers.map((a) => a.status)).to.deep.equal(Array(30).fill(200));
    expect(healthChecks() - before).to.equal(1);
    await sleep(1_100);
    await Promise.all(Array.from({ length: 10 }, () => readyz(gw.url)));
    expect(healthChecks() - before).to.equal(2);
  });

  it('a stale provider catalog keeps the gateway ready and says `stale`', async () => {
    const f = providersFile();
    const other = await opsGateway(baseEnv(upstream.url, { IDP_PROVIDERS_FILE: f, IDP_CACHE_SECONDS: '1', DRIFT_CHECK_SECONDS: '0' }));
    try {
      await until('a fresh catalog', async () => ((await readyz(other.url)).body.checks.catalog.detail.includes('fresh') ? true : undefined));
      writeFileSync(f, 'this is not JSON');
      await sleep(1_200);
      await fetch(`${other.url}/api/v1/auth-providers/`); // asks the catalog again: the source fails
      const { status, body } = await until('a stale catalog', async () => {
        await sleep(1_050); // readiness is cached for a second
        const r = await readyz(other.url);
        return r.body.checks.catalog.detail.includes('stale') ? r : undefined;
      });
      expect(status).to.equal(200);
      expect(body.ready).to.equal(true);
      expect(body.checks.catalog.ok).to.equal(true);
    } finally {
      await other.close();
    }
  });

  it('/readyz is 503 naming the upstream when the chat front-end is down; upstream errors are counted', async () => {
    const down = await opsGateway(baseEnv(`http://127.0.0.1:${await freePort()}`, { IDP_PROVIDERS_FILE: providersFile(), DRIFT_CHECK_SECONDS: '0' }));
    try {
      const { status, body } = await readyz(down.url);
      expect(status).to.equal(503);
      expect(body.ready).to.equal(false);
      expect(body.checks.upstream.ok).to.equal(false);
      expect(body.checks.upstream.detail).to.include('chat front-end not reachable');
      expect((await fetch(`${down.url}/static/app.js`)).status).to.equal(502);
      const metrics = await (await fetch(`${down.url}/metrics`)).text();
      expect(metrics).to.match(/gateway_upstream_errors_total\{kind="unreachable"\} [1-9]/);
      // the drift check says it could not look, and that is not a crash
      expect((await down.ops.checkDrift()).detail).to.include('drift check failed');
    } finally {
      await down.close();
    }
  });

  it('METRICS_PORT: /metrics only there; /healthz and /readyz on both ports', async () => {
    const metricsPort = await freePort();
    const other = await opsGateway(
      baseEnv(upstream.url, { IDP_PROVIDERS_FILE: providersFile(), METRICS_PORT: String(metricsPort), DRIFT_CHECK_SECONDS: '0', HOST: '127.0.0.1' }),
    );
    try {
      const { metricsUrl } = await other.ops.start();
      expect(metricsUrl).to.equal(`http://127.0.0.1:${metricsPort}`);
      expect((await fetch(`${other.url}/metrics`)).status).to.equal(404);
      const m = await fetch(`${metricsUrl}/metrics`);
      expect(m.status).to.equal(200);
      expect(await m.text()).to.include('gateway_requests_total');
      for (const base of [other.url, metricsUrl!]) {
        expect((await fetch(`${base}/healthz`)).status, `${base}/healthz`).to.equal(200);
        expect((await fetch(`${base}/readyz`)).status, `${base}/readyz`).to.equal(200);
      }
      expect((await fetch(`${metricsUrl}/api/v1/files/`)).status).to.equal(404);
    } finally {
      await other.close();
    }
    // stopped: the metrics port is free again
    await new Promise<void>((res, rej) => {
      const s = createServer().once('error', rej);
      s.listen(metricsPort, '127.0.0.1', () => s.close(() => res()));
    });
  });
});

describe('operations: no secrets or tokens in any log line', function () {
  this.timeout(20_000);
  const CLIENT_SECRET = 'ops-test-client-secret-do-not-log';
  const SESSION_SECRET = 'ops-test-session-secret-0123456789-do-not-log';
  let idp: TestIdp;
  let upstream: OpenWebUIStandIn;
  let gateway: Gateway;
  let url: string;
  const obs = capturingObservability();

  before(async () => {
    upstream = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: false, groups: ['acme', 'globex'] });
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    idp = await startIdp({
      clients: [
        { client_id: 'chat-gateway', client_secret: CLIENT_SECRET, redirect_uris: [`${url}/auth/callback`], post_logout_redirect_uris: [`${url}/auth/login`] },
      ],
    });
    const settings = loadSettings(
      {
        ...baseEnv(upstream.url),
        PUBLIC_URL: url,
        OIDC_ISSUER_URL: idp.issuer,
        OIDC_CLIENT_SECRET: CLIENT_SECRET,
        SESSION_SECRET,
        IDP_PROVIDERS_FILE: providersFile(),
        IDP_TENANT_IDP_ALIASES: 'acme=acme-entra',
        LOG_LEVEL: 'trace',
      },
      { stageFiles: false },
    );
    obs.log.level = 'trace';
    gateway = await createGateway(settings, { obs });
    await gateway.listen(port, '127.0.0.1');
  });
  after(async () => {
    await gateway?.close();
    await idp?.close();
    await upstream?.close();
  });

  it('a login, API calls, a denial, a bearer token and a logout leave no secret, token, code or cookie in the logs', async () => {
    const jar = new Jar(url);
    const start = await browse(jar, '/auth/start?returnTo=%2F');
    expect(start.status).to.equal(302);
    const { callbackUrl, jar: idpJar } = await loginThroughIdp(start.location!, 'sysadmin', undefined, new Jar());
    const code = new URL(callbackUrl).searchParams.get('code')!;
    const state = new URL(callbackUrl).searchParams.get('state')!;
    expect((await browse(jar, callbackUrl)).status).to.equal(302);
    const cookies = jar.names().map((n) => jar.get(n)!);
    expect(jar.names().some((n) => n.startsWith('appSession'))).to.equal(true);

    expect((await browse(jar, '/api/v1/files/')).status).to.equal(200);
    expect((await browse(jar, '/auth/session')).json<{ authenticated: boolean }>().authenticated).to.equal(true);
    expect((await browse(jar, '/api/v1/chats/all/db')).status).to.equal(401);
    const bearer = await idp.accessTokenFor('alice', 'chat-gateway');
    expect((await browse(undefined, `${url}/api/v1/files/?x=1`, { headers: { authorization: `Bearer ${bearer}` } })).status).to.equal(200);
    const forged = await idp.signForeignJwt({ sub: 'x', aud: 'chat-gateway' });
    expect((await browse(undefined, `${url}/api/v1/files/`, { headers: { authorization: `Bearer ${forged}` } })).status).to.equal(401);
    // a callback replayed with a stale code fails: the failure is logged, the code is not
    await browse(new Jar(url), `/auth/callback?code=${encodeURIComponent(code)}&state=${encodeURIComponent(state)}`);
    await browse(jar, '/auth/logout');
    void idpJar;

    const upstreamTokens = upstream.requests
      .map((r) => String(r.headers.authorization ?? ''))
      .filter((a) => a.startsWith('Bearer '))
      .map((a) => a.slice(7));
    expect(upstreamTokens.length).to.be.greaterThan(0);
    await sleep(50);
    const text = obs.lines.map((l) => JSON.stringify(l)).join('\n');
    expect(obs.lines.some((l) => l.event === 'sign-in')).to.equal(true);
    expect(obs.lines.some((l) => l.msg === 'request' && l.path === '/auth/callback')).to.equal(true);
    const secrets: Record<string, string> = { CLIENT_SECRET, SESSION_SECRET, code, 'realm access token': bearer, 'forged token': forged };
    cookies.forEach((c, i) => (secrets[`cookie ${i}`] = c));
    upstreamTokens.forEach((t, i) => (secrets[`upstream token ${i}`] = t));
    for (const [what, value] of Object.entries(secrets)) {
      expect(text.includes(value), `${what} appears in the logs`).to.equal(false);
      // nor a recognisable piece of it (JWT signatures, cookie chunks)
      const tail = value.slice(-24);
      expect(text.includes(tail), `the end of ${what} appears in the logs`).to.equal(false);
    }
    expect(text).to.not.match(/eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/); // no JWT at all
  });
});

describe('operations: `npm run check-config`', function () {
  this.timeout(20_000);

  function run(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((done) => {
      const child = spawn('npm', ['run', '--silent', 'check-config'], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => done({ code, stdout, stderr }));
    });
  }

  it('valid production settings: prints them with secrets redacted, "configuration OK", exit 0', async () => {
    const r = await run({
      NODE_ENV: 'production',
      UPSTREAM_URL: 'http://open-webui:8080',
      PUBLIC_URL: 'https://chat.example',
      OIDC_ISSUER_URL: 'https://kc.example/realms/platform',
      OIDC_CLIENT_ID: 'chat-gateway',
      OIDC_CLIENT_SECRET: 'check-config-client-secret',
      SESSION_SECRET: 'check-config-session-secret-0123456789abcdef',
      IDP_TENANT_IDP_ALIASES: 'acme=acme-entra',
    });
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.include('configuration OK');
    expect(r.stdout).to.match(/UPSTREAM_URL\s+http:\/\/open-webui:8080/);
    expect(r.stdout).to.match(/OIDC_CLIENT_SECRET\s+\[redacted\]/);
    expect(r.stdout).to.include('"adminUrl": "https://kc.example/admin/realms/platform"');
    expect(r.stdout).to.include('"acme": "acme-entra"');
    expect(r.stdout + r.stderr).to.not.include('check-config-client-secret');
    expect(r.stdout + r.stderr).to.not.include('check-config-session-secret');
  });

  it('invalid settings: every problem named, exit 2, still no secret printed', async () => {
    const r = await run({
      NODE_ENV: 'production',
      CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'yes',
      SESSION_SECRET: 'too-short-secret',
      IDP_TENANT_IDP_ALIASES: 'acme=a,acme=b',
      PORT: 'eighty',
    });
    expect(r.code).to.equal(2);
    for (const name of [
      'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL',
      'SESSION_SECRET',
      'IDP_TENANT_IDP_ALIASES',
      'PORT',
      'UPSTREAM_URL',
      'OIDC_ISSUER_URL',
      'OIDC_CLIENT_ID',
      'OIDC_CLIENT_SECRET',
      'PUBLIC_URL',
    ]) {
      expect(r.stderr, name).to.match(new RegExp(`- ${name}: `));
    }
    expect(r.stderr).to.include('configuration NOT OK');
    expect(r.stdout + r.stderr).to.not.include('too-short-secret');
  });
});

describe('operations: graceful shutdown', function () {
  this.timeout(30_000);

  it('WebSocket frame boundaries: the Close frame goes after the frame in flight, nothing after it', () => {
    const written: Buffer[] = [];
    const socket = new Duplex({
      read() {},
      write(chunk: Buffer, _enc, cb) {
        written.push(Buffer.from(chunk));
        cb();
      },
    });
    const tracker = new WebSocketTracker();
    tracker.track(socket);
    const head = 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n';
    const big = Buffer.concat([Buffer.from([0x82, 126, 0x01, 0x00]), Buffer.alloc(256, 7)]); // binary, 256 bytes
    const small = Buffer.from([0x81, 2, 0x68, 0x69]); // text "hi"
    socket.write(head);
    socket.write(big.subarray(0, 100)); // mid-frame
    tracker.closeAll();
    expect(Buffer.concat(written).length).to.equal(head.length + 100); // nothing injected mid-frame
    socket.write(Buffer.concat([big.subarray(100), small])); // the rest of the frame, then another
    socket.write(small);
    const out = Buffer.concat(written);
    expect(out.toString('latin1')).to.equal(head + Buffer.concat([big, closeFrame()]).toString('latin1'));
    expect(closeFrame().readUInt16BE(2)).to.equal(1001);

    const f = new FrameBoundaries();
    const long = Buffer.concat([Buffer.from([0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0]), Buffer.alloc(65536)]);
    expect(f.consume(long.subarray(0, 5))).to.equal(5);
    expect(f.atBoundary).to.equal(false);
    expect(f.consume(long.subarray(5), true)).to.equal(long.length - 5);
    expect(f.atBoundary).to.equal(true);
  });

  it('close(): open WebSockets get a Close frame 1001 at once; the gateway does not wait for the deadline', async () => {
    const upstream = await startOpenWebUI({});
    const gw = await startGateway(baseEnv(upstream.url, { SHUTDOWN_GRACE_MS: '10000' }), { authenticator: stubAuthenticator(admin) });
    try {
      const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`);
      const messages: string[] = [];
      ws.on('message', (d) => messages.push(String(d)));
      await new Promise((r, j) => ws.once('open', r).once('error', j));
      await until('the hello', () => messages.length > 0 || undefined);
      const closed = new Promise<{ code: number; reason: string }>((r) => ws.once('close', (code, reason) => r({ code, reason: String(reason) })));
      const errors: Error[] = [];
      ws.on('error', (e) => errors.push(e));
      ws.send('x'.repeat(512 * 1024)); // an echo that may be in flight while closing
      const started = Date.now();
      await gw.close();
      const took = Date.now() - started;
      const { code, reason } = await closed;
      expect(code).to.equal(1001);
      expect(reason).to.equal('server shutting down');
      expect(errors).to.deep.equal([]);
      expect(took).to.be.lessThan(3_000);
      expect(messages.slice(1).every((m) => m.length === 512 * 1024)).to.equal(true);
      await until('the upstream socket closed', () => upstream.openSockets() === 0 || undefined);
    } finally {
      await gw.close().catch(() => {});
      await upstream.close();
    }
  });

  it('`npm start` on SIGTERM: stops accepting, lets a download finish within SHUTDOWN_GRACE_MS, cuts one past it, exits 0', async () => {
    // A slow upstream: /static/* needs no identity, so no sign-in is involved.
    const chunk = Buffer.alloc(16 * 1024, 'a');
    const slow = http.createServer((req, res) => {
      if (req.url === '/health') return void res.end('{"status":true}');
      if (req.url === '/api/config') {
        res.setHeader('content-type', 'application/json');
        return void res.end(JSON.stringify({ features: { enable_admin_export: false, enable_admin_chat_access: false } }));
      }
      const count = req.url === '/static/slow.bin' ? 10 : req.url === '/static/endless.bin' ? 1000 : 0;
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(count * chunk.length) });
      let sent = 0;
      const timer = setInterval(() => {
        if (sent === count || res.destroyed) {
          clearInterval(timer);
          return void res.end();
        }
        res.write(chunk);
        sent++;
      }, 150);
      res.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const port = await freePort();
    const grace = 4_000;
    const child = spawn('npm', ['start'], {
      cwd: ROOT,
      detached: true, // its own process group, so a failed test can stop npm and node together
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...baseEnv(`http://127.0.0.1:${(slow.address() as AddressInfo).port}`),
        PORT: String(port),
        HOST: '127.0.0.1',
        SHUTDOWN_GRACE_MS: String(grace),
      } as NodeJS.ProcessEnv,
    });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      // npm runs the script through `sh -c`, which dies of a signal without passing it on: a
      // supervisor (or `docker stop` with CMD node ...) signals the gateway process itself.
      const listening = await until('the gateway listening', () => output.split('\n').find((l) => l.includes('"gateway listening"')), { ms: 20_000 });
      const gatewayPid = (JSON.parse(listening) as { pid: number }).pid;
      expect(gatewayPid).to.not.equal(child.pid);
      const url = `http://127.0.0.1:${port}`;
      const download = (path: string) => {
        let first!: () => void;
        const firstByte = new Promise<void>((r) => (first = r));
        const done = new Promise<{ bytes: number; complete: boolean }>((finish) => {
          http
            .get(`${url}${path}`, (res) => {
              let bytes = 0;
              res.on('data', (d: Buffer) => {
                bytes += d.length;
                first();
              });
              res.on('close', () => finish({ bytes, complete: res.complete }));
            })
            .on('error', () => finish({ bytes: 0, complete: false }));
        });
        return { firstByte, done };
      };
      const fits = download('/static/slow.bin');
      const tooLong = download('/static/endless.bin');
      await Promise.all([fits.firstByte, tooLong.firstByte]);
      const signalledAt = Date.now();
      process.kill(gatewayPid, 'SIGTERM');
      await sleep(400);
      const refused = await fetch(`${url}/healthz`).then(
        () => false,
        () => true,
      );
      expect(refused, 'new connections are refused while draining').to.equal(true);
      const a = await fits.done;
      expect(a.complete).to.equal(true);
      expect(a.bytes).to.equal(10 * chunk.length);
      const b = await tooLong.done;
      expect(b.complete).to.equal(false);
      const code = await exited;
      const took = Date.now() - signalledAt;
      expect(code, `npm start exit code\n${output}`).to.equal(0);
      expect(took).to.be.within(grace - 500, grace + 4_000);
      expect(output).to.include('shutting down');
    } finally {
      if (child.exitCode === null) {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      slow.closeAllConnections();
      await new Promise<void>((r) => slow.close(() => r()));
    }
  });
});

describe('operations: GATEWAY_WORKERS without REDIS_URL', function () {
  this.timeout(20_000);
  let upstream: OpenWebUIStandIn;
  before(async () => {
    upstream = await startOpenWebUI();
  });
  after(async () => {
    await upstream?.close();
  });

  it('warns at start that a logout in one worker does not reach the others, and names REDIS_URL', async () => {
    const warned = (lines: Array<Record<string, unknown>>) =>
      lines.filter((l) => l.level === 40 && /GATEWAY_WORKERS > 1 without REDIS_URL/.test(String(l.msg)));
    const several = await startGateway(baseEnv(upstream.url, { GATEWAY_WORKERS: '2' }));
    const one = await startGateway(baseEnv(upstream.url));
    try {
      expect(warned(several.obs.lines as Array<Record<string, unknown>>)).to.have.length(1);
      expect(String(warned(several.obs.lines as Array<Record<string, unknown>>)[0]!.msg)).to.include('set REDIS_URL');
      expect(warned(one.obs.lines as Array<Record<string, unknown>>)).to.have.length(0);
    } finally {
      await several.close();
      await one.close();
    }
  });
});

describe('operations: two gateway instances behind one address', function () {
  this.timeout(20_000);
  let idp: TestIdp;
  let upstream: OpenWebUIStandIn;
  const gateways: Gateway[] = [];

  after(async () => {
    for (const g of gateways) await g.close();
    await idp?.close();
    await upstream?.close();
  });

  it('share SESSION_SECRET and nothing else: a login begun on one and finished on the other works on both', async () => {
    upstream = await startOpenWebUI({
      bypassAdminAccessControl: false,
      enableAdminExport: false,
      users: [{ id: 'u-sys', email: 'sysadmin@platform.example', name: 'Sam Sysadmin', role: 'admin', groups: [] }],
      files: [file('f-sys', 'u-sys'), file('f-other', 'u-other')],
    });
    const publicUrl = 'http://chat.platform.test'; // the load balancer's address
    idp = await startIdp({ clients: [{ client_id: 'chat-gateway', client_secret: 'lb-client-secret', redirect_uris: [`${publicUrl}/auth/callback`] }] });
    const env = {
      ...baseEnv(upstream.url),
      PUBLIC_URL: publicUrl,
      OIDC_ISSUER_URL: idp.issuer,
      OIDC_CLIENT_SECRET: 'lb-client-secret',
      SESSION_SECRET: 'shared-by-every-instance-0123456789abcdef',
      IDP_PROVIDERS_FILE: providersFile(),
    };
    const urls: string[] = [];
    for (let i = 0; i < 2; i++) {
      const g = await createGateway(loadSettings(env, { stageFiles: false }), { obs: capturingObservability() });
      gateways.push(g);
      urls.push((await g.start(0, '127.0.0.1')).url);
    }
    const [a, b] = urls as [string, string];
    // The load balancer sends /auth/start to A and the callback to B.
    const jar = new Jar(a);
    const start = await browse(jar, `${a}/auth/start?returnTo=%2F`);
    expect(start.status).to.equal(302);
    const { callbackUrl } = await loginThroughIdp(start.location!, 'sysadmin');
    const cb = new URL(callbackUrl);
    expect(cb.origin).to.equal(publicUrl);
    const callback = await browse(jar, `${b}${cb.pathname}${cb.search}`);
    expect(callback.status, callback.text).to.equal(302);
    for (const base of [a, b]) {
      const session = (await browse(jar, `${base}/auth/session`)).json<{ authenticated: boolean; user: { email: string } }>();
      expect(session.authenticated, base).to.equal(true);
      expect(session.user.email).to.equal('sysadmin@platform.example');
      const files = await browse(jar, `${base}/api/v1/files/`);
      expect(files.status, base).to.equal(200);
      expect(files.json<{ items: Array<{ id: string }> }>().items.map((f) => f.id)).to.deep.equal(['f-sys']);
    }
    // An instance with another SESSION_SECRET does not accept the cookie.
    const stranger = await createGateway(loadSettings({ ...env, SESSION_SECRET: 'a-different-secret-0123456789abcdefgh' }, { stageFiles: false }), {
      obs: capturingObservability(),
    });
    gateways.push(stranger);
    const { url: c } = await stranger.listen(0, '127.0.0.1');
    expect((await browse(jar, `${c}/auth/session`)).json<{ authenticated: boolean }>().authenticated).to.equal(false);
    expect((await browse(jar, `${c}/api/v1/files/`)).status).to.equal(401);
  });
});
