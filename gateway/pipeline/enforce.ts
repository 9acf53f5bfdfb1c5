// Step 7 of gateway/pipeline/handle.ts: carry out the policy's decision (policies/admin-scoping.ts)
// against the upstream. `pass` streams the request on; `deny` answers without calling the
// upstream; the file decisions answer from a view rebuilt of the caller's own files, or pass with
// an audit line when an admin reads or deletes a file that is not theirs (rule A7); the chat
// decisions ask the upstream, as the caller, whose chat it is before anything is forwarded.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Decision } from '../../policies/admin-scoping.js';
import { isCallersOwnCollection, objectsNamedInBody } from '../../policies/body-objects.js';
import type { BodyRef } from '../../policies/open-webui-routes.js';
import type { Principal } from '../../policies/resource-access.js';
import { NOT_AUTHENTICATED, NOT_FOUND, sendJson, sendPage } from '../http/respond.js';
import { renderChatNotYours } from '../pages/templates.js';
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

/** Objects of one body asked of the upstream at a time (a batch of files names many). */
const BODY_LOOKUPS_AT_ONCE = 8;

export type Enforcer = ReturnType<typeof createEnforcer>;

export function createEnforcer(parts: { obs: Observability; upstream: Upstream; trusted: ReadonlySet<string> }) {
  const { obs, upstream, trusted } = parts;
  const fileViews = new FileViews(upstream, obs);
  const objectViews = new ObjectViews(upstream, obs);
  const chatViews = new ChatViews(upstream);

  /**
   * Stream the request on: `100 Continue` first when the client waits for it, with the headers
   * the context assembled and the session cookies it holds for the answer.
   */
  function proceed(ctx: RequestContext, req: IncomingMessage, res: ServerResponse, expectContinue: boolean, body?: Buffer): void {
    if (expectContinue && !body) res.writeContinue();
    req.headers = ctx.headers!;
    upstream.forward(req, res, body, ctx.setCookies);
  }

  /** A refusal of the route table (admins, bypass off): audited with its rule, never forwarded. */
  function refuse(res: ServerResponse, caller: Caller, callerId: string, method: string | undefined, path: string, rule: string, detail: string): void {
    obs.audit.warn({ event: 'admin-access-denied', rule, caller: caller.label, callerId, method, path }, detail);
    sendJson(res, 403, { detail });
  }

  /** `pass` and `deny` answer at once; the others ask the upstream first. */
  async function enforce(ctx: RequestContext, decision: Decision, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { caller, path, search, expectContinue } = ctx;
    obs.metrics.policyDecisions.tally(decision.action, decision.rule);
    const upstreamHeaders = ctx.headers!;
    switch (decision.action) {
      case 'pass':
        return proceed(ctx, req, res, expectContinue);
      case 'deny':
        obs.audit.info({ event: 'policy-denied', rule: decision.rule, caller: caller?.label ?? 'anonymous', method: req.method, path }, decision.detail);
        return sendJson(res, decision.status, { detail: decision.detail });
      case 'filter-own-files': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        const callerId = await caller.upstreamUserId();
        return fileViews.serveOwn(res, decision.view, path, search, rewriteHeaders(upstreamHeaders, trusted), callerId);
      }
      case 'audit-file-access': {
        if (!caller) return proceed(ctx, req, res, expectContinue);
        const lookup = Promise.all([caller.upstreamUserId(), fileViews.ownerOf(decision.fileId, rewriteHeaders(upstreamHeaders, trusted))]).then(
          ([me, owner]) => {
            if (owner !== me) {
              obs.audit.warn(
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
        return proceed(ctx, req, res, expectContinue);
      }
      case 'require-own-chat': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        // Known before anything is forwarded: a write never reaches the upstream on a guess.
        const callerId = await caller.upstreamUserId();
        if (await chatViews.mayAccess(decision.access, callerId, rewriteHeaders(upstreamHeaders, trusted))) return proceed(ctx, req, res, expectContinue);
        obs.audit.warn({ event: 'admin-chat-access-denied', rule: decision.rule, caller: caller.label, callerId, method: req.method, path }, decision.detail);
        if (decision.page) return sendPage(res, 403, renderChatNotYours({ locale: pageLocale(undefined, req.headers['accept-language']) }));
        return sendJson(res, 401, { detail: decision.detail });
      }
      case 'require-own-chat-in-body': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        // The body is read (bounded) to find the chat it names, then sent on unchanged.
        if (expectContinue) res.writeContinue();
        const body = await readJsonBody(req);
        if (!body.ok) return sendJson(res, body.status, { detail: body.detail });
        const named = chatNamedInBody(body.json);
        const headers = rewriteHeaders(upstreamHeaders, trusted);
        const callerId = await caller.upstreamUserId();
        let allowed = named.kind !== 'unreadable';
        if (named.kind === 'chat') allowed = await chatViews.mayAccess({ need: 'own-chat', chatId: named.id }, callerId, headers);
        else if (named.kind === 'channel')
          allowed = (
            await objectViews.mayAccess(`/api/v1/channels/${encodeURIComponent(named.id)}`, 'write', await objectViews.principal(callerId, headers), headers)
          ).ok;
        // then what the completion attaches (files, knowledge, notes, folders, chats)
        let rule = decision.rule;
        if (allowed && decision.inBody) {
          const why = await unreachableInBody(body.json, decision.inBody, await objectViews.principal(callerId, headers), headers);
          if (why) [allowed, rule] = [false, `${rule} (${why})`];
        }
        if (allowed) return proceed(ctx, req, res, false, body.raw);
        obs.audit.warn({ event: 'admin-chat-access-denied', rule, caller: caller.label, callerId, method: req.method, path }, decision.detail);
        return sendJson(res, 401, { detail: decision.detail });
      }
      case 'require-access': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        const headers = rewriteHeaders(upstreamHeaders, trusted);
        const callerId = await caller.upstreamUserId();
        const who = await objectViews.principal(callerId, headers);
        if (decision.lookup) {
          const found = await objectViews.mayAccess(decision.lookup, decision.permission, who, headers);
          // no object behind the id: answered as Open WebUI answers it, nothing refused, nothing to audit
          if (found.absent) return sendJson(res, 404, { detail: NOT_FOUND });
          if (!found.ok) return refuse(res, caller, callerId, req.method, path, decision.rule, decision.detail);
        }
        if (!decision.inBody) return proceed(ctx, req, res, expectContinue);
        // Objects named in the body: the body is read once (bounded), every object checked as the
        // caller, then exactly those bytes forwarded.
        if (expectContinue) res.writeContinue();
        const body = await readJsonBody(req);
        if (!body.ok) return sendJson(res, body.status, { detail: body.detail });
        const why = await unreachableInBody(body.json, decision.inBody, who, headers);
        if (why) return refuse(res, caller, callerId, req.method, path, `${decision.rule} (${why})`, decision.detail);
        return proceed(ctx, req, res, false, body.raw);
      }
      case 'require-own-account': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        const callerId = await caller.upstreamUserId();
        if (!callerId || decision.userId !== callerId) return refuse(res, caller, callerId, req.method, path, decision.rule, decision.detail);
        if (!decision.keepEmail) return proceed(ctx, req, res, expectContinue);
        if (expectContinue) res.writeContinue();
        const body = await readJsonBody(req);
        if (!body.ok) return sendJson(res, body.status, { detail: body.detail });
        const email = body.json && typeof body.json === 'object' ? (body.json as { email?: unknown }).email : undefined;
        // absent or null leaves the email as it is; anything else must be the one the account has
        // (asked of the upstream, as the caller) and, for a realm identity, the realm's
        if (email !== undefined && email !== null) {
          const current = await callJson(upstream, AccountEmailAnswer, 'GET', '/api/v1/auths/', rewriteHeaders(upstreamHeaders, trusted)).then(
            (up) => up.json?.email,
            () => undefined,
          );
          const wanted = typeof email === 'string' ? email.trim().toLowerCase() : undefined;
          const same =
            wanted !== undefined &&
            current !== undefined &&
            wanted === current.toLowerCase() &&
            (!caller.identity || wanted === caller.identity.email.toLowerCase());
          if (!same) return refuse(res, caller, callerId, req.method, path, `${decision.rule}: the email stays the realm's`, decision.detail);
        }
        return proceed(ctx, req, res, false, body.raw);
      }
      case 'filter-listing': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        const headers = rewriteHeaders(upstreamHeaders, trusted);
        const callerId = await caller.upstreamUserId();
        const who = await objectViews.principal(callerId, headers);
        return objectViews.serveListing(res, path + search, headers, who, (removed) =>
          obs.audit.info(
            { event: 'admin-list-filtered', rule: decision.rule, caller: caller.label, callerId, method: req.method, path, removed },
            'items of other users removed from an admin\u2019s list',
          ),
        );
      }
      case 'redact-fields': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        return objectViews.serveRedacted(res, path + search, rewriteHeaders(upstreamHeaders, trusted), decision.fields, decision.emptied);
      }
      case 'scope-names': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        const headers = rewriteHeaders(upstreamHeaders, trusted);
        const callerId = await caller.upstreamUserId();
        const who = await objectViews.principal(callerId, headers);
        return objectViews.serveNames(res, decision, path + search, headers, who, (removed) =>
          obs.audit.info(
            { event: 'admin-names-filtered', rule: decision.rule, caller: caller.label, callerId, method: req.method, path, removed },
            'tags and model names of other users\u2019 chats and objects removed from an admin\u2019s answer',
          ),
        );
      }
      case 'guard-socketio-post': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        if (expectContinue) res.writeContinue();
        const body = await readRawBody(req);
        if (!body.ok) return sendJson(res, body.status, { detail: body.detail });
        const headers = rewriteHeaders(upstreamHeaders, trusted);
        const kept = await guardPollingBody(body.raw.toString('utf8'), socketJudge(caller, headers), dropReport(caller, path, 'polling'), decision.notes);
        if (kept === undefined) {
          // every packet dropped: answered as Engine.IO answers a POST
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2', 'cache-control': 'private, no-store' });
          return void res.end('OK');
        }
        const out = Buffer.from(kept, 'utf8');
        delete upstreamHeaders['transfer-encoding'];
        upstreamHeaders['content-length'] = String(out.length);
        return proceed(ctx, req, res, false, out);
      }
    }
  }

  /**
   * Why the caller may not have the objects a JSON body names (policies/admin-scoping.ts
   * objectsNamedInBody), each asked of the upstream as the caller; undefined when every one is
   * theirs or granted to them.
   */
  async function unreachableInBody(json: unknown, refs: readonly BodyRef[], who: Principal, headers: Record<string, string | string[] | undefined>) {
    const named = objectsNamedInBody(json, refs);
    if (!named.ok) return named.why;
    for (let i = 0; i < named.lookups.length; i += BODY_LOOKUPS_AT_ONCE) {
      const batch = named.lookups.slice(i, i + BODY_LOOKUPS_AT_ONCE);
      const answers = await Promise.all(
        batch.map((o) =>
          'ownCollection' in o ? { ok: isCallersOwnCollection(o.ownCollection, who.userId) } : objectViews.mayAccess(o.lookup, o.permission, who, headers),
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
  function socketJudge(caller: Caller, headers: Record<string, string | string[] | undefined>): SocketJudge {
    return async (need) => {
      const callerId = await caller.upstreamUserId();
      if (need.need === 'own-account') return need.userId === callerId;
      if (need.need === 'own-chat') return chatViews.mayAccess({ need: 'own-chat', chatId: need.chatId }, callerId, headers);
      const who = await objectViews.principal(callerId, headers);
      return (await objectViews.mayAccess(`/api/v1/notes/${encodeURIComponent(need.noteId)}`, need.permission, who, headers)).ok;
    };
  }

  /** The audit line of a dropped Socket.IO event. */
  function dropReport(caller: Caller, path: string, transport: 'websocket' | 'polling'): DropReport {
    return (event, why) =>
      obs.audit.warn(
        {
          event: 'admin-socket-event-dropped',
          rule: `route table: Socket.IO ${/\btoken\b/.test(why) || event === 'connect' ? 'token (the admin\u2019s own account only)' : event === 'events:chat' ? 'chat join (ENABLE_ADMIN_CHAT_ACCESS fixed false)' : 'note events'}`,
          caller: caller.label,
          socketEvent: event ?? 'unknown',
          transport,
          path,
        },
        why,
      );
  }

  return Object.assign(enforce, {
    socketJudge,
    dropReport,
    clear: () => {
      chatViews.clear();
      objectViews.clear();
    },
  });
}
