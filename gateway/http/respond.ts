// Every answer the gateway writes itself, and the words in it, in one place: small JSON answers
// on a ServerResponse, whole raw answers for a socket that has none (a refused upgrade, CONNECT, a
// malformed request), and the fail-closed 503 of a session that cannot be checked.
import http, { type ServerResponse } from 'node:http';
import { classify, localeOf } from '../../policies/routes.js';
import { safeReturnTo } from '../../policies/login-routing.js';
import { PAGE_HEADERS, pageLocale, renderSessionCheckDown } from '../login/pages.js';

export const NOT_AUTHENTICATED = 'Not authenticated';
export const UPSTREAM_DOWN = 'The chat front-end is not reachable';
export const UPSTREAM_TIMEOUT = 'The chat front-end did not answer in time';
export const UPSTREAM_INVALID = 'The chat front-end sent an invalid answer';
/** What a signed-in user sees while ended sessions cannot be checked (REDIS_URL unreachable). */
export const SESSION_CHECK_UNAVAILABLE = 'Your sign-in cannot be checked right now; try again in a few seconds';

/**
 * Sent where a browser's session ends (issue 28 item 1): the gateway's /auth/logout, the chat
 * front-end's own sign-out, and the first request that comes with a cookie whose session ended
 * elsewhere (back-channel logout, a refused refresh, expiry). The browser drops its HTTP cache of
 * this site (the chat page and the JSON answers Back would show), its cookies (the chat
 * front-end's `token` with the gateway's) and its storage (Open WebUI keeps its token in
 * localStorage). `cookies` covers the whole registrable domain (README, "Signing out").
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
  const extra = Object.entries(extraHeaders).map(([k, v]) => `${k}: ${v}\r\n`).join('');
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
 * 503 for a cookie session that cannot be checked (fail closed): a page for a browser navigating,
 * JSON for everything else. Nothing is cleared: the session works again once the state is back.
 */
export function sessionCheckUnavailable(res: ServerResponse): void {
  const req = res.req;
  const path = req.url?.split('?')[0] ?? '/';
  const navigating = req.method === 'GET' && /text\/html/.test(req.headers.accept ?? '') && classify(path) === 'page';
  if (!navigating) return sendJson(res, 503, { detail: SESSION_CHECK_UNAVAILABLE }, { 'retry-after': '5', 'cache-control': 'no-store' });
  const html = renderSessionCheckDown({ locale: pageLocale(localeOf(path)), retryHref: safeReturnTo(req.url ?? '/') ?? '/' });
  res.writeHead(503, { ...PAGE_HEADERS, 'retry-after': '5', 'content-length': Buffer.byteLength(html) });
  res.end(html);
}

/** The head of an upstream answer relayed byte for byte on a raw socket (a guarded WebSocket upgrade). */
export function rawResponseHead(status: number, reason: string | undefined, rawHeaders: readonly string[]): string {
  const lines = [`HTTP/1.1 ${status} ${reason || http.STATUS_CODES[status] || ''}`];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) lines.push(`${rawHeaders[i]}: ${rawHeaders[i + 1]}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}
