// An upgrade asked with a method other than GET and a CONNECT get a 405 (gateway/http/server.ts),
// and then their socket closes. Answered with a plain end(), the gateway's socket was never read
// again and had no timeout (Node drops the server's listeners on upgrade and CONNECT): it stayed
// open for as long as the client liked, silent or after one byte and its FIN, and a graceful stop
// waited for it for ever. No sign-in needed, the 405 comes first (found by a review; finishSocket).
import { expect } from 'chai';
import net from 'node:net';
import { startWorld, type World } from '../support/cookie-jar.js';
import { eventually, sleep } from '../support/wait.js';

const connections = (w: World) => new Promise<number>((r, j) => w.gateway.server.getConnections((e, n) => (e ? j(e) : r(n))));

async function answered(port: number, request: string, after: 'silent' | 'byte-then-fin'): Promise<{ status: string; socket: net.Socket }> {
  const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  s.on('error', () => {});
  let got = '';
  s.on('data', (d) => (got += d.toString('latin1')));
  await new Promise((r) => s.once('connect', r));
  s.write(request);
  await new Promise((r) => s.once('end', r)); // the gateway's answer and FIN
  if (after === 'byte-then-fin') s.end('x');
  return { status: got.split('\r\n')[0]!, socket: s };
}

describe('a 405 to a non-GET upgrade or a CONNECT: the gateway socket closes', function () {
  this.timeout(60_000);
  let w: World;
  let port: number;
  before(async () => {
    w = await startWorld({ env: { LOG_LEVEL: 'silent' } });
    port = Number(new URL(w.url).port);
  });
  after(async () => {
    await Promise.race([w?.close(), sleep(3_000)]);
  });

  const upgrade = (method: string) =>
    `${method} /ws/socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nContent-Length: 0\r\n\r\n`;

  for (const [name, request] of [
    ['POST upgrade', upgrade('POST')],
    ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'],
  ] as const)
    for (const after of ['silent', 'byte-then-fin'] as const)
      it(`${name}, client ${after}: none of 20 gateway sockets is open 7 s after the 405 (finishSocket waits 2 s at most)`, async () => {
        const base = await connections(w);
        const clients: net.Socket[] = [];
        for (let i = 0; i < 20; i++) {
          const { status, socket } = await answered(port, request, after);
          expect(status).to.equal('HTTP/1.1 405 Method Not Allowed');
          clients.push(socket);
        }
        // closed sockets stay closed: none open at some moment within 7 s (> LINGER_MS, 2 s, and >
        // keepAliveTimeout, 5 s) is none open 7 s after, without waiting out the 7 s
        let held = NaN;
        await eventually(async () => (held = (await connections(w)) - base) === 0, { ms: 7_000, everyMs: 100 });
        for (const c of clients) c.destroy();
        expect(held, 'gateway-side sockets still open after their 405 (no timeout bounds them)').to.equal(0);
      });
});

describe('a silent client after a 405 to its upgrade does not hold up a graceful stop', function () {
  this.timeout(30_000);
  it('gateway.close() (SIGTERM, 1 s grace) ends while one POST-upgrade client stays silent', async () => {
    const w = await startWorld({ env: { LOG_LEVEL: 'silent', SHUTDOWN_GRACE_MS: '1000' } });
    const port = Number(new URL(w.url).port);
    const { status, socket } = await answered(
      port,
      'POST /ws/socket.io/ HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 0\r\n\r\n',
      'silent',
    );
    try {
      expect(status).to.equal('HTTP/1.1 405 Method Not Allowed');
      const closed = await Promise.race([w.gateway.close().then(() => true), sleep(6_000).then(() => false)]);
      expect(closed, 'gateway.close() still pending: lifecycle.ts never reaches process.exit').to.equal(true);
    } finally {
      socket.destroy();
      // the rest of the world (the realm, Open WebUI's stand-in); the gateway is closed by now
      await Promise.race([w.close(), sleep(3_000)]);
    }
  });
});
