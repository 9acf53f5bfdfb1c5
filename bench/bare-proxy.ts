// The floor of the gateway's stack: node:http + http-proxy-3 over a keep-alive agent configured
// as gateway/upstream.ts configures its own, and nothing else (no canonical path, no identity,
// no policy, no metrics). Whatever the gateway costs above this is the gateway's own.
//
// Run as a process by bench/peers.ts: env BENCH_TARGET (the upstream), BENCH_PORT; prints
// `{"port":N}` once listening and exits when its stdin closes.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProxyServer } from 'http-proxy-3';

export function createBareProxy(target: string): http.Server {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256, timeout: 300_000, scheduling: 'lifo' });
  // A URL object, not a string: http-proxy-3 parses a string target again on every request.
  const proxy = new ProxyServer({ target: new URL(target), agent, xfwd: false, changeOrigin: false, ws: true, proxyTimeout: 300_000 });
  const fail = (res: http.ServerResponse | import('node:stream').Duplex) => {
    if ('writeHead' in res && !res.headersSent) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end('{"detail":"bad gateway"}');
    } else res.destroy();
  };
  const server = http.createServer({ keepAliveTimeout: 5_000, requestTimeout: 0 }, (req, res) => proxy.web(req, res, {}, () => fail(res)));
  server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    proxy.ws(req, socket, head, {}, () => socket.destroy());
  });
  return server;
}

if (process.env.BENCH_BARE_CHILD === '1') {
  const server = createBareProxy(process.env.BENCH_TARGET ?? 'http://127.0.0.1:1');
  server.listen(Number(process.env.BENCH_PORT ?? 0), '127.0.0.1', () => {
    process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n');
  });
  process.stdin.resume();
  process.stdin.once('end', () => process.exit(0));
  process.stdin.once('error', () => process.exit(0));
  process.once('SIGTERM', () => process.exit(0));
}
