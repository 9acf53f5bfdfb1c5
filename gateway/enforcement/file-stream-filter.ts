// A list filtered as its bytes arrive: the JSON checked byte by byte, only its list's records judged
// (file-answer.ts: by `user_id` and `id` read as bytes, or each parsed for a rule over the record),
// kept ones copied as the upstream wrote them; the same answer as JSON.parse (duplicate keys, `\u`
// escapes, invalid UTF-8 as U+FFFD) and a filter (test/unit/file-stream-filter.test.ts). Fail
// closed: a body not JSON of the shape throws FileFilterError at its first bad byte or at end(); a
// held answer leaves only after end(), a written-out one (an export) is cut off by its caller.
import { FileFilterError, FileRecords, TopKeys, type FileAnswerShape, type FilteredFiles, type FilterOptions } from './file-answer.js';
import { LIT_FALSE, LIT_NULL, LIT_TRUE, plainRunEnd, same, wordsOf } from './json-bytes.js';

export { FileFilterError, wellFormed, type FileAnswerShape, type FilteredFiles, type FilterOptions, type KeptOutput, type RecordRule } from './file-answer.js';

// The scanner's states and the byte tests of its loop stay beside the loop: imported, V8 would
// read each through the module's import cell at every use, which costs in a loop this hot (the
// string run's scan, json-bytes.ts plainRunEnd, is called once a string and keeps its own beside it).
const S_VALUE = 0; // a value is expected
const S_ARR_FIRST = 1; // after '[': a value or ']'
const S_OBJ_FIRST = 2; // after '{': a key or '}'
const S_KEY = 3; // after ',' in an object: a key
const S_COLON = 4;
const S_AFTER = 5; // after a value inside a container: ',' or its closer
const S_DONE = 6; // after the top value: whitespace only
const S_STR = 7;
const S_STR_ESC = 8;
const S_STR_U = 9;
const S_N_MINUS = 10; // digits must follow
const S_N_ZERO = 11; // a leading 0: '.', 'e' or the end
const S_N_INT = 12;
const S_N_DOT = 13; // a digit must follow
const S_N_FRAC = 14;
const S_N_E = 15; // a sign or a digit must follow
const S_N_ESIGN = 16; // a digit must follow
const S_N_EXP = 17;
const S_LIT = 18;

// What the next value is, from the key before it.
const R_NONE = 0;
const R_TOP = 1; // a key of the top object that names the list or its total (this.topName)
const R_UID = 3;
const R_ID = 4;

// What the token being read is kept for.
const C_NONE = 0;
const C_KEY = 1;
const C_UID = 2;
const C_TOTAL = 3;

const ARR = 0;
const OBJ = 1;

const UID = Buffer.from('user_id');
const ID = Buffer.from('id');

const isWs = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);

export class FileStreamFilter {
  private st = S_VALUE;
  private readonly stack: number[] = [];
  private strKey = false;
  private strEsc = false;
  private uLeft = 0;
  private lit: Buffer = LIT_NULL;
  private litIdx = 0;
  private role = R_NONE;
  private openItems = false;
  private cap = C_NONE; // the token kept: a key at a depth that matters, a user_id value, the total
  private capStart = 0;
  private capParts: Buffer[] = [];
  private inRecord = false; // inside a record of the items array (what it says: this.records)
  private itemsActive = false; // in the items array (the last one wins, as in JSON.parse)
  private itemsValid = false; // seen, an array, and every element a file
  private readonly records: FileRecords;
  private readonly top: TopKeys;
  private topName: 'items' | 'data' | 'total' | undefined;
  private failed: string | undefined;
  private ended = false;
  /** Depth of the items array itself (its elements are the records): 2 in an object, 1 for a bare array. */
  private itemsDepth: number;
  /** The top value is an object (its keys name the list and its total). */
  private objectTop = false;

  constructor(
    private readonly shape: FileAnswerShape,
    callerId: string,
    options: FilterOptions = {},
  ) {
    this.itemsDepth = shape === 'array' ? 1 : 2;
    if (options.out && shape !== 'array') throw new Error('only a bare array is written out as judged');
    this.records = new FileRecords(callerId, options);
    this.top = new TopKeys(shape === 'any');
  }

