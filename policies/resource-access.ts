// Spec rules A3 to A5 held by the gateway itself: may an admin (bypass off) reach an object of
// Open WebUI, and which names of objects (tags, model ids) may reach them? Pure functions over the
// upstream's JSON answers; an object with neither owner nor grants is reachable by nobody here
// (docs/design/route-table.md, "Owners and grants").

/** `owner`: what Open WebUI leaves to the object's owner alone (a grant or a channel's membership is not enough). */
export type Permission = 'read' | 'write' | 'owner';

export interface Principal {
  /** the caller's upstream user id */
  userId: string;
  /** ids of the caller's upstream groups, inherited ones included */
  groupIds: ReadonlySet<string>;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The owner an answer names, if any. */
export function ownerOf(item: unknown): string | undefined {
  if (!isObj(item)) return undefined;
  if (typeof item.user_id === 'string') return item.user_id;
  if (isObj(item.info) && typeof item.info.user_id === 'string') return item.info.user_id;
  if (isObj(item.user) && typeof item.user.id === 'string') return item.user.id;
  return undefined;
}

function grantsOf(item: Obj): unknown[] {
  const places = [
    item.access_grants,
    isObj(item.info) ? item.info.access_grants : undefined,
    isObj(item.info) && isObj(item.info.meta) ? item.info.meta.access_grants : undefined,
    isObj(item.meta) ? item.meta.access_grants : undefined,
  ];
  return places.filter(Array.isArray).flat();
}

/** Does one grant give `principal` the permission? A write grant also lets read. */
function grants(grant: unknown, principal: Principal, permission: Permission): boolean {
  if (!isObj(grant)) return false;
  const p = grant.permission;
  if (!(p === permission || (permission === 'read' && p === 'write'))) return false;
  if (grant.principal_type === 'user') return grant.principal_id === principal.userId || grant.principal_id === '*';
  if (grant.principal_type === 'group') return typeof grant.principal_id === 'string' && principal.groupIds.has(grant.principal_id);
  return false;
}

/** May `principal` reach this object with `permission`: owner, a user or group grant, or a member of a dm/group channel. */
export function mayReach(item: unknown, principal: Principal, permission: Permission): boolean {
  if (!isObj(item) || !principal.userId) return false;
  if (ownerOf(item) === principal.userId) return true;
  if (permission === 'owner') return false;
  if (grantsOf(item).some((g) => grants(g, principal, permission))) return true;
  // members of a direct or group channel (ChannelFullResponse.user_ids)
  return Array.isArray(item.user_ids) && item.user_ids.includes(principal.userId);
}

/**
 * What the upstream's answer to a by-id lookup (asked as the caller, the GET of the object's own
 * route) means for the request: `allow` when `mayReach` says so; `absent` when the upstream answered
 * 404, so the id names no object the caller could be kept from (Open WebUI answers an object that
 * is there but not theirs with 401 or 403, or with the object); `deny` for everything else (fail
 * closed). An absent object is answered 404 like Open WebUI answers it, not refused: nothing of
 * anyone is behind the id, and the front-end asks for such ids routinely (an image of no model).
 */
export type LookupVerdict = 'allow' | 'absent' | 'deny';

export function lookupVerdict(status: number, object: unknown, principal: Principal, permission: Permission): LookupVerdict {
  if (status === 404) return 'absent';
  return status === 200 && mayReach(object, principal, permission) ? 'allow' : 'deny';
}

export interface FilteredList {
  body: unknown;
  removed: number;
}

/**
 * Keep only the items `principal` may read. Shapes of the table release's list answers: a bare array, `{items,
 * total}` (paged lists: `total` is lowered by what this page lost), `{data: [...]}` (/api/models).
 * Undefined: not a list this understands (the gateway then answers 502, never the raw body).
 */
export function filterList(body: unknown, principal: Principal): FilteredList | undefined {
  const keep = (items: unknown[]) => items.filter((i) => mayReach(i, principal, 'read'));
  if (Array.isArray(body)) {
    const kept = keep(body);
    return { body: kept, removed: body.length - kept.length };
  }
  if (isObj(body)) {
    for (const key of ['items', 'data'] as const) {
      const items = body[key];
      if (!Array.isArray(items)) continue;
      const kept = keep(items);
      const removed = items.length - kept.length;
      const out: Obj = { ...body, [key]: kept };
      if (typeof body.total === 'number') out.total = Math.max(0, body.total - removed);
      return { body: out, removed };
    }
  }
  return undefined;
}

/** The caller's group ids from GET /api/v1/users/groups (a list of GroupResponse). */
export function parseGroupIds(body: unknown): Set<string> | undefined {
  if (!Array.isArray(body)) return undefined;
  const ids = new Set<string>();
  for (const g of body) {
    if (!isObj(g) || typeof g.id !== 'string') return undefined;
    ids.add(g.id);
  }
  return ids;
}

/** Remove `fields` from a record, an array of records, or the `users`/`items` array of an answer. Undefined: not such a shape. */
export function redactFields(body: unknown, fields: readonly string[], emptied: readonly string[] = []): unknown {
  const strip = (v: unknown): unknown => {
    if (!isObj(v)) return v;
    const out: Obj = { ...v };
    for (const f of fields) delete out[f];
    // kept in the shape the front-end reads (`.items`, `.total`), empty
    for (const f of emptied) if (f in out) out[f] = { items: [], total: 0 };
    return out;
  };
  if (Array.isArray(body)) return body.map(strip);
  if (!isObj(body)) return undefined;
  for (const key of ['users', 'items'] as const) if (Array.isArray(body[key])) return { ...body, [key]: (body[key] as unknown[]).map(strip) };
  return strip(body);
}

// ---- tag names (admins, bypass off)
//
// Tag names are what users write to file their chats and objects ("divorce", a client's name):
// content, not configuration. For an admin while CHATUI_BYPASS_ADMIN_ACCESS_CONTROL is false, an
// answer that names tags keeps only those of the admin's own chats and of the objects they may read.
// The gateway asks (gateway/enforcement/object-views.ts serveNames), this decides.
//
//   GET /api/v1/models/tags       tags of workspace models (models/models.py get_all_tags: every
//                                 model's while Open WebUI's own bypass is on): kept when a model
//                                 the admin may read carries it
//   GET /api/v1/prompts/tags      tags of active prompts (models/prompts.py get_tags): the same
//   GET /api/v1/analytics/models/{model_id}/overview
//                                 `tags` counts the tags of every user's chats that used the model
//                                 (routers/analytics.py get_model_overview): recounted over the
//                                 admin's own chats only; `history` (feedback counts per day) kept
//   GET /api/v1/evaluations/leaderboard
//                                 each model's `top_tags` counts the tags of every user's ratings
//                                 (routers/evaluations.py _get_top_tags): recounted over the admin's
//                                 own ratings; ratings and won/lost counts kept. Its `query` weighs
//                                 every user's ratings by how near their tags are to it: refused

export type TagSource = 'models' | 'prompts' | 'chats-of-model' | 'feedbacks';

/** How many tags the overview answers (get_model_overview: the top 10 by count). */
export const OVERVIEW_TAGS = 10;
/** How many tags each leaderboard entry answers (_get_top_tags: the top 5 by count). */
export const LEADERBOARD_TAGS = 5;

/** `counts` as Open WebUI answers top tags: by count, most first, the first `limit`. */
function topOf(counts: Map<string, number>, limit: number): Array<{ tag: string; count: number }> {
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([tag, count]) => ({ tag, count }));
}

