// `npm run soak`: mixed traffic through the gateway for minutes, then a verdict.
//
//   node --import tsx bench/soak.ts [--duration=180] [--connections=1000] [--websockets=200] [--logins=60]
//
// One process holds the realm (the real oidc-provider), the Open WebUI stand-in and the gateway
// (in-process, as test/hardening-load.test.ts runs the same traffic for a few seconds in CI).
// Traffic, from `connections` concurrent keep-alive connections (one virtual user each):
//   file lists, searches and counts (rewritten by the gateway), per-file reads, uploads (multipart,
//   1 to 64 KiB), server-sent events (chat completions), pages, static assets, the provider API,
//   session checks, the denied export; callers are code-flow sessions (logins run all along), realm
//   bearer JWTs and Open WebUI API keys; `websockets` WebSockets echo messages throughout.
// Verdict (exit 1 when it fails): no 5xx and no broken connection or stream anywhere; afterwards no
// client connection left on the gateway, no upstream request left hanging, heap (after GC) and open
// handles back near where they were after the warm-up.
import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { loadSettings } from '../config/settings.js';
import { createGateway, type Gateway } from '../gateway/server.js';
import { createObservability } from '../gateway/observability.js';
import { createOperations, type Operations } from '../gateway/operations.js';
import { startIdp, type TestIdp } from '../test/support/idp.js';
import { startOpenWebUI, type OpenWebUIStandIn, type StandInFile, type StandInUser } from '../test/support/open-webui.js';
import { demoIdentityProviders } from '../test/support/demo-realm.js';
import { signIn } from '../test/support/cookie-jar.js';

