// The gateway's session cookie: a format the gateway owns, written and read only here (README
// "The session cookie"). Version 2:
//   - name `appSession`; a value that would not fit one 4096-byte cookie (with its attributes) is
//     cut into `appSession.0`, `.1`, ... (joined in index order); a write clears the names of the
//     other form that the request carried;
//   - value: a JWE in compact serialization made with jose, `alg: dir`, `enc: A256GCM`, the key
//     being HKDF-SHA256(secret, salt empty, info "JWE CEK", 32 bytes) of each SESSION_SECRET (the
//     first encrypts, all decrypt: rotation);
//   - protected header `{alg, enc, v: 2, iat, uat, exp}` (seconds): v = this format's version,
//     iat = login, uat = last update, exp = min(uat + rolling, iat + absolute); a reader also
//     checks the current durations;
//   - payload: the JSON of `SessionData` (its own `v: 1` is the shape of what is kept, not the
//     cookie's format).
// A header without `v` is the layout express-openid-connect 3.4 wrote (the same names, chunks, key
// and header but `v`): read as it is, and rewritten as version 2 at its next renewal (rolling
// touch, refresh, tenant switch). Any other `v` is refused: the browser is signed out, as with a
// cookie of another key. A format change bumps `v` here and keeps reading the one before.
// `SessionStore` is the data plane's side: decrypted sessions cached by cookie value, the access
// token refreshed (one refresh per session state at a time) shortly before it expires, ended sessions
// remembered so that a copy of their cookie is refused too.
import { createHash, hkdfSync } from 'node:crypto';
import { CompactEncrypt, compactDecrypt, decodeJwt, decodeProtectedHeader } from 'jose';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { SingleFlight, TtlCache } from '../cache/cache.js';
import { CLEAR_SITE_DATA, SharedStateUnavailable } from '../http/respond.js';
import { withoutCookies } from '../http/request-headers.js';
import type { Observability } from '../observability/observability.js';

export const SESSION_COOKIE = 'appSession';
const MAX_COOKIE_SIZE = 4096;
/** The cookie format this gateway writes (the protected header's `v`). */
export const SESSION_FORMAT_VERSION = 2;
/** What a cookie's protected header may say it is: this format, or none (express-openid-connect's). */
const READABLE_VERSIONS: ReadonlySet<unknown> = new Set([SESSION_FORMAT_VERSION, undefined]);
const JWE_OPTIONS = { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] };

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
  /** when the realm gave `user` (sign-in or refresh), epoch seconds: the newest facts of a user win (policies/session-ends.ts) */
  facts_at?: number;
  /** the access token's lifetime as the realm gave it, seconds: the refresh margin is at most half of it */
  token_lifetime?: number;
  /**
   * the access token's hash (OIDC's `at_hash` for SHA-256: the left half, base64url): every refresh
   * brings a new access token, so it names this state of the session and no other
   */
  at_hash?: string;
}

/** What a session keeps of the tokens the realm just gave (sign-in or refresh). */
export function tokenState(
  tokens: { access_token: string; expires_in?: number },
  now = epoch(),
): Pick<SessionData, 'expires_at' | 'token_lifetime' | 'at_hash'> {
  let claims: { exp?: number; iat?: number } = {};
  try {
    claims = decodeJwt(tokens.access_token);
  } catch {
    // an opaque access token: its answer's expires_in is all there is
  }
  const lifetime =
    typeof tokens.expires_in === 'number' ? tokens.expires_in : claims.exp !== undefined && claims.iat !== undefined ? claims.exp - claims.iat : undefined;
  const expiresAt = typeof tokens.expires_in === 'number' ? now + tokens.expires_in : (claims.exp ?? now);
  const atHash = createHash('sha256').update(tokens.access_token).digest().subarray(0, 16).toString('base64url');
  return { expires_at: expiresAt, ...(lifetime !== undefined && lifetime >= 0 ? { token_lifetime: lifetime } : {}), at_hash: atHash };
}

/**
 * The name of the state a refresh replaces (single flights here and among instances): the
 * session, its access token's expiry, its refresh token and, once kept, its access token. A realm
 * that does not rotate refresh tokens gives the same expiry and refresh token to two refreshes in
 * one second; the access token tells them apart. (A cookie written before the hash was kept is
 * named as before: its refresh is shared with instances that do not keep it yet.)
 */
