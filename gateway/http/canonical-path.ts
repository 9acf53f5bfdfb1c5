// The one canonical form of a request target. Every decision is taken on it, and it is exactly
// what the upstream receives (a gateway that checks one path and forwards another has no policy at
// all). Anything that has no single safe reading is refused.
//
// Open WebUI (Starlette) percent-decodes the whole path before routing, so two targets that
// decode alike are the same route upstream. The canonical form therefore:
//   - decodes %XX of unreserved characters and of sub-delims (`%61` -> `a`, `%2e` -> `.`),
//     keeps every other escape in upper case (`%3f` -> `%3F`), and escapes raw characters that
//     a URL parser would escape, so `new URL()` leaves it unchanged;
//   - reads an encoded `/` (`%2F`) as the separator it is once decoded, as uvicorn does before
//     Starlette routes (`/models/org%2Fmodel/overview` is `/models/org/model/overview` there), so
//     the decision and what is forwarded hold a raw `/` where the client wrote `%2F`;
//   - refuses encoded `\`, raw `\`, `;` raw or encoded (`%3B`: a server that strips path
//     parameters after decoding reads `..%3B` as `..`), `%25` followed by two hex digits (double
//     encoding: a server that decodes twice reads `%2561` as `a`), NUL and other control bytes,
//     `#`, bytes outside ASCII, and percent-escapes that are not valid UTF-8 (overlong forms too);
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
const DOUBLE_ENCODED = /%[0-9A-Fa-f]{2}/;
// unreserved (RFC 3986) plus sub-delims, ':' and '@' minus ';': safe to keep literal in a path.
const LITERAL = new Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,=:@");
const utf8 = new TextDecoder('utf-8', { fatal: true });
const BASE = 'http://gateway.invalid';

const refuse = (reason: string): Canonicalized => ({ ok: false, reason });

/**
 * Most targets are already canonical: literal characters only, no escapes, no empty or dot
 * segments, and a query a URL parser leaves alone. Those are recognised in one pass over the
 * characters and answered as they are; everything else takes the full decoding below, which gives
 * the same answer for them (test/canonical-path.test.ts checks both ways agree).
 */
export function canonicalize(rawTarget: string | undefined): Canonicalized {
  return (rawTarget !== undefined && alreadyCanonical(rawTarget)) || decodeTarget(rawTarget);
}

// Path characters taken literally (LITERAL and '/'), as char codes; '.' is also LITERAL but is
// tracked separately for dot segments.
const PATH_CHAR = new Uint8Array(128);
for (const ch of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,=:@/") PATH_CHAR[ch.charCodeAt(0)] = 1;
// Query characters a URL parser leaves as they are (WHATWG special-query percent-encode set
// excluded: controls, space, `"`, `#`, `<`, `>`, `'`), no `%` (escapes take the full check) and no
// backslash (refused).
const QUERY_CHAR = new Uint8Array(128);
for (let c = 0x21; c < 0x7f; c++) if (!`"#<>'%\\`.includes(String.fromCharCode(c))) QUERY_CHAR[c] = 1;

function alreadyCanonical(raw: string): Canonicalized | undefined {
  if (raw.charCodeAt(0) !== 0x2f) return undefined;
  const n = raw.length;
  let i = 1;
  let segmentStart = 1;
  let dots = 0; // length of the current segment if it is all dots, else -1
  for (; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x3f) break; // '?'
    if (c >= 128 || PATH_CHAR[c] === 0) return undefined;
    if (c === 0x2f) {
      // An empty segment (`//`) or a dot segment needs the full treatment.
      if (i === segmentStart || (dots > 0 && dots <= 2)) return undefined;
      segmentStart = i + 1;
      dots = 0;
    } else if (c === 0x2e) {
      if (dots >= 0) dots++;
    } else dots = -1;
  }
  if (dots > 0 && dots <= 2) return undefined; // ends in `/.` or `/..`
  const path = i === n ? raw : raw.slice(0, i);
  if (i === n) return { ok: true, target: { path, search: '', url: raw } };
  if (i === n - 1) return undefined; // a lone `?`: the URL parser drops it (full path below)
  for (let j = i + 1; j < n; j++) {
    const c = raw.charCodeAt(j);
    if (c >= 128 || QUERY_CHAR[c] === 0) return undefined;
  }
  return { ok: true, target: { path, search: raw.slice(i), url: raw } };
}

/** The full decoding; exported for the test that it agrees with the fast path. */
export function decodeTarget(rawTarget: string | undefined): Canonicalized {
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

  // Decode the path into segments of UTF-8 bytes; '/' separates, raw or encoded.
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
      if (byte === 0x2f) {
        segments.push([]);
        continue;
      }
      if (byte === 0x5c) return refuse('encoded backslash in path');
      if (byte < 0x20 || byte === 0x7f) return refuse('encoded control byte (NUL included) in path');
      if (byte === 0x3b) return refuse('encoded path parameters (%3B) are not accepted');
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
    // Decoded, a segment holding `%XX` was percent-encoded twice (`%2561`, `%25%36%31`).
    if (DOUBLE_ENCODED.test(text)) return refuse('double percent-encoding (%25 followed by hex digits) in path');
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

  // Forward what a URL parser makes of it, and insist the path survives unchanged: whatever parses
  // the target again on the way (a proxy library, the upstream) must find the path that was judged.
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
const METHOD_OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'];

/** Any method-override header (X-HTTP-Method-Override and the like) makes a request unjudgeable. */
export function hasMethodOverride(headers: Readonly<Record<string, unknown>>): boolean {
  for (const name of METHOD_OVERRIDE_HEADERS) if (headers[name] !== undefined) return true;
  return false;
}