export interface SoakOptions {
  durationMs: number;
  connections: number;
  websockets: number;
  /** full code-flow logins spread over the run */
  logins: number;
  /** IDLE_TIMEOUT_MS of the gateway: idle upstream keep-alive sockets expire after it */
  idleTimeoutMs?: number;
  /** a virtual user's pause between two requests, ms (uniform in [0, thinkMs]); default 100 */
  thinkMs?: number;
  /** virtual users and WebSockets start spread over this long, ms; default min(2000, duration / 4) */
  rampMs?: number;
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
  websockets: { opened: number; messages: number; errors: number; openMs: number[] };
  logins: { ok: number; failed: number };
  peakConnections: number;
  memory: { heapBefore: number; heapAfter: number; rssBefore: number; rssAfter: number; rssPeak: number };
  handles: { before: number; after: number; detailAfter: Record<string, number> };
  leftOver: { gatewayConnections: number; upstreamBusy: number };
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

async function heapAfterGc(): Promise<number> {
  await sleep(50);
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

function handleCounts(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}
const totalHandles = () => process.getActiveResourcesInfo().length;

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
      files.push({ id, user_id: u.id, hash: null, filename: `${id}.txt`, data: { content: `text of ${id}` }, meta: { name: `${id}.txt`, content_type: 'text/plain', size: 12 }, created_at: now - i, updated_at: now - i });
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

interface World {
  idp: TestIdp;
  upstream: OpenWebUIStandIn;
  gateway: Gateway;
  ops: Operations;
  url: string;
  logLines: () => number;
  close(): Promise<void>;
}

async function startSoakWorld(idleTimeoutMs: number): Promise<World> {
  // Open WebUI set as the platform expects (BYPASS_ADMIN_ACCESS_CONTROL=false): a drifted upstream
  // makes every admin list a walk over all pages, which is tested elsewhere, not soaked.
  const upstream = await startOpenWebUI({ users: USERS, files: seedFiles(), bypassAdminAccessControl: false, enableAdminExport: true });
  // the gateway's port must be known to the realm (redirect URI) before it listens
  const probe = http.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const url = `http://127.0.0.1:${port}`;
  const idp = await startIdp({ clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${url}/auth/callback`], post_logout_redirect_uris: [`${url}/auth/login`] }], accessTokenTtl: 3600 });
  const providersFile = join(mkdtempSync(join(tmpdir(), 'soak-')), 'providers.json');
  writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
  const settings = loadSettings(
    {
      NODE_ENV: 'test',
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
      IDLE_TIMEOUT_MS: String(idleTimeoutMs),
      DRIFT_CHECK_SECONDS: '0',
      LOG_LEVEL: 'warn',
    },
    { stageFiles: false },
  );
  // Logs are counted and dropped: a soak must not measure its own log buffer.
  let lines = 0;
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines += chunk.toString('utf8').split('\n').filter(Boolean).length;
      done();
    },
  });
  const obs = createObservability({ level: 'warn', destination });
  let ops: Operations | undefined;
  const gateway = await createGateway(settings, {
    obs,
    extendControl(app, parts) {
      ops = createOperations(parts);
      ops.mount(app);
    },
  });
  await gateway.listen(port, '127.0.0.1');
  return {
    idp,
    upstream,
    gateway,
    ops: ops!,
    url,
    logLines: () => lines,
    async close() {
      await ops?.stop();
      await gateway.close();
      await upstream.close();
      await idp.close();
    },
  };
}

/** Run the mixed traffic and return the report (never throws for a failed verdict). */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => undefined);
  const idleTimeoutMs = options.idleTimeoutMs ?? 2_000;
  const world = await startSoakWorld(idleTimeoutMs);
  const { url, upstream, idp, gateway } = world;
  const stats = new Map<Kind | 'ws' | 'login', { latencies: number[]; statuses: Record<string, number> }>();
  const errorSamples: string[] = [];
  let serverErrors = 0;
  let clientErrors = 0;
  const fail = (what: string) => {
    clientErrors++;
    if (errorSamples.length < 20) errorSamples.push(what);
  };
  const record = (kind: Kind, status: number, ms: number) => {
    let s = stats.get(kind);
    if (!s) stats.set(kind, (s = { latencies: [], statuses: {} }));
    s.latencies.push(ms);
    s.statuses[status] = (s.statuses[status] ?? 0) + 1;
    if (status >= 500) {
      serverErrors++;
      if (errorSamples.length < 20) errorSamples.push(`${kind}: ${status}`);
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
      const { jar } = await signIn(url, username);
      sessions.push({ kind: 'session', headers: { cookie: jar.header('/') }, ownFile: `u-${username}-f2` });
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
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections, maxFreeSockets: options.connections });
  function send(kind: Kind, who: Caller): Promise<void> {
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
      req.on('timeout', () => req.destroy(new Error('no answer in 30 s')));
      req.on('error', (err) => {
        fail(`${kind} ${path}: ${err.message}`);
        resolve();
      });
      req.end(body);
    });
  }

  // ---- WebSockets ---------------------------------------------------------------------------
  const wsStats = { opened: 0, messages: 0, errors: 0, openMs: [] as number[] };
  const sockets: WebSocket[] = [];
  let running = true;
  async function websocket(i: number): Promise<void> {
    const who = bearers[i % bearers.length]!;
    const ws = new WebSocket(`${url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, { headers: who.headers });
    sockets.push(ws);
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
    let pending = 0;
    ws.on('message', (data) => {
      if (String(data).startsWith('soak ')) {
        wsStats.messages++;
        pending--;
      }
    });
    while (running && ws.readyState === WebSocket.OPEN) {
      if (pending > 5) {
        wsStats.errors++;
        fail('websocket: echoes stopped');
        break;
      }
      pending++;
      ws.send(`soak ${i} ${Date.now()}`);
      await sleep(150 + Math.random() * 150);
    }
  }

  // ---- warm-up, then the baseline -------------------------------------------------------------
  for (let i = 0; i < 20; i++) await send(pickKind(), caller());
  await sleep(idleTimeoutMs + 500); // warm-up keep-alive sockets expire
  upstream.requests.splice(0);
  const heapBefore = await heapAfterGc();
  const rssBefore = process.memoryUsage().rss;
  const handlesBefore = totalHandles();
  log(`baseline: heap ${(heapBefore / 1048576).toFixed(1)} MiB, rss ${(rssBefore / 1048576).toFixed(1)} MiB, handles ${handlesBefore}`);

  // ---- the run --------------------------------------------------------------------------------
  const started = Date.now();
  const deadline = started + options.durationMs;
  let rssPeak = rssBefore;
  let peakConnections = 0;
  const sampler = setInterval(() => {
    upstream.requests.splice(0); // the stand-in's own request log is not the gateway's memory
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    gateway.server.getConnections((_e, n) => (peakConnections = Math.max(peakConnections, n)));
  }, 200);
  let lastReport = started;
  let done = 0;
  const reporter = setInterval(() => {
    const total = [...stats.values()].reduce((s, x) => s + x.latencies.length, 0);
    const now = Date.now();
    log(
      `t+${((now - started) / 1000).toFixed(0)}s: ${total} requests (${(((total - done) * 1000) / (now - lastReport)).toFixed(0)}/s), ` +
        `5xx ${serverErrors}, errors ${clientErrors}, logins ${logins.ok}, ws messages ${wsStats.messages}, ` +
        `rss ${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB, heap ${(process.memoryUsage().heapUsed / 1048576).toFixed(0)} MiB, connections ${peakConnections}`,
    );
    done = total;
    lastReport = now;
  }, options.sampleEveryMs ?? 10_000);

  const thinkMs = options.thinkMs ?? 100;
  const rampMs = options.rampMs ?? Math.min(2_000, options.durationMs / 4);
  const users = Array.from({ length: options.connections }, async (_, i) => {
    await sleep((rampMs * i) / options.connections);
    const who = caller();
    while (Date.now() < deadline) {
      if (thinkMs) await sleep(Math.random() * thinkMs);
      const kind = pickKind();
      await send(kind, kind === 'upload' ? who : Math.random() < 0.9 ? who : caller());
      if (kind === 'upload' && who.lastUpload) await send('delete', who);
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
  for (const ws of sockets) ws.close(1000, 'soak over');
  await Promise.all(wsLoops);
  clearInterval(sampler);
  clearInterval(reporter);
  const durationMs = Date.now() - started;

  // ---- afterwards: nothing left, back to the baseline ----------------------------------------
  agent.destroy();
  for (const ws of sockets) ws.terminate();
  const settleUntil = Date.now() + idleTimeoutMs + 5_000;
  let gatewayConnections = Infinity;
  let upstreamBusy = Infinity;
  while (Date.now() < settleUntil) {
    gatewayConnections = await new Promise<number>((r) => gateway.server.getConnections((_e, n) => r(n)));
    upstreamBusy = Object.values(gateway.upstream.agent.sockets).reduce((s, list) => s + (list?.length ?? 0), 0);
    if (gatewayConnections === 0 && upstreamBusy === 0 && totalHandles() <= handlesBefore + HANDLE_SLACK) break;
    await sleep(100);
  }
  await sleep(idleTimeoutMs + 500); // idle upstream keep-alive sockets expire
  upstream.requests.splice(0);
  const heapAfter = await heapAfterGc();
  const rssAfter = process.memoryUsage().rss;
  const handlesAfter = totalHandles();
  const detailAfter = handleCounts();

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
  if (gatewayConnections !== 0) failures.push(`${gatewayConnections} client connections still open on the gateway`);
  if (upstreamBusy !== 0) failures.push(`${upstreamBusy} upstream requests still in flight`);
  if (heapAfter - heapBefore > HEAP_SLACK) failures.push(`heap grew ${((heapAfter - heapBefore) / 1048576).toFixed(1)} MiB after GC`);
  if (handlesAfter > handlesBefore + HANDLE_SLACK) failures.push(`${handlesAfter - handlesBefore} more open handles than after the warm-up`);
  if (options.websockets && wsStats.opened < options.websockets) failures.push(`only ${wsStats.opened} of ${options.websockets} WebSockets opened`);
  if (!logins.ok) failures.push('no login succeeded');

  await world.close();
  return {
    durationMs,
    requests,
    perSecond: Math.round((requests * 1000) / durationMs),
    byKind,
    serverErrors,
    clientErrors,
    errorSamples,
    websockets: wsStats,
    logins,
    peakConnections,
    memory: { heapBefore, heapAfter, rssBefore, rssAfter, rssPeak },
    handles: { before: handlesBefore, after: handlesAfter, detailAfter },
    leftOver: { gatewayConnections, upstreamBusy },
    failures,
  };
}

export function formatReport(r: SoakReport): string {
  const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
  const lines = [
    `soak: ${r.requests} requests in ${(r.durationMs / 1000).toFixed(1)} s (${r.perSecond}/s), peak ${r.peakConnections} client connections`,
    `  5xx: ${r.serverErrors}, broken: ${r.clientErrors}; logins ${r.logins.ok} ok, ${r.logins.failed} failed; websockets ${r.websockets.opened} opened (p99 ${percentile([...r.websockets.openMs].sort((a, b) => a - b), 99)} ms), ${r.websockets.messages} echoes, ${r.websockets.errors} errors`,
    ...Object.entries(r.byKind)
      .sort()
      .map(([k, s]) => `  ${k.padEnd(10)} ${String(s.count).padStart(7)}  p50 ${String(s.p50).padStart(5)} ms  p99 ${String(s.p99).padStart(5)} ms  max ${String(s.max).padStart(5)} ms  ${JSON.stringify(s.statuses)}`),
    `  heap after GC: ${mib(r.memory.heapBefore)} -> ${mib(r.memory.heapAfter)}; rss ${mib(r.memory.rssBefore)} -> ${mib(r.memory.rssAfter)} (peak ${mib(r.memory.rssPeak)})`,
    `  open handles: ${r.handles.before} -> ${r.handles.after} ${JSON.stringify(r.handles.detailAfter)}`,
    `  left over: ${r.leftOver.gatewayConnections} gateway connections, ${r.leftOver.upstreamBusy} upstream requests in flight`,
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
