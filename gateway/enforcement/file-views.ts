// Carries out the file decisions of policies/admin-scoping.ts against the upstream: the list, search
// and count hold only the caller's own files, at a cost that grows with the caller's own files only
// (docs/design/own-records.md), and an admin reading or deleting another user's file is audited (A7
// lets it happen; the platform wants to know).
import type { Calls } from '../upstream/calls.js';
import type { ServerResponse } from 'node:http';
import type { FilesView } from '../../policies/admin-scoping.js';
import { listPage, listPageNumber, SEARCH_BATCH, servesOwnFileRoutes, windowsOf, type ListKey } from '../../policies/file-scoping.js';
import type { ReleaseStatus } from '../../policies/upstream-release.js';
import { FileFilterError, wellFormed, type FileAnswerShape, type FilterOptions, type RecordRule } from './file-stream-filter.js';
import { filteredAnswer } from './stream-reads.js';
import { UpstreamError, type UpstreamResponse } from '../upstream/proxy.js';
import { callJson, errorDetail, FileCountAnswer, FileOwnerAnswer } from '../upstream/json.js';
import { answerUncheckable, sendJson, sendJsonBody } from '../http/respond.js';
import type { Observability } from '../observability/observability.js';
import { TtlCache } from '../cache/cache.js';

const NO_MATCH = 'No files found matching the pattern.';
/** How long a caller who was sent other users' files has their pages rebuilt without asking first. */
const DRIFT_MEMO_MS = 60_000;
const MAX_CALLERS = 20_000;
/**
 * A rebuilt page whose files changed between its two reads is read again this often; then the last
 * reading is answered: every record on it is the caller's own, only as current as their own writes.
 */
const REBUILD_TRIES = 3;

type Headers = Record<string, string | string[] | undefined>;

/** Where the caller's own files are read: the owner-scoped routes, or the all-users search kept to theirs. */
interface OwnFilesSource {
  /** the search route (an array of records, created_at descending) */
  search: string;
  /** whether its answer holds only the caller's files */
  scoped: boolean;
}

export class FileViews {
  private readonly drifted = new TtlCache<string, true>(MAX_CALLERS, DRIFT_MEMO_MS);
  /** Until when an admin's answers are rebuilt at once: Open WebUI gave an admin other users' files (its own bypass is on for every admin). */
  private adminsDriftedUntil = 0;

  constructor(
    private readonly calls: Calls,
    private readonly obs: Observability,
    /** the Open WebUI release behind the gateway (gateway/upstream/release.ts) */
    private readonly release: () => ReleaseStatus,
    /** the most bytes one rewritten answer keeps (REWRITE_MAX_BYTES) */
    private readonly maxKeptBytes = Infinity,
  ) {}

  /**
   * Answer a list, search or count request with the caller's own files only.
   * `search` is the canonical query string (with `?`), `callerId` the upstream user id.
   */
  async serveOwn(res: ServerResponse, view: FilesView, search: string, headers: Headers, caller: { id: string; admin: boolean }): Promise<void> {
    try {
      const params = new URLSearchParams(search);
      const source = this.source();
      const callerId = caller.id;
      // The view the policy judged, fetched at the upstream's own route: `/API/v1/Files/` or
      // `/api/v1/files` (no slash), which the policy also filters, would reach the upstream's SPA
      // fallback or its slash redirect instead, and fail closed as a 502 for a client's spelling.
      if (view === 'list') return await this.list(res, params, headers, caller, source);
      if (view === 'search') return await (source.scoped ? this.searchOwn(res, params, headers, callerId) : this.searchAll(res, params, headers, caller));
      return await (source.scoped ? this.countOwn(res, headers) : this.countAll(res, headers, caller, source));
    } catch (err) {
      answerUncheckable(res, err, this.obs, 'rewritten file route', { view });
    }
  }

  private source(): OwnFilesSource {
    const status = this.release();
    const version = status.state === 'supported' || status.state === 'unsupported' ? status.version : undefined;
    return servesOwnFileRoutes(version) ? { search: '/api/v1/files/user/search', scoped: true } : { search: '/api/v1/files/search', scoped: false };
  }

