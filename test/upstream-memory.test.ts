// A finished proxied exchange is garbage at once. The proxy kept each exchange's state
// in a WeakMap keyed by the client's request; the state held the upstream's answer, whose
// listeners lead back to that request: V8's young-generation GC cannot collect such an entry, so
// every exchange was promoted to the old generation and waited for a full GC (15 % of all
// allocation under load, a mark-compact every 2 s, 190 MB RSS). Measured with V8's own GC trace in
// a child process, on the real proxy over real sockets.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Upstream } from '../gateway/upstream/proxy.js';
import { createObservability } from '../gateway/observability/observability.js';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from './support/wait.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

describe('upstream proxy: memory per exchange', function () {
  this.timeout(60_000);

  it('a finished exchange does not outlive the young generation: two young GCs after 300 requests promote almost nothing', () => {
    const count = 300;
    const r = spawnSync(
      process.execPath,
      [
        '--expose-gc',
        '--trace-gc-nvp',
        '--max-semi-space-size=64',
        '--min-semi-space-size=64',
        '--import',
        'tsx',
        'test/support/exchange-retention.ts',
        String(count),
      ],
      { cwd: ROOT, encoding: 'utf8', timeout: 50_000 },
    );
    expect(r.status, r.stderr).to.equal(0);
    const measured = r.stdout.split('-- measured GCs start --')[1]?.split('-- measured GCs end --')[0];
    expect(measured, r.stdout.slice(-2000)).to.be.a('string');
    const scavenges = [...measured!.matchAll(/gc=s .*?promoted=(\d+)/g)].map((m) => Number(m[1]));
    expect(scavenges, 'the two young-generation GCs were traced').to.have.length(2);
    const perRequest = scavenges.reduce((a, b) => a + b, 0) / count;
    // Measured: about 180 bytes per request (what the sockets and agent keep); 6,900 when each
    // exchange was kept alive.
    expect(perRequest).to.be.below(1_500);
  });

  it('an exchange the client leaves before the answer keeps no timer: nothing holds it until UPSTREAM_TIMEOUT_MS', async () => {
    const held: http.ServerResponse[] = [];
    const origin = http.createServer((_req, res) => void held.push(res)); // never answers
    const listen = (server: http.Server) =>
      new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
    const upstream = new Upstream(
      { url: await listen(origin), timeoutMs: 60_000, maxSockets: 64, rewriteMaxBytes: 1 << 20, idleTimeoutMs: 120_000 },
      createObservability({ level: 'silent' }),
    );
    const front = http.createServer((req, res) => upstream.forward(req, res));
    const url = await listen(front);
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    try {
      const count = 40;
      await Promise.all(
        Array.from({ length: count }, (_, i) => {
          const req = http.get(`${url}/api/v1/slow/${i}`, { agent: false });
          req.on('error', () => {});
          return new Promise<void>((resolve) => {
            // left once the origin has the request: the gateway's upstream timer is running
            const poll = setInterval(() => {
              if (held.length > i) {
                clearInterval(poll);
                req.destroy();
                resolve();
              }
            }, 5);
          });
        }),
      );
      await sleep(200);
      expect(timers() - before, 'timers still armed for exchanges whose client left').to.be.below(5);
    } finally {
      for (const res of held) res.destroy();
      upstream.close();
      front.closeAllConnections();
      origin.closeAllConnections();
      front.close();
      origin.close();
    }
  });
});
