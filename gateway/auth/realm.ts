// Keycloak as the gateway calls it, written once: its URL layout, a confidential client's POST to
// the token endpoint (client_secret_basic, RFC 6749 2.3.1; the sign-in's refresh and revocation
// and the catalog's service-account token), and the OIDC client of the sign-in: discovery, the
// realm's keys, JWT checks, userinfo (gateway/auth/authenticator.ts).
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { z } from 'zod';
import { parseJson } from '../upstream/json.js';

/** `<kc>/admin/realms/<realm>` gives `<kc>/realms/<realm>/protocol/openid-connect/token`. */
export function tokenUrlFor(adminUrl: string): string {
  const m = /^(.*)\/admin\/realms\/([^/]+)\/?$/.exec(adminUrl);
  if (!m) throw new Error(`IDP_ADMIN_URL must look like <keycloak>/admin/realms/<realm> (got ${JSON.stringify(adminUrl)})`);
  return `${m[1]}/realms/${m[2]}/protocol/openid-connect/token`;
}

/** The request a confidential client sends to a token, revocation or introspection endpoint. */
export function clientPost(clientId: string, clientSecret: string, form: Record<string, string>): RequestInit {
  const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64');
  return {
    method: 'POST',
    headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form).toString(),
  };
}

export const CLOCK_TOLERANCE_S = 5;
export const HTTP_TIMEOUT_MS = 5_000;
/** Asymmetric algorithms only: never `none`, never HS* (the public key is public). */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const DISCOVERY_TTL_MS = 10 * 60_000;
/** How soon a token with an unknown `kid` may refetch the realm's keys. */
export const JWKS_COOLDOWN_MS = 5_000;
/** How long the realm's keys are trusted without asking again: a removed key stops working within it. */
export const JWKS_MAX_AGE_MS = 60_000;

export const trimSlash = (s: string) => s.replace(/\/+$/, '');

export interface Discovery {
  issuer: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint?: string;
  revocation_endpoint?: string;
  end_session_endpoint?: string;
}

// What the gateway reads of the realm's JSON, checked like every peer's (gateway/upstream/json.ts).
/** The discovery document: the issuer and the endpoints the gateway calls (the others optional). */
const DiscoveryAnswer = z.looseObject({
  issuer: z.string(),
  token_endpoint: z.string(),
  jwks_uri: z.string(),
  userinfo_endpoint: z.string().optional(),
  revocation_endpoint: z.string().optional(),
  end_session_endpoint: z.string().optional(),
});
/** The userinfo answer: claims, read by gateway/auth/claims.ts. */
const UserinfoAnswer = z.record(z.string(), z.unknown());

/** The realm as an OIDC client of it sees it: discovery (cached), its keys, its tokens. */
export function realmClient(issuer: string, clientId: string, clientSecret: string) {
  let discovered: { at: number; value: Promise<Discovery> } | undefined;
  let jwks: { uri: string; set: ReturnType<typeof createRemoteJWKSet> } | undefined;

  async function fetchDiscovery(timeoutMs: number): Promise<Discovery> {
    const res = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
    if (res.status !== 200) throw new Error(`discovery answered ${res.status}`);
    const read = parseJson(DiscoveryAnswer, await res.text());
    if (!read.ok) throw new Error(`discovery document ${read.why}`);
    const d = read.value;
    if (trimSlash(d.issuer) !== issuer) throw new Error(`discovery names issuer ${JSON.stringify(d.issuer)}, not ${issuer}`);
    return d;
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
      // Key rotation without a restart, both ways (test/keycloak): a token signed with a new key
      // (unknown `kid`) refetches the set, at most every JWKS_COOLDOWN_MS; a key the realm removed
      // (disabled or deleted in Keycloak) is forgotten within JWKS_MAX_AGE_MS, so tokens it signed
      // stop being honoured then. (Before: 30 s and 10 minutes.)
      jwks = {
        uri: d.jwks_uri,
        set: createRemoteJWKSet(new URL(d.jwks_uri), { timeoutDuration: HTTP_TIMEOUT_MS, cooldownDuration: JWKS_COOLDOWN_MS, cacheMaxAge: JWKS_MAX_AGE_MS }),
      };
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
    const { payload } = await jwtVerify(token, set, {
      issuer: d.issuer,
      algorithms: ALGORITHMS,
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: ['exp', 'sub'],
    });
    const aud = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? []);
    if (!aud.includes(clientId) && payload.azp !== clientId) throw new Error('token is not meant for this client');
    if (payload.typ !== undefined && String(payload.typ).toLowerCase() !== 'bearer') throw new Error(`token typ ${String(payload.typ)} is not an access token`);
    return payload;
  }

  /** An ID token of this realm for this client: signature (JWKS), issuer, audience; expiry with tolerance. */
  async function verifyIdToken(token: string): Promise<JWTPayload> {
    const { d, set } = await keySet();
    const { payload } = await jwtVerify(token, set, {
      issuer: d.issuer,
      audience: clientId,
      algorithms: ALGORITHMS,
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: ['sub'],
    });
    return payload;
  }

  async function tokenRequest(endpoint: string, form: Record<string, string>): Promise<globalThis.Response> {
    return fetch(endpoint, { ...clientPost(clientId, clientSecret, form), signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
  }

  async function userinfo(accessToken: string): Promise<Record<string, unknown> | undefined> {
    const d = await discovery();
    if (!d.userinfo_endpoint) return undefined;
    const res = await fetch(d.userinfo_endpoint, {
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
      signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
    });
    if (res.status !== 200) return undefined;
    const read = parseJson(UserinfoAnswer, await res.text());
    if (!read.ok) throw new Error(`userinfo ${read.why}`);
    return read.value;
  }

  return { discovery, fetchDiscovery, verifyRealmJwt, verifyIdToken, tokenRequest, userinfo };
}
