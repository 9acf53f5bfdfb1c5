// `npm run soak -- [--duration=180] [--connections=1000] [--websockets=200] [--logins=60] [--ramp=10]
// [--inline]`: mixed traffic through the gateway (in its own process, as in production) for minutes,
// then a verdict: no failure, and nothing left behind afterwards (bench/README.md, "Running it").
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import WebSocket from 'ws';
import { gatewaySessionCookie } from './sign-in.js';
import { sleep } from './proc.js';
import { percentile } from './load.js';
import { CLIENT_ID, LOGIN_USERS, USERS, startSoakWorld, type World } from './soak-world.js';

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

const HEAP_SLACK = 48 * 1024 * 1024;
const HANDLE_SLACK = 40;

async function settle(probe: () => number, ms: number): Promise<number> {
  const until = Date.now() + ms;
  let v = probe();
  while (v > 0 && Date.now() < until) {
    await sleep(100);
    v = probe();
  }
  return v;
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

/** Run the mixed traffic and return the report (never throws for a failed verdict). */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const world = await startSoakWorld(options.gateway ?? 'inline');
  try {
    return await soak(world, options);
  } finally {
    await world.close();
  }
}

/** What the run counted: each request's latency and status by kind, and what broke. */
class Tally {
  readonly stats = new Map<Kind | 'ws' | 'login', { latencies: number[]; statuses: Record<string, number> }>();
  serverErrors = 0;
  clientErrors = 0;
  private readonly errorSamples: string[] = [];
  private readonly serverErrorSamples: string[] = [];

  fail(what: string): void {
    this.clientErrors++;
    if (this.errorSamples.length < 15) this.errorSamples.push(what);
  }

  record(kind: Kind | 'login', status: number, ms: number): void {
    let s = this.stats.get(kind);
    if (!s) this.stats.set(kind, (s = { latencies: [], statuses: {} }));
    s.latencies.push(ms);
    s.statuses[status] = (s.statuses[status] ?? 0) + 1;
    if (status >= 500) {
      this.serverErrors++;
      if (this.serverErrorSamples.length < 5) this.serverErrorSamples.push(`${kind}: ${status}`);
    }
  }

  /** requests answered so far, logins included */
  total(): number {
    return [...this.stats.values()].reduce((n, x) => n + x.latencies.length, 0);
  }

  samples(): string[] {
    return [...this.serverErrorSamples, ...this.errorSamples];
  }

  /** Latencies by kind, and the requests of the traffic (logins are not). */
  byKind(): { byKind: Record<string, KindStats>; requests: number } {
    const byKind: Record<string, KindStats> = {};
    let requests = 0;
    for (const [kind, s] of this.stats) {
      const sorted = [...s.latencies].sort((a, b) => a - b);
      byKind[kind] = { count: sorted.length, statuses: s.statuses, p50: rank(sorted, 50), p99: rank(sorted, 99), max: sorted.at(-1) ?? 0 };
      if (kind !== 'login') requests += sorted.length;
    }
    return { byKind, requests };
  }
}

/** A percentile of sorted latencies, 0 when there are none. */
const rank = (sorted: number[], p: number) => (sorted.length ? percentile(sorted, p) : 0);

/** Client connections open right now (HTTP and WebSocket), and the most at once. */
class ClientConnections {
  open = 0;
  peak = 0;
  private readonly seen = new WeakSet<object>();

  readonly track = (socket: { once(e: 'close', f: () => void): unknown }): void => {
    if (this.seen.has(socket)) return;
    this.seen.add(socket);
    this.peak = Math.max(this.peak, ++this.open);
    socket.once('close', () => this.open--);
  };
}

/** Who sends the traffic: realm bearer JWTs, Open WebUI API keys, and code-flow sessions made all along. */
interface Callers {
  bearers: Caller[];
  logins: { ok: number; failed: number };
  /** a session 40 % of the time (once there is one), a bearer 40 %, an API key 20 % */
  pick(): Caller;
  /** one more code-flow login, by the i-th login user */
  login(i: number): Promise<void>;
}

