// Step 7 of gateway/pipeline/handle.ts: carry out the policy's decision (policies/admin-scoping.ts)
// against the upstream. `pass` streams the request on; `deny` answers without calling the
// upstream; the file decisions answer from a view rebuilt of the caller's own files, or pass with
// an audit line when an admin reads or deletes a file that is not theirs (rule A7); the chat
// decisions ask the upstream, as the caller, whose chat it is before anything is forwarded. Every
// rule that asks is handed the caller as the upstream knows them, worked out once
// (gateway/enforcement/enforced-request.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ADMIN_SCOPED, type Decision } from '../../policies/admin-scoping.js';
import { isCallersOwnCollection, objectsNamedInBody } from '../../policies/body-objects.js';
import type { BodyRef } from '../../policies/open-webui-routes.js';
import type { Principal } from '../../policies/resource-access.js';
import type { ReleaseStatus } from '../../policies/upstream-release.js';
import { NOT_AUTHENTICATED, NOT_FOUND, sendJson, sendPage } from '../http/respond.js';
import { lookupHeaders } from '../http/request-headers.js';
import { renderChatNotYours, renderReleaseNotChecked } from '../pages/templates.js';
import { pageLocale } from '../pages/locale.js';
import type { Upstream } from '../upstream/proxy.js';
import { renewingCalls, type Calls, type TokenRenewal } from '../upstream/calls.js';
import { AccountEmailAnswer, callJson } from '../upstream/json.js';
import { readJsonBody, readRawBody, chatNamedInBody } from '../http/request-body.js';
import type { Observability } from '../observability/observability.js';
import { FileViews } from './file-views.js';
import { ChatViews } from './chat-views.js';
import { ObjectViews } from './object-views.js';
import { guardPollingBody } from './socketio-guard.js';
import { SocketGuarding } from './socket-guarding.js';
import { bodyToJudge, UpstreamCaller, type EnforcedRequest, type Headers } from './enforced-request.js';

/** Objects of one body asked of the upstream at a time (a batch of files names many). */
const BODY_LOOKUPS_AT_ONCE = 8;

/** Carries out a policy's decision against the upstream: one method per kind of decision. */
export class Enforcer {
  private readonly obs: Observability;
  private readonly upstream: Upstream;
  private readonly renewal: TokenRenewal;
  /** the gateway's own requests as the caller, sent again once with a renewed token when Open WebUI refused the one the gateway supplied */
  private readonly calls: Calls;
  private readonly trusted: ReadonlySet<string>;
  private readonly fileViews: FileViews;
  private readonly objectViews: ObjectViews;
  private readonly chatViews: ChatViews;
  /** an admin's Socket.IO, polling and WebSocket alike */
  readonly sockets: SocketGuarding;
  private readonly principalOf: (id: string, headers: Headers) => Promise<Principal>;

  constructor(parts: {
    obs: Observability;
    upstream: Upstream;
    /** renews the token of an identity's sign-in once Open WebUI refused it (gateway/upstream/accounts.ts) */
    renewal: TokenRenewal;
    trusted: ReadonlySet<string>;
    /** the Open WebUI release behind the gateway, as last read */
    release: () => ReleaseStatus;
    /** REWRITE_MAX_BYTES: the most one rewritten answer keeps */
    rewriteMaxBytes: number;
  }) {
    ({ obs: this.obs, upstream: this.upstream, renewal: this.renewal, trusted: this.trusted } = parts);
    // One home for a refused token: every request made as the caller goes through `renewal`, the
    // views' here, a forwarded one in `proceed`.
    this.calls = renewingCalls(this.upstream.calls, this.renewal);
    this.fileViews = new FileViews(this.calls, this.obs, parts.release, parts.rewriteMaxBytes);
    this.objectViews = new ObjectViews(this.calls, this.obs, parts.rewriteMaxBytes);
    this.principalOf = (id, headers) => this.objectViews.principal(id, headers);
    this.chatViews = new ChatViews(this.calls, this.principalOf);
    this.sockets = new SocketGuarding(this.obs, this.chatViews, this.objectViews, this.trusted);
  }

