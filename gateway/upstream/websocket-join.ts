// WebSocket upgrades to the chat front-end: the gateway makes the upstream connection itself, relays
// a refusal as HTTP, or joins the two sockets (through an admin's Socket.IO guard where there is one).
import http, { type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Observability } from '../observability/observability.js';
import { answerFailure, finishSocket, rawResponseHead, UpstreamError } from '../http/respond.js';
import { clientCloseFrame } from '../http/websockets.js';

/** How long an upstream told goodbye for a client whose frames were refused may take to close. */
const GUARD_CLOSE_WAIT_MS = 1_000;

/** An answer to stream must have a status a client can read (RFC 9110 15: 100 to 599). */
export const validStatus = (status: number | undefined) => status !== undefined && status >= 100 && status <= 599;

/** Where upgrades go, and how long the upstream has to answer one. */
export interface UpgradeTarget {
  target: URL;
  timeoutMs: number;
  obs: Observability;
}

/**
 * An admin's Socket.IO guard: reads the client's bytes, calls `send` with what may go upstream
 * (whole frames); `fail` when it refuses the client's frames (`code` for the client's Close
 * frame); `flow` pauses the client while what waits for a judgement is too much to hold.
 */
export type GuardFactory = (
  send: (b: Buffer) => void,
  fail: (code: number, why: string) => void,
  flow: { pause(): void; resume(): void },
) => {
  write(b: Buffer): void;
  /** `done` once everything written so far has been judged and sent on, or dropped */
  end(done: () => void): void;
};

/** How an admin's WebSocket is read: the guard, and whether what it lets through may still go. */
export interface Guarding {
  make: GuardFactory;
  /** false once the socket's session ended: a message judged after that (the judgement asked Open WebUI) stays here */
  mayForward(): boolean;
}

/**
 * Proxy a WebSocket upgrade whose url and headers the gateway has already set. With `guarding`
 * (an admin's Socket.IO, gateway/enforcement/socketio-guard.ts) the client's bytes go through the guard,
 * which calls `send` with what may go on; without, they are piped. The upstream's bytes reach the
 * client untouched. An answer other than 101 is relayed as HTTP and the connection closed.
 *
 * The gateway makes the upstream connection itself (not http-proxy-3's `ws()`): once the sockets
 * are joined, nothing of the handshake stays reachable from them. http-proxy-3's listeners kept
 * the client's request, the upstream request and its options alive for the socket's whole life
 * (docs/design/websocket-join.md, "Joined by the gateway").
 */
export function forwardUpgrade(to: UpgradeTarget, req: IncomingMessage, socket: Duplex, head: Buffer, guarding?: Guarding): void {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = v;
  // its own connection: an upgraded socket leaves any pool, and a handshake must not wait for one
  const up = http.request({
    protocol: to.target.protocol,
    hostname: to.target.hostname,
    port: to.target.port,
    method: 'GET',
    path: req.url,
    headers,
    agent: false,
  });
  let timedOut = false;
  /** the upstream answered: a failure from now on cuts the client instead of answering it */
  let answered = false;
  // UPSTREAM_TIMEOUT_MS for the upstream's answer, and for all of a refusal's body
  const timer = setTimeout(() => {
    timedOut = true;
    up.destroy();
  }, to.timeoutMs);
  const fields = { method: req.method, url: req.url };
  up.on('response', (answer) => {
    answered = true;
    answer.once('end', () => clearTimeout(timer));
    relayRefusal(answer, socket);
  });
  up.on('upgrade', (answer, upSocket, upHead) => {
    answered = true;
    clearTimeout(timer);
    joinSockets(socket, head, upSocket as Socket, answer, upHead, guarding);
  });
  up.on('error', (err: Error & { code?: string }) => {
    clearTimeout(timer);
    if (answered) return void socket.destroy();
    const kind = timedOut ? 'timeout' : err.code === 'ECONNREFUSED' || err.code === 'ENOTFOUND' || err.code === 'EHOSTUNREACH' ? 'unreachable' : 'reset';
    answerFailure(
      socket,
      Object.assign(new UpstreamError(kind, timedOut ? 'no answer to the upgrade in time' : err.message), { code: err.code }),
      to.obs,
      fields,
    );
  });
  // The client gone during the handshake or a refusal: the upstream request is not needed any
  // more. Removed once the sockets are joined: it would hold the handshake for the socket's life.
  const clientGone = () => {
    clearTimeout(timer);
    up.destroy();
  };
  socket.once('close', clientGone);
  up.once('upgrade', () => socket.removeListener('close', clientGone));
  up.once('error', () => socket.removeListener('close', clientGone));
  up.end();
}

/**
 * The upstream refused the upgrade with an ordinary answer: relayed as it came, body and all, then
 * the connection closed (the body delimited by the close: its own chunked framing was undone by
 * Node, and nothing else may follow on this socket).
 */
