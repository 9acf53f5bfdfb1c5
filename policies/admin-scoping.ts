// Spec area A: what a chat front-end administrator may see, decided on the request alone.
// Pure: request facts + settings + caller -> a decision. No I/O; the gateway carries it out.
//
// The table below is the contract's policy table, row for row. Paths are matched on the
// canonical path (gateway/http/canonical-path.ts), case-insensitively and with or without a
// trailing slash: Open WebUI's own routing is stricter, so matching more loosely here can
// only block more, never less. Chat routes of admins: policies/chat-scoping.ts.
import { chatAccess, type ChatAccess } from './chat-scoping.js';

export interface PolicySettings {
  /** CHATUI_BYPASS_ADMIN_ACCESS_CONTROL */
  bypassAdminAccessControl: boolean;
  /** CHATUI_ENABLE_ADMIN_EXPORT */
  enableAdminExport: boolean;
}

export interface RequestFacts {
  method: string;
  /** canonical path, no query */
  path: string;
}

export interface CallerFacts {
  /** the caller is a chat admin (a role of OAUTH_ADMIN_ROLES) */
  admin: boolean;
}

export type FilesView = 'list' | 'search' | 'count';

export type Decision =
  | { action: 'pass'; rule: string }
  /** Answer `status` with `{detail}` and never call the upstream. */
  | { action: 'deny'; status: 401; detail: string; rule: string }
  /** Forward, then let only the caller's own files reach the client. */
  | { action: 'filter-own-files'; view: FilesView; rule: string }
  /** Forward as the upstream answers; write an audit event when the admin is not the owner. */
  | { action: 'audit-file-access'; fileId: string; operation: 'read' | 'write' | 'delete'; rule: string }
  /** Ask the upstream who owns the chat first; forward only when the rule allows, else 401 `detail`. */
  | { action: 'require-own-chat'; access: Exclude<ChatAccess, { need: 'audit-delete' }>; detail: string; rule: string }
  /** Forward (an admin may delete any chat upstream); audit it when the chat is not the admin's. */
  | { action: 'audit-chat-delete'; chatId: string; rule: string };

/**
 * Authentication rule 2: the chat admin role comes from the realm roles claim, by one of
 * OAUTH_ADMIN_ROLES (PlatformSysAdmin); rule 3: PlatformAdmin (a tenant admin) is not one.
 */
export function isChatAdmin(realmRoles: readonly string[], adminRoles: readonly string[]): boolean {
  return realmRoles.some((r) => adminRoles.includes(r));
}

export const EXPORT_DISABLED = 'Admin export is disabled on this platform';
export const ADMIN_CHAT_ACCESS_DISABLED = 'Admin chat access is disabled on this platform';

/** Lower-cased segments of a canonical path, without empty ones (so a trailing slash does not matter). */
export function routeSegments(path: string): string[] {
  return path.toLowerCase().split('/').filter(Boolean);
}

/** HEAD is judged as GET: Express and Starlette both answer HEAD with the GET handler. */
export function effectiveMethod(method: string): string {
  const m = method.toUpperCase();
  return m === 'HEAD' ? 'GET' : m;
}

export function decide(request: RequestFacts, settings: PolicySettings, caller: CallerFacts): Decision {
  const method = effectiveMethod(request.method);
  const s = routeSegments(request.path);
  const under = (...prefix: string[]) => prefix.every((p, i) => s[i] === p);
  const is = (...exact: string[]) => s.length === exact.length && under(...exact);

  // Rule A6 (and the raw database, which holds the same and more): blocked for every caller,
  // whatever the method, while the export switch is off.
  if (is('api', 'v1', 'chats', 'all', 'db') || is('api', 'v1', 'utils', 'db', 'download')) {
    return settings.enableAdminExport
      ? { action: 'pass', rule: 'A6: export enabled' }
      : { action: 'deny', status: 401, detail: EXPORT_DISABLED, rule: 'A6: export disabled' };
  }

  // ENABLE_ADMIN_CHAT_ACCESS is fixed false: no browsing other users' chats.
  if (under('api', 'v1', 'chats', 'list', 'user') && s.length >= 6) {
    return { action: 'deny', status: 401, detail: ADMIN_CHAT_ACCESS_DISABLED, rule: 'ENABLE_ADMIN_CHAT_ACCESS fixed false' };
  }

  // ... and no reading, copying, changing or exporting the stats of another user's chat by id.
  if (caller.admin && under('api', 'v1', 'chats')) {
    const access = chatAccess(method, request.path.split('/').filter(Boolean));
    if (access?.need === 'audit-delete') return { action: 'audit-chat-delete', chatId: access.chatId, rule: 'ENABLE_ADMIN_CHAT_ACCESS fixed false: deleting passes, audited' };
    if (access) return { action: 'require-own-chat', access, detail: ADMIN_CHAT_ACCESS_DISABLED, rule: 'ENABLE_ADMIN_CHAT_ACCESS fixed false: own chats only' };
  }

  if (under('api', 'v1', 'files')) {
    const view: FilesView | undefined =
      s.length === 3 ? 'list' : s.length === 4 && (s[3] === 'search' || s[3] === 'count') ? (s[3] as FilesView) : undefined;
    if (view && method === 'GET') {
      // Rules A1 and A2.
      return settings.bypassAdminAccessControl
        ? { action: 'pass', rule: 'A2: bypass on, the upstream decides' }
        : { action: 'filter-own-files', view, rule: 'A1: only the caller\u2019s own files' };
    }
    // Rule A7: per-file routes check the admin role upstream and ignore the bypass switch.
    if (s.length >= 4 && !view && caller.admin) {
      const operation = method === 'DELETE' ? 'delete' : method === 'GET' ? 'read' : 'write';
      return { action: 'audit-file-access', fileId: s[3] === 'all' && s.length === 4 ? '*' : request.path.split('/').filter(Boolean)[3]!, operation, rule: 'A7: per-file access, audited' };
    }
  }

  // Rule A8: nothing here changes what the platform API exposes; everything else passes.
  return { action: 'pass', rule: 'no policy' };
}
