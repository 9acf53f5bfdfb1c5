// Run by test/upstream-memory.test.ts in a child process with --expose-gc, --trace-gc-nvp and a
// young generation large enough to hold the whole run: proxies `count` small requests through
// new Upstream() (gateway/upstream/proxy.ts) after a warm-up, then runs two young-generation GCs
// between two marker lines. V8's own trace of those GCs says how many bytes they promoted to the
// old generation. A finished exchange must be garbage for the young generation: what survives two
// of its GCs is promoted and waits for a full GC.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Upstream } from '../../gateway/upstream/proxy.js';
import { createObservability } from '../../gateway/observability/observability.js';
import { sleep } from './wait.js';

const count = Number(process.argv[2] ?? 300);
const gc = (globalThis as { gc?: (o: { type: 'minor' | 'major'; execution: 'sync' }) => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const listen = (server: http.Server) =>
  new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

const origin = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
});
const upstream = new Upstream(
  { url: await listen(origin), timeoutMs: 5_000, maxSockets: 8, rewriteMaxBytes: 1 << 20, idleTimeoutMs: 60_000 },
  createObservability({ level: 'silent' }),
);
const front = http.createServer((req, res) => upstream.forward(req, res));
const url = await listen(front);
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
const run = async () => {
  for (let i = 0; i < count; i++) {
    await new Promise<void>((resolve, reject) => {
      http.get(`${url}/api/v1/x/${i}`, { agent }, (res) => res.resume().once('end', resolve)).once('error', reject);
    });
  }
  await sleep(50);
};
const youngGCs = async () => {
  for (let i = 0; i < 2; i++) {
    gc({ type: 'minor', execution: 'sync' });
    await new Promise((r) => setImmediate(r));
  }
};
// Warm-up: code, caches, sockets and agents that live on are promoted here, not counted below.
await run();
await youngGCs();
await run();
process.stdout.write('-- measured GCs start --\n');
await youngGCs();
process.stdout.write('-- measured GCs end --\n');
agent.destroy();
upstream.close();
front.close();
origin.close();
front.closeAllConnections();
origin.closeAllConnections();
