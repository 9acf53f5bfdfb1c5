// Who a request comes from, as the gateway verified it: an OIDC session (the gateway's session
// cookie, gateway/auth/session-cookie.ts; code flow against OIDC_ISSUER_URL) or a realm bearer JWT. This
// file defines the seam the data plane depends on and implements it.
//
//   control routes (Express): the code flow (/auth/start, /auth/callback) in gateway/auth/sign-in.ts,
//     with openid-client (gateway/auth/realm.ts). The session (gateway/auth/session-cookie.ts, kept by gateway/auth/session-store.ts) holds
//     the user's identity computed once at login, the realm's session id (`sid`), the refresh
//     token and the access token's expiry: no ID or access token, so the cookie stays one cookie
//     (about 1.7 to 2.4 KB with Keycloak's refresh token). The ID token is kept beside it in the
//     shared state (gateway/state/shared-state.ts) for `id_token_hint`: logout then ends the realm
//     session without Keycloak's confirmation page.
//   logout, three ways, one effect (`endSession`): /auth/logout, the chat front-end's own sign-out
//     (POST /api/v1/auths/signout since Open WebUI 0.10.2, GET before; answered here, never forwarded), and the realm's back-channel
//     logout token. The ended session is recorded in the shared state: every instance refuses
//     every copy of its cookie.
//   data plane (`authenticate`): no Express. A realm bearer JWT is verified with jose against the
//     issuer's JWKS; otherwise the session cookie is decrypted (cached by value), checked against
//     the ended sessions, and refreshed at the token endpoint shortly before the access token
//     expires (TOKEN_REFRESH_MARGIN_SECONDS, at most half the token's lifetime), also renewing the
//     user's roles, groups and tenants. A refused refresh (4xx) ends the session; an unreachable
//     realm does not, but an expired access token is then not honoured. Ended sessions that cannot
//     be checked (Redis down) throw SharedStateUnavailable: the request gets a 503, never a pass.
//     Every end is told once, with its reason (gateway/auth/session-end.ts `tellSessionEnd`).
//   in their own modules, given only what they read: realm bearer JWTs in
//     gateway/auth/bearer-tokens.ts, the session API (GET /auth/session, POST
//     /auth/session/tenant) in gateway/auth/session-api.ts, what a failed sign-in answers in
//     gateway/auth/sign-in-errors.ts, signing out (`endSession`, /auth/logout, the chat
//     front-end's sign-out) in gateway/auth/sign-out.ts, the token refresh in
//     gateway/auth/refresh.ts, the back-channel logout token in gateway/auth/backchannel-logout.ts,
//     signing in in gateway/auth/sign-in.ts. What stays here: putting them together, `authenticate`.
import type { IncomingMessage } from 'node:http';
import { Router } from 'express';
import { decodeJwt } from 'jose';
import type { Settings } from '../../config/settings.js';
import { isChatAdmin } from '../../policies/admin-scoping.js';
import type { Observability } from '../observability/observability.js';
import type { SharedState } from '../state/shared-state.js';
import { processState } from '../state/process-state.js';
import { CLOCK_TOLERANCE_S, realmClient, trimSlash } from './realm.js';
import { LoadingCache, TtlCache } from '../cache/cache.js';
import {
  epoch,
  readSessionCookie,
  scopeOf,
  SessionCodec,
  type AuthScope,
  withoutGatewayCookies,
  type SessionData,
  type SessionUser,
} from './session-cookie.js';
import { SessionStore, type SessionEntry } from './session-store.js';
import { tellSessionEnd } from './session-end.js';
import { isLocaleSegment } from '../../policies/syntax.js';
import { activeTenantAtRefresh } from '../../policies/tenancy.js';
import { userFromClaims } from './claims.js';
import { mountSessionApi } from './session-api.js';
import { createBearerTokens, JWT_SHAPE } from './bearer-tokens.js';
import { LOCAL_ROUTES, signInErrors } from './sign-in-errors.js';
import { mountSignOut } from './sign-out.js';
import { BACKCHANNEL_LOGOUT_PATH, backChannelLogout, mountBackChannelLogout } from './backchannel-logout.js';
import { createRefresh } from './refresh.js';
import { mountSignIn, returnToAfterSignIn } from './sign-in.js';
import { bearerSocketVerdict, factsStanding, socketVerdict, type SeenFacts, type SocketVerdict } from '../../policies/session-ends.js';
import type { Authenticator, Identity, SocketIdentity } from './identity.js';

