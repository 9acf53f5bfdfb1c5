// Spec rules A3 to A5 held by the gateway itself: may an admin (bypass off) reach an object of
// Open WebUI? Pure functions over the upstream's JSON answers; the gateway asks, this decides.
//
// Open WebUI 0.12.4's shapes (models/*.py): an object carries its owner as `user_id` (models as
// `info.user_id` in /api/models, note list items as `user.id`), its grants as `access_grants`
// ([{principal_type: 'user'|'group', principal_id: id or '*', permission: 'read'|'write'}]; the
// arena model keeps them in `info.meta.access_grants`), channels of type dm/group their members
// as `user_ids`. An object with neither owner nor grants is reachable by nobody here (fail closed):
// the arena model without grants and base models without a workspace entry are hidden (A4, A5).

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

/** Does one grant give `who` the permission? A write grant also lets read. */
function grants(grant: unknown, who: Principal, permission: Permission): boolean {
  if (!isObj(grant)) return false;
  const p = grant.permission;
  if (!(p === permission || (permission === 'read' && p === 'write'))) return false;
  if (grant.principal_type === 'user') return grant.principal_id === who.userId || grant.principal_id === '*';
  if (grant.principal_type === 'group') return typeof grant.principal_id === 'string' && who.groupIds.has(grant.principal_id);
  return false;
}

/** May `who` reach this object with `permission`: owner, a user or group grant, or a member of a dm/group channel. */
export function mayReach(item: unknown, who: Principal, permission: Permission): boolean {
  if (!isObj(item) || !who.userId) return false;
  if (ownerOf(item) === who.userId) return true;
  if (permission === 'owner') return false;
  if (grantsOf(item).some((g) => grants(g, who, permission))) return true;
  // members of a direct or group channel (ChannelFullResponse.user_ids)
  return Array.isArray(item.user_ids) && item.user_ids.includes(who.userId);
}

export interface FilteredList {
  body: unknown;
  removed: number;
}

/**
 * Keep only the items `who` may read. Shapes of 0.12.4's list answers: a bare array, `{items,
 * total}` (paged lists: `total` is lowered by what this page lost), `{data: [...]}` (/api/models).
 * Undefined: not a list this understands (the gateway then answers 502, never the raw body).
 */
export function filterList(body: unknown, who: Principal): FilteredList | undefined {
  const keep = (items: unknown[]) => items.filter((i) => mayReach(i, who, 'read'));
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