function relayRefusal(answer: IncomingMessage, client: Duplex): void {
  const raw: string[] = [];
  for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) {
    const name = answer.rawHeaders[i]!.toLowerCase();
    if (name !== 'transfer-encoding' && name !== 'connection' && name !== 'keep-alive') raw.push(answer.rawHeaders[i]!, answer.rawHeaders[i + 1]!);
  }
  raw.push('Connection', 'close');
  const status = validStatus(answer.statusCode) ? answer.statusCode! : 502;
  if (!client.writable) return void answer.resume();
  client.write(rawResponseHead(status, answer.statusMessage, raw));
  answer.pipe(client, { end: false });
  answer.once('end', () => finishSocket(client));
  // cut mid-body: the client sees the connection end before the body does (never a second answer)
  answer.once('error', () => client.destroy());
}

/**
 * The upstream switched protocols: the 101 goes to the client, then bytes flow both ways until
 * either side ends. Only the two sockets (and the guard) are reachable from the listeners set here.
 */
function joinSockets(
  client: Duplex,
  clientHead: Buffer,
  upstream: Socket,
  answer: IncomingMessage,
  upstreamHead: Buffer,
  guarding: Guarding | undefined,
): void {
  // A WebSocket is quiet for as long as it likes (Socket.IO pings itself); frames go out at once.
  upstream.setTimeout(0);
  upstream.setNoDelay(true);
  upstream.setKeepAlive(true, 0);
  const clientSocket = client as Partial<Socket>;
  clientSocket.setTimeout?.(0);
  clientSocket.setNoDelay?.(true);
  clientSocket.setKeepAlive?.(true, 0);
  client.write(rawResponseHead(101, answer.statusMessage, answer.rawHeaders));
  // Its session ended while the handshake was under way (gateway/http/websockets.ts answered the 101
  // with a Close frame and ended the client's side), or the client left: nothing it sends now may
  // reach the upstream, which is told goodbye.
  if (client.writableEnded || client.destroyed) {
    upstream.on('error', () => upstream.destroy());
    upstream.resume();
    upstream.end();
    return;
  }
  if (upstreamHead.length) client.write(upstreamHead);
  // Bytes are forwarded by hand rather than with pipe(): a pipe costs each direction nine closures
  // and three once-wrappers for as long as the socket is open (about 2 KB a WebSocket, measured
  // with a heap snapshot of 5,000 held); these listeners share this one scope.
  forward(upstream, client);
  const close = () => {
    upstream.destroy();
    client.destroy();
  };
  if (guarding) {
    // The client is read only while the upstream takes its bytes and the guard's queue is short.
    let upstreamFull = false;
    let guardFull = false;
    const flow = () => (upstreamFull || guardFull ? client.pause() : client.resume());
    const guard = guarding.make(
      (b) => {
        if (!guarding.mayForward()) return;
        if (upstream.write(b) || upstreamFull) return;
        upstreamFull = true;
        flow();
        upstream.once('drain', () => ((upstreamFull = false), flow()));
      },
      (code) => {
        // The client broke the protocol: it is read no more (its Close frame is the caller's to
        // send, gateway/http/websockets.ts). The upstream got whole frames only, so it is told
        // goodbye with a Close frame of its own, and cut if it does not go in time.
        client.removeAllListeners('data');
        client.pause();
        upstream.end(clientCloseFrame(code));
        setTimeout(() => upstream.destroy(), GUARD_CLOSE_WAIT_MS).unref();
      },
      { pause: () => ((guardFull = true), flow()), resume: () => ((guardFull = false), flow()) },
    );
    if (clientHead.length) guard.write(clientHead);
    // The client's end goes upstream after the frames the guard still holds (judged asynchronously,
    // some after asking Open WebUI); at once if it came with the handshake, as forward() does.
    const endUpstream = () => guard.end(() => upstream.end());
    if (client.readableEnded) endUpstream();
    client.on('data', (b: Buffer) => guard.write(b));
    client.on('end', endUpstream);
    client.resume();
  } else {
    if (clientHead.length) upstream.write(clientHead);
    forward(client, upstream);
  }
  client.on('error', close);
  client.on('close', () => upstream.destroy());
  upstream.on('error', close);
  // The upstream is gone: the client gets what is left of its bytes, then the end; what it still
  // sends goes nowhere, and its socket closes (finishSocket).
  upstream.on('close', () => {
    client.removeAllListeners('data');
    finishSocket(client);
  });
}

/**
 * `from`'s bytes to `to`, with back-pressure, and its end after them: what pipe() does for two
 * sockets, in three listeners. Reading stops for good once its 'data' listener is taken away (a
 * socket closed for its session, gateway/http/websockets.ts).
 */
function forward(from: Duplex, to: Duplex): void {
  // Already ended (a client that sent its FIN with the handshake): only the end is left to pass on.
  if (from.readableEnded) return void to.end();
  from.on('data', (chunk: Buffer) => {
    if (!to.write(chunk)) from.pause();
  });
  to.on('drain', () => {
    if (from.listenerCount('data') > 0) from.resume();
  });
  from.on('end', () => to.end());
  from.resume();
}
