// Who a request comes from, as the gateway verified it: its session cookie (code flow against
// OIDC_ISSUER_URL) or a realm bearer JWT. The data plane depends on this seam only; each part of it
// (sign-in, sign-out, refresh, bearer tokens, the session API) is a module of its own, put together
// here. Ended sessions that cannot be checked (Redis down) throw SharedStateUnavailable, and an expired
// access token the realm does not renew SessionRenewalUnavailable: the request gets a 503, never a
// pass. How the session is kept: docs/design/session-cookie.md.
import type { IncomingMessage } from 'node:http';
import { Router } from 'express';
import { decodeJwt } from 'jose';
import type { Settings } from '../../config/settings.js';
import type { Observability } from '../observability/observability.js';
import type { SharedState } from '../state/shared-state.js';
import { processState } from '../state/process-state.js';
import { CLOCK_TOLERANCE_S, realmClient, trimSlash, type RealmClient } from './realm.js';
import { LoadingCache, TtlCache } from '../cache/cache.js';
import { epoch, readSessionCookie, scopeOf, SessionCodec, type AuthScope, withoutGatewayCookies, type SessionUser } from './session-cookie.js';
import { SessionStore, type SessionEntry } from './session-store.js';
import { tellSessionEnd } from './session-end.js';
import { isLocaleSegment } from '../../policies/syntax.js';
import { userFromClaims } from './claims.js';
import { mountSessionApi } from './session-api.js';
import { createBearerTokens, JWT_SHAPE, type BearerTokens } from './bearer-tokens.js';
import { createBearerIntrospection } from './bearer-introspection.js';
import { LOCAL_ROUTES, signInErrors } from './sign-in-errors.js';
import { mountSignOut, type SignOutParts } from './sign-out.js';
import { BACKCHANNEL_LOGOUT_PATH, backChannelLogout, mountBackChannelLogout } from './backchannel-logout.js';
import { createRefresh } from './refresh.js';
import { mountSignIn, returnToAfterSignIn } from './sign-in.js';
import { bearerSocketVerdict, socketVerdict, type SocketVerdict } from '../../policies/session-ends.js';
import type { Authenticator, Identity, SocketIdentity } from './identity.js';
import { UserFacts } from './user-facts.js';

export { BACKCHANNEL_LOGOUT_PATH, returnToAfterSignIn };

type OidcSettings = Settings['oidc'];

/** Sign-in not configured: nobody is authenticated, and the /auth routes say why. */
export function unconfiguredAuthenticator(obs: Observability): Authenticator {
  obs.log.warn('sign-in is not configured (OIDC_ISSUER_URL, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, SESSION_SECRET): nobody is authenticated');
  const router = Router();
  router.use((req, res, next) => (LOCAL_ROUTES.test(req.path) ? void res.status(503).json({ detail: 'Sign-in is not configured' }) : next()));
  return { router, authenticate: async () => undefined, ready: async () => ({ ok: false, detail: 'sign-in not configured' }), close: async () => {} };
}

/** The user behind freshly issued tokens (login or refresh). Both tokens are verified with the realm's keys. */
export function usersOfTokens(o: OidcSettings, realm: RealmClient) {
  return async function userOfTokens(idToken: string | undefined, accessToken: string | undefined): Promise<SessionUser> {
    // OIDC Core 3.1.3.7 would allow skipping the ID token's signature over TLS from the token
    // endpoint; the gateway checks it anyway with the key set it holds: its claims (roles) decide
    // who is an admin, and the realm may sit behind plain http inside a network.
    const id = idToken ? await realm.verifyIdToken(idToken) : undefined;
    const access = accessToken && JWT_SHAPE.test(accessToken) ? await realm.verifyRealmJwt(accessToken) : undefined;
    let user = userFromClaims(o, { id, access });
    if ('error' in user && user.error === 'no email claim' && accessToken)
      user = userFromClaims(o, { id, access, userinfo: await realm.userinfo(accessToken, id?.sub ?? access?.sub).catch(() => undefined) });
    if ('error' in user) throw Object.assign(new Error(`sign-in refused: ${user.error}`), { status: 403 });
    return user;
  };
}

