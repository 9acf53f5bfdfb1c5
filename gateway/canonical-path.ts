// The one canonical form of a request target. Every decision is taken on it, and it is exactly
// what the upstream receives (reference/proxy-pitfalls.md: "the path that was checked is not
// the path that was forwarded"). Anything that has no single safe reading is refused.
//
// Open WebUI (Starlette) percent-decodes the whole path before routing, so two targets that
// decode alike are the same route upstream. The canonical form therefore:
//   - decodes %XX of unreserved characters and of sub-delims (`%61` -> `a`, `%2e` -> `.`),
//     keeps every other escape in upper case (`%3f` -> `%3F`), and escapes raw characters that
//     a URL parser would escape, so `new URL()` (used by http-proxy-3) leaves it unchanged;
//   - refuses encoded `/` and `\`, raw `\`, raw `;`, NUL and other control bytes, `#`,
//     bytes outside ASCII, and percent-escapes that are not valid UTF-8 (overlong forms too);
//   - merges repeated slashes and resolves `.` and `..` segments (`..` above the root is refused);
//   - keeps a trailing slash, because `/api/v1/files/` and `/api/v1/files` are different routes.

export interface CanonicalTarget {
  /** Canonical path, e.g. `/api/v1/files/`. */
  path: string;
  /** Query with its leading `?`, or the empty string. */
  search: string;
  /** What is forwarded: path + search. */
  url: string;
}

export type Canonicalized = { ok: true; target: CanonicalTarget } | { ok: false; reason: string };

const HEX = /^[0-9A-Fa-f]{2}$/;
// unreserved (RFC 3986) plus sub-delims, ':' and '@' minus ';': safe to keep literal in a path.
const LITERAL = new Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,=:@");
const utf8 = new TextDecoder('utf-8', { fatal: true });
const BASE = 'http://gateway.invalid';

const refuse = (reason: string): Canonicalized => ({ ok: false, reason });

export function canonicalize(rawTarget: string | undefined): Canonicalized {
  if (!rawTarget || rawTarget[0] !== '/') return refuse('request target must be a path starting with /');
  for (let i = 0; i < rawTarget.length; i++) {
    const c = rawTarget.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return refuse('control, space or non-ASCII byte in request target');
    if (c === 0x23) return refuse('fragment (#) in request target');
    if (c === 0x5c) return refuse('backslash in request target');
  }
  const q = rawTarget.indexOf('?');
  const rawPath = q === -1 ? rawTarget : rawTarget.slice(0, q);
  const rawQuery = q === -1 ? '' : rawTarget.slice(q);

  // Decode the path into segments of UTF-8 bytes; raw '/' separates, encoded '/' is refused.
  const segments: number[][] = [[]];
  for (let i = 0; i < rawPath.length; i++) {
    const ch = rawPath[i]!;
    if (ch === '/') {
      segments.push([]);
      continue;
    }
    if (ch === ';') return refuse('path parameters (;) are not accepted');
    let byte: number;
    if (ch === '%') {
      const hex = rawPath.slice(i + 1, i + 3);
      if (!HEX.test(hex)) return refuse('malformed percent-escape in path');
      byte = parseInt(hex, 16);
      i += 2;
      if (byte === 0x2f || byte === 0x5c) return refuse('encoded slash or backslash in path');
      if (byte < 0x20 || byte === 0x7f) return refuse('encoded control byte (NUL included) in path');
    } else {
      byte = ch.charCodeAt(0);
    }
    segments[segments.length - 1]!.push(byte);
  }

  const out: string[] = [];
  const last = segments.length - 1;
  let trailingSlash = false;
  for (const [index, bytes] of segments.entries()) {
    let text: string;
    try {
      text = utf8.decode(Uint8Array.from(bytes));
    } catch {
      return refuse('percent-escapes in path are not valid UTF-8');
    }
    if (text === '' || text === '.') {
      if (index === last) trailingSlash = true;
      continue;
    }
    if (text === '..') {
      if (out.length === 0) return refuse('path climbs above the root');
      out.pop();
      if (index === last) trailingSlash = true;
      continue;
    }
    trailingSlash = false;
    out.push(encodeSegment(text));
  }
  const path = '/' + out.join('/') + (trailingSlash && out.length > 0 ? '/' : '');

  for (let i = 0; i < rawQuery.length; i++) {
    if (rawQuery[i] === '%') {
      const hex = rawQuery.slice(i + 1, i + 3);
      if (!HEX.test(hex)) return refuse('malformed percent-escape in query');
      if (parseInt(hex, 16) < 0x20 || hex.toUpperCase() === '7F') return refuse('encoded control byte (NUL included) in query');
    }
  }

  // Forward what a URL parser makes of it, and insist the path survives unchanged: http-proxy-3
  // re-parses the target, and the upstream must receive the path that was judged.
  const parsed = new URL(path + rawQuery, BASE);
  if (parsed.pathname !== path) return refuse('path has no stable canonical form');
  const search = parsed.search;
  return { ok: true, target: { path, search, url: path + search } };
}

function encodeSegment(text: string): string {
  let s = '';
  for (const ch of text) {
    if (LITERAL.has(ch)) s += ch;
    else for (const b of Buffer.from(ch, 'utf8')) s += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return s;
}

/** Methods that may carry a different method past a check; refused outright. */
export const METHOD_OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'];
