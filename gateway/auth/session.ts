// The gateway's session cookie, in express-openid-connect's own format, so that the control
// routes (which run express-openid-connect) and the data plane (which never does) read and write
// the same cookie:
//   - name `appSession`, or `appSession.0`, `.1`, ... when the value would pass 4 KB;
//   - value: JWE compact serialization, `dir` + `A256GCM`, the key being HKDF-SHA256(secret,
//     salt empty, info "JWE CEK", 32 bytes) of each SESSION_SECRET (the first encrypts, all decrypt);
//   - protected header `{alg, enc, iat, uat, exp}` (seconds): iat = login, uat = last update,
//     exp = min(uat + rolling, iat + absolute); a reader also checks the current durations.
// See node_modules/express-openid-connect/lib/{appSession,crypto}.js (3.4).
// `SessionStore` is the data plane's side: decrypted sessions cached by cookie value, the access
// token refreshed (one request per session at a time) shortly before it expires, ended sessions
// remembered so that a copy of their cookie is refused too.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { TtlCache } from '../cache.js';
import { CLEAR_SITE_DATA, SharedStateUnavailable } from '../http/respond.js';

export const SESSION_COOKIE = 'appSession';
const MAX_COOKIE_SIZE = 4096;

/** What the gateway keeps in the session (set at login by afterCallback, renewed on refresh). */
export interface SessionUser {
  sub: string;
  email: string;
  name: string;
  roles: string[];
  groups: string[];
  tenants: string[];
}

export interface SessionData {
  v: 1;
  /** the gateway's own random session id (logout revocation, single-flight refresh) */
  id: string;
  user: SessionUser;
  active_tenant: string | null;
  refresh_token: string | null;
  /** access token expiry, epoch seconds */
  expires_at: number;
  /** the realm's session id (ID token `sid`): back-channel logout names sessions by it */
  sid?: string | null;
}

export interface SessionHeader {
  iat: number;
  uat: number;
  exp: number;
}

export interface CookieOptions {
  secure: boolean;
  rollingSeconds: number;
  absoluteSeconds: number;
}

export const epoch = () => Math.floor(Date.now() / 1000);

const b64u = (buf: Buffer) => buf.toString('base64url');

export function isSessionData(x: unknown): x is SessionData {
  const s = x as SessionData;
  return (
    !!s &&
    typeof s === 'object' &&
    s.v === 1 &&
    typeof s.id === 'string' &&
    typeof s.expires_at === 'number' &&
    (s.refresh_token === null || typeof s.refresh_token === 'string') &&
    (s.active_tenant === null || typeof s.active_tenant === 'string') &&
    (s.sid === undefined || s.sid === null || typeof s.sid === 'string') &&
    !!s.user &&
    typeof s.user.sub === 'string' &&
    typeof s.user.email === 'string' &&
    typeof s.user.name === 'string' &&
    Array.isArray(s.user.roles) &&
    Array.isArray(s.user.groups) &&
    Array.isArray(s.user.tenants)
  );
}

export class SessionCodec {
  private readonly keys: Buffer[];

  constructor(
    secrets: string[],
    private readonly options: CookieOptions,
  ) {
    if (!secrets.length) throw new Error('SESSION_SECRET is required');
    this.keys = secrets.map((s) => Buffer.from(hkdfSync('sha256', s, Buffer.alloc(0), 'JWE CEK', 32)));
  }

  /** exp as express-openid-connect computes it (rolling sessions with an absolute cap). */
  expiry(iat: number, uat: number): number {
    return Math.min(uat + this.options.rollingSeconds, iat + this.options.absoluteSeconds);
  }

  /** Is a session with this header still alive now (as express-openid-connect would judge it)? */
  alive(h: SessionHeader, now = epoch()): boolean {
    return h.exp > now && h.uat + this.options.rollingSeconds > now && h.iat + this.options.absoluteSeconds > now;
  }

