// An open WebSocket whose session's end cannot be known at a check is kept when asking the shared
// state settles it (the check only lapsed: a stalled event loop), and closed when asking does not
// help (Redis unreachable: fail closed). Real sockets, the real tracker and proxy.
import { expect } from 'chai';
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';
import { Upstream } from '../gateway/upstream/proxy.js';
import { createObservability } from '../gateway/observability/observability.js';
import { WebSocketTracker } from '../gateway/http/websockets.js';
import { socketVerdict, type SocketVerdict } from '../policies/session-ends.js';
import { sleep } from './support/wait.js';

const facts = { email: 'alice@example.com', name: 'Alice', admin: false, groups: [], tenants: [], activeTenant: null };

/** A gateway side whose one session's end is unknown until `settle` runs, which `answers` decides. */
async function world(answers: () => boolean | undefined) {
  const echo = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((r) => echo.once('listening', r));
  echo.on('connection', (ws) => ws.on('message', (m) => ws.send(String(m))));
  const upstream = new Upstream(
    { url: `http://127.0.0.1:${(echo.address() as AddressInfo).port}`, timeoutMs: 5_000, maxSockets: 10, rewriteMaxBytes: 1 << 20 },
    createObservability({ level: 'silent' }),
  );
  let ended: boolean | undefined = false;
  let settles = 0;
  const closed: string[] = [];
  const tracker = new WebSocketTracker({
    settle: async () => {
      settles++;
      await sleep(50);
      ended = answers();
    },
    closedForSession: (_label, reason) => closed.push(reason),
  });
  const verdict = (): SocketVerdict => socketVerdict({ ended, alive: true, tokenExpired: false, opened: facts, current: facts });
  const server = http.createServer();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    tracker.track(socket, { session: { key: 's1', label: 'alice', verdict } });
    upstream.forwardUpgrade(req, socket, head);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const ws = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws/socket.io/`);
  ws.on('error', () => {});
  await new Promise((r) => ws.once('open', r));
  return {
    ws,
    tracker,
    closed,
    settles: () => settles,
    lapse: () => (ended = undefined),
    async close() {
      ws.terminate();
      tracker.destroyAll();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await new Promise((r) => echo.close(r));
    },
  };
}

describe('an open WebSocket whose session cannot be checked for a moment', function () {
  this.timeout(10_000);

  it('is kept when asking the shared state settles it (the check only lapsed), and still carries messages', async () => {
    const w = await world(() => false);
    try {
      w.lapse();
      w.tracker.recheck('s1');
      await sleep(300);
      expect(w.settles(), 'asked once').to.equal(1);
      expect(w.closed).to.deep.equal([]);
      expect(w.ws.readyState).to.equal(WebSocket.OPEN);
      const echoed = new Promise<string>((r) => w.ws.once('message', (m) => r(String(m))));
      w.ws.send('still here');
      expect(await echoed).to.equal('still here');
    } finally {
      await w.close();
    }
  });

  it('is closed (1008, "sign-in cannot be checked") when asking does not settle it: fail closed', async () => {
    const w = await world(() => undefined);
    try {
      const code = new Promise<number>((r) => w.ws.once('close', (c) => r(c)));
      w.lapse();
      w.tracker.recheck('s1');
      expect(await code).to.equal(1008);
      expect(w.settles()).to.equal(1);
      expect(w.closed).to.deep.equal(['sign-in cannot be checked']);
    } finally {
      await w.close();
    }
  });

  it('is closed when the answer, once asked, is that the session ended', async () => {
    const w = await world(() => true);
    try {
      const code = new Promise<number>((r) => w.ws.once('close', (c) => r(c)));
      w.lapse();
      w.tracker.recheck('s1');
      expect(await code).to.equal(1008);
      expect(w.closed).to.deep.equal(['signed out']);
    } finally {
      await w.close();
    }
  });
});
