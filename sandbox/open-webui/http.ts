// Small HTTP pieces the stand-in's routes share, each as the upstream's stack (uvicorn,
// Starlette, FastAPI) behaves: errors and their wording, request-target and header parsing,
// cookies, content codings, ETags and a streaming multipart parser.
import type { IncomingMessage } from 'node:http';
import { createHash } from 'node:crypto';

// Open WebUI's own wording (constants.py ERROR_MESSAGES, utils/auth.py)
export const NOT_AUTHENTICATED = 'Not authenticated';
export const USER_MISMATCH = 'User mismatch. Please sign in again.';
/** a session token whose session_stamp is no longer the account's (utils/auth.py is_valid_token) */
export const INVALID_SESSION_TOKEN = 'Invalid token';
/** ERROR_MESSAGES.UNAUTHORIZED: a token that does not decode (expired, another secret, not a JWT) */
export const UNAUTHORIZED = '401 Unauthorized';
/** a token whose account is gone (0.12 utils/mfa.py get_auth) */
export const INVALID_AUTHENTICATION = 'Invalid authentication request.';
export const ACTION_PROHIBITED = 'The requested action has been restricted as a security measure.';
export const ACCESS_PROHIBITED = 'You do not have permission to access this resource. Please contact your administrator for assistance.';
export const NOT_FOUND = "We could not find what you're looking for :/";
export const INVALID_TOKEN = 'Your session has expired or the token is invalid. Please sign in again.';
/** ERROR_MESSAGES.DEFAULT() */
export const SOMETHING_WENT_WRONG = 'Something went wrong :/';
export const INVALID_CRED = 'The email or password provided is incorrect. Please check for typos and try logging in again.';
export const INVALID_TRUSTED_HEADER = 'Your provider has not provided a trusted header. Please contact your administrator for assistance.';

/** Seconds since the epoch, as the upstream stores timestamps. */
export const nowS = (): number => Math.floor(Date.now() / 1000);

/** An answer `{"detail": ...}` with this status (FastAPI's HTTPException). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
  }
}

export interface ValidationIssue {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

export const unprocessable = (issues: ValidationIssue[]): HttpError => new HttpError(422, issues);

/** Python's urllib.parse.unquote: decodes every %XX (including %2F) as UTF-8, leaves malformed ones. */
export function unquote(s: string): string {
  if (!s.includes('%')) return s;
  return s.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => Buffer.from(run.replace(/%/g, ''), 'hex').toString('utf8'));
}

/** First value of a header by exact name (case-insensitive), like Starlette's headers.get. */
export function firstHeader(req: IncomingMessage, name: string | undefined): string | undefined {
  if (!name) return undefined;
  const lower = name.toLowerCase();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if ((raw[i] ?? '').toLowerCase() === lower) return raw[i + 1];
  }
  return undefined;
}

export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const k = part.slice(0, eq).trim();
    let v = part.slice(eq + 1).trim();
    if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
    if (k && !out.has(k)) out.set(k, v);
  }
  return out;
}

/** Which content coding to use for a compressible body, from Accept-Encoding. */
export function pickEncoding(ae: string | string[] | undefined): 'gzip' | 'br' | null {
  const value = Array.isArray(ae) ? ae.join(',') : ae;
  if (!value) return null;
  const q = new Map<string, number>();
  for (const part of value.split(',')) {
    const [coding, ...params] = part.split(';');
    const name = (coding ?? '').trim().toLowerCase();
    if (!name) continue;
    let qv = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p);
      if (m) qv = Number(m[1]);
    }
    q.set(name, Number.isFinite(qv) ? qv : 0);
  }
  const star = q.get('*');
  const gz = q.get('gzip') ?? q.get('x-gzip') ?? star ?? 0;
  const br = q.get('br') ?? star ?? 0;
  if (br > 0 && br > gz) return 'br';
  if (gz > 0) return 'gzip';
  if (br > 0) return 'br';
  return null;
}

export function weakEtag(body: Buffer): string {
  return `W/"${createHash('sha1').update(body).digest('base64url')}"`;
}

export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const bare = etag.replace(/^W\//, '');
  return ifNoneMatch.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag.replace(/^W\//, '') === bare;
  });
}

