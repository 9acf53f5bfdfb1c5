// Step 7 of gateway/pipeline/handle.ts: carry out the policy's decision (policies/admin-scoping.ts)
// against the upstream. `pass` streams the request on; `deny` answers without calling the
// upstream; the file decisions answer from a view rebuilt of the caller's own files, or pass with
// an audit line when an admin reads or deletes a file that is not theirs (rule A7); the chat
// decisions ask the upstream, as the caller, whose chat it is before anything is forwarded.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ADMIN_SCOPED, type Decision } from '../../policies/admin-scoping.js';
import { isCallersOwnCollection, objectsNamedInBody } from '../../policies/body-objects.js';
import type { BodyRef } from '../../policies/open-webui-routes.js';
import type { Principal } from '../../policies/resource-access.js';
import type { ReleaseStatus } from '../../policies/upstream-release.js';
import { NOT_AUTHENTICATED, NOT_FOUND, sendJson, sendPage } from '../http/respond.js';
import { renderChatNotYours, renderReleaseNotChecked } from '../pages/templates.js';
import { pageLocale } from '../pages/locale.js';
import type { Upstream } from '../upstream/proxy.js';
import { FileViews, rewriteHeaders } from '../upstream/file-views.js';
import { ChatViews } from '../upstream/chat-views.js';
import { ObjectViews } from '../upstream/object-views.js';
import { AccountEmailAnswer, callJson } from '../upstream/json.js';
import { readJsonBody, readRawBody, chatNamedInBody } from '../http/request-body.js';
import { guardPollingBody, type DropReport, type SocketJudge } from '../http/socketio-guard.js';
import type { Observability } from '../observability/observability.js';
import type { Caller } from './caller.js';
import type { RequestContext } from './context.js';

/** Whom the gateway asks the upstream as: the request's caller, with the headers of its lookups. */
interface AskingAs {
  caller: Caller;
  headers: Record<string, string | string[] | undefined>;
}

/** Which rule dropped an admin's Socket.IO event, for its audit line. */
function dropRule(event: string | undefined, why: string): string {
  if (/\btoken\b/.test(why) || event === 'connect') return 'token (the admin\u2019s own account only)';
  if (event === 'events:chat') return 'chat join (ENABLE_ADMIN_CHAT_ACCESS fixed false)';
  if (/collaborative document update/.test(why)) return 'document update (one Open WebUI can decode)';
  return 'note events';
}

/** Objects of one body asked of the upstream at a time (a batch of files names many). */
const BODY_LOOKUPS_AT_ONCE = 8;

/** Carries out a policy's decision against the upstream: one method per kind of decision. */
export class Enforcer {
  private readonly obs: Observability;
  private readonly upstream: Upstream;
  private readonly trusted: ReadonlySet<string>;
  private readonly fileViews: FileViews;
  private readonly objectViews: ObjectViews;
  private readonly chatViews: ChatViews;

  constructor(parts: {
    obs: Observability;
    upstream: Upstream;
    trusted: ReadonlySet<string>;
    /** the Open WebUI release behind the gateway, as last read */
    release: () => ReleaseStatus;
    /** REWRITE_MAX_BYTES: the most one rewritten answer keeps */
    rewriteMaxBytes: number;
  }) {
    ({ obs: this.obs, upstream: this.upstream, trusted: this.trusted } = parts);
    this.fileViews = new FileViews(this.upstream, this.obs, parts.release, parts.rewriteMaxBytes);
    this.objectViews = new ObjectViews(this.upstream, this.obs, parts.rewriteMaxBytes);
    this.chatViews = new ChatViews(this.upstream, (callerId, headers) => this.objectViews.principal(callerId, headers));
  }

