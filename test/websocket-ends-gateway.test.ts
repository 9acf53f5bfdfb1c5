// Through the whole gateway (createGateway, the stand-in of Open WebUI, a realm JWT): an upgrade
// Open WebUI refuses (404 for /ws/other), or a WebSocket it drops, must not leave the gateway's
// socket open when the client sends one byte more and then closes. Left unread, that byte kept the
// client's FIN unseen: the gateway kept the file descriptor and its tracker entry
// (gateway_websockets_open) until the session ended (found by a review; fixed by finishSocket).
import { expect } from 'chai';
import net from 'node:net';
import { startWorld, CLIENT_ID, type World } from './support/cookie-jar.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('WebSocket ends through the gateway: no socket left when the client is gone', function () {
  this.timeout(60_000);
  let world: World;
  let port: number;
  let token: string;
  before(async () => {
    world = await startWorld({ env: { LOG_LEVEL: 'silent' }, accessTokenTtl: 3600 });
    port = Number(new URL(world.url).port);
    token = await world.idp.accessTokenFor('alice', CLIENT_ID);
  });
  after(() => world?.close());

  it('50 refused upgrades, each client sends a byte after the answer and closes: no socket is left open', async () => {
    const statuses: string[] = [];
    for (let i = 0; i < 50; i++) {
      await new Promise<void>((resolve) => {
        const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
        let got = '';
        s.on('error', () => {});
        s.on('data', (d) => (got += d.toString('latin1')));
        s.on('end', () => {
          statuses.push(got.split('\r\n')[0]!);
          s.end('x'); // one byte more, then the client is gone
        });
        s.on('close', () => resolve());
        s.write(
          `GET /ws/other HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${token}\r\n\r\n`,
        );
      });
    }
    expect(new Set(statuses)).to.deep.equal(new Set(['HTTP/1.1 404 Not Found']));
    await sleep(1_500);
    expect(world.gateway.openWebSockets(), 'gateway sockets still open after every client left').to.equal(0);
  });

  it('50 open WebSockets that Open WebUI drops (a protocol error: an unmasked frame), each client sends a byte and closes: no socket is left open', async () => {
    const before = world.gateway.openWebSockets();
    for (let i = 0; i < 50; i++) {
      await new Promise<void>((resolve) => {
        const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
        let got = '';
        let sent = false;
        s.on('error', () => {});
        s.on('data', (d) => {
          got += d.toString('latin1');
          // after the 101: an unmasked text frame, which Open WebUI (any RFC 6455 server) answers by closing
          if (!sent && got.includes('\r\n\r\n')) {
            sent = true;
            s.write(Buffer.from([0x81, 0x02, 0x34, 0x30]));
          }
        });
        s.on('end', () => s.end('x')); // the gateway passed the upstream's close on: one byte more, then gone
        s.on('close', () => resolve());
        s.write(
          `GET /ws/socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${token}\r\n\r\n`,
        );
        setTimeout(() => s.destroy(), 5_000).unref();
      });
    }
    await sleep(1_500);
    expect(world.gateway.openWebSockets() - before, 'gateway sockets still open after every client left').to.equal(0);
  });
});
