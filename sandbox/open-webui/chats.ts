// Chats as routers/chats.py serves them: the caller's lists, the admin export and database
// download (ENABLE_ADMIN_EXPORT), other users' chats (ENABLE_ADMIN_CHAT_ACCESS), shares and their
// access grants, clones, messages, and deletion.
import { randomUUID } from 'node:crypto';
import { authenticate, findToken } from './auth.js';
import { intParam, readJsonObject, sendJson, sendStream, type Ctx } from './context.js';
import { ACCESS_PROHIBITED, HttpError, INVALID_TOKEN, NOT_FOUND, SOMETHING_WENT_WRONG, unprocessable, type ValidationIssue } from './http.js';
import type { Router } from './router.js';
import type { StandInState } from './state.js';
import type { StandInChat, StandInUser } from './types.js';

async function* jsonArray(items: unknown[]): AsyncGenerator<string> {
  yield '[';
  for (let i = 0; i < items.length; i++) yield (i ? ',' : '') + JSON.stringify(items[i]);
  yield ']';
}

async function* ndjson(items: unknown[]): AsyncGenerator<string> {
  for (const item of items) yield `${JSON.stringify(item)}\n`;
}

/** GET /api/v1/utils/db/download: an SQLite header, the stand-in's records, padding to whole pages. */
async function* fakeSqlite(state: StandInState): AsyncGenerator<Buffer> {
  const header = Buffer.alloc(100);
  header.write('SQLite format 3\0', 0, 'latin1');
  header.writeUInt16BE(4096, 16); // page size
  header[18] = 1;
  header[19] = 1;
  yield header;
  const dump = Buffer.from(JSON.stringify({ users: [...state.users.values()], files: [...state.files.values()], chats: [...state.chats.values()] }));
  yield dump;
  const total = 100 + dump.length;
  const pad = (4096 - (total % 4096)) % 4096;
  yield Buffer.alloc(pad + 4096);
}

function chatTitle(c: StandInChat): Record<string, unknown> {
  return { id: c.id, title: c.title, updated_at: c.updated_at, created_at: c.created_at };
}

const byUpdated = (a: StandInChat, b: StandInChat): number => b.updated_at - a.updated_at;

// routers/chats.py, route for route: which lookups fall back to "any chat by id" for admins, and
// under which flag. Chats are shared by a share id (SharedChats); access grants name the chat id.
const chatByShareId = (state: StandInState, shareId: string): StandInChat | undefined => [...state.chats.values()].find((c) => c.share_id === shareId);

/** AccessGrants.has_access(user, 'shared_chat', chat_id, 'read'), or is_open_shared_chat (`anyone:*`) */
const hasChatGrant = (state: StandInState, user: StandInUser, chatId: string): boolean =>
  (state.chatGrants.get(chatId) ?? []).some(
    (g) =>
      g.permission === 'read' &&
      ((g.principal_type === 'anyone' && g.principal_id === '*') ||
        (g.principal_type === 'user' && (g.principal_id === user.id || g.principal_id === '*')) ||
        (g.principal_type === 'group' && user.groups.includes(g.principal_id))),
  );

/** is_open_shared_chat: an `anyone:*` read grant, answered to a request without any identity */
const isOpenShare = (state: StandInState, chatId: string): boolean =>
  (state.chatGrants.get(chatId) ?? []).some((g) => g.permission === 'read' && g.principal_type === 'anyone' && g.principal_id === '*');

/** `user.role == 'admin' and ENABLE_ADMIN_CHAT_ACCESS`: the admin override of every chat route */
const adminChatAccess = (state: StandInState, user: StandInUser): boolean => user.role === 'admin' && state.flags.enableAdminChatAccess;

const chatResponse = (c: StandInChat): StandInChat => c;

type Message = { role?: unknown; model?: unknown; content?: unknown; parentId?: unknown; timestamp?: unknown };

/**
 * A chat's usage line (routers/chats.py get_session_user_chat_usage_stats): the models its answers
 * name, on the current branch and in the whole history, its counts and its tags; none for a chat
 * without a history or a current message.
 */