  /** `pass` and `deny` answer at once; the others ask the upstream first, as the caller. */
  async carryOut(ctx: RequestContext, decision: Decision, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { caller, path, expectContinue } = ctx;
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
        return this.proceed(ctx, req, res, expectContinue);
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
        return this.auditFileAccess(ctx, decision, req, res);
    }
    // Every other decision asks the upstream about the request as its caller: there must be one.
    if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
    const as: AskingAs = { caller, headers: rewriteHeaders(ctx.headers!, this.trusted) };
    switch (decision.action) {
      case 'filter-own-files':
        return this.filterOwnFiles(ctx, decision, as, res);
      case 'require-own-chat':
        return this.requireOwnChat(ctx, decision, as, req, res);
      case 'require-own-chat-in-body':
        return this.requireOwnChatInBody(ctx, decision, as, req, res);
      case 'require-access':
        return this.requireAccess(ctx, decision, as, req, res);
      case 'require-own-account':
        return this.requireOwnAccount(ctx, decision, as, req, res);
      case 'filter-listing':
        return this.filterListing(ctx, decision, as, req, res);
      case 'redact-fields':
        return this.objectViews.serveRedacted(res, ctx.path + ctx.search, as.headers, decision.fields, decision.emptied);
      case 'scope-names':
        return this.scopeNames(ctx, decision, as, req, res);
      case 'guard-socketio-post':
        return this.guardSocketioPost(ctx, decision, as, req, res);
    }
  }

  /** Forget what was cached about the upstream's objects. */
  clear(): void {
    this.chatViews.clear();
    this.objectViews.clear();
  }

  /**
   * Stream the request on: `100 Continue` first when the client waits for it, with the headers
   * the context assembled and the session cookies it holds for the answer.
   */
  private proceed(ctx: RequestContext, req: IncomingMessage, res: ServerResponse, expectContinue: boolean, body?: Buffer): void {
    if (expectContinue && !body) res.writeContinue();
    req.headers = ctx.headers!;
    this.upstream.forward(req, res, body, ctx.setCookies);
  }

  /** The audit line of an answer the gateway took other users' items out of: how many. */
  private removed(caller: Caller, callerId: string, req: IncomingMessage, path: string, rule: string, event: string, msg: string): (removed: number) => void {
    return (removed) => this.obs.audit.info({ event, rule, caller: caller.label, callerId, method: req.method, path, removed }, msg);
  }

  /** A refusal of the route table (admins, bypass off): audited with its rule, never forwarded. */
  private refuse(res: ServerResponse, caller: Caller, callerId: string, method: string | undefined, path: string, rule: string, detail: string): void {
    this.obs.audit.warn({ event: 'admin-access-denied', rule, caller: caller.label, callerId, method, path }, detail);
    sendJson(res, 403, { detail });
  }

  /** The refusal of an answer about one model the admin may not see, or that names none: the same 403 for both. */
  private modelRefused(res: ServerResponse, caller: Caller, callerId: string, req: IncomingMessage, path: string, rule: string): () => void {
    return () => this.refuse(res, caller, callerId, req.method, path, `${rule}: not a model the admin may see`, ADMIN_SCOPED);
  }

  private async filterOwnFiles(
    ctx: RequestContext,
    decision: Extract<Decision, { action: 'filter-own-files' }>,
    as: AskingAs,
    res: ServerResponse,
  ): Promise<void> {
    const { search } = ctx;
    const { caller, headers } = as;
    const callerId = await caller.upstreamUserId();
    return this.fileViews.serveOwn(res, decision.view, search, headers, { id: callerId, admin: caller.admin });
  }

  private async auditFileAccess(
    ctx: RequestContext,
    decision: Extract<Decision, { action: 'audit-file-access' }>,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { caller, path, expectContinue } = ctx;
    const upstreamHeaders = ctx.headers!;
    if (!caller) return this.proceed(ctx, req, res, expectContinue);
    const lookup = Promise.all([caller.upstreamUserId(), this.fileViews.ownerOf(decision.fileId, rewriteHeaders(upstreamHeaders, this.trusted))]).then(
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
    return this.proceed(ctx, req, res, expectContinue);
  }

  private async requireOwnChat(
    ctx: RequestContext,
    decision: Extract<Decision, { action: 'require-own-chat' }>,
    as: AskingAs,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { path, expectContinue } = ctx;
    const { caller, headers } = as;
    // Known before anything is forwarded: a write never reaches the upstream on a guess.
    const callerId = await caller.upstreamUserId();
    if (await this.chatViews.mayAccess(decision.access, callerId, headers)) return this.proceed(ctx, req, res, expectContinue);
    this.obs.audit.warn({ event: 'admin-chat-access-denied', rule: decision.rule, caller: caller.label, callerId, method: req.method, path }, decision.detail);
    if (decision.page) return sendPage(res, 403, renderChatNotYours({ locale: pageLocale(undefined, req.headers['accept-language']) }));
    return sendJson(res, 401, { detail: decision.detail });
  }

  private async requireOwnChatInBody(
    ctx: RequestContext,
    decision: Extract<Decision, { action: 'require-own-chat-in-body' }>,
    as: AskingAs,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { path, expectContinue } = ctx;
    const { caller, headers } = as;
    // The body is read (bounded) to find the chat it names, then sent on unchanged.
    if (expectContinue) res.writeContinue();
    const body = await readJsonBody(req);
    if (!body.ok) return sendJson(res, body.status, { detail: body.detail });
    const named = chatNamedInBody(body.json);
    const callerId = await caller.upstreamUserId();
    let allowed = named.kind !== 'unreadable';
    if (named.kind === 'chat') allowed = await this.chatViews.mayAccess({ need: 'own-chat', chatId: named.id }, callerId, headers);
    else if (named.kind === 'channel')
      allowed = (
        await this.objectViews.mayAccess(
          `/api/v1/channels/${encodeURIComponent(named.id)}`,
          'write',
          await this.objectViews.principal(callerId, headers),
          headers,
        )
      ).ok;
    // then what the completion attaches (files, knowledge, notes, folders, chats)
    let rule = decision.rule;
    if (allowed && decision.inBody) {
      const why = await this.unreachableInBody(body.json, decision.inBody, await this.objectViews.principal(callerId, headers), headers);
      if (why) [allowed, rule] = [false, `${rule} (${why})`];
    }
    if (allowed) return this.proceed(ctx, req, res, false, body.raw);
    this.obs.audit.warn({ event: 'admin-chat-access-denied', rule, caller: caller.label, callerId, method: req.method, path }, decision.detail);
    return sendJson(res, 401, { detail: decision.detail });
  }

  private async requireAccess(
    ctx: RequestContext,
    decision: Extract<Decision, { action: 'require-access' }>,
    as: AskingAs,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { path, expectContinue } = ctx;
    const { caller, headers } = as;
    const callerId = await caller.upstreamUserId();
    const who = await this.objectViews.principal(callerId, headers);
    if (decision.lookup) {
      const found = await this.objectViews.mayAccess(decision.lookup, decision.permission, who, headers);
      // no object behind the id: answered as Open WebUI answers it, nothing refused, nothing to audit
      if (found.absent) return sendJson(res, 404, { detail: NOT_FOUND });
      if (!found.ok) return this.refuse(res, caller, callerId, req.method, path, decision.rule, decision.detail);
    }
    if (!decision.inBody) return this.proceed(ctx, req, res, expectContinue);
    // Objects named in the body: the body is read once (bounded), every object checked as the
    // caller, then exactly those bytes forwarded.
    if (expectContinue) res.writeContinue();
    const body = await readJsonBody(req);
    if (!body.ok) return sendJson(res, body.status, { detail: body.detail });
    const why = await this.unreachableInBody(body.json, decision.inBody, who, headers);
    if (why) return this.refuse(res, caller, callerId, req.method, path, `${decision.rule} (${why})`, decision.detail);
    return this.proceed(ctx, req, res, false, body.raw);
  }

  private async requireOwnAccount(
    ctx: RequestContext,
    decision: Extract<Decision, { action: 'require-own-account' }>,
    as: AskingAs,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { path, expectContinue } = ctx;
    const { caller, headers } = as;
    const callerId = await caller.upstreamUserId();
    if (!callerId || decision.userId !== callerId) return this.refuse(res, caller, callerId, req.method, path, decision.rule, decision.detail);
    if (!decision.keepEmail) return this.proceed(ctx, req, res, expectContinue);
    if (expectContinue) res.writeContinue();
    const body = await readJsonBody(req);
    if (!body.ok) return sendJson(res, body.status, { detail: body.detail });
    const email = body.json && typeof body.json === 'object' ? (body.json as { email?: unknown }).email : undefined;
    // absent or null leaves the email as it is; anything else must be the one the account has
    // (asked of the upstream, as the caller) and, for a realm identity, the realm's
    if (email !== undefined && email !== null) {
      const current = await callJson(this.upstream, AccountEmailAnswer, 'GET', '/api/v1/auths/', headers).then(
        (up) => up.json?.email,
        () => undefined,
      );
      const wanted = typeof email === 'string' ? email.trim().toLowerCase() : undefined;
      const same =
        wanted !== undefined &&
        current !== undefined &&
        wanted === current.toLowerCase() &&
        (!caller.identity || wanted === caller.identity.email.toLowerCase());
      if (!same) return this.refuse(res, caller, callerId, req.method, path, `${decision.rule}: the email stays the realm's`, decision.detail);
    }
    return this.proceed(ctx, req, res, false, body.raw);
  }

  private async filterListing(
    ctx: RequestContext,
    decision: Extract<Decision, { action: 'filter-listing' }>,
    as: AskingAs,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { path, search } = ctx;
    const { caller, headers } = as;
    const callerId = await caller.upstreamUserId();
    const who = await this.objectViews.principal(callerId, headers);
    return this.objectViews.serveListing(
      res,
      path,
      search,
      headers,
      who,
      decision,
      this.removed(caller, callerId, req, path, decision.rule, 'admin-list-filtered', 'items of other users removed from an admin\u2019s list'),
      this.modelRefused(res, caller, callerId, req, path, decision.rule),
    );
  }

  private async scopeNames(
    ctx: RequestContext,
    decision: Extract<Decision, { action: 'scope-names' }>,
    as: AskingAs,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { path, search } = ctx;
    const { caller, headers } = as;
    const callerId = await caller.upstreamUserId();
    const who = await this.objectViews.principal(callerId, headers);
    return this.objectViews.serveNames(
      res,
      decision,
      path + search,
      headers,
      who,
      this.removed(
        caller,
        callerId,
        req,
        path,
        decision.rule,
        'admin-names-filtered',
        'tags and model names of other users\u2019 chats and objects removed from an admin\u2019s answer',
      ),
      this.modelRefused(res, caller, callerId, req, path, decision.rule),
    );
  }

  private async guardSocketioPost(
    ctx: RequestContext,
    decision: Extract<Decision, { action: 'guard-socketio-post' }>,
    as: AskingAs,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const { path, expectContinue } = ctx;
    const { caller, headers } = as;
    if (expectContinue) res.writeContinue();
    const body = await readRawBody(req);
    if (!body.ok) return sendJson(res, body.status, { detail: body.detail });
    const kept = await guardPollingBody(body.raw.toString('utf8'), this.socketJudge(caller, headers), this.dropReport(caller, path, 'polling'), decision.notes);
    if (kept === undefined) {
      // every packet dropped: answered as Engine.IO answers a POST
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2', 'cache-control': 'private, no-store' });
      return void res.end('OK');
    }
    const out = Buffer.from(kept, 'utf8');
    // the body forwarded is the one rebuilt: its own length, no chunked framing
    const forwarded = ctx.headers!;
    delete forwarded['transfer-encoding'];
    forwarded['content-length'] = String(out.length);
    return this.proceed(ctx, req, res, false, out);
  }

  /**
   * Why the caller may not have the objects a JSON body names (policies/body-objects.ts
   * objectsNamedInBody), each asked of the upstream as the caller; undefined when every one is
   * theirs or granted to them.
   */
  private async unreachableInBody(json: unknown, refs: readonly BodyRef[], who: Principal, headers: Record<string, string | string[] | undefined>) {
    const named = objectsNamedInBody(json, refs);
    if (!named.ok) return named.why;
    for (let i = 0; i < named.lookups.length; i += BODY_LOOKUPS_AT_ONCE) {
      const batch = named.lookups.slice(i, i + BODY_LOOKUPS_AT_ONCE);
      const answers = await Promise.all(
        batch.map((o) =>
          'ownCollection' in o ? { ok: isCallersOwnCollection(o.ownCollection, who.userId) } : this.objectViews.mayAccess(o.lookup, o.permission, who, headers),
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

  /** Socket.IO events of an admin (gateway/http/socketio-guard.ts): may the caller reach the note, is the chat theirs? */
  socketJudge(caller: Caller, headers: Record<string, string | string[] | undefined>): SocketJudge {
    return async (need) => {
      const callerId = await caller.upstreamUserId();
      if (need.need === 'own-account') return need.userId === callerId;
      if (need.need === 'own-chat') return this.chatViews.mayAccess({ need: 'own-chat', chatId: need.chatId }, callerId, headers);
      const who = await this.objectViews.principal(callerId, headers);
      return (await this.objectViews.mayAccess(`/api/v1/notes/${encodeURIComponent(need.noteId)}`, need.permission, who, headers)).ok;
    };
  }

  /** The audit line of a dropped Socket.IO event. */
  dropReport(caller: Caller, path: string, transport: 'websocket' | 'polling'): DropReport {
    return (event, why) =>
      this.obs.audit.warn(
        {
          event: 'admin-socket-event-dropped',
          rule: `route table: Socket.IO ${dropRule(event, why)}`,
          caller: caller.label,
          socketEvent: event ?? 'unknown',
          transport,
          path,
        },
        why,
      );
  }
}
