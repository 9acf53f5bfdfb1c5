// The listening socket and everything Node hands the gateway besides a request: timeouts, the
// request log and metrics, `Expect: 100-continue`, upgrades, CONNECT, malformed requests
// (clientError) and a graceful close. What happens to a request is gateway/pipeline/handle.ts.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Settings } from '../../config/settings.js';
import { classify, type RouteClass } from '../../policies/routes.js';
import type { Observability } from '../observability/observability.js';
import { createQuietGc, type QuietGc } from './quiet-gc.js';
import { answerFailure, finishSocket, rawJsonAnswer } from './respond.js';
import type { WebSocketTracker } from './websockets.js';

/**
 * What the handler learns for a request's metrics and log line (its route class): kept in an object of the
 * gateway's own (a property added to Node's response object would give it a new shape, which
 * slows all of Node's code that reads responses).
 */
export interface RequestLabels {
  routeClass: RouteClass | undefined;
}

/** What the server hands each request and upgrade to (gateway/pipeline/handle.ts). */
export interface RequestHandler {
  handle(req: IncomingMessage, res: ServerResponse, labels: RequestLabels): Promise<void>;
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, closing: boolean): Promise<void>;
}

export interface HttpServer {
  server: http.Server;
  listen(port: number, host: string): Promise<{ port: number; url: string }>;
  /** Stop accepting; let answers under way finish up to `graceMs`, close WebSockets, then cut the rest. */
  close(graceMs: number): Promise<void>;
}

/**
 * Per client socket, for its life: answers still being written, and the latest request while one
 * is (for `clientError`); the quiet collection's mark on the connection.
 */
class Answers {
  open = 0;
  req: IncomingMessage | undefined = undefined;
  res: ServerResponse | undefined = undefined;
  answering: boolean | undefined = undefined;
  constructor(private readonly socket: Duplex) {}
  get destroyed(): boolean {
    return this.socket.destroyed;
  }
}
type Answering = WeakMap<object, Answers>;

/** What the server's listeners share. */
interface ServerState {
  readonly obs: Observability;
  readonly pipeline: RequestHandler;
  readonly quietGc: QuietGc;
  readonly answering: Answering;
  /** set once close() began */
  closing: boolean;
}

export function createHttpServer(o: {
  server: Settings['server'];
  obs: Observability;
  pipeline: RequestHandler;
  websockets: WebSocketTracker;
  idleTimeoutMs: number;
}): HttpServer {
  const { obs, pipeline } = o;
  const quietGc = createQuietGc({ quietMs: o.server.quietGcMs, log: obs.log, collections: obs.metrics.quietCollections });
  const state: ServerState = { obs, pipeline, quietGc, answering: new WeakMap(), closing: false };
  const onRequest = requestListener(state, () => server);
  const server = http.createServer(
    {
      headersTimeout: o.server.headersTimeoutMs,
      requestTimeout: o.server.requestTimeoutMs,
      keepAliveTimeout: 5_000,
      // Node checks both timeouts only this often (default 30 s, so slow headers lived 30 s longer).
      connectionsCheckingInterval: Math.min(1_000, o.server.headersTimeoutMs),
    },
    onRequest,
  );
  // IDLE_TIMEOUT_MS (at least UPSTREAM_TIMEOUT_MS, gateway/app.ts): a connection silent that long
  // mid-request (a stalled body, REQUEST_TIMEOUT_MS being off for long uploads) or mid-answer is
  // closed. WebSockets are exempt (Node drops the listener on upgrade).
  server.timeout = o.idleTimeoutMs;
  // Judge before the client sends its body: a refused upload never gets `100 Continue`.
  server.on('checkContinue', onRequest);
  server.on('upgrade', upgradeListener(state));
  server.on('connect', refuseConnect);
  server.on('clientError', clientErrorListener(state.answering));
  return {
    server,
    listen: (port, host) => listen(server, port, host),
    close(graceMs) {
      state.closing = true;
      quietGc.stop();
      return closeGracefully(server, o.websockets, graceMs);
    },
  };
}

/** Each request: handed to the pipeline, then counted and logged once its answer is done or cut short. */
function requestListener(state: ServerState, server: () => http.Server): (req: IncomingMessage, res: ServerResponse) => void {
  const { obs, pipeline, quietGc, answering } = state;
  // The request line holds fixed fields only (id, method, canonical path, status, ms, class), none
  // of which the redact list names, so it is written without redaction: with it, pino re-parsed
  // every redact path on every line, the largest cost of a proxied request (bench/README.md).
  // Every other log line keeps the redaction.
  const requestLog = obs.log.child({}, { redact: [] });
  return (req, res) => {
    const started = process.hrtime.bigint();
    const labels: RequestLabels = { routeClass: undefined };
    // Kept for the socket's life: set and deleted on every request, the WeakMap's table was
    // reallocated every few dozen requests (garbage reaching the old generation).
    let answered = answering.get(req.socket);
    if (!answered) answering.set(req.socket, (answered = new Answers(req.socket)));
    if (answered.open++ === 0) quietGc.begin(answered);
    answered.req = req;
    answered.res = res;
    if (state.closing) res.setHeader('connection', 'close');
    // 'close' comes after 'finish' for an answer sent in full, and alone for one cut short (once:
    // `on` spares the wrapper `once` makes).
    res.on('close', () => {
      // A socket with no answer open keeps no request or response: kept, they held the headers and
      // all for as long as the keep-alive connection stayed idle (memory per idle connection).
      // A destroyed connection's queued (pipelined) answers never emit 'close': it has none in flight.
      if (--answered.open === 0 || req.socket.destroyed) {
        quietGc.end(answered);
        if (answered.open === 0) answered.req = answered.res = undefined;
      }
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const cls = labels.routeClass ?? classifyTarget(req.url);
      if (res.writableFinished) {
        obs.metrics.requests.tally(cls, String(res.statusCode));
        obs.metrics.latency.observe({ route_class: cls }, seconds);
        // Shutting down: a keep-alive connection whose last response is done goes now.
        if (state.closing) setImmediate(() => server().closeIdleConnections());
      }
      logRequest(requestLog, req, res, cls, seconds);
    });
    // A step that throws, at once or later, rejects the promise: the same clean answer either way
    // (answered in the one place failures are, gateway/http/respond.ts).
    pipeline.handle(req, res, labels).catch((err: unknown) => answerFailure(res, err, obs));
  };
}