function usageLine(c: StandInChat): Record<string, unknown> | undefined {
  const history = ((c.chat as { history?: { messages?: Record<string, Message>; currentId?: string } } | undefined)?.history ?? {}) as {
    messages?: Record<string, Message>;
    currentId?: string;
  };
  const messages = history.messages ?? {};
  if (!Object.keys(messages).length || !history.currentId) return undefined;
  const count = (list: Message[]) => {
    const models: Record<string, number> = {};
    for (const m of list) if (m.role === 'assistant' && typeof m.model === 'string' && m.model) models[m.model] = (models[m.model] ?? 0) + 1;
    return models;
  };
  const all = Object.values(messages);
  const branch: Message[] = [];
  for (let id: unknown = history.currentId; typeof id === 'string' && messages[id]; id = messages[id]!.parentId) branch.unshift(messages[id]!);
  if (!branch.length) return undefined;
  const of = (role: string) => all.filter((m) => m.role === role);
  const avg = (list: Message[]) => (list.length ? list.reduce((n, m) => n + String(m.content ?? '').length, 0) / list.length : 0);
  return {
    id: c.id,
    models: count(branch),
    message_count: branch.length,
    history_models: count(all),
    history_message_count: all.length,
    history_user_message_count: of('user').length,
    history_assistant_message_count: of('assistant').length,
    average_response_time: 0,
    average_user_message_content_length: avg(of('user')),
    average_assistant_message_content_length: avg(of('assistant')),
    tags: (c.meta as { tags?: unknown }).tags ?? [],
    last_message_at: branch[branch.length - 1]!.timestamp ?? null,
    updated_at: c.updated_at,
    created_at: c.created_at,
  };
}

/** POST /{id}/messages/{message_id} and its /event: the owner, or an admin while ENABLE_ADMIN_CHAT_ACCESS. */
async function chatForMessage(state: StandInState, ctx: Ctx, id: string): Promise<StandInChat> {
  const { user } = await authenticate(state, ctx, 'verified');
  const chat = state.chats.get(id);
  if (!chat) throw new HttpError(401, ACCESS_PROHIBITED);
  if (chat.user_id !== user.id && !adminChatAccess(state, user)) throw new HttpError(401, ACCESS_PROHIBITED);
  return chat;
}

export function registerChatRoutes(router: Router, state: StandInState): void {
  // in this order: Starlette matches routes in the order they were added
  registerOwnChatLists(router, state);
  registerAdminChatReads(router, state);
  registerChatSharing(router, state);
  registerChatById(router, state);
}

/** The caller's own chats, listed. */
function registerOwnChatLists({ route }: Router, state: StandInState): void {
  const { chats } = state;
  route('GET', '/api/v1/chats/', async (ctx) => {
    const { user } = await authenticate(state, ctx, 'verified');
    const own = [...chats.values()].filter((c) => c.user_id === user.id && !c.archived).sort(byUpdated);
    sendJson(ctx, 200, own.map(chatTitle));
  });
  route('GET', '/api/v1/chats/all', async (ctx) => {
    const { user } = await authenticate(state, ctx, 'verified');
    const own = [...chats.values()].filter((c) => c.user_id === user.id).sort(byUpdated);
    await sendStream(ctx, 200, 'application/x-ndjson', ndjson(own));
  });
  // the caller's own chats, newest change first, a page at a time: a usage line each (no messages)
  route('GET', '/api/v1/chats/stats/usage', async (ctx) => {
    const { user } = await authenticate(state, ctx, 'verified');
    const issues: ValidationIssue[] = [];
    const perPage = intParam(ctx, 'items_per_page', 50, issues);
    const page = intParam(ctx, 'page', 1, issues);
    if (issues.length) throw unprocessable(issues);
    const own = [...chats.values()].filter((c) => c.user_id === user.id).sort((a, b) => byUpdated(a, b) || (a.id < b.id ? -1 : 1));
    const items = own.slice((page - 1) * perPage, page * perPage).flatMap((c) => usageLine(c) ?? []);
    // ChatUsageStatsResponse.last_message_at is an int: one line without (a message written without a
    // whole-number timestamp) fails the response model, and the handler answers 400 for the page
    if (items.some((l) => !Number.isInteger((l as { last_message_at?: unknown }).last_message_at))) throw new HttpError(400, SOMETHING_WENT_WRONG);
    sendJson(ctx, 200, { items, total: own.length });
  });
  route('GET', '/api/v1/chats/all/archived', async (ctx) => {
    const { user } = await authenticate(state, ctx, 'verified');
    sendJson(ctx, 200, [...chats.values()].filter((c) => c.user_id === user.id && c.archived).sort(byUpdated));
  });
}