export function contentDisposition(kind: 'inline' | 'attachment', filename: string): string {
  return `${kind}; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const onAbort = (): void => {
      clearTimeout(t);
      resolve(false);
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The path and query of a request-target, origin-form or absolute-form, fragment dropped. */
export function splitTarget(target: string): { rawPath: string; rawQuery: string } {
  let t = target;
  const abs = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(t);
  if (abs) t = t.slice(abs[0].length) || '/';
  const hash = t.indexOf('#');
  if (hash >= 0) t = t.slice(0, hash);
  const qi = t.indexOf('?');
  return qi < 0 ? { rawPath: t, rawQuery: '' } : { rawPath: t.slice(0, qi), rawQuery: t.slice(qi + 1) };
}

/** Parameters of a header like `form-data; name="file"; filename="a b.txt"`. */
export function headerParams(value: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = /;\s*([^=;\s]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    const key = (m[1] ?? '').toLowerCase();
    const val = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] ?? '').trim();
    out.set(key, val);
  }
  const star = out.get('filename*');
  if (star) {
    const m = /^[^']*'[^']*'(.*)$/.exec(star);
    if (m) out.set('filename', unquote(m[1] ?? ''));
  }
  return out;
}

export interface MultipartPart {
  name: string | undefined;
  filename: string | undefined;
  contentType: string | undefined;
}

/** A part's name, file name and content type, from its header lines. */
function partOfHeaders(head: string): MultipartPart {
  const p: MultipartPart = { name: undefined, filename: undefined, contentType: undefined };
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'content-disposition') {
      const params = headerParams(value);
      p.name = params.get('name');
      p.filename = params.get('filename');
    } else if (key === 'content-type') {
      p.contentType = value;
    }
  }
  return p;
}

/**
 * Streaming multipart/form-data parser: a boundary scan over the chunks as they arrive.
 * Holds at most one chunk plus a delimiter-sized tail; part bodies go to `onData`.
 */
export async function parseMultipart(
  source: AsyncIterable<Buffer>,
  boundary: string,
  onPart: (p: MultipartPart) => void,
  onData: (p: MultipartPart, chunk: Buffer) => void,
): Promise<void> {
  const delim = Buffer.from(`\r\n--${boundary}`);
  const keep = delim.length - 1;
  let buf: Buffer = Buffer.from('\r\n'); // lets the first delimiter match like the others
  let state: 'preamble' | 'after' | 'headers' | 'body' | 'epilogue' = 'preamble';
  let part: MultipartPart | null = null;
  for await (const chunk of source) {
    if (state === 'epilogue') continue;
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (;;) {
      if (state === 'preamble') {
        const idx = buf.indexOf(delim);
        if (idx < 0) {
          buf = buf.subarray(Math.max(0, buf.length - keep));
          break;
        }
        buf = buf.subarray(idx + delim.length);
        state = 'after';
      } else if (state === 'after') {
        if (buf.length < 2) break;
        if (buf[0] === 0x2d && buf[1] === 0x2d) {
          state = 'epilogue';
          buf = Buffer.alloc(0);
          break;
        }
        const idx = buf.indexOf('\r\n');
        if (idx < 0) {
          if (buf.length > 1024) throw new HttpError(400, 'Invalid multipart body');
          break;
        }
        buf = buf.subarray(idx + 2);
        state = 'headers';
      } else if (state === 'headers') {
        let head: string;
        if (buf.length >= 2 && buf[0] === 0x0d && buf[1] === 0x0a) {
          head = '';
          buf = buf.subarray(2);
        } else {
          const idx = buf.indexOf('\r\n\r\n');
          if (idx < 0) {
            if (buf.length > 16 * 1024) throw new HttpError(400, 'Invalid multipart body');
            break;
          }
          head = buf.subarray(0, idx).toString('utf8');
          buf = buf.subarray(idx + 4);
        }
        const p = partOfHeaders(head);
        part = p;
        onPart(p);
        state = 'body';
      } else if (state === 'body') {
        const idx = buf.indexOf(delim);
        if (idx >= 0) {
          if (idx > 0 && part) onData(part, buf.subarray(0, idx));
          buf = buf.subarray(idx + delim.length);
          state = 'after';
          continue;
        }
        if (buf.length > keep) {
          if (part) onData(part, buf.subarray(0, buf.length - keep));
          buf = Buffer.from(buf.subarray(buf.length - keep));
        }
        break;
      } else {
        break;
      }
    }
  }
  if (state !== 'epilogue') throw new HttpError(400, 'Invalid multipart body: unexpected end');
}
