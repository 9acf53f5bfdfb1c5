// The gateway's server: wires the parts (settings, upstream, shared state, sign-in, login
// routing, the control app) and owns the sockets: timeouts, the request log and metrics, upgrades,
// CONNECT, malformed requests (clientError), listening and a graceful close. What happens to a
// request, step by step in order, is gateway/pipeline/handle.ts.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { createPipeline, type Found } from './pipeline/handle.js';
import type { Duplex } from 'node:stream';
import express from 'express';
import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import { createUpstream, rawJsonAnswer, sendJson, UpstreamError, type Upstream } from './upstream/proxy.js';
import { createAuthenticator, NOT_AUTHENTICATED, type Authenticator } from './auth/authenticator.js';
import { createLoginRouting, type LoginRouting } from './login/routes.js';
import { classify, localeOf, type RouteClass } from '../policies/routes.js';

export { classify, type RouteClass };
import { createObservability, type Observability } from './ops/observability.js';
import { WebSocketTracker } from './http/websockets.js';
import { createSharedState, type SharedState } from './auth/shared-state.js';
import { SharedStateUnavailable } from './auth/session.js';
import { PAGE_HEADERS, pageLocale, renderProblem, renderSessionCheckDown } from './login/pages.js';
import { safeReturnTo } from '../policies/login-routing.js';

export { NOT_AUTHENTICATED };



/** What a signed-in user sees while ended sessions cannot be checked (REDIS_URL unreachable). */
export const SESSION_CHECK_UNAVAILABLE = 'Your sign-in cannot be checked right now; try again in a few seconds';

export interface GatewayOptions {
  obs?: Observability;
  authenticator?: Authenticator;
  loginRouting?: LoginRouting;
  /** where ended sessions and rate limits live; default from REDIS_URL */
  sharedState?: SharedState;
  /** extra routes on the control app (operations endpoints) */
  extendControl?: (app: express.Express, parts: GatewayParts) => void;
}

export interface GatewayParts {
  settings: Settings;
  obs: Observability;
  upstream: Upstream;
  authenticator: Authenticator;
  loginRouting: LoginRouting;
  sharedState: SharedState;
}

export interface Gateway extends GatewayParts {
  server: http.Server;
  control: express.Express;
  listen(port?: number, host?: string): Promise<{ port: number; url: string }>;
  /** Proxied WebSockets (and upgrades under way) still open. */
  openWebSockets(): number;
  close(): Promise<void>;
}


