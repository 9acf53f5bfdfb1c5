// Every byte to and from the chat front-end goes through here: the streaming proxy for client
// traffic (http-proxy-3 over one keep-alive agent), WebSocket upgrades (`forwardUpgrade`, the two
// sockets joined by the gateway) and `call()` for the gateway's own requests
// (sign-in, rewritten routes, owner lookups, drift checks). Client bodies are piped, never
// buffered; only `call()` buffers, and only up to a bound.
import http, { type IncomingMessage, type ServerResponse, type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { Readable, type Duplex } from 'node:stream';
import zlib from 'node:zlib';
import { ProxyServer } from 'http-proxy-3';
import type { Observability } from '../ops/observability.js';
import { answerFailure, finishSocket, PERSONAL_CACHE_CONTROL, rawResponseHead, UPSTREAM_DOWN, UPSTREAM_TIMEOUT, UpstreamError } from '../http/respond.js';
import { classify } from '../../policies/routes.js';
import { clientCloseFrame } from '../http/websockets.js';

/** How long an upstream told goodbye for a client whose frames were refused may take to close. */
const GUARD_CLOSE_WAIT_MS = 1_000;

export interface UpstreamOptions {
  url: string;
  timeoutMs: number;
  maxSockets: number;
  rewriteMaxBytes: number;
  /** idle time allowed inside a streaming response before it is cut */
  idleTimeoutMs?: number;
}

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** decoded (gzip, deflate, br undone) */
  body: Buffer;
}

/** Reads an upstream body chunk by chunk instead of having it buffered; throws to refuse it. */
export interface BodySink {
  write(chunk: Buffer): void;
}

export { UpstreamError };

/** `timeout=5` for a server with keepAliveTimeout 5000, as Node writes it. */
function keepAliveHint(socket: object | null): string | undefined {
  const ms = (socket as { server?: { keepAliveTimeout?: number } } | null)?.server?.keepAliveTimeout;
  return ms ? `timeout=${Math.floor(ms / 1000)}` : undefined;
}

/** The path of a request target (the canonical one the gateway set), without its query. */
function pathOf(url: string | undefined): string {
  if (!url) return '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** One proxied exchange, kept beside the request (never as fields added to Node's objects). */
interface Exchange {
  timer?: NodeJS.Timeout;
  /** the upstream's answer being streamed */
  answer?: IncomingMessage;
  timedOut: boolean;
  answered: boolean;
  /** the gateway's own Set-Cookie lines for the answer (the request's context: a renewed or cleared session) */
  setCookies: readonly string[] | undefined;
}

/** An answer to stream must have a status a client can read (RFC 9110 15: 100 to 599). */
const validStatus = (status: number | undefined) => status !== undefined && status >= 100 && status <= 599;

/**
 * Headers copied from an upstream answer that failed before its first byte: the 502 carries none of
 * them, but keeps the gateway's own Set-Cookie (a session renewed by this request: its rotated
 * refresh token must reach the browser, or the next request spends the old one).
 */
