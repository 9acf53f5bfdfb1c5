// The bytes of a joined WebSocket (gateway/upstream/proxy.ts joinSockets and forward(), which replaced
// pipe()), read by a review of that change:
// - an admin's (guarded) socket: the client's end reaches Open WebUI after the frames the guard still
//   judges, not before them (before the fix: write after end, both connections cut, the frames lost);
// - a plain socket paused by back-pressure whose session ends is not read again when the upstream
//   drains (forward() resumes only while a 'data' listener remains; the tracker removes it).
import { expect } from 'chai';
import http, { type IncomingMessage } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { Upstream } from '../gateway/upstream/proxy.js';
import { createObservability } from '../gateway/observability/observability.js';
import { WebSocketTracker } from '../gateway/http/websockets.js';
import type { SocketVerdict } from '../policies/session-ends.js';
import { ACCEPT, HANDSHAKE, frame } from './support/websocket-wire.js';
import { realGuard } from './support/websocket-guard.js';
import { sleep } from './support/wait.js';

/** A raw upstream: 101 after `delayMs`, records what it reads after the handshake and whether it saw the end. */
async function rawUpstream(delayMs: number) {
  const got = { bytes: Buffer.alloc(0), ended: false };
  const sockets: net.Socket[] = [];
  const server = net.createServer((s) => {
    sockets.push(s);
    s.on('error', () => {});
    let head = '';
    let upgraded = false;
    s.on('data', (d: Buffer) => {
      if (upgraded) return void (got.bytes = Buffer.concat([got.bytes, d]));
      head += d.toString('latin1');
      const i = head.indexOf('\r\n\r\n');
      if (i < 0) return;
      upgraded = true;
      const rest = Buffer.from(head.slice(i + 4), 'latin1');
      if (rest.length) got.bytes = Buffer.concat([got.bytes, rest]);
      setTimeout(() => s.writable && s.write(ACCEPT), delayMs);
    });
    s.on('end', () => {
      got.ended = true;
      setTimeout(() => s.end(), 50);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    got,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

async function gateway(upstreamUrl: string, judgeMs: number) {
  const upstream = new Upstream({ url: upstreamUrl, timeoutMs: 5_000, maxSockets: 10, rewriteMaxBytes: 1 << 20 }, createObservability({ level: 'silent' }));
  // the real guard; a note join is judged by asking Open WebUI (here: judgeMs, allowed)
  const guard = realGuard(() => sleep(judgeMs).then(() => true));
  const sockets: Duplex[] = [];
  const server = http.createServer();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    sockets.push(socket);
    upstream.forwardUpgrade(req, socket, head, guard);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      upstream.agent.destroy();
    },
  };
}

describe('an admin (guarded) WebSocket: the client end does not overtake frames the guard still holds', function () {
  this.timeout(20_000);

  it('FIN with the handshake: the frame sent with it (an Engine.IO ping, never judged) reaches the upstream before the end', async () => {
    const up = await rawUpstream(100);
    const gw = await gateway(up.url, 0);
    const ping = frame('2');
    try {
      const s = net.connect({ port: gw.port, host: '127.0.0.1', allowHalfOpen: true });
      s.on('error', () => {});
      s.resume();
      await new Promise((r) => s.once('connect', r));
      s.end(Buffer.concat([Buffer.from(HANDSHAKE, 'latin1'), ping]));
      await sleep(600);
      s.destroy();
      expect(up.got.ended, 'the upstream saw the end').to.equal(true);
      expect(up.got.bytes.toString('hex'), 'bytes the upstream received after the handshake').to.equal(ping.toString('hex'));
    } finally {
      await gw.close();
      await up.close();
    }
  });

  it('open socket, half-closed after a note join being judged: the join reaches the upstream before the end, and the client is not reset', async () => {
    const up = await rawUpstream(0);
    const gw = await gateway(up.url, 100);
    const join = frame('42["join-note",{"note_id":"n1"}]');
    try {
      const s = net.connect({ port: gw.port, host: '127.0.0.1', allowHalfOpen: true });
      s.on('error', () => {});
      let reset = false;
      s.on('error', () => (reset = true));
      let got = '';
      s.on('data', (d) => (got += d.toString('latin1')));
      await new Promise((r) => s.once('connect', r));
      s.write(HANDSHAKE);
      while (!got.includes('\r\n\r\n')) await sleep(10);
      s.end(join); // one message, then a half-close (the client still reads)
      await sleep(600);
      s.destroy();
      expect(up.got.bytes.toString('hex'), 'the join (allowed by the judge) never reached the upstream').to.equal(join.toString('hex'));
      expect(up.got.ended, 'the upstream saw the end').to.equal(true);
      expect(reset, 'the client was reset').to.equal(false);
    } finally {
      await gw.close();
      await up.close();
    }
  });
});

describe('a plain WebSocket held back by back-pressure, its session ended', function () {
  this.timeout(20_000);
  it('bytes the client sends after its session ended never reach the upstream, even once the upstream drains', async () => {
    let gotB = 0;
    let upSock: net.Socket | undefined;
    const up = net.createServer((s) => {
      upSock = s;
      s.on('error', () => {});
      s.once('data', () => {
        s.write(ACCEPT);
        s.pause(); // not read: the gateway's writes back up, the client is paused
        s.on('data', (d: Buffer) => (gotB += d.filter((c) => c === 0x42).length));
      });
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const upstream = new Upstream(
      { url: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, timeoutMs: 5_000, maxSockets: 10, rewriteMaxBytes: 1 << 20 },
      createObservability({ level: 'silent' }),
    );
    const tracker = new WebSocketTracker();
    let signedIn = true;
    const verdict = (): SocketVerdict => (signedIn ? { keep: true } : { keep: false, reason: 'signed out', rule: 'ended' });
    const sockets: Duplex[] = [];
    const server = http.createServer();
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      sockets.push(socket);
      tracker.track(socket, { session: { key: 's1', label: 'u', verdict } });
      upstream.forwardUpgrade(req, socket, head);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const c = net.connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true });
    c.on('error', () => {});
    try {
      let got = '';
      c.on('data', (d) => (got += d.toString('latin1')));
      c.write(HANDSHAKE);
      while (!got.includes('\r\n\r\n')) await sleep(10);
      const A = Buffer.alloc(1 << 20, 0x41);
      for (let i = 0; i < 6; i++) c.write(A); // fills the kernel buffers and the gateway's: the client gets paused
      await sleep(300);
      expect((sockets[0] as net.Socket).isPaused(), 'gateway paused the client').to.equal(true);
      signedIn = false;
      tracker.recheck('s1');
      await sleep(50);
      c.write(Buffer.alloc(1 << 20, 0x42)); // after the end
      upSock!.resume(); // the upstream drains: 'drain' on the gateway's upstream socket
      await sleep(800); // < SESSION_CLOSE_WAIT_MS + a bit
      expect(gotB, 'bytes sent after the session ended that reached the upstream').to.equal(0);
    } finally {
      c.destroy();
      tracker.destroyAll();
      upSock?.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await new Promise((r) => up.close(r));
    }
  });
});
