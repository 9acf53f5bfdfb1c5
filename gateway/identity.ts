// Who a request comes from, as the gateway verified it: an OIDC session (the express-openid-connect
// cookie, code flow against OIDC_ISSUER_URL) or a realm bearer JWT. This file defines the seam the
// data plane depends on and implements it.
//
//   control routes (Express): express-openid-connect runs only on /auth/start, /auth/callback and
//     /auth/logout. `afterCallback` trims the session (gateway/session.ts) to the user's identity
//     computed once at login, the refresh token and the access token's expiry: no ID token, no
//     access token, so the cookie stays one cookie (about 1.7 to 2.4 KB with Keycloak's refresh token).
//     Logout therefore sends Keycloak `client_id` + `post_logout_redirect_uri` instead of
//     `id_token_hint` (Keycloak then asks the user to confirm), and revokes the refresh token.
//   data plane (`authenticate`): no Express. A realm bearer JWT is verified with jose against the
//     issuer's JWKS; otherwise the session cookie is decrypted (cached by value) and refreshed at
//     the token endpoint shortly before the access token expires (TOKEN_REFRESH_MARGIN_SECONDS),
//     also renewing the user's roles, groups and tenants. A refused refresh (4xx) ends the session;
//     an unreachable realm does not, but an expired access token is then not honoured.
//   Per process: the session cache, single-flight refresh and the set of ended sessions (logout,
//     refused refresh). With several workers a copy of an ended session's cookie can live on in
//     another worker until its next refresh, which the realm refuses.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import express, { Router, type Request, type Response, type NextFunction } from 'express';
import { auth } from 'express-openid-connect';
import { createRemoteJWKSet, decodeJwt, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Settings } from '../config/settings.js';
import type { Observability } from './observability.js';
import { PAGE_HEADERS, pageLocale, renderCatalogDown } from './login-pages.js';
import { epoch, isSessionData, readSessionCookie, SessionCodec, SessionStore, TtlCache, withoutGatewayCookies, type RefreshResult, type SessionData, type SessionUser } from './session.js';
import { isLocaleSegment, safeReturnTo } from '../policies/login-routing.js';
import { clientKey } from './login-routing.js';

export interface Identity {
  sub: string;
  email: string;
  name: string;
  /** realm roles from OAUTH_ROLES_CLAIM (ID token, userinfo or access token) */
  roles: string[];
  /** one of OAUTH_ADMIN_ROLES is among the roles */
  admin: boolean;
  groups: string[];
  tenants: string[];
  activeTenant: string | null;
  /** how it was verified; a cookie session is an ambient credential (CSRF, WebSocket Origin) */
  via: 'session' | 'bearer';
}

export interface Authenticator {
  /** /auth/start, /auth/callback, /auth/logout, /auth/session, /auth/session/tenant */
  router: Router;
  /**
   * The verified identity of a request, or undefined. May refresh the session's tokens and then
   * sets the renewed cookie on `res`; `res` is absent for WebSocket upgrades.
   * The gateway's own credentials are consumed here: a realm-issued bearer JWT and the session
   * cookies are removed from `req.headers`, so they never reach the chat front-end (which could not
   * use them, and would take a realm JWT in `Authorization` for its own credential).
   */
  authenticate(req: IncomingMessage, res?: ServerResponse): Promise<Identity | undefined>;
  /** For /readyz: can the identity provider be reached? */
  ready(): Promise<{ ok: boolean; detail: string }>;
  close(): Promise<void>;
}

interface Discovery {
  issuer: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint?: string;
  revocation_endpoint?: string;
}

/** Asymmetric algorithms only: never `none`, never HS* (the public key is public). */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const CLOCK_TOLERANCE_S = 5;
const HTTP_TIMEOUT_MS = 5_000;
const DISCOVERY_TTL_MS = 10 * 60_000;
const LOCAL_ROUTES = /^\/auth\/(start|callback|logout|session)(\/|$)/;
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const TENANT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** The chat front-end's own words for a request without a credential. */
export const NOT_AUTHENTICATED = 'Not authenticated';
/** Open WebUI's session cookie (its JWT). */
const UPSTREAM_SESSION_COOKIE = 'token';