/** A tag entry of a model's meta as get_all_tags reads it: `{name}` or a plain value. */
function tagName(tag: unknown): string | undefined {
  const name = isObj(tag) ? tag.name : tag;
  if (typeof name === 'string') return name || undefined;
  return typeof name === 'number' || typeof name === 'boolean' ? String(name) : undefined;
}

/**
 * Tag names of the workspace models (a base model set) that `principal` may read, from GET
 * /api/v1/models/all (every model record, admins only). Undefined: not a list of model records.
 */
export function modelTagNames(models: unknown, principal: Principal): Set<string> | undefined {
  if (!Array.isArray(models)) return undefined;
  const names = new Set<string>();
  for (const m of models) {
    if (!isObj(m)) return undefined;
    if (typeof m.base_model_id !== 'string' || !m.base_model_id || !mayReach(m, principal, 'read')) continue;
    const tags = isObj(m.meta) ? m.meta.tags : undefined;
    if (!Array.isArray(tags)) continue;
    for (const t of tags) {
      const n = tagName(t);
      if (n) names.add(n);
    }
  }
  return names;
}

/** Tag names of the active prompts `principal` may read, from GET /api/v1/prompts/ (PromptModel records). Undefined: not such a list. */
export function promptTagNames(prompts: unknown, principal: Principal): Set<string> | undefined {
  if (!Array.isArray(prompts)) return undefined;
  const names = new Set<string>();
  for (const p of prompts) {
    if (!isObj(p)) return undefined;
    if (p.is_active === false || !mayReach(p, principal, 'read') || !Array.isArray(p.tags)) continue;
    for (const t of p.tags) if (typeof t === 'string' && t) names.add(t);
  }
  return names;
}

/** The upstream's tag list (a list of names) with only `allowed` names kept, in its order. Undefined: not a list of names. */
export function keepTags(body: unknown, allowed: ReadonlySet<string>): { tags: string[]; removed: number } | undefined {
  if (!Array.isArray(body) || !body.every((t) => typeof t === 'string')) return undefined;
  const tags = (body as string[]).filter((t) => allowed.has(t));
  return { tags, removed: body.length - tags.length };
}

