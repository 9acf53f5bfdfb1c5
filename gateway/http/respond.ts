// Every answer the gateway writes itself, and the words in it, in one place: small JSON answers
// on a ServerResponse, whole raw answers for a socket that has none (a refused upgrade, CONNECT, a
// malformed request), the fail-closed 503 of a session that cannot be checked or renewed, and
// `answerFailure`, the one place a failed step (a lost Redis, an upstream that failed, a bug)
// becomes an answer, for the data plane, the proxy, upgrades and the control routes alike.
import http, { type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Observability } from '../observability/observability.js';
import { classify, localeOf } from '../../policies/routes.js';
import { safeReturnTo } from '../../policies/login-routing.js';
import { PAGE_HEADERS, renderChatDown, renderSessionCheckDown, renderSessionRenewalDown } from '../pages/templates.js';
import { pageLocale, type PageLocale } from '../pages/locale.js';

export const NOT_AUTHENTICATED = 'Not authenticated';
/** An id that names nothing (Open WebUI's own words for it). */
export const NOT_FOUND = "We could not find what you're looking for :/";
export const UPSTREAM_DOWN = 'The chat front-end is not reachable';
export const UPSTREAM_TIMEOUT = 'The chat front-end did not answer in time';
export const UPSTREAM_INVALID = 'The chat front-end sent an invalid answer';
export const UNCHECKABLE = 'The chat front-end gave an answer the gateway cannot check';
/** What a signed-in user sees while ended sessions cannot be checked (REDIS_URL unreachable). */
export const SESSION_CHECK_UNAVAILABLE = 'Your sign-in cannot be checked right now; try again in a few seconds';
/** What a signed-in user sees while their expired access token cannot be renewed (the realm does not answer). */
export const SESSION_RENEWAL_UNAVAILABLE = 'Your sign-in cannot be renewed right now; try again in a few seconds';

/**
 * Sent where a browser's session ends: the gateway's /auth/logout, the chat
 * front-end's own sign-out, and the first request that comes with a cookie whose session ended
 * elsewhere (back-channel logout, a refused refresh, expiry). The browser drops its HTTP cache of
 * this site (the chat page and the JSON answers Back would show), its cookies (the chat
 * front-end's `token` with the gateway's) and its storage (Open WebUI keeps its token in
 * localStorage). `cookies` covers the whole registrable domain (docs/operating/operations.md, "Signing out").
 */
export const CLEAR_SITE_DATA = '"cache", "cookies", "storage"';
/** Proxied answers of the chat front-end's API and pages (not static assets): personal, never stored. */
export const PERSONAL_CACHE_CONTROL = 'private, no-store';

/**
 * A whole JSON answer as raw bytes, for a socket that has no ServerResponse (a refused upgrade,
 * CONNECT, a malformed request): the connection closes after it.
 */
export function rawJsonAnswer(status: number, detail: string, extraHeaders: Record<string, string> = {}): string {
  const body = JSON.stringify({ detail });
  const extra = Object.entries(extraHeaders)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Unknown'}\r\nConnection: close\r\n${extra}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** A small JSON answer (gateway-made: never cached). */
export function sendJson(res: ServerResponse, status: number, body: unknown, extraHeaders: Record<string, string> = {}): void {
  sendJsonBody(res, status, JSON.stringify(body), extraHeaders);
}

/** The same with the JSON already serialized (an answer rendered once and sent many times). */
export function sendJsonBody(res: ServerResponse, status: number, json: string | Buffer, extraHeaders: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(json),
    'cache-control': 'private, no-store',
    ...extraHeaders,
  });
  res.end(res.req?.method === 'HEAD' ? undefined : json);
}

/**
 * A JSON answer written as it is made (a filtered export larger than what the gateway holds):
 * chunked, gateway-made. What it writes waits for the client when its buffer is full
 * (`waitForRoom`); an answer that fails after its first bytes is cut off (`abort`): the client
 * sees it end without its last chunk, never as complete.
 */
export function startJsonStream(res: ServerResponse, status: number, extraHeaders: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'private, no-store', ...extraHeaders });
  return {
    write(bytes: Buffer): void {
      if (!res.destroyed) res.write(bytes);
    },
    /** undefined while the client keeps up; else settles when it has room again (rejects when it went away) */
    waitForRoom(): Promise<void> | undefined {
      if (res.destroyed) return Promise.reject(new Error('the client went away'));
      if (!res.writableNeedDrain) return undefined;
      return new Promise((resolve, reject) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', gone);
          resolve();
        };
        const gone = () => {
          res.off('drain', done);
          reject(new Error('the client went away'));
        };
        res.once('drain', done);
        res.once('close', gone);
      });
    },
    end(): void {
      res.end();
    },
    abort(): void {
      res.destroy();
    },
  };
}