  // ---- list

  private async list(res: ServerResponse, params: URLSearchParams, headers: Headers, caller: { id: string; admin: boolean }, source: OwnFilesSource) {
    const callerId = caller.id;
    const pageValue = last(params, 'page');
    const page = listPageNumber(pageValue);
    // a page Open WebUI would refuse is its 422 (asked, not guessed); a caller just sent other
    // users' files is answered from their own at once
    if (page === undefined || !this.rebuildAtOnce(caller)) {
      // An admin's page that holds only their files may still count everyone's (Open WebUI's own
      // bypass on): its total is checked against their own count where the release has one.
      const [{ up, out }, own] = await Promise.all([
        this.filtered('list', '/api/v1/files/' + qs(params), headers, callerId),
        caller.admin && source.scoped ? callJson(this.calls, FileCountAnswer, 'GET', '/api/v1/files/user/count', headers) : undefined,
      ]);
      if (up.status !== 200) return passError(res, up);
      if (own && own.json === undefined) return passError(res, own);
      if (out!.removed === 0 && (own === undefined || own.json === out!.total)) return sendRewrittenBody(res, 200, out!.body);
      this.drift('list', out!.removed, caller);
      if (page === undefined) throw new UpstreamError('bad-body', `page ${JSON.stringify(pageValue)} was taken by the upstream but is not one`);
    }
    const content = last(params, 'content');
    for (let attempt = 1; ; attempt++) {
      const keys = await this.ownKeys(headers, callerId, source);
      const onPage = listPage(keys, page);
      const records = await this.recordsAt(onPage, content, headers, callerId, source);
      if (records.kind === 'error') return passError(res, records.up);
      // the files changed between the two reads (the caller writing meanwhile): read them again
      if (records.kind === 'ok' || attempt >= REBUILD_TRIES) return sendRewrittenBody(res, 200, listBody(records.bytes, keys.length));
    }
  }

  /** Every own file's place in the list and in the search order (0-based), read 1,000 at a time without the text. */
  private async ownKeys(headers: Headers, callerId: string, source: OwnFilesSource): Promise<Array<ListKey & { at: number }>> {
    const keys: Array<ListKey & { at: number }> = [];
    let at = 0;
    for (let skip = 0; ; skip += SEARCH_BATCH) {
      const query = new URLSearchParams({ filename: '*', content: 'false', skip: String(skip), limit: String(SEARCH_BATCH) });
      let seen = 0;
      const { up } = await this.filtered('array', source.search + qs(query), headers, callerId, {
        rule: fileRule((file) => {
          if (file.user_id === callerId) keys.push({ id: file.id, updatedAt: typeof file.updated_at === 'number' ? file.updated_at : null, at });
          at++;
          seen++;
        }),
      });
      // the all-users search answers 404 when a batch past the end is empty
      if (up.status === 404 && !source.scoped) return keys;
      if (up.status !== 200) throw new UpstreamError('bad-body', `${source.search} answered ${up.status} while the list was rebuilt`);
      if (seen < SEARCH_BATCH) return keys;
    }
  }

  /** The records of `onPage` as the list answers them (with or without their text, as asked), in its order. */
  private async recordsAt(
    onPage: ReadonlyArray<ListKey & { at: number }>,
    content: string | undefined,
    headers: Headers,
    callerId: string,
    source: OwnFilesSource,
  ): Promise<{ kind: 'ok' | 'changed'; bytes: Buffer[] } | { kind: 'error'; up: UpstreamResponse }> {
    const wanted = new Set(onPage.map((k) => k.id));
    const got = new Map<string, Buffer>();
    for (const w of windowsOf(onPage.map((k) => k.at))) {
      const query = new URLSearchParams({ filename: '*', skip: String(w.skip), limit: String(w.limit) });
      // the list's text by default; /user/search's default is without it
      query.set('content', content ?? 'true');
      const { up } = await this.filtered('array', source.search + qs(query), headers, callerId, {
        rule: fileRule((file, bytes) => {
          if (file.user_id === callerId && wanted.has(file.id)) got.set(file.id, Buffer.from(bytes));
        }),
      });
      if (up.status === 422) return { kind: 'error', up };
      if (up.status !== 200 && !(up.status === 404 && !source.scoped))
        throw new UpstreamError('bad-body', `${source.search} answered ${up.status} while the list was rebuilt`);
    }
    const bytes = onPage.flatMap((k) => got.get(k.id) ?? []);
    return { kind: got.size === wanted.size ? 'ok' : 'changed', bytes };
  }

