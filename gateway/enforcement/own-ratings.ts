// An admin's own ratings, kept in the gateway and brought up to date on every use: what the ratings
// list, its ids and the leaderboard's tags are answered from (policies/ratings.ts orders them).
// Reading them all from Open WebUI for every request would cost seconds: the numbers, and when they
// are read page by page or from the export, in docs/design/own-records.md, "Why copies are kept".
import type { Calls } from '../upstream/calls.js';
import { ratingKeys, RATINGS_PAGE, type RatingKeys } from '../../policies/ratings.js';
import { FileFilterError } from './file-stream-filter.js';
import { KeptCopies, restOfPages, type CopySource } from './kept-copies.js';
import { UpstreamError } from '../upstream/proxy.js';
import { filteredAnswer, readRecords } from './stream-reads.js';

type Headers = Record<string, string | string[] | undefined>;

/** One rating: its keys and its record's bytes (a FeedbackUserResponse, as /feedbacks/user writes it). */
export interface OwnRating extends RatingKeys {
  bytes: Buffer;
}

/** Ratings kept over every caller (about 1 KB each). */
export const RATINGS_KEPT = 40_000;
/** A copy not used for this long is dropped. */
const KEPT_FOR_MS = 60 * 60_000;
/** Pages read at once when a copy is read page by page. */
const PAGES_AT_ONCE = 4;
/**
 * A copy brought up to date this recently is used as it is, unless the admin rated through this
 * gateway since: reading the newest page costs Open WebUI more than the leaderboard itself (a sort
 * of all the admin's ratings); a rating made through another instance shows within this time.
 */
export const RATINGS_QUIET_MS = 30_000;

export class OwnRatings {
  private readonly copies: KeptCopies<OwnRating>;

  constructor(private readonly calls: Calls) {
    const source: CopySource<OwnRating> = {
      pageSize: RATINGS_PAGE,
      quietMs: RATINGS_QUIET_MS,
      page: (n, callerId, headers) => this.page(n, callerId, headers),
      readAll: (first, callerId, headers) => this.readAll(first, callerId, headers),
    };
    this.copies = new KeptCopies(source, RATINGS_KEPT, KEPT_FOR_MS);
  }

  /** Every rating of the caller, up to date as of this call. */
  ratings(callerId: string, headers: Headers): Promise<OwnRating[]> {
    return this.copies.records(callerId, headers);
  }

  /** The caller rated, changed or deleted a rating through this gateway. */
  changed(callerId: string): void {
    this.copies.changed(callerId);
  }

  clear(): void {
    this.copies.clear();
  }

  /** One page of the caller's own ratings, each checked to be a rating of theirs. */
  private async page(page: number, callerId: string, headers: Headers): Promise<{ items: OwnRating[]; total: number }> {
    const items: OwnRating[] = [];
    const { total } = await readRecords(
      this.calls,
      `/api/v1/evaluations/feedbacks/user?page=${page}`,
      headers,
      (record, bytes) => {
        const keys = ratingKeys(record);
        if (!keys || keys.userId !== callerId) throw new FileFilterError('an item is not a rating of the caller');
        items.push({ ...keys, bytes: Buffer.from(bytes) });
      },
      'list',
    );
    return { items, total };
  }

  private async readAll(first: { items: OwnRating[]; total: number }, callerId: string, headers: Headers): Promise<{ items: OwnRating[]; total: number }> {
    const everyone = first.total > 0 ? await this.everyonesCount(headers) : 0;
    if (first.total * first.total <= 200 * everyone || first.items.length === 0)
      return restOfPages(first, RATINGS_PAGE, PAGES_AT_ONCE, (n) => this.page(n, callerId, headers));
    // the rater as /feedbacks/user names them (every one of these ratings is theirs)
    const rater = (JSON.parse(first.items[0]!.bytes.toString('utf8')) as { user?: unknown }).user;
    const items: OwnRating[] = [];
    // the caller's records told by their user_id as bytes; only theirs are parsed
    const { up } = await filteredAnswer(this.calls, 'array', '/api/v1/evaluations/feedbacks/all/export', headers, callerId, {
      out: {
        record: (bytes) => {
          const record = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
          const keys = ratingKeys(record);
          if (!keys) throw new FileFilterError('an item of the export is not a rating');
          const { id, user_id, version, type, data, meta, created_at, updated_at } = record;
          items.push({ ...keys, bytes: Buffer.from(JSON.stringify({ id, user_id, version, type, data, meta, created_at, updated_at, user: rater })) });
        },
      },
    });
    if (up.status !== 200) throw new UpstreamError('bad-body', `the ratings export answered ${up.status}`);
    return { items, total: items.length };
  }

  /** How many ratings every user made (the total of Open WebUI's own ratings list). */
  private async everyonesCount(headers: Headers): Promise<number> {
    const { total } = await readRecords(this.calls, '/api/v1/evaluations/feedbacks/list?page=1', headers, () => {}, 'list');
    if (!Number.isSafeInteger(total)) throw new UpstreamError('bad-body', 'the ratings list has no total');
    return total;
  }
}
