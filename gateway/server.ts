// The gateway, from socket to upstream, in the order a request meets it:
//
//   1. canonical target (gateway/canonical-path.ts): one form, or 400; method overrides refused
//   2. routes the gateway answers itself (login pages, auth-providers API, /auth/*, health,
//      metrics) go to the control app (Express); everything else stays on the data plane,
//      which does not go through Express: it is the hot path
//   3. header hygiene: client copies of the trusted headers and hop-by-hop headers removed
//   4. identity: session cookie or realm bearer JWT (gateway/identity.ts); an upstream API key
//      only when ALLOW_UPSTREAM_API_KEYS; none: 401 for API paths, the logged-out guard for pages
//   5. trusted headers from that identity only, plus the upstream credential when the client
//      brought none (gateway/upstream-identity.ts)
//   6. the policy (policies/admin-scoping.ts): pass, deny, filter own files, or audit
//   7. stream to the upstream (gateway/upstream.ts), or answer from a rewritten view
//      (gateway/file-views.ts)
// WebSocket upgrades take steps 1, 3, 4 and 5 in `upgrade()` below, with an Origin check.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import express from 'express';
import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import { decide, type Decision } from '../policies/admin-scoping.js';
import { canonicalize, METHOD_OVERRIDE_HEADERS } from './canonical-path.js';
import { createUpstream, sendJson, UpstreamError, type Upstream } from './upstream.js';
import { UpstreamAccounts } from './upstream-identity.js';
import { FileViews, rewriteHeaders } from './file-views.js';
import { ChatViews } from './chat-views.js';
import {
  identityHeaders,
  publicOriginOf,
  setForwardedHeaders,
  setUpstreamCredential,
  validHost,
  stripClientHeaders,
  trustedHeaderSet,
  upstreamApiKey,
  type UpstreamIdentity,
} from './request-headers.js';
import { createAuthenticator, NOT_AUTHENTICATED, SIGNOUT_PATH, type Authenticator, type Identity } from './identity.js';
import { createLoginRouting, localeOf, type LoginRouting } from './login-routing.js';
import { createObservability, type Observability } from './observability.js';
import { WebSocketTracker } from './websockets.js';
import { createSharedState, type SharedState } from './shared-state.js';
import { SharedStateUnavailable } from './session.js';
import { PAGE_HEADERS, pageLocale, renderProblem, renderSessionCheckDown } from './login-pages.js';
import { safeReturnTo } from '../policies/login-routing.js';

export { NOT_AUTHENTICATED };

/** What a signed-in user sees while ended sessions cannot be checked (REDIS_URL unreachable). */
export const SESSION_CHECK_UNAVAILABLE = 'Your sign-in cannot be checked right now; try again in a few seconds';

export type RouteClass = 'control' | 'api' | 'public' | 'page';

const API_PREFIXES = ['/api/', '/ws/', '/openai/', '/ollama/', '/oauth/', '/cache/'];
const PUBLIC_PREFIXES = ['/static/', '/_app/', '/favicon/'];
const PUBLIC_EXACT = new Set(['/health', '/manifest.json', '/favicon.png', '/favicon.ico', '/robots.txt']);
// The chat front-end's sign-out is answered by the gateway: it ends the gateway session too.
const CONTROL_EXACT = new Set(['/healthz', '/readyz', '/metrics', '/auth', '/api/v1/auth-providers', SIGNOUT_PATH]);
/** Methods whose forwarded request carries no body framing of its own (see `handle`). */
const UNFRAMED_BODY_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/** Which part of the gateway answers a canonical path. */
export function classify(path: string): RouteClass {
  if (CONTROL_EXACT.has(path) || path.startsWith('/auth/') || path.startsWith('/api/v1/auth-providers/')) return 'control';
  const locale = localeOf(path);
  if (locale) {
    const rest = path.slice(locale.length + 1);
    if (rest === '/auth' || rest.startsWith('/auth/')) return 'control';
  }
  if (API_PREFIXES.some((p) => path.startsWith(p)) || path === '/api' || path === '/ws') return 'api';
  if (PUBLIC_EXACT.has(path) || PUBLIC_PREFIXES.some((p) => path.startsWith(p))) return 'public';
  return 'page';
}

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

interface Caller {
  admin: boolean;
  /** upstream user id, resolved lazily (only the file policy needs it) */
  upstreamUserId: () => Promise<string>;
  label: string;
}