  /** `pass` and `deny` answer at once; the others ask the upstream first, as the caller. */
  async carryOut(request: EnforcedRequest, decision: Decision, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { caller, path } = request;
    this.obs.metrics.policyDecisions.tally(decision.action, decision.rule);
    // an admin's write (a chat, a message, a rating): the copies their views are answered from are brought up to date next
    if (caller?.admin && req.method !== 'GET' && req.method !== 'HEAD')
      res.once(
        'finish',
        () =>
          void caller.upstreamUserId().then(
            (id) => this.objectViews.ownRecordsChanged(id, path),
            () => {},
          ),
      );
    switch (decision.action) {
      case 'pass':
        return this.proceed(request, req, res, request.expectContinue);
      case 'deny':
        this.obs.audit.info({ event: 'policy-denied', rule: decision.rule, caller: caller?.label ?? 'anonymous', method: req.method, path }, decision.detail);
        if (decision.page)
          return sendPage(
            res,
            decision.status,
            renderReleaseNotChecked({ locale: pageLocale(undefined, req.headers['accept-language']), page: decision.page }),
          );
        return sendJson(res, decision.status, { detail: decision.detail });
      case 'audit-file-access':
        return this.auditFileAccess(request, decision, req, res);
    }
    // Every other decision asks the upstream about the request as its caller: there must be one.
    if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
    const asked = new UpstreamCaller(caller, await caller.upstreamUserId(), lookupHeaders(request.headers!, this.trusted), this.principalOf);
    switch (decision.action) {
      case 'filter-own-files':
        return this.fileViews.serveOwn(res, decision.view, request.search, asked.headers, { id: asked.id, admin: caller.admin });
      case 'require-own-chat':
        return this.requireOwnChat(request, decision, asked, req, res);
      case 'require-own-chat-in-body':
        return this.requireOwnChatInBody(request, decision, asked, req, res);
      case 'require-access':
        return this.requireAccess(request, decision, asked, req, res);
      case 'require-own-account':
        return this.requireOwnAccount(request, decision, asked, req, res);
      case 'filter-listing':
        return this.filterListing(request, decision, asked, req, res);
      case 'redact-fields':
        return this.objectViews.serveRedacted(res, path + request.search, asked.headers, decision.fields, decision.emptied);
      case 'scope-names':
        return this.scopeNames(request, decision, asked, req, res);
      case 'guard-socketio-post':
        return this.guardSocketioPost(request, decision, asked, req, res);
    }
  }

  /** Forget what was cached about the upstream's objects. */
  clear(): void {
    this.chatViews.clear();
    this.objectViews.clear();
  }

  /**
   * Stream the request on: `100 Continue` first when the client waits for it, with the headers
   * assembled for the upstream and the session cookies of the answer. The token of an identity's
   * sign-in is the gateway's to renew when Open WebUI refuses it; an API key is the client's own.
   */
  private proceed(request: EnforcedRequest, req: IncomingMessage, res: ServerResponse, expectContinue: boolean, body?: Buffer): void {
    if (expectContinue && !body) res.writeContinue();
    req.headers = request.headers!;
    this.upstream.forward(req, res, body, request.setCookies, request.caller?.identity ? this.renewal : undefined);
  }

  /** The audit line of an answer the gateway took other users' items out of: how many. */
  private removed(asked: UpstreamCaller, req: IncomingMessage, path: string, rule: string, event: string, msg: string): (removed: number) => void {
    return (removed) => this.obs.audit.info({ event, rule, caller: asked.caller.label, callerId: asked.id, method: req.method, path, removed }, msg);
  }

  /** A refusal of the route table (admins, bypass off): audited with its rule, never forwarded. */
  private refuse(res: ServerResponse, asked: UpstreamCaller, method: string | undefined, path: string, rule: string, detail: string): void {
    this.obs.audit.warn({ event: 'admin-access-denied', rule, caller: asked.caller.label, callerId: asked.id, method, path }, detail);
    sendJson(res, 403, { detail });
  }

  /** The refusal of an answer about one model the admin may not see, or that names none: the same 403 for both. */
  private modelRefused(res: ServerResponse, asked: UpstreamCaller, req: IncomingMessage, path: string, rule: string): () => void {
    return () => this.refuse(res, asked, req.method, path, `${rule}: not a model the admin may see`, ADMIN_SCOPED);
  }

  /** The audit line of a refused chat: its rule, never forwarded. */
  private chatRefused(asked: UpstreamCaller, req: IncomingMessage, path: string, rule: string, detail: string): void {
    this.obs.audit.warn({ event: 'admin-chat-access-denied', rule, caller: asked.caller.label, callerId: asked.id, method: req.method, path }, detail);
  }