  // ---- search

  /** /files/search answered from the caller's own search: the same query, Open WebUI's defaults of /search, its 404 for none. */
  private async searchOwn(res: ServerResponse, params: URLSearchParams, headers: Headers, callerId: string) {
    // /search requires a filename; /user/search would take '*' for none
    if (!params.has('filename'))
      return sendRewritten(res, 422, { detail: [{ type: 'missing', loc: ['query', 'filename'], msg: 'Field required', input: null }] });
    const query = new URLSearchParams(params);
    if (!query.has('content')) query.set('content', 'true');
    if (!query.has('limit')) query.set('limit', '100');
    const { up, out } = await this.filtered('array', '/api/v1/files/user/search' + qs(query), headers, callerId);
    if (up.status !== 200) return passError(res, up);
    if (out!.removed > 0) this.drift('search', out!.removed, { id: callerId, admin: false });
    return out!.kept ? sendRewrittenBody(res, 200, out!.body) : sendRewritten(res, 404, { detail: NO_MATCH });
  }

  /** The all-users search (a release without /files/user/search), kept to the caller's. */
  private async searchAll(res: ServerResponse, params: URLSearchParams, headers: Headers, caller: { id: string; admin: boolean }) {
    const callerId = caller.id;
    if (!this.rebuildAtOnce(caller)) {
      const first = await this.filtered('array', '/api/v1/files/search' + qs(params), headers, callerId);
      if (first.up.status === 404) return sendRewritten(res, 404, { detail: NO_MATCH });
      if (first.up.status !== 200) return passError(res, first.up);
      if (first.out!.removed === 0) return sendRewrittenBody(res, 200, first.out!.body);
      this.drift('search', first.out!.removed, caller);
    }
    // skip and limit redone over the caller's own matches, read as the search streams: values
    // Open WebUI would refuse are its 422 (asked above), never read as a slice from the end
    const skip = wholeNumber(last(params, 'skip'), 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = wholeNumber(last(params, 'limit'), 100, 1, SEARCH_BATCH);
    if (skip === undefined || limit === undefined) return sendRewritten(res, 422, { detail: 'skip must be a whole number >= 0 and limit one from 1 to 1000' });
    const kept: Buffer[] = [];
    let own = 0;
    for (let offset = 0; own < skip + limit; offset += SEARCH_BATCH) {
      const query = new URLSearchParams(params);
      query.set('skip', String(offset));
      query.set('limit', String(SEARCH_BATCH));
      let seen = 0;
      const { up } = await this.filtered('array', '/api/v1/files/search' + qs(query), headers, callerId, {
        rule: fileRule((file, bytes) => {
          seen++;
          if (file.user_id !== callerId) return;
          if (own >= skip && own < skip + limit) kept.push(Buffer.from(bytes));
          own++;
        }),
      });
      if (up.status === 404) break;
      if (up.status !== 200) return passError(res, up);
      if (seen < SEARCH_BATCH) break;
    }
    return kept.length ? sendRewrittenBody(res, 200, arrayBody(kept)) : sendRewritten(res, 404, { detail: NO_MATCH });
  }

  // ---- count

  private async countOwn(res: ServerResponse, headers: Headers) {
    const up = await callJson(this.calls, FileCountAnswer, 'GET', '/api/v1/files/user/count', headers);
    if (up.json === undefined) return passError(res, up);
    return sendRewritten(res, 200, up.json);
  }

  /** The count of a release without /files/user/count: Open WebUI's own when its first page shows only the caller's files. */
  private async countAll(res: ServerResponse, headers: Headers, caller: { id: string; admin: boolean }, source: OwnFilesSource) {
    const callerId = caller.id;
    if (!this.rebuildAtOnce(caller)) {
      const [countRes, firstPage] = await Promise.all([
        callJson(this.calls, FileCountAnswer, 'GET', '/api/v1/files/count', headers),
        this.filtered('list', '/api/v1/files/?page=1&content=false', headers, callerId),
      ]);
      if (countRes.json === undefined) return passError(res, countRes);
      if (firstPage.up.status !== 200) return passError(res, firstPage.up);
      if (firstPage.out!.removed === 0 && firstPage.out!.total === countRes.json) return sendRewritten(res, 200, countRes.json);
      this.drift('count', firstPage.out!.removed, caller);
    }
    return sendRewritten(res, 200, (await this.ownKeys(headers, callerId, source)).length);
  }

  // ----

  /** One upstream answer read through the streamed filter (the caller's own records, or `options.rule`'s). */
  private filtered(shape: FileAnswerShape, pathAndQuery: string, headers: Headers, callerId: string, options: FilterOptions = {}) {
    return filteredAnswer(this.calls, shape, pathAndQuery, headers, callerId, { maxKeptBytes: this.maxKeptBytes, ...options });
  }

  /** Was this caller (or, for an admin, any admin) sent other users' files a moment ago? */
  private rebuildAtOnce(caller: { id: string; admin: boolean }): boolean {
    return this.drifted.get(caller.id) === true || (caller.admin && Date.now() < this.adminsDriftedUntil);
  }

  private drift(view: FilesView, removed: number, caller: { id: string; admin: boolean }) {
    this.drifted.set(caller.id, true);
    if (caller.admin) this.adminsDriftedUntil = Date.now() + DRIFT_MEMO_MS;
    this.obs.metrics.driftEvents.inc({ kind: `files-${view}` });
    this.obs.log.error(
      { view, removed, callerId: caller.id },
      'policy drift: the chat front-end returned (or counted) files of other users although CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=false; set BYPASS_ADMIN_ACCESS_CONTROL=false upstream',
    );
  }

  /**
   * Rule A7 audit: find the owner of the file an admin touches. For reads it runs beside the
   * stream; a delete waits for it, because afterwards the record is gone.
   */
  async ownerOf(fileId: string, headers: Headers): Promise<string | undefined> {
    if (fileId === '*') return '*';
    try {
      return (await callJson(this.calls, FileOwnerAnswer, 'GET', `/api/v1/files/${fileId}`, headers)).json?.user_id;
    } catch {
      return undefined;
    }
  }
}

/** A rule that reads each file of an answer (kept by none): what is not a file refuses the answer. */
function fileRule(read: (file: { id: string; user_id: string; updated_at?: unknown }, bytes: Buffer) => void): RecordRule {
  return (record, bytes) => {
    if (typeof record.id !== 'string' || typeof record.user_id !== 'string') throw new FileFilterError('an element is not a file');
    read(record as { id: string; user_id: string }, bytes);
    return false;
  };
}

/** The value Starlette reads for a query key: its last. */
function last(params: URLSearchParams, key: string): string | undefined {
  const all = params.getAll(key);
  return all.length ? all[all.length - 1] : undefined;
}

/** A query value as FastAPI reads an int with bounds: absent gives `fallback`, anything else out of range undefined. */
function wholeNumber(raw: string | undefined, fallback: number, min: number, max: number): number | undefined {
  if (raw === undefined) return fallback;
  if (!/^\s*[+-]?\d+\s*$/.test(raw)) return undefined;
  const n = Number(raw.trim());
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : undefined;
}

function qs(params: URLSearchParams): string {
  const s = params.toString();
  return s ? `?${s}` : '';
}

/** `[record,...]` of records as the upstream wrote them. */
function arrayBody(records: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [Buffer.from('[')];
  records.forEach((r, i) => parts.push(...(i ? [Buffer.from(','), r] : [r])));
  parts.push(Buffer.from(']'));
  return wellFormed(Buffer.concat(parts));
}

function listBody(records: readonly Buffer[], total: number): Buffer {
  return Buffer.concat([Buffer.from('{"items":'), arrayBody(records), Buffer.from(`,"total":${total}}`)]);
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