async function prepareCallers({ url, idp, upstream }: World, tally: Tally): Promise<Callers> {
  const bearers = await Promise.all(
    LOGIN_USERS.map(async (u): Promise<Caller> => ({
      kind: 'bearer',
      headers: { authorization: `Bearer ${await idp.accessTokenFor(u, CLIENT_ID)}` },
      ownFile: `u-${u}-f0`,
    })),
  );
  const apiKeys: Caller[] = USERS.map((u) => ({ kind: 'api-key', headers: { authorization: `Bearer ${upstream.apiKeyFor(u.id)}` }, ownFile: `${u.id}-f1` }));
  const sessions: Caller[] = [];
  const logins = { ok: 0, failed: 0 };
  const any = (list: Caller[]) => list[Math.floor(Math.random() * list.length)]!;
  const callers: Callers = {
    bearers,
    logins,
    pick() {
      const r = Math.random();
      if (r < 0.4 && sessions.length) return any(sessions);
      return r < 0.8 ? any(bearers) : any(apiKeys);
    },
    async login(i) {
      const username = LOGIN_USERS[i % LOGIN_USERS.length]!;
      const started = Date.now();
      try {
        const cookie = await gatewaySessionCookie(url, username);
        sessions.push({ kind: 'session', headers: { cookie }, ownFile: `u-${username}-f2` });
        logins.ok++;
        tally.record('login', 302, Date.now() - started);
      } catch (err) {
        logins.failed++;
        tally.fail(`login ${username}: ${(err as Error).message.slice(0, 200)}`);
      }
    },
  };
  await callers.login(0);
  return callers;
}