/** A WebSocket handshake: a GET handed to the pipeline, anything else refused. */
function upgradeListener(state: ServerState): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  const { obs, pipeline, quietGc } = state;
  return (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    // RFC 6455 4.1: the opening handshake is a GET. Node hands over an upgrade of any method; one
    // forwarded would be a tunnel opened under a method nobody judged.
    // Answered with finishSocket: Node reads an upgraded or CONNECT socket no more and no timeout
    // of the server's reaches it, so a plain end() left it open (and a graceful stop waiting) for ever.
    if (req.method !== 'GET') return void finishSocket(socket, rawJsonAnswer(405, 'Method Not Allowed', { Allow: 'GET' }));
    // The handshake being judged is in flight; the open WebSocket after it is not (its frames never
    // hold off a collection). A key of its own: an answer pipelined before it may still be open.
    const handshake = {
      answering: undefined as boolean | undefined,
      get destroyed() {
        return socket.destroyed;
      },
    };
    quietGc.begin(handshake);
    pipeline
      .upgrade(req, socket, head, state.closing)
      .catch((err: Error) => answerFailure(socket, err, obs))
      .finally(() => quietGc.end(handshake));
  };
}

/**
 * CONNECT is not a request this gateway forwards: Node hands it here (without a listener it only
 * closes the socket, leaving the client without an answer).
 */
function refuseConnect(_req: IncomingMessage, socket: Duplex): void {
  socket.on('error', () => socket.destroy());
  finishSocket(socket, rawJsonAnswer(405, 'Method Not Allowed', { Allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS' }));
}

/** Bytes Node could not parse as HTTP: a 400, 408 or 431 where one can be written, else the socket closes. */
function clientErrorListener(answering: Answering): (err: Error & { code?: string }, socket: Duplex) => void {
  return (err, socket) => {
    const entry = answering.get(socket);
    const open = entry?.open ?? 0;
    // Bytes after a `Connection: close` request: ignored; its answer finishes, then the socket closes.
    if (err.code === 'HPE_CLOSED_CONNECTION') return open > 0 ? undefined : void socket.destroy();
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const answer = rawJsonAnswer(status, status === 431 ? 'Request header fields too large' : status === 408 ? 'Request timeout' : 'Bad request');
    const req = entry?.req;
    const res = entry?.res;
    if (open === 0 || !req || !res) return void socket.end(answer);
    // The faulty bytes are the body of the request being answered: its own 400, unless its answer started.
    const ownBody = open === 1 && !req.complete;
    if (ownBody) return res.headersSent ? void socket.destroy() : void socket.end(answer);
    // A malformed request pipelined behind one still being answered: that answer is finished first
    // (cut off, the client would lose the answer to a request that was carried out), then the socket
    // closes. No 400 for it: written meanwhile it would land inside that answer's body.
    res.once('close', () => (res.writableFinished && socket.writable ? socket.end() : socket.destroy()));
  };
}

function listen(server: http.Server, port: number, host: string): Promise<{ port: number; url: string }> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      const addr = server.address();
      const actual = typeof addr === 'object' && addr ? addr.port : port;
      resolve({ port: actual, url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${actual}` });
    });
  });
}

/** Idle connections close now and WebSockets are asked to; after `graceMs` whatever is left is cut. */
function closeGracefully(server: http.Server, websockets: WebSocketTracker, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    websockets.closeAll();
    setTimeout(() => {
      server.closeAllConnections();
      websockets.destroyAll();
    }, graceMs).unref();
  });
}

// Connections waiting to be accepted. Node's default (511) drops new connections during a burst while
// the event loop is busy, and each dropped SYN costs the client 1, 3 or 7 seconds of retransmission
// (measured: 3,100 listen overflows and a 7.8 s p99 connect in the 1,000-connection load test). The
// kernel caps this at net.core.somaxconn, which is what Envoy and Go servers use.
const LISTEN_BACKLOG = 65_535;

const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * One line per request: method, canonical path (never the query, which can carry an
 * authorization code), status, duration, request id, route class. Never headers or cookies.
 */
function logRequest(log: Logger, req: IncomingMessage, res: ServerResponse, routeClass: RouteClass, seconds: number): void {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  const path = (q === -1 ? url : url.slice(0, q)).slice(0, 512);
  const line = {
    requestId: res.getHeader('x-request-id'),
    method: req.method,
    path,
    status: res.statusCode,
    ms: Math.round(seconds * 1e4) / 10,
    routeClass,
    ...(res.writableFinished ? {} : { aborted: true }),
  };
  // Probes and scrapes every few seconds would drown the rest.
  if (QUIET_PATHS.has(path)) log.debug(line, 'request');
  else log.info(line, 'request');
}

/** Answers refused before classification (400, 405) are classified from the raw target. */
function classifyTarget(url = ''): RouteClass {
  const q = url.indexOf('?');
  return classify(q === -1 ? url : url.slice(0, q));
}
