// What the streamed file filter (file-stream-filter.ts) answers, and the records it is made of: each
// record of the items array judged as policies/file-scoping.ts judges it (a file has a string
// `user_id` and a string `id`; keepOwn keeps the caller's), the kept ones held as ranges of the
// upstream's own chunks until the whole body was checked, then copied once into one buffer.
import { isUtf8 } from 'node:buffer';
import { isAscii, same } from './json-bytes.js';

export type FileAnswerShape =
  /** Open WebUI's GET /api/v1/files/: `{"items": [record...], "total": N}` */
  | 'list'
  /** GET /api/v1/files/search: `[record...]` */
  | 'array';

export interface FilteredFiles {
  /** The answer's JSON: `{"items":[own...],"total":N}` or `[own...]`. */
  body: Buffer;
  kept: number;
  /** Records of other users left out. */
  removed: number;
  /** The upstream's `total` (list only). */
  total: number;
}

export class FileFilterError extends Error {}

const LIST_HEAD = Buffer.from('{"items":[');
const ARRAY_HEAD = Buffer.from('[');
const ARRAY_TAIL = Buffer.from(']');

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

  constructor(private readonly callerId: string) {
    this.callerBytes = Buffer.from(callerId);
  }

  /** Forget every record: a later items array replaces an earlier one (the last wins, as in JSON.parse). */
  clear(): void {
    this.bufs = [];
    this.starts = [];
    this.ends = [];
    this.bytes = 0;
    this.kept = 0;
    this.removed = 0;
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

  /** The record ends with its '}' at byte `i`: kept or left out. False when it is not a file. */
  end(buf: Buffer, i: number): boolean {
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

  private keep(rec: Buffer, start: number, end: number): void {
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
  }

  /** The answer of this shape; `total` already checked (a whole number >= 0 for a list). */
  answer(shape: FileAnswerShape, total: number | undefined): FilteredFiles {
    const head = shape === 'list' ? LIST_HEAD : ARRAY_HEAD;
    const tail = shape === 'list' ? Buffer.from(`],"total":${JSON.stringify(total)}}`) : ARRAY_TAIL;
    const n = this.bufs.length;
    let body = Buffer.allocUnsafe(head.length + this.bytes + Math.max(0, n - 1) + tail.length);
    let at = head.copy(body, 0);
    for (let k = 0; k < n; k++) {
      if (k > 0) body[at++] = 0x2c;
      at += this.bufs[k]!.copy(body, at, this.starts[k], this.ends[k]);
    }
    tail.copy(body, at);
    // Invalid UTF-8 inside kept strings reads as U+FFFD, as the whole-document parse reads it.
    if (!isUtf8(body)) body = Buffer.from(body.toString('utf8'));
    return { body, kept: this.kept, removed: this.removed, total: total ?? 0 };
  }
}