export async function createGateway(settings: Settings, options: GatewayOptions = {}): Promise<Gateway> {
  const obs = options.obs ?? createObservability({ level: settings.log.level, auditFile: settings.log.auditFile });
  // IDLE_TIMEOUT_MS also bounds silence inside an upstream answer: a stream that stalls is cut.
  // Never below UPSTREAM_TIMEOUT_MS: waiting for the upstream's headers is silence on both sockets,
  // and a slow answer (a long non-streamed completion) must get its 504 only when that limit says so.
  const idleTimeoutMs = Math.max(settings.server.idleTimeoutMs, settings.upstream.timeoutMs + 1_000);
  const upstream = createUpstream({ ...settings.upstream, idleTimeoutMs }, obs);
  const sharedState = options.sharedState ?? (await createSharedState(settings.redisUrl, obs));
  if (!settings.redisUrl && settings.server.workers > 1) {
    obs.log.warn({ workers: settings.server.workers }, 'GATEWAY_WORKERS > 1 without REDIS_URL: a session logged out in one worker stays usable in the others until its next refresh; set REDIS_URL');
  }
  const authenticator = options.authenticator ?? (await createAuthenticator(settings, obs, sharedState));
  const loginRouting = options.loginRouting ?? (await createLoginRouting(settings, obs, { shared: sharedState, signedIn: (req, res) => authenticator.authenticate(req, res) }));
  const parts: GatewayParts = { settings, obs, upstream, authenticator, loginRouting, sharedState };

  const control = express();
  control.disable('x-powered-by');
  control.set('trust proxy', false);
  control.set('etag', false);
  if (loginRouting.startCheck) control.use(loginRouting.startCheck);
  control.use(authenticator.router);
  control.use(loginRouting.router);
  options.extendControl?.(control, parts);
  control.use((req, res) => {
    // A browser at an unknown /auth/... address gets a page with the way to sign in; API clients JSON.
    if (req.method === 'GET' && req.accepts(['json', 'html']) === 'html' && /^(\/[^/]+)?\/auth(\/|$)/.test(req.path)) {
      const locale = pageLocale(localeOf(req.path), req.headers['accept-language']);
      return void res.status(404).set(PAGE_HEADERS).send(renderProblem({ locale, kind: 'not-found' }));
    }
    res.status(404).json({ detail: 'Not Found' });
  });
  control.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    if (err instanceof SharedStateUnavailable && !res.headersSent) {
      obs.metrics.sessionChecksUnavailable.inc();
      return void sessionCheckUnavailable(res);
    }
    obs.log.error({ err: { message: err.message, stack: err.stack } }, 'control route failed');
    if (!res.headersSent) res.status(500).json({ detail: 'Internal error' });
    else res.destroy();
  });


  // The request line holds fixed fields only (id, method, canonical path, status, ms, class), none
  // of which the redact list names, so it is written without redaction: with it, pino re-parsed
  // every redact path on every line, the largest cost of a proxied request (bench/README.md).
  // Every other log line keeps the redaction.
  const requestLog = obs.log.child({}, { redact: [] });
  const websockets = new WebSocketTracker();
  let closing = false;
  const pipeline = createPipeline({ settings, obs, upstream, authenticator, loginRouting, control, websockets, isClosing: () => closing });

  /** Per client socket: answers still being written, and the latest request (for `clientError`). */
  const answering = new WeakMap<object, { open: number; req: IncomingMessage; res: ServerResponse }>();

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const started = process.hrtime.bigint();
    const found: Found = { routeClass: undefined };
    let answered = answering.get(req.socket);
    if (!answered) answering.set(req.socket, (answered = { open: 0, req, res }));
    answered.open++;
    answered.req = req;
    answered.res = res;
    if (closing) res.setHeader('connection', 'close');
    // 'close' comes after 'finish' for an answer sent in full, and alone for one cut short.
    res.once('close', () => {
      answered.open--;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const cls = found.routeClass ?? classifyTarget(req.url);
      if (res.writableFinished) {
        obs.metrics.requests.tally(cls, String(res.statusCode));
        obs.metrics.latency.observe({ route_class: cls }, seconds);
        // Shutting down: a keep-alive connection whose last response is done goes now.
        if (closing) setImmediate(() => server.closeIdleConnections());
      }
      logRequest(requestLog, req, res, cls, seconds);
    });
    pipeline.handle(req, res, found).catch((err: unknown) => {
      const e = err as Error;
      if (e instanceof SharedStateUnavailable) {
        obs.metrics.sessionChecksUnavailable.inc();
        return sessionCheckUnavailable(res);
      }
      if (e instanceof UpstreamError) {
        obs.metrics.upstreamErrors.inc({ kind: e.kind });
        obs.log.warn({ err: { message: e.message }, kind: e.kind }, 'upstream call failed');
        return sendJson(res, e.status, { detail: e.status === 504 ? 'The chat front-end did not answer in time' : 'The chat front-end is not reachable' });
      }
      obs.log.error({ err: { message: e?.message, stack: e?.stack } }, 'request failed');
      sendJson(res, 500, { detail: 'Internal error' });
    });
  };


  const server = http.createServer(
    {
      headersTimeout: settings.server.headersTimeoutMs,
      requestTimeout: settings.server.requestTimeoutMs,
      keepAliveTimeout: 5_000,
      // Node checks both timeouts only this often (default 30 s, so slow headers lived 30 s longer).
      connectionsCheckingInterval: Math.min(1_000, settings.server.headersTimeoutMs),
    },
    onRequest,
  );
  // IDLE_TIMEOUT_MS (at least UPSTREAM_TIMEOUT_MS, above): a connection silent that long mid-request
  // (a stalled body, REQUEST_TIMEOUT_MS being off for long uploads) or mid-answer is closed.
  // WebSockets are exempt (Node drops the listener on upgrade).
  server.timeout = idleTimeoutMs;
  // Judge before the client sends its body: a refused upload never gets `100 Continue`.
  server.on('checkContinue', onRequest);
  server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    pipeline.upgrade(req, socket as Duplex, head).catch((err: Error) => {
      if (err instanceof SharedStateUnavailable) {
        obs.metrics.sessionChecksUnavailable.inc();
        if (socket.writable) socket.end(rawJsonAnswer(503, SESSION_CHECK_UNAVAILABLE, { 'Retry-After': '5' }));
        return;
      }
      obs.log.warn({ err: { message: err.message } }, 'websocket upgrade failed');
      socket.destroy();
    });
  });
  // CONNECT is not a request this gateway forwards: Node hands it here (without a listener it only
  // closes the socket, leaving the client without an answer).
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    socket.end(rawJsonAnswer(405, 'Method Not Allowed', { Allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS' }));
  });
  server.on('clientError', (err: Error & { code?: string }, socket) => {
    const entry = answering.get(socket);
    const open = entry?.open ?? 0;
    // Bytes after a `Connection: close` request: ignored; its answer finishes, then the socket closes.
    if (err.code === 'HPE_CLOSED_CONNECTION') return open > 0 ? undefined : socket.destroy();
    if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const answer = rawJsonAnswer(status, status === 431 ? 'Request header fields too large' : status === 408 ? 'Request timeout' : 'Bad request');
    // The faulty bytes are the body of the request being answered: its own 400, unless its answer started.
    const ownBody = open === 1 && !entry!.req.complete;
    if (ownBody) return entry!.res.headersSent ? socket.destroy() : void socket.end(answer);
    if (open === 0) return void socket.end(answer);
    // A malformed request pipelined behind one still being answered: that answer is finished first
    // (cut off, the client would lose the answer to a request that was carried out), then the socket
    // closes. No 400 for it: written meanwhile it would land inside that answer's body.
    entry!.res.once('close', () => (entry!.res.writableFinished && socket.writable ? socket.end() : socket.destroy()));
  });

  return {
    ...parts,
    server,
    control,
    listen(port = settings.listen.port, host = settings.listen.host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          const addr = server.address();
          const actual = typeof addr === 'object' && addr ? addr.port : port;
          resolve({ port: actual, url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${actual}` });
        });
      });
    },
    openWebSockets: () => websockets.size,
    async close() {
      closing = true;
      void sharedState.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        websockets.closeAll();
        setTimeout(() => {
          server.closeAllConnections();
          websockets.destroyAll();
        }, settings.server.shutdownGraceMs).unref();
      });
      upstream.close();
      pipeline.clear();
      await authenticator.close();
      await loginRouting.close();
    },
  };
}

/**
 * 503 for a cookie session that cannot be checked (fail closed): a page for a browser navigating,
 * JSON for everything else. Nothing is cleared: the session works again once the state is back.
 */
function sessionCheckUnavailable(res: ServerResponse): void {
  const req = res.req;
  const navigating = req.method === 'GET' && /text\/html/.test(req.headers.accept ?? '') && classify(req.url?.split('?')[0] ?? '/') === 'page';
  if (!navigating) return sendJson(res, 503, { detail: SESSION_CHECK_UNAVAILABLE }, { 'retry-after': '5', 'cache-control': 'no-store' });
  const html = renderSessionCheckDown({ locale: pageLocale(localeOf(req.url?.split('?')[0] ?? '/')), retryHref: safeReturnTo(req.url ?? '/') ?? '/' });
  res.writeHead(503, { ...PAGE_HEADERS, 'retry-after': '5', 'content-length': Buffer.byteLength(html) });
  res.end(html);
}

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
