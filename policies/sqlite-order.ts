// How SQLite orders what Open WebUI stores, for the views that order a caller's own records as
// Open WebUI orders everyone's.

/** Strings compared as their UTF-8 bytes compare (SQLite's BINARY collation): by code point. */
export function byCodePoint(a: string, b: string): number {
  // UTF-16 order is code point order unless a surrogate meets a code unit above it (U+E000 and up)
  if (!/[\ud800-\udfff]/.test(a + b)) return a < b ? -1 : a > b ? 1 : 0;
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}
