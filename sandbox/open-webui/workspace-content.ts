// The workspace routes of users and what they write and share, as Open WebUI 0.12.4 answers them
// (routers/users.py, notes.py, folders.py, knowledge.py, channels.py), and Socket.IO's
// long-polling POSTs (socket/main.py).
import { randomUUID } from 'node:crypto';
import {
  FORBIDDEN,
  NOT_FOUND,
  WorkspaceAccess,
  grant,
  hasAccess,
  readable,
  type Kind,
  type Kit,
  type User,
  type Workspace,
  type WorkspaceObject,
} from './workspace.js';

export function installContentRoutes<C>(kit: Kit<C>, ws: Workspace): void {
  const access = new WorkspaceAccess(kit, ws);
  // in this order: Starlette matches routes in the order they were added
  installUserRoutes(kit, ws);
  installSocketPolling(kit, ws);
  installNoteRoutes(kit, ws, access);
  installFolderRoutes(kit, ws, access);
  installKnowledgeRoutes(kit, access);
  installChannelRoutes(kit, ws, access);
}

/** users.py: the caller's groups, the users, one user and what they reach. */
function installUserRoutes<C>(kit: Kit<C>, ws: Workspace): void {
  const { route, authenticate, sendJson, fail } = kit;
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
}

/** socket/main.py over Engine.IO long-polling: a POST carries client packets, answered `OK`. */
function installSocketPolling<C>(kit: Kit<C>, ws: Workspace): void {
  for (const p of ['/ws/socket.io', '/ws/socket.io/']) {
    kit.route('POST', p, async (ctx) => {
      ws.polled.push(await kit.readText(ctx));
      kit.sendText(ctx, 200, 'OK');
    });
  }
}

/** notes.py */
function installNoteRoutes<C>(kit: Kit<C>, ws: Workspace, { byIdAdminAny, withUser }: WorkspaceAccess<C>): void {
  const { route, authenticate, sendJson, readJsonObject, flags } = kit;
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
}

/** folders.py: GET /{id} "user.role == 'admin' or _has_folder_access(read)"; access/update owner or admin. */
function installFolderRoutes<C>(kit: Kit<C>, ws: Workspace, { get, byIdAdminAny }: WorkspaceAccess<C>): void {
  const { route, authenticate, sendJson, readJsonObject, fail } = kit;
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
}

/** knowledge.py */
function installKnowledgeRoutes<C>(kit: Kit<C>, { get, listed, byIdAdminAny, withUser }: WorkspaceAccess<C>): void {
  const { route, authenticate, sendJson, readJsonObject, fail } = kit;
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
  // get_knowledge_bases: 30 a page (PAGE_ITEM_COUNT), newest change first then id, page below 1 the
  // first; `total` counts every one the caller lists
  route('GET', '/api/v1/knowledge/', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    const page = Math.max(1, Number(kit.query(ctx, 'page') ?? '1') || 1);
    const changed = (o: WorkspaceObject) => Number((o as { updated_at?: unknown }).updated_at ?? 0);
    const all = listed(user, 'knowledge')
      .sort((a, b) => changed(b) - changed(a) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map(withUser);
    sendJson(ctx, 200, { items: all.slice((page - 1) * 30, page * 30), total: all.length });
  });
  route('GET', '/api/v1/knowledge/{id}', async (ctx, [id]) => sendJson(ctx, 200, (await byIdAdminAny(ctx, 'knowledge', id)).o));
  route('GET', '/api/v1/knowledge/{id}/export', async (ctx, [id]) => {
    const { o } = await byIdAdminAny(ctx, 'knowledge', id);
    // a zip of the extracted text upstream; the text itself here
    sendJson(ctx, 200, { name: o.name, content: o.content ?? '' });
  });
}

/** channels.py: admins read any standard channel; dm/group channels by membership. */
function installChannelRoutes<C>(kit: Kit<C>, ws: Workspace, { get }: WorkspaceAccess<C>): void {
  const { route, authenticate, sendJson, readJsonObject, fail } = kit;
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
}
