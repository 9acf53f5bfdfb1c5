// The realm as the gateway calls it, through openid-client (v6): one Configuration per process
// (discovery, cached and refreshed; the confidential client with client_secret_basic), and with it
// the code flow's authorization URL and code grant (gateway/auth/sign-in.ts), the refresh
// (gateway/auth/refresh.ts), revocation and the end-session URL (gateway/auth/sign-out.ts),
// introspection (gateway/auth/bearer-introspection.ts), userinfo. What openid-client leaves to the caller is checked here with jose against the realm's
// published keys: realm access tokens as bearer credentials, the ID token's signature, back-channel
// logout tokens. Also Keycloak's URL layout (the catalog's service-account token endpoint).
import * as oidc from 'openid-client';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { isAccessToken } from '../../policies/tokens.js';
import { LoadingCache } from '../cache/cache.js';

/** `<kc>/admin/realms/<realm>` gives `<kc>/realms/<realm>/protocol/openid-connect/token`. */
export function tokenUrlFor(adminUrl: string): string {
  const m = /^(.*)\/admin\/realms\/([^/]+)\/?$/.exec(adminUrl);
  if (!m) throw new Error(`IDP_ADMIN_URL must look like <keycloak>/admin/realms/<realm> (got ${JSON.stringify(adminUrl)})`);
  return `${m[1]}/realms/${m[2]}/protocol/openid-connect/token`;
}

export const CLOCK_TOLERANCE_S = 5;
export const HTTP_TIMEOUT_MS = 5_000;
/**
 * How long a refresh grant's answer is awaited, though no request waits for it past
 * HTTP_TIMEOUT_MS: a realm that hangs still carries out, once it runs again, the requests it took
 * meanwhile, and with refresh-token rotation a refresh cut short there spends the token the
 * session holds (docs/design/refresh-held.md). Five minutes: fetch's own bound on an answer's
 * headers (undici's headersTimeout) and as long as a refresh's outcome is shared.
 */
export const REFRESH_HOLD_MS = 5 * 60_000;
/** Asymmetric algorithms only: never `none`, never HS* (the public key is public). */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const DISCOVERY_TTL_MS = 10 * 60_000;
/** How soon a token with an unknown `kid` may refetch the realm's keys. */
export const JWKS_COOLDOWN_MS = 5_000;
/** How long the realm's keys are trusted without asking again: a removed key stops working within it. */
export const JWKS_MAX_AGE_MS = 60_000;
/** OIDC Back-Channel Logout 1.0, 2.4: the event a logout token carries. */
const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

export const trimSlash = (s: string) => s.replace(/\/+$/, '');

/**
 * How a request to the realm (or Keycloak) failed without an answer, or undefined when it was
 * answered. fetch's own failures (refused, reset) are a TypeError without a code; a timeout or an
 * abort is a DOMException, which openid-client hands on wrapped in its ClientError (OAUTH_TIMEOUT,
 * OAUTH_ABORT). A realm that hangs (its port takes connections, nothing answers) fails the second way.
 */
export function noAnswer(err: unknown): 'timeout' | 'unreachable' | undefined {
  const e = err as (Error & { code?: unknown }) | undefined;
  if (e instanceof oidc.ClientError) return e.code === 'OAUTH_TIMEOUT' ? 'timeout' : e.code === 'OAUTH_ABORT' ? 'unreachable' : undefined;
  if (e?.name === 'TimeoutError') return 'timeout';
  return e?.name === 'AbortError' || (e?.name === 'TypeError' && e.code === undefined) ? 'unreachable' : undefined;
}

export type RealmClient = ReturnType<typeof realmClient>;

/** The realm's signing keys, with the issuer they sign for. */
type KeySet = () => Promise<{ issuer: string | undefined; set: ReturnType<typeof createRemoteJWKSet> }>;

/**
 * A realm JWT intended for this gateway: signature (JWKS), issuer, expiry, and audience. Keycloak
 * access tokens name the client in `azp` and often carry `aud: account` only, so `aud` containing
 * the client id OR `azp` equal to it is accepted. Only an access token (policies/tokens.ts): ID,
 * refresh and logout tokens are not.
 */
