// `npm run soak`: mixed traffic through the gateway for minutes, then a verdict.
//
//   npm run soak -- [--duration=180] [--connections=1000] [--websockets=200] [--logins=60] [--ramp=10] [--inline]
//
// The gateway runs alone in a child process (gateway/main.ts, as in production; its log goes to a
// file named at the start), measured through its own /metrics after a full GC (a preloaded SIGUSR2
// handler). This process holds the load, the realm (the real oidc-provider) and the Open WebUI
// stand-in. `--inline` runs the gateway in this process instead, as test/hardening-load.test.ts
// does for a few seconds in CI.
// Traffic: `connections` virtual users, each on its own keep-alive connection, started over `ramp`
// seconds: file lists, searches and counts (rewritten by the gateway), per-file reads, uploads
// (multipart, 1 to 64 KiB) each deleted again, server-sent events (chat completions), pages,
// static assets, the provider API and login page, session checks, the denied export; callers are
// code-flow sessions (`logins` run all along), realm bearer JWTs and Open WebUI API keys;
// `websockets` WebSockets echo messages throughout.
// Verdict (exit 1 when it fails): no 5xx and no broken connection, stream, login or WebSocket;
// afterwards no connection left (client side, on the gateway, toward Open WebUI once its idle
// timeout passed), heap after GC and open handles of the gateway back near the warm-up baseline.
// Latency is printed, not judged: the load generator and the stand-ins share two cores.
import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import WebSocket from 'ws';
import { loadSettings } from '../config/settings.js';
import { createGateway, type Gateway } from '../gateway/app.js';
import { createObservability } from '../gateway/observability/observability.js';
import { startIdp, type TestIdp } from '../sandbox/idp.js';
import { startOpenWebUI, type OpenWebUIStandIn, type StandInFile, type StandInUser } from '../sandbox/open-webui.js';
import { demoIdentityProviders } from '../sandbox/demo-realm.js';
import { gatewaySessionCookie } from './sign-in.js';
import { freePort } from './proc.js';

export interface SoakOptions {
  durationMs: number;
  connections: number;
  websockets: number;
  /** full code-flow logins spread over the run */
  logins: number;
  /** a virtual user's pause between two requests, ms (uniform in [0, thinkMs]); default 100 */
  thinkMs?: number;
  /** virtual users and WebSockets start spread over this long, ms; default min(2000, duration / 4) */
  rampMs?: number;
  /**
   * 'process' (npm run soak): the gateway runs alone in a child process (gateway/main.ts), as in
   * production, measured through its /metrics after a GC; 'inline' (the CI test): in this process.
   */
  gateway?: 'inline' | 'process';
  /** a WebSocket echo not back within this is lost: a stall, not a slow answer; default 30 s */
  echoLostMs?: number;
  /** progress lines (default: none) */
  log?: (line: string) => void;
  sampleEveryMs?: number;
}

export interface KindStats {
  count: number;
  statuses: Record<string, number>;
  p50: number;
  p99: number;
  max: number;
}

export interface SoakReport {
  durationMs: number;
  requests: number;
  perSecond: number;
  byKind: Record<string, KindStats>;
  /** answers with status >= 500 */
  serverErrors: number;
  /** socket errors, timeouts, truncated streams, unexpected bodies */
  clientErrors: number;
  errorSamples: string[];
  websockets: { opened: number; messages: number; errors: number; openMs: number[]; echoMs: number[] };
  logins: { ok: number; failed: number };
  peakConnections: number;
  /** of the gateway's process: heap after a full GC, resident set */
  memory: { heapBefore: number; heapAfter: number; rssBefore: number; rssAfter: number; rssPeak: number };
  handles: { before: number; after: number; detailAfter: Record<string, number> };
  /** gatewayConnections: null when the gateway runs in its own process (its handle count shows them) */
  leftOver: { gatewayConnections: number | null; clientConnections: number; upstreamSockets: number };
  /** the verdict's reasons, empty when it held */
  failures: string[];
}