export async function createGateway(settings: Settings, options: GatewayOptions = {}): Promise<Gateway> {
  const obs = options.obs ?? createObservability({ level: settings.log.level, auditFile: settings.log.auditFile });
  // IDLE_TIMEOUT_MS also bounds silence inside an upstream answer: a stream that stalls is cut.
  // Never below UPSTREAM_TIMEOUT_MS: waiting for the upstream's headers is silence on both sockets,
  // and a slow answer (a long non-streamed completion) must get its 504 only when that limit says so.
  const idleTimeoutMs = Math.max(settings.server.idleTimeoutMs, settings.upstream.timeoutMs + 1_000);
  const upstream = createUpstream({ ...settings.upstream, idleTimeoutMs }, obs);
  const sharedState = options.sharedState ?? createSharedState(settings.redisUrl, obs);
  if (!settings.redisUrl && settings.server.workers > 1) {
    obs.log.warn({ workers: settings.server.workers }, 'GATEWAY_WORKERS > 1 without REDIS_URL: a session logged out in one worker stays usable in the others until its next refresh; set REDIS_URL');
  }
  const authenticator = options.authenticator ?? (await createAuthenticator(settings, obs, sharedState));
  const loginRouting = options.loginRouting ?? (await createLoginRouting(settings, obs, { shared: sharedState, signedIn: (req, res) => authenticator.authenticate(req, res) }));
  const accounts = new UpstreamAccounts(upstream, settings.trustedHeaders, obs.metrics);
  const fileViews = new FileViews(upstream, obs);
  const chatViews = new ChatViews(upstream);
  const trusted = trustedHeaderSet(settings.trustedHeaders);
  const publicOrigin = publicOriginOf(settings.publicUrl);
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

  /**
   * What the data plane tells the upstream about an identity: worked out once per Identity object
   * (the authenticator hands out one per session state or bearer token), not on every request.
   */
  interface Forwarding {
    who: UpstreamIdentity;
    headers: Array<[string, string]>;
    caller: Caller;
  }
  const forwardings = new WeakMap<Identity, Forwarding>();
  const forwardingOf = (identity: Identity): Forwarding => {
    let f = forwardings.get(identity);
    if (!f) {
      const who: UpstreamIdentity = { email: identity.email, name: identity.name, role: identity.admin ? 'admin' : 'user', groups: identity.groups };
      f = {
        who,
        headers: identityHeaders(settings.trustedHeaders, who),
        caller: { admin: identity.admin, upstreamUserId: async () => (await accounts.signIn(who)).userId, label: identity.email },
      };
      forwardings.set(identity, f);
    }
    return f;
  };
  /** Step 5: the trusted headers, and the upstream credential when the client brought none. */
  const forwardAs = async (req: IncomingMessage, identity: Identity): Promise<Caller> => {
    const f = forwardingOf(identity);
    for (const [name, value] of f.headers) req.headers[name] = value;
    // The upstream credential is the one of this identity's trusted-header sign-in (cached), never
    // one the client brought along: the gateway checked the identity, not the client's token.
    setUpstreamCredential(req.headers, { authorization: `Bearer ${(await accounts.signIn(f.who)).token}` });
    return f.caller;
  };

  /** Steps 3 to 5: hygiene, identity, trusted headers. Undefined: the request was answered. */
  async function identify(req: IncomingMessage, res: ServerResponse, cls: RouteClass, path: string): Promise<Caller | null | undefined> {
    const apiKey = settings.allowUpstreamApiKeys ? upstreamApiKey(req.headers) : undefined;
    stripClientHeaders(req.headers, trusted);
    const identity = await authenticator.authenticate(req, res);
    if (identity) return forwardAs(req, identity);
    if (apiKey) {
      // An upstream API key is not an identity of the gateway: the upstream says whose it is.
      const credential: { authorization: string } | { 'x-api-key': string } =
        upstreamApiKey({ authorization: req.headers.authorization }) === apiKey ? { authorization: `Bearer ${apiKey}` } : { 'x-api-key': apiKey };
      const account = await accounts.whoAmI(credential);
      if (!account) {
        sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        return undefined;
      }
      // exactly the key that was looked up, nothing else the client sent
      setUpstreamCredential(req.headers, credential);
      return { admin: account.role === 'admin', upstreamUserId: async () => account.userId, label: `api-key:${account.userId}` };
    }
    if (cls === 'public') return null;
    if (cls === 'api') {
      sendJson(res, 401, { detail: NOT_AUTHENTICATED });
      return undefined;
    }
    const location = await loginRouting.guard(path, req);
    res.writeHead(302, { location, 'cache-control': 'private, no-store', 'content-length': '0' });
    res.end();
    return undefined;
  }

  async function carryOut(decision: Decision, req: IncomingMessage, res: ServerResponse, caller: Caller | null, path: string, search: string, expectContinue: boolean) {
    obs.metrics.policyDecisions.tally(decision.action, decision.rule);
    const proceed = () => {
      if (expectContinue) res.writeContinue();
      upstream.forward(req, res);
    };
    switch (decision.action) {
      case 'deny':
        obs.audit.info({ event: 'policy-denied', rule: decision.rule, caller: caller?.label ?? 'anonymous', method: req.method, path }, decision.detail);
        return sendJson(res, decision.status, { detail: decision.detail });
      case 'filter-own-files': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        const callerId = await caller.upstreamUserId();
        return fileViews.serveOwn(res, decision.view, path, search, rewriteHeaders(req.headers, trusted), callerId);
      }
      case 'audit-file-access': {
        if (!caller) return proceed();
        const lookup = Promise.all([caller.upstreamUserId(), fileViews.ownerOf(decision.fileId, rewriteHeaders(req.headers, trusted))]).then(([me, owner]) => {
          if (owner !== me) {
            obs.audit.warn(
              { event: 'admin-file-access', caller: caller.label, callerId: me, fileId: decision.fileId, owner: owner ?? 'unknown', operation: decision.operation, method: req.method, path },
              'admin touched a file they do not own',
            );
          }
        });
        if (decision.operation === 'delete') await lookup.catch(() => {});
        else lookup.catch(() => {});
        return proceed();
      }
      case 'require-own-chat': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        // Known before anything is forwarded: a write never reaches the upstream on a guess.
        const callerId = await caller.upstreamUserId();
        if (await chatViews.mayAccess(decision.access, callerId, rewriteHeaders(req.headers, trusted))) return proceed();
        obs.audit.warn({ event: 'admin-chat-access-denied', caller: caller.label, callerId, method: req.method, path }, decision.detail);
        return sendJson(res, 401, { detail: decision.detail });
      }
      case 'audit-chat-delete': {
        if (!caller) return proceed();
        const [me, owner] = await Promise.all([caller.upstreamUserId(), chatViews.ownerOf(decision.chatId, rewriteHeaders(req.headers, trusted))]).catch(() => ['', undefined]);
        if (owner !== me) {
          obs.audit.warn({ event: 'admin-chat-delete', caller: caller.label, callerId: me, chatId: decision.chatId, owner: owner ?? 'unknown', method: req.method, path }, 'admin deleted a chat they do not own');
        }
        return proceed();
      }
      case 'pass':
        return proceed();
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse, found: Found): Promise<void> {
    const requestId = randomUUID();
    res.setHeader('x-request-id', requestId);
    const canonical = canonicalize(req.url);
    if (!canonical.ok) return sendJson(res, 400, { detail: `Bad request: ${canonical.reason}` });
    if (METHOD_OVERRIDE_HEADERS.some((h) => req.headers[h] !== undefined)) return sendJson(res, 400, { detail: 'Bad request: method override headers are not accepted' });
    const method = req.method ?? 'GET';
    if (method === 'TRACE' || method === 'TRACK' || method === 'CONNECT') return sendJson(res, 405, { detail: 'Method Not Allowed' });
    if (!validHost(req.headers.host, req.httpVersion)) return sendJson(res, 400, { detail: 'Bad request: invalid Host header' }, { connection: 'close' });
    // Request smuggling: Node sends GET, HEAD, DELETE and OPTIONS upstream without chunked framing
    // (http-proxy-3 even sets `Content-Length: 0` on DELETE and OPTIONS), so a chunked body on one of
    // them would reach Open WebUI as raw bytes after a bodiless request: a second request nobody judged.
    // Transfer-Encoding in HTTP/1.0 is faulty framing (RFC 9112 6.1), which Node accepts: refused too.
    if (req.headers['transfer-encoding'] !== undefined && (UNFRAMED_BODY_METHODS.has(method) || req.httpVersion === '1.0')) {
      return sendJson(res, 400, { detail: `Bad request: a chunked body is not accepted on ${method} HTTP/${req.httpVersion}` }, { connection: 'close' });
    }
    const { path, search, url } = canonical.target;
    req.url = url;
    const cls = classify(path);
    found.routeClass = cls;
    if (cls === 'control') {
      // The provider list (anonymous, cached, asked by every login page) is answered by its route's
      // own code without going through Express, which cost more than the answer (bench/README.md).
      if (loginRouting.providerList && (method === 'GET' || method === 'HEAD') && (path === '/api/v1/auth-providers/' || path === '/api/v1/auth-providers')) {
        return loginRouting.providerList(res);
      }
      control(req as express.Request, res as express.Response);
      return;
    }
    const expectContinue = req.headers.expect !== undefined && /100-continue/i.test(String(req.headers.expect));
    const caller = await identify(req, res, cls, path);
    if (caller === undefined) return;
    setForwardedHeaders(req.headers, { clientIp: req.socket.remoteAddress, publicOrigin, requestId });
    const decision = decide({ method, path }, settings.policy, { admin: caller?.admin ?? false });
    await carryOut(decision, req, res, caller, path, search, expectContinue);
  }

  // The request line holds fixed fields only (id, method, canonical path, status, ms, class), none
  // of which the redact list names, so it is written without redaction: with it, pino re-parsed
  // every redact path on every line, the largest cost of a proxied request (bench/README.md).
  // Every other log line keeps the redaction.
  const requestLog = obs.log.child({}, { redact: [] });
  const websockets = new WebSocketTracker();
  let closing = false;

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
    handle(req, res, found).catch((err: unknown) => {
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

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const refuse = (status: number, reason: string) => {
      if (socket.writable) socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${JSON.stringify({ detail: reason }).length}\r\n\r\n${JSON.stringify({ detail: reason })}`);
      socket.destroy();
    };
    if (closing) return refuse(503, 'Shutting down');
    const canonical = canonicalize(req.url);
    if (!canonical.ok || !validHost(req.headers.host, req.httpVersion)) return refuse(400, 'Bad Request');
    if (!canonical.target.path.startsWith('/ws/')) return refuse(404, 'Not Found');
    req.url = canonical.target.url;
    const origin = req.headers.origin;
    if (!stripClientHeaders(req.headers, trusted).websocket) return refuse(400, 'Only WebSocket upgrades are accepted');
    const identity = await authenticator.authenticate(req);
    if (!identity) return refuse(401, NOT_AUTHENTICATED);
    // A browser sends its cookies with any cross-site WebSocket: the Origin must be ours.
    if (identity.via === 'session' || origin !== undefined) {
      if (!origin || !settings.allowedOrigins.includes(origin)) return refuse(403, 'Forbidden origin');
    }
    await forwardAs(req, identity);
    setForwardedHeaders(req.headers, { clientIp: req.socket.remoteAddress, publicOrigin, requestId: randomUUID() });
    obs.metrics.openWebSockets.inc();
    socket.once('close', () => obs.metrics.openWebSockets.dec());
    websockets.track(socket);
    upstream.forwardUpgrade(req, socket, head);
  }

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
    upgrade(req, socket as Duplex, head).catch((err: Error) => {
      if (err instanceof SharedStateUnavailable) {
        obs.metrics.sessionChecksUnavailable.inc();
        const body = JSON.stringify({ detail: SESSION_CHECK_UNAVAILABLE });
        if (socket.writable) socket.end(`HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 5\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
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
    const body = JSON.stringify({ detail: 'Method Not Allowed' });
    socket.end(`HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\nAllow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  });
  server.on('clientError', (err: Error & { code?: string }, socket) => {
    const entry = answering.get(socket);
    const open = entry?.open ?? 0;
    // Bytes after a `Connection: close` request: ignored; its answer finishes, then the socket closes.
    if (err.code === 'HPE_CLOSED_CONNECTION') return open > 0 ? undefined : socket.destroy();
    if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const body = JSON.stringify({ detail: status === 431 ? 'Request header fields too large' : status === 408 ? 'Request timeout' : 'Bad request' });
    const answer = `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
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
      chatViews.clear();
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

/**
 * What `handle` found out about a request, for its metrics and log line: kept in an object of the
 * gateway's own (a property added to Node's response object would give it a new shape, which
 * slows all of Node's code that reads responses).
 */
interface Found {
  routeClass: RouteClass | undefined;
}

/** Answers refused before classification (400, 405) are classified from the raw target. */
function classifyTarget(url = ''): RouteClass {
  const q = url.indexOf('?');
  return classify(q === -1 ? url : url.slice(0, q));
}
