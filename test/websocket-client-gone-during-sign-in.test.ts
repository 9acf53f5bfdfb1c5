// A client that resets its connection while its upgrade is being signed in (gateway/pipeline/handle.ts
// upgrade() awaits the authenticator and Open WebUI before it tracks the socket) leaves nothing
// behind. Before, track() and the metric's 'close' listener were set on a socket whose 'close' had
// already fired: the entry stayed for ever (gateway_websockets_open grew), and the handshake still
// went to Open WebUI (found by a review).
import { expect } from 'chai';
import net from 'node:net';
import { startWorld, CLIENT_ID, type World } from './support/cookie-jar.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a WebSocket client gone while its upgrade is signed in', function () {
  this.timeout(60_000);
  let w: World;
  let port: number;
  let token: string;
  before(async () => {
    w = await startWorld({ env: { LOG_LEVEL: 'silent' }, accessTokenTtl: 3600 });
    port = Number(new URL(w.url).port);
    token = await w.idp.accessTokenFor('alice', CLIENT_ID);
  });
  after(() => w?.close());

  it('50 handshakes reset right after they are sent: no tracked WebSocket is left', async () => {
    const before = w.gateway.openWebSockets();
    for (let i = 0; i < 50; i++) {
      await new Promise<void>((resolve) => {
        const s = net.connect({ port, host: '127.0.0.1' });
        s.on('error', () => {});
        s.on('close', () => resolve());
        s.once('connect', () => {
          s.write(
            `GET /ws/socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
              `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${token}\r\n\r\n`,
            () => setTimeout(() => s.resetAndDestroy(), i % 4),
          );
        });
      });
    }
    await sleep(3_000);
    const conns = await new Promise<number>((r) => w.gateway.server.getConnections((_e, n) => r(n)));
    expect({ tracked: w.gateway.openWebSockets() - before, connections: conns }, 'tracker entries of sockets already closed').to.deep.equal({
      tracked: 0,
      connections: 0,
    });
  });
});
