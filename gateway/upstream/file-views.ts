// Carries out the file decisions of policies/admin-scoping.ts against the upstream:
//   - filter-own-files: the list, search and count answers hold only the caller's own files,
//     whatever the upstream returned. When the upstream returned foreign files it is not set as
//     the platform expects (drift): that is logged and counted, and the gateway rebuilds the
//     caller's view by walking the upstream's list, so pages, totals and counts agree.
//   - audit-file-access: an admin reading or deleting a file that is not theirs is written to
//     the audit stream (rule A7 lets it happen; the platform wants to know).
// Rewritten answers are gateway-made: uncompressed upstream fetch, no conditional or range
// headers, no upstream ETag, `Cache-Control: private, no-store`. Bad JSON fails closed (502).
// The list and search answers are filtered as their bytes arrive (gateway/upstream/file-stream-filter.ts):
// kept records are copied as the upstream wrote them, never parsed and serialized again;
// nothing is sent before the whole body was checked. The drift walks (rare) still parse pages whole.
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { FilesView } from '../../policies/admin-scoping.js';
import { keepOwn, pageOf, parseCount, parseFileArray, parseFileList, parsePage, LIST_PAGE_SIZE, type FileRecord } from '../../policies/file-scoping.js';
import { FileFilterError, FileStreamFilter, type FileAnswerShape, type FilteredFiles } from './file-stream-filter.js';
import { UpstreamError, type Upstream, type UpstreamResponse } from './proxy.js';
import { callJson, errorDetail, FileArrayAnswer, FileCountAnswer, FileListAnswer, FileOwnerAnswer } from './json.js';
import { answerUncheckable, sendJson, sendJsonBody } from '../http/respond.js';
import type { Observability } from '../observability/observability.js';

/** Request headers a rewritten route may pass upstream (no conditionals, no ranges, no encodings). */
const REWRITE_KEEP = new Set([
  'authorization',
  'cookie',
  'x-api-key',
  'user-agent',
  'x-request-id',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'accept-language',
]);

export function rewriteHeaders(headers: IncomingHttpHeaders, trusted: ReadonlySet<string>): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = { accept: 'application/json' };
  for (const [k, v] of Object.entries(headers)) if (REWRITE_KEEP.has(k) || trusted.has(k)) out[k] = v;
  return out;
}

/**
 * Upstream pages one rebuilt view may fetch, one after the other (a list page holds 50 files, a
 * search batch 1,000): 2,000 own files of a list, 40,000 search matches. Past it the answer is a 502
 * rather than a guess: one request must not cost thousands of upstream calls (docs/policies.md, "Files").
 */
export const MAX_WALK_PAGES = 40;
const NO_MATCH = 'No files found matching the pattern.';

export class FileViews {
  constructor(
    private readonly upstream: Upstream,
    private readonly obs: Observability,
  ) {}

  /**
   * Answer a list, search or count request with the caller's own files only.
   * `search` is the canonical query string (with `?`), `callerId` the upstream user id.
   */
  async serveOwn(
    res: ServerResponse,
    view: FilesView,
    path: string,
    search: string,
    headers: Record<string, string | string[] | undefined>,
    callerId: string,
  ): Promise<void> {
    try {
      const params = new URLSearchParams(search);
      // The view the policy judged, fetched at the upstream's own route: `/API/v1/Files/` or
      // `/api/v1/files` (no slash), which the policy also filters, would reach the upstream's SPA
      // fallback or its slash redirect instead, and fail closed as a 502 for a client's spelling.
      if (view === 'list') return await this.list(res, '/api/v1/files/', params, headers, callerId);
      if (view === 'search') return await this.search(res, '/api/v1/files/search', params, headers, callerId);
      return await this.count(res, headers, callerId);
    } catch (err) {
      answerUncheckable(res, err, this.obs, 'rewritten file route', { view });
    }
  }

