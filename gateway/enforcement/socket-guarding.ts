// An admin's Socket.IO carried out against the upstream: the guard (gateway/enforcement/socketio-guard.ts)
// asks here whether the caller may reach a note or a chat (as the caller, lazily, for as long as the
// socket is open), and every event it drops or frame it refuses is an audit line.
import type { IncomingHttpHeaders } from 'node:http';
import { lookupHeaders } from '../http/request-headers.js';
import { REFUSAL_RULES } from '../http/websocket-frames.js';
import type { Observability } from '../observability/observability.js';
import type { Guarding } from '../upstream/proxy.js';
import type { ChatViews } from './chat-views.js';
import type { EnforcedCaller, Headers } from './enforced-request.js';
import type { ObjectViews } from './object-views.js';
import { WebSocketGuard, type DropReport, type SocketJudge } from './socketio-guard.js';

/** Which rule dropped an admin's Socket.IO event, for its audit line. */
function dropRule(event: string | undefined, why: string): string {
  if (/\btoken\b/.test(why) || event === 'connect') return 'token (the admin\u2019s own account only)';
  if (event === 'events:chat') return 'chat join (ENABLE_ADMIN_CHAT_ACCESS fixed false)';
  if (/collaborative document update/.test(why)) return 'document update (one Open WebUI can decode)';
  return 'note events';
}

/** The WebSocket an admin's guard reads: what closes it, and whether what it lets through may still go. */
export interface GuardedSocket {
  close(code: number, why: string): void;
  mayForward(): boolean;
}

export class SocketGuarding {
  constructor(
    private readonly obs: Observability,
    private readonly chatViews: ChatViews,
    private readonly objectViews: ObjectViews,
    private readonly trusted: ReadonlySet<string>,
  ) {}

  /** May the caller reach the note, is the chat theirs? Asked of the upstream as the caller. */
  judge(caller: EnforcedCaller, headers: Headers): SocketJudge {
    return async (need) => {
      const callerId = await caller.upstreamUserId();
      if (need.need === 'own-account') return need.userId === callerId;
      if (need.need === 'own-chat') return this.chatViews.mayAccess({ need: 'own-chat', chatId: need.chatId }, callerId, headers);
      const principal = await this.objectViews.principal(callerId, headers);
      return (await this.objectViews.mayAccess(`/api/v1/notes/${encodeURIComponent(need.noteId)}`, need.permission, principal, headers)).ok;
    };
  }

  /** The audit line of a dropped Socket.IO event. */
  dropReport(caller: EnforcedCaller, path: string, transport: 'websocket' | 'polling'): DropReport {
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

  /**
   * An admin's WebSocket read frame by frame: joins of other users' chats dropped, and while
   * `notesGuarded` note events on notes they may not reach; frames it refuses close the socket.
   */
  forUpgrade(caller: EnforcedCaller, assembled: IncomingHttpHeaders, path: string, notesGuarded: boolean, socket: GuardedSocket): Guarding {
    const judge = this.judge(caller, lookupHeaders(assembled, this.trusted));
    const report = this.dropReport(caller, path, 'websocket');
    const refused = (code: number, why: string) =>
      this.obs.audit.warn(
        { event: 'admin-socket-closed', rule: REFUSAL_RULES[code] ?? 'RFC 6455', code, caller: caller.label, transport: 'websocket', path },
        why,
      );
    return {
      make: (send, fail, flow) =>
        new WebSocketGuard(
          judge,
          report,
          send,
          (code, why) => {
            refused(code, why);
            socket.close(code, why);
            fail(code, why);
          },
          notesGuarded,
          flow,
        ),
      mayForward: () => socket.mayForward(),
    };
  }
}
