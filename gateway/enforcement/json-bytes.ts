// JSON tokens as bytes, for the streamed file filter (file-stream-filter.ts, file-answer.ts): the
// literals the scanner matches, a token compared without decoding it, and the end of a string's
// plain run found four bytes at a time.

export const LIT_TRUE = Buffer.from('true');
export const LIT_FALSE = Buffer.from('false');
export const LIT_NULL = Buffer.from('null');

/** buf[from, to) holds exactly the bytes of `want` */
export function same(buf: Buffer, from: number, to: number, want: Buffer): boolean {
  const n = want.length;
  if (to - from !== n) return false;
  for (let k = 0; k < n; k++) if (buf[from + k] !== want[k]) return false;
  return true;
}

export function isAscii(buf: Buffer, from: number, to: number): boolean {
  for (let k = from; k < to; k++) if (buf[k]! >= 0x80) return false;
  return true;
}

const NO_WORDS = new Int32Array(0);

/**
 * Whether a 32-bit word holds a byte that ends a string's plain run ('"', '\\', a byte < 0x20); never
 * false for one (a flagged word is read byte by byte): (v - 0x01010101) & ~v & 0x80808080 is nonzero
 * iff a byte of v is zero, with 0x20202020 iff a byte is below 0x20; the byte order does not matter.
 */
function stopsString(x: number): boolean {
  const q = x ^ 0x22222222;
  const b = x ^ 0x5c5c5c5c;
  return ((((q - 0x01010101) & ~q) | ((b - 0x01010101) & ~b) | ((x - 0x20202020) & ~x)) & 0x80808080) !== 0;
}

/** The chunk as 32-bit words from its byte `head` on (the first 4-byte aligned one), for the string scan. */
export function wordsOf(buf: Buffer, head: number): Int32Array {
  const nWords = buf.length > head ? (buf.length - head) >> 2 : 0;
  return nWords > 0 ? new Int32Array(buf.buffer, buf.byteOffset + head, nWords) : NO_WORDS;
}

/** Where a string's plain run from `i` ends: at its first '"', '\\' or control byte, or the chunk's end. */
export function plainRunEnd(buf: Buffer, i: number, head: number, words: Int32Array): number {
  const len = buf.length;
  let j = i;
  // byte by byte up to the first whole word
  for (; j < len && ((j - head) & 3) !== 0; j++) {
    const d = buf[j]!;
    if (d === 0x22 || d === 0x5c || d < 0x20) return j;
  }
  if (j < len) {
    // then four bytes at a time; a word holding a stop byte is left to the loop below
    let k = (j - head) >> 2;
    const nWords = words.length;
    for (; k < nWords; k++) if (stopsString(words[k]!)) break;
    j = head + (k << 2);
    for (; j < len; j++) {
      const d = buf[j]!;
      if (d === 0x22 || d === 0x5c || d < 0x20) return j;
    }
  }
  return j;
}
