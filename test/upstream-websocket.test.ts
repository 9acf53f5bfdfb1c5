// An open WebSocket keeps nothing of its handshake (peak RSS with 5,000 WebSockets held).
// Through http-proxy-3's ws(), the listeners on both sockets kept the client's upgrade request, the
// upstream request and its options alive for as long as the socket stayed open. The gateway now
// joins the two sockets itself: once they are joined, the handshake's objects are garbage. Checked
// on real sockets, plain and guarded (an admin's Socket.IO), with a real GC.
import { expect } from 'chai';
import http, { type IncomingMessage } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import WebSocket, { WebSocketServer } from 'ws';
import { Upstream, type Guarding } from '../gateway/upstream/proxy.js';
import { createObservability } from '../gateway/observability/observability.js';
import { WebSocketTracker } from '../gateway/http/websockets.js';
import type { SocketVerdict } from '../policies/session-ends.js';
import { ACCEPT, HANDSHAKE } from './support/websocket-wire.js';
import { sleep } from './support/wait.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function collected(refs: WeakRef<object>[]): Promise<number> {
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
  return refs.filter((r) => r.deref() === undefined).length;
}

describe('upstream: an open WebSocket keeps nothing of its handshake', function () {
  this.timeout(30_000);

  for (const guarded of [false, true]) {
    it(`${guarded ? 'guarded (an admin)' : 'plain'}: the upgrade request is garbage while the sockets stay open`, async () => {
      const echo = new WebSocketServer({ port: 0, host: '127.0.0.1' });
      await new Promise((r) => echo.once('listening', r));
      echo.on('connection', (ws) => ws.on('message', (m) => ws.send(m)));
      const upstream = new Upstream(
        { url: `http://127.0.0.1:${(echo.address() as AddressInfo).port}`, timeoutMs: 5_000, maxSockets: 10, rewriteMaxBytes: 1 << 20 },
        createObservability({ level: 'silent' }),
      );
      const requests: WeakRef<IncomingMessage>[] = [];
      const guard: Guarding = { make: (send) => ({ write: (b) => send(b), end: (done) => done() }), mayForward: () => true };
      const front = http.createServer();
      front.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
        requests.push(new WeakRef(req));
        upstream.forwardUpgrade(req, socket, head, guarded ? guard : undefined);
      });
      await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
      const url = `ws://127.0.0.1:${(front.address() as AddressInfo).port}/ws/socket.io/`;
      const clients: WebSocket[] = [];
      try {
        for (let i = 0; i < 20; i++) {
          const ws = new WebSocket(url);
          clients.push(ws);
          await new Promise((r, j) => ws.once('open', r).once('error', j));
          // one echo each: the bytes really flow both ways through the joined sockets
          const answer = new Promise<string>((r) => ws.once('message', (m) => r(String(m))));
          ws.send(`hello ${i}`);
          expect(await answer).to.equal(`hello ${i}`);
        }
        expect(await collected(requests), 'upgrade requests still reachable from open sockets').to.equal(requests.length);
        // still open and working after the GC
        const last = clients.at(-1)!;
        const answer = new Promise<string>((r) => last.once('message', (m) => r(String(m))));
        last.send('still here');
        expect(await answer).to.equal('still here');
      } finally {
        for (const ws of clients) ws.terminate();
        front.closeAllConnections();
        await new Promise((r) => front.close(r));
        await new Promise((r) => echo.close(r));
        upstream.agent.destroy();
      }
    });
  }
});

/**
 * A front server forwarding every upgrade to `upstreamUrl` (guarded if `guard` is given); a raw
 * client's whole answer once its connection closes (or what it had after `waitMs`). With `fin`,
 * the client sends its FIN with the request.
 */
async function handshake(
  upstreamUrl: string,
  o: { timeoutMs?: number; guard?: Guarding; fin?: boolean; waitMs?: number } = {},
): Promise<{ answer: string; elapsedMs: number }> {
  const upstream = new Upstream(
    { url: upstreamUrl, timeoutMs: o.timeoutMs ?? 5_000, maxSockets: 10, rewriteMaxBytes: 1 << 20 },
    createObservability({ level: 'silent' }),
  );
  const front = http.createServer();
  front.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    upstream.forwardUpgrade(req, socket, head, o.guard);
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  try {
    const started = Date.now();
    const answer = await new Promise<string>((resolve) => {
      const s = net.connect((front.address() as AddressInfo).port, '127.0.0.1');
      let got = '';
      s.on('data', (d) => (got += d.toString('latin1')));
      s.on('error', () => {});
      s.on('close', () => resolve(got));
      if (o.waitMs) s.setTimeout(o.waitMs, () => resolve(`${got}(still open after ${o.waitMs} ms)`));
      if (o.fin) s.end(HANDSHAKE);
      else s.write(HANDSHAKE);
    });
    return { answer, elapsedMs: Date.now() - started };
  } finally {
    front.closeAllConnections();
    await new Promise((r) => front.close(r));
    upstream.agent.destroy();
  }
}