  encrypt(data: SessionData, header: SessionHeader): string {
    const protectedHeader = b64u(Buffer.from(JSON.stringify({ alg: 'dir', enc: 'A256GCM', ...header })));
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys[0]!, iv);
    cipher.setAAD(Buffer.from(protectedHeader, 'ascii'));
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(data), 'utf8'), cipher.final()]);
    return `${protectedHeader}..${b64u(iv)}.${b64u(ciphertext)}.${b64u(cipher.getAuthTag())}`;
  }

  /** Undefined for anything that is not a session this gateway wrote (any key of the rotation). */
  decrypt(jwe: string): { header: SessionHeader; data: unknown } | undefined {
    const parts = jwe.split('.');
    if (parts.length !== 5 || parts[1] !== '') return undefined;
    const [h, , ivText, ctText, tagText] = parts as [string, string, string, string, string];
    let header: { alg?: unknown; enc?: unknown; iat?: unknown; uat?: unknown; exp?: unknown; crit?: unknown; zip?: unknown };
    try {
      header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    if (header.alg !== 'dir' || header.enc !== 'A256GCM' || header.crit !== undefined || header.zip !== undefined) return undefined;
    if (typeof header.iat !== 'number' || typeof header.uat !== 'number' || typeof header.exp !== 'number') return undefined;
    const iv = Buffer.from(ivText, 'base64url');
    const tag = Buffer.from(tagText, 'base64url');
    if (iv.length !== 12 || tag.length !== 16) return undefined;
    const ciphertext = Buffer.from(ctText, 'base64url');
    for (const key of this.keys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
        decipher.setAAD(Buffer.from(h, 'ascii'));
        decipher.setAuthTag(tag);
        const plain = Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
        return { header: { iat: header.iat, uat: header.uat, exp: header.exp }, data: JSON.parse(plain) };
      } catch {
        // next key of the rotation
      }
    }
    return undefined;
  }

  private attributes(expires: Date): string {
    return `; Path=/; Expires=${expires.toUTCString()}; HttpOnly${this.options.secure ? '; Secure' : ''}; SameSite=Lax`;
  }

  /**
   * Set-Cookie lines carrying `value`: one cookie, or chunks as express-openid-connect cuts them;
   * `present` (cookie names the request carried) that the new form does not overwrite are cleared.
   */
  setCookieLines(value: string, exp: number, present: string[]): string[] {
    const attrs = this.attributes(new Date(exp * 1000));
    const chunkSize = MAX_COOKIE_SIZE - `${SESSION_COOKIE}.0=${this.attributes(new Date())}`.length;
    const lines: string[] = [];
    const written = new Set<string>();
    if (value.length <= chunkSize) {
      lines.push(`${SESSION_COOKIE}=${value}${attrs}`);
      written.add(SESSION_COOKIE);
    } else {
      for (let i = 0; i * chunkSize < value.length; i++) {
        lines.push(`${SESSION_COOKIE}.${i}=${value.slice(i * chunkSize, (i + 1) * chunkSize)}${attrs}`);
        written.add(`${SESSION_COOKIE}.${i}`);
      }
    }
    for (const name of present) if (!written.has(name)) lines.push(this.clearLine(name));
    return lines;
  }

  clearLine(name: string): string {
    return `${name}=${this.attributes(new Date(0))}`;
  }
}

const SESSION_NAME = /^appSession(?:\.(\d+))?$/;
const GATEWAY_COOKIE = /^(?:appSession(?:\.\d+)?|_?auth_verification)$/;

/** The session cookie of a Cookie header (joined chunks) and the names it came in. */
export function readSessionCookie(cookieHeader: string | undefined): { value: string; names: string[] } | undefined {
  if (!cookieHeader || !cookieHeader.includes(SESSION_COOKIE)) return undefined;
  let whole: string | undefined;
  const chunks: Array<[number, string]> = [];
  const names: string[] = [];
  for (const pair of cookieHeader.split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    const name = pair.slice(0, eq).trim();
    const m = SESSION_NAME.exec(name);
    if (!m) continue;
    const value = pair.slice(eq + 1).trim();
    names.push(name);
    if (m[1] === undefined) whole ??= value;
    else chunks.push([Number(m[1]), value]);
  }
  if (whole) return { value: whole, names };
  if (!chunks.length) return undefined;
  chunks.sort((a, b) => a[0] - b[0]);
  return { value: chunks.map((c) => c[1]).join(''), names };
}

/** The Cookie header without the gateway's own cookies (they never go to the chat front-end). */
export function withoutGatewayCookies(cookieHeader: string): string {
  return cookieHeader
    .split(';')
    .filter((pair) => {
      const eq = pair.indexOf('=');
      return !GATEWAY_COOKIE.test((eq < 0 ? pair : pair.slice(0, eq)).trim());
    })
    .map((p) => p.trim())
    .filter(Boolean)
    .join('; ');
}

/**
 * Where a request's renewed or cleared session cookie goes: the request's context
 * (gateway/pipeline/context.ts), which applies it once, on the gateway's own answer and on a
 * proxied one alike (gateway/upstream/proxy.ts merges it with the upstream's Set-Cookie lines).
 */
