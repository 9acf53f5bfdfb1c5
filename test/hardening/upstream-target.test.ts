// What the upstream receives as the request target: exactly the canonical target the gateway
// judged and set (never parsed and re-serialised on the way), below the path of UPSTREAM_URL when
// it has one. Real sockets, the real proxy.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Upstream } from '../../gateway/upstream/proxy.js';
import { createObservability } from '../../gateway/observability/observability.js';

const listen = (server: http.Server) =>
  new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

/** What an origin received (the target, or `show` of the request) when `targets` were forwarded through a proxy to `origin + base`. */
async function received(base: string, targets: string[], method = 'GET', show = (req: http.IncomingMessage) => req.url ?? ''): Promise<string[]> {
  const seen: string[] = [];
  const origin = http.createServer((req, res) => {
    seen.push(show(req));
    res.end('{}');
  });
  const upstream = new Upstream(
    { url: (await listen(origin)) + base, timeoutMs: 10_000, maxSockets: 8, rewriteMaxBytes: 1 << 20, idleTimeoutMs: 20_000 },
    createObservability({ level: 'silent' }),
  );
  const front = http.createServer((req, res) => upstream.forward(req, res));
  const url = await listen(front);
  try {
    for (const target of targets) {
      const status = await new Promise<number>((resolve, reject) =>
        http
          .request(`${url}${target}`, { method, agent: false }, (res) => (res.resume(), resolve(res.statusCode ?? 0)))
          .on('error', reject)
          .end(),
      );
      expect(status, target).to.equal(200);
    }
    return seen;
  } finally {
    upstream.close();
    front.close();
    origin.close();
  }
}

const TARGETS = [
  '/api/v1/chats/?page=2',
  '/api/v1/files/abc/content',
  '/static/favicon.png?v=1&x=%2F',
  '/',
  "/api/v1/models/org:m~1!$&'()*+,=@/overview?q=a%20b",
];

describe('upstream proxy: the request target as the upstream receives it', function () {
  this.timeout(30_000);

  it('is the canonical target the gateway set, byte for byte', async () => {
    expect(await received('', TARGETS)).to.deep.equal(TARGETS);
  });

  it('under an UPSTREAM_URL with a path, comes below that path, query kept', async () => {
    expect(await received('/owui', TARGETS)).to.deep.equal(TARGETS.map((t) => (t === '/' ? '/owui/' : `/owui${t}`)));
  });

  it('of a DELETE or OPTIONS without a body carries Content-Length: 0 (no body framing left for the upstream to guess)', async () => {
    const lengths = (req: http.IncomingMessage) => `${req.method} ${req.headers['content-length']} ${req.headers['transfer-encoding']}`;
    expect(await received('', ['/api/v1/chats/c1'], 'DELETE', lengths)).to.deep.equal(['DELETE 0 undefined']);
    expect(await received('', ['/api/v1/chats/c1'], 'OPTIONS', lengths)).to.deep.equal(['OPTIONS 0 undefined']);
  });
});