  private async auditFileAccess(
    request: EnforcedRequest,
    decision: Extract<Decision, { action: 'audit-file-access' }>,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { caller, path, expectContinue } = request;
    if (!caller) return this.proceed(request, req, res, expectContinue);
    const lookup = Promise.all([caller.upstreamUserId(), this.fileViews.ownerOf(decision.fileId, lookupHeaders(request.headers!, this.trusted))]).then(
      ([me, owner]) => {
        if (owner !== me) {
          this.obs.audit.warn(
            {
              event: 'admin-file-access',
              caller: caller.label,
              callerId: me,
              fileId: decision.fileId,
              owner: owner ?? 'unknown',
              operation: decision.operation,
              method: req.method,
              path,
            },
            'admin touched a file they do not own',
          );
        }
      },
    );
    if (decision.operation === 'delete') await lookup.catch(() => {});
    else lookup.catch(() => {});
    return this.proceed(request, req, res, expectContinue);
  }

  private async requireOwnChat(
    request: EnforcedRequest,
    decision: Extract<Decision, { action: 'require-own-chat' }>,
    asked: UpstreamCaller,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    // Known before anything is forwarded: a write never reaches the upstream on a guess.
    if (await this.chatViews.mayAccess(decision.access, asked.id, asked.headers)) return this.proceed(request, req, res, request.expectContinue);
    this.chatRefused(asked, req, request.path, decision.rule, decision.detail);
    if (decision.page) return sendPage(res, 403, renderChatNotYours({ locale: pageLocale(undefined, req.headers['accept-language']) }));
    return sendJson(res, 401, { detail: decision.detail });
  }

  private async requireOwnChatInBody(
    request: EnforcedRequest,
    decision: Extract<Decision, { action: 'require-own-chat-in-body' }>,
    asked: UpstreamCaller,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    // The body is read (bounded) to find the chat it names, then sent on unchanged.
    const body = await bodyToJudge(request, req, res, readJsonBody);
    if (!body) return;
    const named = chatNamedInBody(body.json);
    let allowed = named.kind !== 'unreadable';
    if (named.kind === 'chat') allowed = await this.chatViews.mayAccess({ need: 'own-chat', chatId: named.id }, asked.id, asked.headers);
    else if (named.kind === 'channel')
      allowed = (await this.objectViews.mayAccess(`/api/v1/channels/${encodeURIComponent(named.id)}`, 'write', await asked.principal(), asked.headers)).ok;
    // then what the completion attaches (files, knowledge, notes, folders, chats)
    let rule = decision.rule;
    if (allowed && decision.inBody) {
      const why = await this.unreachableInBody(body.json, decision.inBody, asked);
      if (why) [allowed, rule] = [false, `${rule} (${why})`];
    }
    if (allowed) return this.proceed(request, req, res, false, body.raw);
    this.chatRefused(asked, req, request.path, rule, decision.detail);
    return sendJson(res, 401, { detail: decision.detail });
  }

  private async requireAccess(
    request: EnforcedRequest,
    decision: Extract<Decision, { action: 'require-access' }>,
    asked: UpstreamCaller,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { path } = request;
    const principal = await asked.principal();
    if (decision.lookup) {
      const found = await this.objectViews.mayAccess(decision.lookup, decision.permission, principal, asked.headers);
      // no object behind the id: answered as Open WebUI answers it, nothing refused, nothing to audit
      if (found.absent) return sendJson(res, 404, { detail: NOT_FOUND });
      if (!found.ok) return this.refuse(res, asked, req.method, path, decision.rule, decision.detail);
    }
    if (!decision.inBody) return this.proceed(request, req, res, request.expectContinue);
    // Objects named in the body: the body is read once (bounded), every object checked as the
    // caller, then exactly those bytes forwarded.
    const body = await bodyToJudge(request, req, res, readJsonBody);
    if (!body) return;
    const why = await this.unreachableInBody(body.json, decision.inBody, asked);
    if (why) return this.refuse(res, asked, req.method, path, `${decision.rule} (${why})`, decision.detail);
    return this.proceed(request, req, res, false, body.raw);
  }

