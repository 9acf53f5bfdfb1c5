// Applies rules A1/A2 (policies/file-scoping.ts) to a file list as its bytes arrive: the upstream's
// JSON is checked byte by byte as it streams, and only the records of the items array are judged
// (their `user_id` and `id`: file-answer.ts). Records are never parsed into objects nor
// serialized again: a kept record is copied as the upstream's bytes. The answer is the same as
// parsing the whole document (JSON.parse semantics: duplicate keys, the last wins; `\u` escapes in
// keys and values; invalid UTF-8 as U+FFFD) and filtering it with parseFileList / parseFileArray +
// keepOwn; the property tests in test/unit/file-stream-filter.test.ts hold the two together.
//
// Fail closed: a body that is not JSON, or not the expected shape, throws FileFilterError, at the
// first bad byte when the syntax is wrong, at end() otherwise. Nothing is handed out before end()
// has seen the whole body, so a bad tail can never let a filtered-so-far answer out as complete.
import { FileFilterError, FileRecords, type FileAnswerShape, type FilteredFiles } from './file-answer.js';
import { LIT_FALSE, LIT_NULL, LIT_TRUE, same } from './json-bytes.js';

export { FileFilterError, type FileAnswerShape, type FilteredFiles } from './file-answer.js';

// The scanner's states and the byte tests of its loop stay beside the loop: imported, V8 would
// read each through the module's import cell at every use, which costs in a loop this hot.
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
const R_ITEMS = 1;
const R_TOTAL = 2;
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
const ITEMS = Buffer.from('items');
const TOTAL = Buffer.from('total');

const NO_WORDS = new Int32Array(0);

/**
 * Whether a 32-bit word holds a byte that ends the plain run of a string: '"', '\\' or a control
 * byte (< 0x20). Exact in this direction (never false for such a word; a word it flags is then read
 * byte by byte): (v - 0x01010101) & ~v & 0x80808080 is nonzero iff a byte of v is zero, and with
 * 0x20202020 iff a byte is below 0x20. The byte order of the word does not matter.
 */
