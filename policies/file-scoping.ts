// Rules A1/A2 applied to response bodies: only the caller's own files reach the client.
// Pure functions over parsed JSON. A body that is not the expected shape is an error
// (the gateway answers 502), never passed through unfiltered.

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