  private async requireOwnAccount(
    request: EnforcedRequest,
    decision: Extract<Decision, { action: 'require-own-account' }>,
    asked: UpstreamCaller,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { path } = request;
    if (!asked.id || decision.userId !== asked.id) return this.refuse(res, asked, req.method, path, decision.rule, decision.detail);
    if (!decision.keepEmail) return this.proceed(request, req, res, request.expectContinue);
    const body = await bodyToJudge(request, req, res, readJsonBody);
    if (!body) return;
    const email = body.json && typeof body.json === 'object' ? (body.json as { email?: unknown }).email : undefined;
    // absent or null leaves the email as it is; anything else must be the one the account has
    // (asked of the upstream, as the caller) and, for a realm identity, the realm's
    if (email !== undefined && email !== null && !(await this.sameEmail(email, asked)))
      return this.refuse(res, asked, req.method, path, `${decision.rule}: the email stays the realm's`, decision.detail);
    return this.proceed(request, req, res, false, body.raw);
  }

  /** Is `email` the one the caller's account has, and for a realm identity the realm's? */
  private async sameEmail(email: unknown, asked: UpstreamCaller): Promise<boolean> {
    const current = await callJson(this.calls, AccountEmailAnswer, 'GET', '/api/v1/auths/', asked.headers).then(
      (up) => up.json?.email,
      () => undefined,
    );
    const wanted = typeof email === 'string' ? email.trim().toLowerCase() : undefined;
    const identity = asked.caller.identity;
    return wanted !== undefined && current !== undefined && wanted === current.toLowerCase() && (!identity || wanted === identity.email.toLowerCase());
  }

  private async filterListing(
    request: EnforcedRequest,
    decision: Extract<Decision, { action: 'filter-listing' }>,
    asked: UpstreamCaller,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { path, search } = request;
    return this.objectViews.serveListing(
      res,
      path,
      search,
      asked.headers,
      await asked.principal(),
      decision,
      this.removed(asked, req, path, decision.rule, 'admin-list-filtered', 'items of other users removed from an admin\u2019s list'),
      this.modelRefused(res, asked, req, path, decision.rule),
    );
  }

  private async scopeNames(
    request: EnforcedRequest,
    decision: Extract<Decision, { action: 'scope-names' }>,
    asked: UpstreamCaller,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { path, search } = request;
    return this.objectViews.serveNames(
      res,
      decision,
      path + search,
      asked.headers,
      await asked.principal(),
      this.removed(
        asked,
        req,
        path,
        decision.rule,
        'admin-names-filtered',
        'tags and model names of other users\u2019 chats and objects removed from an admin\u2019s answer',
      ),
      this.modelRefused(res, asked, req, path, decision.rule),
    );
  }

  private async guardSocketioPost(
    request: EnforcedRequest,
    decision: Extract<Decision, { action: 'guard-socketio-post' }>,
    asked: UpstreamCaller,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const body = await bodyToJudge(request, req, res, readRawBody);
    if (!body) return;
    const { caller, headers } = asked;
    const kept = await guardPollingBody(
      body.raw.toString('utf8'),
      this.sockets.judge(caller, headers),
      this.sockets.dropReport(caller, request.path, 'polling'),
      decision.notes,
    );
    if (kept === undefined) {
      // every packet dropped: answered as Engine.IO answers a POST
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2', 'cache-control': 'private, no-store' });
      return void res.end('OK');
    }
    const out = Buffer.from(kept, 'utf8');
    // the body forwarded is the one rebuilt: its own length, no chunked framing
    const forwarded = request.headers!;
    delete forwarded['transfer-encoding'];
    forwarded['content-length'] = String(out.length);
    return this.proceed(request, req, res, false, out);
  }

  /**
   * Why the caller may not have the objects a JSON body names (policies/body-objects.ts
   * objectsNamedInBody), each asked of the upstream as the caller; undefined when every one is
   * theirs or granted to them.
   */
  private async unreachableInBody(json: unknown, refs: readonly BodyRef[], asked: UpstreamCaller) {
    const named = objectsNamedInBody(json, refs);
    if (!named.ok) return named.why;
    const principal = await asked.principal();
    for (let i = 0; i < named.lookups.length; i += BODY_LOOKUPS_AT_ONCE) {
      const batch = named.lookups.slice(i, i + BODY_LOOKUPS_AT_ONCE);
      const answers = await Promise.all(
        batch.map((o) =>
          'ownCollection' in o
            ? { ok: isCallersOwnCollection(o.ownCollection, principal.userId) }
            : this.objectViews.mayAccess(o.lookup, o.permission, principal, asked.headers),
        ),
      );
      const denied = answers.findIndex((a) => !a.ok);
      if (denied >= 0) {
        const o = batch[denied]!;
        return `the body names ${'ownCollection' in o ? `the collection ${o.ownCollection}` : o.lookup}`;
      }
    }
    return undefined;
  }
}