describe('upstream: a client that sends its FIN with the handshake', function () {
  this.timeout(30_000);

  for (const guarded of [false, true]) {
    it(`${guarded ? 'guarded (an admin)' : 'plain'}: the upstream is told the end after the 101, and both connections close`, async () => {
      // The upstream answers the upgrade 100 ms late: the client's FIN is in by then.
      let upstreamEnded = false;
      const upstreamSockets: net.Socket[] = [];
      const slow = net.createServer((s) => {
        upstreamSockets.push(s);
        s.on('error', () => {});
        s.once('data', () => setTimeout(() => s.write(ACCEPT), 100));
        s.on('end', () => {
          upstreamEnded = true;
          s.end();
        });
      });
      await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
      const guard: Guarding = { make: (send) => ({ write: (b) => send(b), end: (done) => done() }), mayForward: () => true };
      try {
        const { answer } = await handshake(`http://127.0.0.1:${(slow.address() as AddressInfo).port}`, {
          guard: guarded ? guard : undefined,
          fin: true,
          waitMs: 3_000,
        });
        expect(answer).to.match(/^HTTP\/1\.1 101 /);
        expect(answer).not.to.contain('still open');
        expect(upstreamEnded, 'the upstream saw the client end').to.equal(true);
      } finally {
        for (const s of upstreamSockets) s.destroy();
        await new Promise((r) => slow.close(r));
      }
    });
  }
});

describe('upstream: a WebSocket handshake the upstream does not complete', function () {
  this.timeout(30_000);

  it('an ordinary answer instead of 101 (chunked) reaches the client whole, readable, and the connection closes', async () => {
    const refusing = http.createServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json', 'x-upstream': 'yes' });
      res.write('{"detail":');
      setTimeout(() => res.end('"Not allowed"}'), 20);
    });
    await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', r));
    try {
      const { answer } = await handshake(`http://127.0.0.1:${(refusing.address() as AddressInfo).port}`);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head).to.match(/^HTTP\/1\.1 403 /);
      expect(head).to.match(/\r\nx-upstream: yes/i);
      expect(head).to.match(/\r\nConnection: close/i);
      // Node undid the upstream's chunked framing: the answer must not claim it
      expect(head).not.to.match(/transfer-encoding/i);
      expect(body).to.equal('{"detail":"Not allowed"}');
    } finally {
      refusing.closeAllConnections();
      await new Promise((r) => refusing.close(r));
    }
  });

  it('an upstream that never answers the upgrade: 504 after UPSTREAM_TIMEOUT_MS, its connection closed', async () => {
    const held: net.Socket[] = [];
    const silent = net.createServer((s) => held.push(s.on('error', () => {}).resume()));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const { answer, elapsedMs } = await handshake(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`, { timeoutMs: 300 });
      expect(answer).to.match(/^HTTP\/1\.1 504 /);
      expect(elapsedMs).to.be.within(250, 5_000);
      await sleep(100);
      expect(
        held.every((s) => s.destroyed || s.readableEnded),
        'the upstream connection is closed',
      ).to.equal(true);
    } finally {
      for (const s of held) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('an upstream that cannot be reached: 502', async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const { answer } = await handshake(`http://127.0.0.1:${port}`);
    expect(answer).to.match(/^HTTP\/1\.1 502 /);
  });
});

describe('upstream: a session that ends while its WebSocket handshake is under way', function () {
  this.timeout(30_000);

  for (const guarded of [false, true]) {
    it(`${guarded ? 'guarded (an admin)' : 'plain'}: the client gets the 101 then Close 1008, and none of its frames reaches the upstream`, async () => {
      // The upstream takes 300 ms to accept: the session ends meanwhile.
      const upstreamGot: string[] = [];
      const echo = new WebSocketServer({ port: 0, host: '127.0.0.1', verifyClient: (_info, done) => void setTimeout(() => done(true), 300) });
      await new Promise((r) => echo.once('listening', r));
      echo.on('connection', (ws) => ws.on('message', (m) => upstreamGot.push(String(m))));
      const upstream = new Upstream(
        { url: `http://127.0.0.1:${(echo.address() as AddressInfo).port}`, timeoutMs: 5_000, maxSockets: 10, rewriteMaxBytes: 1 << 20 },
        createObservability({ level: 'silent' }),
      );
      const tracker = new WebSocketTracker();
      let signedIn = true;
      const verdict = (): SocketVerdict => (signedIn ? { keep: true } : { keep: false, reason: 'signed out', rule: 'the session ended' });
      const front = http.createServer();
      front.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
        socket.on('error', () => socket.destroy());
        tracker.track(socket, { session: { key: 's1', label: 'alice', verdict } });
        const guard: Guarding = { make: (send) => ({ write: (b) => send(b), end: (done) => done() }), mayForward: () => tracker.mayForward(socket) };
        upstream.forwardUpgrade(req, socket, head, guarded ? guard : undefined);
        setTimeout(() => {
          signedIn = false;
          tracker.recheck('s1');
        }, 100);
      });
      await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
      try {
        const ws = new WebSocket(`ws://127.0.0.1:${(front.address() as AddressInfo).port}/ws/socket.io/`);
        // a browser sends as soon as the socket is open: before it has read the Close frame
        ws.once('open', () => {
          ws.send('after the end 1');
          ws.send('after the end 2');
        });
        ws.on('error', () => {});
        const closed = await new Promise<{ code: number; reason: string }>((r) => ws.once('close', (code, reason) => r({ code, reason: String(reason) })));
        expect(closed).to.deep.equal({ code: 1008, reason: 'signed out' });
        await sleep(300);
        expect(upstreamGot, 'frames sent after the session ended').to.deep.equal([]);
      } finally {
        tracker.destroyAll();
        front.closeAllConnections();
        await new Promise((r) => front.close(r));
        await new Promise((r) => echo.close(r));
      }
    });
  }
});