/** A whole page of the gateway's own (gateway/pages/templates.ts), with the pages' headers. */
export function sendPage(res: ServerResponse, status: number, html: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { ...PAGE_HEADERS, 'content-length': Buffer.byteLength(html) });
  res.end(res.req?.method === 'HEAD' ? undefined : html);
}

/**
 * 503 for a cookie session that cannot be checked or renewed now (fail closed): a page for a browser
 * navigating, JSON for everything else. Nothing is cleared: the session works again once Redis
 * (`check`) or the realm (`renewal`) is back.
 */
export function sessionUnavailable(res: ServerResponse, why: 'check' | 'renewal'): void {
  const detail = why === 'check' ? SESSION_CHECK_UNAVAILABLE : SESSION_RENEWAL_UNAVAILABLE;
  const page = pageNavigation(res);
  if (!page) return sendJson(res, 503, { detail }, { 'retry-after': '5', 'cache-control': 'no-store' });
  const render = why === 'check' ? renderSessionCheckDown : renderSessionRenewalDown;
  sendTryAgainPage(res, 503, render(page), { 'retry-after': '5' });
}

/**
 * A browser navigating to a page of the chat front-end (a GET that accepts HTML, on a page path):
 * what its try-again page is rendered with. Undefined for everything else, which gets JSON.
 */
function pageNavigation(res: ServerResponse): { locale: PageLocale; retryHref: string } | undefined {
  const req = res.req;
  const path = req.url?.split('?')[0] ?? '/';
  if (req.method !== 'GET' || !/text\/html/.test(req.headers.accept ?? '') || classify(path) !== 'page') return undefined;
  return { locale: pageLocale(localeOf(path), req.headers['accept-language']), retryHref: safeReturnTo(req.url ?? '/') ?? '/' };
}

function sendTryAgainPage(res: ServerResponse, status: number, html: string, extraHeaders: Record<string, string>): void {
  res.writeHead(status, { ...PAGE_HEADERS, ...extraHeaders, 'content-length': Buffer.byteLength(html) });
  res.end(html);
}

/** The head of an upstream answer relayed byte for byte on a raw socket (a guarded WebSocket upgrade). */
export function rawResponseHead(status: number, reason: string | undefined, rawHeaders: readonly string[]): string {
  const lines = [`HTTP/1.1 ${status} ${reason || http.STATUS_CODES[status] || ''}`];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) lines.push(`${rawHeaders[i]}: ${rawHeaders[i + 1]}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** How long a socket that was answered and ended may wait for its client's end before it is closed. */
const LINGER_MS = 2_000;

/**
 * A socket that carries nothing more (an upgrade answered or refused without a WebSocket, one whose
 * upstream went away): `answer` if any, then the end. What the client still sends is read and
 * dropped, so its own end is seen; the socket is closed once both ends are done, or after LINGER_MS.
 * Left unread, a byte the client sent kept its end unseen and the socket (a file descriptor, a
 * tracked WebSocket) open until its session ended.
 */
export function finishSocket(socket: Duplex, answer?: string): void {
  if (socket.destroyed) return;
  const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once('close', () => clearTimeout(timer));
  let finished = socket.writableFinished;
  let ended = socket.readableEnded;
  const both = () => finished && ended && socket.destroy();
  if (!finished) socket.once('finish', () => ((finished = true), both()));
  if (!ended) socket.once('end', () => ((ended = true), both()));
  socket.resume();
  socket.end(answer);
  both();
}

/** Who a request comes from cannot be judged now: 503 with Retry-After (the caller did nothing wrong), never a pass. */
export class SignInUncheckable extends Error {}

/** The shared state could not be read: a cookie session cannot be judged (503, fail closed). */
export class SharedStateUnavailable extends SignInUncheckable {
  constructor(reason: string) {
    super(`the shared session state cannot be checked: ${reason}`);
  }
}

/** The realm gave no answer on a bearer token's session (unreachable, too slow, an answer that is none): 503, fail closed. */
export class RealmUnavailable extends SignInUncheckable {
  constructor(reason: string) {
    super(`the identity provider cannot confirm the token's session: ${reason}`);
  }
}

/**
 * A cookie session's access token has expired and the realm did not answer its renewal: not served
 * (503, fail closed), not signed out either (a 401 is what the chat front-end takes for a sign-out).
 */
