// Every byte to and from the chat front-end goes through here: the streaming proxy for client
// traffic (gateway/upstream/forward.ts over one keep-alive agent), WebSocket upgrades (gateway/upstream/websocket-join.ts)
// and `calls` for the gateway's own requests (gateway/upstream/calls.ts). Client bodies are
// piped, never buffered; only `calls` buffers, and only up to a bound.
import http, { type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Readable, type Duplex } from 'node:stream';
import type { Observability } from '../observability/observability.js';
import { answerFailure, PERSONAL_CACHE_CONTROL, UpstreamError } from '../http/respond.js';
import { classify } from '../../policies/routes.js';
import { bearerToken, UpstreamCalls, type BodySink, type TokenRenewal, type UpstreamResponse } from './calls.js';
import { forwardRequest, relayAnswer, type ForwardTarget } from './forward.js';
import { mayResend } from '../../policies/sign-in-renewal.js';
import { forwardUpgrade, validStatus, type Guarding, type UpgradeTarget } from './websocket-join.js';

export type { BodySink, UpstreamResponse, Guarding };
export { UpstreamError };

export interface UpstreamOptions {
  url: string;
  timeoutMs: number;
  maxSockets: number;
  rewriteMaxBytes: number;
  /** idle time allowed inside a streaming response before it is cut */
  idleTimeoutMs?: number;
}

/**
 * How long a pooled connection to the chat front-end may stay idle. Open WebUI's server (uvicorn)
 * closes one idle for 5 s and announces no `Keep-Alive: timeout`; a socket the pool reuses just as
 * it does is reset, and the request fails (a 502). Let go 1 s earlier, as undici does for a server
 * that announces nothing (a server that announces less is honoured by Node itself, 1 s earlier).
 */
export const POOL_IDLE_MS = 4_000;

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
  /** the upstream request of the latest try */
  request?: ClientRequest;
  /** the upstream's answer being streamed */
  answer?: IncomingMessage;
  timedOut: boolean;
  answered: boolean;
  /** the gateway's own Set-Cookie lines for the answer (the request's context: a renewed or cleared session) */
  setCookies: readonly string[] | undefined;
}

/**
 * Headers copied from an upstream answer that failed before its first byte: the 502 carries none of
 * them, but keeps the gateway's own Set-Cookie (a session renewed by this request: its rotated
 * refresh token must reach the browser, or the next request spends the old one).
 */
function dropUpstreamHeaders(res: ServerResponse, ours: readonly string[] | undefined): void {
  for (const name of res.getHeaderNames()) if (name !== 'x-request-id') res.removeHeader(name);
  if (ours?.length) res.setHeader('set-cookie', [...ours]);
}

/** The chat front-end, as the gateway reaches it. */
export class Upstream {
  /** the keep-alive pool every request to the chat front-end shares */
  readonly agent: http.Agent;
  private readonly forwardTo: ForwardTarget;
  private readonly timeoutMs: number;
  // Time to response headers, counted from the end of the request body: an upstream slower than
  // the timeout gets 504. A long upload is not cut by it (the idle timeouts bound a stalled one).
  private readonly exchanges = new WeakMap<IncomingMessage, Exchange>();
  private readonly upgrades: UpgradeTarget;
  /** the gateway's own requests (gateway/upstream/calls.ts), over the same pool */
  readonly calls: UpstreamCalls;

  constructor(
    options: UpstreamOptions,
    private readonly obs: Observability,
  ) {
    const target = new URL(options.url);
    this.agent = new http.Agent({
      keepAlive: true,
      maxSockets: options.maxSockets,
      maxFreeSockets: 256,
      // an idle socket's life in the pool: a request in flight has its own bounds (the forward's
      // idle timeout, a call's timer)
      timeout: POOL_IDLE_MS,
      scheduling: 'lifo',
    });
    this.upgrades = { target, timeoutMs: options.timeoutMs, obs };
    this.calls = new UpstreamCalls({ target, agent: this.agent, timeoutMs: options.timeoutMs, rewriteMaxBytes: options.rewriteMaxBytes });
    this.timeoutMs = options.timeoutMs;
    this.forwardTo = {
      agent: this.agent,
      protocol: target.protocol,
      // the WHATWG URL keeps an IPv6 host in brackets; the socket's address has none
      hostname: target.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: Number(target.port) || (target.protocol === 'https:' ? 443 : 80),
      // The request target is the canonical one (gateway/http/canonical-path.ts): sent as it is,
      // joined to the upstream's own path only when UPSTREAM_URL has one.
      base: target.pathname !== '/' || target.search !== '' ? target.pathname + target.search : undefined,
      idleTimeoutMs: options.idleTimeoutMs ?? 300_000,
    };
  }

