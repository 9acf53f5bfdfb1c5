// The gateway's session cookie: a format the gateway owns, written and read only here. A format
// change bumps `v` and keeps reading the one before (docs/design/session-cookie.md, "The format").
import { decodeProtectedHeader } from 'jose';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { CLEAR_SITE_DATA } from '../http/respond.js';
import { withoutCookies } from '../http/request-headers.js';
import { Sealer } from './sealed.js';

export const SESSION_COOKIE = 'appSession';
const MAX_COOKIE_SIZE = 4096;
/** The cookie format this gateway writes (the protected header's `v`). */
export const SESSION_FORMAT_VERSION = 2;
/** What a cookie's protected header may say it is: this format, or none (express-openid-connect's). */
const READABLE_VERSIONS: ReadonlySet<unknown> = new Set([SESSION_FORMAT_VERSION, undefined]);

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
  private readonly sealer: Sealer;

  constructor(
    secrets: string[],
    private readonly options: CookieOptions,
  ) {
    this.sealer = new Sealer(secrets, 'JWE CEK');
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
    return this.sealer.seal(data, { v: SESSION_FORMAT_VERSION, ...header });
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
    const opened = await this.sealer.open(jwe);
    if (!opened) return undefined;
    const { iat, uat, exp } = opened.header;
    if (typeof iat !== 'number' || typeof uat !== 'number' || typeof exp !== 'number') return undefined;
    return { header: { iat, uat, exp }, data: opened.value, version: v as number | undefined };
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
