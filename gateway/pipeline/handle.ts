// The gateway, from socket to upstream, in the order a request meets it: the steps of `handle`.
//
//   1. canonical target (gateway/http/canonical-path.ts): one form, or 400; method overrides, TRACE,
//      an invalid Host and ambiguous body framing refused
//   2. route class (policies/routes.ts): routes the gateway answers itself (login pages,
//      auth-providers API, /auth/*, the chat front-end's sign-out, health, metrics) go to the
//      control app (Express); everything else stays here, outside Express: the hot path
//   3. the request's context; header hygiene happens where the upstream headers are assembled
//      (before step 7): client copies of the trusted headers and hop-by-hop headers left out
//   4. identity: session cookie or realm bearer JWT (gateway/auth/authenticator.ts); an upstream API key
//      only when ALLOW_UPSTREAM_API_KEYS; none: 401 for API paths, the logged-out guard for pages
//   5. trusted headers from that identity only, and its own upstream credential
//      (gateway/pipeline/caller.ts); X-Forwarded-* as the gateway sees the request
//   6. the policy (policies/admin-scoping.ts): pass, deny, own files, own chats, or audit; first,
//      behind an Open WebUI release the route table was not checked against, what
//      UPSTREAM_RELEASE_POLICY says of an admin's request (policies/upstream-release.ts)
//   7. carry it out (gateway/enforcement/enforce.ts): stream to the upstream, or answer from a
//      rewritten view, after asking the upstream whose chat or file it is
// From step 3 on, a request is carried by one context (gateway/pipeline/context.ts): identity,
// caller, decision, the headers sent upstream (assembled once, before step 7) and the session
// cookies of the answer. WebSocket upgrades take steps 1, 3, 4 and 5 in `upgrade()`, with the same
// context and an Origin check. Sockets,
// timeouts and the request log are gateway/http/server.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import type express from 'express';
import type { Settings } from '../../config/settings.js';
import type { PolicyReader, PolicySnapshot } from '../../config/policy.js';
import { decide, type CallerFacts, type Decision, type RequestFacts } from '../../policies/admin-scoping.js';
import { releaseDecision } from '../../policies/upstream-release.js';
import { judgedAgainUnderWay, POLICY_CHANGED_RULE, requestGoesOn, socketStaysOpen } from '../../policies/policy-change.js';
import { classify, type RouteClass } from '../../policies/routes.js';
import { websocketOrigin } from '../../policies/origins.js';
import { canonicalize, hasMethodOverride } from '../http/canonical-path.js';
import type { Upstream } from '../upstream/proxy.js';
import type { UpstreamRelease } from '../upstream/release.js';
import { NOT_AUTHENTICATED, rawJsonAnswer, sendJson } from '../http/respond.js';
import { createCallers, type Caller, type Callers } from './caller.js';
import { Enforcer } from '../enforcement/enforce.js';
import {
  publicOriginOf,
  type PublicOrigin,
  upstreamHeaders,
  validHost,
  isWebSocketUpgrade,
  connectionNamesFraming,
  trustedHeaderSet,
  upstreamApiKey,
  withoutUpstreamCredentials,
} from '../http/request-headers.js';
import { applySessionCookies } from '../auth/session-cookie.js';
import { RequestContext } from './context.js';
import type { Authenticator, Identity, SocketIdentity } from '../auth/identity.js';
import type { LoginRouting } from '../login/routes.js';
import type { Observability } from '../observability/observability.js';
import type { WebSocketTracker } from '../http/websockets.js';
import type { RequestLabels, RequestHandler } from '../http/server.js';

/** A socket's identity, with what its session is judged by afterwards (none for an authenticator without sessions). */
type OpenedSocket = SocketIdentity | { identity: Identity; key: undefined; verdict: undefined };

/** Refuse an upgrade with a short JSON answer, and close the socket. */
function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  if (socket.writable) socket.end(rawJsonAnswer(status, reason));
  socket.destroy();
}

/** Is the answer an event stream (its headers, as the upstream sent them, already on it)? */
const eventStream = (res: ServerResponse) => /^text\/event-stream/i.test(String(res.getHeader('content-type') ?? ''));

/** Methods whose forwarded request carries no body framing of its own (see `handle`). */
const UNFRAMED_BODY_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