  /**
   * The time to the upstream's answer starts with the end of the request body, whether or not a
   * pooled socket is free: with every one held by an upstream that does not answer, a request
   * waiting for one gets its 504 on time too, not one UPSTREAM_TIMEOUT_MS per socket freed before it.
   */
  private armTimer(tracked: Exchange, proxyReq: ClientRequest, req: IncomingMessage, res: ServerResponse): void {
    const arm = () => {
      if (tracked.answered) return;
      tracked.timer = setTimeout(() => {
        tracked.timedOut = true;
        // Without a socket, destroy() is heard of only when one comes free: answered here instead.
        const waiting = !proxyReq.socket;
        proxyReq.destroy();
        if (waiting) this.onError(Object.assign(new Error('no pooled connection to the upstream came free in time'), { code: 'ETIMEDOUT' }), req, res);
      }, this.timeoutMs);
    };
    if (req.complete) arm();
    else req.once('end', arm);
  }

  /** The upstream's answer, before its head is copied to `res`. */
  private onAnswer(proxyRes: IncomingMessage, req: IncomingMessage, res: ServerResponse): void {
    const tracked = this.exchangeOf(req);
    tracked.answered = true;
    clearTimeout(tracked.timer);
    if (!validStatus(proxyRes.statusCode)) {
      // Relayed, an invalid status (999) would be the client's problem; answered here, the
      // forward finds the response finished and pipes nothing.
      proxyRes.destroy();
      answerFailure(
        res,
        new UpstreamError('bad-status', `upstream answered an invalid status ${proxyRes.statusCode}`),
        this.obs,
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
      if (!res.writableEnded) res.destroy();
    });
    // The upstream connection's hop-by-hop headers are not the client's (RFC 9110 7.6.1), and the
    // client's own `Connection: close` (removed from req.headers before forwarding) must still be
    // honoured: left alone, the forward answers `Connection: keep-alive` and the socket stays open.
    // Overwritten, not deleted (the forward skips undefined values; a delete slows every later
    // read of the object).
    const headers = proxyRes.headers;
    const keepAlive = res.shouldKeepAlive !== false;
    headers.connection = keepAlive ? 'keep-alive' : 'close';
    // The gateway's own keep-alive hint, as Node sends it on the gateway's other answers.
    headers['keep-alive'] = keepAlive ? keepAliveHint(res.socket) : undefined;
    if (headers['proxy-connection'] !== undefined) headers['proxy-connection'] = undefined;
    // The chat front-end's API answers and pages are a signed-in user's (GET /api/v1/auths/ even
    // carries its token, with an ETag and no Cache-Control): never stored, so that Back after
    // signing out shows nothing from the cache. Static assets (/static/, /_app/,
    // ...) keep what the upstream says: they cost nothing more.
    if (classify(pathOf(req.url)) !== 'public') headers['cache-control'] = PERSONAL_CACHE_CONTROL;
    // The gateway's own Set-Cookie (a renewed or cleared session) first: the forward copies the
    // upstream's with setHeader, which replaces what the answer already holds.
    const ours = tracked.setCookies;
    if (ours && headers['set-cookie']) headers['set-cookie'] = [...ours, ...headers['set-cookie']];
  }

  /**
   * Stream a request whose url and headers the gateway has already set. `setCookies`: the
   * gateway's own Set-Cookie lines of the answer (already on `res`), kept ahead of the upstream's.
   * `renewal`: the token in its Authorization is the gateway's own, renewed when Open WebUI refuses it.
   */
  forward(req: IncomingMessage, res: ServerResponse, body?: Buffer, setCookies?: readonly string[], renewal?: TokenRenewal): void {
    if (setCookies) this.exchangeOf(req).setCookies = setCookies;
    // The exchange's state ends with the answer. Left in the WeakMap, its `answer` (whose
    // listeners lead back to the request, its own key) kept every exchange alive through the
    // young-generation GCs until the next full one: 15 % of all allocation promoted to the old
    // generation, a mark-compact every 2 s under load (docs/design/hot-path.md, "The exchange's state ends with its answer"). An
    // answer cut short (the client left first, or it was cut) also stops its upstream timer, which
    // would hold the exchange until UPSTREAM_TIMEOUT_MS, and its upstream request is aborted here.
    res.on('close', () => {
      const tracked = this.exchanges.get(req);
      if (!tracked) return;
      clearTimeout(tracked.timer);
      tracked.answered = true;
      this.exchanges.delete(req);
      if (!res.writableFinished) tracked.request?.destroy();
    });
    // `body`: a request body the gateway had to read to judge it, sent on byte for byte
    this.send(req, res, body ? Readable.from([body]) : undefined, body, renewal);
  }

