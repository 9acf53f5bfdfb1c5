// Found by a review (fixed): `Connection: content-length` makes the gateway leave the body's framing out of
// the forwarded request (upstreamHeaders drops every Connection-listed header), while Node's server
// already read a body of that length. Node's client sends GET/HEAD without chunked framing and
// http-proxy-3 sets `Content-Length: 0` on DELETE/OPTIONS, so the body goes upstream as raw bytes
// after a bodiless request: Open WebUI reads it as a second request nobody judged, with whatever
// trusted headers the attacker wrote in it (X-Forwarded-Email/Role: a sign-in as any user, admin).
import { expect } from 'chai';
import { startWorld, CLIENT_ID, type World } from './support/cookie-jar.js';
import { rawExchange } from './support/raw-http.js';
import { sleep } from './support/wait.js';

const VICTIM = 'victim@evil.example';
const inner = (id: string) =>
  `POST /api/v1/auths/signin?smuggled=${id} HTTP/1.1\r\nHost: x\r\nX-Forwarded-Email: ${VICTIM}\r\nX-Forwarded-Role: admin\r\n` +
  `Content-Type: application/json\r\nContent-Length: 28\r\n\r\n{"email":"x","password":"y"}`;

describe('hardening: a Connection header naming Content-Length smuggles nothing to Open WebUI', function () {
  this.timeout(30_000);
  let w: World;
  let port: number;
  let alice: string;

  before(async () => {
    w = await startWorld({});
    port = Number(new URL(w.url).port);
    alice = await w.idp.accessTokenFor('alice', CLIENT_ID);
  });
  after(async () => {
    await w?.close();
  });

  for (const method of ['GET', 'DELETE', 'OPTIONS']) {
    for (const [path, auth] of [
      ['/static/app.js', ''],
      ['/api/v1/terminals/probe/x', 'auth'],
    ] as const) {
      it(`${method} ${path} with a Content-Length body and Connection: content-length: no hidden request reaches the upstream`, async () => {
        const id = `${method}-${path.replace(/\W+/g, '-')}`;
        const body = inner(id);
        const a = auth ? `Authorization: Bearer ${alice}\r\n` : '';
        const mark = w.upstream.requests.length;
        await rawExchange(
          port,
          `${method} ${path} HTTP/1.1\r\nHost: x\r\n${a}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: content-length\r\n\r\n${body}`,
          1500,
        );
        await sleep(100);
        const seen = w.upstream.requests.slice(mark);
        expect(
          seen
            .filter((r) => r.url.includes('smuggled'))
            .map((r) => `${r.method} ${r.url} ${String(r.headers['x-forwarded-email'])} ${String(r.headers['x-forwarded-role'])}`),
          'a request hidden in the body reached Open WebUI on its own, with the client\u2019s trusted headers',
        ).to.deep.equal([]);
      });
    }
  }
  it('a plain request that names Upgrade: websocket (without Connection: upgrade) goes upstream as a plain request', async () => {
    const mark = w.upstream.requests.length;
    await rawExchange(port, `GET /static/app.js HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive\r\n\r\n`, 1500);
    await sleep(100);
    const seen = w.upstream.requests.slice(mark).filter((r) => r.url === '/static/app.js');
    expect(seen.map((r) => [r.upgrade, r.headers.upgrade, r.headers.connection === 'Upgrade'])).to.deep.equal([[false, undefined, false]]);
  });
});
