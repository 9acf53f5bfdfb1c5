// The stand-in's workspace: notes, folders, knowledge, channels (messages, members), feedback,
// memories, models, prompts, tools, skills, and the admin routes that reach them, as Open WebUI
// 0.12.4 answers (routers/notes.py, folders.py, knowledge.py, channels.py, evaluations.py,
// analytics.py, retrieval.py, users.py, models.py and main.py's /api/models). Admin behaviour
// is the upstream's: by-id routes let any admin through, lists follow BYPASS_ADMIN_ACCESS_CONTROL,
// so the gateway's own scoping is what a test observes.
import { randomUUID } from 'node:crypto';

/** models/access_grants.py AccessGrantModel */
export interface Grant {
  id: string;
  resource_type: string;
  resource_id: string;
  principal_type: 'user' | 'group';
  principal_id: string;
  permission: 'read' | 'write';
  created_at: number;
}

export interface WorkspaceObject {
  id: string;
  user_id: string;
  access_grants?: Grant[];
  [k: string]: unknown;
}

export type Kind = 'note' | 'folder' | 'knowledge' | 'channel' | 'feedback' | 'memory' | 'model' | 'prompt' | 'tool' | 'skill';

export interface ChannelMessage {
  id: string;
  channel_id: string;
  user_id: string;
  content: string;
  created_at: number;
}

export interface Workspace {
  objects: Record<Kind, Map<string, WorkspaceObject>>;
  /** channel id -> member user ids (dm and group channels) */
  members: Map<string, Set<string>>;
  messages: ChannelMessage[];
  /** bodies of Socket.IO long-polling POSTs received (engine.io packets, \x1e-separated) */
  polled: string[];
  /** each user's own UserModel.settings (their UI settings, system prompt) */
  settings: Map<string, Record<string, unknown>>;
}

export function grant(kind: string, resourceId: string, principal: `${'user' | 'group'}:${string}`, permission: 'read' | 'write' = 'read'): Grant {
  const [type, id] = principal.split(/:(.*)/s) as ['user' | 'group', string];
  return {
    id: randomUUID(),
    resource_type: kind,
    resource_id: resourceId,
    principal_type: type,
    principal_id: id,
    permission,
    created_at: Math.floor(Date.now() / 1000),
  };
}

export function emptyWorkspace(): Workspace {
  const m = () => new Map<string, WorkspaceObject>();
  return {
    objects: { note: m(), folder: m(), knowledge: m(), channel: m(), feedback: m(), memory: m(), model: m(), prompt: m(), tool: m(), skill: m() },
    members: new Map(),
    messages: [],
    polled: [],
    settings: new Map(),
  };
}

interface User {
  id: string;
  email: string;
  name: string;
  role: string;
  groups: string[];
}

/** What the stand-in hands its workspace routes (its own helpers, typed loosely to stay separate). */
export interface Kit<C> {
  route(method: string, pattern: string, h: (ctx: C, p: string[]) => Promise<void> | void): void;
  authenticate(ctx: C, level: 'verified' | 'admin'): Promise<{ user: User }>;
  sendJson(ctx: C, status: number, value: unknown): void;
  readJsonObject(ctx: C): Promise<Record<string, unknown>>;
  readText(ctx: C): Promise<string>;
  sendText(ctx: C, status: number, text: string): void;
  query(ctx: C, name: string): string | undefined;
  fail(status: number, detail: string): Error;
  flags: { bypassAdminAccessControl: boolean };
  users: Map<string, User>;
  chats: Map<string, { id: string; user_id: string; title: string; folder_id: string | null; chat: unknown }>;
  /** the stand-in's uploaded files (knowledge bases index them) */
  files: Map<string, { id: string; user_id: string; filename: string; data: { content?: string } }>;
}

const FORBIDDEN = 'You do not have permission to access this resource. Please contact your administrator for assistance.';
const NOT_FOUND = "We could not find what you're looking for :/";

