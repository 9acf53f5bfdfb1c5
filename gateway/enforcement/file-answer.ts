// What the streamed filter (file-stream-filter.ts) answers, and the records it is made of: each
// record judged by its rule (by owner, or parsed), the kept ones copied as the upstream wrote them,
// held until the whole body was checked or written out as judged. Why both ways:
// docs/design/files-stream-filter.md.
import { isUtf8 } from 'node:buffer';
import { isAscii, same } from './json-bytes.js';

export type FileAnswerShape =
  /** Open WebUI's GET /api/v1/files/: `{"items": [record...], "total": N}` */
  | 'list'
  /** GET /api/v1/files/search, an export: `[record...]` */
  | 'array'
  /** a listing: `[record...]`, `{"items": [record...], "total"?: N}` or `{"data": [record...]}` */
  | 'any';

export interface FilteredFiles {
  /** The answer's JSON: `{"items":[kept...],"total":N}`, `{"data":[kept...]}` or `[kept...]` (empty when streamed). */
  body: Buffer;
  kept: number;
  /** Records left out. */
  removed: number;
  /** The upstream's `total` (0 when it has none). */
  total: number;
  /** Elements of the list that were not objects (left out, counted in `removed`). */
  others: number;
  /** The answer is a page: `{"items": [...], "total": N}`. */
  paged: boolean;
}

export class FileFilterError extends Error {}

/** Where kept records go when they are handed out as judged. */
export interface KeptOutput {
  /** one kept record's bytes (well-formed UTF-8), in order; `first`: no record came before it */
  record(bytes: Buffer, first: boolean): void;
}

/** A rule over a parsed record (and its bytes, as the upstream wrote them): keep it? It may throw to refuse the answer. */
export type RecordRule = (record: Record<string, unknown>, bytes: Buffer) => boolean;

/** How a list's records are judged and handed out (the default: the caller's own files, held until the end). */
export interface FilterOptions {
  /** parse each record and keep it when this says so (instead of by owner) */
  rule?: RecordRule;
  /** write kept records out as they are judged (an `array` answer only) */
  out?: KeptOutput;
  /** the most bytes a held answer may keep */
  maxKeptBytes?: number;
  /** an answer's `total` lowered by the records left out (a listing's page) */
  totalLessRemoved?: boolean;
}

/** The container an object answer keeps its records in, and its total. */
interface ListFrame {
  key: 'items' | 'data';
  total: number | undefined;
}

const ARRAY_HEAD = Buffer.from('[');
const ARRAY_TAIL = Buffer.from(']');

/** Invalid UTF-8 inside kept strings reads as U+FFFD, as the whole-document parse reads it. */
export function wellFormed(bytes: Buffer): Buffer {
  return isUtf8(bytes) ? bytes : Buffer.from(bytes.toString('utf8'));
}

/**
 * The keys of a list answer's top object: the one that holds its list (`items`; for a listing also
 * `data`, as /api/models answers) and its `total`; the last of each wins, as in JSON.parse.
 */
export class TopKeys {
  key: 'items' | 'data' | undefined;
  total: number | undefined;
  private totalSeen = false;

  constructor(private readonly dataToo: boolean) {}

  /** What a top key (its text; escapes decoded, or latin1 bytes without any) names. */
  nameOf(key: string): 'items' | 'data' | 'total' | undefined {
    if (key === 'items' || key === 'total') return key;
    return this.dataToo && key === 'data' ? 'data' : undefined;
  }

  /** The list is under `key`: false when another key held it already (two lists are no answer this reads). */
  list(key: 'items' | 'data' | 'total'): boolean {
    if (key === 'total' || (this.key !== undefined && this.key !== key)) return false;
    this.key = key;
    return true;
  }

  totalStarts(): void {
    this.totalSeen = true;
    this.total = undefined;
  }