/** What only an admin reads, behind Open WebUI's admin flags: the export, the database, another user's chats. */
function registerAdminChatReads({ route }: Router, state: StandInState): void {
  const { chats, flags } = state;
  route('GET', '/api/v1/chats/all/db', async (ctx) => {
    await authenticate(state, ctx, 'admin');
    if (!flags.enableAdminExport) throw new HttpError(401, ACCESS_PROHIBITED);
    await sendStream(ctx, 200, 'application/json', jsonArray([...chats.values()]));
  });
  route('GET', '/api/v1/utils/db/download', async (ctx) => {
    await authenticate(state, ctx, 'admin');
    if (!flags.enableAdminExport) throw new HttpError(401, ACCESS_PROHIBITED);
    await sendStream(ctx, 200, 'application/octet-stream', fakeSqlite(state), { 'content-disposition': 'attachment; filename="webui.db"' }, false);
  });
  route('GET', '/api/v1/chats/list/user/{user_id}', async (ctx, [userId]) => {
    await authenticate(state, ctx, 'admin');
    if (!flags.enableAdminChatAccess) throw new HttpError(401, ACCESS_PROHIBITED);
    // 60 a page; `query` matches titles (ilike %query%)
    const page = Math.max(1, Number(ctx.query.get('page') ?? 1) || 1);
    const query = ctx.query.get('query')?.toLowerCase();
    sendJson(
      ctx,
      200,
      [...chats.values()]
        .filter((c) => c.user_id === userId && (!query || c.title.toLowerCase().includes(query)))
        .sort(byUpdated)
        .slice((page - 1) * 60, page * 60)
        .map(chatTitle),
    );
  });
  route('GET', '/api/v1/chats/stats/export/{chat_id}', async (ctx, [id]) => {
    const { user } = await authenticate(state, ctx, 'verified');
    // ENABLE_COMMUNITY_SHARING is on in the stand-in: any verified user may export stats
    const chat = chats.get(id ?? '');
    if (!chat) throw new HttpError(404, NOT_FOUND);
    if (chat.user_id !== user.id && !adminChatAccess(state, user)) throw new HttpError(401, ACCESS_PROHIBITED);
    sendJson(ctx, 200, {
      id: chat.id,
      user_id: chat.user_id,
      created_at: chat.created_at,
      updated_at: chat.updated_at,
      tags: [],
      stats: { message_count: 0 },
      chat: { history: { messages: {}, currentId: null } },
    });
  });
}

/** Shared chats: read by their share id, their access grants, cloned. */
function registerChatSharing({ route }: Router, state: StandInState): void {
  const { chats, chatGrants, flags } = state;
  route('GET', '/api/v1/chats/share/{share_id}', async (ctx, [id]) => {
    // get_optional_verified_user: an open share (`anyone:*`) is answered without any identity
    const user = findToken(ctx.req) ? (await authenticate(state, ctx, 'verified')).user : undefined;
    const shared = chatByShareId(state, id ?? '');
    if (shared) {
      const open = isOpenShare(state, shared.id);
      if (!open && !user) throw new HttpError(401, INVALID_TOKEN);
      if (!open && user && shared.user_id !== user.id && !adminChatAccess(state, user) && !hasChatGrant(state, user, shared.id))
        throw new HttpError(401, ACCESS_PROHIBITED);
      // get_chat_by_share_id: the snapshot, named by the share's id (not the chat's)
      sendJson(ctx, 200, { ...chatResponse(shared), id: shared.share_id, share_id: shared.share_id });
      return;
    }
    // admins reach any chat by its chat id while ENABLE_ADMIN_CHAT_ACCESS
    const chat = user && adminChatAccess(state, user) ? chats.get(id ?? '') : undefined;
    if (!chat) throw new HttpError(401, NOT_FOUND);
    sendJson(ctx, 200, chatResponse(chat));
  });
  route('POST', '/api/v1/chats/shared/{id}/access/update', async (ctx, [id]) => {
    const { user } = await authenticate(state, ctx, 'verified');
    const chat = adminChatAccess(state, user) ? chats.get(id ?? '') : [...chats.values()].find((c) => c.id === id && c.user_id === user.id);
    if (!chat) throw new HttpError(404, NOT_FOUND);
    const body = await readJsonObject(ctx);
    const grants = Array.isArray(body.access_grants) ? (body.access_grants as Array<Record<string, unknown>>) : [];
    chatGrants.set(
      chat.id,
      grants.map((g) => ({
        id: randomUUID(),
        principal_type: g.principal_type === 'group' || g.principal_type === 'anyone' ? g.principal_type : 'user',
        principal_id: String(g.principal_id ?? ''),
        permission: g.permission === 'write' ? 'write' : 'read',
      })),
    );
    sendJson(ctx, 200, chatResponse(chat));
  });
  route('GET', '/api/v1/chats/shared/{id}/access', async (ctx, [id]) => {
    const { user } = await authenticate(state, ctx, 'verified');
    const chat = adminChatAccess(state, user) ? chats.get(id ?? '') : [...chats.values()].find((c) => c.id === id && c.user_id === user.id);
    if (!chat) throw new HttpError(404, NOT_FOUND);
    sendJson(ctx, 200, chatGrants.get(chat.id) ?? []);
  });
  route('POST', '/api/v1/chats/{id}/clone/shared', async (ctx, [id]) => {
    const { user } = await authenticate(state, ctx, 'verified');
    let chat = chatByShareId(state, id ?? '');
    if (!chat && user.role === 'admin' && flags.enableAdminChatAccess) chat = chats.get(id ?? '');
    if (!chat) throw new HttpError(401, NOT_FOUND);
    const shared = chatByShareId(state, id ?? '');
    if (shared && !adminChatAccess(state, user) && shared.user_id !== user.id && !hasChatGrant(state, user, shared.id))
      throw new HttpError(401, ACCESS_PROHIBITED);
    const now = Math.floor(Date.now() / 1000);
    const clone: StandInChat = {
      ...structuredClone(chat),
      id: randomUUID(),
      user_id: user.id,
      title: `Clone of ${chat.title}`,
      share_id: null,
      created_at: now,
      updated_at: now,
    };
    chats.set(clone.id, clone);
    sendJson(ctx, 200, chatResponse(clone));
  });
}