/**
 * Did this chat (a ChatResponse of GET /api/v1/chats/all) use the model? As the analytics count it
 * (models/chat_messages.py: a message's `model_id`, else its `model`, in the chat's history or its
 * message list).
 */
export function chatUsedModel(chat: Obj, modelId: string): boolean {
  const body = isObj(chat.chat) ? chat.chat : {};
  const history = isObj(body.history) && isObj(body.history.messages) ? Object.values(body.history.messages) : [];
  const list = Array.isArray(body.messages) ? body.messages : [];
  return [...history, ...list].some((m) => isObj(m) && (m.model_id || m.model) === modelId);
}

/**
 * Did this chat use the model, by its usage line (a ChatUsageStats of GET /api/v1/chats/stats/usage,
 * the caller's own chats): one of its answers anywhere in its history names the model
 * (`history_models`, counted from each assistant message's `model`, as the analytics' message rows
 * take it). Undefined: not such a line.
 */
export function usageUsedModel(line: unknown, modelId: string): boolean | undefined {
  if (!isObj(line) || typeof line.id !== 'string' || !isObj(line.history_models)) return undefined;
  return Object.hasOwn(line.history_models, modelId);
}

/** Counts tags over the caller's own chats that used a model, one chat at a time. */
export class OwnChatTags {
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly callerId: string,
    private readonly modelId: string,
  ) {}

  /** One chat of the caller's export; a record that is not a chat, or not the caller's, is skipped (it counts nothing). */
  add(chat: unknown): void {
    if (!isObj(chat) || chat.user_id !== this.callerId || !this.callerId || !chatUsedModel(chat, this.modelId)) return;
    this.count(isObj(chat.meta) ? chat.meta.tags : undefined);
  }

  /**
   * One usage line of the caller's own chats (GET /api/v1/chats/stats/usage answers the caller's
   * only): its `tags` counted when it used the model. False: not a usage line (the answer is refused).
   */
  addUsage(line: unknown): boolean {
    const used = usageUsedModel(line, this.modelId);
    if (used === undefined) return false;
    if (used) this.count((line as Obj).tags);
    return true;
  }

  private count(tags: unknown): void {
    if (!Array.isArray(tags)) return;
    for (const t of tags) if (typeof t === 'string' && t) this.counts.set(t, (this.counts.get(t) ?? 0) + 1);
  }

  /** The top tags by count, as get_model_overview answers them. */
  top(): Array<{ tag: string; count: number }> {
    return topOf(this.counts, OVERVIEW_TAGS);
  }
}

/** Counts tags per rated model over the caller's own ratings (FeedbackResponse records of GET /api/v1/evaluations/feedbacks/user). */
export class OwnFeedbackTags {
  private readonly counts = new Map<string, Map<string, number>>();

  constructor(private readonly callerId: string) {}

  /** One rating; one that is not the caller's counts nothing. Not a record: false (the page is not what the gateway reads). */
  add(feedback: unknown): boolean {
    if (!isObj(feedback)) return false;
    if (feedback.user_id !== this.callerId || !this.callerId || !isObj(feedback.data)) return true;
    this.addRating(feedback.data.model_id, feedback.data.tags);
    return true;
  }

  /** One of the caller's own ratings by its `data.model_id` and `data.tags` (policies/ratings.ts RatingKeys). */
  addRating(modelId: unknown, tags: unknown): void {
    if (typeof modelId !== 'string' || !modelId || !Array.isArray(tags)) return;
    const counts = this.counts.get(modelId) ?? new Map<string, number>();
    for (const t of tags) if (typeof t === 'string' && t) counts.set(t, (counts.get(t) ?? 0) + 1);
    this.counts.set(modelId, counts);
  }

  /** A model's top tags, as _get_top_tags answers them. */
  top(modelId: string): Array<{ tag: string; count: number }> {
    return topOf(this.counts.get(modelId) ?? new Map(), LEADERBOARD_TAGS);
  }
}

/** The leaderboard with each entry's `top_tags` replaced by `top(model_id)`. Undefined: not a leaderboard. */
export function leaderboardWithTags(
  body: unknown,
  top: (modelId: string) => Array<{ tag: string; count: number }>,
): { body: Obj; removed: number } | undefined {
  if (!isObj(body) || !Array.isArray(body.entries)) return undefined;
  let removed = 0;
  const entries: Obj[] = [];
  for (const e of body.entries) {
    if (!isObj(e) || typeof e.model_id !== 'string') return undefined;
    const mine = top(e.model_id);
    const names = new Set(mine.map((t) => t.tag));
    removed += (Array.isArray(e.top_tags) ? e.top_tags : []).filter((t) => !(isObj(t) && typeof t.tag === 'string' && names.has(t.tag))).length;
    entries.push({ ...e, top_tags: mine });
  }
  return { body: { ...body, entries }, removed };
}

