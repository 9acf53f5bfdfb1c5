// The workspace routes around models, as Open WebUI 0.12.4 answers them (routers/evaluations.py,
// analytics.py, memories.py, retrieval.py, models.py, prompts.py, tools.py, skills.py and
// main.py's /api/models).
import { randomUUID } from 'node:crypto';
import { FORBIDDEN, NOT_FOUND, WorkspaceAccess, hasAccess, readable, type Grant, type Kit, type Workspace, type WorkspaceObject } from './workspace.js';

export function installModelRoutes<C>(kit: Kit<C>, ws: Workspace): void {
  const access = new WorkspaceAccess(kit, ws);
  // in this order: Starlette matches routes in the order they were added
  installRatingReads(kit, ws, access);
  installRatingRecords(kit, ws, access);
  installMessageReads(kit, ws);
  installModelLists(kit, ws);
  installPromptsToolsSkills(kit, access);
}

/** evaluations.py, read: feedback carries snapshot.chat, the whole rated chat. */
function installRatingReads<C>(kit: Kit<C>, ws: Workspace, { withUser }: WorkspaceAccess<C>): void {
  const { route, authenticate, sendJson, fail } = kit;
  route('GET', '/api/v1/evaluations/feedbacks/all/export', async (ctx) => {
    await authenticate(ctx, 'admin');
    sendJson(ctx, 200, [...ws.objects.feedback.values()]);
  });
  // get_feedbacks: every user's ratings, of `model_id` when named, 30 a page; `total` counts them all
  route('GET', '/api/v1/evaluations/feedbacks/list', async (ctx) => {
    await authenticate(ctx, 'admin');
    const modelId = kit.query(ctx, 'model_id');
    const page = Math.max(1, Number(kit.query(ctx, 'page') ?? '1') || 1);
    const all = [...ws.objects.feedback.values()].filter((f) => !modelId || (f.data as { model_id?: unknown } | undefined)?.model_id === modelId);
    sendJson(ctx, 200, { items: all.slice((page - 1) * 30, page * 30).map(withUser), total: all.length });
  });
  // the caller's own ratings, 30 a page, newest change first (get_user_feedbacks: updated_at descending)
  route('GET', '/api/v1/evaluations/feedbacks/user', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    const page = Math.max(1, Number(kit.query(ctx, 'page') ?? '1') || 1);
    const changed = (f: WorkspaceObject) => Number((f as { updated_at?: unknown }).updated_at ?? 0);
    const own = [...ws.objects.feedback.values()]
      .filter((f) => f.user_id === user.id)
      .sort((a, b) => changed(b) - changed(a))
      .map(withUser);
    sendJson(ctx, 200, { items: own.slice((page - 1) * 30, page * 30), total: own.length });
  });
  // get_leaderboard without a query: Elo over every user's ratings (_calculate_elo) and each model's
  // top 5 tags of every user's ratings (_get_top_tags)
  route('GET', '/api/v1/evaluations/leaderboard', async (ctx) => {
    await authenticate(ctx, 'admin');
    const entries = leaderboard(ws.objects.feedback.values());
    sendJson(ctx, 200, { entries });
  });
  // get_model_history (Feedbacks.get_model_evaluation_history): every user's wins and losses of one
  // model by day, the last `days` days (0: from its first rating)
  route('GET', '/api/v1/evaluations/leaderboard/*/history', async (ctx, [rawId]) => {
    await authenticate(ctx, 'admin');
    const modelId = decodeURIComponent(rawId ?? '');
    const days = Number(kit.query(ctx, 'days') ?? '30');
    if (!Number.isInteger(days)) throw fail(422, 'days: Input should be a valid integer');
    const history = winsByDay(ws.objects.feedback.values(), modelId, days);
    sendJson(ctx, 200, { model_id: modelId, history });
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
}

/** evaluations.py, one rating: read, created, deleted. */
function installRatingRecords<C>(kit: Kit<C>, ws: Workspace, { get }: WorkspaceAccess<C>): void {
  const { route, authenticate, sendJson, readJsonObject, fail } = kit;
  route('GET', '/api/v1/evaluations/feedback/{id}', async (ctx, [id]) => {
    const { user } = await authenticate(ctx, 'verified');
    const o = get('feedback', id);
    if (user.role !== 'admin' && o.user_id !== user.id) throw fail(404, NOT_FOUND);
    sendJson(ctx, 200, o);
  });
  // create_feedback: the caller's new rating (FeedbackModel), version 0, stamped now
  route('POST', '/api/v1/evaluations/feedback', async (ctx) => {
    const { user } = await authenticate(ctx, 'verified');
    const form = await readJsonObject(ctx);
    const now = Math.floor(Date.now() / 1000);
    const o = {
      id: randomUUID(),
      user_id: user.id,
      version: 0,
      type: String(form.type ?? ''),
      data: form.data ?? null,
      meta: form.meta ?? null,
      snapshot: form.snapshot ?? null,
      created_at: now,
      updated_at: now,
    } as unknown as WorkspaceObject;
    ws.objects.feedback.set(o.id, o);
    sendJson(ctx, 200, o);
  });
  // delete_feedback_by_id: any rating for an admin, the caller's own otherwise; 404 for none
  route('DELETE', '/api/v1/evaluations/feedback/{id}', async (ctx, [id]) => {
    const { user } = await authenticate(ctx, 'verified');
    const o = ws.objects.feedback.get(id ?? '');
    if (!o || (user.role !== 'admin' && o.user_id !== user.id)) throw fail(404, NOT_FOUND);
    ws.objects.feedback.delete(o.id);
    sendJson(ctx, 200, true);
  });
}

/** What holds the text of users' messages: analytics, memories, retrieval. */
function installMessageReads<C>(kit: Kit<C>, ws: Workspace): void {
  const { route, authenticate, sendJson, readJsonObject, fail } = kit;
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
}

/** The models: main.py's /api/models and /api/models/base, routers/models.py's model, all and tags. */
function installModelLists<C>(kit: Kit<C>, ws: Workspace): void {
  const { route, authenticate, sendJson, fail, flags } = kit;
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
}

/** Prompts, tools and skills: listed and read by id; the prompts' tags. */
function installPromptsToolsSkills<C>(kit: Kit<C>, { listed, byIdAdminAny, withUser }: WorkspaceAccess<C>): void {
  const { route, authenticate, sendJson } = kit;
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

/** Elo over every user's ratings (_calculate_elo) and each model's top 5 tags of every user's ratings (_get_top_tags). */
function leaderboard(feedback: Iterable<WorkspaceObject>) {
  const stats = new Map<string, { rating: number; won: number; lost: number }>();
  const tags = new Map<string, Map<string, number>>();
  const of = (m: string) => stats.get(m) ?? (stats.set(m, { rating: 1000, won: 0, lost: 0 }), stats.get(m)!);
  for (const f of feedback) {
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
  return [...stats.entries()]
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
}

/** One model's wins and losses by day, the last `days` days (0: from its first rating). */
function winsByDay(feedback: Iterable<WorkspaceObject>, modelId: string, days: number) {
  const cutoff = Math.floor(Date.now() / 1000) - days * 86_400;
  const day = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);
  const counts = new Map<string, { won: number; lost: number }>();
  for (const f of feedback) {
    const data = (f.data ?? {}) as { model_id?: string; rating?: unknown };
    const rating = String(data.rating ?? '');
    const at = Number(f.created_at ?? 0);
    if (data.model_id !== modelId || (rating !== '1' && rating !== '-1') || (days !== 0 && at < cutoff)) continue;
    const c = counts.get(day(at)) ?? { won: 0, lost: 0 };
    if (rating === '1') c.won++;
    else c.lost++;
    counts.set(day(at), c);
  }
  const first = [...counts.keys()].sort()[0];
  const today = Date.parse(day(Date.now() / 1000));
  const span = days === 0 ? (first ? Math.round((today - Date.parse(first)) / 86_400_000) + 1 : 0) : days;
  return Array.from({ length: span }, (_, i) => {
    const date = day((today - (span - 1 - i) * 86_400_000) / 1000);
    return { date, ...(counts.get(date) ?? { won: 0, lost: 0 }) };
  });
}