export interface RequestStepsParts {
  settings: Pick<Settings, 'trustedHeaders' | 'publicUrl' | 'allowedOrigins' | 'allowUpstreamApiKeys' | 'upstream'>;
  /** the live settings: read once at a request's start (or a WebSocket's open) */
  policy: PolicyReader;
  obs: Observability;
  upstream: Upstream;
  /** the chat front-end's release, read by operations; its status is read here */
  release: Pick<UpstreamRelease, 'status'>;
  authenticator: Authenticator;
  loginRouting: LoginRouting;
  /** the gateway's own routes (Express) */
  control: express.Express;
  websockets: WebSocketTracker;
}

/** A request under way whose decision depends on the policy: judged again when a new one is applied. */
interface UnderWay {
  facts: RequestFacts;
  callerFacts: CallerFacts;
  decision: Decision;
  caller: string;
  res: ServerResponse;
}

/** The steps every request and WebSocket upgrade takes, in order (gateway/http/server.ts calls it). */
export class RequestSteps implements RequestHandler {
  private readonly settings: RequestStepsParts['settings'];
  private readonly policy: PolicyReader;
  private readonly obs: Observability;
  private readonly upstream: Upstream;
  private readonly release: Pick<UpstreamRelease, 'status'>;
  private readonly authenticator: Authenticator;
  private readonly loginRouting: LoginRouting;
  private readonly control: express.Express;
  private readonly websockets: WebSocketTracker;
  private readonly callers: Callers;
  private readonly trusted: ReadonlySet<string>;
  private readonly enforce: Enforcer;
  private readonly publicOrigin: PublicOrigin;
  /** admins' requests (and exports) still being answered: a new policy judges them again */
  private readonly underWay = new Set<UnderWay>();

  constructor(parts: RequestStepsParts) {
    ({
      settings: this.settings,
      policy: this.policy,
      obs: this.obs,
      upstream: this.upstream,
      release: this.release,
      authenticator: this.authenticator,
      loginRouting: this.loginRouting,
      control: this.control,
      websockets: this.websockets,
    } = parts);
    this.callers = createCallers(this.settings.trustedHeaders, this.upstream, this.obs);
    this.trusted = trustedHeaderSet(this.settings.trustedHeaders);
    this.enforce = new Enforcer({
      obs: this.obs,
      upstream: this.upstream,
      renewal: this.callers.renewal,
      trusted: this.trusted,
      release: () => this.release.status,
      rewriteMaxBytes: this.settings.upstream.rewriteMaxBytes,
    });
    this.publicOrigin = publicOriginOf(this.settings.publicUrl);
  }

  /**
   * Steps 4 and 5: identity, trusted headers, in the request's context. Undefined: the request was
   * answered; null: an anonymous request to a public path. Plain async, like every step: the
   * synchronous returns a known session once took saved nothing measurable (docs/design/plain-async.md).
   */
  private async identify(
    ctx: RequestContext,
    req: IncomingMessage,
    res: ServerResponse,
    cls: RouteClass,
    apiKey: string | undefined,
  ): Promise<Caller | null | undefined> {
    const identity = await this.authenticator.authenticate(req, ctx);
    ctx.identity = identity;
    // The session cookies step 4 renewed or cleared go on the answer here, once, before any
    // answer is written (a proxied one merges them with the upstream's: gateway/upstream/proxy.ts).
    applySessionCookies(res, ctx);
    // `return await`: a promise returned from an async function costs two more microtasks
    if (identity) return await this.callers.forIdentity(ctx, identity);
    if (apiKey) {
      const caller = await this.callers.forApiKey(ctx, apiKey);
      if (!caller) sendJson(res, 401, { detail: NOT_AUTHENTICATED });
      return caller;
    }
    if (cls === 'public') {
      // Anonymous: the client's own credential of the chat front-end was checked by nobody.
      withoutUpstreamCredentials(ctx);
      return null;
    }
    if (cls === 'api') {
      sendJson(res, 401, { detail: NOT_AUTHENTICATED });
      return undefined;
    }
    const location = await this.loginRouting.guard(ctx.path, req);
    res.writeHead(302, { location, 'cache-control': 'private, no-store', 'content-length': '0' });
    res.end();
    return undefined;
  }

