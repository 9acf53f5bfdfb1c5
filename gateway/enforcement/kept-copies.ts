// A copy of a caller's own records (their ratings, their chats' usage lines), kept in the gateway and
// brought up to date on every use: what the admin views built of a caller's own data are answered
// from, when reading it all from Open WebUI for every request would cost seconds
// (docs/design/own-records.md, "Why copies are kept").
import { SingleFlight, TtlCache } from '../cache/cache.js';

type Headers = Record<string, string | string[] | undefined>;

/** A kept record: its id, its last change, and whatever the view needs of it. */
export interface KeptRecord {
  id: string;
  updatedAt: number;
}

export interface CopySource<R extends KeptRecord> {
  /** records a page of the owner-scoped route holds */
  pageSize: number;
  /** one page of the caller's records, newest change first, and how many Open WebUI counts */
  page(page: number, callerId: string, headers: Headers): Promise<{ items: R[]; total: number }>;
  /** every record of the caller (the first page given), and how many Open WebUI counts */
  readAll(first: { items: R[]; total: number }, callerId: string, headers: Headers): Promise<{ items: R[]; total: number }>;
  /** a copy older than this is read whole again (what the route's order does not show) */
  freshForMs?: number;
  /**
   * a copy brought up to date this recently is used as it is, unless the caller changed their
   * records through this gateway since (`changed`): another instance's writes show within it
   */
  quietMs?: number;
}

interface Copy<R> {
  records: Map<string, R>;
  /** the newest `updated_at` held */
  newest: number;
  /** what Open WebUI counts but lists no record for (a chat without messages has no usage line) */
  unlisted: number;
  readAt: number;
  /** when it was last brought up to date; undefined: the caller changed their records since */
  checkedAt: number | undefined;
}

/**
 * The copies, read from the owner-scoped route Open WebUI lists the records at, newest change first
 * (policies/ratings.ts readOn). The first use reads the records whole (the source says how: page by
 * page, or a faster way); every later use reads from the first page on until it meets a record no
 * newer than the copy's newest change, and reads all again when Open WebUI counts another number than
 * the copy holds (a record was deleted) or when the copy is older than the source allows (what
 * changes without a newer `updated_at`: a chat's tags). Bounded by `maxKept` records over every
 * caller (least recently used out first); a caller with more is read whole on each use. One read per
 * caller at a time.
 */
export class KeptCopies<R extends KeptRecord> {
  private readonly copies: TtlCache<string, Copy<R>>;
  private readonly reading = new SingleFlight<R[]>();
  /** how many writes `changed` has been told of, over every caller: a read under way when one comes is not counted as quiet */
  private writes = 0;

  constructor(
    private readonly source: CopySource<R>,
    maxKept: number,
    keptForMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.copies = new TtlCache(maxKept, keptForMs, undefined, (c) => c.records.size + 1);
  }

  /** Every record of the caller, up to date as of this call. */
  records(callerId: string, headers: Headers): Promise<R[]> {
    return this.reading.run(callerId, async () => {
      const kept = this.copies.get(callerId);
      const now = this.now();
      if (kept?.checkedAt !== undefined && this.source.quietMs !== undefined && now - kept.checkedAt < this.source.quietMs) return [...kept.records.values()];
      const fresh = kept && (this.source.freshForMs === undefined || now - kept.readAt < this.source.freshForMs);
      const writesBefore = this.writes;
      const copy = (fresh && (await this.update(kept, callerId, headers))) || (await this.readAll(callerId, headers));
      this.copies.set(callerId, { ...copy, checkedAt: this.writes === writesBefore ? now : undefined });
      return [...copy.records.values()];
    });
  }

  /** The caller changed their records (a write of theirs went through): the next use brings the copy up to date. */
  changed(callerId: string): void {
    this.writes++;
    const kept = this.copies.get(callerId);
    if (kept) kept.checkedAt = undefined;
  }

  clear(): void {
    this.copies.clear();
  }

  /** The copy with what changed since it was read; undefined when records went (read it all again). */
  private async update(kept: Copy<R>, callerId: string, headers: Headers): Promise<Copy<R> | undefined> {
    const records = new Map(kept.records);
    let newest = kept.newest;
    for (let page = 1; ; page++) {
      const read = await this.source.page(page, callerId, headers);
      for (const r of read.items) {
        records.set(r.id, r);
        newest = Math.max(newest, r.updatedAt);
      }
      // every record made or changed since is on the pages read until one older than the copy (a
      // page may list fewer records than it holds: those Open WebUI counts but does not list)
      const last = read.items[read.items.length - 1];
      if (page * this.source.pageSize < read.total && (!last || last.updatedAt >= kept.newest)) continue;
      return records.size + kept.unlisted === read.total ? { ...kept, records, newest } : undefined;
    }
  }

  private async readAll(callerId: string, headers: Headers): Promise<Copy<R>> {
    const first = await this.source.page(1, callerId, headers);
    const all = await this.source.readAll(first, callerId, headers);
    const records = new Map(all.items.map((r) => [r.id, r]));
    let newest = 0;
    for (const r of records.values()) newest = Math.max(newest, r.updatedAt);
    return { records, newest, unlisted: Math.max(0, all.total - records.size), readAt: this.now(), checkedAt: undefined };
  }
}

/** The pages after the first, `atOnce` at a time, their records in one list (for CopySource.readAll). */
export async function restOfPages<R>(
  first: { items: R[]; total: number },
  pageSize: number,
  atOnce: number,
  page: (n: number) => Promise<{ items: R[]; total: number }>,
): Promise<{ items: R[]; total: number }> {
  const pages = Math.ceil(first.total / pageSize);
  const items = [...first.items];
  let next = 2;
  await Promise.all(
    Array.from({ length: atOnce }, async () => {
      while (next <= pages) items.push(...(await page(next++)).items);
    }),
  );
  return { items, total: first.total };
}
