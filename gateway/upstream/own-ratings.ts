// An admin's own ratings, kept in the gateway and brought up to date on every use: what the ratings
// list, its ids and the leaderboard's tags are answered from (policies/ratings.ts orders them).
//
// Open WebUI's only owner-scoped way to them is GET /evaluations/feedbacks/user: 30 a page, newest
// change first, each page costing Open WebUI a sort of every one of the caller's ratings with their
// snapshots (measured at 2,000 ratings: 75 to 250 ms a page). Reading them all for every request
// would cost seconds; reading what changed costs one page. So a copy is kept per caller: the first
// use reads every page (4 at a time), every later use reads from the first page on until it meets a
// rating no newer than the copy's newest change, and reads all again when Open WebUI counts fewer
// than the copy holds (a rating was deleted). The records are kept as Open WebUI wrote them.
//
// Bounded by RATINGS_KEPT ratings over every caller (least recently used out first); a caller with
// more is read whole on each use. Any answer that is not a page of the caller's own ratings fails
// closed (UpstreamError), and nothing of a copy being read is used.
import { ratingKeys, readOn, RATINGS_PAGE, type RatingKeys } from '../../policies/ratings.js';
import { SingleFlight, TtlCache } from '../cache/cache.js';
import { FileFilterError } from './file-stream-filter.js';
import type { Upstream } from './proxy.js';
import { readRecords } from './stream-reads.js';

type Headers = Record<string, string | string[] | undefined>;

/** One rating: its keys and its record's bytes (a FeedbackUserResponse, as /feedbacks/user wrote it). */
export interface OwnRating extends RatingKeys {
  bytes: Buffer;
}

interface Copy {
  ratings: Map<string, OwnRating>;
  /** the newest `updated_at` held */
  newest: number;
}

/** Ratings kept over every caller (about 1 KB each). */
export const RATINGS_KEPT = 40_000;
/** A copy not used for this long is dropped. */
const KEPT_FOR_MS = 60 * 60_000;
/** Pages read at once when a copy is read whole. */
const PAGES_AT_ONCE = 4;

export class OwnRatings {
  private readonly copies = new TtlCache<string, Copy>(RATINGS_KEPT, KEPT_FOR_MS, undefined, (c) => c.ratings.size + 1);
  private readonly syncing = new SingleFlight<OwnRating[]>();

  constructor(private readonly upstream: Upstream) {}

  /** Every rating of the caller, up to date as of this call. */
  ratings(callerId: string, headers: Headers): Promise<OwnRating[]> {
    return this.syncing.run(callerId, async () => {
      const kept = this.copies.get(callerId);
      const copy = (kept && (await this.update(kept, callerId, headers))) || (await this.readAll(callerId, headers));
      this.copies.set(callerId, copy);
      return [...copy.ratings.values()];
    });
  }

  clear(): void {
    this.copies.clear();
  }

  /** The copy with what changed since it was read; undefined when ratings were deleted (read it all again). */
  private async update(kept: Copy, callerId: string, headers: Headers): Promise<Copy | undefined> {
    const ratings = new Map(kept.ratings);
    let newest = kept.newest;
    let total: number;
    for (let page = 1; ; page++) {
      const read = await this.page(page, callerId, headers);
      total = read.total;
      for (const r of read.items) {
        ratings.set(r.id, r);
        newest = Math.max(newest, r.updatedAt);
      }
      if (!readOn(read.items, kept.newest)) break;
    }
    return ratings.size === total ? { ratings, newest } : undefined;
  }

  private async readAll(callerId: string, headers: Headers): Promise<Copy> {
    const first = await this.page(1, callerId, headers);
    const pages = Math.ceil(first.total / RATINGS_PAGE);
    const ratings = new Map(first.items.map((r) => [r.id, r]));
    let next = 2;
    await Promise.all(
      Array.from({ length: PAGES_AT_ONCE }, async () => {
        while (next <= pages) {
          const read = await this.page(next++, callerId, headers);
          for (const r of read.items) ratings.set(r.id, r);
        }
      }),
    );
    let newest = 0;
    for (const r of ratings.values()) newest = Math.max(newest, r.updatedAt);
    return { ratings, newest };
  }

  /** One page of the caller's own ratings, each checked to be a rating of theirs. */
  private async page(page: number, callerId: string, headers: Headers): Promise<{ items: OwnRating[]; total: number }> {
    const items: OwnRating[] = [];
    const { total } = await readRecords(
      this.upstream,
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
}