function stopsString(x: number): boolean {
  const q = x ^ 0x22222222;
  const b = x ^ 0x5c5c5c5c;
  return ((((q - 0x01010101) & ~q) | ((b - 0x01010101) & ~b) | ((x - 0x20202020) & ~x)) & 0x80808080) !== 0;
}

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
  // the token kept (a key at a depth that matters, a user_id value, the total)
  private cap = C_NONE;
  private capStart = 0;
  private capParts: Buffer[] = [];
  private inRecord = false; // inside a record of the items array (what it says: this.records)
  // the items array (the last one wins, as in JSON.parse)
  private itemsActive = false;
  private itemsValid = false; // seen, an array, and every element a file
  private readonly records: FileRecords;
  private total: number | undefined;
  private failed: string | undefined;
  private ended = false;
  /** Depth of the items array itself (its elements are the records). */
  private readonly itemsDepth: number;

  constructor(
    private readonly shape: FileAnswerShape,
    callerId: string,
  ) {
    this.itemsDepth = shape === 'list' ? 2 : 1;
    this.records = new FileRecords(callerId);
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
    const nWords = len > head ? (len - head) >> 2 : 0;
    const words = nWords > 0 ? new Int32Array(buf.buffer, buf.byteOffset + head, nWords) : NO_WORDS;
    while (i < len) {
      const c = buf[i]!;
      switch (st) {
        case S_STR: {
          // the hot loop: most of a file list is string bytes
          let j = i;
          // byte by byte up to the first whole word
          for (; j < len && ((j - head) & 3) !== 0; j++) {
            const d = buf[j]!;
            if (d === 0x22 || d === 0x5c || d < 0x20) break;
          }
          if (j < len && ((j - head) & 3) === 0) {
            // then four bytes at a time; a word holding a stop byte is left to the loop below
            let k = (j - head) >> 2;
            for (; k < nWords; k++) if (stopsString(words[k]!)) break;
            j = head + (k << 2);
            for (; j < len; j++) {
              const d = buf[j]!;
              if (d === 0x22 || d === 0x5c || d < 0x20) break;
            }
          }
          if (j === len) {
            i = len;
            continue;
          }
          const d = buf[j]!;
          if (d === 0x22) {
            i = j + 1;
            if (this.cap !== C_NONE) st = this.endString(buf, j);
            else if (!this.strKey) st = stack.length === 0 ? S_DONE : S_AFTER;
            else if (i < len && buf[i] === 0x3a) {
              // a key nobody needs and its ':' at once (compact JSON): one turn of the loop saved
              st = S_VALUE;
              i++;
            } else st = S_COLON;
            continue;
          }
          if (d === 0x5c) {
            this.strEsc = true;
            st = S_STR_ESC;
            i = j + 1;
            continue;
          }
          return this.fail('control character in a string');
        }
        case S_STR_ESC:
          if (c === 0x75) {
            st = S_STR_U;
            this.uLeft = 4;
          } else if (c === 0x22 || c === 0x5c || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74) {
            st = S_STR;
          } else return this.fail('bad escape');
          i++;
          continue;
        case S_STR_U:
          if (!isHex(c)) return this.fail('bad \\u escape');
          if (--this.uLeft === 0) st = S_STR;
          i++;
          continue;
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
          if (isWs(c)) break;
          if (c === 0x22) {
            st = S_STR;
            this.strKey = true;
            this.strEsc = false;
            const depth = stack.length;
            // in a record only user_id and id are read: a key that starts otherwise is skipped ('\\' may escape any)
            const k = i + 1 < len ? buf[i + 1]! : 0x5c;
            if (this.inRecord ? depth === this.itemsDepth + 1 && (k === 0x75 || k === 0x69 || k === 0x5c) : this.shape === 'list' && depth === 1) {
              this.cap = C_KEY;
              this.capStart = i;
              if (this.capParts.length) this.capParts.length = 0;
            }
            break;
          }
          if (c === 0x7d && st === S_OBJ_FIRST) {
            st = this.close(buf, i, OBJ);
            break;
          }
          return this.fail('a key was expected');
        case S_COLON:
          if (isWs(c)) break;
          if (c !== 0x3a) return this.fail("':' was expected");
          st = S_VALUE;
          break;
        case S_AFTER: {
          if (isWs(c)) break;
          const top = stack[stack.length - 1];
          if (c === 0x2c) st = top === ARR ? S_VALUE : S_KEY;
          else if (c === 0x5d && top === ARR) st = this.close(buf, i, ARR);
          else if (c === 0x7d && top === OBJ) st = this.close(buf, i, OBJ);
          else return this.fail("',' or the container's end was expected");
          break;
        }
        case S_DONE:
          if (!isWs(c)) return this.fail('bytes after the JSON value');
          break;
        case S_N_MINUS:
          if (c === 0x30) st = S_N_ZERO;
          else if (isDigit(c)) st = S_N_INT;
          else return this.fail('bad number');
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
        case S_N_DOT:
        case S_N_ESIGN:
          if (!isDigit(c)) return this.fail('bad number');
          st = st === S_N_DOT ? S_N_FRAC : S_N_EXP;
          break;
        case S_N_E:
          if (c === 0x2b || c === 0x2d) st = S_N_ESIGN;
          else if (isDigit(c)) st = S_N_EXP;
          else return this.fail('bad number');
          break;
        case S_LIT:
          if (c !== this.lit[this.litIdx]) return this.fail('bad literal');
          if (++this.litIdx === this.lit.length) st = this.endValue();
          break;
      }
      i++;
    }
    this.st = st;
    // A token or a record still open at the chunk's end keeps what it has so far.
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
    if (!this.itemsValid) this.fail(this.shape === 'list' ? 'items is not an array of files' : 'the answer is not an array of files');
    const total = this.total;
    if (this.shape === 'list' && (total === undefined || !Number.isInteger(total) || total < 0)) this.fail('total is not a whole number >= 0');
    return this.records.answer(this.shape, total);
  }

  private startValue(buf: Buffer, i: number, c: number): number {
    const stack = this.stack;
    const depth = stack.length;
    const role = this.role;
    this.role = R_NONE;
    if (depth === 0) {
      // the top value: its shape is known before anything else
      if (this.shape === 'list' && c !== 0x7b) this.fail('the answer is not an object');
      if (this.shape === 'array') {
        if (c !== 0x5b) this.fail('the answer is not an array');
        this.itemsValid = true;
        this.openItems = true;
      }
    } else if (this.itemsActive && !this.inRecord && depth === this.itemsDepth) {
      // an element of the items array: a record
      if (c === 0x7b) {
        this.inRecord = true;
        this.records.begin(i);
      } else if (this.shape === 'array') this.fail('an element is not a file');
      else this.itemsValid = false;
    } else if (role !== R_NONE) {
      if (role === R_ITEMS) {
        this.records.clear();
        this.itemsValid = c === 0x5b;
        this.openItems = c === 0x5b;
      } else if (role === R_TOTAL) {
        this.total = undefined; // the last one wins
        if (c === 0x2d || isDigit(c)) {
          this.cap = C_TOTAL;
          this.capStart = i;
          if (this.capParts.length) this.capParts.length = 0;
        }
      } else if (role === R_UID) {
        if (c === 0x22) {
          this.cap = C_UID;
          this.capStart = i;
          if (this.capParts.length) this.capParts.length = 0;
        } else this.records.userIdOther();
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
        this.lit = LIT_TRUE;
        this.litIdx = 1;
        return S_LIT;
      case 0x66:
        this.lit = LIT_FALSE;
        this.litIdx = 1;
        return S_LIT;
      case 0x6e:
        this.lit = LIT_NULL;
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

  /**
   * The bytes of the kept token, quotes included for a string, ending before `end`. Not shared with
   * a record's (file-answer.ts) on purpose: one helper for both made V8 deoptimize at chunk ends.
   */
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
        else this.role = same(buf, from, quote, ITEMS) ? R_ITEMS : same(buf, from, quote, TOTAL) ? R_TOTAL : R_NONE;
        return S_COLON;
      }
      this.records.userIdBytes(buf, from, quote);
      return this.endValue();
    }
    const raw = this.token(buf, quote + 1);
    const text = this.strEsc ? (JSON.parse(raw.toString('utf8')) as string) : raw.toString('utf8', 1, raw.length - 1);
    if (cap === C_KEY) {
      if (this.inRecord) this.role = text === 'user_id' ? R_UID : text === 'id' ? R_ID : R_NONE;
      else this.role = text === 'items' ? R_ITEMS : text === 'total' ? R_TOTAL : R_NONE;
      return S_COLON;
    }
    this.records.userIdText(text); // C_UID
    return this.endValue();
  }

  private endNumber(buf: Buffer, end: number): number {
    if (this.cap === C_TOTAL) {
      this.cap = C_NONE;
      this.total = Number(this.token(buf, end).toString('latin1'));
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
        if (this.shape === 'array') this.fail('an element is not a file');
        this.itemsValid = false;
      }
    } else if (kind === ARR && this.itemsActive && depth === this.itemsDepth - 1) {
      this.itemsActive = false;
    }
    return this.endValue();
  }
}