export function installWorkspace<C>(kit: Kit<C>, ws: Workspace): void {
  const { route, authenticate, sendJson, readJsonObject, fail, flags } = kit;
  const get = (kind: Kind, id: string | undefined) => {
    const o = ws.objects[kind].get(id ?? '');
    if (!o) throw fail(404, NOT_FOUND);
    return o;
  };
  /** AccessGrants.has_access: exact permission, the user, `user:*`, or one of the user's groups */
  const hasAccess = (user: User, o: WorkspaceObject, permission: 'read' | 'write') =>
    (o.access_grants ?? []).some(
      (g) =>
        g.permission === permission &&
        ((g.principal_type === 'user' && (g.principal_id === user.id || g.principal_id === '*')) ||
          (g.principal_type === 'group' && user.groups.includes(g.principal_id))),
    );
  const readable = (user: User, o: WorkspaceObject) => o.user_id === user.id || hasAccess(user, o, 'read') || hasAccess(user, o, 'write');
  /** the bypass-dependent list rule of notes, knowledge, models, prompts, tools, skills */
  const listed = (user: User, kind: Kind) =>
    [...ws.objects[kind].values()].filter((o) => (user.role === 'admin' && flags.bypassAdminAccessControl) || readable(user, o));
  /** "user.role != 'admin' and not owner and not has_access": 403 */
  const byIdAdminAny = async (ctx: C, kind: Kind, id: string | undefined, permission: 'read' | 'write' = 'read') => {
    const { user } = await authenticate(ctx, 'verified');
    const o = get(kind, id);
    if (user.role !== 'admin' && o.user_id !== user.id && !hasAccess(user, o, permission)) throw fail(403, FORBIDDEN);
    return { user, o };
  };
  const withUser = (o: WorkspaceObject) => {
    const u = kit.users.get(o.user_id);
    return { ...o, user: u ? { id: u.id, name: u.name, email: u.email, role: u.role } : null };
  };

  // users.py
  route('GET', '/api/v1/users/groups', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    // group ids are the stand-in's group names
    sendJson(
      ctx,
      200,
      user.groups.map((g) => ({ id: g, name: g, description: '', user_id: '', created_at: 0, updated_at: 0 })),
    );
  });

  // users.py: UserModel as dumped, `settings` and `info` included (UserGroupIdsModel, UserActiveResponse extra='allow')
  const userModel = (u: User) => ({
    id: u.id,
    email: u.email,
    name: u.name,
    role: u.role,
    settings: ws.settings.get(u.id) ?? null,
    info: null,
    group_ids: u.groups,
  });
  route('GET', '/api/v1/users/', async (ctx) => {
    await authenticate(ctx, 'admin');
    const all = [...kit.users.values()].map(userModel);
    sendJson(ctx, 200, { users: all, total: all.length });
  });
  route('GET', '/api/v1/users/{user_id}', async (ctx, [id]) => {
    await authenticate(ctx, 'admin');
    const u = kit.users.get(id ?? '');
    if (!u) throw fail(400, 'User not found');
    sendJson(ctx, 200, { ...userModel(u), groups: u.groups.map((g) => ({ id: g, name: g })), is_active: false });
  });

  // users.py get_user_preview: the ids and names of every knowledge base, model and tool the user
  // owns or holds a read grant on, other users' private ones included
  route('GET', '/api/v1/users/{user_id}/preview', async (ctx, [id]) => {
    await authenticate(ctx, 'admin');
    const u = kit.users.get(id ?? '');
    if (!u) throw fail(404, 'User not found');
    const reach = (kind: Kind) => {
      const all = [...ws.objects[kind].values()];
      return { items: all.filter((o) => readable(u, o)).map((o) => ({ id: o.id, name: o.name })), total: all.length };
    };
    sendJson(ctx, 200, {
      user: { id: u.id, name: u.name },
      groups: u.groups.map((g) => ({ id: g, name: g })),
      models: reach('model'),
      knowledge: reach('knowledge'),
      tools: reach('tool'),
    });
  });

  // socket/main.py over Engine.IO long-polling: a POST carries client packets, answered `OK`
  for (const p of ['/ws/socket.io', '/ws/socket.io/']) {
    route('POST', p, async (ctx) => {
      ws.polled.push(await kit.readText(ctx));
      kit.sendText(ctx, 200, 'OK');
    });
  }

  // notes.py
  route('GET', '/api/v1/notes/search', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    // Notes.search_notes: unless an admin with the bypass on, the caller's own notes and those
    // granted with `permission`, which is 'write' when the query does not name it (so a note
    // shared read-only shows only with `permission=read`, as on the real 0.12.4)
    const permission = kit.query(ctx, 'permission') === 'read' ? 'read' : 'write';
    const items = [...ws.objects.note.values()]
      .filter(
        (o) =>
          (user.role === 'admin' && flags.bypassAdminAccessControl) ||
          o.user_id === user.id ||
          hasAccess(user, o, permission) ||
          (permission === 'read' && hasAccess(user, o, 'write')),
      )
      .map(withUser);
    sendJson(ctx, 200, { items, total: items.length });
  });
  route('GET', '/api/v1/notes/', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    // get_notes_by_user_id(user.id, 'read'): own and shared, whatever the role; NoteItemResponse
    const items = [...ws.objects.note.values()]
      .filter((o) => readable(user, o))
      .map((o) => ({ id: o.id, title: o.title, data: o.data, updated_at: o.updated_at, created_at: o.created_at, user: withUser(o).user }));
    sendJson(ctx, 200, items);
  });
  route('GET', '/api/v1/notes/{id}', async (ctx, [id]) => sendJson(ctx, 200, (await byIdAdminAny(ctx, 'note', id)).o));
  route('POST', '/api/v1/notes/{id}/update', async (ctx, [id]) => {
    const { o } = await byIdAdminAny(ctx, 'note', id, 'write');
    const body = await readJsonObject(ctx);
    if (typeof body.title === 'string') o.title = body.title;
    if (body.data && typeof body.data === 'object') o.data = body.data;
    sendJson(ctx, 200, o);
  });

  // folders.py: GET /{id} "user.role == 'admin' or _has_folder_access(read)"; access/update owner or admin
  route('GET', '/api/v1/folders/{id}', async (ctx, [id]) => sendJson(ctx, 200, (await byIdAdminAny(ctx, 'folder', id)).o));
  route('GET', '/api/v1/folders/{id}/shared/chats', async (ctx, [id]) => {
    const { o } = await byIdAdminAny(ctx, 'folder', id);
    sendJson(
      ctx,
      200,
      [...kit.chats.values()].filter((c) => c.folder_id === o.id).map((c) => ({ id: c.id, title: c.title, user_id: c.user_id, chat: c.chat })),
    );
  });
  route('POST', '/api/v1/folders/{id}/access/update', async (ctx, [id]) => {
    const { user } = await authenticate(ctx, 'verified');
    const o = get('folder', id);
    if (user.role !== 'admin' && user.id !== o.user_id) throw fail(403, FORBIDDEN);
    const body = await readJsonObject(ctx);
    const grants = Array.isArray(body.access_grants) ? (body.access_grants as Array<Record<string, string>>) : [];
    o.access_grants = grants.map((g) =>
      grant('folder', o.id, `${g.principal_type === 'group' ? 'group' : 'user'}:${g.principal_id ?? ''}`, g.permission === 'write' ? 'write' : 'read'),
    );
    sendJson(ctx, 200, o);
  });

  // folders.py create_folder: a parent of another user is not checked for admins ("user.role !=
  // 'admin' and not _has_folder_access(write)") and the folder is made as the PARENT's owner's;
  // data.files entries are not checked for admins (get_accessible_folder_files returns them all)
  route('POST', '/api/v1/folders/', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    const body = await readJsonObject(ctx);
    if (typeof body.name !== 'string') throw fail(422, 'name is required');
    const parentId = typeof body.parent_id === 'string' && body.parent_id ? body.parent_id : null;
    const parent = parentId ? ws.objects.folder.get(parentId) : undefined;
    if (parent && parent.user_id !== user.id && user.role !== 'admin' && !hasAccess(user, parent, 'write')) throw fail(403, FORBIDDEN);
    const data = body.data && typeof body.data === 'object' ? (body.data as { files?: unknown }) : null;
    if (data && Array.isArray(data.files) && user.role !== 'admin') {
      const entries = data.files as Array<{ type?: string; id?: string }>;
      const file = (id: string | undefined) => kit.files.get(id ?? '');
      const ok = entries.every((e) =>
        e.type === 'file'
          ? file(e.id)?.user_id === user.id
          : e.type === 'collection' || e.type === 'note'
            ? readable(user, get(e.type === 'collection' ? 'knowledge' : 'note', e.id))
            : false,
      );
      if (!ok) throw fail(403, FORBIDDEN);
    }
    const now = Math.floor(Date.now() / 1000);
    const folder: WorkspaceObject = {
      id: randomUUID(),
      user_id: parent ? parent.user_id : user.id,
      parent_id: parentId,
      name: body.name,
      data,
      created_at: now,
      updated_at: now,
    };
    ws.objects.folder.set(folder.id, folder);
    sendJson(ctx, 200, folder);
  });

  // knowledge.py
  /** the base's write check: owner, a write grant, or "user.role != 'admin'" */
  const writableKnowledge = async (ctx: C, id: string | undefined) => {
    const { user } = await authenticate(ctx, 'verified');
    const kb = get('knowledge', id);
    if (kb.user_id !== user.id && !hasAccess(user, kb, 'write') && user.role !== 'admin') throw fail(400, FORBIDDEN);
    return { user, kb };
  };
  /** add_file_to_knowledge_by_id: "file.user_id != user.id and user.role != 'admin'" needs read access; the base indexes the file's text */
  const addFile = (user: User, kb: WorkspaceObject, fileId: unknown) => {
    const file = kit.files.get(typeof fileId === 'string' ? fileId : '');
    if (!file) throw fail(400, NOT_FOUND);
    if (file.user_id !== user.id && user.role !== 'admin') throw fail(403, FORBIDDEN);
    const ids = (kb.file_ids as string[] | undefined) ?? [];
    if (!ids.includes(file.id)) kb.file_ids = [...ids, file.id];
    kb.content = `${String(kb.content ?? '')}\n${file.data.content ?? ''}`;
  };
  const withFiles = (kb: WorkspaceObject) => ({
    ...kb,
    files: ((kb.file_ids as string[] | undefined) ?? []).map((id) => ({ id, filename: kit.files.get(id)?.filename ?? '' })),
  });
  route('POST', '/api/v1/knowledge/{id}/file/add', async (ctx, [id]) => {
    const { user, kb } = await writableKnowledge(ctx, id);
    addFile(user, kb, (await readJsonObject(ctx)).file_id);
    sendJson(ctx, 200, withFiles(kb));
  });
  route('POST', '/api/v1/knowledge/{id}/files/batch/add', async (ctx, [id]) => {
    const { user, kb } = await writableKnowledge(ctx, id);
    const forms = JSON.parse((await kit.readText(ctx)) || 'null') as unknown;
    if (!Array.isArray(forms)) throw fail(422, 'Input should be a valid list');
    for (const f of forms as Array<{ file_id?: unknown }>) addFile(user, kb, f.file_id);
    sendJson(ctx, 200, withFiles(kb));
  });
  route('GET', '/api/v1/knowledge/', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    const items = listed(user, 'knowledge').map(withUser);
    sendJson(ctx, 200, { items, total: items.length });
  });
  route('GET', '/api/v1/knowledge/{id}', async (ctx, [id]) => sendJson(ctx, 200, (await byIdAdminAny(ctx, 'knowledge', id)).o));
  route('GET', '/api/v1/knowledge/{id}/export', async (ctx, [id]) => {
    const { o } = await byIdAdminAny(ctx, 'knowledge', id);
    // a zip of the extracted text upstream; the text itself here
    sendJson(ctx, 200, { name: o.name, content: o.content ?? '' });
  });

  // channels.py: admins read any standard channel; dm/group channels by membership
  const channelAccess = async (ctx: C, id: string | undefined) => {
    const { user } = await authenticate(ctx, 'verified');
    const ch = get('channel', id);
    const members = ws.members.get(ch.id);
    if (ch.type === 'dm' || ch.type === 'group') {
      if (!members?.has(user.id)) throw fail(403, FORBIDDEN);
    } else if (user.role !== 'admin' && ch.user_id !== user.id && !hasAccess(user, ch, 'read')) throw fail(403, FORBIDDEN);
    return { user, ch, members };
  };
  route('GET', '/api/v1/channels/{id}', async (ctx, [id]) => {
    const { ch, members } = await channelAccess(ctx, id);
    sendJson(ctx, 200, { ...ch, user_ids: members ? [...members] : null });
  });
  route('GET', '/api/v1/channels/{id}/messages', async (ctx, [id]) => {
    const { ch } = await channelAccess(ctx, id);
    sendJson(
      ctx,
      200,
      ws.messages.filter((m) => m.channel_id === ch.id),
    );
  });
  route('POST', '/api/v1/channels/{id}/update/members/add', async (ctx, [id]) => {
    // "allowed to any admin" on standard and group channels
    const { user } = await authenticate(ctx, 'verified');
    const ch = get('channel', id);
    if (user.role !== 'admin' && ch.user_id !== user.id) throw fail(403, FORBIDDEN);
    // no member is ever added to a DM, admins included (0.12.4 answers 403)
    if (ch.type === 'dm') throw fail(403, FORBIDDEN);
    const body = await readJsonObject(ctx);
    const add = Array.isArray(body.user_ids) ? (body.user_ids as string[]) : [];
    const members = ws.members.get(ch.id) ?? new Set<string>();
    for (const u of add) members.add(u);
    ws.members.set(ch.id, members);
    sendJson(ctx, 200, { ...ch, user_ids: [...members] });
  });

  // evaluations.py: feedback carries snapshot.chat, the whole rated chat
  route('GET', '/api/v1/evaluations/feedbacks/all/export', async (ctx) => {
    await authenticate(ctx, 'admin');
    sendJson(ctx, 200, [...ws.objects.feedback.values()]);
  });
  route('GET', '/api/v1/evaluations/feedbacks/list', async (ctx) => {
    await authenticate(ctx, 'admin');
    const items = [...ws.objects.feedback.values()].map(withUser);
    sendJson(ctx, 200, { items, total: items.length });
  });
  // the caller's own ratings, 30 a page, newest first (get_user_feedbacks)
  route('GET', '/api/v1/evaluations/feedbacks/user', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    const page = Math.max(1, Number(kit.query(ctx, 'page') ?? '1') || 1);
    const own = [...ws.objects.feedback.values()].filter((f) => f.user_id === user.id).map(withUser);
    sendJson(ctx, 200, { items: own.slice((page - 1) * 30, page * 30), total: own.length });
  });
  // get_leaderboard without a query: Elo over every user's ratings (_calculate_elo) and each model's
  // top 5 tags of every user's ratings (_get_top_tags)
  route('GET', '/api/v1/evaluations/leaderboard', async (ctx) => {
    await authenticate(ctx, 'admin');
    const stats = new Map<string, { rating: number; won: number; lost: number }>();
    const tags = new Map<string, Map<string, number>>();
    const of = (m: string) => stats.get(m) ?? (stats.set(m, { rating: 1000, won: 0, lost: 0 }), stats.get(m)!);
    for (const f of ws.objects.feedback.values()) {
      const data = (f.data ?? {}) as { model_id?: string; rating?: unknown; sibling_model_ids?: string[]; tags?: string[] };
      if (data.model_id)
        for (const t of data.tags ?? []) tags.set(data.model_id, (tags.get(data.model_id) ?? new Map()).set(t, (tags.get(data.model_id)?.get(t) ?? 0) + 1));
      const rating = String(data.rating ?? '');
      if (!data.model_id || (rating !== '1' && rating !== '-1')) continue;
      for (const opponent of data.sibling_model_ids ?? []) {
        const [w, o] = [of(data.model_id), of(opponent)];
        const expected = 1 / (1 + 10 ** ((o.rating - w.rating) / 400));
        w.rating += 32 * ((rating === '1' ? 1 : 0) - expected);
        o.rating += 32 * ((rating === '1' ? 0 : 1) - (1 - expected));
        if (rating === '1') [w.won, o.lost] = [w.won + 1, o.lost + 1];
        else [w.lost, o.won] = [w.lost + 1, o.won + 1];
      }
    }
    const entries = [...stats.entries()]
      .map(([model_id, s]) => ({
        model_id,
        rating: Math.round(s.rating),
        won: s.won,
        lost: s.lost,
        count: s.won + s.lost,
        top_tags: [...(tags.get(model_id) ?? new Map<string, number>()).entries()]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 5)
          .map(([tag, count]) => ({ tag, count })),
      }))
      .sort((a, b) => b.rating - a.rating);
    sendJson(ctx, 200, { entries });
  });
  // Feedbacks.get_distinct_model_ids: the rated models of every user's ratings
  route('GET', '/api/v1/evaluations/feedbacks/models', async (ctx) => {
    await authenticate(ctx, 'admin');
    const ids = new Set<string>();
    for (const f of ws.objects.feedback.values()) {
      const id = (f.data as { model_id?: unknown } | undefined)?.model_id;
      if (typeof id === 'string' && id) ids.add(id);
    }
    sendJson(ctx, 200, [...ids]);
  });
  route('GET', '/api/v1/evaluations/feedback/{id}', async (ctx, [id]) => {
    const { user } = await authenticate(ctx, 'verified');
    const o = get('feedback', id);
    if (user.role !== 'admin' && o.user_id !== user.id) throw fail(404, NOT_FOUND);
    sendJson(ctx, 200, o);
  });

  // analytics.py (ENABLE_ADMIN_ANALYTICS): message text of every user
  route('GET', '/api/v1/analytics/messages', async (ctx) => {
    await authenticate(ctx, 'admin');
    const chatId = kit.query(ctx, 'chat_id');
    const out = [...kit.chats.values()]
      .filter((c) => !chatId || c.id === chatId)
      .map((c) => ({ chat_id: c.id, user_id: c.user_id, content: JSON.stringify(c.chat) }));
    sendJson(ctx, 200, out);
  });

  // memories.py and retrieval.py: user-memory-<id> is any admin's to query
  route('GET', '/api/v1/memories/', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    sendJson(
      ctx,
      200,
      [...ws.objects.memory.values()].filter((m) => m.user_id === user.id),
    );
  });
  route('POST', '/api/v1/retrieval/query/collection', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    const body = await readJsonObject(ctx);
    const names = Array.isArray(body.collection_names) ? (body.collection_names as string[]) : [];
    const docs: string[] = [];
    for (const n of names) {
      const uid = /^user-memory-(.+)$/.exec(n)?.[1];
      if (!uid) continue;
      if (uid !== user.id && user.role !== 'admin') throw fail(403, FORBIDDEN);
      docs.push(...[...ws.objects.memory.values()].filter((m) => m.user_id === uid).map((m) => String(m.content)));
    }
    sendJson(ctx, 200, { documents: [docs], metadatas: [docs.map(() => ({}))], distances: [docs.map(() => 0)] });
  });

  // main.py /api/models with utils/models.py get_filtered_models (0.12.4): with the bypass off an
  // admin still gets the arena model when it has no grants, and base models without a DB entry
  route('GET', '/api/models', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    const all = [...ws.objects.model.values()];
    const data = all
      .filter((m) => {
        if (user.role === 'admin' && flags.bypassAdminAccessControl) return true;
        if (m.arena) {
          const grants = ((m.info as { meta?: { access_grants?: Grant[] } } | undefined)?.meta?.access_grants ?? []) as Grant[];
          return (grants.length === 0 && user.role === 'admin') || hasAccess(user, { ...m, access_grants: grants }, 'read');
        }
        if (!m.info) return user.role === 'admin';
        const info = m.info as { user_id?: string; access_grants?: Grant[] };
        return info.user_id === user.id || hasAccess(user, { ...m, access_grants: info.access_grants ?? [] }, 'read');
      })
      .map(({ user_id: _owner, access_grants: _g, ...m }) => m);
    sendJson(ctx, 200, { data });
  });
  // routers/models.py get_model_by_id (0.12.4): a model with a DB entry (`info` here), to its owner, a
  // holder of a grant, or an admin with the bypass on (else 401); base models and arena models have
  // no entry (404)
  route('GET', '/api/v1/models/model', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    const id = kit.query(ctx, 'id') ?? '';
    const m = ws.objects.model.get(id);
    if (!m || m.arena || !m.info) throw fail(404, NOT_FOUND);
    const info = m.info as { user_id?: string; access_grants?: Grant[] };
    const entry = { ...m, user_id: info.user_id ?? '', access_grants: info.access_grants ?? [] };
    const may = (user.role === 'admin' && flags.bypassAdminAccessControl) || readable(user, entry);
    if (!may) throw fail(401, FORBIDDEN);
    sendJson(ctx, 200, { id: m.id, name: m.name, user_id: entry.user_id, access_grants: entry.access_grants, base_model_id: null, params: {}, meta: {} });
  });
  /** a model's DB entry as models/models.py ModelModel answers it (the stand-in keeps owner and grants in `info`) */
  const modelRecord = (m: WorkspaceObject) => {
    const info = (m.info ?? {}) as { user_id?: string; access_grants?: Grant[] };
    return {
      id: m.id,
      user_id: info.user_id ?? '',
      base_model_id: typeof m.base_model_id === 'string' ? m.base_model_id : null,
      name: m.name,
      params: {},
      meta: (m.meta as object | undefined) ?? {},
      access_grants: info.access_grants ?? [],
      is_active: true,
      created_at: 0,
      updated_at: 0,
    };
  };
  /** the models with a DB entry (not the arena, not a connection's model without one) */
  const modelEntries = () => [...ws.objects.model.values()].filter((m) => m.info && !m.arena).map(modelRecord);
  // main.py /api/models/base (admin): the connections' models (utils/models.py get_all_base_models),
  // here the models without a stored entry
  route('GET', '/api/models/base', async (ctx) => {
    await authenticate(ctx, 'admin');
    const data = [...ws.objects.model.values()]
      .filter((m) => !m.info && !m.arena)
      .map((m) => ({ id: m.id, name: m.name, object: 'model', owned_by: 'openai' }));
    sendJson(ctx, 200, { data });
  });
  route('GET', '/api/v1/models/all', async (ctx) => {
    await authenticate(ctx, 'admin');
    sendJson(ctx, 200, modelEntries());
  });
  // routers/models.py get_model_tags: Models.get_all_tags of workspace models (a base model set), every
  // one for an admin with the bypass on, else those the caller owns or holds a read grant on
  route('GET', '/api/v1/models/tags', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    const names = new Set<string>();
    for (const m of modelEntries()) {
      if (!m.base_model_id || !((user.role === 'admin' && flags.bypassAdminAccessControl) || readable(user, m))) continue;
      for (const t of ((m.meta as { tags?: unknown[] }).tags ?? []) as unknown[]) {
        const name = typeof t === 'object' && t !== null ? (t as { name?: unknown }).name : t;
        if (typeof name === 'string' && name) names.add(name);
      }
    }
    sendJson(ctx, 200, [...names].sort());
  });
  // routers/prompts.py get_prompt_tags: Prompts.get_tags (every active prompt) for an admin with the bypass on, else get_tags_by_user_id
  route('GET', '/api/v1/prompts/tags', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    const names = new Set<string>();
    for (const p of listed(user, 'prompt'))
      if (p.is_active !== false) for (const t of (p.tags ?? []) as unknown[]) if (typeof t === 'string' && t) names.add(t);
    sendJson(ctx, 200, [...names].sort());
  });
  for (const kind of ['prompt', 'tool', 'skill'] as const) {
    const base = `/api/v1/${kind}s`;
    route('GET', `${base}/`, async (ctx) => {
      const { user } = await authenticate(ctx, 'verified');
      sendJson(ctx, 200, listed(user, kind).map(withUser));
    });
    route('GET', `${base}/id/{id}`, async (ctx, [id]) => sendJson(ctx, 200, (await byIdAdminAny(ctx, kind, id)).o));
  }
}
