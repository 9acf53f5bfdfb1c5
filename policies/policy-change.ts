// What a new policy means for what is already open. A request is judged under the policy in force
// when it began and, as Envoy does, an ordinary answer under way finishes under it. What stays open
// for long is judged again: the export (rule A6), an event stream, an open WebSocket. Pure: the
// gateway (gateway/pipeline/handle.ts) asks, and cuts or closes what may not go on.
import type { CallerFacts, Decision } from './admin-scoping.js';
import type { SocketVerdict } from './session-ends.js';

/** The rule id of what a policy change cuts or closes (docs/policies.md). */
export const POLICY_CHANGED_RULE = 'live policy: judged again under the policy now in force';

/** The export (rule A6, for every caller): judged again under a new policy whatever its answer is. */
const isExport = (d: Decision) => d.rule.startsWith('A6');

/** May the request's answer, while under way, be judged again under a new policy? An admin's, and the export. */
export function judgedAgainUnderWay(decision: Decision, caller: CallerFacts): boolean {
  return decision.action !== 'deny' && (caller.admin || isExport(decision));
}

/** What a request under way is, for a new policy: an ordinary answer, or one that stays open. */
export type UnderWayKind = 'answer' | 'event-stream';

/**
 * May a request still under way go on under the new policy? An ordinary answer does (one policy from
 * start to end: it was judged whole under the old one). The export and an event stream only when the
 * new policy decides them exactly as the old one did: the same action, rule and checks (an admin's
 * completion whose body was judged with fewer objects checked than the new policy checks does not).
 */
export function requestGoesOn(kind: UnderWayKind, judged: Decision, now: Decision): boolean {
  if (kind === 'answer' && !isExport(judged)) return true;
  // decisions are plain data built by one function, their keys always in the same order
  return judged.action === now.action && judged.rule === now.rule && JSON.stringify(judged) === JSON.stringify(now);
}

/** How an admin's open WebSocket was let through: whether its note events are read (the bypass was off). */
export interface OpenedSocket {
  admin: boolean;
  /** note events on notes the admin may not reach are dropped (gateway/enforcement/socketio-guard.ts) */
  notesGuarded: boolean;
}

/**
 * May an open WebSocket stay open under the new policy? A plain user's: yes (the switches concern
 * admins). An admin's: not when the new policy refuses their API requests (UPSTREAM_RELEASE_POLICY),
 * nor when it wants their note events read and they were not. Closing, not re-reading the frames:
 * rooms the socket joined under the old policy stay joined at Open WebUI, so only a new connection
 * is judged wholly under the new one (socket.io reconnects at once).
 */
export function socketStaysOpen(opened: OpenedSocket, now: { bypassAdminAccessControl: boolean }, refusedNow: Decision | undefined): SocketVerdict {
  if (!opened.admin) return { keep: true };
  if (refusedNow?.action === 'deny') return { keep: false, reason: 'policy changed', rule: `${POLICY_CHANGED_RULE}: ${refusedNow.rule}` };
  if (!now.bypassAdminAccessControl && !opened.notesGuarded)
    return { keep: false, reason: 'policy changed', rule: `${POLICY_CHANGED_RULE}: CHATUI_BYPASS_ADMIN_ACCESS_CONTROL is false` };
  return { keep: true };
}