  /** One try of a forward: the client's own body (`stream` undefined) or one in hand. */
  private send(req: IncomingMessage, res: ServerResponse, stream: Readable | undefined, body: Buffer | undefined, renewal: TokenRenewal | undefined): void {
    let superseded = false;
    const proxyReq = forwardRequest(this.forwardTo, req, res, stream, {
      answer: (answer) => {
        // the hot path pays one comparison: only a 401 to the gateway's own token is looked at
        const token = renewal && answer.statusCode === 401 ? bearerToken(req.headers.authorization) : undefined;
        const renewing = token === undefined ? undefined : renewal!.renewed(token);
        if (renewing) return this.holdWhileRenewing(answer, renewing, req, res, body, () => (superseded = true));
        this.onAnswer(answer, req, res);
        return false;
      },
      // A client that went away is not an error worth a log line; the upstream request is aborted.
      clientGone: () => clearTimeout(this.exchanges.get(req)?.timer),
      failed: (err) => {
        // a try whose 401 was dropped for a second one is over
        if (!superseded) this.onError(err, req, res);
      },
    });
    const tracked = this.exchangeOf(req);
    tracked.request = proxyReq;
    this.armTimer(tracked, proxyReq, req, res);
  }

  /**
   * Open WebUI answered 401 to the gateway's own token: the answer waits while the token is checked
   * (gateway/upstream/accounts.ts). Refused and renewed, the request is sent once more with the new
   * token when its whole body is in hand (policies/sign-in-renewal.ts mayResend); otherwise, or when
   * the 401 was the route's own or no renewal was had, the 401 goes to the client as it came.
   */
  private holdWhileRenewing(
    answer: IncomingMessage,
    renewing: Promise<string | undefined>,
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer | undefined,
    supersede: () => void,
  ): true {
    const tracked = this.exchangeOf(req);
    clearTimeout(tracked.timer);
    // while held, a broken answer is this exchange's failure (`failed`), and nothing once dropped
    answer.on('error', () => {});
    // the client left, or the exchange failed and was answered (`failed`): nothing more to send
    const over = () => res.destroyed || res.headersSent;
    const relay = () => {
      if (over()) return;
      this.onAnswer(answer, req, res);
      relayAnswer(req, res, answer);
    };
    const resend = mayResend({
      heldBody: body !== undefined,
      contentLength: req.headers['content-length'],
      transferEncoding: req.headers['transfer-encoding'],
    });
    renewing.then((token) => {
      if (token === undefined || !resend) return relay();
      if (over()) return;
      supersede();
      answer.resume();
      tracked.answered = false;
      tracked.timedOut = false;
      req.headers = { ...req.headers, authorization: `Bearer ${token}` };
      this.send(req, res, Readable.from(body ? [body] : []), body, undefined);
    }, relay);
    return true;
  }

  /**
   * Proxy a WebSocket upgrade whose url and headers the gateway has already set. With `guarding`
   * (an admin's Socket.IO, gateway/enforcement/socketio-guard.ts) the client's bytes go through the guard;
   * the upstream's reach the client untouched. An answer other than 101 is relayed as HTTP and the
   * connection closed.
   */
  forwardUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, guarding?: Guarding): void {
    forwardUpgrade(this.upgrades, req, socket, head, guarding);
  }

  close(): void {
    this.agent.destroy();
  }

  private exchangeOf(req: IncomingMessage): Exchange {
    let x = this.exchanges.get(req);
    if (!x) this.exchanges.set(req, (x = { timer: undefined, request: undefined, answer: undefined, timedOut: false, answered: false, setCookies: undefined }));
    return x;
  }

  private onError(err: Error & { code?: string }, req: IncomingMessage, response: ServerResponse): void {
    const tracked = this.exchangeOf(req);
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
    answerFailure(response, failure, this.obs, fields, req.complete ? {} : { connection: 'close' });
  }
}