/** The sign-in parts put together: the realm, sessions, bearer tokens and the /auth routes. */
export async function createAuthenticator(
  settings: Pick<Settings, 'oidc' | 'publicUrl' | 'allowedOrigins'>,
  obs: Observability,
  shared: SharedState = processState(obs),
  signOut: Pick<SignOutParts, 'realmLogoutGraceMs'> = {},
): Promise<Authenticator> {
  const o = settings.oidc;
  if (!o.issuerUrl || !o.clientId || !o.clientSecret || !o.sessionSecrets.length) return unconfiguredAuthenticator(obs);
  const issuer = trimSlash(o.issuerUrl);
  const codec = new SessionCodec(o.sessionSecrets, {
    secure: settings.publicUrl.startsWith('https:'),
    rollingSeconds: o.rollingSeconds,
    absoluteSeconds: o.absoluteSeconds,
  });
  // The realm: openid-client's Configuration, its keys, its endpoints (gateway/auth/realm.ts).
  const realm = realmClient(issuer, o.clientId, o.clientSecret);
  const userOfTokens = usersOfTokens(o, realm);
  const refresh = createRefresh({ o, codec, shared, realm, userOfTokens });
  const facts = new UserFacts(o.adminRoles, o.absoluteSeconds);

  // Every change to a session here is told (open WebSockets are judged again at once): its end
  // recorded (sign-out, a refused refresh, back-channel logout: all go through `end`), its refresh
  // or a tenant switch.
  const changeListeners: Array<(sessionId: string | undefined) => void> = [];
  const changed = (sessionId: string | undefined) => {
    for (const listener of changeListeners) listener(sessionId);
  };
  const ends: Pick<SharedState, 'end' | 'isEnded' | 'settle' | 'firstUse'> = {
    end(by, until) {
      const written = shared.end(by, until);
      changed('id' in by ? by.id : undefined);
      return written;
    },
    isEnded: (s, now) => shared.isEnded(s, now),
    settle: () => shared.settle(),
    firstUse: (jti, until) => shared.firstUse(jti, until),
  };
  const store = new SessionStore(
    codec,
    o,
    {
      refresh,
      ended: (data, reason, detail) =>
        tellSessionEnd(obs, reason, { event: 'session-ended', sub: data.user.sub, email: data.user.email, detail }, 'session ended'),
      endApplied: (data, detail) => obs.log.debug({ sub: data.user.sub, detail }, "session ended by another instance's refresh (told there)"),
      unavailable: (data, reason) => obs.log.warn({ reason, sub: data.user.sub }, 'token refresh unavailable'),
      lookup: (hit) => obs.metrics.cache.tally('session', hit ? 'hit' : 'miss'),
      changed: (data) => changed(data.id),
    },
    ends,
  );
  const identityOf = facts.identityOf.bind(facts);
  const introspection = o.bearerIntrospection
    ? createBearerIntrospection({ introspect: realm.introspect, cacheSeconds: o.introspectionCacheSeconds, obs })
    : undefined;
  const bearerTokens = createBearerTokens({ issuer, clientId: o.clientId, introspection, o, verifyRealmJwt: realm.verifyRealmJwt, obs, identityOf });
  const authenticator = new SessionAuthenticator(issuer, realm, codec, store, shared, bearerTokens, facts, changeListeners);

  // ---- control routes
  const router = authenticator.router;
  router.use((req, res, next) => {
    // `/{locale}/auth/start` and friends are the same routes.
    const m = /^\/([^/]+)(\/auth\/(?:start|logout|session)(?:\/.*)?)$/.exec(req.path);
    if (m && isLocaleSegment(m[1]!)) req.url = m[2]! + req.url.slice(req.path.length);
    if (m && isLocaleSegment(m[1]!)) res.locals.locale = m[1];
    next();
  });
  const authenticate = authenticator.authenticate.bind(authenticator);
  mountSignIn(router, { settings, realm, store, shared, obs, userOfTokens });
  // OIDC Back-Channel Logout 1.0: the realm's logout token ends sessions on every instance.
  mountBackChannelLogout(router, realm.verifyLogoutToken, backChannelLogout(o, ends, obs), obs);
  authenticator.whenClosing(mountSignOut(router, { settings, store, shared, obs, realm, ...signOut }));
  mountSessionApi(router, { settings, store, obs, authenticate, identityOf });
  router.use(signInErrors({ obs, authenticate }));
  return authenticator;
}

/**
 * Who a request or an upgraded socket comes from: a realm bearer JWT, else the session cookie
 * (decrypted, checked against the ended sessions, refreshed when due).
 */
export class SessionAuthenticator implements Authenticator {
  readonly router = Router();
  /**
   * A browser sends the same Cookie header request after request: it is split once (what goes
   * upstream, the session cookie in it).
   */
  private readonly cookieHeaders = new TtlCache<string, { rest: string; session: ReturnType<typeof readSessionCookie> }>(20_000, 5 * 60_000);
  /** /readyz asks at most every 5 s (the probe itself never fails: its answer says why). */
  private readonly probe = new LoadingCache<{ ok: boolean; detail: string }>({
    ttlMs: 5_000,
    retryMs: 5_000,
    maxEntries: 1,
    now: Date.now,
    pinned: () => true,
  });
  /** what else ends with the authenticator (the sign-outs' refresh tokens still waiting to be revoked) */
  private readonly closing: Array<() => Promise<void>> = [];

  constructor(
    private readonly issuer: string,
    private readonly realm: RealmClient,
    private readonly codec: SessionCodec,
    private readonly store: SessionStore,
    private readonly shared: SharedState,
    private readonly bearerTokens: BearerTokens,
    private readonly facts: UserFacts,
    private readonly changeListeners: Array<(sessionId: string | undefined) => void>,
  ) {}

