// A client's request carried to the chat front-end and its answer back: node:http's client over
// the shared keep-alive agent, doing exactly what http-proxy-3's web passes did with the options
// the gateway gave it (no X-Forwarded-*, Host kept, nothing rewritten in the answer) and nothing
// else. It replaces http-proxy-3 on the hot path: the same forward cost 0.71x of its CPU per request
// (docs/design/cost-per-request.md, "A forward of our own").
import http, { type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';

export interface ForwardTarget {
  agent: http.Agent;
  protocol: string;
  hostname: string;
  port: number;
  /** the upstream's own path and query, joined in front of every target; undefined when it has none */
  base: string | undefined;
  /** a stalled upstream answer is cut after this long without a byte */
  idleTimeoutMs: number;
}

/** What the upstream's side of one exchange reports back. */
export interface ForwardHooks {
  /**
   * the upstream's answer, before its head is copied: it may answer `res` itself (nothing is copied
   * or piped then), or hold the answer (true) and relay it later itself (`relayAnswer`)
   */
  answer(answer: IncomingMessage): boolean;
  /** the client's connection reset: the upstream request is aborted, nothing to answer */
  clientGone(): void;
  /** the upstream request failed (refused, reset, timed out, a malformed answer) */
  failed(err: Error & { code?: string }): void;
}

/**
 * Forward `req` (its url and headers already the gateway's) with `body` (a body read to judge it) or
 * its own. Returns the upstream request at once, before it has a pooled socket; the caller destroys
 * it when the client's answer closes unfinished.
 */
export function forwardRequest(to: ForwardTarget, req: IncomingMessage, res: ServerResponse, body: Readable | undefined, hooks: ForwardHooks): ClientRequest {
  const headers: OutgoingHttpHeaders = { ...req.headers };
  if (headers.trailer !== undefined) delete headers.trailer;
  // A DELETE or OPTIONS without a length is sent with `Content-Length: 0`, as http-proxy-3 did.
  if ((req.method === 'DELETE' || req.method === 'OPTIONS') && !headers['content-length']) {
    headers['content-length'] = '0';
    delete headers['transfer-encoding'];
  }
  const proxyReq = (to.protocol === 'https:' ? https : http).request({
    hostname: to.hostname,
    port: to.port,
    method: req.method,
    path: to.base === undefined ? req.url : joinPath(to.base, req.url ?? ''),
    headers,
    agent: to.agent,
    // the socket's idle timeout, set by the agent when it hands the socket over (as setTimeout
    // would, without its two 'socket' listeners per request)
    timeout: to.idleTimeoutMs,
  });
  proxyReq.on('timeout', () => proxyReq.destroy());
  const failed = (err: Error & { code?: string }) => {
    if (req.socket.destroyed && err.code === 'ECONNRESET') {
      hooks.clientGone();
      proxyReq.destroy();
      return;
    }
    // Answered already: a request that timed out while it waited for a pooled socket hears of its
    // end only once one comes free (Node's "socket hang up"), long after its 504.
    if (!proxyReq.socket && res.writableEnded) return;
    hooks.failed(err);
  };
  req.on('error', failed);
  proxyReq.on('error', failed);
  if (body) body.pipe(proxyReq);
  // Nothing left of the client's body (none was sent, and the request is complete): ended at
  // once, without a pipe's listeners on both streams.
  else if (req.complete && req.readableLength === 0) proxyReq.end();
  else req.pipe(proxyReq);
  proxyReq.on('response', (answer: IncomingMessage) => {
    if (!hooks.answer(answer)) relayAnswer(req, res, answer);
  });
  return proxyReq;
}

/** The upstream's answer to the client: its head copied, its body piped (unless `res` was answered already). */
export function relayAnswer(req: IncomingMessage, res: ServerResponse, answer: IncomingMessage): void {
  if (!res.headersSent) copyHead(req, res, answer);
  if (!res.writableEnded) answer.pipe(res);
}

/** The answer's status and headers onto `res`, as http-proxy-3's outgoing passes set them. */
function copyHead(req: IncomingMessage, res: ServerResponse, answer: IncomingMessage): void {
  const headers = answer.headers;
  // hop-by-hop: the client's framing is Node's to choose
  if (headers['transfer-encoding'] !== undefined) delete headers['transfer-encoding'];
  if (req.httpVersion === '1.0') headers.connection = req.headers.connection || 'close';
  else if (!headers.connection) headers.connection = req.headers.connection || 'keep-alive';
  // setHeader, one by one: what the gateway already set on `res` (x-request-id, its Set-Cookie) is
  // replaced by an upstream header of the same name, as before.
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) res.setHeader(name, value);
  }
  res.statusCode = answer.statusCode!;
  if (answer.statusMessage) res.statusMessage = answer.statusMessage;
}

/**
 * The upstream's own path in front of a target, queries merged with `&` (http-proxy-3's urlJoin,
 * for an UPSTREAM_URL with a path: `/owui` and `/api/x?a=1` give `/owui/api/x?a=1`).
 */
export function joinPath(base: string, target: string): string {
  const queries: string[] = [];
  const paths = [base, target].map((part) => {
    const q = part.indexOf('?');
    if (q === -1) return part;
    queries.push(part.slice(q + 1));
    return part.slice(0, q);
  });
  let joined = '';
  for (const seg of paths) {
    if (!seg) continue;
    if (joined.endsWith('/')) joined += seg.startsWith('/') ? seg.slice(1) : seg;
    else joined += seg.startsWith('/') ? seg : '/' + seg;
  }
  const query = queries.filter(Boolean).join('&');
  return query ? `${joined}?${query}` : joined;
}