async function verifyAccessToken(keySet: KeySet, clientId: string, token: string): Promise<JWTPayload> {
  const { issuer: iss, set } = await keySet();
  const { payload, protectedHeader } = await jwtVerify(token, set, {
    issuer: iss,
    algorithms: ALGORITHMS,
    clockTolerance: CLOCK_TOLERANCE_S,
    requiredClaims: ['exp', 'sub'],
  });
  const aud = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? []);
  if (!aud.includes(clientId) && payload.azp !== clientId) throw new Error('token is not meant for this client');
  if (!isAccessToken(payload, protectedHeader.typ)) throw new Error('the token is not an access token');
  return payload;
}

/**
 * An ID token of this realm for this client: signature (JWKS), issuer, audience; expiry with
 * tolerance. openid-client checks the claims of the ID tokens it receives but not their
 * signature (OIDC Core 3.1.3.7 allows that over TLS); the gateway checks it anyway.
 */
async function verifyRealmIdToken(keySet: KeySet, clientId: string, token: string): Promise<JWTPayload> {
  const { issuer: iss, set } = await keySet();
  const { payload } = await jwtVerify(token, set, {
    issuer: iss,
    audience: clientId,
    algorithms: ALGORITHMS,
    clockTolerance: CLOCK_TOLERANCE_S,
    requiredClaims: ['sub'],
  });
  return payload;
}

/**
 * A back-channel logout token (OIDC Back-Channel Logout 1.0, 2.6): signed by the realm, for this
 * client, with the logout event, no nonce, and a `sid` or a `sub`. Freshness and replay (iat,
 * jti) are gateway/auth/backchannel-logout.ts's.
 */
async function verifyRealmLogoutToken(keySet: KeySet, clientId: string, token: string): Promise<JWTPayload> {
  const { issuer: iss, set } = await keySet();
  const { payload } = await jwtVerify(token, set, { issuer: iss, audience: clientId, algorithms: ALGORITHMS, clockTolerance: CLOCK_TOLERANCE_S });
  const events = payload.events as Record<string, unknown> | undefined;
  if (!events || typeof events !== 'object' || !events[BACKCHANNEL_LOGOUT_EVENT] || typeof events[BACKCHANNEL_LOGOUT_EVENT] !== 'object')
    throw new Error('Logout Token must contain events claim with backchannel-logout event');
  if (payload.nonce !== undefined) throw new Error('Logout Token must not contain nonce claim');
  if (!payload.sub && !payload.sid) throw new Error('Logout Token must contain sub or sid claim');
  return payload;
}