  async authenticate(req: IncomingMessage, scope: AuthScope = scopeOf(req.headers)): Promise<Identity | undefined> {
    const bearer = this.bearerTokens.realmBearer(scope.authorization);
    if (bearer) scope.authorization = undefined;
    // Both of the gateway's credentials leave what is sent upstream before anything waits.
    const session = this.gatewaySession(scope);
    const fromBearer = bearer ? await this.bearerIdentity(bearer) : undefined;
    if (fromBearer) return this.facts.stale(fromBearer) ? this.facts.asNewest(fromBearer) : fromBearer;
    if (!session) return undefined;
    const entry = await this.liveSession(session, scope);
    return entry ? this.facts.ofSession(entry.data) : undefined;
  }

  async authenticateSocket(req: IncomingMessage, scope: AuthScope): Promise<SocketIdentity | undefined> {
    const bearer = this.bearerTokens.realmBearer(scope.authorization);
    if (bearer) scope.authorization = undefined;
    const session = this.gatewaySession(scope);
    const fromBearer = bearer ? await this.bearerIdentity(bearer) : undefined;
    if (fromBearer) {
      // As long as a request would take it (the same clock tolerance).
      const until = (decodeJwt(bearer!).exp ?? 0) + CLOCK_TOLERANCE_S;
      return { identity: this.facts.stale(fromBearer) ? this.facts.asNewest(fromBearer) : fromBearer, verdict: () => bearerSocketVerdict(until, epoch()) };
    }
    if (!session) return undefined;
    const entry = await this.liveSession(session, scope);
    if (!entry) return undefined;
    const identity = this.facts.ofSession(entry.data);
    return { identity, key: entry.data.id, verdict: this.sessionVerdict(entry, identity) };
  }

  /**
   * A realm token's identity, unless the realm ended its session (back-channel logout by `sid`, or
   * by `sub` after the token was issued) and this instance knows it, or, for another client's
   * token, the realm says so when asked (RealmUnavailable when it cannot say). When the mirror
   * cannot tell (Redis away) the token stands on its own signature and lifetime, as it does without
   * Redis.
   */
  private async bearerIdentity(token: string): Promise<Identity | undefined> {
    const identity = await this.bearerTokens.bearerIdentity(token);
    if (!identity) return undefined;
    const ended = this.shared.isEnded({ id: '', ...this.bearerTokens.sessionOf(token) });
    if (ended === true) return undefined;
    // Only a token the realm must be asked about waits here (the gateway's own client's do not).
    const stands = this.bearerTokens.sessionStands(token);
    return stands === true || (await stands) ? identity : undefined;
  }

  onSessionChange(listener: (sessionId: string | undefined) => void): void {
    this.changeListeners.push(listener);
  }

  ready(): Promise<{ ok: boolean; detail: string }> {
    return this.probe.get('realm', () =>
      this.realm.fetchConfiguration(2_000).then(
        () => ({ ok: true, detail: `identity provider ${this.issuer} reachable` }),
        (err: Error) => ({ ok: false, detail: `identity provider ${this.issuer}: ${err.message}` }),
      ),
    );
  }

  whenClosing(close: () => Promise<void>): void {
    this.closing.push(close);
  }

  async close(): Promise<void> {
    await Promise.all(this.closing.map((close) => close()));
    this.store.clear();
    this.bearerTokens.clear();
    this.cookieHeaders.clear();
  }

  /** The session cookie of a request (removed with the gateway's other cookies from what goes upstream). */
  private gatewaySession(scope: AuthScope): { value: string; names: string[] } | undefined {
    const cookie = scope.cookie;
    if (typeof cookie !== 'string' || !/appSession|auth_verification/.test(cookie)) return undefined;
    let split = this.cookieHeaders.get(cookie);
    if (!split) this.cookieHeaders.set(cookie, (split = { rest: withoutGatewayCookies(cookie), session: readSessionCookie(cookie) }));
    scope.cookie = split.rest || undefined;
    return split.session;
  }

  /** The session's live entry; one whose facts the realm has since contradicted is renewed first (or refused until it can be). */
  private async liveSession(session: { value: string; names: string[] }, scope: AuthScope): Promise<SessionEntry | undefined> {
    const entry = await this.store.live(session, scope);
    return entry && this.facts.stale(this.facts.ofSession(entry.data)) ? this.store.renewNow(entry, session, scope) : entry;
  }

  /** An open socket's session as this instance now knows it: never touched or refreshed on the socket's behalf. */
  private sessionVerdict(first: SessionEntry, opened: Identity): () => SocketVerdict {
    let entry = first;
    return () => {
      const now = epoch();
      entry = this.store.latest(entry);
      const { data, header } = entry;
      return socketVerdict({
        ended: this.shared.isEnded({ id: data.id, sid: data.sid, sub: data.user.sub, iat: header.iat }, now),
        alive: this.codec.alive(header, now),
        tokenExpired: data.expires_at <= now,
        opened,
        // A later sign-in or refresh of the same user said otherwise: as if this session's own refresh had.
        current: this.facts.stale(opened) ? this.facts.newestOf(opened) : this.facts.ofSession(data),
      });
    };
  }
}
