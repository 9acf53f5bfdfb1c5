// The listings an admin reads (policies/admin-scoping.ts filter-listing) that cannot be answered by
// filtering one upstream page (gateway/enforcement/object-views.ts serveListing filters the rest):
//   - the ratings list, a page of the admin's own ratings (gateway/enforcement/own-ratings.ts keeps
//     them; policies/ratings.ts orders and pages them as Open WebUI does every user's);
//   - a paged list whose page held what the admin may not read (Open WebUI's own bypass on): rebuilt
//     from every page as they stream, keeping only the page asked for, `total` the admin's count;
//   - an export too large to hold: written out as its records are judged, cut off if it fails.
import type { Calls } from '../upstream/calls.js';
import type { ServerResponse } from 'node:http';
import { mayReach, type Principal } from '../../policies/resource-access.js';
import { ratingsPage, ratingsPageNumber } from '../../policies/ratings.js';
import { FileStreamFilter, type RecordRule } from './file-stream-filter.js';
import { UpstreamError, type BodySink, type UpstreamResponse } from '../upstream/proxy.js';
import { errorDetail } from '../upstream/json.js';
import type { OwnRating } from './own-ratings.js';
import { filteredAnswer } from './stream-reads.js';
import { sendJson, sendJsonBody, startJsonStream } from '../http/respond.js';
import type { Observability } from '../observability/observability.js';

type Headers = Record<string, string | string[] | undefined>;
const VARY = { vary: 'Cookie, Authorization' };
const COMMA = Buffer.from(',');

/** The rule of a listing: items `principal` owns or holds a grant on (A3 to A5). */
export function readableBy(principal: Principal): RecordRule {
  return (record) => mayReach(record, principal, 'read');
}

/** A page of /feedbacks/list made of the caller's own ratings; a `page` Open WebUI would refuse is its 422. */
export function serveRatingsPage(res: ServerResponse, search: string, ratings: readonly OwnRating[], modelId: string | undefined): void {
  const q = new URLSearchParams(search);
  const pageValue = last(q, 'page');
  const page = ratingsPageNumber(pageValue);
  if (page === undefined) {
    const msg = 'Input should be a valid integer, unable to parse string as an integer';
    return sendJson(res, 422, { detail: [{ type: 'int_parsing', loc: ['query', 'page'], msg, input: pageValue }] }, VARY);
  }
  const { items, total } = ratingsPage(ratings, { orderBy: last(q, 'order_by'), direction: last(q, 'direction'), modelId, page });
  sendJsonBody(
    res,
    200,
    pageBody(
      items.map((r) => r.bytes),
      total,
    ),
    VARY,
  );
}

/**
 * A paged list rebuilt of the items `readable` keeps, from every page as it streams: the page asked
 * for (`list.search`'s `page`) and their count as `total`.
 */
export async function rebuildPage(
  calls: Calls,
  res: ServerResponse,
  list: { path: string; search: string; pageSize: number; maxKeptBytes: number },
  headers: Headers,
  callerId: string,
  readable: RecordRule,
): Promise<void> {
  const q = new URLSearchParams(list.search);
  const page = ratingsPageNumber(last(q, 'page'));
  if (page === undefined) throw new UpstreamError('bad-body', 'a page the upstream took is not one');
  const from = (page - 1) * list.pageSize;
  const kept: Buffer[] = [];
  let count = 0;
  for (let upstreamPage = 1; ; upstreamPage++) {
    q.set('page', String(upstreamPage));
    let seen = 0;
    const { up, out } = await filteredAnswer(calls, 'any', `${list.path}?${q}`, headers, callerId, {
      maxKeptBytes: list.maxKeptBytes,
      rule: (record, bytes) => {
        seen++;
        if (!readable(record, bytes)) return false;
        if (count >= from && count < from + list.pageSize) kept.push(Buffer.from(bytes));
        count++;
        return false;
      },
    });
    if (up.status !== 200) return passError(res, up);
    if (seen < list.pageSize || upstreamPage * list.pageSize >= out!.total) break;
  }
  sendJsonBody(res, 200, pageBody(kept, count), VARY);
}

/**
 * A list too large to hold (an export of every user's ratings, each with its chat): the records of
 * `principal`'s own written out as they are judged, by their `user_id` read as bytes (a rating has no
 * grants: the admin may read their own only), never parsed. An answer that turns out bad after the
 * first bytes went out is cut off (the client sees an incomplete answer, never a complete one).
 */
export async function streamListing(
  calls: Calls,
  obs: Pick<Observability, 'metrics' | 'log'>,
  res: ServerResponse,
  pathAndQuery: string,
  headers: Headers,
  principal: Principal,
  audit: (removed: number) => void,
): Promise<void> {
  let out: ReturnType<typeof startJsonStream> | undefined;
  let filter: FileStreamFilter | undefined;
  const sink = (status: number): BodySink | undefined => {
    if (status !== 200) return undefined;
    const writer = startJsonStream(res, 200, VARY);
    writer.write(Buffer.from('['));
    const f = new FileStreamFilter('array', principal.userId, { out: { record: (bytes, first) => (first || writer.write(COMMA), writer.write(bytes)) } });
    [out, filter] = [writer, f];
    return { write: (chunk) => (f.write(chunk), writer.waitForRoom()) };
  };
  try {
    const up = await calls.call('GET', pathAndQuery, headers, undefined, sink);
    if (!out || !filter) return passError(res, up);
    const counts = filter.end();
    out.write(Buffer.from(']'));
    out.end();
    if (counts.removed > 0) audit(counts.removed);
  } catch (err) {
    if (!out) throw err;
    obs.metrics.upstreamErrors.inc({ kind: err instanceof UpstreamError ? err.kind : 'bad-body' });
    obs.log.error({ err: { message: (err as Error).message } }, 'streamed list route failed closed: the answer was cut off');
    out.abort();
  }
}

/** The value Starlette reads for a query key: its last. */
function last(params: URLSearchParams, key: string): string | undefined {
  const all = params.getAll(key);
  return all.length ? all[all.length - 1] : undefined;
}

/** `{"items":[...],"total":N}` of records as the upstream wrote them. */
function pageBody(records: readonly Buffer[], total: number): Buffer {
  return Buffer.concat([Buffer.from('{"items":['), ...records.flatMap((r, i) => (i ? [Buffer.from(','), r] : [r])), Buffer.from(`],"total":${total}}`)]);
}

/** An upstream error answer carries no content: its status and `{detail}` go on. */
export function passError(res: ServerResponse, up: Pick<UpstreamResponse, 'status' | 'body'>): void {
  const told = errorDetail(up.body);
  const detail = typeof told === 'string' ? told : 'Upstream error';
  sendJson(res, up.status >= 400 && up.status < 600 ? up.status : 502, { detail });
}