  private fail(why: string): never {
    this.failed = why;
    throw new FileFilterError(why);
  }

  /** Scan one chunk. Throws FileFilterError at the first byte that cannot be JSON of the shape. */
  write(buf: Buffer): void {
    if (this.failed) throw new FileFilterError(this.failed);
    if (this.ended) this.fail('write after end');
    const len = buf.length;
    const stack = this.stack;
    let st = this.st;
    let i = 0;
    // The chunk as 32-bit words from its first 4-byte aligned byte (`head`), for the string scan.
    const head = (4 - (buf.byteOffset & 3)) & 3;
    const words = wordsOf(buf, head);
    while (i < len) {
      const c = buf[i]!;
      switch (st) {
        case S_STR: {
          // the hot loop: most of a file list is string bytes
          const j = plainRunEnd(buf, i, head, words);
          if (j === len) {
            i = len;
            continue;
          }
          i = j + 1;
          if (buf[j] === 0x22) {
            st = this.cap !== C_NONE ? this.endString(buf, j) : !this.strKey ? (stack.length === 0 ? S_DONE : S_AFTER) : S_COLON;
            if (st === S_COLON && i < len && buf[i] === 0x3a) {
              // a key and its ':' at once (compact JSON): one turn of the loop saved
              st = S_VALUE;
              i++;
            }
            continue;
          }
          if (buf[j] !== 0x5c) return this.fail('control character in a string');
          this.strEsc = true;
          st = S_STR_ESC;
          continue;
        }
        case S_VALUE:
        case S_ARR_FIRST:
          if (c === 0x22 && this.role === R_NONE && stack.length !== 0 && !(this.itemsActive && !this.inRecord && stack.length === this.itemsDepth)) {
            // a string value nobody needs (most of them): what startValue would do, without the call
            this.strKey = false;
            this.strEsc = false;
            st = S_STR;
            break;
          }
          if (isWs(c)) break;
          if (c === 0x5d && st === S_ARR_FIRST) {
            st = this.close(buf, i, ARR);
            break;
          }
          st = this.startValue(buf, i, c);
          break;
        case S_OBJ_FIRST:
        case S_KEY:
          if (!isWs(c)) st = this.keyByte(buf, i, c, st);
          break;
        case S_AFTER:
          if (!isWs(c)) st = this.afterValue(buf, i, c);
          break;
        case S_N_INT:
        case S_N_FRAC:
        case S_N_EXP:
          if (isDigit(c)) {
            // the rest of the digits without going round the state machine
            i++;
            while (i < len && isDigit(buf[i]!)) i++;
            continue;
          }
        // falls through: after a run of digits
        case S_N_ZERO:
          if (c === 0x2e && (st === S_N_INT || st === S_N_ZERO)) st = S_N_DOT;
          else if ((c === 0x65 || c === 0x45) && st !== S_N_EXP) st = S_N_E;
          else {
            st = this.endNumber(buf, i);
            continue; // this byte belongs to what follows the number
          }
          break;
        default:
          st = this.rareByte(st, c);
      }
      i++;
    }
    this.st = st;
    this.carryOver(buf);
  }

  /**
   * Where a key is expected: its opening quote (in a record only user_id and id are read, at the
   * top the list's and the total's names), or the end of an empty object.
   */
  private keyByte(buf: Buffer, i: number, c: number, st: number): number {
    if (c !== 0x22) {
      if (c === 0x7d && st === S_OBJ_FIRST) return this.close(buf, i, OBJ);
      return this.fail('a key was expected');
    }
    this.strKey = true;
    this.strEsc = false;
    const depth = this.stack.length;
    // a key that starts otherwise is skipped ('\\' may escape any)
    const k = i + 1 < buf.length ? buf[i + 1]! : 0x5c;
    if (this.inRecord ? this.records.readsKeys && depth === this.itemsDepth + 1 && (k === 0x75 || k === 0x69 || k === 0x5c) : this.objectTop && depth === 1) {
      this.cap = C_KEY;
      this.capStart = i;
      if (this.capParts.length) this.capParts.length = 0;
    }
    return S_STR;
  }