/** One chat by its id: its messages, its share link, deleted, pinned, read. */
function registerChatById({ route }: Router, state: StandInState): void {
  const { chats, chatGrants } = state;
  route('POST', '/api/v1/chats/{id}/messages/{message_id}/event', async (ctx, [id]) => {
    await chatForMessage(state, ctx, id ?? '');
    await readJsonObject(ctx);
    sendJson(ctx, 200, false); // no socket session to emit to
  });
  route('POST', '/api/v1/chats/{id}/messages/{message_id}', async (ctx, [id, messageId]) => {
    const chat = await chatForMessage(state, ctx, id ?? '');
    const body = await readJsonObject(ctx);
    const history = ((chat.chat ?? {}) as { history?: { messages?: Record<string, Record<string, unknown>> } }).history ?? { messages: {} };
    const messages = (history.messages ??= {});
    messages[messageId ?? ''] = { ...(messages[messageId ?? ''] ?? {}), id: messageId, content: String(body.content ?? '') };
    chat.chat = { ...(chat.chat as object), history };
    chat.updated_at = Math.floor(Date.now() / 1000);
    sendJson(ctx, 200, chatResponse(chat));
  });
  route('POST', '/api/v1/chats/{id}/share', async (ctx, [id]) => {
    const { user } = await authenticate(state, ctx, 'verified');
    const chat = [...chats.values()].find((c) => c.id === id && c.user_id === user.id);
    if (!chat) throw new HttpError(401, ACCESS_PROHIBITED);
    chat.share_id ??= randomUUID();
    sendJson(ctx, 200, chatResponse(chat));
  });
  route('DELETE', '/api/v1/chats/{id}', async (ctx, [id]) => {
    const { user } = await authenticate(state, ctx, 'verified');
    const chat = chats.get(id ?? '');
    // chats.py delete_chat_by_id: the owner, or an admin while ENABLE_ADMIN_CHAT_ACCESS
    if (!chat || (chat.user_id !== user.id && !adminChatAccess(state, user))) throw new HttpError(404, NOT_FOUND);
    chats.delete(chat.id);
    chatGrants.delete(chat.id);
    sendJson(ctx, 200, true);
  });
  // routers/chats.py pin_chat_by_id: the caller's own chat only, whatever the admin flags.
  route('POST', '/api/v1/chats/{id}/pin', async (ctx, [id]) => {
    const { user } = await authenticate(state, ctx, 'verified');
    const chat = chats.get(id ?? '');
    if (!chat || chat.user_id !== user.id) throw new HttpError(401, SOMETHING_WENT_WRONG);
    chat.pinned = !chat.pinned;
    chat.updated_at = Math.floor(Date.now() / 1000);
    sendJson(ctx, 200, chatResponse(chat));
  });

  route('GET', '/api/v1/chats/{id}', async (ctx, [id]) => {
    const { user } = await authenticate(state, ctx, 'verified');
    const chat = chats.get(id ?? '');
    let allowed = !!chat && chat.user_id === user.id;
    if (chat && !allowed) allowed = adminChatAccess(state, user) ? true : hasChatGrant(state, user, chat.id);
    if (!chat || !allowed) throw new HttpError(401, NOT_FOUND);
    sendJson(ctx, 200, chatResponse(chat));
  });
}
