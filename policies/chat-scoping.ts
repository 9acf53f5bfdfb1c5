// ENABLE_ADMIN_CHAT_ACCESS is fixed false on this platform, whatever the chat front-end is set to:
// an admin reaches only their own chats and those shared with them. Pure: the route facts and the
// caller -> what the gateway must establish before forwarding (docs/design/drifted-shares.md, the
// routes and why).
import type { Principal } from './resource-access.js';

/** The first segment after /api/v1/chats/ that names a route, not a chat id (routers/chats.py). */
const CHAT_ROUTE_WORDS = new Set([
  '',
  'list',
  'stats',
  'new',
  'import',
  'search',
  'folder',
  'pinned',
  'all',
  'archived',
  'archive',
  'unarchive',
  'shared',
  'share',
  'tags',
  'read',
  'config',
]);

/** What an admin's request on a chat needs before it is forwarded. */
export type ChatAccess =
  /** the chat named by id must be the caller's own */
  | { need: 'own-chat'; chatId: string }
  /** the id must be the share id of a chat shared with the caller, or the id of the caller's own chat */
  | { need: 'share-or-own'; id: string };

/**
 * For an admin: what a request under /api/v1/chats/ needs. `segments` are the canonical path's
 * segments as sent (ids keep their case), `method` the effective method (HEAD as GET).
 * Undefined: the route names no chat of anyone else (lists of the caller's own, new, import, ...).
 */
export function chatAccess(method: string, segments: readonly string[]): ChatAccess | undefined {
  // segments: api v1 chats ...
  const rest = segments.slice(3);
  const first = rest[0]?.toLowerCase();
  if (first === undefined) return undefined;
  if (first === 'share' && rest.length === 2) return { need: 'share-or-own', id: rest[1]! };
  if (first === 'shared' && rest.length >= 3 && rest[2]!.toLowerCase() === 'access') return { need: 'own-chat', chatId: rest[1]! };
  if (first === 'stats' && rest[1]?.toLowerCase() === 'export' && rest.length === 3) return { need: 'own-chat', chatId: rest[2]! };
  if (CHAT_ROUTE_WORDS.has(first)) return undefined;
  // /api/v1/chats/{id}[/...]
  const chatId = rest[0]!;
  if (rest.length === 3 && rest[1]!.toLowerCase() === 'clone' && rest[2]!.toLowerCase() === 'shared') return { need: 'share-or-own', id: chatId };
  return { need: 'own-chat', chatId };
}

/** A chat as the upstream describes it (ChatResponse): only what the rule reads. */
export interface ChatRecord {
  id: string;
  user_id: string;
  share_id?: string | null;
  /** a share's title: the chat's at the time it was shared */
  title?: string;
}

/** Parse the fields the rule needs; anything else is not a chat (fail closed). */
export function parseChatRecord(body: unknown): ChatRecord | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const c = body as Record<string, unknown>;
  if (typeof c.id !== 'string' || typeof c.user_id !== 'string') return undefined;
  if (c.share_id !== undefined && c.share_id !== null && typeof c.share_id !== 'string') return undefined;
  return {
    id: c.id,
    user_id: c.user_id,
    share_id: (c.share_id as string | null | undefined) ?? null,
    ...(typeof c.title === 'string' ? { title: c.title } : {}),
  };
}

/**
 * May the admin `callerId` go on, given the chat the upstream returned for `access`? Own chat: its
 * owner is the caller. Share route: the chat is the caller's own, or the id was the chat's share
 * id; then the share must be one shared with the caller too (sharedByShareId, sharesFollowGrants).
 */
export function chatAccessAllowed(access: ChatAccess, chat: ChatRecord | undefined, callerId: string): boolean {
  if (!chat || !callerId) return false;
  if (chat.user_id === callerId) return true;
  return sharedByShareId(access, chat, callerId);
}

/** Another user's chat reached by its share id: allowed only when the upstream held the share to its grants (sharesFollowGrants). */
export function sharedByShareId(access: ChatAccess, chat: ChatRecord, callerId: string): boolean {
  return access.need === 'share-or-own' && chat.user_id !== callerId && typeof chat.share_id === 'string' && chat.share_id === access.id;
}

/**
 * Does the upstream hold another user's share to its grants for this caller? Open WebUI (the table release) lets
 * an admin read and clone any share while its own ENABLE_ADMIN_CHAT_ACCESS is true
 * (can_read_shared_chat, clone_shared_chat_by_id), and the share's answer cannot tell a share granted
 * to the caller from one that is not: a snapshot carries the share's id, not the chat's, so its grants
 * cannot be asked for. `status` is the upstream's answer to the route that answers on exactly that
 * flag, GET /api/v1/chats/list/user/{the caller's own id} (admins only): 401 while the flag is false
 * (or while the upstream does not hold the caller for an admin), and then the share's answer came
 * from its grants. Anything else: refused.
 */
export function sharesFollowGrants(status: number): boolean {
  return status === 401;
}

/**
 * What the same probe's answer means when it is not 401: 200 is the upstream's flag drifted true (it
 * listed the admin's chats), and the share must then be judged by its grants (shareGrantsReach);
 * anything else is an answer the gateway cannot read: refused.
 */
export function sharesNeedGrantsRead(status: number): boolean {
  return status === 200;
}

/**
 * Would Open WebUI, with its own ENABLE_ADMIN_CHAT_ACCESS false, let `principal` read a share whose grants
 * are `grants` (GET /api/v1/chats/shared/{chat id}/access: [{principal_type, principal_id,
 * permission}])? routers/chats.py of 0.12.4 and 0.11.4: an `anyone:*` read grant opens it to
 * everyone (is_open_shared_chat); otherwise AccessGrants.has_access: a `read` grant (exactly: a write
 * grant alone does not read) to `user:*`, to the user, or to one of their groups. An answer of another
 * shape is no grant (fail closed).
 */
export function shareGrantsReach(grants: unknown, principal: Principal): boolean {
  if (!Array.isArray(grants) || !principal.userId) return false;
  return grants.some((g: unknown) => {
    if (typeof g !== 'object' || g === null) return false;
    const { principal_type: type, principal_id: id, permission } = g as Record<string, unknown>;
    if (permission !== 'read' || typeof id !== 'string') return false;
    if (type === 'anyone') return id === '*';
    if (type === 'user') return id === '*' || id === principal.userId;
    return type === 'group' && principal.groupIds.has(id);
  });
}

/**
 * Which of an owner's chats (GET /api/v1/chats/list/user/{owner}: [{id, title}]) may be the one a
 * share of that title was taken from, those of the same title first: their ids, at most `max`. The
 * share's own answer names its snapshot, not its chat, so the chat is found by reading each
 * candidate's `share_id`.
 */
export function shareCandidates(list: unknown, title: string | undefined, max: number): string[] {
  if (!Array.isArray(list)) return [];
  const items = list.filter((c): c is { id: string; title?: unknown } => typeof c === 'object' && c !== null && typeof (c as { id?: unknown }).id === 'string');
  const same = items.filter((c) => c.title === title);
  return [...same, ...items.filter((c) => c.title !== title)].map((c) => c.id).slice(0, max);
}