function dropUpstreamHeaders(res: ServerResponse, ours: readonly string[] | undefined): void {
  for (const name of res.getHeaderNames()) if (name !== 'x-request-id') res.removeHeader(name);
  if (ours?.length) res.setHeader('set-cookie', [...ours]);
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

export function createUpstream(options: UpstreamOptions, obs: Observability) {
  const target = new URL(options.url);
  const agent = new http.Agent({
    keepAlive: true,
    maxSockets: options.maxSockets,
    maxFreeSockets: 256,
    timeout: options.idleTimeoutMs ?? 300_000,
    scheduling: 'lifo',
  });
  const proxy = new ProxyServer({
    target, // a URL object: http-proxy-3 parses a string target again on every request
    agent,
    xfwd: false, // the gateway sets X-Forwarded-* itself from what it trusts
    changeOrigin: false,
    ws: false, // upgrades: forwardUpgrade
    proxyTimeout: options.idleTimeoutMs ?? 300_000,
  });

  // Time to response headers, counted from the end of the request body: an upstream slower than
  // the timeout gets 504. A long upload is not cut by it (the idle timeouts bound a stalled one).
  const exchanges = new WeakMap<IncomingMessage, Exchange>();
  const exchangeOf = (req: IncomingMessage): Exchange => {
    let x = exchanges.get(req);
    if (!x) exchanges.set(req, (x = { timedOut: false, answered: false, setCookies: undefined }));
    return x;
  };

  proxy.on('proxyReq', (proxyReq, req) => {
    const tracked = exchangeOf(req);
    const arm = () => {
      if (tracked.answered) return;
      tracked.timer = setTimeout(() => {
        tracked.timedOut = true;
        proxyReq.destroy();
      }, options.timeoutMs);
    };
    if (req.complete) arm();
    else req.once('end', arm);
  });
  proxy.on('proxyRes', (proxyRes, req, res) => {
    const tracked = exchangeOf(req);
    tracked.answered = true;
    clearTimeout(tracked.timer);
    if (!validStatus(proxyRes.statusCode)) {
      // Relayed, an invalid status (999) would be the client's problem; answered here, http-proxy-3
      // finds the response finished and pipes nothing.
      proxyRes.destroy();
      answerFailure(
        res as ServerResponse,
        new UpstreamError('bad-status', `upstream answered an invalid status ${proxyRes.statusCode}`),
        obs,
        { method: req.method, url: req.url },
        { connection: 'close' },
      );
      return;
    }
    tracked.answer = proxyRes;
    // The upstream's socket gone mid-body (killed, reset, a framing error): the client's connection
    // ends at once, so it sees an incomplete body (no last chunk, fewer bytes than Content-Length)
    // instead of waiting for the idle timeout. A pipe alone would leave it open.
    // (Node emits 'error', "aborted", on an answer whose socket closed before its end.)
    proxyRes.on('error', () => {
      if (!(res as ServerResponse).writableEnded) (res as ServerResponse).destroy();
    });
    // The upstream connection's hop-by-hop headers are not the client's (RFC 9110 7.6.1), and the
    // client's own `Connection: close` (removed from req.headers before forwarding) must still be
    // honoured: left alone, http-proxy-3 answers `Connection: keep-alive` and the socket stays open.
    // Overwritten, not deleted (http-proxy-3 skips undefined values; a delete slows every later
    // read of the object).
    const headers = proxyRes.headers;
    const keepAlive = (res as ServerResponse).shouldKeepAlive !== false;
    headers.connection = keepAlive ? 'keep-alive' : 'close';
    // The gateway's own keep-alive hint, as Node sends it on the gateway's other answers.
    headers['keep-alive'] = keepAlive ? keepAliveHint((res as ServerResponse).socket) : undefined;
    if (headers['proxy-connection'] !== undefined) headers['proxy-connection'] = undefined;
    // The chat front-end's API answers and pages are a signed-in user's (GET /api/v1/auths/ even
    // carries its token, with an ETag and no Cache-Control): never stored, so that Back after
    // signing out shows nothing from the cache (issue 28 item 1). Static assets (/static/, /_app/,
    // ...) keep what the upstream says: they cost nothing more.
    if (classify(pathOf(req.url)) !== 'public') headers['cache-control'] = PERSONAL_CACHE_CONTROL;
    // The gateway's own Set-Cookie (a renewed or cleared session) first: http-proxy-3 copies the
    // upstream's with setHeader, which replaces what the answer already holds.
    const ours = tracked.setCookies;
    if (ours && headers['set-cookie']) headers['set-cookie'] = [...ours, ...headers['set-cookie']];
  });

  const onError = (err: Error & { code?: string }, req: IncomingMessage, res: ServerResponse | Duplex) => {
    const tracked = exchangeOf(req);
    tracked.answered = true;
    clearTimeout(tracked.timer);
    const timedOut = tracked.timedOut;
    // HPE_*: llhttp could not parse the answer (broken chunk framing, bytes past Content-Length, ...).
    const malformed = err.code?.startsWith('HPE_') === true;
    const kind = timedOut
      ? 'timeout'
      : malformed
        ? 'bad-answer'
        : err.code === 'ECONNREFUSED' || err.code === 'ENOTFOUND' || err.code === 'EHOSTUNREACH'
          ? 'unreachable'
          : 'reset';
    const failure = Object.assign(new UpstreamError(kind, err.message), { code: err.code });
    const fields = { method: req.method, url: req.url };
    if (!(res as ServerResponse).writeHead) return answerFailure(res, failure, obs, fields);
    const response = res as ServerResponse;
    // An answer already being streamed stops here: nothing more of it may be written, not even the
    // bytes the same read parsed before the error (written after the 502, they crashed the process).
    const answer = tracked.answer;
    if (answer) {
      answer.unpipe(response);
      answer.destroy();
    }
    // Something was sent already: the client can only learn of the failure by the connection
    // ending (answerFailure destroys it). Else the 502 carries none of the upstream's headers, and
    // a request body still coming (an upload whose upstream died) is not read to its end: the 502
    // closes the connection.
    if (!response.headersSent) dropUpstreamHeaders(response, tracked.setCookies);
    answerFailure(response, failure, obs, fields, req.complete ? {} : { connection: 'close' });
  };
  // A client that went away is not an error worth a log line; http-proxy-3 already aborted upstream.
  proxy.on('econnreset', (_err, req) => clearTimeout(exchanges.get(req)?.timer));
  // Every web() call has its own error callback, and upgrades do not go through http-proxy-3; this
  // listener is there so that an error it might still emit on itself is answered, never thrown (an
  // EventEmitter without an 'error' listener throws, and the process exits: issue 16).
  proxy.on('error', (err: Error & { code?: string }, req: IncomingMessage, target: unknown) => {
    if (target && typeof (target as ServerResponse).writeHead === 'function') return onError(err, req, target as ServerResponse);
    (target as Duplex | undefined)?.destroy();
  });

  return {
    agent,
    /**
     * Stream a request whose url and headers the gateway has already set. `setCookies`: the
     * gateway's own Set-Cookie lines of the answer (already on `res`), kept ahead of the upstream's.
     */
    forward(req: IncomingMessage, res: ServerResponse, body?: Buffer, setCookies?: readonly string[]): void {
      if (setCookies) exchangeOf(req).setCookies = setCookies;
      // The exchange's state ends with the answer. Left in the WeakMap, its `answer` (whose
      // listeners lead back to the request, its own key) kept every exchange alive through the
      // young-generation GCs until the next full one: 15 % of all allocation promoted to the old
      // generation, a mark-compact every 2 s under load (bench/README.md, "Fifth pass"). An
      // answer cut short (the client left first) also stops its upstream timer, which would hold
      // the exchange until UPSTREAM_TIMEOUT_MS: http-proxy-3 has already aborted that request.
      res.once('close', () => {
        const tracked = exchanges.get(req);
        if (!tracked) return;
        clearTimeout(tracked.timer);
        tracked.answered = true;
        exchanges.delete(req);
      });
      // `body`: a request body the gateway had to read to judge it, sent on byte for byte
      proxy.web(req, res, body ? { buffer: Readable.from([body]) } : {}, (err) => onError(err as Error, req, res));
    },
    /**
     * Proxy a WebSocket upgrade whose url and headers the gateway has already set. With `guarding`
     * (an admin's Socket.IO, gateway/http/socketio-guard.ts) the client's bytes go through the guard,
     * which calls `send` with what may go on; without, they are piped. The upstream's bytes reach the
     * client untouched. An answer other than 101 is relayed as HTTP and the connection closed.
     *
     * The gateway makes the upstream connection itself (not http-proxy-3's `ws()`): once the sockets
     * are joined, nothing of the handshake stays reachable from them. http-proxy-3's listeners kept
     * the client's request, the upstream request and its options alive for the socket's whole life
     * (bench/README.md, "Ninth pass").
     */
    forwardUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, guarding?: Guarding): void {
      const headers: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = v;
      // its own connection: an upgraded socket leaves any pool, and a handshake must not wait for one
      const up = http.request({ protocol: target.protocol, hostname: target.hostname, port: target.port, method: 'GET', path: req.url, headers, agent: false });
      let timedOut = false;
      /** the upstream answered: a failure from now on cuts the client instead of answering it */
      let answered = false;
      // UPSTREAM_TIMEOUT_MS for the upstream's answer, and for all of a refusal's body
      const timer = setTimeout(() => {
        timedOut = true;
        up.destroy();
      }, options.timeoutMs);
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
          obs,
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
    },
    /**
     * One request of the gateway's own, buffered up to rewriteMaxBytes, decoded.
     * Throws UpstreamError (502/504 material) on every failure.
     */
    call(
      method: string,
      path: string,
      headers: Record<string, string | string[] | undefined>,
      body?: string | Buffer,
      sinkFor?: (status: number) => BodySink | undefined,
    ): Promise<UpstreamResponse> {
      return new Promise((resolve, reject) => {
        const outgoing: Record<string, string | string[]> = { host: target.host };
        for (const [k, v] of Object.entries(headers)) if (v !== undefined) outgoing[k] = v;
        outgoing['accept-encoding'] = 'identity';
        if (body !== undefined) outgoing['content-length'] = String(Buffer.byteLength(body));
        const req = http.request({ protocol: target.protocol, hostname: target.hostname, port: target.port, method, path, headers: outgoing, agent });
        const timer = setTimeout(() => req.destroy(new UpstreamError('timeout', UPSTREAM_TIMEOUT)), options.timeoutMs);
        const fail = (err: Error & { code?: string }) => {
          clearTimeout(timer);
          if (err instanceof UpstreamError) return reject(err);
          reject(new UpstreamError(err.code === 'ECONNREFUSED' ? 'unreachable' : 'reset', `${UPSTREAM_DOWN}: ${err.message}`));
        };
        req.on('error', fail);
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const decoded = decoder(res.headers['content-encoding']);
          if (!decoded) {
            res.resume();
            return fail(new UpstreamError('bad-body', `unsupported content-encoding ${String(res.headers['content-encoding'])}`));
          }
          const stream = decoded === 'identity' ? res : res.pipe(decoded);
          // A sink reads the decoded body as it arrives (the streamed file filter); the answer then
          // carries an empty body. A sink that throws has refused the body: the rest is read and
          // dropped, and the call fails when the body ends (a body that stalls stays a timeout).
          const sink = sinkFor?.(res.statusCode ?? 502);
          let refused: UpstreamError | undefined;
          stream.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > options.rewriteMaxBytes) {
              req.destroy(new UpstreamError('too-large', `upstream body larger than ${options.rewriteMaxBytes} bytes`));
              return;
            }
            if (!sink) return void chunks.push(chunk);
            if (refused) return;
            try {
              sink.write(chunk);
            } catch (err) {
              refused = new UpstreamError('bad-body', `upstream body refused: ${(err as Error).message}`);
            }
          });
          stream.on('error', (err: Error) => fail(err instanceof UpstreamError ? err : new UpstreamError('bad-body', `undecodable body: ${err.message}`)));
          stream.on('end', () => {
            clearTimeout(timer);
            if (refused) return reject(refused);
            resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) });
          });
          res.on('aborted', () => fail(new UpstreamError('reset', 'upstream closed mid-body')));
        });
        req.end(body);
      });
    },
    close(): void {
      proxy.close();
      agent.destroy();
    },
  };
}

export type Upstream = ReturnType<typeof createUpstream>;

function decoder(encoding: string | undefined): 'identity' | NodeJS.ReadWriteStream | undefined {
  const e = (encoding ?? 'identity').trim().toLowerCase();
  if (e === 'identity' || e === '') return 'identity';
  if (e === 'gzip' || e === 'x-gzip') return zlib.createGunzip();
  if (e === 'deflate') return zlib.createInflate();
  if (e === 'br') return zlib.createBrotliDecompress();
  return undefined;
}