export interface SessionCookies {
  setCookies: string[] | undefined;
  /** the session ended: the browser keeps nothing of it (Clear-Site-Data) */
  clearSiteData: boolean;
}

export function addSetCookie(jar: SessionCookies, lines: readonly string[]): void {
  if (jar.setCookies) jar.setCookies.push(...lines);
  else jar.setCookies = [...lines];
}

/** What a request's session step decided for the answer, put on it (before anything of it is written). */
export function applySessionCookies(res: ServerResponse, jar: SessionCookies): void {
  if (jar.setCookies) res.appendHeader('set-cookie', jar.setCookies);
  // Ended elsewhere (back-channel logout, a refused refresh) or expired: this browser keeps
  // nothing of it either (cached pages, the chat front-end's token and storage).
  if (jar.clearSiteData && !res.headersSent) res.setHeader('clear-site-data', CLEAR_SITE_DATA);
}

/**
 * What authentication reads of a request and consumes (the gateway's own credentials), and the
 * session cookies it renews or clears: a part of the request's context (gateway/pipeline/context.ts).
 */
export interface AuthScope extends SessionCookies {
  /** the Authorization header to send upstream; a realm bearer JWT is consumed (undefined) */
  authorization: string | undefined;
  /** the Cookie header to send upstream, without the gateway's own cookies */
  cookie: string | undefined;
}

/** A scope of a request's own headers, for a caller that has no context (a control route). */
export function scopeOf(headers: IncomingHttpHeaders): AuthScope {
  return { authorization: headers.authorization, cookie: headers.cookie, setCookies: undefined, clearSiteData: false };
}

