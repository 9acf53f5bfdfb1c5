// A workspace model's id is its name (Open WebUI's editor makes it of the name the owner writes):
// another user's private model is named in Open WebUI 0.12.4's usage answers for admins, counted by
// id across every user's messages and ratings. For an admin while CHATUI_BYPASS_ADMIN_ACCESS_CONTROL
// is false, those answers keep the entries of models the admin may see: a connection's model (GET
// /api/models/base, what the providers serve) or a stored model the admin owns or holds a grant on
// (GET /api/v1/models/all). Every other id (another user's private model, a deleted one, the arena)
// is dropped, its counts with it. Pure functions over the upstream's JSON answers.
//
//   shape     answer                                                     route
//   models    {models: [{model_id, ...}], ...}                           /analytics/models, /analytics/tokens
//   entries   {entries: [{model_id, ...}]}                               /evaluations/leaderboard
//   daily     {data: [{models: {id: n}, previous?: {models: {id: n}}}]}  /analytics/daily
//   ids       [id, ...]                                                  /evaluations/feedbacks/models
//   usage     {model_ids: [id, ...], ...}                                /api/usage
import { mayReach, type Principal } from './resource-access.js';

export type ModelIdShape = 'models' | 'entries' | 'daily' | 'ids' | 'usage';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The model ids `who` may see: the connections' models (`base`, the `data` of GET /api/models/base)
 * and the stored models they may read (`stored`, GET /api/v1/models/all). Undefined: an answer that
 * is not of those shapes.
 */
export function visibleModelIds(base: unknown, stored: unknown, who: Principal): Set<string> | undefined {
  const baseList = isObj(base) ? base.data : undefined;
  if (!Array.isArray(baseList) || !Array.isArray(stored)) return undefined;
  const ids = new Set<string>();
  for (const m of baseList) {
    if (!isObj(m) || typeof m.id !== 'string') return undefined;
    ids.add(m.id);
  }
  for (const m of stored) {
    if (!isObj(m) || typeof m.id !== 'string') return undefined;
    if (mayReach(m, who, 'read')) ids.add(m.id);
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