export function refreshStateName(data: SessionData): string {
  const rt = data.refresh_token ? createHash('sha256').update(data.refresh_token).digest('base64url').slice(0, 22) : '-';
  return `${data.id}:${data.expires_at}:${rt}${data.at_hash ? `:${data.at_hash}` : ''}`;
}

/**
 * How long before its access token expires a session is refreshed: TOKEN_REFRESH_MARGIN_SECONDS,
 * at most half the token's lifetime, so that tokens shorter than the margin are not refreshed on
 * every request (a session written before the lifetime was kept: the margin as set).
 */
export function refreshMargin(data: SessionData, marginSeconds: number): number {
  return data.token_lifetime === undefined ? marginSeconds : Math.min(marginSeconds, Math.floor(data.token_lifetime / 2));
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
    (s.facts_at === undefined || typeof s.facts_at === 'number') &&
    (s.token_lifetime === undefined || typeof s.token_lifetime === 'number') &&
    (s.at_hash === undefined || typeof s.at_hash === 'string') &&
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

  /** exp: rolling sessions with an absolute cap. */
  expiry(iat: number, uat: number): number {
    return Math.min(uat + this.options.rollingSeconds, iat + this.options.absoluteSeconds);
  }

  /** Is a session with this header still alive now (its exp, and the current durations)? */
  alive(h: SessionHeader, now = epoch()): boolean {
    return h.exp > now && h.uat + this.options.rollingSeconds > now && h.iat + this.options.absoluteSeconds > now;
  }

  /** The cookie value of a session, in the current format. */
  encrypt(data: SessionData, header: SessionHeader): Promise<string> {
    return new CompactEncrypt(new TextEncoder().encode(JSON.stringify(data)))
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', v: SESSION_FORMAT_VERSION, ...header })
      .encrypt(this.keys[0]!);
  }

  /**
   * Undefined for anything that is not a session this gateway wrote (any key of the rotation) in
   * a format it reads. `version`: the format it was written in (undefined: express-openid-connect's).
   */
  async decrypt(jwe: string): Promise<{ header: SessionHeader; data: unknown; version: number | undefined } | undefined> {
    let v: unknown;
    try {
      v = decodeProtectedHeader(jwe).v;
    } catch {
      return undefined;
    }
    // A format this gateway does not know (a later release's, say) is refused before any key is tried.
    if (!READABLE_VERSIONS.has(v)) return undefined;
    for (const key of this.keys) {
      let plaintext: Uint8Array;
      let header: Record<string, unknown>;
      try {
        ({ plaintext, protectedHeader: header } = await compactDecrypt(jwe, key, JWE_OPTIONS));
      } catch {
        continue; // next key of the rotation
      }
      const { iat, uat, exp } = header;
      if (typeof iat !== 'number' || typeof uat !== 'number' || typeof exp !== 'number') return undefined;
      try {
        return { header: { iat, uat, exp }, data: JSON.parse(new TextDecoder().decode(plaintext)), version: v as number | undefined };
      } catch {
        return undefined;
      }
    }
    return undefined;
  }

  /** One Set-Cookie line of the session (or of one of its chunks). */
  private line(name: string, value: string, expires: Date): string {
    return stringifySetCookie({ name, value, path: '/', expires, httpOnly: true, secure: this.options.secure, sameSite: 'lax' }, AS_SENT);
  }

  /**
   * Set-Cookie lines carrying `value`: one cookie, or its chunks (the format above);
   * `present` (cookie names the request carried) that the new form does not overwrite are cleared.
   */
  setCookieLines(value: string, exp: number, present: string[]): string[] {
    const expires = new Date(exp * 1000);
    const chunkSize = MAX_COOKIE_SIZE - this.line(`${SESSION_COOKIE}.0`, '', new Date()).length;
    const lines: string[] = [];
    const written = new Set<string>();
    if (value.length <= chunkSize) {
      lines.push(this.line(SESSION_COOKIE, value, expires));
      written.add(SESSION_COOKIE);
    } else {
      for (let i = 0; i * chunkSize < value.length; i++) {
        lines.push(this.line(`${SESSION_COOKIE}.${i}`, value.slice(i * chunkSize, (i + 1) * chunkSize), expires));
        written.add(`${SESSION_COOKIE}.${i}`);
      }
    }
    for (const name of present) if (!written.has(name)) lines.push(this.clearLine(name));
    return lines;
  }

  clearLine(name: string): string {
    return this.line(name, '', new Date(0));
  }
}