  /** A request's steps, in order. A step that fails, at once or later, rejects the promise. */
  async handle(req: IncomingMessage, res: ServerResponse, labels: RequestLabels): Promise<void> {
    const requestId = randomUUID();
    res.setHeader('x-request-id', requestId);
    // 1. canonical target; what cannot be judged is refused
    const canonical = canonicalize(req.url);
    if (!canonical.ok) return sendJson(res, 400, { detail: `Bad request: ${canonical.reason}` });
    const { path, search, url } = canonical.target;
    // judged as this target from here on: every log line and metric, refusals included, names it so
    req.url = url;
    const cls = classify(path);
    labels.routeClass = cls;
    if (hasMethodOverride(req.headers)) return sendJson(res, 400, { detail: 'Bad request: method override headers are not accepted' });
    const method = req.method ?? 'GET';
    if (method === 'TRACE' || method === 'TRACK' || method === 'CONNECT') return sendJson(res, 405, { detail: 'Method Not Allowed' });
    if (!validHost(req.headers.host, req.httpVersion)) return sendJson(res, 400, { detail: 'Bad request: invalid Host header' }, { connection: 'close' });
    // Request smuggling: Node sends GET, HEAD, DELETE and OPTIONS upstream without chunked framing
    // (the forward even sets `Content-Length: 0` on DELETE and OPTIONS), so a chunked body on one of
    // them would reach Open WebUI as raw bytes after a bodiless request: a second request nobody judged.
    // Transfer-Encoding in HTTP/1.0 is faulty framing (RFC 9112 6.1), which Node accepts: refused too.
    // Connection naming Content-Length (or Transfer-Encoding, Host) would have the body's framing
    // left out of what is forwarded: the body would follow as raw bytes, the same second request.
    if (connectionNamesFraming(req.headers)) {
      return sendJson(res, 400, { detail: 'Bad request: Connection may not name Content-Length, Transfer-Encoding or Host' }, { connection: 'close' });
    }
    if (req.headers['transfer-encoding'] !== undefined && (UNFRAMED_BODY_METHODS.has(method) || req.httpVersion === '1.0')) {
      return sendJson(res, 400, { detail: `Bad request: a chunked body is not accepted on ${method} HTTP/${req.httpVersion}` }, { connection: 'close' });
    }
    // 2. route class: the gateway's own routes leave the hot path here
    if (cls === 'control') {
      // The provider list (anonymous, cached, asked by every login page) is answered by its route's
      // own code without going through Express, which cost more than the answer (bench/README.md).
      if (
        this.loginRouting.providerList &&
        (method === 'GET' || method === 'HEAD') &&
        (path === '/api/v1/auth-providers/' || path === '/api/v1/auth-providers')
      ) {
        return this.loginRouting.providerList(res);
      }
      this.control(req as express.Request, res as express.Response);
      return;
    }
    const expectContinue = req.headers.expect !== undefined && /100-continue/i.test(String(req.headers.expect));
    const apiKey = this.settings.allowUpstreamApiKeys ? upstreamApiKey(req.headers) : undefined;
    // 3. the request's context; what the client may not send upstream is left out when the
    // upstream headers are assembled (before step 7), the client's own headers stay as they came
    const ctx = new RequestContext(requestId, req.headers, method, path, search, expectContinue);
    // the policy this request is judged under, from start to end, whatever is applied meanwhile
    const policy = this.policy.current;
    // 4 and 5. identity, trusted headers (or 401, or the logged-out guard)
    const caller = await this.identify(ctx, req, res, cls, apiKey);
    if (caller !== undefined) await this.judge(ctx, req, res, caller, policy);
  }