/** Authentication for a control route: the session cookies it renews or clears are put on `res`. */
export async function authenticateAnswer<I>(
  authenticate: (req: IncomingMessage, scope: AuthScope) => I | undefined | Promise<I | undefined>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<I | undefined> {
  const scope = scopeOf(req.headers);
  const identity = await authenticate(req, scope);
  applySessionCookies(res, scope);
  return identity;
}

/** `shared`: the outcome of a refresh made earlier (another instance, another request), not just now. */
export type RefreshResult = { kind: 'ok'; data: SessionData; shared?: boolean } | { kind: 'ended'; reason: string } | { kind: 'unavailable'; reason: string };

export interface SessionEntry {
  value: string;
  header: SessionHeader;
  data: SessionData;
  /** the cookie that replaced this one (refresh, rolling touch, tenant switch), for requests still sending this one */
  next?: SessionEntry;
}

export interface SessionHooks {
  /** Ask the identity provider for new tokens; the result is the renewed session data. */
  refresh(data: SessionData): Promise<RefreshResult>;
  ended(data: SessionData, reason: string): void;
  unavailable(data: SessionData, reason: string): void;
  lookup?(hit: boolean): void;
}

export { SharedStateUnavailable };

/** Where ended sessions are recorded and looked up (gateway/auth/shared-state.ts). */
export interface EndedSessions {
  end(by: { id: string }, untilEpoch: number): void;
  /** undefined: cannot be known now */
  isEnded(session: { id: string; sid?: string | null; sub: string; iat: number }, now?: number): boolean | undefined;
}

export class SessionStore {
  private readonly entries = new TtlCache<string, SessionEntry>(20_000, 5 * 60_000);
  private readonly refreshing = new Map<string, Promise<RefreshResult>>();

  constructor(
    readonly codec: SessionCodec,
    private readonly options: { refreshMarginSeconds: number; rollingSeconds: number; absoluteSeconds: number },
    private readonly hooks: SessionHooks,
    private readonly ended: EndedSessions,
  ) {}

  /** A new cookie for `data`, keeping the login time `iat`. */
  entryOf(data: SessionData, iat: number, now = epoch()): SessionEntry {
    const header = { iat, uat: now, exp: this.codec.expiry(iat, now) };
    return { value: this.codec.encrypt(data, header), header, data };
  }

  /** This session id is over (logout, refused refresh): its cookie, and every copy, is refused, on every instance. */
  revoke(id: string, seconds = this.options.absoluteSeconds): void {
    this.ended.end({ id }, epoch() + Math.max(1, seconds));
  }

  /**
   * The live session of a request's cookie, refreshed or touched as needed, or undefined.
   * With `jar`, a renewed cookie is recorded in it, and a dead one cleared. Answered synchronously
   * unless the tokens need a refresh: the data plane's common case (a known, live session) costs
   * no promise and no microtask (bench/README.md, "Sixth pass").
   */
  live(found: { value: string; names: string[] }, jar?: SessionCookies): SessionEntry | undefined | Promise<SessionEntry | undefined> {
    const now = epoch();
    let entry = this.entries.get(found.value);
    this.hooks.lookup?.(entry !== undefined);
    if (!entry) {
      const dec = this.codec.decrypt(found.value);
      if (!dec || !isSessionData(dec.data)) return this.cleared(found, jar);
      entry = { value: found.value, header: dec.header, data: dec.data };
      this.entries.set(found.value, entry);
    }
    for (let i = 0; entry.next && i < 16; i++) entry = entry.next;
    if (!this.codec.alive(entry.header, now)) return this.cleared(found, jar);
    const ended = this.ended.isEnded({ id: entry.data.id, sid: entry.data.sid, sub: entry.data.user.sub, iat: entry.header.iat }, now);
    // Fail closed: a session whose end may have been missed is not honoured (and not cleared).
    if (ended === undefined) throw new SharedStateUnavailable('Redis is not reachable');
    if (ended) return this.cleared(found, jar);
    const { data } = entry;
    // Without a refresh token the session lasts as long as its access token.
    if (data.expires_at - now <= this.options.refreshMarginSeconds && (data.refresh_token || data.expires_at <= now))
      return this.refreshed(entry, found, now, jar);
    let current = entry;
    if (now - entry.header.uat > this.options.rollingSeconds / 2) {
      entry.next ??= this.entryOf(data, entry.header.iat, now);
      current = entry.next;
      this.entries.set(current.value, current);
    }
    return this.renewed(found, current, jar);
  }

  /** The session as it now stands; a cookie that changed (rolled or refreshed) is recorded in `jar`. */
  private renewed(found: { value: string; names: string[] }, current: SessionEntry, jar?: SessionCookies): SessionEntry {
    if (jar && current.value !== found.value) addSetCookie(jar, this.codec.setCookieLines(current.value, current.header.exp, found.names));
    return current;
  }

  /** The cookie is dead: cleared in `jar` (every copy of it), and no session. */
  private cleared(found: { names: string[] }, jar?: SessionCookies): undefined {
    if (!jar) return undefined;
    addSetCookie(
      jar,
      found.names.map((n) => this.codec.clearLine(n)),
    );
    jar.clearSiteData = true;
    return undefined;
  }

  /** `live` for a session whose access token is (nearly) expired: refreshed once, on every request that waits for it. */
  private async refreshed(
    entry: SessionEntry,
    found: { value: string; names: string[] },
    now: number,
    jar?: SessionCookies,
  ): Promise<SessionEntry | undefined> {
    let current = entry;
    // An outcome another instance (or an earlier request) refreshed may itself be due by now: this
    // instance's copy of the session was a refresh behind. Follow on, at most three links, so every
    // instance serves the latest roles at once.
    for (let link = 0; link < 3; link++) {
      const { data } = current;
      const r = await this.refreshOnce(data);
      if (r.kind === 'ok') {
        current.next ??= this.entryOf(r.data, current.header.iat);
        current = current.next;
        this.entries.set(current.value, current);
        if (!r.shared || current.data.expires_at - epoch() > this.options.refreshMarginSeconds) break;
      } else if (r.kind === 'ended') {
        if (!this.ended.isEnded({ id: data.id, sub: data.user.sub, iat: entry.header.iat }, now)) {
          this.revoke(data.id, entry.header.exp - now);
          this.hooks.ended(data, r.reason);
        }
        this.entries.delete(found.value);
        return this.cleared(found, jar);
      } else {
        // The identity provider cannot be asked: the session stays, but an expired token is not honoured.
        this.hooks.unavailable(data, r.reason);
        if (data.expires_at <= now) return undefined;
        break;
      }
    }
    // Never an expired access token, whatever was shared.
    if (current !== entry && current.data.expires_at <= epoch()) return undefined;
    return this.renewed(found, current, jar);
  }

  /** Replace a live session's data (tenant switch) and set the new cookie. */
  replace(entry: SessionEntry, data: SessionData, names: string[], jar: SessionCookies): SessionEntry {
    const next = this.entryOf(data, entry.header.iat);
    entry.next = next;
    this.entries.set(next.value, next);
    addSetCookie(jar, this.codec.setCookieLines(next.value, next.header.exp, names));
    return next;
  }

  private refreshOnce(data: SessionData): Promise<RefreshResult> {
    let p = this.refreshing.get(data.id);
    if (!p) {
      p = this.hooks.refresh(data).finally(() => this.refreshing.delete(data.id));
      this.refreshing.set(data.id, p);
    }
    return p;
  }

  clear(): void {
    this.entries.clear();
  }
}
