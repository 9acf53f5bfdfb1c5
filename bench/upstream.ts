// The fast upstream of the benchmark: plain node:http plus ws, every answer prepared once, so the
// upstream costs as little as a node server can and every peer in front of it pays the same. Not the
// Open WebUI stand-in: it answers only what the scenarios ask, in Open WebUI's shapes where the
// gateway reads the answer. Prints `{"port":N}` once listening; exits when its stdin closes.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { countMarkCompacts } from './gc-count.js';

export const BENCH_USER_ID = 'b3f0c9e2-5d1a-4c6b-9e7f-000000000001';
export const BENCH_API_KEY = 'sk-bench0000000000000000000000000000';
export const BENCH_UPSTREAM_TOKEN = 'bench-upstream-session-token';
export const FILES_PAGE_ITEMS = 1000;

/** The files page Open WebUI would answer, 1,000 records with meta, all the bench user's. */
export function filesPage(userId = BENCH_USER_ID, count = FILES_PAGE_ITEMS): { items: object[]; total: number } {
  const items = [];
  const t0 = 1_735_689_600;
  for (let i = 0; i < count; i++) {
    const id = `f${String(i).padStart(7, '0')}-7c2e-4d8a-9b1f-3a5e6c7d8e9f`;
    items.push({
      id,
      user_id: userId,
      hash: `${((i * 2654435761) >>> 0).toString(16).padStart(8, '0')}a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff`.slice(0, 64),
      filename: `report-${i}.pdf`,
      data: { status: 'completed' },
      meta: { name: `report-${i}.pdf`, content_type: 'application/pdf', size: 10_000 + i * 37, collection_name: `file-${id}` },
      access_control: null,
      created_at: t0 + i,
      updated_at: t0 + i,
    });
  }
  return { items, total: count };
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const SMALL = json({ id: 'chat-0001', title: 'Hello', archived: false, updated_at: 1735689600, tags: ['bench'] });
const FILES = json(filesPage());
const WHOAMI = json({
  id: BENCH_USER_ID,
  email: 'bench@example.test',
  name: 'Bench User',
  role: 'user',
  token: BENCH_API_KEY,
  token_type: 'Bearer',
  expires_at: null,
});
const SIGNIN = json({
  token: BENCH_UPSTREAM_TOKEN,
  token_type: 'Bearer',
  expires_at: null,
  id: BENCH_USER_ID,
  email: 'bench@example.test',
  name: 'Bench User',
  role: 'user',
});
const UNAUTHORIZED = json({ detail: 'Not authenticated' });
const NOT_FOUND = json({ detail: 'Not Found' });
const CHUNK = Buffer.alloc(256 * 1024, 0x61);

function send(res: ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, ['content-type', 'application/json', 'content-length', String(body.length)]);
  res.end(body);
}

function download(res: ServerResponse, total: number): void {
  res.writeHead(200, ['content-type', 'application/octet-stream', 'content-length', String(total)]);
  let left = total;
  const pump = () => {
    while (left > 0) {
      const n = Math.min(left, CHUNK.length);
      left -= n;
      const more = res.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n));
      if (!more) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
}

function sse(req: IncomingMessage, res: ServerResponse, intervalMs: number): void {
  res.writeHead(200, ['content-type', 'text/event-stream', 'cache-control', 'no-cache', 'x-accel-buffering', 'no']);
  res.flushHeaders();
  // Start at a random phase so that many streams do not all write in the same tick.
  let timer: NodeJS.Timeout | undefined;
  const start = setTimeout(() => {
    timer = setInterval(() => res.write(`data: ${process.hrtime.bigint()}\n\n`), intervalMs);
  }, Math.random() * intervalMs);
  const stop = () => {
    clearTimeout(start);
    clearInterval(timer);
  };
  req.socket.once('close', stop);
  res.once('close', stop);
}

export function createBenchUpstream(): http.Server {
  const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const method = req.method;
    if (method === 'GET' && path === '/api/v1/bench/small') return send(res, 200, SMALL);
    if (method === 'GET' && (path === '/api/v1/files/' || path === '/api/v1/bench/files-page')) return send(res, 200, FILES);
    if (method === 'GET' && path === '/api/v1/auths/') {
      const auth = req.headers.authorization ?? '';
      const key = req.headers['x-api-key'];
      return auth.startsWith('Bearer sk-') || key ? send(res, 200, WHOAMI) : send(res, 401, UNAUTHORIZED);
    }
    if (method === 'POST' && path === '/api/v1/auths/signin') {
      req.resume();
      req.once('end', () => send(res, 200, SIGNIN));
      return;
    }
    if (method === 'GET' && path === '/api/v1/bench/download') {
      return download(res, Number(new URLSearchParams(url.slice(q + 1)).get('bytes') ?? 0));
    }
    if ((method === 'POST' || method === 'PUT') && path === '/api/v1/bench/upload') {
      let bytes = 0;
      req.on('data', (c: Buffer) => (bytes += c.length));
      req.once('end', () => send(res, 200, json({ bytes })));
      return;
    }
    if (method === 'GET' && path === '/api/v1/bench/sse') {
      return sse(req, res, Number(new URLSearchParams(url.slice(q + 1)).get('interval') ?? 20));
    }
    req.resume();
    send(res, 404, NOT_FOUND);
  });
  server.maxHeadersCount = 0;
  server.headersTimeout = 60_000;
  server.requestTimeout = 0;

  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  wss.on('connection', (ws) => {
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
    ws.on('error', () => ws.terminate());
  });
  server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    if (!req.url?.startsWith('/ws/bench/echo')) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });
  return server;
}

// As a process: listen on 127.0.0.1 (BENCH_UPSTREAM_PORT or any free port), say where, and live
// exactly as long as the stdin pipe from the bench.
if (process.env.BENCH_UPSTREAM_CHILD === '1') {
  countMarkCompacts();
  const server = createBenchUpstream();
  server.listen(Number(process.env.BENCH_UPSTREAM_PORT ?? 0), '127.0.0.1', () => {
    process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n');
  });
  process.stdin.resume();
  process.stdin.once('end', () => process.exit(0));
  process.stdin.once('error', () => process.exit(0));
  process.once('SIGTERM', () => process.exit(0));
}