  /** After a value inside a container: the next one, or the container's end. */
  private afterValue(buf: Buffer, i: number, c: number): number {
    const top = this.stack[this.stack.length - 1];
    if (c === 0x2c) return top === ARR ? S_VALUE : S_KEY;
    if (c === 0x5d && top === ARR) return this.close(buf, i, ARR);
    if (c === 0x7d && top === OBJ) return this.close(buf, i, OBJ);
    return this.fail("',' or the container's end was expected");
  }

  /** The states a list's bytes seldom meet: a ':' apart from its key, escapes, the start of numbers past their first digit, literals, the end. */
  private rareByte(st: number, c: number): number {
    switch (st) {
      case S_COLON:
        if (isWs(c)) return S_COLON;
        if (c !== 0x3a) return this.fail("':' was expected");
        return S_VALUE;
      case S_STR_ESC:
        if (c === 0x75) {
          this.uLeft = 4;
          return S_STR_U;
        }
        if (c === 0x22 || c === 0x5c || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74) return S_STR;
        return this.fail('bad escape');
      case S_STR_U:
        if (!isHex(c)) return this.fail('bad \\u escape');
        return --this.uLeft === 0 ? S_STR : S_STR_U;
      case S_DONE:
        if (!isWs(c)) return this.fail('bytes after the JSON value');
        return S_DONE;
      case S_N_MINUS:
        if (c === 0x30) return S_N_ZERO;
        if (isDigit(c)) return S_N_INT;
        return this.fail('bad number');
      case S_N_DOT:
      case S_N_ESIGN:
        if (!isDigit(c)) return this.fail('bad number');
        return st === S_N_DOT ? S_N_FRAC : S_N_EXP;
      case S_N_E:
        if (c === 0x2b || c === 0x2d) return S_N_ESIGN;
        if (isDigit(c)) return S_N_EXP;
        return this.fail('bad number');
      case S_LIT:
        if (c !== this.lit[this.litIdx]) return this.fail('bad literal');
        return ++this.litIdx === this.lit.length ? this.endValue() : S_LIT;
    }
    return st;
  }

  /** A token or a record still open at the chunk's end keeps what it has so far. */
  private carryOver(buf: Buffer): void {
    if (this.cap !== C_NONE) {
      this.capParts.push(buf.subarray(this.capStart));
      this.capStart = 0;
    }
    if (this.inRecord) this.records.carry(buf);
  }

  /** The filtered answer, once the whole body was written. Throws FileFilterError if it is not one. */
  end(): FilteredFiles {
    if (this.failed) throw new FileFilterError(this.failed);
    if (this.ended) this.fail('end called twice');
    this.ended = true;
    let st = this.st;
    if (st === S_N_ZERO || st === S_N_INT || st === S_N_FRAC || st === S_N_EXP) st = this.endNumber(Buffer.alloc(0), 0);
    if (st !== S_DONE) this.fail('the body ends inside its JSON value');
    if (!this.itemsValid) this.fail(this.objectTop ? `${this.top.key ?? 'items'} is not an array of records` : 'the answer is not an array of records');
    return this.records.finish(this.objectTop ? this.top.frame(this.shape === 'list') : undefined);
  }