  /** Steps 5 (the headers sent upstream, assembled once) to 7 for a request whose caller is known. */
  private judge(ctx: RequestContext, req: IncomingMessage, res: ServerResponse, caller: Caller | null, policy: PolicySnapshot): Promise<void> {
    ctx.caller = caller;
    ctx.headers = upstreamHeaders(req.headers, ctx, {
      clientIp: req.socket.remoteAddress,
      publicOrigin: this.publicOrigin,
      requestId: ctx.requestId,
      trusted: this.trusted,
    });
    // 6. the policy: the release's status is a field (read by operations), never a request here
    const facts = { method: ctx.method, path: ctx.path, search: ctx.search };
    const callerFacts = { admin: caller?.admin ?? false };
    const decision = this.decide(facts, callerFacts, policy);
    ctx.decision = decision;
    // An admin's request (and the export, A6) may outlive the policy it was judged under: kept
    // until its answer ends, judged again when another is applied. Nobody else's depends on it.
    if (judgedAgainUnderWay(decision, callerFacts)) this.keepUnderWay({ facts, callerFacts, decision, caller: caller?.label ?? 'anonymous', res });
    // 7. carry it out
    return this.enforce.carryOut(ctx, decision, req, res);
  }

  private decide(facts: RequestFacts, callerFacts: CallerFacts, policy: PolicySnapshot): Decision {
    return releaseDecision(facts, policy.upstreamRelease, callerFacts, this.release.status) ?? decide(facts, policy, callerFacts);
  }

  private keepUnderWay(u: UnderWay): void {
    this.underWay.add(u);
    u.res.once('close', () => this.underWay.delete(u));
  }

  /**
   * A new policy is in force: what stays open and the new policy decides otherwise is cut (an export
   * after the switch went off, an admin's event stream, also one whose answer has not begun yet),
   * and every open WebSocket is judged again (an admin's whose note events were not read closes: it
   * reconnects under the new policy). Ordinary answers under way finish under the policy they began with.
   */
  policyChanged(next: PolicySnapshot): void {
    for (const u of [...this.underWay]) {
      const now = this.decide(u.facts, u.callerFacts, next);
      if (!requestGoesOn(eventStream(u.res) ? 'event-stream' : 'answer', u.decision, now)) this.cut(u, next);
      // its answer has not begun: judged again when it does, should it be an event stream
      else if (!u.res.headersSent)
        u.res.once('pipe', () => !requestGoesOn(eventStream(u.res) ? 'event-stream' : 'answer', u.decision, now) && this.cut(u, next));
    }
    this.websockets.recheck();
  }

  private cut(u: UnderWay, next: PolicySnapshot): void {
    if (!this.underWay.delete(u)) return;
    this.obs.audit.warn(
      {
        event: 'policy-cut',
        rule: POLICY_CHANGED_RULE,
        judged: u.decision.rule,
        caller: u.caller,
        method: u.facts.method,
        path: u.facts.path,
        version: next.version,
      },
      'a request under way was cut: the policy now in force decides it otherwise',
    );
    if (!u.res.writableEnded) u.res.destroy();
  }

