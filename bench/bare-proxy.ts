// The floor of the gateway's stack: node:http + http-proxy-3 configured as the gateway's own, and
// nothing else; whatever the gateway costs above this is its own. With BENCH_BARE_FEATURES, the floor
// plus the cheapest form of what the gateway must do on every request (bench/README.md). Run by
// bench/peers.ts; prints `{"port":N}` once listening and exits when its stdin closes.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { ProxyServer } from 'http-proxy-3';
import pino from 'pino';
import { sampleAllocations } from './alloc-profile.js';
import { countMarkCompacts } from './gc-count.js';
import { sampleMemory } from './memory-sample.js';
import { Counter, Histogram, Registry } from 'prom-client';

export const BARE_FEATURES = ['headers', 'log', 'metrics', 'hooks'] as const;
export type BareFeature = (typeof BARE_FEATURES)[number];

export function createBareProxy(target: string, features: ReadonlySet<BareFeature> = new Set()): http.Server {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256, timeout: 300_000, scheduling: 'lifo' });
  // A URL object, not a string: http-proxy-3 parses a string target again on every request.
  const proxy = new ProxyServer({ target: new URL(target), agent, xfwd: false, changeOrigin: false, ws: true, proxyTimeout: 300_000 });
  const fail = (res: http.ServerResponse | import('node:stream').Duplex) => {
    if ('writeHead' in res && !res.headersSent) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end('{"detail":"bad gateway"}');
    } else res.destroy();
  };
  const forward = (req: http.IncomingMessage, res: http.ServerResponse) => proxy.web(req, res, {}, () => fail(res));
  const server = http.createServer({ keepAliveTimeout: 5_000, requestTimeout: 0 }, features.size ? withFeatures(proxy, features, forward) : forward);
  server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    proxy.ws(req, socket, head, {}, () => socket.destroy());
  });
  return server;
}

function withFeatures(proxy: ProxyServer, features: ReadonlySet<BareFeature>, forward: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const log = features.has('log') ? pino({ level: 'info' }) : undefined;
  const registry = new Registry();
  const requests = features.has('metrics')
    ? new Counter({ name: 'requests_total', help: 'requests', labelNames: ['route_class', 'status'], registers: [registry] })
    : undefined;
  const latency = features.has('metrics')
    ? new Histogram({
        name: 'request_seconds',
        help: 'latency',
        labelNames: ['route_class'],
        buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
        registers: [registry],
      })
    : undefined;
  const timers = new WeakMap<http.IncomingMessage, NodeJS.Timeout>();
  if (features.has('hooks')) {
    proxy.on('proxyReq', (proxyReq, req) => {
      const arm = () =>
        timers.set(
          req,
          setTimeout(() => proxyReq.destroy(), 30_000),
        );
      if (req.complete) arm();
      else req.once('end', arm);
    });
    proxy.on('proxyRes', (proxyRes, req) => {
      clearTimeout(timers.get(req));
      proxyRes.headers.connection = 'keep-alive';
      proxyRes.headers['keep-alive'] = 'timeout=5';
    });
  }
  return async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const started = process.hrtime.bigint();
    const requestId = randomUUID();
    if (features.has('hooks')) {
      res.setHeader('x-request-id', requestId);
      for (let i = 0; i < 3; i++) await Promise.resolve();
    }
    if (features.has('headers')) {
      delete req.headers.cookie;
      Object.assign(req.headers, {
        'x-user-email': 'alice@example.test',
        'x-user-name': 'Alice',
        'x-user-role': 'user',
        'x-user-groups': 'acme',
        authorization: 'Bearer bench-upstream-session-token',
        'x-forwarded-for': req.socket.remoteAddress,
        'x-forwarded-proto': 'http',
        'x-forwarded-host': '127.0.0.1',
        'x-request-id': requestId,
      });
    }
    if (log || requests) {
      res.once('close', () => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        requests?.inc({ route_class: 'api', status: String(res.statusCode) });
        latency?.observe({ route_class: 'api' }, seconds);
        log?.info({ requestId, method: req.method, path: req.url, status: res.statusCode, ms: Math.round(seconds * 1e4) / 10, routeClass: 'api' }, 'request');
      });
    }
    forward(req, res);
  };
}

/** Hop-by-hop headers (RFC 9110 7.6.1) a proxy does not pass on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade']);

/**
 * The comparison for http-proxy-3 itself: the same job written on node:http alone,
 * over a keep-alive agent configured as the gateway's: request and answer streamed with pipe,
 * hop-by-hop headers dropped, a 502 when the upstream fails. No WebSockets: `small` only.
 */
export function createNodeHttpProxy(target: string): http.Server {
  const upstream = new URL(target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256, timeout: 300_000, scheduling: 'lifo' });
  return http.createServer({ keepAliveTimeout: 5_000, requestTimeout: 0 }, (req, res) => {
    const headers: http.OutgoingHttpHeaders = {};
    for (const name in req.headers) if (!HOP_BY_HOP.has(name)) headers[name] = req.headers[name];
    const out = http.request({ hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent }, (answer) => {
      const back: http.OutgoingHttpHeaders = {};
      for (const name in answer.headers) if (!HOP_BY_HOP.has(name)) back[name] = answer.headers[name];
      res.writeHead(answer.statusCode ?? 502, back);
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    out.on('error', () => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end('{"detail":"bad gateway"}');
    });
    req.pipe(out);
  });
}

/** BENCH_BARE_FEATURES: a comma list of BARE_FEATURES, or `all`. */
export function bareFeatures(list = ''): Set<BareFeature> {
  const names = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.includes('all')) return new Set(BARE_FEATURES);
  const unknown = names.filter((n) => !(BARE_FEATURES as readonly string[]).includes(n));
  if (unknown.length) throw new Error(`BENCH_BARE_FEATURES: unknown ${unknown.join(', ')} (known: ${BARE_FEATURES.join(', ')}, all)`);
  return new Set(names as BareFeature[]);
}

if (process.env.BENCH_BARE_CHILD === '1') {
  countMarkCompacts();
  sampleMemory(process.env.BENCH_BARE_KIND === 'node-http' ? 'node-http' : 'bare');
  sampleAllocations(process.env.BENCH_BARE_KIND === 'node-http' ? 'node-http' : process.env.BENCH_BARE_FEATURES_OF_CHILD ? 'bare-features' : 'bare');
  const target = process.env.BENCH_TARGET ?? 'http://127.0.0.1:1';
  const server =
    process.env.BENCH_BARE_KIND === 'node-http' ? createNodeHttpProxy(target) : createBareProxy(target, bareFeatures(process.env.BENCH_BARE_FEATURES_OF_CHILD));
  server.listen(Number(process.env.BENCH_PORT ?? 0), '127.0.0.1', () => {
    process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n');
  });
  process.stdin.resume();
  process.stdin.once('end', () => process.exit(0));
  process.stdin.once('error', () => process.exit(0));
  process.once('SIGTERM', () => process.exit(0));
}