const SESSION_NAME = /^appSession(?:\.(\d+))?$/;
const GATEWAY_COOKIE = /^(?:appSession(?:\.\d+)?|_?auth_verification)$/;

/** Session values are read as sent: base64url and dots, nothing to decode. */
const AS_SENT = { decode: (v: string) => v, encode: (v: string) => v };

/** The session cookie of a Cookie header (joined chunks) and the names it came in. */
export function readSessionCookie(cookieHeader: string | undefined): { value: string; names: string[] } | undefined {
  if (!cookieHeader || !cookieHeader.includes(SESSION_COOKIE)) return undefined;
  const cookies = parseCookie(cookieHeader, AS_SENT);
  const chunks: Array<[number, string]> = [];
  const names: string[] = [];
  for (const name in cookies) {
    const m = SESSION_NAME.exec(name);
    if (!m) continue;
    names.push(name);
    if (m[1] !== undefined) chunks.push([Number(m[1]), cookies[name]!]);
  }
  const whole = cookies[SESSION_COOKIE];
  if (whole) return { value: whole, names };
  if (!chunks.length) return undefined;
  chunks.sort((a, b) => a[0] - b[0]);
  return { value: chunks.map((c) => c[1]).join(''), names };
}

/** The Cookie header without the gateway's own cookies (they never go to the chat front-end). */
export function withoutGatewayCookies(cookieHeader: string): string {
  return withoutCookies(cookieHeader, GATEWAY_COOKIE);
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

// ---- the end of a session ---------------------------------------------------------------------
// Every end of a session is told once, where it was decided: one audit line carrying its
// `reason`, at the level the reason calls for (a user's own sign-out is routine: info; a session
// the gateway or the realm cut short is what an operator looks for: warn), and one count in
// gateway_sessions_ended_total{reason}. An instance that only learns of an end decided elsewhere
// (the ended-session list in Redis, the shared outcome of another instance's refresh) applies it
// without telling it again, so the lines and counts of every instance add up to the ends.

/** Why a session ended, as logged and counted; the level each is logged at. */
export const SESSION_END_REASONS = {
  /** the user signed out (the gateway's /auth/logout or the chat front-end's sign-out) */
  sign_out: 'info',
  /** the realm's back-channel logout token (the user or an administrator ended the realm session) */
  backchannel_logout: 'info',
  /** the cookie's idle or absolute lifetime had passed when a request brought it */
  lifetime_reached: 'info',
  /** the access token expired and the realm gave no refresh token to renew it */
  no_refresh_token: 'info',
  /** the realm refused the refresh (4xx: the user disabled, the realm session ended or timed out, a spent refresh token) */
  refresh_refused: 'warn',
  /** the realm answered the refresh, but not with tokens the gateway accepts (another subject, a signature or claim that does not hold) */
  refresh_rejected: 'warn',
  /** the refresh gave tokens that had already expired: the request is refused (the session itself is kept) */
  refresh_outcome_expired: 'warn',
} as const;

export type SessionEndReason = keyof typeof SESSION_END_REASONS;

/** One audit line for a session's end (its fields, `reason` added) and one count. */
export function tellSessionEnd(
  obs: Pick<Observability, 'audit' | 'metrics'>,
  reason: SessionEndReason,
  fields: { event: string } & Record<string, unknown>,
  msg: string,
): void {
  obs.metrics.sessionsEnded.inc({ reason });
  obs.audit[SESSION_END_REASONS[reason]]({ ...fields, reason }, msg);
}

/**
 * `shared`: the outcome of a refresh made earlier or elsewhere (another instance, another request),
 * not just now by this one. `end`: why the session ends, for a refresh made here (a shared end was
 * told where its refresh was made).
 */
export type RefreshResult =
  | { kind: 'ok'; data: SessionData; shared?: boolean }
  | { kind: 'ended'; reason: string; end?: SessionEndReason; shared?: boolean }
  | { kind: 'unavailable'; reason: string };

export interface SessionEntry {
  value: string;
  header: SessionHeader;
  data: SessionData;
  /** the cookie that replaced this one (refresh, rolling touch, tenant switch), for requests still sending this one */
  next?: SessionEntry;
  /** its rolling touch under way (the new cookie being encrypted) */
  touching?: Promise<SessionEntry>;
}

export interface SessionHooks {
  /** Ask the identity provider for new tokens; the result is the renewed session data. */
  refresh(data: SessionData): Promise<RefreshResult>;
  /** the session ended here (told once: `tellSessionEnd`); `detail` says what happened */
  ended(data: SessionData, reason: SessionEndReason, detail: string): void;
  /** an end decided by another instance's refresh, applied here (told where it was decided) */
  endApplied?(data: SessionData, detail: string): void;
  unavailable(data: SessionData, reason: string): void;
  lookup?(hit: boolean): void;
  /** the session's data changed here (refreshed, tenant switch): told once the new state is in place */
  changed?(data: SessionData): void;
}

/** Where ended sessions are recorded and looked up (gateway/state/shared-state.ts). */
export interface EndedSessions {
  /** settles once every instance can know it (SharedState.end) */
  end(by: { id: string }, untilEpoch: number): Promise<void>;
  /** undefined: cannot be known now */
  isEnded(session: { id: string; sid?: string | null; sub: string; iat: number }, now?: number): boolean | undefined;
}

export class SessionStore {
  private readonly entries = new TtlCache<string, SessionEntry>(20_000, 5 * 60_000);
  /** one refresh per session state at a time in this process (the shared state makes it one among instances) */
  private readonly refreshing = new SingleFlight<RefreshResult>();
  /** ends told here that requests could meet again (a refresh outcome already expired, a lifetime reached): told once */
  private readonly told = new TtlCache<string, true>(20_000, 5 * 60_000);

  constructor(
    readonly codec: SessionCodec,
    private readonly options: { refreshMarginSeconds: number; rollingSeconds: number; absoluteSeconds: number },
    private readonly hooks: SessionHooks,
    private readonly ended: EndedSessions,
  ) {}

  /** A new cookie for `data`, keeping the login time `iat`. */
  async entryOf(data: SessionData, iat: number, now = epoch()): Promise<SessionEntry> {
    const header = { iat, uat: now, exp: this.codec.expiry(iat, now) };
    return { value: await this.codec.encrypt(data, header), header, data };
  }

  /** This session id is over (logout, refused refresh): its cookie, and every copy, is refused, on every instance. */
  revoke(id: string, seconds = this.options.absoluteSeconds): Promise<void> {
    return this.ended.end({ id }, epoch() + Math.max(1, seconds));
  }

  /**
   * The live session of a request's cookie, refreshed or touched as needed, or undefined.
   * With `jar`, a renewed cookie is recorded in it, and a dead one cleared. A cookie is decrypted
   * once (jose decrypts asynchronously); a known one is looked up.
   */
  async live(found: { value: string; names: string[] }, jar?: SessionCookies): Promise<SessionEntry | undefined> {
    let entry = this.entries.get(found.value);
    this.hooks.lookup?.(entry !== undefined);
    if (!entry) {
      const dec = await this.codec.decrypt(found.value);
      if (!dec || !isSessionData(dec.data)) return this.cleared(found, jar);
      // Another request with the same cookie may have decrypted it meanwhile: one entry per cookie,
      // so that its renewals (`next`) are shared.
      entry = this.entries.get(found.value);
      if (!entry) this.entries.set(found.value, (entry = { value: found.value, header: dec.header, data: dec.data }));
    }
    // the session as it now stands
    const now = epoch();
    for (let i = 0; entry.next && i < 16; i++) entry = entry.next;
    const facts = { id: entry.data.id, sid: entry.data.sid, sub: entry.data.user.sub, iat: entry.header.iat };
    if (!this.codec.alive(entry.header, now)) {
      if (this.ended.isEnded(facts, now) === false) this.tell(entry.data, 'lifetime_reached', 'the session cookie outlived its idle or absolute lifetime');
      return this.cleared(found, jar);
    }
    const ended = this.ended.isEnded(facts, now);
    // Fail closed: a session whose end may have been missed is not honoured (and not cleared).
    if (ended === undefined) throw new SharedStateUnavailable('Redis is not reachable');
    if (ended) return this.cleared(found, jar);
    const { data } = entry;
    // Without a refresh token the session lasts as long as its access token.
    if (data.expires_at - now <= refreshMargin(data, this.options.refreshMarginSeconds) && (data.refresh_token || data.expires_at <= now))
      return await this.refreshed(entry, found, now, jar);
    if (now - entry.header.uat > this.options.rollingSeconds / 2) return this.renewed(found, await this.touched(entry, now), jar);
    return this.renewed(found, entry, jar);
  }

  /** A rolling session's new cookie (uat now), made once for every request that carries the old one. */
  private touched(entry: SessionEntry, now: number): Promise<SessionEntry> {
    entry.touching ??= this.entryOf(entry.data, entry.header.iat, now).then(
      (next) => {
        entry.next ??= next;
        this.entries.set(entry.next.value, entry.next);
        return entry.next;
      },
      (err: unknown) => {
        entry.touching = undefined; // the next request tries again
        throw err;
      },
    );
    return entry.touching;
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
        // Every request waiting on this refresh takes the one new cookie.
        if (!current.next) {
          const next = await this.entryOf(r.data, current.header.iat);
          current.next ??= next;
        }
        current = current.next!;
        this.entries.set(current.value, current);
        this.hooks.changed?.(current.data);
        if (!r.shared || current.data.expires_at - epoch() > refreshMargin(current.data, this.options.refreshMarginSeconds)) break;
      } else if (r.kind === 'ended') {
        if (!this.ended.isEnded({ id: data.id, sub: data.user.sub, iat: entry.header.iat }, now)) {
          // taken here at once; the other instances learn it as Redis publishes it (this request's
          // answer does not wait: it is the one clearing the cookie)
          void this.revoke(data.id, entry.header.exp - now);
          if (r.shared) this.hooks.endApplied?.(data, r.reason);
          else this.hooks.ended(data, r.end ?? 'refresh_refused', r.reason);
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
    // Never an expired access token, whatever was shared. The session is not ended for it (a
    // newer cookie of it may be live), but the user is refused: told once.
    if (current !== entry && current.data.expires_at <= epoch()) {
      this.tell(
        current.data,
        'refresh_outcome_expired',
        `the refreshed access token expired at ${current.data.expires_at}, ${epoch() - current.data.expires_at} s ago`,
      );
      return undefined;
    }
    return this.renewed(found, current, jar);
  }

  /** An end that requests could meet again, told once (per session and reason, for as long as the cookie cache keeps an entry). */
  private tell(data: SessionData, reason: SessionEndReason, detail: string): void {
    const key = `${data.id}\u0000${reason}`;
    if (this.told.get(key)) return;
    this.told.set(key, true);
    this.hooks.ended(data, reason, detail);
  }

  /**
   * The latest state this instance knows of a session seen as `entry` (refreshed, rolled or
   * switched since, here), neither touched nor refreshed: what an open WebSocket is judged by.
   */
  latest(entry: SessionEntry): SessionEntry {
    let e = entry;
    for (let i = 0; i < 64; i++) {
      // The cache may hold a newer object for the same cookie (read again after `e` was evicted).
      const cached = e.next ? undefined : this.entries.get(e.value);
      const next = e.next ?? (cached !== e ? cached : undefined);
      if (!next) break;
      e = next;
    }
    return e;
  }

  /**
   * `live` for a session the realm has since described otherwise (another session of the same
   * user saw a demotion): refreshed now, whatever its token's expiry, so it is not believed on
   * its older facts; undefined when that cannot be done (refused until it is).
   */
  async renewNow(entry: SessionEntry, found: { value: string; names: string[] }, jar?: SessionCookies): Promise<SessionEntry | undefined> {
    const renewed = await this.refreshed(entry, found, epoch(), jar);
    return renewed && renewed !== entry && renewed.data !== entry.data ? renewed : undefined;
  }

  /** Replace a live session's data (tenant switch) and set the new cookie. */
  async replace(entry: SessionEntry, data: SessionData, names: string[], jar: SessionCookies): Promise<SessionEntry> {
    const next = await this.entryOf(data, entry.header.iat);
    entry.next = next;
    this.entries.set(next.value, next);
    addSetCookie(jar, this.codec.setCookieLines(next.value, next.header.exp, names));
    this.hooks.changed?.(data);
    return next;
  }

  private refreshOnce(data: SessionData): Promise<RefreshResult> {
    return this.refreshing.run(refreshStateName(data), () => this.hooks.refresh(data));
  }

  clear(): void {
    this.entries.clear();
  }
}