/** The realm as an OIDC client of it sees it: its Configuration (cached), its keys, its tokens. */
export function realmClient(issuer: string, clientId: string, clientSecret: string) {
  // Fresh for 10 minutes; a failed rediscovery keeps the last good Configuration (asked again every
  // few seconds); a realm never reached is asked again after a few seconds, not by every request.
  const discovered = new LoadingCache<oidc.Configuration>({ ttlMs: DISCOVERY_TTL_MS, retryMs: 5_000, maxEntries: 1, now: Date.now, pinned: () => true });
  let jwks: { uri: string; set: ReturnType<typeof createRemoteJWKSet> } | undefined;

  /** A fresh discovery. A realm on plain http (inside a network, the sandbox) is allowed as before. */
  async function fetchConfiguration(timeoutMs: number): Promise<oidc.Configuration> {
    const server = new URL(issuer);
    const config = await oidc.discovery(server, clientId, undefined, oidc.ClientSecretBasic(clientSecret), {
      timeout: timeoutMs / 1000,
      execute: server.protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
    });
    config.timeout = HTTP_TIMEOUT_MS / 1000;
    return config;
  }

  /** The realm's Configuration, discovered at most every 10 minutes. */
  function configuration(): Promise<oidc.Configuration> {
    return discovered.get('configuration', () => fetchConfiguration(HTTP_TIMEOUT_MS));
  }

  async function keySet() {
    const d = (await configuration()).serverMetadata();
    if (!d.jwks_uri) throw new Error('the realm publishes no jwks_uri');
    if (jwks?.uri !== d.jwks_uri) {
      // Key rotation without a restart, both ways (test/keycloak): a token signed with a new key
      // (unknown `kid`) refetches the set, at most every JWKS_COOLDOWN_MS; a key the realm removed
      // (disabled or deleted in Keycloak) is forgotten within JWKS_MAX_AGE_MS, so tokens it signed
      // stop being honoured then. (Before: 30 s and 10 minutes.)
      jwks = {
        uri: d.jwks_uri,
        set: createRemoteJWKSet(new URL(d.jwks_uri), { timeoutDuration: HTTP_TIMEOUT_MS, cooldownDuration: JWKS_COOLDOWN_MS, cacheMaxAge: JWKS_MAX_AGE_MS }),
      };
    }
    return { issuer: d.issuer, set: jwks.set };
  }

  const verifyRealmJwt = (token: string) => verifyAccessToken(keySet, clientId, token);
  const verifyIdToken = (token: string) => verifyRealmIdToken(keySet, clientId, token);
  const verifyLogoutToken = (token: string) => verifyRealmLogoutToken(keySet, clientId, token);

  /** The Configuration for refresh grants: the same realm and client, its answer awaited REFRESH_HOLD_MS. */
  const held = new WeakMap<oidc.Configuration, oidc.Configuration>();
  function refreshConfiguration(config: oidc.Configuration): oidc.Configuration {
    let c = held.get(config);
    if (!c) {
      c = new oidc.Configuration(config.serverMetadata(), clientId, undefined, oidc.ClientSecretBasic(clientSecret));
      if (new URL(issuer).protocol === 'http:') oidc.allowInsecureRequests(c);
      c.timeout = REFRESH_HOLD_MS / 1000;
      held.set(config, c);
    }
    return c;
  }

  /**
   * New tokens for a refresh token (openid-client checks the answer and any ID token's claims),
   * never cut short before REFRESH_HOLD_MS: callers stop waiting sooner (gateway/auth/refresh.ts).
   */
  async function refreshGrant(refreshToken: string) {
    return oidc.refreshTokenGrant(refreshConfiguration(await configuration()), refreshToken);
  }

  /** Revoke a refresh token, when the realm offers revocation. */
  async function revoke(token: string): Promise<void> {
    const config = await configuration();
    if (!config.serverMetadata().revocation_endpoint) return;
    await oidc.tokenRevocation(config, token, { token_type_hint: 'refresh_token' });
  }

  /**
   * The realm's word on an access token (RFC 7662), asked as the gateway's client; openid-client
   * refuses an answer without a boolean `active`. Bounded by HTTP_TIMEOUT_MS, as every realm call.
   */
  async function introspect(token: string): Promise<Record<string, unknown>> {
    const config = await configuration();
    if (!config.serverMetadata().introspection_endpoint) throw new Error('the realm publishes no introspection_endpoint');
    return oidc.tokenIntrospection(config, token, { token_type_hint: 'access_token' });
  }

  /** The userinfo claims of an access token, or undefined (no endpoint, or a refusal). */
  async function userinfo(accessToken: string, sub: string | undefined): Promise<Record<string, unknown> | undefined> {
    const config = await configuration();
    if (!config.serverMetadata().userinfo_endpoint) return undefined;
    try {
      return await oidc.fetchUserInfo(config, accessToken, sub ?? oidc.skipSubjectCheck);
    } catch {
      return undefined;
    }
  }

  /** The realm's end-session URL with these parameters (client_id added), or undefined when it has none. */
  async function endSessionUrl(parameters: Record<string, string>): Promise<string | undefined> {
    const config = await configuration();
    if (!config.serverMetadata().end_session_endpoint) return undefined;
    return oidc.buildEndSessionUrl(config, parameters).href;
  }

  return {
    configuration,
    fetchConfiguration,
    verifyRealmJwt,
    verifyIdToken,
    verifyLogoutToken,
    refreshGrant,
    revoke,
    introspect,
    userinfo,
    endSessionUrl,
  };
}