/** The overview with its `tags` replaced (`history` kept as answered). Undefined: not an overview. */
export function overviewWithTags(body: unknown, tags: Array<{ tag: string; count: number }>): { body: Obj; removed: number } | undefined {
  if (!isObj(body) || !Array.isArray(body.history) || !Array.isArray(body.tags)) return undefined;
  const mine = new Set(tags.map((t) => t.tag));
  const removed = body.tags.filter((t) => !(isObj(t) && typeof t.tag === 'string' && mine.has(t.tag))).length;
  return { body: { ...body, tags }, removed };
}

// ---- model ids (admins, bypass off)
//
// A workspace model's id is its name (Open WebUI's editor makes it of the name the owner writes):
// another user's private model is named in the table release's usage answers for admins, counted by
// id across every user's messages and ratings. For an admin while CHATUI_BYPASS_ADMIN_ACCESS_CONTROL
// is false, those answers keep the entries of models the admin may see: a connection's model (GET
// /api/models/base, what the providers serve) or a stored model the admin owns or holds a grant on
// (GET /api/v1/models/all). Every other id (another user's private model, a deleted one, the arena)
// is dropped, its counts with it.
//
//   shape     answer                                                     route
//   models    {models: [{model_id, ...}], ...}                           /analytics/models, /analytics/tokens
//   entries   {entries: [{model_id, ...}]}                               /evaluations/leaderboard
//   daily     {data: [{models: {id: n}, previous?: {models: {id: n}}}]}  /analytics/daily
//   ids       [id, ...]                                                  /evaluations/feedbacks/models
//   usage     {model_ids: [id, ...], ...}                                /api/usage

export type ModelIdShape = 'models' | 'entries' | 'daily' | 'ids' | 'usage';

/**
 * The model ids `principal` may see: the connections' models (`base`, the `data` of GET /api/models/base)
 * and the stored models they may read (`stored`, GET /api/v1/models/all). Undefined: an answer that
 * is not of those shapes.
 */
export function visibleModelIds(base: unknown, stored: unknown, principal: Principal): Set<string> | undefined {
  const baseList = isObj(base) ? base.data : undefined;
  if (!Array.isArray(baseList) || !Array.isArray(stored)) return undefined;
  const ids = new Set<string>();
  for (const m of baseList) {
    if (!isObj(m) || typeof m.id !== 'string') return undefined;
    ids.add(m.id);
  }
  for (const m of stored) {
    if (!isObj(m) || typeof m.id !== 'string') return undefined;
    if (mayReach(m, principal, 'read')) ids.add(m.id);
  }
  return ids;
}

/** `body` with only the entries of `visible` model ids. Undefined: not an answer of `shape`. */
export function keepModelIds(body: unknown, shape: ModelIdShape, visible: ReadonlySet<string>): { body: unknown; removed: number } | undefined {
  let removed = 0;
  const ids = (list: unknown): string[] | undefined => {
    if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) return undefined;
    const kept = (list as string[]).filter((id) => visible.has(id));
    removed += list.length - kept.length;
    return kept;
  };
  const counts = (m: unknown): Obj | undefined => {
    if (!isObj(m)) return undefined;
    const kept = Object.fromEntries(Object.entries(m).filter(([id]) => visible.has(id)));
    removed += Object.keys(m).length - Object.keys(kept).length;
    return kept;
  };
  if (shape === 'ids') {
    const kept = ids(body);
    return kept && { body: kept, removed };
  }
  if (!isObj(body)) return undefined;
  if (shape === 'usage') {
    const kept = ids(body.model_ids);
    return kept && { body: { ...body, model_ids: kept }, removed };
  }
  if (shape === 'models' || shape === 'entries') {
    const list = body[shape];
    if (!Array.isArray(list) || !list.every((e) => isObj(e) && typeof e.model_id === 'string')) return undefined;
    const kept = (list as Obj[]).filter((e) => visible.has(e.model_id as string));
    return { body: { ...body, [shape]: kept }, removed: list.length - kept.length };
  }
  // daily
  if (!Array.isArray(body.data)) return undefined;
  const data: Obj[] = [];
  for (const day of body.data) {
    if (!isObj(day)) return undefined;
    const models = counts(day.models);
    if (!models) return undefined;
    const out: Obj = { ...day, models };
    if (day.previous !== undefined && day.previous !== null) {
      if (!isObj(day.previous)) return undefined;
      const previous = counts(day.previous.models);
      if (!previous) return undefined;
      out.previous = { ...day.previous, models: previous };
    }
    data.push(out);
  }
  return { body: { ...body, data }, removed };
}