  /** The frame FileRecords.finish checks: `needsTotal` for a file list. */
  frame(needsTotal: boolean): { key: 'items' | 'data'; total: number | undefined; totalSeen: boolean; needsTotal: boolean } {
    return { key: this.key ?? 'items', total: this.total, totalSeen: this.totalSeen, needsTotal };
  }
}

/** The records of one items array: the one being read, and the kept ones as (buffer, start, end). */
export class FileRecords {
  // the record being read: its start in the current chunk, and what earlier chunks held of it
  private recStart = 0;
  private recParts: Buffer[] = [];
  // whether its user_id and id are strings (the last of duplicate keys wins, as in JSON.parse)
  private uidString = false;
  private uidMine = false;
  private idString = false;
  private readonly callerBytes: Buffer;
  private bufs: Buffer[] = [];
  private starts: number[] = [];
  private ends: number[] = [];
  private bytes = 0;
  private kept = 0;
  private removed = 0;
  private others = 0;
  /** The scanner reads `user_id` and `id` of each record for this judge (the owner rule). */
  readonly readsKeys: boolean;

  private readonly rule: RecordRule | undefined;
  private readonly out: KeptOutput | undefined;
  private readonly maxKeptBytes: number;
  private readonly totalLessRemoved: boolean;

  /** `callerId`: keep this owner's records (the scanner reads their keys), unless `options.rule` judges them. */
  constructor(
    private readonly callerId: string,
    options: FilterOptions = {},
  ) {
    this.callerBytes = Buffer.from(callerId);
    ({ rule: this.rule, out: this.out } = options);
    this.maxKeptBytes = options.maxKeptBytes ?? Infinity;
    this.totalLessRemoved = options.totalLessRemoved === true;
    this.readsKeys = this.rule === undefined;
  }

  /** Forget every record: a later items array replaces an earlier one (the last wins, as in JSON.parse). */
  clear(): void {
    if (this.out && this.kept + this.removed > 0) throw new FileFilterError('a second list in one answer');
    this.bufs = [];
    this.starts = [];
    this.ends = [];
    this.bytes = 0;
    this.kept = 0;
    this.removed = 0;
    this.others = 0;
  }

  /** A record begins with its '{' at byte `i` of the current chunk. */
  begin(i: number): void {
    this.recStart = i;
    if (this.recParts.length) this.recParts.length = 0;
    this.uidString = false;
    this.idString = false;
  }

  /** The current chunk ends inside the record. */
  carry(buf: Buffer): void {
    this.recParts.push(buf.subarray(this.recStart));
    this.recStart = 0;
  }

  /** Its user_id is the string buf[from, to), without escapes. */
  userIdBytes(buf: Buffer, from: number, to: number): void {
    this.uidString = true;
    // equal bytes are the same id; other bytes can only decode to it through U+FFFD (invalid UTF-8)
    this.uidMine = same(buf, from, to, this.callerBytes) || (!isAscii(buf, from, to) && buf.toString('utf8', from, to) === this.callerId);
  }

  /** Its user_id is the string `text` (decoded). */
  userIdText(text: string): void {
    this.uidString = true;
    this.uidMine = text === this.callerId;
  }

  /** Its user_id is not a string. */
  userIdOther(): void {
    this.uidString = false;
  }

  /** Its id begins with the byte `first`: a string or not. */
  idValue(first: number): void {
    this.idString = first === 0x22;
  }

  /** An element of the list that is not an object: left out when a rule judges (false: not a record of this list). */
  other(): boolean {
    if (this.rule === undefined) return false;
    this.removed++;
    this.others++;
    return true;
  }

  /** The record ends with its '}' at byte `i`: kept or left out. False when it is not a record of this list. */
  end(buf: Buffer, i: number): boolean {
    if (this.rule !== undefined) return this.judged(buf, i);
    const file = this.uidString && this.idString;
    if (file && this.uidMine) {
      if (this.recParts.length === 0) this.keep(buf, this.recStart, i + 1);
      else {
        // it ran over chunks: its parts copied into one buffer, once
        this.recParts.push(buf.subarray(this.recStart, i + 1));
        const rec = Buffer.concat(this.recParts);
        this.keep(rec, 0, rec.length);
      }
      this.kept++;
    } else if (file) this.removed++;
    // earlier chunks are not kept alive by a record that is done with
    if (this.recParts.length) this.recParts.length = 0;
    return file;
  }

