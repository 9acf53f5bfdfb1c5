// How a WebSocket's exchange ends (gateway/upstream/proxy.ts forwardUpgrade, found by a review of
// the gateway joining the sockets itself): the gateway's socket is released once both peers are
// gone, even when the client sent bytes nobody reads; an upstream that fails mid-refusal cuts the
// client instead of writing a second answer into the first; an admin's messages still being judged
// when the session ends never reach Open WebUI; and an admin's client is not read without bound
// while its messages wait for a judgement. Real sockets, the real guard and tracker.
import { expect } from 'chai';
import http, { type IncomingMessage } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';
import { Upstream, type Guarding } from '../gateway/upstream/proxy.js';
import { createObservability } from '../gateway/observability/observability.js';
import { WebSocketTracker } from '../gateway/http/websockets.js';
import type { SocketVerdict } from '../policies/session-ends.js';
import { HANDSHAKE, clientFrame, frame, rawWebSocket } from './support/websocket-wire.js';
import { realGuard } from './support/websocket-guard.js';
import { sleep } from './support/wait.js';

/** The gateway side: a front server that tracks each upgraded socket and forwards it. */
async function front(upstreamUrl: string, guard?: Guarding) {
  const upstream = new Upstream({ url: upstreamUrl, timeoutMs: 2_000, maxSockets: 10, rewriteMaxBytes: 1 << 20 }, createObservability({ level: 'silent' }));
  const tracker = new WebSocketTracker();
  const sockets: Duplex[] = [];
  const server = http.createServer();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    sockets.push(socket);
    tracker.track(socket);
    upstream.forwardUpgrade(req, socket, head, guard);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    tracker,
    sockets,
    async close() {
      tracker.destroyAll();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('WebSocket ends: the gateway socket is released when the client is gone', function () {
  this.timeout(20_000);

  it('plain path: Open WebUI closes an open WebSocket, the client sends one more frame and leaves: the gateway socket is released', async () => {
    // Open WebUI closes the connection (Engine.IO does on a close packet or a protocol error).
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => wss.once('listening', r));
    wss.on('connection', (ws) => ws.on('message', () => ws.terminate()));
    const gw = await front(`http://127.0.0.1:${(wss.address() as AddressInfo).port}`);
    try {
      const s = net.connect({ port: gw.port, host: '127.0.0.1', allowHalfOpen: true });
      s.on('error', () => {});
      let got = '';
      s.on('data', (d) => (got += d.toString('latin1')));
      await new Promise((r) => s.once('connect', r));
      s.write(HANDSHAKE);
      while (!got.includes('\r\n\r\n')) await sleep(10);
      expect(got).to.match(/^HTTP\/1\.1 101 /);
      s.write(frame('1')); // Open WebUI drops the connection
      await new Promise((r) => s.once('end', r)); // the gateway passed the close on (FIN)
      s.end(frame('2')); // a frame in flight (a ping, a Close), then the client is gone
      await sleep(1_500);
      expect(s.destroyed || s.readableEnded).to.equal(true);
      expect(gw.sockets[0]!.destroyed, 'gateway-side client socket still open (fd + tracker entry) after both peers left').to.equal(true);
      expect(gw.tracker.size, 'tracked WebSockets').to.equal(0);
    } finally {
      await gw.close();
      await new Promise((r) => wss.close(r));
    }
  });

  it('refused upgrade: bytes the client sent after its request (not in head), then it leaves: the gateway socket is released', async () => {
    const refusing = http.createServer((_req, res) => void setTimeout(() => res.writeHead(403, { 'content-type': 'text/plain' }).end('no'), 50));
    await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', r));
    const gw = await front(`http://127.0.0.1:${(refusing.address() as AddressInfo).port}`);
    try {
      const s = net.connect({ port: gw.port, host: '127.0.0.1', allowHalfOpen: true });
      s.on('error', () => {});
      let got = '';
      s.on('data', (d) => (got += d.toString('latin1')));
      const ended = new Promise((r) => s.once('end', r));
      await new Promise((r) => s.once('connect', r));
      // the request, then a second segment before the answer arrives: not in `head`, never read
      s.write(HANDSHAKE);
      await sleep(20);
      s.write('x');
      await ended;
      expect(got).to.match(/^HTTP\/1\.1 403 /);
      s.end();
      await sleep(1_000);
      expect(gw.sockets[0]!.destroyed, 'gateway-side socket of a refused upgrade still open after the client left').to.equal(true);
    } finally {
      await gw.close();
      refusing.closeAllConnections();
      await new Promise((r) => refusing.close(r));
    }
  });
});

describe('WebSocket ends: a refusal cut mid-body', function () {
  this.timeout(20_000);

  it('an upstream that resets mid-body of its refusal: no gateway 502 is written into the relayed body', async () => {
    const resetting = net.createServer((c) => {
      c.on('error', () => {});
      c.once('data', () => {
        c.write('HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nfirst part ');
        setTimeout(() => c.resetAndDestroy(), 50);
      });
    });
    await new Promise<void>((r) => resetting.listen(0, '127.0.0.1', r));
    const gw = await front(`http://127.0.0.1:${(resetting.address() as AddressInfo).port}`);
    try {
      const answer = await new Promise<string>((resolve) => {
        const s = net.connect(gw.port, '127.0.0.1');
        let got = '';
        s.on('data', (d) => (got += d.toString('latin1')));
        s.on('error', () => {});
        s.on('close', () => resolve(got));
        s.write(HANDSHAKE);
      });
      const body = answer.slice(answer.indexOf('\r\n\r\n') + 4);
      expect(body, 'a second answer written inside the first one').not.to.include('HTTP/1.1 502');
    } finally {
      await gw.close();
      await new Promise((r) => resetting.close(r));
    }
  });
});

describe('WebSocket ends: an admin socket whose session ended', function () {
  this.timeout(20_000);

  it('frames the guard is still judging when the session ends never reach the upstream', async () => {
    const upstreamGot: Array<{ text: string; at: number }> = [];
    const echo = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => echo.once('listening', r));
    echo.on('connection', (ws) => ws.on('message', (m) => upstreamGot.push({ text: String(m), at: Date.now() })));
    const upstream = new Upstream(
      { url: `http://127.0.0.1:${(echo.address() as AddressInfo).port}`, timeoutMs: 5_000, maxSockets: 10, rewriteMaxBytes: 1 << 20 },
      createObservability({ level: 'silent' }),
    );
    const tracker = new WebSocketTracker();
    let signedIn = true;
    let endedAt = 0;
    const verdict = (): SocketVerdict => (signedIn ? { keep: true } : { keep: false, reason: 'signed out', rule: 'the session ended' });
    // the real guard; its judge (a call to Open WebUI as the admin) takes 500 ms
    const server = http.createServer();
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      tracker.track(socket, { session: { key: 's1', label: 'admin', verdict } });
      // as gateway/pipeline/handle.ts wires it: the real guard, whose judge (a call to Open WebUI as
      // the admin) takes 500 ms here, and the tracker's word on whether the session still holds
      upstream.forwardUpgrade(
        req,
        socket,
        head,
        realGuard(
          () => sleep(500).then(() => true),
          () => tracker.mayForward(socket),
        ),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const ws = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws/socket.io/`);
      ws.on('error', () => {});
      await new Promise((r) => ws.once('open', r));
      // a chat join (judged: is the chat the admin's own?) followed by an ordinary event
      ws.send('42["events:chat",{"chat_id":"0b6f1a52-5c1e-4b53-9a0e-3c1f2d4e5a6b","data":{"type":"join"}}]');
      ws.send('42["usage",{"model":"x"}]');
      await sleep(100);
      signedIn = false;
      endedAt = Date.now();
      tracker.recheck('s1');
      const closed = await new Promise<number>((r) => ws.once('close', (code) => r(code)));
      expect(closed).to.equal(1008);
      await sleep(800);
      const late = upstreamGot.filter((m) => m.at > endedAt + 20);
      expect(
        late.map((m) => `${m.text} (+${m.at - endedAt} ms after the end)`),
        'frames delivered to Open WebUI after the session ended',
      ).to.deep.equal([]);
    } finally {
      tracker.destroyAll();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await new Promise((r) => echo.close(r));
    }
  });
});

describe('WebSocket ends: an admin socket is read only as fast as its messages are judged', function () {
  this.timeout(30_000);

  it('the client is not read without bound while its frames wait for a judgement', async () => {
    const echo = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => echo.once('listening', r));
    echo.on('connection', (ws) => ws.on('message', () => {}));
    // a judgement that takes as long as UPSTREAM_TIMEOUT_MS (here: never, within the test)
    const guard = realGuard(() => new Promise<boolean>(() => {}));
    const gw = await front(`http://127.0.0.1:${(echo.address() as AddressInfo).port}`, guard);
    try {
      const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/ws/socket.io/`);
      ws.on('error', () => {});
      await new Promise((r) => ws.once('open', r));
      ws.send('42["events:chat",{"chat_id":"c1","data":{"type":"join"}}]');
      const big = `42["usage",{"pad":"${'x'.repeat(1 << 20)}"}]`;
      for (let i = 0; i < 64; i++) ws.send(big);
      await sleep(3_000);
      const read = (gw.sockets[0] as net.Socket).bytesRead;
      const heldMiB = Math.round(read / (1 << 20));
      expect(heldMiB, 'MiB of client frames read and queued in the gateway behind one pending judgement').to.be.below(16);
      ws.terminate();
    } finally {
      await gw.close();
      await new Promise((r) => echo.close(r));
    }
  });
});

describe('WebSocket ends: an admin socket whose client breaks the protocol', function () {
  this.timeout(20_000);

  it('the upstream is told goodbye with a Close frame (1002), not cut; the client gets 1002 from the gateway and nothing it sends after reaches the upstream', async () => {
    const upstreamGot: string[] = [];
    let upstreamClose: number | undefined;
    const echo = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => echo.once('listening', r));
    echo.on('connection', (ws) => {
      ws.on('message', (m) => upstreamGot.push(String(m)));
      ws.on('close', (code) => (upstreamClose = code));
    });
    const upstream = new Upstream(
      { url: `http://127.0.0.1:${(echo.address() as AddressInfo).port}`, timeoutMs: 5_000, maxSockets: 10, rewriteMaxBytes: 1 << 20 },
      createObservability({ level: 'silent' }),
    );
    const tracker = new WebSocketTracker();
    const server = http.createServer();
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      tracker.track(socket);
      // as gateway/pipeline/handle.ts wires it: the tracker closes the client, the proxy the upstream
      const guard = realGuard(async () => true);
      upstream.forwardUpgrade(req, socket, head, {
        ...guard,
        make: (send, fail, flow) =>
          guard.make(
            send,
            (code, why) => {
              tracker.close(socket, code, why);
              fail(code, why);
            },
            flow,
          ),
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const s = await rawWebSocket(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      s.send(frame('42["usage",{"n":1}]'));
      for (let t = 0; t < 2_000 && !upstreamGot.length; t += 10) await sleep(10);
      s.send(Buffer.concat([clientFrame(5, Buffer.from('x')), frame('42["usage",{"n":2}]')]));
      for (let t = 0; t < 3_000 && !(s.state.ended && upstreamClose !== undefined); t += 10) await sleep(10);
      expect(s.state.close, 'the client').to.equal(1002);
      expect(upstreamClose, 'the upstream').to.equal(1002);
      expect(upstreamGot).to.deep.equal(['42["usage",{"n":1}]']);
    } finally {
      tracker.destroyAll();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await new Promise((r) => echo.close(r));
    }
  });
});