export class SessionRenewalUnavailable extends SignInUncheckable {
  constructor(reason: string) {
    super(`the session cannot be renewed: ${reason}`);
  }
}

/**
 * The upstream failed: unreachable, too slow, a body too large or undecodable (the gateway's own
 * calls), an answer that is not HTTP or has an invalid status (the proxy), a reset.
 */
export class UpstreamError extends Error {
  constructor(
    public readonly kind: 'unreachable' | 'timeout' | 'too-large' | 'bad-body' | 'reset' | 'bad-answer' | 'bad-status',
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
  get status(): 502 | 504 {
    return this.kind === 'timeout' ? 504 : 502;
  }
  /** what the client is told: the proxy's unparsable or invalid answers are "invalid", the rest "down" */
  get detail(): string {
    return this.kind === 'timeout' ? UPSTREAM_TIMEOUT : this.kind === 'bad-answer' || this.kind === 'bad-status' ? UPSTREAM_INVALID : UPSTREAM_DOWN;
  }
}

/**
 * An answer the gateway rewrites (a filtered list, a redacted record, names kept) that it could not
 * get or check: counted, logged with `what` failed, and a 502 (504 on a timeout) in place of the
 * upstream's bytes, never them.
 */
export function answerUncheckable(
  res: ServerResponse,
  err: unknown,
  obs: Pick<Observability, 'metrics' | 'log'>,
  what: string,
  fields: Record<string, unknown> = {},
): void {
  const e = err instanceof UpstreamError ? err : new UpstreamError('bad-body', String(err));
  obs.metrics.upstreamErrors.inc({ kind: e.kind });
  obs.log.error({ err: { message: e.message }, ...fields }, `${what} failed closed`);
  sendJson(res, e.status, { detail: e.kind === 'timeout' ? UPSTREAM_TIMEOUT : UNCHECKABLE });
}

/**
 * The one place a failure becomes an answer: 503 (page or JSON) when who a request comes from
 * cannot be judged (the shared state, the realm) or its session cannot be renewed, 502/504 for the
 * upstream, else 500; on a raw socket (an upgrade) the 503 as raw bytes, else the socket destroyed.
 * Counted and logged here. `fields`: what the log line says of the request; `extraHeaders`: added to
 * a JSON answer (`Connection: close` while a request body is still coming).
 */
export function answerFailure(
  to: ServerResponse | Duplex,
  err: unknown,
  obs: Pick<Observability, 'metrics' | 'log'>,
  fields: Record<string, unknown> = {},
  extraHeaders: Record<string, string> = {},
): void {
  const res = typeof (to as ServerResponse).writeHead === 'function' ? (to as ServerResponse) : undefined;
  if (err instanceof SignInUncheckable) {
    const why = err instanceof SessionRenewalUnavailable ? 'renewal' : 'check';
    if (err instanceof SharedStateUnavailable) obs.metrics.sessionChecksUnavailable.inc();
    if (!res) {
      const detail = why === 'check' ? SESSION_CHECK_UNAVAILABLE : SESSION_RENEWAL_UNAVAILABLE;
      return void (to.writable ? finishSocket(to as Duplex, rawJsonAnswer(503, detail, { 'Retry-After': '5' })) : to.destroy());
    }
    if (res.headersSent) return void res.destroy();
    return sessionUnavailable(res, why);
  }
  const e = err as Error & { code?: string };
  if (err instanceof UpstreamError) {
    obs.metrics.upstreamErrors.inc({ kind: err.kind });
    obs.log.warn({ err: { message: e.message, code: e.code }, kind: err.kind, ...fields }, 'upstream request failed');
    // A WebSocket handshake the upstream failed: nothing was written to the client yet, so it gets
    // the same 502/504 a request would, then the end of the connection.
    if (!res) return void (to.writable ? finishSocket(to as Duplex, rawJsonAnswer(err.status, err.detail)) : to.destroy());
    // A browser opening a page gets a page in its language with a way back, not JSON.
    const page = res.headersSent ? undefined : pageNavigation(res);
    if (page) return sendTryAgainPage(res, err.status, renderChatDown(page, err.kind === 'timeout'), extraHeaders);
    return sendJson(res, err.status, { detail: err.detail }, extraHeaders);
  }
  if (!res) {
    obs.log.warn({ err: { message: e?.message }, ...fields }, 'websocket upgrade failed');
    return void to.destroy();
  }
  obs.log.error({ err: { message: e?.message, stack: e?.stack }, ...fields }, 'request failed');
  if (res.headersSent) return void res.destroy();
  sendJson(res, 500, { detail: 'Internal error' });
}
