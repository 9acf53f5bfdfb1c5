// An admin's own ratings, answered as Open WebUI answers every user's (routers/evaluations.py,
// models/feedbacks.py): the ratings list of the Evaluations page (`/feedbacks/list`, 30 a page, its
// `total`), the ids (`/feedbacks/all/ids`) and the leaderboard's tags, built from the admin's own
// records only (GET /evaluations/feedbacks/user: the caller's own, newest change first). Pure: the
// gateway keeps the records (gateway/enforcement/own-ratings.ts), this orders and pages them.
//
// Open WebUI sorts in SQL; the gateway sorts as SQLite does (its default database): JSON values read
// out of `data` compare NULL first, then numbers, then text (true and false are 1 and 0), and rows
// whose keys are equal come in the order they were stored (here: oldest first, then by id).
import { byCodePoint } from './sqlite-order.js';

/** One page of /feedbacks/list and /feedbacks/user (routers/evaluations.py PAGE_ITEM_COUNT). */
export const RATINGS_PAGE = 30;

/** What a rating is sorted and filtered by (a FeedbackUserResponse of /feedbacks/user). */
export interface RatingKeys {
  id: string;
  userId: string;
  createdAt: number;
  updatedAt: number;
  /** `data.model_id` and `data.rating` as stored (any JSON value, or undefined when absent) */
  modelId: unknown;
  rating: unknown;
  /** `data.tags` */
  tags: unknown;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The keys of a rating record, or undefined when it is not one (the answer is then refused). */
export function ratingKeys(record: unknown): RatingKeys | undefined {
  if (!isObj(record)) return undefined;
  const { id, user_id: userId, created_at: createdAt, updated_at: updatedAt } = record;
  if (typeof id !== 'string' || typeof userId !== 'string' || typeof createdAt !== 'number' || typeof updatedAt !== 'number') return undefined;
  const data = isObj(record.data) ? record.data : {};
  return { id, userId, createdAt, updatedAt, modelId: data.model_id, rating: data.rating, tags: data.tags };
}

/** A JSON value as SQLite's json_extract gives it to ORDER BY: [class, value] (NULL, number, text). */
function sqlValue(v: unknown): [number, number | string] {
  if (v === undefined || v === null) return [0, 0];
  if (typeof v === 'number') return [1, v];
  if (typeof v === 'boolean') return [1, v ? 1 : 0];
  if (typeof v === 'string') return [2, v];
  return [2, JSON.stringify(v)];
}

function compareSql(a: unknown, b: unknown): number {
  const [ca, va] = sqlValue(a);
  const [cb, vb] = sqlValue(b);
  if (ca !== cb) return ca - cb;
  if (typeof va === 'number' && typeof vb === 'number') return va - vb;
  return byCodePoint(String(va), String(vb));
}

/** Rows with equal keys: in the order they were stored (the oldest first). */
const stored = (a: RatingKeys, b: RatingKeys) => a.createdAt - b.createdAt || byCodePoint(a.id, b.id);

export interface RatingsQuery {
  orderBy?: string;
  direction?: string;
  page: number;
  modelId?: string;
}

/**
 * A page of /feedbacks/list made of the caller's own ratings (models/feedbacks.py
 * get_feedback_items): `model_id` an exact match of `data.model_id`; ordered by `username` (the
 * rater: one name here), `model_id`, `rating` or `updated_at`, `asc` or else descending; no
 * order at all when any of the three is given but none of those (stored order); newest created
 * first when none is given. `total` counts the caller's matching ratings.
 */
export function ratingsPage<R extends RatingKeys>(ratings: readonly R[], q: RatingsQuery): { items: R[]; total: number } {
  const matching = q.modelId ? ratings.filter((r) => r.modelId === q.modelId) : [...ratings];
  const filtered = Boolean(q.orderBy || q.direction || q.modelId);
  const dir = q.direction === 'asc' ? 1 : -1;
  let order: (a: R, b: R) => number;
  if (!filtered) order = (a, b) => b.createdAt - a.createdAt || stored(a, b);
  else if (q.orderBy === 'model_id') order = (a, b) => dir * compareSql(a.modelId, b.modelId) || stored(a, b);
  else if (q.orderBy === 'rating') order = (a, b) => dir * compareSql(a.rating, b.rating) || stored(a, b);
  else if (q.orderBy === 'updated_at') order = (a, b) => dir * (a.updatedAt - b.updatedAt) || stored(a, b);
  else order = stored; // `username` (every rating is the caller's) or no order
  matching.sort(order);
  const start = (q.page - 1) * RATINGS_PAGE;
  return { items: matching.slice(start, start + RATINGS_PAGE), total: matching.length };
}

/** /feedbacks/all/ids of the caller's ratings: `updated_at` descending (get_all_feedback_ids). */
export function ratingIds(ratings: readonly RatingKeys[]): Array<{ id: string; user_id: string; created_at: number; updated_at: number }> {
  return [...ratings]
    .sort((a, b) => b.updatedAt - a.updatedAt || stored(a, b))
    .map((r) => ({ id: r.id, user_id: r.userId, created_at: r.createdAt, updated_at: r.updatedAt }));
}

/** A `page` as Open WebUI's `Optional[int]` takes it: undefined when it would refuse it (its 422); below 1 is 1 (max(1, page)). */
export function ratingsPageNumber(value: string | undefined): number | undefined {
  if (value === undefined) return 1;
  const m = /^\s*([+-]?\d+)\s*$/.exec(value);
  const n = m ? Number(m[1]) : NaN;
  return Number.isSafeInteger(n) ? Math.max(1, n) : undefined;
}

/**
 * How to bring a kept copy of the caller's ratings up to date from /feedbacks/user, whose pages
 * come newest change first: read on while a page's last rating changed at or after the newest
 * change kept (`newest`); every rating made or changed since is on those pages. The copy is whole
 * when it then holds as many ratings as Open WebUI counts (`total`); otherwise ratings were deleted
 * and it is read again from the start.
 */
export function readOn(page: readonly RatingKeys[], newest: number): boolean {
  return page.length === RATINGS_PAGE && page[page.length - 1]!.updatedAt >= newest;
}
