// Rules A1/A2 applied to response bodies: only the caller's own files reach the client.
// Pure functions over parsed JSON. A body that is not the expected shape is an error
// (the gateway answers 502), never passed through unfiltered.
import { CHECKED_RELEASES } from './open-webui-releases.js';
import { byCodePoint } from './sqlite-order.js';

export interface FileRecord {
  id: string;
  user_id: string;
  [k: string]: unknown;
}

export interface FileList {
  items: FileRecord[];
  total: number;
}

/** Open WebUI's page size for GET /api/v1/files/. */
export const LIST_PAGE_SIZE = 50;

const isRecord = (v: unknown): v is FileRecord =>
  typeof v === 'object' && v !== null && typeof (v as FileRecord).user_id === 'string' && typeof (v as FileRecord).id === 'string';

export function parseFileArray(body: unknown): FileRecord[] | undefined {
  return Array.isArray(body) && body.every(isRecord) ? body : undefined;
}

export function parseFileList(body: unknown): FileList | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { items, total } = body as { items?: unknown; total?: unknown };
  const parsed = parseFileArray(items);
  return parsed && typeof total === 'number' && Number.isInteger(total) && total >= 0 ? { items: parsed, total } : undefined;
}

export function parseCount(body: unknown): number | undefined {
  return typeof body === 'number' && Number.isInteger(body) && body >= 0 ? body : undefined;
}

/** Split records into the caller's own and the number of foreign ones removed. */
export function keepOwn(records: FileRecord[], callerId: string): { own: FileRecord[]; removed: number } {
  const own = records.filter((r) => r.user_id === callerId);
  return { own, removed: records.length - own.length };
}

/** A page of the caller's own files, numbered as Open WebUI numbers them (page >= 1). */
export function pageOf(own: FileRecord[], page: number): FileList {
  const start = (page - 1) * LIST_PAGE_SIZE;
  return { items: own.slice(start, start + LIST_PAGE_SIZE), total: own.length };
}

/** Open WebUI's own `page` parsing: an integer >= 1, default 1; anything else is the upstream's 422. */
export function parsePage(value: string | null): number | undefined {
  if (value === null) return 1;
  return /^[0-9]+$/.test(value) && Number(value) >= 1 ? Number(value) : undefined;
}

// ---- the caller's own files, at any volume
//
// The answers above are built from the caller's own records only, asked where Open WebUI keeps
// them apart: 0.12.4's /files/user/search and /files/user/count (every release the route table
// was checked against that serves them), the list rebuilt from them when Open WebUI returns other
// users' files (its own BYPASS_ADMIN_ACCESS_CONTROL on). A release without them (0.12.3, 0.11.4) has no
// owner-scoped way in: its all-users search is read as it streams and only the caller's records
// are kept.

/** Open WebUI's largest search batch (routers/files.py: `limit` le=1000). */
export const SEARCH_BATCH = 1000;

/** Does this release of Open WebUI serve /files/user/search and /files/user/count? */
export function servesOwnFileRoutes(version: string | undefined): boolean {
  // a release the table was checked against says; any other is read as the table's own (0.12.4):
  // should it lack them, their answers are not lists of files and the request fails closed
  const checked = CHECKED_RELEASES.find((r) => r.version === version);
  return !checked?.absentRows.includes('GET /api/v1/files/user/search');
}

/** Where a file sits in Open WebUI's list: `ORDER BY updated_at DESC, id DESC` (models/files.py get_file_list). */
export interface ListKey {
  id: string;
  /** null for a legacy file without one (SQLite sorts it last in a descending order) */
  updatedAt: number | null;
}

/** The list's order, as SQLite sorts it: updated_at descending (null last), then id descending, byte by byte. */
export function listOrder(a: ListKey, b: ListKey): number {
  if (a.updatedAt !== b.updatedAt) {
    if (a.updatedAt === null) return 1;
    if (b.updatedAt === null) return -1;
    return b.updatedAt - a.updatedAt;
  }
  return byCodePoint(b.id, a.id);
}

/** A page of the list given every own file's key: the keys on it, in the list's order. */
export function listPage<K extends ListKey>(keys: readonly K[], page: number): K[] {
  const start = (page - 1) * LIST_PAGE_SIZE;
  return [...keys].sort(listOrder).slice(start, start + LIST_PAGE_SIZE);
}

/**
 * Fetch windows (skip, limit) covering `positions` of the search order, each within one search
 * batch: near positions share a window (reading a few records more costs less than another request).
 */
export function windowsOf(positions: readonly number[], gap = 20): Array<{ skip: number; limit: number }> {
  const sorted = [...new Set(positions)].sort((a, b) => a - b);
  const out: Array<{ skip: number; limit: number }> = [];
  for (const p of sorted) {
    const last = out[out.length - 1];
    if (last && p - (last.skip + last.limit) <= gap && p + 1 - last.skip <= SEARCH_BATCH) last.limit = p + 1 - last.skip;
    else out.push({ skip: p, limit: 1 });
  }
  return out;
}

/** A page number as Open WebUI's list takes it (an int >= 1; surrounding spaces and a '+' as pydantic reads them). */
export function listPageNumber(value: string | undefined): number | undefined {
  if (value === undefined) return 1;
  const m = /^\s*\+?(\d+)\s*$/.exec(value);
  const n = m ? Number(m[1]) : NaN;
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}