  /** A record judged by the rule over its parsed bytes (valid JSON: the scanner checked them). */
  private judged(buf: Buffer, i: number): boolean {
    let rec = buf;
    let start = this.recStart;
    if (this.recParts.length) {
      this.recParts.push(buf.subarray(this.recStart, i + 1));
      rec = Buffer.concat(this.recParts);
      this.recParts.length = 0;
      start = 0;
    }
    const end = rec === buf ? i + 1 : rec.length;
    const value = JSON.parse(rec.toString('utf8', start, end)) as Record<string, unknown>;
    if (this.rule!(value, rec.subarray(start, end))) {
      this.keep(rec, start, end);
      this.kept++;
    } else this.removed++;
    return true;
  }

  private keep(rec: Buffer, start: number, end: number): void {
    if (this.out) return this.out.record(wellFormed(rec.subarray(start, end)), this.kept === 0);
    const last = this.bufs.length - 1;
    if (last >= 0 && this.bufs[last] === rec && this.ends[last] === start - 1 && rec[start - 1] === 0x2c) {
      // the record right after the last kept one, a ',' between: one range, copied at once
      this.bytes += end - this.ends[last]!;
      this.ends[last] = end;
    } else {
      this.bufs.push(rec);
      this.starts.push(start);
      this.ends.push(end);
      this.bytes += end - start;
    }
    if (this.bytes > this.maxKeptBytes) throw new FileFilterError(`more than ${this.maxKeptBytes} bytes kept`);
  }

  /**
   * The answer once the whole body was read: a bare array (`frame` undefined) or an object whose
   * list is under `frame.key`, with its total checked (required for a file list).
   */
  finish(frame: { key: 'items' | 'data'; total: number | undefined; totalSeen: boolean; needsTotal: boolean } | undefined): FilteredFiles {
    if (this.out) return { body: Buffer.alloc(0), kept: this.kept, removed: this.removed, total: 0, others: this.others, paged: false };
    if (!frame) return this.answer(undefined);
    const whole = frame.total !== undefined && Number.isInteger(frame.total) && frame.total >= 0;
    if (frame.needsTotal ? !whole : frame.totalSeen && !whole) throw new FileFilterError('total is not a whole number >= 0');
    return this.answer({ key: frame.key, total: frame.totalSeen ? frame.total : undefined });
  }

  /** The answer: a bare array (`frame` undefined) or an object with the kept records under `frame.key`. */
  private answer(frame: ListFrame | undefined): FilteredFiles {
    const total = frame?.total === undefined ? undefined : this.totalLessRemoved ? Math.max(0, frame.total - this.removed) : frame.total;
    const head = frame ? Buffer.from(`{"${frame.key}":[`) : ARRAY_HEAD;
    const tail = frame ? Buffer.from(total === undefined ? ']}' : `],"total":${JSON.stringify(total)}}`) : ARRAY_TAIL;
    const n = this.bufs.length;
    const body = Buffer.allocUnsafe(head.length + this.bytes + Math.max(0, n - 1) + tail.length);
    let at = head.copy(body, 0);
    for (let k = 0; k < n; k++) {
      if (k > 0) body[at++] = 0x2c;
      at += this.bufs[k]!.copy(body, at, this.starts[k], this.ends[k]);
    }
    tail.copy(body, at);
    return {
      body: wellFormed(body),
      kept: this.kept,
      removed: this.removed,
      total: frame?.total ?? 0,
      others: this.others,
      paged: frame?.key === 'items' && frame.total !== undefined,
    };
  }
}