const trimSlash = (s: string) => s.replace(/\/+$/, '');

/** A claim by name, or by dotted path (`realm_access.roles`); a literal dotted name wins. */
export function claimAt(claims: Record<string, unknown> | undefined, path: string): unknown {
  if (!claims) return undefined;
  if (path in claims) return claims[path];
  let v: unknown = claims;
  for (const part of path.split('.')) {
    if (!v || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** An array of strings, or a comma-separated string. */
export function stringList(v: unknown): string[] {
  const raw = Array.isArray(v) ? v : typeof v === 'string' ? v.split(',') : [];
  return raw.filter((x): x is string => typeof x === 'string').map((s) => s.trim()).filter(Boolean);
}

const union = (...lists: string[][]) => [...new Set(lists.flat())];
const firstString = (...vs: unknown[]) => vs.find((v): v is string => typeof v === 'string' && v.trim() !== '')?.trim();

/**
 * The user from verified claims. Roles: OAUTH_ROLES_CLAIM in the ID token, userinfo and access
 * token, plus the access token's `realm_access.roles` (where Keycloak puts realm roles by default).
 * No email: not an identity (the chat front-end keys its users by email).
 */
export function userFromClaims(settings: Settings, sources: { id?: JWTPayload; userinfo?: Record<string, unknown>; access?: JWTPayload }): SessionUser | { error: string } {
  const { id, userinfo, access } = sources;
  const all = [id, userinfo, access].filter((c): c is Record<string, unknown> => !!c);
  const subs = new Set(all.map((c) => c.sub).filter((s) => typeof s === 'string'));
  if (subs.size !== 1) return { error: subs.size ? 'the tokens name different subjects' : 'no subject' };
  const email = firstString(...all.map((c) => c.email));
  if (!email) return { error: 'no email claim' };
  const o = settings.oidc;
  return {
    sub: [...subs][0] as string,
    email,
    name: firstString(...all.map((c) => c.name), ...all.map((c) => c.preferred_username)) ?? email,
    roles: union(...all.map((c) => stringList(claimAt(c, o.rolesClaim))), stringList(claimAt(access, 'realm_access.roles'))),
    groups: union(...all.map((c) => stringList(claimAt(c, o.groupsClaim)))),
    tenants: union(...all.map((c) => stringList(claimAt(c, o.tenantsClaim)))),
  };
}

export const defaultTenant = (u: SessionUser): string | null => u.tenants[0] ?? null;

/** Where to land after sign-in: a local path (policies/login-routing.ts), never back into /auth. */
export function returnToAfterSignIn(value: unknown): string {
  const local = safeReturnTo(value);
  return local && !/^\/auth(\/|\?|#|$)/.test(local) ? local : '/';
}

export async function createAuthenticator(settings: Settings, obs: Observability): Promise<Authenticator> {
  const o = settings.oidc;
  if (!o.issuerUrl || !o.clientId || !o.clientSecret || !o.sessionSecrets.length) {
    obs.log.warn('sign-in is not configured (OIDC_ISSUER_URL, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, SESSION_SECRET): nobody is authenticated');
    const router = Router();
    router.use((req, res, next) => (LOCAL_ROUTES.test(req.path) ? void res.status(503).json({ detail: 'Sign-in is not configured' }) : next()));
    return { router, authenticate: async () => undefined, ready: async () => ({ ok: false, detail: 'sign-in not configured' }), close: async () => {} };
  }
  const issuer = trimSlash(o.issuerUrl);
  const codec = new SessionCodec(o.sessionSecrets, { secure: settings.publicUrl.startsWith('https:'), rollingSeconds: o.rollingSeconds, absoluteSeconds: o.absoluteSeconds });
  const bearers = new TtlCache<string, { identity: Identity; exp: number }>(20_000, 5 * 60_000);

  // ---- the identity provider: discovery, JWKS, token endpoint -------------------------------

  let discovered: { at: number; value: Promise<Discovery> } | undefined;
  let jwks: { uri: string; set: ReturnType<typeof createRemoteJWKSet> } | undefined;

  async function fetchDiscovery(timeoutMs: number): Promise<Discovery> {
    const res = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
    if (res.status !== 200) throw new Error(`discovery answered ${res.status}`);
    const d = (await res.json()) as Partial<Discovery>;
    if (typeof d.issuer !== 'string' || trimSlash(d.issuer) !== issuer) throw new Error(`discovery names issuer ${JSON.stringify(d.issuer)}, not ${issuer}`);
    if (typeof d.token_endpoint !== 'string' || typeof d.jwks_uri !== 'string') throw new Error('discovery lacks token_endpoint or jwks_uri');
    return d as Discovery;
  }

  function discovery(): Promise<Discovery> {
    const now = Date.now();
    if (!discovered || now - discovered.at > DISCOVERY_TTL_MS) {
      const value = fetchDiscovery(HTTP_TIMEOUT_MS);
      const entry = { at: now, value };
      discovered = entry;
      // A failure is remembered for a few seconds only.
      value.catch(() => {
        if (discovered === entry) entry.at = now - DISCOVERY_TTL_MS + 5_000;
      });
    }
    return discovered.value;
  }

  async function keySet() {
    const d = await discovery();
    if (jwks?.uri !== d.jwks_uri) {
      // Cached; an unknown `kid` refetches (at most every 30 s): key rotation works without a restart.
      jwks = { uri: d.jwks_uri, set: createRemoteJWKSet(new URL(d.jwks_uri), { timeoutDuration: HTTP_TIMEOUT_MS, cooldownDuration: 30_000, cacheMaxAge: DISCOVERY_TTL_MS }) };
    }
    return { d, set: jwks.set };
  }

  /**
   * A realm JWT intended for this gateway: signature (JWKS), issuer, expiry, and audience. Keycloak
   * access tokens name the client in `azp` and often carry `aud: account` only, so `aud` containing
   * the client id OR `azp` equal to it is accepted. ID and refresh tokens (`typ` ID, Refresh) are not.
   */
  async function verifyRealmJwt(token: string): Promise<JWTPayload> {
    const { d, set } = await keySet();
    const { payload } = await jwtVerify(token, set, { issuer: d.issuer, algorithms: ALGORITHMS, clockTolerance: CLOCK_TOLERANCE_S, requiredClaims: ['exp', 'sub'] });
    const aud = typeof payload.aud === 'string' ? [payload.aud] : payload.aud ?? [];
    if (!aud.includes(o.clientId) && payload.azp !== o.clientId) throw new Error('token is not meant for this client');
    if (payload.typ !== undefined && String(payload.typ).toLowerCase() !== 'bearer') throw new Error(`token typ ${String(payload.typ)} is not an access token`);
    return payload;
  }

  /** An ID token of this realm for this client: signature (JWKS), issuer, audience; expiry with tolerance. */
  async function verifyIdToken(token: string): Promise<JWTPayload> {
    const { d, set } = await keySet();
    const { payload } = await jwtVerify(token, set, { issuer: d.issuer, audience: o.clientId, algorithms: ALGORITHMS, clockTolerance: CLOCK_TOLERANCE_S, requiredClaims: ['sub'] });
    return payload;
  }

  async function tokenRequest(endpoint: string, form: Record<string, string>): Promise<globalThis.Response> {
    const basic = Buffer.from(`${encodeURIComponent(o.clientId)}:${encodeURIComponent(o.clientSecret)}`).toString('base64');
    return fetch(endpoint, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(form).toString(),
      signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
    });
  }

  async function userinfo(accessToken: string): Promise<Record<string, unknown> | undefined> {
    const d = await discovery();
    if (!d.userinfo_endpoint) return undefined;
    const res = await fetch(d.userinfo_endpoint, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
    return res.status === 200 ? ((await res.json()) as Record<string, unknown>) : undefined;
  }

  /** The user behind freshly issued tokens (login or refresh). Both tokens are verified with the realm's keys. */
  async function userOfTokens(idToken: string | undefined, accessToken: string | undefined): Promise<SessionUser> {
    // OIDC Core 3.1.3.7 would allow skipping the ID token's signature over TLS from the token
    // endpoint; the gateway checks it anyway with the key set it holds: its claims (roles) decide
    // who is an admin, and the realm may sit behind plain http inside a network.
    const id = idToken ? await verifyIdToken(idToken) : undefined;
    const access = accessToken && JWT_SHAPE.test(accessToken) ? await verifyRealmJwt(accessToken) : undefined;
    let user = userFromClaims(settings, { id, access });
    if ('error' in user && user.error === 'no email claim' && accessToken) user = userFromClaims(settings, { id, access, userinfo: await userinfo(accessToken).catch(() => undefined) });
    if ('error' in user) throw Object.assign(new Error(`sign-in refused: ${user.error}`), { status: 403 });
    return user;
  }

  // ---- sessions ------------------------------------------------------------------------------

  async function refresh(data: SessionData): Promise<RefreshResult> {
    if (!data.refresh_token) return { kind: 'ended', reason: 'no refresh token' };
    let res: globalThis.Response;
    try {
      res = await tokenRequest((await discovery()).token_endpoint, { grant_type: 'refresh_token', refresh_token: data.refresh_token });
    } catch (err) {
      return { kind: 'unavailable', reason: (err as Error).message };
    }
    const body = (await res.json().catch(() => ({}))) as { access_token?: string; id_token?: string; refresh_token?: string; expires_in?: number; error?: string };
    if (res.status >= 500 || res.status === 429) return { kind: 'unavailable', reason: `token endpoint answered ${res.status}` };
    if (res.status !== 200 || typeof body.access_token !== 'string') return { kind: 'ended', reason: `refresh refused: ${res.status} ${body.error ?? ''}`.trim() };
    try {
      const user = await userOfTokens(body.id_token, body.access_token);
      if (user.sub !== data.user.sub) return { kind: 'ended', reason: 'refresh named another subject' };
      const expiresAt = typeof body.expires_in === 'number' ? epoch() + body.expires_in : (decodeJwt(body.access_token).exp ?? epoch());
      const active = data.active_tenant && user.tenants.includes(data.active_tenant) ? data.active_tenant : defaultTenant(user);
      return { kind: 'ok', data: { ...data, user, active_tenant: active, refresh_token: body.refresh_token ?? data.refresh_token, expires_at: expiresAt } };
    } catch (err) {
      // The JWKS (new signing key) could not be fetched: ask again later; anything else is final.
      const e = err as Error;
      const transient = e instanceof joseErrors.JWKSTimeout || ['TypeError', 'AbortError', 'TimeoutError'].includes(e.name);
      return { kind: transient ? 'unavailable' : 'ended', reason: e.message };
    }
  }

  const store = new SessionStore(codec, o, {
    refresh,
    ended: (data, reason) => obs.audit.info({ event: 'session-ended', sub: data.user.sub, email: data.user.email, reason }, 'session ended'),
    unavailable: (data, reason) => obs.log.warn({ reason, sub: data.user.sub }, 'token refresh unavailable'),
    lookup: (hit) => obs.metrics.cache.tally('session', hit ? 'hit' : 'miss'),
  });

  // A browser sends the same Cookie header request after request: it is split once (what goes
  // upstream, the session cookie in it), and each session state has one Identity object, which
  // the data plane keys its own derived values on.
  const cookieHeaders = new TtlCache<string, { rest: string; session: ReturnType<typeof readSessionCookie> }>(20_000, 5 * 60_000);
  const sessionIdentities = new WeakMap<SessionData, Identity>();
  const sessionIdentity = (data: SessionData): Identity => {
    let identity = sessionIdentities.get(data);
    if (!identity) sessionIdentities.set(data, (identity = identityOf(data.user, data.active_tenant, 'session')));
    return identity;
  };

  const identityOf = (u: SessionUser, activeTenant: string | null, via: Identity['via']): Identity => ({
    ...u,
    admin: u.roles.some((r) => o.adminRoles.includes(r)),
    activeTenant,
    via,
  });

  function realmBearer(authorization: string | string[] | undefined): string | undefined {
    const m = typeof authorization === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
    const token = m?.[1];
    if (!token) return undefined;
    // A token verified lately is a realm token: no need to decode it again on every request.
    if (bearers.get(token)) return token;
    if (!JWT_SHAPE.test(token)) return undefined;
    try {
      const iss = decodeJwt(token).iss;
      return typeof iss === 'string' && trimSlash(iss) === issuer ? token : undefined;
    } catch {
      return undefined;
    }
  }

  async function bearerIdentity(token: string): Promise<Identity | undefined> {
    const hit = bearers.get(token);
    if (hit) return hit.exp > epoch() - CLOCK_TOLERANCE_S ? hit.identity : undefined;
    try {
      const payload = await verifyRealmJwt(token);
      const user = userFromClaims(settings, { access: payload });
      if ('error' in user) {
        obs.log.info({ reason: user.error, sub: payload.sub }, 'bearer token is not an identity');
        return undefined;
      }
      const identity = identityOf(user, defaultTenant(user), 'bearer');
      bearers.set(token, { identity, exp: payload.exp! });
      return identity;
    } catch (err) {
      obs.log.debug({ reason: (err as Error).message }, 'bearer token refused');
      return undefined;
    }
  }

  async function authenticate(req: IncomingMessage, res?: ServerResponse): Promise<Identity | undefined> {
    const headers = req.headers;
    let identity: Identity | undefined;
    const bearer = realmBearer(headers.authorization);
    if (bearer) {
      delete headers.authorization;
      identity = await bearerIdentity(bearer);
    }
    const cookie = headers.cookie;
    if (typeof cookie === 'string' && /appSession|auth_verification/.test(cookie)) {
      let split = cookieHeaders.get(cookie);
      if (!split) cookieHeaders.set(cookie, (split = { rest: withoutGatewayCookies(cookie), session: readSessionCookie(cookie) }));
      if (split.rest) headers.cookie = split.rest;
      else delete headers.cookie;
      const entry = split.session && !identity ? await store.live(split.session, res) : undefined;
      if (entry) identity = sessionIdentity(entry.data);
    }
    return identity;
  }

  // ---- control routes ------------------------------------------------------------------------

  const oidc = auth({
    issuerBaseURL: issuer,
    baseURL: settings.publicUrl,
    clientID: o.clientId,
    clientSecret: o.clientSecret,
    clientAuthMethod: 'client_secret_basic',
    secret: o.sessionSecrets,
    authRequired: false,
    idpLogout: true,
    auth0Logout: false,
    enableTelemetry: false,
    httpTimeout: HTTP_TIMEOUT_MS,
    routes: { login: false, logout: false, callback: '/auth/callback', postLogoutRedirect: '/auth/login' },
    authorizationParams: { response_type: 'code', scope: o.scopes },
    session: { rolling: true, rollingDuration: o.rollingSeconds, absoluteDuration: o.absoluteSeconds, cookie: { sameSite: 'Lax' } },
    getLoginState: (_req, options) => ({ returnTo: options.returnTo, tenant: (options as { tenant?: string }).tenant }),
    // Keep only what the gateway needs: the identity, the refresh token, the access token's expiry.
    afterCallback: async (_req, res, session, state) => {
      const user = await userOfTokens(session.id_token, session.access_token);
      // A new sign-in starts with no chat front-end token of whoever used this browser before.
      res.clearCookie(UPSTREAM_SESSION_COOKIE, { path: '/' });
      const linked = typeof state.tenant === 'string' ? state.tenant : undefined;
      const member = linked !== undefined && user.tenants.includes(linked);
      const data: SessionData = {
        v: 1,
        id: randomBytes(16).toString('base64url'),
        user,
        active_tenant: member ? linked! : defaultTenant(user),
        refresh_token: typeof session.refresh_token === 'string' ? session.refresh_token : null,
        expires_at: typeof session.expires_at === 'number' ? session.expires_at : epoch(),
      };
      const admin = user.roles.some((r) => o.adminRoles.includes(r));
      obs.audit.info({ event: 'sign-in', sub: user.sub, email: user.email, admin, tenantLink: linked ?? null, tenantLinkMember: linked ? member : null }, 'signed in');
      return data as unknown as typeof session;
    },
  });

  const router = Router();
  router.use((req, res, next) => {
    // `/{locale}/auth/start` and friends are the same routes.
    const m = /^\/([^/]+)(\/auth\/(?:start|logout|session)(?:\/.*)?)$/.exec(req.path);
    if (m && isLocaleSegment(m[1]!)) req.url = m[2]! + req.url.slice(req.path.length);
    if (/^\/auth\/(start|callback|logout)\/?$/.test(req.path)) return oidc(req, res, next);
    next();
  });

  router.get('/auth/start', (req, res) => {
    const idp = typeof req.query.idp === 'string' && TENANT_ID.test(req.query.idp) ? req.query.idp : undefined;
    const tenant = typeof req.query.tenant === 'string' && TENANT_ID.test(req.query.tenant) ? req.query.tenant : undefined;
    const locale = typeof req.query.locale === 'string' && isLocaleSegment(req.query.locale) ? req.query.locale : undefined;
    const authorizationParams = { ...(idp ? { kc_idp_hint: idp, idp_hint: idp } : {}), ...(locale ? { ui_locales: locale } : {}) };
    res.set('cache-control', 'no-store');
    void res.oidc.login({ returnTo: returnToAfterSignIn(req.query.returnTo), tenant, authorizationParams } as Parameters<typeof res.oidc.login>[0]);
  });

  router.get('/auth/logout', (req, res) => {
    const r = req as unknown as { appSession?: Partial<SessionData> | null };
    const data = r.appSession;
    if (isSessionData(data)) {
      store.revoke(data.id);
      obs.audit.info({ event: 'sign-out', sub: data.user.sub, email: data.user.email }, 'signed out');
      if (data.refresh_token) void revokeRefreshToken(data.refresh_token);
    }
    r.appSession = undefined; // clears every appSession cookie on the way out
    // The chat front-end's own session lives in its `token` cookie: end it too, or the next user of
    // this browser would carry the last user's token (and the chat front-end answers "User mismatch").
    res.clearCookie(UPSTREAM_SESSION_COOKIE, { path: '/' });
    res.set('cache-control', 'no-store');
    // No id_token_hint (the ID token is not kept): Keycloak accepts client_id with post_logout_redirect_uri.
    void res.oidc.logout({ returnTo: '/auth/login', logoutParams: { client_id: o.clientId } });
  });

  const sessionBody = (id: Identity | undefined) =>
    id
      ? { authenticated: true, user: { sub: id.sub, email: id.email, name: id.name, roles: id.roles, admin: id.admin }, tenants: id.tenants, active_tenant: id.activeTenant }
      : { authenticated: false };

  router.get('/auth/session', async (req, res) => {
    res.set('cache-control', 'private, no-store');
    res.json(sessionBody(await authenticate(req, res)));
  });

  router.post('/auth/session/tenant', express.json({ limit: '4kb' }), async (req, res) => {
    res.set('cache-control', 'private, no-store');
    const origin = req.headers.origin;
    if (origin !== undefined && !settings.allowedOrigins.includes(origin)) return void res.status(403).json({ detail: 'Forbidden origin' });
    if (!req.is('application/json')) return void res.status(415).json({ detail: 'Send JSON: {"tenant_id": "..."}' });
    const found = readSessionCookie(req.headers.cookie);
    const entry = found ? await store.live(found, res) : undefined;
    if (!found || !entry) return void res.status(401).json({ detail: NOT_AUTHENTICATED });
    const tenant = (req.body as { tenant_id?: unknown } | undefined)?.tenant_id;
    if (typeof tenant !== 'string' || !TENANT_ID.test(tenant)) return void res.status(400).json({ detail: 'tenant_id must be a tenant id' });
    if (!entry.data.user.tenants.includes(tenant)) {
      obs.audit.info({ event: 'tenant-switch-denied', sub: entry.data.user.sub, tenant }, 'not a member of the tenant');
      return void res.status(403).json({ detail: 'Not a member of this tenant' });
    }
    const next = store.replace(entry, { ...entry.data, active_tenant: tenant }, found.names, res);
    res.json(sessionBody(identityOf(next.data.user, tenant, 'session')));
  });

  router.use(async (err: Error & { status?: number; error?: string }, req: Request, res: Response, next: NextFunction) => {
    const status = typeof err.status === 'number' && err.status >= 400 && err.status < 500 ? err.status : 0;
    if (!status && !res.headersSent && /^\/auth\/(start|callback|logout)\/?$/.test(req.path)) {
      // The realm cannot be reached (discovery, token endpoint): a page that says so, not a 500.
      obs.log.warn({ err: { message: err.message }, path: req.path }, 'sign-in unavailable: the identity provider cannot be reached');
      const retryHref = req.path.startsWith('/auth/start') ? req.originalUrl : '/auth/login';
      return void res.status(503).set(PAGE_HEADERS).set('retry-after', '30').send(renderCatalogDown({ locale: pageLocale(undefined), retryHref }));
    }
    if (!status || res.headersSent || !LOCAL_ROUTES.test(req.path)) return next(err);
    obs.log.warn({ err: { message: err.message, error: err.error }, path: req.path }, 'sign-in failed');
    if (req.path.startsWith('/auth/callback')) obs.auditAnonymous(clientKey(req.socket.remoteAddress), { event: 'sign-in-failed', reason: err.error ?? err.message, status }, 'sign-in failed');
    // A callback replayed (Back button) by a browser that is signed in: nothing to do.
    if (req.path.startsWith('/auth/callback') && (await authenticate(req).catch(() => undefined))) return void res.redirect('/');
    const detail = req.path.startsWith('/auth/session') ? 'Invalid request body' : status === 403 ? err.message : 'Sign-in failed, please start again';
    res.status(status).json({ detail, error: err.error });
  });

  async function revokeRefreshToken(token: string): Promise<void> {
    try {
      const d = await discovery();
      if (d.revocation_endpoint) await tokenRequest(d.revocation_endpoint, { token, token_type_hint: 'refresh_token' });
    } catch (err) {
      obs.log.info({ reason: (err as Error).message }, 'refresh token revocation failed');
    }
  }

  let probe: { at: number; result: Promise<{ ok: boolean; detail: string }> } | undefined;

  return {
    router,
    authenticate,
    ready() {
      const now = Date.now();
      if (!probe || now - probe.at > 5_000) {
        probe = {
          at: now,
          result: fetchDiscovery(2_000).then(
            () => ({ ok: true, detail: `identity provider ${issuer} reachable` }),
            (err: Error) => ({ ok: false, detail: `identity provider ${issuer}: ${err.message}` }),
          ),
        };
      }
      return probe.result;
    },
    async close() {
      store.clear();
      bearers.clear();
      cookieHeaders.clear();
    },
  };
}