  /**
   * A WebSocket upgrade's steps: 1, 3, 4 and 5 as a request's, the Origin checked, the release's
   * policy for an admin; then the socket is tracked (judged again with its session and each new
   * policy) and joined to the upstream, an admin's read by the Socket.IO guard.
   */
  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, closing: boolean): Promise<void> {
    const refuse = (status: number, reason: string) => refuseUpgrade(socket, status, reason);
    if (closing) return refuse(503, 'Shutting down');
    const canonical = canonicalize(req.url);
    if (!canonical.ok || !validHost(req.headers.host, req.httpVersion) || connectionNamesFraming(req.headers)) return refuse(400, 'Bad Request');
    const { path, search, url } = canonical.target;
    if (!path.startsWith('/ws/')) return refuse(404, 'Not Found');
    req.url = url;
    if (!isWebSocketUpgrade(req.headers)) return refuse(400, 'Only WebSocket upgrades are accepted');
    // the policy the socket is let through under; a later one judges it again (policyChanged)
    const policy = this.policy.current;
    // The client may leave while its sign-in is checked (that can ask the realm and Open WebUI):
    // a socket already closed is neither tracked (its 'close' would never come) nor forwarded.
    let gone = false;
    const markGone = () => (gone = true);
    socket.on('close', markGone);
    // The same context as an HTTP request's; a session cookie it renewed goes on the 101 answer.
    const ctx = new RequestContext(randomUUID(), req.headers, req.method ?? 'GET', path, search, false);
    const opened = await this.openSocket(req, ctx);
    if (!opened) return refuse(401, NOT_AUTHENTICATED);
    // A browser sends its cookies with any cross-site WebSocket: the Origin must be ours.
    if (!websocketOrigin(opened.identity.via, req.headers.origin, this.settings.allowedOrigins).allow) return refuse(403, 'Forbidden origin');
    const caller = (ctx.caller = await this.callers.forIdentity(ctx, opened.identity));
    // an admin's Socket.IO is an API request too (UPSTREAM_RELEASE_POLICY=refuse-admins)
    const refusal = this.refusedByRelease(ctx, caller, policy);
    if (refusal) return refuse(refusal.status, refusal.detail);
    req.headers = ctx.headers = upstreamHeaders(req.headers, ctx, {
      clientIp: req.socket.remoteAddress,
      publicOrigin: this.publicOrigin,
      requestId: ctx.requestId,
      trusted: this.trusted,
      upgrade: true,
    });
    // An admin's Socket.IO is read frame by frame: no permessage-deflate (gateway/enforcement/socketio-guard.ts).
    if (caller.admin) delete ctx.headers['sec-websocket-extensions'];
    if (gone || socket.destroyed) return;
    // Not needed any more, and it would keep this whole scope for as long as the socket is open.
    socket.off('close', markGone);
    const notesGuarded = !policy.bypassAdminAccessControl;
    this.trackSocket(socket, opened, ctx, caller, notesGuarded);
    if (!caller.admin) return this.upstream.forwardUpgrade(req, socket, head);
    // An admin's Socket.IO is read: joins of other users' chats are dropped, and while the bypass
    // is off note events on notes they may not reach.
    const ends = { close: (code: number, why: string) => this.websockets.close(socket, code, why), mayForward: () => this.websockets.mayForward(socket) };
    this.upstream.forwardUpgrade(req, socket, head, this.enforce.sockets.forUpgrade(caller, ctx.headers, path, notesGuarded, ends));
  }

  /** Step 4 for a socket: its identity, and what its session's later checks need. */
  private async openSocket(req: IncomingMessage, ctx: RequestContext): Promise<OpenedSocket | undefined> {
    const opened = this.authenticator.authenticateSocket
      ? await this.authenticator.authenticateSocket(req, ctx)
      : await this.authenticator.authenticate(req, ctx).then((identity) => identity && { identity, key: undefined, verdict: undefined });
    if (!opened) return undefined;
    ctx.identity = opened.identity;
    return opened;
  }

  /** What UPSTREAM_RELEASE_POLICY says of an admin's socket, audited when it refuses it. */
  private refusedByRelease(ctx: RequestContext, caller: Caller, policy: PolicySnapshot): { status: number; detail: string } | undefined {
    const byRelease = releaseDecision({ method: ctx.method, path: ctx.path }, policy.upstreamRelease, caller, this.release.status);
    if (byRelease?.action !== 'deny') return undefined;
    this.obs.audit.info(
      { event: 'policy-denied', rule: byRelease.rule, caller: caller.label, method: 'GET', path: ctx.path, websocket: true },
      byRelease.detail,
    );
    return byRelease;
  }

  /** The socket keeps its identity: judged again whenever its session may have changed, and when a policy is applied. */
  private trackSocket(socket: Duplex, opened: OpenedSocket, ctx: RequestContext, caller: Caller, notesGuarded: boolean): void {
    this.obs.metrics.openWebSockets.inc();
    // 'on', not 'once': 'close' comes once, and a once-wrapper is three more objects per open socket.
    socket.on('close', () => this.obs.metrics.openWebSockets.dec());
    const { identity, verdict } = opened;
    const facts = { method: ctx.method, path: ctx.path };
    const how = { admin: caller.admin, notesGuarded };
    this.websockets.track(socket, {
      session: verdict && { key: opened.key, label: identity.email, verdict },
      setCookies: ctx.setCookies,
      // judged again when a policy is applied, and with the session checks; never per frame
      policy: caller.admin
        ? () => socketStaysOpen(how, this.policy.current, releaseDecision(facts, this.policy.current.upstreamRelease, caller, this.release.status))
        : undefined,
      label: identity.email,
    });
    // A session that ended while this upgrade was under way is caught at once, not at the next check.
    if (verdict) this.websockets.recheck(opened.key);
  }

  /** Forget what was cached about the upstream's objects (tests, and a policy change at runtime). */
  clear(): void {
    this.enforce.clear();
  }
}