const CLIENT_ID = 'chat-gateway';
const CLIENT_SECRET = 'soak-client-secret';
const SESSION_SECRET = 'soak-session-secret-0123456789abcdef-0123456789';
const HEAP_SLACK = 48 * 1024 * 1024;
const HANDLE_SLACK = 40;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A real GC between measurements, without --expose-gc on the command line. */
function collectGarbage(): void {
  v8.setFlagsFromString('--expose_gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  gc();
}

function handleCounts(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}
const totalHandles = () => process.getActiveResourcesInfo().length;

async function settle(probe: () => number, ms: number): Promise<number> {
  const until = Date.now() + ms;
  let v = probe();
  while (v > 0 && Date.now() < until) {
    await sleep(100);
    v = probe();
  }
  return v;
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The demo accounts as Open WebUI users (same emails, so trusted-header sign-in finds them). */
const USERS: StandInUser[] = [
  { id: 'u-sysadmin', email: 'sysadmin@platform.example', name: 'Sam Sysadmin', role: 'admin', groups: [] },
  { id: 'u-superuser', email: 'superuser@platform.example', name: 'Sue Superuser', role: 'admin', groups: [] },
  { id: 'u-alice', email: 'alice@acme.example', name: 'Alice Acme', role: 'user', groups: [] },
  { id: 'u-bob', email: 'bob@globex.example', name: 'Bob Globex', role: 'user', groups: [] },
];
const LOGIN_USERS = ['sysadmin', 'alice', 'bob', 'superuser'];

function seedFiles(): StandInFile[] {
  const now = Math.floor(Date.now() / 1000);
  const files: StandInFile[] = [];
  for (const u of USERS) {
    for (let i = 0; i < 20; i++) {
      const id = `${u.id}-f${i}`;
      files.push({
        id,
        user_id: u.id,
        hash: null,
        filename: `${id}.txt`,
        data: { content: `text of ${id}` },
        meta: { name: `${id}.txt`, content_type: 'text/plain', size: 12 },
        created_at: now - i,
        updated_at: now - i,
      });
    }
  }
  return files;
}

interface Caller {
  kind: 'session' | 'bearer' | 'api-key';
  headers: Record<string, string>;
  ownFile: string;
  /** the id of the caller's last upload, deleted by its next 'delete' (keeps the stand-in's store flat) */
  lastUpload?: string;
}

type Kind = 'list' | 'search' | 'count' | 'file' | 'upload' | 'delete' | 'sse' | 'page' | 'static' | 'providers' | 'session' | 'export' | 'healthz';
const MIX: Array<[Kind, number]> = [
  ['list', 20],
  ['search', 8],
  ['count', 5],
  ['file', 8],
  ['upload', 8],
  ['sse', 8],
  ['page', 6],
  ['static', 12],
  ['providers', 6],
  ['session', 6],
  ['export', 5],
  ['healthz', 8],
];
const MIX_TOTAL = MIX.reduce((s, [, w]) => s + w, 0);
function pickKind(): Kind {
  let r = Math.random() * MIX_TOTAL;
  for (const [k, w] of MIX) if ((r -= w) < 0) return k;
  return 'static';
}

/** The gateway under test, wherever it runs. */
interface GatewayUnderTest {
  url: string;
  /** where its log lines go (a child process only) */
  logFile?: string;
  /** heap after a full GC, rss and open handles of the gateway's process */
  measure(): Promise<{ heap: number; rss: number; handles: number; detail: Record<string, number> }>;
  /** its idle keep-alive sockets toward Open WebUI: what IDLE_TIMEOUT_MS does later, done now */
  dropIdleUpstreamSockets(): Promise<void>;
  /** client connections it holds (inline only: a child's show in its handle count) */
  connections(): Promise<number | undefined>;
  /** rss and heap now, without a GC (progress lines) */
  sample(): Promise<{ rss: number; heap: number }>;
  close(): Promise<void>;
}

interface World {
  idp: TestIdp;
  upstream: OpenWebUIStandIn;
  gateway: GatewayUnderTest;
  url: string;
  close(): Promise<void>;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Preloaded into the child: a full GC on SIGUSR2, so its /metrics can be read after one. */
const GC_ON_SIGNAL =
  "data:text/javascript,import v8 from 'node:v8';import vm from 'node:vm';v8.setFlagsFromString('--expose_gc');const gc=vm.runInNewContext('gc');process.on('SIGUSR2',()=>{gc();gc();});";

async function startSoakWorld(mode: 'inline' | 'process'): Promise<World> {
  // Open WebUI set as the platform expects (BYPASS_ADMIN_ACCESS_CONTROL=false): a drifted upstream
  // makes every admin list a walk over all pages, which is tested elsewhere, not soaked.
  const upstream = await startOpenWebUI({ users: USERS, files: seedFiles(), bypassAdminAccessControl: false, enableAdminExport: true });
  // What started is closed when a later step fails: a run that cannot start must still end.
  const started: { close(): Promise<void> }[] = [upstream];
  try {
    return await startGatewayAndRealm(mode, upstream, started);
  } catch (err) {
    for (const part of started.reverse()) await part.close().catch(() => undefined);
    throw err;
  }
}

async function startGatewayAndRealm(mode: 'inline' | 'process', upstream: OpenWebUIStandIn, started: { close(): Promise<void> }[]): Promise<World> {
  // the gateway's port must be known to the realm (redirect URI) before it listens
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const idp = await startIdp({
    clients: [
      { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${url}/auth/callback`], post_logout_redirect_uris: [`${url}/auth/login`] },
    ],
    accessTokenTtl: 3600,
  });
  started.push(idp);
  const providersFile = join(mkdtempSync(join(tmpdir(), 'soak-')), 'providers.json');
  writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: String(port),
    UPSTREAM_URL: upstream.url,
    PUBLIC_URL: url,
    OIDC_ISSUER_URL: idp.issuer,
    OIDC_CLIENT_ID: CLIENT_ID,
    OIDC_CLIENT_SECRET: CLIENT_SECRET,
    SESSION_SECRET,
    CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
    CHATUI_ENABLE_ADMIN_EXPORT: 'false',
    IDP_PROVIDERS_FILE: providersFile,
    IDP_TENANT_IDP_ALIASES: 'acme=acme-entra,globex=globex-okta',
    ALLOW_UPSTREAM_API_KEYS: 'true',
    DRIFT_CHECK_SECONDS: '0',
    LOG_LEVEL: 'warn',
  };
  const gateway = mode === 'process' ? await childGateway(env, url) : await inlineGateway(env, port, url);
  return {
    idp,
    upstream,
    gateway,
    url,
    async close() {
      await gateway.close();
      await upstream.close();
      await idp.close();
    },
  };
}

async function inlineGateway(env: Record<string, string>, port: number, url: string): Promise<GatewayUnderTest> {
  const settings = loadSettings(env, { stageFiles: false });
  // Logs are dropped: a soak must not measure its own log buffer.
  const destination = new Writable({ write: (_chunk, _enc, done) => done() });
  const obs = createObservability({ level: 'warn', destination });
  const gateway: Gateway = await createGateway(settings, { obs });
  try {
    await gateway.listen(port, '127.0.0.1');
  } catch (err) {
    await gateway.close();
    throw err;
  }
  return {
    url,
    async measure() {
      await sleep(50);
      collectGarbage();
      return { heap: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss, handles: totalHandles(), detail: handleCounts() };
    },
    async dropIdleUpstreamSockets() {
      for (const list of Object.values(gateway.upstream.agent.freeSockets)) for (const socket of list ?? []) socket.destroy();
      await sleep(200);
    },
    connections: () => new Promise((r) => gateway.server.getConnections((_e, n) => r(n))),
    sample: async () => ({ rss: process.memoryUsage().rss, heap: process.memoryUsage().heapUsed }),
    async close() {
      await gateway.close();
    },
  };
}

/** The child's UPSTREAM_TIMEOUT_MS (generous: Open WebUI's stand-in shares the soak's busy process) and IDLE_TIMEOUT_MS. */
const CHILD_UPSTREAM_TIMEOUT_MS = 15_000;
const CHILD_IDLE_MS = CHILD_UPSTREAM_TIMEOUT_MS + 1_000;

async function childGateway(env: Record<string, string>, url: string): Promise<GatewayUnderTest> {
  // its log (warnings and errors only) goes to a file, named in the report
  const logFile = join(mkdtempSync(join(tmpdir(), 'soak-gateway-')), 'gateway.log');
  const logFd = openSync(logFile, 'w');
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', '--import', GC_ON_SIGNAL, 'gateway/main.ts'], {
    cwd: ROOT,
    // idle keep-alive sockets toward Open WebUI expire soon, so that "nothing left" can be seen
    env: { ...process.env, ...env, UPSTREAM_TIMEOUT_MS: String(CHILD_UPSTREAM_TIMEOUT_MS), IDLE_TIMEOUT_MS: String(CHILD_IDLE_MS) },
    stdio: ['ignore', logFd, 'pipe'],
  });
  closeSync(logFd);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const until = Date.now() + 30_000;
  for (;;) {
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null || Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`the gateway did not start: ${stderr}`);
    }
    await sleep(200);
  }
  async function metrics(): Promise<Record<string, number>> {
    const text = await (await fetch(`${url}/metrics`)).text();
    const out: Record<string, number> = {};
    for (const line of text.split('\n')) {
      const m =
        /^(gateway_(?:nodejs_heap_size_used_bytes|process_resident_memory_bytes|nodejs_active_handles_total|nodejs_active_handles)(?:\{type="([^"]+)"\})?) ([0-9.e+]+)$/.exec(
          line,
        );
      if (m) out[m[2] ? `handles:${m[2]}` : m[1]!.replace('gateway_', '')] = Number(m[3]);
    }
    return out;
  }
  return {
    url,
    logFile,
    async measure() {
      child.kill('SIGUSR2');
      await sleep(300);
      const m = await metrics();
      const detail = Object.fromEntries(
        Object.entries(m)
          .filter(([k]) => k.startsWith('handles:'))
          .map(([k, v]) => [k.slice(8), v]),
      );
      return { heap: m.nodejs_heap_size_used_bytes ?? NaN, rss: m.process_resident_memory_bytes ?? NaN, handles: m.nodejs_active_handles_total ?? NaN, detail };
    },
    async dropIdleUpstreamSockets() {
      await sleep(CHILD_IDLE_MS + 1_000);
    },
    connections: async () => undefined,
    async sample() {
      const m = await metrics().catch(() => ({}) as Record<string, number>);
      return { rss: m.process_resident_memory_bytes ?? NaN, heap: m.nodejs_heap_size_used_bytes ?? NaN };
    },
    async close() {
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(15_000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** Run the mixed traffic and return the report (never throws for a failed verdict). */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const world = await startSoakWorld(options.gateway ?? 'inline');
  try {
    return await soak(world, options);
  } finally {
    await world.close();
  }
}

async function soak(world: World, options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => undefined);
  const mode = options.gateway ?? 'inline';
  const { url, upstream, idp, gateway } = world;
  log(
    `gateway ${url} (${mode === 'process' ? `its own process, log in ${gateway.logFile}` : 'in this process'}), Open WebUI stand-in ${upstream.url}, realm ${idp.url}`,
  );
  const stats = new Map<Kind | 'ws' | 'login', { latencies: number[]; statuses: Record<string, number> }>();
  const errorSamples: string[] = [];
  let serverErrors = 0;
  let clientErrors = 0;
  const serverErrorSamples: string[] = [];
  const fail = (what: string) => {
    clientErrors++;
    if (errorSamples.length < 15) errorSamples.push(what);
  };
  const record = (kind: Kind, status: number, ms: number) => {
    let s = stats.get(kind);
    if (!s) stats.set(kind, (s = { latencies: [], statuses: {} }));
    s.latencies.push(ms);
    s.statuses[status] = (s.statuses[status] ?? 0) + 1;
    if (status >= 500) {
      serverErrors++;
      if (serverErrorSamples.length < 5) serverErrorSamples.push(`${kind}: ${status}`);
    }
  };

  // ---- callers ----------------------------------------------------------------------------
  const bearerFor = async (username: string, userId: string): Promise<Caller> => ({
    kind: 'bearer',
    headers: { authorization: `Bearer ${await idp.accessTokenFor(username, CLIENT_ID)}` },
    ownFile: `${userId}-f0`,
  });
  const bearers = await Promise.all(LOGIN_USERS.map((u) => bearerFor(u, `u-${u}`)));
  const apiKeys: Caller[] = USERS.map((u) => ({ kind: 'api-key', headers: { authorization: `Bearer ${upstream.apiKeyFor(u.id)}` }, ownFile: `${u.id}-f1` }));
  const sessions: Caller[] = [];
  const logins = { ok: 0, failed: 0 };
  async function login(i: number): Promise<void> {
    const username = LOGIN_USERS[i % LOGIN_USERS.length]!;
    const started = Date.now();
    try {
      const cookie = await gatewaySessionCookie(url, username);
      sessions.push({ kind: 'session', headers: { cookie }, ownFile: `u-${username}-f2` });
      logins.ok++;
      let s = stats.get('login');
      if (!s) stats.set('login', (s = { latencies: [], statuses: {} }));
      s.latencies.push(Date.now() - started);
      s.statuses['302'] = (s.statuses['302'] ?? 0) + 1;
    } catch (err) {
      logins.failed++;
      fail(`login ${username}: ${(err as Error).message.slice(0, 200)}`);
    }
  }
  await login(0);
  const caller = (): Caller => {
    const r = Math.random();
    if (r < 0.4 && sessions.length) return sessions[Math.floor(Math.random() * sessions.length)]!;
    if (r < 0.8) return bearers[Math.floor(Math.random() * bearers.length)]!;
    return apiKeys[Math.floor(Math.random() * apiKeys.length)]!;
  };

  // ---- one request of each kind -----------------------------------------------------------
  // Client connections open right now (HTTP and WebSocket), and the most at once.
  let clientConnections = 0;
  let peakConnections = 0;
  const seen = new WeakSet<object>();
  function track(socket: { once(e: 'close', f: () => void): unknown }): void {
    if (seen.has(socket)) return;
    seen.add(socket);
    peakConnections = Math.max(peakConnections, ++clientConnections);
    socket.once('close', () => clientConnections--);
  }
  // One keep-alive connection per virtual user: `connections` really are concurrent connections.
  const agents: http.Agent[] = [];
  const warmAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  function send(kind: Kind, who: Caller, agent: http.Agent = warmAgent): Promise<void> {
    let method = 'GET';
    let path: string;
    let body: Buffer | undefined;
    const headers: Record<string, string> = { ...who.headers };
    switch (kind) {
      case 'list':
        path = `/api/v1/files/?page=1&content=${Math.random() < 0.5}`;
        break;
      case 'search':
        path = '/api/v1/files/search?filename=*f1*';
        break;
      case 'count':
        path = '/api/v1/files/count';
        break;
      case 'file':
        path = `/api/v1/files/${who.ownFile}/content`;
        break;
      case 'delete':
        method = 'DELETE';
        path = `/api/v1/files/${encodeURIComponent(who.lastUpload ?? 'none')}`;
        who.lastUpload = undefined;
        break;
      case 'upload': {
        method = 'POST';
        path = '/api/v1/files/?process=false';
        const boundary = `soak${randomBytes(8).toString('hex')}`;
        const payload = randomBytes(1024 + Math.floor(Math.random() * 63 * 1024));
        body = Buffer.concat([
          Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="soak.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
          payload,
          Buffer.from(`\r\n--${boundary}--\r\n`),
        ]);
        headers['content-type'] = `multipart/form-data; boundary=${boundary}`;
        break;
      }
      case 'sse':
        method = 'POST';
        path = '/api/chat/completions';
        body = Buffer.from(JSON.stringify({ stream: true, n: 3, model: 'soak', messages: [{ role: 'user', content: 'hi' }] }));
        headers['content-type'] = 'application/json';
        break;
      case 'page':
        path = `/c/${Math.floor(Math.random() * 100)}`;
        break;
      case 'static':
        path = '/static/app.js';
        break;
      case 'providers':
        path = ['/api/v1/auth-providers/', '/api/v1/auth-providers/tenants/acme', '/auth/login'][Math.floor(Math.random() * 3)]!;
        delete headers.authorization;
        delete headers.cookie;
        break;
      case 'session':
        path = '/auth/session';
        break;
      case 'export':
        path = '/api/v1/chats/all/db';
        break;
      case 'healthz':
        path = '/healthz';
        break;
    }
    if (body) headers['content-length'] = String(body.length);
    const started = Date.now();
    return new Promise<void>((resolve) => {
      const req = http.request(url + path, { method, headers, agent, timeout: 30_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('error', () => undefined);
        res.on('close', () => {
          const status = res.statusCode ?? 0;
          record(kind, status, Date.now() - started);
          if (!res.complete) fail(`${kind} ${path}: truncated answer (${status})`);
          else if (kind === 'sse' && status === 200 && !Buffer.concat(chunks).toString().includes('[DONE]')) fail(`sse: no [DONE]`);
          else if (kind === 'export' && status !== 401) fail(`export answered ${status}`);
          if (kind === 'upload' && status === 200) {
            try {
              who.lastUpload = (JSON.parse(Buffer.concat(chunks).toString()) as { id: string }).id;
            } catch {
              fail('upload: the answer is not JSON');
            }
          }
          resolve();
        });
      });
      req.on('socket', track);
      req.on('timeout', () => req.destroy(new Error('no answer in 30 s')));
      req.on('error', (err) => {
        fail(`${kind} ${path}: ${err.message} (${req.reusedSocket ? 'reused' : 'new'} connection, after ${Date.now() - started} ms)`);
        resolve();
      });
      req.end(body);
    });
  }

  // ---- WebSockets ---------------------------------------------------------------------------
  const wsStats = { opened: 0, messages: 0, errors: 0, openMs: [] as number[], echoMs: [] as number[] };
  const sockets: WebSocket[] = [];
  const closedBySoak = new WeakSet<WebSocket>();
  const echoLostMs = options.echoLostMs ?? 30_000;
  let running = true;
  async function websocket(i: number): Promise<void> {
    const who = bearers[i % bearers.length]!;
    const ws = new WebSocket(`${url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, { headers: who.headers });
    sockets.push(ws);
    ws.once('upgrade', (res) => track(res.socket));
    ws.on('error', (err) => {
      wsStats.errors++;
      fail(`websocket: ${err.message}`);
    });
    const opening = Date.now();
    await new Promise<void>((resolve) => {
      ws.once('open', () => {
        wsStats.opened++;
        wsStats.openMs.push(Date.now() - opening);
        resolve();
      });
      ws.once('close', () => resolve());
    });
    // Each echo is matched to what was sent: a duplicate cannot stand in for a lost one.
    const outstanding = new Set<number>();
    let sent = 0;
    ws.on('message', (data) => {
      const text = String(data);
      if (!text.startsWith('soak ')) return;
      const [, , seq, at] = text.split(' ');
      if (!outstanding.delete(Number(seq))) {
        wsStats.errors++;
        return fail(`websocket: an echo of nothing outstanding (${text})`);
      }
      wsStats.messages++;
      wsStats.echoMs.push(Date.now() - Number(at));
    });
    // Only the soak closes its sockets: a close by the gateway or Open WebUI is a broken socket.
    ws.on('close', (code) => {
      if (closedBySoak.has(ws)) return;
      wsStats.errors++;
      fail(`websocket: closed by the other side (${code}) with ${outstanding.size} echoes outstanding`);
    });
    const open = () => ws.readyState === WebSocket.OPEN;
    /** `done()` came true within `ms`, while the socket stayed open (and, `duringRun`, while the run lasts). */
    const within = async (done: () => boolean, ms: number, duringRun: boolean) => {
      const until = Date.now() + ms;
      while (!done() && open() && (!duringRun || running) && Date.now() < until) await sleep(20);
      return done() || (duringRun && !running);
    };
    // A busy gateway echoes late, not never: at most 5 echoes outstanding, then wait for them. Lost
    // is what does not come back within echoLostMs, during the run or before the socket closes.
    let stalled = false;
    while (running && open()) {
      if (outstanding.size > 5 && !(await within(() => outstanding.size <= 5, echoLostMs, true))) {
        stalled = true;
        wsStats.errors++;
        fail(`websocket: echoes stopped (${outstanding.size} outstanding for ${echoLostMs / 1000} s)`);
        break;
      }
      if (!running) break;
      outstanding.add(++sent);
      ws.send(`soak ${i} ${sent} ${Date.now()}`);
      await sleep(150 + Math.random() * 150);
    }
    if (!stalled && open() && !(await within(() => outstanding.size === 0, echoLostMs, false))) {
      wsStats.errors++;
      fail(`websocket: ${outstanding.size} echoes never came back`);
    }
    closedBySoak.add(ws);
    if (open()) ws.close(1000, 'soak over');
  }

  // ---- warm-up, then the baseline -------------------------------------------------------------
  for (let i = 0; i < 20; i++) await send(pickKind(), caller());
  await gateway.dropIdleUpstreamSockets();
  upstream.requests.splice(0);
  const before = await gateway.measure();
  const heapBefore = before.heap;
  const rssBefore = before.rss;
  const handlesBefore = before.handles;
  log(`baseline: heap ${(heapBefore / 1048576).toFixed(1)} MiB, rss ${(rssBefore / 1048576).toFixed(1)} MiB, handles ${handlesBefore}`);

  // ---- the run --------------------------------------------------------------------------------
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  const started = Date.now();
  const deadline = started + options.durationMs;
  let rssPeak = rssBefore;
  let latest = { rss: rssBefore, heap: heapBefore };
  const sampler = setInterval(() => {
    upstream.requests.splice(0); // the stand-in's own request log is not the gateway's memory
    void gateway.sample().then((m) => {
      latest = m;
      rssPeak = Math.max(rssPeak, m.rss);
    });
  }, 1_000);
  let lastReport = started;
  let done = 0;
  const reporter = setInterval(() => {
    const total = [...stats.values()].reduce((s, x) => s + x.latencies.length, 0);
    const now = Date.now();
    log(
      `t+${((now - started) / 1000).toFixed(0)}s: ${total} requests (${(((total - done) * 1000) / (now - lastReport)).toFixed(0)}/s), ` +
        `5xx ${serverErrors}, errors ${clientErrors}, logins ${logins.ok}, ws messages ${wsStats.messages}, ` +
        `soak loop delay max ${(loopDelay.max / 1e6).toFixed(0)} ms; gateway rss ${(latest.rss / 1048576).toFixed(0)} MiB, heap ${(latest.heap / 1048576).toFixed(0)} MiB; connections ${clientConnections} (peak ${peakConnections})`,
    );
    done = total;
    lastReport = now;
    loopDelay.reset();
  }, options.sampleEveryMs ?? 10_000);

  const thinkMs = options.thinkMs ?? 100;
  const rampMs = options.rampMs ?? Math.min(2_000, options.durationMs / 4);
  const users = Array.from({ length: options.connections }, async (_, i) => {
    await sleep((rampMs * i) / options.connections);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    const who = caller();
    while (Date.now() < deadline) {
      if (thinkMs) await sleep(Math.random() * thinkMs);
      const kind = pickKind();
      await send(kind, kind === 'upload' ? who : Math.random() < 0.9 ? who : caller(), agent);
      if (kind === 'upload' && who.lastUpload) await send('delete', who, agent);
    }
  });
  const wsLoops = Array.from({ length: options.websockets }, async (_, i) => {
    await sleep((rampMs * i) / Math.max(1, options.websockets));
    await websocket(i);
  });
  const loginLoop = (async () => {
    const gap = options.durationMs / Math.max(1, options.logins);
    for (let i = 1; i < options.logins && Date.now() < deadline; i++) {
      await login(i);
      await sleep(Math.max(0, gap - 50));
    }
  })();
  await Promise.all(users);
  running = false;
  await loginLoop;
  // A WebSocket still in its handshake when the run ends is given time to open (bounded): closing it
  // mid-handshake is the soak's doing, not a broken socket. One that never opens still fails the run.
  const openingUntil = Date.now() + 30_000;
  while (sockets.some((ws) => ws.readyState === WebSocket.CONNECTING) && Date.now() < openingUntil) await sleep(50);
  for (const ws of sockets)
    if (ws.readyState === WebSocket.CONNECTING) {
      closedBySoak.add(ws);
      ws.close(1000, 'soak over');
    }
  // each open socket waits for its last echoes, then closes itself
  await Promise.all(wsLoops);
  clearInterval(sampler);
  clearInterval(reporter);
  const durationMs = Date.now() - started;

  // ---- afterwards: nothing left, back to the baseline ----------------------------------------
  for (const a of [warmAgent, ...agents]) a.destroy();
  for (const ws of sockets) {
    closedBySoak.add(ws);
    ws.terminate();
  }
  const settleUntil = Date.now() + 10_000;
  let gatewayConnections: number | undefined = Infinity;
  while (Date.now() < settleUntil) {
    gatewayConnections = await gateway.connections();
    if (!gatewayConnections && clientConnections === 0) break;
    await sleep(100);
  }
  await gateway.dropIdleUpstreamSockets();
  const upstreamSockets = await settle(() => upstream.openSockets(), 5_000);
  upstream.requests.splice(0);
  const after = await gateway.measure();
  const heapAfter = after.heap;
  const rssAfter = after.rss;
  const handlesAfter = after.handles;
  const detailAfter = after.detail;

  const byKind: Record<string, KindStats> = {};
  let requests = 0;
  for (const [kind, s] of stats) {
    const sorted = [...s.latencies].sort((a, b) => a - b);
    byKind[kind] = { count: sorted.length, statuses: s.statuses, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0 };
    if (kind !== 'login') requests += sorted.length;
  }

  const failures: string[] = [];
  if (serverErrors) failures.push(`${serverErrors} answers with status >= 500`);
  if (clientErrors) failures.push(`${clientErrors} broken requests, streams, logins or sockets`);
  if (gatewayConnections) failures.push(`${gatewayConnections} client connections still open on the gateway`);
  if (clientConnections) failures.push(`${clientConnections} client connections still open`);
  if (upstreamSockets) failures.push(`${upstreamSockets} connections to Open WebUI still open after its idle timeout`);
  if (heapAfter - heapBefore > HEAP_SLACK) failures.push(`heap grew ${((heapAfter - heapBefore) / 1048576).toFixed(1)} MiB after GC`);
  if (handlesAfter > handlesBefore + HANDLE_SLACK) failures.push(`${handlesAfter - handlesBefore} more open handles than after the warm-up`);
  if (options.websockets && wsStats.opened < options.websockets) failures.push(`only ${wsStats.opened} of ${options.websockets} WebSockets opened`);
  if (!logins.ok) failures.push('no login succeeded');

  return {
    durationMs,
    requests,
    perSecond: Math.round((requests * 1000) / durationMs),
    byKind,
    serverErrors,
    clientErrors,
    errorSamples: [...serverErrorSamples, ...errorSamples],
    websockets: wsStats,
    logins,
    peakConnections,
    memory: { heapBefore, heapAfter, rssBefore, rssAfter, rssPeak },
    handles: { before: handlesBefore, after: handlesAfter, detailAfter },
    leftOver: { gatewayConnections: gatewayConnections ?? null, clientConnections, upstreamSockets },
    failures,
  };
}

export function formatReport(r: SoakReport): string {
  const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
  const lines = [
    `soak: ${r.requests} requests in ${(r.durationMs / 1000).toFixed(1)} s (${r.perSecond}/s), peak ${r.peakConnections} client connections`,
    `  5xx: ${r.serverErrors}, broken: ${r.clientErrors}; logins ${r.logins.ok} ok, ${r.logins.failed} failed; websockets ${r.websockets.opened} opened (p99 ${percentile(
      [...r.websockets.openMs].sort((a, b) => a - b),
      99,
    )} ms), ${r.websockets.messages} echoes (p99 ${percentile(
      [...r.websockets.echoMs].sort((a, b) => a - b),
      99,
    )} ms), ${r.websockets.errors} errors`,
    ...Object.entries(r.byKind)
      .sort()
      .map(
        ([k, s]) =>
          `  ${k.padEnd(10)} ${String(s.count).padStart(7)}  p50 ${String(s.p50).padStart(5)} ms  p99 ${String(s.p99).padStart(5)} ms  max ${String(s.max).padStart(5)} ms  ${JSON.stringify(s.statuses)}`,
      ),
    `  heap after GC: ${mib(r.memory.heapBefore)} -> ${mib(r.memory.heapAfter)}; rss ${mib(r.memory.rssBefore)} -> ${mib(r.memory.rssAfter)} (peak ${mib(r.memory.rssPeak)})`,
    `  open handles: ${r.handles.before} -> ${r.handles.after} ${JSON.stringify(r.handles.detailAfter)}`,
    `  left over: ${r.leftOver.gatewayConnections ?? 'n/a'} connections on the gateway, ${r.leftOver.clientConnections} client connections, ${r.leftOver.upstreamSockets} connections to Open WebUI`,
    ...(r.errorSamples.length ? ['  first errors:', ...r.errorSamples.map((e) => `    ${e}`)] : []),
    r.failures.length ? `FAILED: ${r.failures.join('; ')}` : 'held: no 5xx, nothing broken, nothing left open, memory and handles flat',
  ];
  return lines.join('\n');
}

function arg(name: string, fallback: number): number {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  const v = hit ? Number(hit.slice(name.length + 3)) : Number(process.env[`SOAK_${name.toUpperCase()}`] ?? fallback);
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} must be a number`);
  return v;
}

async function main(): Promise<void> {
  const options: SoakOptions = {
    durationMs: arg('duration', 180) * 1000,
    connections: arg('connections', 1000),
    websockets: arg('websockets', 200),
    logins: arg('logins', 60),
    rampMs: arg('ramp', 10) * 1000,
    gateway: process.argv.includes('--inline') ? 'inline' : 'process',
    sampleEveryMs: 10_000,
    log: (line) => console.log(line),
  };
  console.log(`soak: ${options.durationMs / 1000} s, ${options.connections} connections, ${options.websockets} websockets, ${options.logins} logins`);
  const report = await runSoak(options);
  console.log(formatReport(report));
  process.exitCode = report.failures.length ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: Error) => {
    console.error(err);
    process.exit(1);
  });
}
