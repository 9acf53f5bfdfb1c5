// Hardening: a client that goes away in the middle of a WebSocket handshake.
//
// http-proxy-3 re-emits every error of an upgraded client socket on its ProxyServer, whatever
// callback `ws()` was given. When the client resets while the gateway is still asking the
// upstream, the write of the 101 fails (EPIPE / ECONNRESET); with no 'error' listener on the proxy
// that error was thrown out of the event loop: in production, the end of the process. It happened
// about once in twelve runs of the load test. Upgrades no longer go through http-proxy-3 (the
// gateway joins the sockets itself, gateway/upstream/proxy.ts forwardUpgrade); every step of the
// handshake is still hit on purpose, many times, over real sockets, with the process's
// uncaught-error listeners replaced by a counter.
//
// The client leaving at other moments leaves nothing either: after an upgrade Open WebUI refuses
// (404 for /ws/other), or a WebSocket it drops, the client sends one byte more and closes: left
// unread, that byte kept the client's FIN unseen and the gateway kept the socket and its tracker
// entry (gateway_websockets_open) until the session ended (a review; fixed by finishSocket). And a
// client that resets while its upgrade is signed in (handle.ts awaits the authenticator and Open
// WebUI before it tracks the socket) was tracked anyway, for ever (a second review).
import { expect } from 'chai';
import net from 'node:net';
import { startWorld, CLIENT_ID, type World } from '../support/cookie-jar.js';
import { eventually, sleep } from '../support/wait.js';

const ROUNDS = 25;
/** When the client goes away, and how (RST or FIN). */
const STEPS = ['before-headers-end', 'right-after-request', 'after-1ms', 'after-5ms', 'on-first-byte'] as const;
const HOW = ['reset', 'end'] as const;

describe('hardening: a client leaving during the WebSocket handshake', function () {
  this.timeout(120_000);
  let world: World;
  let port: number;
  let token: string;

  before(async () => {
    world = await startWorld({ env: { LOG_LEVEL: 'silent' }, accessTokenTtl: 3600 });
    port = Number(new URL(world.url).port);
    token = await world.idp.accessTokenFor('alice', CLIENT_ID);
  });
  after(() => world?.close());

  const request = () =>
    `GET /ws/socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${token}\r\n\r\n`;

  /** One client that leaves at `step`; resolves once its socket is closed. */
  function leavingClient(step: (typeof STEPS)[number], how: (typeof HOW)[number], answer: { status?: string }): Promise<void> {
    return new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      const leave = () => (how === 'reset' ? s.resetAndDestroy() : s.end());
      s.on('error', () => {});
      s.on('close', () => resolve());
      s.once('data', (d: Buffer) => {
        answer.status ??= d.toString('latin1').split('\r\n')[0];
        if (step === 'on-first-byte') leave();
      });
      s.on('connect', () => {
        const text = request();
        if (step === 'before-headers-end') {
          s.write(text.slice(0, -2)); // everything but the blank line that ends the head
          return void setImmediate(leave);
        }
        s.write(text);
        if (step === 'right-after-request') leave();
        else if (step === 'after-1ms') setTimeout(leave, 1);
        else if (step === 'after-5ms') setTimeout(leave, 5);
      });
      setTimeout(() => s.destroy(), 5_000).unref();
    });
  }

  it('no uncaught error, at any step, reset or ended, many times; the gateway serves on and holds no socket', async () => {
    const saved = process.listeners('uncaughtException');
    const uncaught: string[] = [];
    const count = (err: Error & { code?: string }) => void uncaught.push(`${err.code ?? ''} ${err.message}`);
    process.removeAllListeners('uncaughtException');
    process.on('uncaughtException', count);
    const answers: { status?: string }[] = [];
    try {
      for (const step of STEPS) {
        for (const how of HOW) {
          for (let i = 0; i < ROUNDS; i++) {
            const answer = {};
            answers.push(answer);
            await leavingClient(step, how, answer);
          }
        }
      }
      // Errors of the last sockets arrive a few ticks after their close.
      await sleep(300);
    } finally {
      process.removeListener('uncaughtException', count);
      for (const l of saved) process.on('uncaughtException', l);
    }
    expect(uncaught, uncaught.slice(0, 3).join('\n')).to.deep.equal([]);
    // The race was really run: some clients were gone before any answer, others saw the 101.
    expect(answers.some((a) => a.status === undefined)).to.equal(true);
    expect(answers.some((a) => a.status?.startsWith('HTTP/1.1 101'))).to.equal(true);

    // Still serving, WebSockets included, and nothing left of the clients that left.
    const providers = await fetch(`${world.url}/api/v1/auth-providers/`);
    expect(providers.status).to.equal(200);
    const ok = await new Promise<string>((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => s.write(request()));
      s.once('data', (d: Buffer) => {
        resolve(d.toString('latin1').split('\r\n')[0]!);
        s.destroy();
      });
      s.on('error', reject);
    });
    expect(ok).to.match(/^HTTP\/1\.1 101 /);
    const deadline = Date.now() + 3_000;
    while (world.gateway.openWebSockets() > 0 && Date.now() < deadline) await sleep(50);
    expect(world.gateway.openWebSockets()).to.equal(0);
  });

  // The client gone after the handshake's answer, or while it is signed in: no socket stays.
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
    // a closed socket stays closed: none open within 1.5 s is none open 1.5 s after
    await eventually(() => world.gateway.openWebSockets() === 0, { ms: 1_500 });
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
    await eventually(() => world.gateway.openWebSockets() - before === 0, { ms: 1_500 });
    expect(world.gateway.openWebSockets() - before, 'gateway sockets still open after every client left').to.equal(0);
  });

  it('50 handshakes reset right after they are sent: no tracked WebSocket is left', async () => {
    const before = world.gateway.openWebSockets();
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
    const connections = () => new Promise<number>((r) => world.gateway.server.getConnections((_e, n) => r(n)));
    await eventually(async () => world.gateway.openWebSockets() - before === 0 && (await connections()) === 0, { ms: 3_000 });
    const conns = await connections();
    expect({ tracked: world.gateway.openWebSockets() - before, connections: conns }, 'tracker entries of sockets already closed').to.deep.equal({
      tracked: 0,
      connections: 0,
    });
  });
});