export { BACKCHANNEL_LOGOUT_PATH, returnToAfterSignIn };

export async function createAuthenticator(settings: Settings, obs: Observability, shared: SharedState = processState(obs)): Promise<Authenticator> {
  const o = settings.oidc;
  if (!o.issuerUrl || !o.clientId || !o.clientSecret || !o.sessionSecrets.length) {
    obs.log.warn('sign-in is not configured (OIDC_ISSUER_URL, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, SESSION_SECRET): nobody is authenticated');
    const router = Router();
    router.use((req, res, next) => (LOCAL_ROUTES.test(req.path) ? void res.status(503).json({ detail: 'Sign-in is not configured' }) : next()));
    return { router, authenticate: async () => undefined, ready: async () => ({ ok: false, detail: 'sign-in not configured' }), close: async () => {} };
  }
  const issuer = trimSlash(o.issuerUrl);
  const codec = new SessionCodec(o.sessionSecrets, {
    secure: settings.publicUrl.startsWith('https:'),
    rollingSeconds: o.rollingSeconds,
    absoluteSeconds: o.absoluteSeconds,
  });

  // The realm: openid-client's Configuration, its keys, its endpoints (gateway/auth/realm.ts).
  const realm = realmClient(issuer, o.clientId, o.clientSecret);
  const { verifyRealmJwt, verifyIdToken } = realm;

  /** The user behind freshly issued tokens (login or refresh). Both tokens are verified with the realm's keys. */
  async function userOfTokens(idToken: string | undefined, accessToken: string | undefined): Promise<SessionUser> {
    // OIDC Core 3.1.3.7 would allow skipping the ID token's signature over TLS from the token
    // endpoint; the gateway checks it anyway with the key set it holds: its claims (roles) decide
    // who is an admin, and the realm may sit behind plain http inside a network.
    const id = idToken ? await verifyIdToken(idToken) : undefined;
    const access = accessToken && JWT_SHAPE.test(accessToken) ? await verifyRealmJwt(accessToken) : undefined;
    let user = userFromClaims(o, { id, access });
    if ('error' in user && user.error === 'no email claim' && accessToken)
      user = userFromClaims(o, { id, access, userinfo: await realm.userinfo(accessToken, id?.sub ?? access?.sub).catch(() => undefined) });
    if ('error' in user) throw Object.assign(new Error(`sign-in refused: ${user.error}`), { status: 403 });
    return user;
  }

  // ---- sessions ------------------------------------------------------------------------------

  const refresh = createRefresh({ o, codec, shared, realm, userOfTokens });

  // Every change to a session here is told (open WebSockets are judged again at once): its end
  // recorded (sign-out, a refused refresh, back-channel logout: all go through `end`), its refresh
  // or a tenant switch.
  const changeListeners: Array<(sessionId: string | undefined) => void> = [];
  const changed = (sessionId: string | undefined) => {
    for (const listener of changeListeners) listener(sessionId);
  };
  const ends: Pick<SharedState, 'end' | 'isEnded' | 'firstUse'> = {
    end(by, until) {
      const written = shared.end(by, until);
      changed('id' in by ? by.id : undefined);
      return written;
    },
    isEnded: (s, now) => shared.isEnded(s, now),
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

  // A browser sends the same Cookie header request after request: it is split once (what goes
  // upstream, the session cookie in it), and each session state has one Identity object, which
  // the data plane keys its own derived values on.
  const cookieHeaders = new TtlCache<string, { rest: string; session: ReturnType<typeof readSessionCookie> }>(20_000, 5 * 60_000);
  const sessionIdentities = new WeakMap<SessionData, Identity>();
  const sessionIdentity = (data: SessionData): Identity => {
    let identity = sessionIdentities.get(data);
    if (!identity) sessionIdentities.set(data, (identity = identityOf(data.user, data.active_tenant, 'session', data.facts_at)));
    return identity;
  };

  // The newest facts the realm gave of each user (per subject), on this instance: a session of the
  // same user described earlier and otherwise (from before a demotion) is renewed before it is
  // believed again (policies/session-ends.ts). Kept as long as a session can live.
  const newestFacts = new TtlCache<string, SeenFacts>(100_000, o.absoluteSeconds * 1000);
  const seen = (identity: Identity): SeenFacts => ({ at: identity.factsAt ?? 0, facts: identity });
  const identityOf = (u: SessionUser, activeTenant: string | null, via: Identity['via'], factsAt?: number): Identity => {
    const identity: Identity = { ...u, admin: isChatAdmin(u.roles, o.adminRoles), activeTenant, via, ...(factsAt === undefined ? {} : { factsAt }) };
    const newest = newestFacts.get(u.sub);
    if (factsAt !== undefined && (!newest || newest.at < factsAt)) newestFacts.set(u.sub, seen(identity));
    return identity;
  };
  /** Did the realm describe this user otherwise since it gave these facts? */
  const stale = (identity: Identity): boolean => {
    const newest = newestFacts.get(identity.sub);
    return !!newest && newest.at > (identity.factsAt ?? 0) && factsStanding(seen(identity), newest).standing === 'stale';
  };

  /**
   * A bearer token the realm has contradicted since (issued before a promotion or a demotion) is
   * judged, and signed in upstream, as the user's newest facts, never by the token's old role (Open
   * WebUI keeps one role per account); its tenant as a refresh would keep it.
   */
  const asNewest = (identity: Identity): Identity => {
    const newest = newestFacts.get(identity.sub)!.facts as Identity;
    return { ...newest, via: identity.via, activeTenant: activeTenantAtRefresh(newest.tenants, identity.activeTenant).active };
  };

  const bearerTokens = createBearerTokens({ issuer, o, verifyRealmJwt, obs, identityOf });
  const { realmBearer, bearerIdentity } = bearerTokens;

  async function authenticate(req: IncomingMessage, scope: AuthScope = scopeOf(req.headers)): Promise<Identity | undefined> {
    const bearer = realmBearer(scope.authorization);
    if (bearer) scope.authorization = undefined;
    // Both of the gateway's credentials leave what is sent upstream before anything waits.
    const session = gatewaySession(scope);
    const fromBearer = bearer ? await bearerIdentity(bearer) : undefined;
    if (fromBearer) return stale(fromBearer) ? asNewest(fromBearer) : fromBearer;
    if (!session) return undefined;
    const entry = await liveSession(session, scope);
    return entry ? sessionIdentity(entry.data) : undefined;
  }

  /** The session cookie of a request (removed with the gateway's other cookies from what goes upstream). */
  function gatewaySession(scope: AuthScope): { value: string; names: string[] } | undefined {
    const cookie = scope.cookie;
    if (typeof cookie !== 'string' || !/appSession|auth_verification/.test(cookie)) return undefined;
    let split = cookieHeaders.get(cookie);
    if (!split) cookieHeaders.set(cookie, (split = { rest: withoutGatewayCookies(cookie), session: readSessionCookie(cookie) }));
    scope.cookie = split.rest || undefined;
    return split.session;
  }

  /** The session's live entry; one whose facts the realm has since contradicted is renewed first (or refused until it can be). */
  async function liveSession(session: { value: string; names: string[] }, scope: AuthScope): Promise<SessionEntry | undefined> {
    const entry = await store.live(session, scope);
    return entry && stale(sessionIdentity(entry.data)) ? store.renewNow(entry, session, scope) : entry;
  }

  // ---- open WebSockets ------------------------------------------------------------------------

  async function authenticateSocket(req: IncomingMessage, scope: AuthScope): Promise<SocketIdentity | undefined> {
    const bearer = realmBearer(scope.authorization);
    if (bearer) scope.authorization = undefined;
    const session = gatewaySession(scope);
    const fromBearer = bearer ? await bearerIdentity(bearer) : undefined;
    if (fromBearer) {
      // As long as a request would take it (the same clock tolerance).
      const until = (decodeJwt(bearer!).exp ?? 0) + CLOCK_TOLERANCE_S;
      return { identity: stale(fromBearer) ? asNewest(fromBearer) : fromBearer, verdict: () => bearerSocketVerdict(until, epoch()) };
    }
    if (!session) return undefined;
    const entry = await liveSession(session, scope);
    if (!entry) return undefined;
    const identity = sessionIdentity(entry.data);
    return { identity, key: entry.data.id, verdict: sessionVerdict(entry, identity) };
  }

  /** An open socket's session as this instance now knows it: never touched or refreshed on the socket's behalf. */
  function sessionVerdict(first: SessionEntry, opened: Identity): () => SocketVerdict {
    let entry = first;
    return () => {
      const now = epoch();
      entry = store.latest(entry);
      const { data, header } = entry;
      return socketVerdict({
        ended: shared.isEnded({ id: data.id, sid: data.sid, sub: data.user.sub, iat: header.iat }, now),
        alive: codec.alive(header, now),
        tokenExpired: data.expires_at <= now,
        opened,
        // A later sign-in or refresh of the same user said otherwise: as if this session's own refresh had.
        current: stale(opened) ? newestFacts.get(opened.sub)!.facts : sessionIdentity(data),
      });
    };
  }

  // ---- control routes ------------------------------------------------------------------------

  const router = Router();
  router.use((req, res, next) => {
    // `/{locale}/auth/start` and friends are the same routes.
    const m = /^\/([^/]+)(\/auth\/(?:start|logout|session)(?:\/.*)?)$/.exec(req.path);
    if (m && isLocaleSegment(m[1]!)) req.url = m[2]! + req.url.slice(req.path.length);
    if (m && isLocaleSegment(m[1]!)) res.locals.locale = m[1];
    next();
  });

  mountSignIn(router, { settings, realm, store, shared, obs, userOfTokens });

  // OIDC Back-Channel Logout 1.0: the realm's logout token ends sessions on every instance.
  mountBackChannelLogout(router, realm.verifyLogoutToken, backChannelLogout(o, ends, obs), obs);

  mountSignOut(router, { settings, store, shared, obs, realm });

  mountSessionApi(router, { settings, store, obs, authenticate, identityOf });

  router.use(signInErrors({ obs, authenticate }));

  // /readyz asks at most every 5 s (the probe itself never fails: its answer says why).
  const probe = new LoadingCache<{ ok: boolean; detail: string }>({ ttlMs: 5_000, retryMs: 5_000, maxEntries: 1, now: Date.now, pinned: () => true });

  return {
    router,
    authenticate,
    authenticateSocket,
    onSessionChange: (listener) => void changeListeners.push(listener),
    ready() {
      return probe.get('realm', () =>
        realm.fetchConfiguration(2_000).then(
          () => ({ ok: true, detail: `identity provider ${issuer} reachable` }),
          (err: Error) => ({ ok: false, detail: `identity provider ${issuer}: ${err.message}` }),
        ),
      );
    },
    async close() {
      store.clear();
      bearerTokens.clear();
      cookieHeaders.clear();
    },
  };
}