  private async list(res: ServerResponse, path: string, params: URLSearchParams, headers: Record<string, string | string[] | undefined>, callerId: string) {
    const filter = new FileStreamFilter('list', callerId);
    const up = await this.upstream.call('GET', path + qs(params), headers, undefined, (status) => (status === 200 ? filter : undefined));
    if (up.status !== 200) return passError(res, up);
    const { body, removed } = filtered(filter, 'list');
    // Nothing foreign on this page: the upstream scopes as the platform expects.
    if (removed === 0) return sendRewrittenBody(res, 200, body);
    this.drift('list', removed, callerId);
    const all = await this.walkOwn(path, params, headers, callerId);
    return sendRewritten(res, 200, pageOf(all, parsePage(params.get('page')) ?? 1));
  }

  private async search(res: ServerResponse, path: string, params: URLSearchParams, headers: Record<string, string | string[] | undefined>, callerId: string) {
    const filter = new FileStreamFilter('array', callerId);
    const up = await this.upstream.call('GET', path + qs(params), headers, undefined, (status) => (status === 200 ? filter : undefined));
    if (up.status === 404) return sendRewritten(res, 404, { detail: NO_MATCH });
    if (up.status !== 200) return passError(res, up);
    const { body, removed } = filtered(filter, 'array');
    if (removed === 0) return sendRewrittenBody(res, 200, body);
    this.drift('search', removed, callerId);
    // Redo skip/limit over the caller's own matches only. Values the upstream would refuse are
    // refused here too (its 422), never read as a slice from the end.
    const skip = wholeNumber(params.get('skip'), 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = wholeNumber(params.get('limit'), 100, 1, 1000);
    if (skip === undefined || limit === undefined) return sendRewritten(res, 422, { detail: 'skip must be a whole number >= 0 and limit one from 1 to 1000' });
    const walk = new URLSearchParams(params);
    const mine: FileRecord[] = [];
    let searchDone = false;
    for (let offset = 0, page = 0; page < MAX_WALK_PAGES; page++, offset += 1000) {
      walk.set('skip', String(offset));
      walk.set('limit', '1000');
      const next = await callJson(this.upstream, FileArrayAnswer, 'GET', path + qs(walk), headers);
      if (next.status === 404) {
        searchDone = true;
        break;
      }
      if (next.json === undefined) return passError(res, next);
      const batch = parseFileArray(next.json);
      if (!batch) throw new UpstreamError('bad-body', 'file search answer is not an array of files');
      mine.push(...keepOwn(batch, callerId).own);
      if (batch.length < 1000) {
        searchDone = true;
        break;
      }
    }
    if (!searchDone) throw new UpstreamError('too-large', `more than ${MAX_WALK_PAGES} pages of search results`);
    const window = mine.slice(skip, skip + limit);
    return window.length ? sendRewritten(res, 200, window) : sendRewritten(res, 404, { detail: NO_MATCH });
  }

  /** The count is what the caller can list: the upstream's own count when it agrees with the list. */
  private async count(res: ServerResponse, headers: Record<string, string | string[] | undefined>, callerId: string) {
    const filter = new FileStreamFilter('list', callerId);
    const [countRes, firstPage] = await Promise.all([
      callJson(this.upstream, FileCountAnswer, 'GET', '/api/v1/files/count', headers),
      this.upstream.call('GET', '/api/v1/files/?page=1&content=false', headers, undefined, (status) => (status === 200 ? filter : undefined)),
    ]);
    if (countRes.status !== 200) return passError(res, countRes);
    if (firstPage.status !== 200) return passError(res, firstPage);
    const count = countRes.json === undefined ? undefined : parseCount(countRes.json);
    if (count === undefined) throw new UpstreamError('bad-body', 'file count has the wrong shape');
    const { removed, total } = filtered(filter, 'list');
    if (removed === 0 && total === count) {
      return sendRewritten(res, 200, count);
    }
    this.drift('count', removed, callerId);
    const all = await this.walkOwn('/api/v1/files/', new URLSearchParams({ content: 'false' }), headers, callerId);
    return sendRewritten(res, 200, all.length);
  }

  /** Every own file the upstream list yields, newest first, as the upstream orders them. */
  private async walkOwn(
    path: string,
    params: URLSearchParams,
    headers: Record<string, string | string[] | undefined>,
    callerId: string,
  ): Promise<FileRecord[]> {
    const walk = new URLSearchParams(params);
    const own: FileRecord[] = [];
    for (let page = 1; page <= MAX_WALK_PAGES; page++) {
      walk.set('page', String(page));
      const up = await callJson(this.upstream, FileListAnswer, 'GET', path + qs(walk), headers);
      if (up.json === undefined) throw new UpstreamError('bad-body', `file list page ${page} answered ${up.status}`);
      const list = parseFileList(up.json);
      if (!list) throw new UpstreamError('bad-body', 'file list is not {items, total}');
      own.push(...keepOwn(list.items, callerId).own);
      if (list.items.length < LIST_PAGE_SIZE || page * LIST_PAGE_SIZE >= list.total) return own;
    }
    throw new UpstreamError('too-large', `more than ${MAX_WALK_PAGES} pages of files`);
  }

  private drift(view: FilesView, removed: number, callerId: string) {
    if (removed > 0) {
      this.obs.metrics.driftEvents.inc({ kind: `files-${view}` });
      this.obs.log.error(
        { view, removed, callerId },
        'policy drift: the chat front-end returned files of other users although CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=false; set BYPASS_ADMIN_ACCESS_CONTROL=false upstream',
      );
    }
  }

  /**
   * Rule A7 audit: find the owner of the file an admin touches. For reads it runs beside the
   * stream; a delete waits for it, because afterwards the record is gone.
   */
  async ownerOf(fileId: string, headers: Record<string, string | string[] | undefined>): Promise<string | undefined> {
    if (fileId === '*') return '*';
    try {
      return (await callJson(this.upstream, FileOwnerAnswer, 'GET', `/api/v1/files/${fileId}`, headers)).json?.user_id;
    } catch {
      return undefined;
    }
  }
}

/** A query value as FastAPI reads an int with bounds: absent gives `fallback`, anything else out of range undefined. */
function wholeNumber(raw: string | null, fallback: number, min: number, max: number): number | undefined {
  if (raw === null) return fallback;
  if (!/^\s*[+-]?\d+\s*$/.test(raw)) return undefined;
  const n = Number(raw.trim());
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : undefined;
}

function qs(params: URLSearchParams): string {
  const s = params.toString();
  return s ? `?${s}` : '';
}

/** An upstream error answer carries no file data: pass its status and `{detail}` on. */
function passError(res: ServerResponse, up: UpstreamResponse): void {
  // a non-JSON error page is replaced by the generic detail
  const told = errorDetail(up.body);
  const detail = told === undefined ? 'Upstream error' : told;
  const status = up.status >= 400 && up.status < 600 ? up.status : 502;
  sendRewritten(res, status, { detail });
}

function sendRewritten(res: ServerResponse, status: number, body: unknown): void {
  sendJson(res, status, body, { vary: 'Cookie, Authorization' });
}

function sendRewrittenBody(res: ServerResponse, status: number, json: Buffer): void {
  sendJsonBody(res, status, json, { vary: 'Cookie, Authorization' });
}

/** The streamed filter's answer once the upstream body has ended; a body it refused is a 502. */
function filtered(filter: FileStreamFilter, shape: FileAnswerShape): FilteredFiles {
  try {
    return filter.end();
  } catch (err) {
    if (err instanceof FileFilterError)
      throw new UpstreamError('bad-body', shape === 'list' ? `file list refused: ${err.message}` : `file search answer refused: ${err.message}`);
    throw err;
  }
}
