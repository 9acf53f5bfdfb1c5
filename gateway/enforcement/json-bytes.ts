// JSON tokens as bytes, for the streamed file filter (file-stream-filter.ts, file-answer.ts): the
// literals the scanner matches, and a token compared without decoding it.

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