  private startValue(buf: Buffer, i: number, c: number): number {
    const stack = this.stack;
    const depth = stack.length;
    const role = this.role;
    this.role = R_NONE;
    if (depth === 0) {
      // the top value: its shape is known before anything else
      if (this.shape === 'list' && c !== 0x7b) this.fail('the answer is not an object');
      if (this.shape === 'array' && c !== 0x5b) this.fail('the answer is not an array');
      if (c === 0x5b) {
        this.itemsDepth = 1;
        this.itemsValid = true;
        this.openItems = true;
      } else if (c === 0x7b) this.objectTop = true;
      else this.fail('the answer is not a list');
    } else if (this.itemsActive && !this.inRecord && depth === this.itemsDepth) {
      // an element of the items array: a record
      if (c === 0x7b) {
        this.inRecord = true;
        this.records.begin(i);
      } else if (!this.records.other()) {
        if (this.itemsDepth === 1) this.fail('an element is not a record');
        this.itemsValid = false;
      }
    } else if (role !== R_NONE) {
      if (role === R_TOP && this.topName !== 'total') {
        if (!this.top.list(this.topName!)) this.fail('two lists in one answer');
        this.records.clear();
        this.itemsValid = c === 0x5b;
        this.openItems = c === 0x5b;
      } else if (role === R_TOP) {
        this.top.totalStarts();
        if (c === 0x2d || isDigit(c)) this.capture(C_TOTAL, i);
      } else if (role === R_UID) {
        if (c === 0x22) this.capture(C_UID, i);
        else this.records.userIdOther();
      } else this.records.idValue(c);
    }
    switch (c) {
      case 0x7b:
        stack.push(OBJ);
        return S_OBJ_FIRST;
      case 0x5b:
        stack.push(ARR);
        if (this.openItems) {
          this.openItems = false;
          this.itemsActive = true;
        }
        return S_ARR_FIRST;
      case 0x22:
        this.strKey = false;
        this.strEsc = false;
        return S_STR;
      case 0x2d:
        return S_N_MINUS;
      case 0x30:
        return S_N_ZERO;
      case 0x74:
      case 0x66:
      case 0x6e:
        this.lit = c === 0x74 ? LIT_TRUE : c === 0x66 ? LIT_FALSE : LIT_NULL;
        this.litIdx = 1;
        return S_LIT;
      default:
        if (isDigit(c)) return S_N_INT;
        return this.fail('a value was expected');
    }
  }

  /** After a value is complete. */
  private endValue(): number {
    return this.stack.length === 0 ? S_DONE : S_AFTER;
  }

  /** The kept token's bytes (a string's with its quotes) up to `end`; not shared with file-answer.ts: V8 deoptimized at chunk ends. */
  private token(buf: Buffer, end: number): Buffer {
    const last = buf.subarray(this.capStart, end);
    if (this.capParts.length === 0) return last;
    this.capParts.push(last);
    const all = Buffer.concat(this.capParts);
    this.capParts.length = 0;
    return all;
  }

  private endString(buf: Buffer, quote: number): number {
    const cap = this.cap;
    if (cap === C_NONE) return this.strKey ? S_COLON : this.endValue();
    this.cap = C_NONE;
    if (!this.strEsc && this.capParts.length === 0) {
      // the common case, read in place: the token is in this chunk and has no escape
      const from = this.capStart + 1;
      if (cap === C_KEY) {
        if (this.inRecord) this.role = same(buf, from, quote, UID) ? R_UID : same(buf, from, quote, ID) ? R_ID : R_NONE;
        else this.topKey(buf.toString('latin1', from, quote));
        return S_COLON;
      }
      this.records.userIdBytes(buf, from, quote);
      return this.endValue();
    }
    const raw = this.token(buf, quote + 1);
    const text = this.strEsc ? (JSON.parse(raw.toString('utf8')) as string) : raw.toString('utf8', 1, raw.length - 1);
    if (cap === C_KEY) {
      if (this.inRecord) this.role = text === 'user_id' ? R_UID : text === 'id' ? R_ID : R_NONE;
      else this.topKey(text);
      return S_COLON;
    }
    this.records.userIdText(text); // C_UID
    return this.endValue();
  }

  /** Keep the token that starts at byte `i` (a value the rules read). */
  private capture(cap: number, i: number): void {
    this.cap = cap;
    this.capStart = i;
    if (this.capParts.length) this.capParts.length = 0;
  }

  private topKey(text: string): void {
    this.topName = this.top.nameOf(text);
    this.role = this.topName ? R_TOP : R_NONE;
  }

  private endNumber(buf: Buffer, end: number): number {
    if (this.cap === C_TOTAL) {
      this.cap = C_NONE;
      this.top.total = Number(this.token(buf, end).toString('latin1'));
    }
    return this.endValue();
  }

  private close(buf: Buffer, i: number, kind: number): number {
    const stack = this.stack;
    stack.pop();
    const depth = stack.length;
    if (kind === OBJ && this.inRecord && depth === this.itemsDepth) {
      this.inRecord = false;
      if (!this.records.end(buf, i)) {
        if (this.itemsDepth === 1) this.fail('an element is not a record');
        this.itemsValid = false;
      }
    } else if (kind === ARR && this.itemsActive && depth === this.itemsDepth - 1) {
      this.itemsActive = false;
    }
    return this.endValue();
  }
}
