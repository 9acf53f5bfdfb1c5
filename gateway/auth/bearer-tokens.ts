// Realm bearer JWTs (contract: "A verified identity is ... an `Authorization: Bearer` JWT issued
// by OIDC_ISSUER_URL"): which Authorization header carries one, and the identity it proves,
// verified with jose against the issuer's JWKS (gateway/auth/realm.ts) and cached until it
// expires; whether its session still stands, asked of the realm for another client's token
// (gateway/auth/bearer-introspection.ts). Used by `authenticate` in gateway/auth/authenticator.ts;
// it receives only what it reads.
import type { JWTPayload } from 'jose';
import { decodeJwt } from 'jose';
import type { Settings } from '../../config/settings.js';
import type { Observability } from '../observability/observability.js';
import { TtlCache } from '../cache/cache.js';
import { CLOCK_TOLERANCE_S, JWKS_MAX_AGE_MS, trimSlash } from './realm.js';
import { epoch, type SessionUser } from './session-cookie.js';
import { defaultTenant, userFromClaims } from './claims.js';
import type { Identity } from './identity.js';
import { tokenKey, type BearerIntrospection, type TokenFacts } from './bearer-introspection.js';
import { sessionCheckOf } from '../../policies/tokens.js';

/** Three base64url parts: a JWS in compact form. */
export const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export interface BearerTokenParts {
  /** OIDC_ISSUER_URL without its trailing slash. */
  issuer: string;
  /** OIDC_CLIENT_ID: its own tokens' sessions end by back-channel logout */
  clientId: string;
  /** the realm asked about other clients' tokens (BEARER_INTROSPECTION; undefined: off) */
  introspection?: BearerIntrospection;
  /** The claim names (OAUTH_ROLES_CLAIM, OAUTH_GROUPS_CLAIM, TENANTS_CLAIM). */
  o: Pick<Settings['oidc'], 'rolesClaim' | 'groupsClaim' | 'tenantsClaim'>;
  verifyRealmJwt: (token: string) => Promise<JWTPayload>;
  obs: Pick<Observability, 'log'>;
  identityOf: (u: SessionUser, activeTenant: string | null, via: Identity['via'], factsAt?: number) => Identity;
}

export interface BearerTokens {
  /** The realm JWT of an Authorization header, or undefined (none, not a JWT, another issuer). */
  realmBearer(authorization: string | string[] | undefined): string | undefined;
  /** The identity a realm JWT proves: synchronous once verified, until it expires. */
  bearerIdentity(token: string): Identity | undefined | Promise<Identity | undefined>;
  /**
   * Does the session of a token `bearerIdentity` took still stand, as far as the realm must be asked:
   * true at once for a token it need not be asked about or whose answer is kept. Rejects with
   * RealmUnavailable when the realm gives no answer.
   */
  sessionStands(token: string): boolean | Promise<boolean>;
  /** What an ended session is looked up by (its `sid`, `sub` and `iat`), kept with a verified token. */
  sessionOf(token: string): TokenSession;
  clear(): void;
}

/** A token's session as the record of ended sessions knows it (policies/session-ends.ts). */
export interface TokenSession {
  sid: string | null;
  sub: string;
  iat: number;
}

function sessionOfPayload({ sid, sub, iat }: JWTPayload): TokenSession {
  return { sid: typeof sid === 'string' ? sid : null, sub: sub ?? '', iat: iat ?? 0 };
}

export function createBearerTokens({ issuer, clientId, introspection, o, verifyRealmJwt, obs, identityOf }: BearerTokenParts): BearerTokens {
  // A verified bearer JWT is not checked again for as long as the realm's keys are trusted (a key
  // removed from the realm must stop its tokens within that time). `ask`: what the realm is asked
  // about, for a token whose session's end the realm would not tell (policies/tokens.ts).
  const bearers = new TtlCache<string, { identity: Identity; exp: number; session: TokenSession; ask?: TokenFacts }>(20_000, JWKS_MAX_AGE_MS);

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

  function bearerIdentity(token: string): Identity | undefined | Promise<Identity | undefined> {
    const hit = bearers.get(token);
    if (hit) return hit.exp > epoch() - CLOCK_TOLERANCE_S ? hit.identity : undefined;
    return verifiedBearer(token);
  }

  async function verifiedBearer(token: string): Promise<Identity | undefined> {
    try {
      const payload = await verifyRealmJwt(token);
      const user = userFromClaims(o, { access: payload });
      if ('error' in user) {
        obs.log.info({ reason: user.error, sub: payload.sub }, 'bearer token is not an identity');
        return undefined;
      }
      // Its facts are as old as the token (the newest facts of a user win: policies/session-ends.ts).
      const identity = identityOf(user, defaultTenant(user), 'bearer', typeof payload.iat === 'number' ? payload.iat : undefined);
      bearers.set(token, { identity, exp: payload.exp!, session: sessionOfPayload(payload), ask: askOf(token, payload) });
      return identity;
    } catch (err) {
      obs.log.debug({ reason: (err as Error).message }, 'bearer token refused');
      return undefined;
    }
  }

  /** What the realm is asked with about a verified token, or undefined: it need not be asked. */
  function askOf(token: string, payload: JWTPayload): TokenFacts | undefined {
    return sessionCheckOf(payload, clientId, introspection !== undefined).ask ? factsOf(token, payload) : undefined;
  }

  function sessionStands(token: string): boolean | Promise<boolean> {
    if (!introspection) return true;
    const entry = bearers.get(token);
    // An entry gone since `bearerIdentity` (its time up, evicted) is decided again from the token it verified.
    const ask = entry ? entry.ask : askOf(token, decodeJwt(token));
    return ask ? introspection.stands(token, ask) : true;
  }

  return {
    realmBearer,
    bearerIdentity,
    sessionStands,
    // decoded again only for an entry gone since `bearerIdentity` (its time up, evicted)
    sessionOf: (token) => bearers.get(token)?.session ?? sessionOfPayload(decodeJwt(token)),
    clear: () => {
      bearers.clear();
      introspection?.clear();
    },
  };
}

/** What the realm is asked with, and what is logged, of a verified token (never the token itself). */
function factsOf(token: string, payload: JWTPayload): TokenFacts {
  return {
    key: tokenKey(token),
    sub: payload.sub!,
    sid: typeof payload.sid === 'string' ? payload.sid : null,
    azp: typeof payload.azp === 'string' ? payload.azp : null,
    until: payload.exp! + CLOCK_TOLERANCE_S,
  };
}