/** A multipart upload of 1 to 64 KiB of random bytes. */
function uploadBody(): { body: Buffer; contentType: string } {
  const boundary = `soak${randomBytes(8).toString('hex')}`;
  const payload = randomBytes(1024 + Math.floor(Math.random() * 63 * 1024));
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="soak.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    payload,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

interface SoakRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

/** The request of one kind, as `who` sends it (a delete takes `who`'s last upload). */
function requestOf(kind: Kind, who: Caller): SoakRequest {
  const headers: Record<string, string> = { ...who.headers };
  const get = (path: string): SoakRequest => ({ method: 'GET', path, headers });
  switch (kind) {
    case 'list':
      return get(`/api/v1/files/?page=1&content=${Math.random() < 0.5}`);
    case 'search':
      return get('/api/v1/files/search?filename=*f1*');
    case 'count':
      return get('/api/v1/files/count');
    case 'file':
      return get(`/api/v1/files/${who.ownFile}/content`);
    case 'delete': {
      const path = `/api/v1/files/${encodeURIComponent(who.lastUpload ?? 'none')}`;
      who.lastUpload = undefined;
      return { method: 'DELETE', path, headers };
    }
    case 'upload': {
      const { body, contentType } = uploadBody();
      return { method: 'POST', path: '/api/v1/files/?process=false', headers: { ...headers, 'content-type': contentType }, body };
    }
    case 'sse': {
      const body = Buffer.from(JSON.stringify({ stream: true, n: 3, model: 'soak', messages: [{ role: 'user', content: 'hi' }] }));
      return { method: 'POST', path: '/api/chat/completions', headers: { ...headers, 'content-type': 'application/json' }, body };
    }
    case 'page':
      return get(`/c/${Math.floor(Math.random() * 100)}`);
    case 'static':
      return get('/static/app.js');
    case 'providers':
      delete headers.authorization;
      delete headers.cookie;
      return get(['/api/v1/auth-providers/', '/api/v1/auth-providers/tenants/acme', '/auth/login'][Math.floor(Math.random() * 3)]!);
    case 'session':
      return get('/auth/session');
    case 'export':
      return get('/api/v1/chats/all/db');
    case 'healthz':
      return get('/healthz');
  }
}

/** What sending needs: where, what is counted, and who tracks the connections. */
interface Sender {
  url: string;
  tally: Tally;
  connections: ClientConnections;
}

/** What is wrong with an answer of this kind, if anything; an upload's id is kept for its delete. */
function answerProblems(kind: Kind, path: string, res: http.IncomingMessage, text: () => string, who: Caller): string[] {
  const status = res.statusCode ?? 0;
  const problems: string[] = [];
  if (!res.complete) problems.push(`${kind} ${path}: truncated answer (${status})`);
  else if (kind === 'sse' && status === 200 && !text().includes('[DONE]')) problems.push('sse: no [DONE]');
  else if (kind === 'export' && status !== 401) problems.push(`export answered ${status}`);
  if (kind === 'upload' && status === 200) {
    try {
      who.lastUpload = (JSON.parse(text()) as { id: string }).id;
    } catch {
      problems.push('upload: the answer is not JSON');
    }
  }
  return problems;
}

/** One request of `kind` over `agent`; its latency and status are counted, a broken one is a failure. */
function send({ url, tally, connections }: Sender, kind: Kind, who: Caller, agent: http.Agent): Promise<void> {
  const { method, path, headers, body } = requestOf(kind, who);
  if (body) headers['content-length'] = String(body.length);
  const started = Date.now();
  return new Promise<void>((resolve) => {
    const req = http.request(url + path, { method, headers, agent, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('error', () => undefined);
      res.on('close', () => {
        tally.record(kind, res.statusCode ?? 0, Date.now() - started);
        for (const problem of answerProblems(kind, path, res, () => Buffer.concat(chunks).toString(), who)) tally.fail(problem);
        resolve();
      });
    });
    req.on('socket', connections.track);
    req.on('timeout', () => req.destroy(new Error('no answer in 30 s')));
    req.on('error', (err) => {
      tally.fail(`${kind} ${path}: ${err.message} (${req.reusedSocket ? 'reused' : 'new'} connection, after ${Date.now() - started} ms)`);
      resolve();
    });
    req.end(body);
  });
}

/** The run's WebSockets: what they did, and whether the run still lasts. */
interface Sockets {
  stats: SoakReport['websockets'];
  all: WebSocket[];
  /** closed by the soak itself: their close is no failure */
  closedBySoak: WeakSet<WebSocket>;
  echoLostMs: number;
  running: boolean;
}

/** Opens a WebSocket as `who`; resolves once it is open, or closed without opening. */
async function openSocket(s: Sender, ws: Sockets, who: Caller): Promise<WebSocket> {
  const socket = new WebSocket(`${s.url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, { headers: who.headers });
  ws.all.push(socket);
  socket.once('upgrade', (res) => s.connections.track(res.socket));
  socket.on('error', (err) => {
    ws.stats.errors++;
    s.tally.fail(`websocket: ${err.message}`);
  });
  const opening = Date.now();
  await new Promise<void>((resolve) => {
    socket.once('open', () => {
      ws.stats.opened++;
      ws.stats.openMs.push(Date.now() - opening);
      resolve();
    });
    socket.once('close', () => resolve());
  });
  return socket;
}

/** Echoes matched to what was sent (a duplicate cannot stand in for a lost one); a close by the other side fails. */
function watchEchoes(s: Sender, ws: Sockets, socket: WebSocket, outstanding: Set<number>): void {
  socket.on('message', (data) => {
    const text = String(data);
    if (!text.startsWith('soak ')) return;
    const [, , seq, at] = text.split(' ');
    if (!outstanding.delete(Number(seq))) {
      ws.stats.errors++;
      return s.tally.fail(`websocket: an echo of nothing outstanding (${text})`);
    }
    ws.stats.messages++;
    ws.stats.echoMs.push(Date.now() - Number(at));
  });
  // Only the soak closes its sockets: a close by the gateway or Open WebUI is a broken socket.
  socket.on('close', (code) => {
    if (ws.closedBySoak.has(socket)) return;
    ws.stats.errors++;
    s.tally.fail(`websocket: closed by the other side (${code}) with ${outstanding.size} echoes outstanding`);
  });
}

/** The i-th WebSocket: echoes all along the run, at most 5 outstanding; then its last echoes, then closed. */
async function websocket(s: Sender, ws: Sockets, i: number, who: Caller): Promise<void> {
  const socket = await openSocket(s, ws, who);
  const outstanding = new Set<number>();
  watchEchoes(s, ws, socket, outstanding);
  const open = () => socket.readyState === WebSocket.OPEN;
  /** `done()` came true within `ms`, while the socket stayed open (and, `duringRun`, while the run lasts). */
  const within = async (done: () => boolean, ms: number, duringRun: boolean) => {
    const until = Date.now() + ms;
    while (!done() && open() && (!duringRun || ws.running) && Date.now() < until) await sleep(20);
    return done() || (duringRun && !ws.running);
  };
  // A busy gateway echoes late, not never: at most 5 echoes outstanding, then wait for them. Lost
  // is what does not come back within echoLostMs, during the run or before the socket closes.
  let stalled = false;
  let sent = 0;
  while (ws.running && open()) {
    if (outstanding.size > 5 && !(await within(() => outstanding.size <= 5, ws.echoLostMs, true))) {
      stalled = true;
      ws.stats.errors++;
      s.tally.fail(`websocket: echoes stopped (${outstanding.size} outstanding for ${ws.echoLostMs / 1000} s)`);
      break;
    }
    if (!ws.running) break;
    outstanding.add(++sent);
    socket.send(`soak ${i} ${sent} ${Date.now()}`);
    await sleep(150 + Math.random() * 150);
  }
  if (!stalled && open() && !(await within(() => outstanding.size === 0, ws.echoLostMs, false))) {
    ws.stats.errors++;
    s.tally.fail(`websocket: ${outstanding.size} echoes never came back`);
  }
  ws.closedBySoak.add(socket);
  if (open()) socket.close(1000, 'soak over');
}

/** The gateway's memory, sampled each second while the run lasts (its peak RSS), without a GC. */
function sampleMemory(world: World, from: { rss: number; heap: number }): { latest: { rss: number; heap: number }; rssPeak: number; stop(): void } {
  const sampled = { latest: from, rssPeak: from.rss, stop: () => clearInterval(timer) };
  const timer = setInterval(() => {
    world.upstream.requests.splice(0); // the stand-in's own request log is not the gateway's memory
    void world.gateway.sample().then((m) => {
      sampled.latest = m;
      sampled.rssPeak = Math.max(sampled.rssPeak, m.rss);
    });
  }, 1_000);
  return sampled;
}

/** A progress line every `everyMs`, given the soak's own longest event-loop delay since the last one (ms). */
function reportProgress(log: (line: string) => void, everyMs: number, line: (loopDelayMs: number) => string): () => void {
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  const timer = setInterval(() => {
    log(line(loopDelay.max / 1e6));
    loopDelay.reset();
  }, everyMs);
  return () => {
    clearInterval(timer);
    loopDelay.disable();
  };
}

/** `connections` virtual users, each on its own keep-alive connection, sending the mix until `deadline`. */
function virtualUsers(
  s: Sender,
  callers: Callers,
  o: { connections: number; thinkMs: number; rampMs: number; deadline: number; agents: http.Agent[] },
): Promise<void>[] {
  return Array.from({ length: o.connections }, async (_, i) => {
    await sleep((o.rampMs * i) / o.connections);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    o.agents.push(agent);
    const who = callers.pick();
    while (Date.now() < o.deadline) {
      if (o.thinkMs) await sleep(Math.random() * o.thinkMs);
      const kind = pickKind();
      await send(s, kind, kind === 'upload' ? who : Math.random() < 0.9 ? who : callers.pick(), agent);
      if (kind === 'upload' && who.lastUpload) await send(s, 'delete', who, agent);
    }
  });
}

/** Logins spread evenly over the run. */
async function loginsAlong(callers: Callers, logins: number, durationMs: number, deadline: number): Promise<void> {
  const gap = durationMs / Math.max(1, logins);
  for (let i = 1; i < logins && Date.now() < deadline; i++) {
    await callers.login(i);
    await sleep(Math.max(0, gap - 50));
  }
}

/** The run ends: sockets still in their handshake get time to open (bounded), then every socket ends its way. */
async function endSockets(ws: Sockets, loops: Promise<void>[]): Promise<void> {
  // Closing one mid-handshake is the soak's doing, not a broken socket; one that never opens still fails the run.
  const openingUntil = Date.now() + 30_000;
  while (ws.all.some((socket) => socket.readyState === WebSocket.CONNECTING) && Date.now() < openingUntil) await sleep(50);
  for (const socket of ws.all)
    if (socket.readyState === WebSocket.CONNECTING) {
      ws.closedBySoak.add(socket);
      socket.close(1000, 'soak over');
    }
  // each open socket waits for its last echoes, then closes itself
  await Promise.all(loops);
}

/** The mixed traffic from start to end; what the gateway's memory peaked at. */
async function drive(
  world: World,
  options: SoakOptions,
  s: Sender,
  callers: Callers,
  ws: Sockets,
  agents: http.Agent[],
  baseline: { rss: number; heap: number },
) {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const deadline = started + options.durationMs;
  const memory = sampleMemory(world, baseline);
  let lastReport = started;
  let done = 0;
  const stopProgress = reportProgress(log, options.sampleEveryMs ?? 10_000, (loopDelayMs) => {
    const total = s.tally.total();
    const now = Date.now();
    const line =
      `t+${((now - started) / 1000).toFixed(0)}s: ${total} requests (${(((total - done) * 1000) / (now - lastReport)).toFixed(0)}/s), ` +
      `5xx ${s.tally.serverErrors}, errors ${s.tally.clientErrors}, logins ${callers.logins.ok}, ws messages ${ws.stats.messages}, ` +
      `soak loop delay max ${loopDelayMs.toFixed(0)} ms; gateway rss ${(memory.latest.rss / 1048576).toFixed(0)} MiB, heap ${(memory.latest.heap / 1048576).toFixed(0)} MiB; connections ${s.connections.open} (peak ${s.connections.peak})`;
    done = total;
    lastReport = now;
    return line;
  });
  const rampMs = options.rampMs ?? Math.min(2_000, options.durationMs / 4);
  const users = virtualUsers(s, callers, { connections: options.connections, thinkMs: options.thinkMs ?? 100, rampMs, deadline, agents });
  const wsLoops = Array.from({ length: options.websockets }, async (_, i) => {
    await sleep((rampMs * i) / Math.max(1, options.websockets));
    await websocket(s, ws, i, callers.bearers[i % callers.bearers.length]!);
  });
  const loginLoop = loginsAlong(callers, options.logins, options.durationMs, deadline);
  await Promise.all(users);
  ws.running = false;
  await loginLoop;
  await endSockets(ws, wsLoops);
  memory.stop();
  stopProgress();
  return { durationMs: Date.now() - started, rssPeak: memory.rssPeak };
}

/** Afterwards: every client connection and socket closed, the gateway's connections counted until they are gone. */
async function leftOver(world: World, s: Sender, ws: Sockets, agents: http.Agent[]): Promise<Omit<SoakReport['leftOver'], 'clientConnections'>> {
  for (const a of agents) a.destroy();
  for (const socket of ws.all) {
    ws.closedBySoak.add(socket);
    socket.terminate();
  }
  const settleUntil = Date.now() + 10_000;
  let gatewayConnections: number | undefined = Infinity;
  while (Date.now() < settleUntil) {
    gatewayConnections = await world.gateway.connections();
    if (!gatewayConnections && s.connections.open === 0) break;
    await sleep(100);
  }
  await world.gateway.dropIdleUpstreamSockets();
  const upstreamSockets = await settle(() => world.upstream.openSockets(), 5_000);
  return { gatewayConnections: gatewayConnections ?? null, upstreamSockets };
}

/** The verdict's reasons: what broke, what was left open, what grew. */
function failuresOf(r: Omit<SoakReport, 'failures'>, options: SoakOptions): string[] {
  const failures: string[] = [];
  const { memory, handles, leftOver } = r;
  if (r.serverErrors) failures.push(`${r.serverErrors} answers with status >= 500`);
  if (r.clientErrors) failures.push(`${r.clientErrors} broken requests, streams, logins or sockets`);
  if (leftOver.gatewayConnections) failures.push(`${leftOver.gatewayConnections} client connections still open on the gateway`);
  if (leftOver.clientConnections) failures.push(`${leftOver.clientConnections} client connections still open`);
  if (leftOver.upstreamSockets) failures.push(`${leftOver.upstreamSockets} connections to Open WebUI still open after its idle timeout`);
  if (memory.heapAfter - memory.heapBefore > HEAP_SLACK)
    failures.push(`heap grew ${((memory.heapAfter - memory.heapBefore) / 1048576).toFixed(1)} MiB after GC`);
  if (handles.after > handles.before + HANDLE_SLACK) failures.push(`${handles.after - handles.before} more open handles than after the warm-up`);
  if (options.websockets && r.websockets.opened < options.websockets) failures.push(`only ${r.websockets.opened} of ${options.websockets} WebSockets opened`);
  if (!r.logins.ok) failures.push('no login succeeded');
  return failures;
}

async function soak(world: World, options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => undefined);
  const { url, upstream, idp, gateway } = world;
  log(
    `gateway ${url} (${(options.gateway ?? 'inline') === 'process' ? `its own process, log in ${gateway.logFile}` : 'in this process'}), Open WebUI stand-in ${upstream.url}, realm ${idp.url}`,
  );
  const s: Sender = { url, tally: new Tally(), connections: new ClientConnections() };
  const callers = await prepareCallers(world, s.tally);
  const ws: Sockets = {
    stats: { opened: 0, messages: 0, errors: 0, openMs: [], echoMs: [] },
    all: [],
    closedBySoak: new WeakSet(),
    echoLostMs: options.echoLostMs ?? 30_000,
    running: true,
  };
  // warm-up, then the baseline
  const warmAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < 20; i++) await send(s, pickKind(), callers.pick(), warmAgent);
  await gateway.dropIdleUpstreamSockets();
  upstream.requests.splice(0);
  const before = await gateway.measure();
  log(`baseline: heap ${(before.heap / 1048576).toFixed(1)} MiB, rss ${(before.rss / 1048576).toFixed(1)} MiB, handles ${before.handles}`);
  const agents = [warmAgent];
  const { durationMs, rssPeak } = await drive(world, options, s, callers, ws, agents, before);
  // afterwards: nothing left, back to the baseline
  const left = await leftOver(world, s, ws, agents);
  upstream.requests.splice(0);
  const after = await gateway.measure();
  const { byKind, requests } = s.tally.byKind();
  const report: Omit<SoakReport, 'failures'> = {
    durationMs,
    requests,
    perSecond: Math.round((requests * 1000) / durationMs),
    byKind,
    serverErrors: s.tally.serverErrors,
    clientErrors: s.tally.clientErrors,
    errorSamples: s.tally.samples(),
    websockets: ws.stats,
    logins: callers.logins,
    peakConnections: s.connections.peak,
    memory: { heapBefore: before.heap, heapAfter: after.heap, rssBefore: before.rss, rssAfter: after.rss, rssPeak },
    handles: { before: before.handles, after: after.handles, detailAfter: after.detail },
    leftOver: { gatewayConnections: left.gatewayConnections, clientConnections: s.connections.open, upstreamSockets: left.upstreamSockets },
  };
  return { ...report, failures: failuresOf(report, options) };
}

export function formatReport(r: SoakReport): string {
  const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
  const lines = [
    `soak: ${r.requests} requests in ${(r.durationMs / 1000).toFixed(1)} s (${r.perSecond}/s), peak ${r.peakConnections} client connections`,
    `  5xx: ${r.serverErrors}, broken: ${r.clientErrors}; logins ${r.logins.ok} ok, ${r.logins.failed} failed; websockets ${r.websockets.opened} opened (p99 ${rank(
      [...r.websockets.openMs].sort((a, b) => a - b),
      99,
    )} ms), ${r.websockets.messages} echoes (p99 ${rank(
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
