// An admin's own chats as the model overview counts their tags (which models each chat's answers
// name, its tags; GET /api/v1/chats/stats/usage, never the messages), kept in the gateway and brought
// up to date on every use: reading them whole costs Open WebUI a parse of every chat
// (docs/design/own-records.md, "Why copies are kept").
import type { Calls } from '../upstream/calls.js';
import { usageUsedModel } from '../../policies/resource-access.js';
import { FileFilterError } from './file-stream-filter.js';
import { KeptCopies, type CopySource } from './kept-copies.js';
import { readRecords } from './stream-reads.js';

type Headers = Record<string, string | string[] | undefined>;

/** One chat of the caller's: the models its answers name, its tags. */
export interface OwnChat {
  id: string;
  updatedAt: number;
  models: ReadonlySet<string>;
  tags: unknown;
}

/** Chats kept over every caller (a few hundred bytes each). */
const CHATS_KEPT = 200_000;
const KEPT_FOR_MS = 60 * 60_000;
/**
 * A copy this old is read whole again: a chat's tags change without a newer `updated_at`
 * (models/chats.py writes tags to `meta` only), so a tag added to or taken from a chat that did not
 * otherwise change is counted within this time.
 */
export const KEPT_FRESH_MS = 10 * 60_000;
/**
 * A copy brought up to date this recently is used as it is, unless the admin wrote through this
 * gateway since (a chat is written by every message): another instance's chats count within it.
 */
export const CHATS_QUIET_MS = 30_000;
/** Lines of an update's page, and of each page when the copy is read whole. */
const UPDATE_PAGE = 50;
const READ_PAGE = 1_000;

export class OwnChats {
  private readonly copies: KeptCopies<OwnChat>;

  constructor(private readonly calls: Calls) {
    const source: CopySource<OwnChat> = {
      pageSize: UPDATE_PAGE,
      freshForMs: KEPT_FRESH_MS,
      quietMs: CHATS_QUIET_MS,
      page: (n, _callerId, headers) => this.page(UPDATE_PAGE, n, headers),
      readAll: async (_first, _callerId, headers) => {
        const items: OwnChat[] = [];
        for (let n = 1; ; n++) {
          const read = await this.page(READ_PAGE, n, headers);
          items.push(...read.items);
          if (n * READ_PAGE >= read.total) return { items, total: read.total };
        }
      },
    };
    this.copies = new KeptCopies(source, CHATS_KEPT, KEPT_FOR_MS);
  }

  /** Every chat of the caller (those with messages), up to date as of this call. */
  chats(callerId: string, headers: Headers): Promise<OwnChat[]> {
    return this.copies.records(callerId, headers);
  }

  /** The caller wrote through this gateway (a chat, a message, a deletion): the next use brings the copy up to date. */
  changed(callerId: string): void {
    this.copies.changed(callerId);
  }

  clear(): void {
    this.copies.clear();
  }

  /** One page of the caller's usage lines (Open WebUI lists the caller's own only). */
  private async page(perPage: number, page: number, headers: Headers): Promise<{ items: OwnChat[]; total: number }> {
    const items: OwnChat[] = [];
    const { total } = await readRecords(
      this.calls,
      `/api/v1/chats/stats/usage?items_per_page=${perPage}&page=${page}`,
      headers,
      (line) => {
        if (usageUsedModel(line, '') === undefined || typeof line.updated_at !== 'number') throw new FileFilterError('not a usage line of a chat');
        items.push({ id: line.id as string, updatedAt: line.updated_at, models: new Set(Object.keys(line.history_models as object)), tags: line.tags });
      },
      'list',
    );
    return { items, total };
  }
}
