// Step 7 of gateway/pipeline/handle.ts: carry out the policy's decision (policies/admin-scoping.ts)
// against the upstream. `pass` streams the request on; `deny` answers without calling the
// upstream; the file decisions answer from a view rebuilt of the caller's own files, or pass with
// an audit line when an admin touches a file that is not theirs; the chat decisions ask the
// upstream, as the caller, whose chat it is before anything is forwarded.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Decision } from '../../policies/admin-scoping.js';
import { NOT_AUTHENTICATED, sendJson } from '../http/respond.js';
import { compactHeaders } from '../http/request-headers.js';
import type { Upstream } from '../upstream/proxy.js';
import { FileViews, rewriteHeaders } from '../upstream/file-views.js';
import { ChatViews } from '../upstream/chat-views.js';
import type { Observability } from '../ops/observability.js';
import type { Caller } from './caller.js';

export function createEnforcer(parts: { obs: Observability; upstream: Upstream; trusted: ReadonlySet<string> }) {
  const { obs, upstream, trusted } = parts;
  const fileViews = new FileViews(upstream, obs);
  const chatViews = new ChatViews(upstream);

  /** Stream the request on: `100 Continue` first when the client waits for it, headers compacted. */
  function proceed(req: IncomingMessage, res: ServerResponse, expectContinue: boolean): void {
    if (expectContinue) res.writeContinue();
    req.headers = compactHeaders(req.headers);
    upstream.forward(req, res);
  }

  /** Synchronous for `pass` and `deny`, the decisions of nearly every request; the others ask the upstream first. */
  function enforce(decision: Decision, req: IncomingMessage, res: ServerResponse, caller: Caller | null, path: string, search: string, expectContinue: boolean): void | Promise<void> {
    obs.metrics.policyDecisions.tally(decision.action, decision.rule);
    switch (decision.action) {
      case 'pass':
        return proceed(req, res, expectContinue);
      case 'deny':
        obs.audit.info({ event: 'policy-denied', rule: decision.rule, caller: caller?.label ?? 'anonymous', method: req.method, path }, decision.detail);
        return sendJson(res, decision.status, { detail: decision.detail });
      default:
        return enforceAfterLookup(decision, req, res, caller, path, search, expectContinue);
    }
  }

  async function enforceAfterLookup(decision: Exclude<Decision, { action: 'pass' | 'deny' }>, req: IncomingMessage, res: ServerResponse, caller: Caller | null, path: string, search: string, expectContinue: boolean): Promise<void> {
    switch (decision.action) {
      case 'filter-own-files': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        const callerId = await caller.upstreamUserId();
        return fileViews.serveOwn(res, decision.view, path, search, rewriteHeaders(req.headers, trusted), callerId);
      }
      case 'audit-file-access': {
        if (!caller) return proceed(req, res, expectContinue);
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
        return proceed(req, res, expectContinue);
      }
      case 'require-own-chat': {
        if (!caller) return sendJson(res, 401, { detail: NOT_AUTHENTICATED });
        // Known before anything is forwarded: a write never reaches the upstream on a guess.
        const callerId = await caller.upstreamUserId();
        if (await chatViews.mayAccess(decision.access, callerId, rewriteHeaders(req.headers, trusted))) return proceed(req, res, expectContinue);
        obs.audit.warn({ event: 'admin-chat-access-denied', caller: caller.label, callerId, method: req.method, path }, decision.detail);
        return sendJson(res, 401, { detail: decision.detail });
      }
      case 'audit-chat-delete': {
        if (!caller) return proceed(req, res, expectContinue);
        const [me, owner] = await Promise.all([caller.upstreamUserId(), chatViews.ownerOf(decision.chatId, rewriteHeaders(req.headers, trusted))]).catch(() => ['', undefined]);
        if (owner !== me) {
          obs.audit.warn({ event: 'admin-chat-delete', caller: caller.label, callerId: me, chatId: decision.chatId, owner: owner ?? 'unknown', method: req.method, path }, 'admin deleted a chat they do not own');
        }
        return proceed(req, res, expectContinue);
      }
    }
  }

  return Object.assign(enforce, { clear: () => chatViews.clear() });
}
