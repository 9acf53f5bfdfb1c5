// Realm bearer JWTs (contract: "A verified identity is ... an `Authorization: Bearer` JWT issued
// by OIDC_ISSUER_URL"): which Authorization header carries one, and the identity it proves,
// verified with jose against the issuer's JWKS (gateway/auth/realm.ts) and cached until it
// expires. Used by `authenticate` in gateway/auth/authenticator.ts; it receives only what it reads.
import type { JWTPayload } from 'jose';
import { decodeJwt } from 'jose';
import type { Settings } from '../../config/settings.js';
import type { Observability } from '../observability/observability.js';
import { TtlCache } from '../cache/cache.js';
import { CLOCK_TOLERANCE_S, JWKS_MAX_AGE_MS, trimSlash } from './realm.js';
import { epoch, type SessionUser } from './session-cookie.js';
import { defaultTenant, userFromClaims } from './claims.js';
import type { Identity } from './identity.js';

/** Three base64url parts: a JWS in compact form. */
export const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export interface BearerTokenParts {
  /** OIDC_ISSUER_URL without its trailing slash. */
  issuer: string;
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
  clear(): void;
}

export function createBearerTokens({ issuer, o, verifyRealmJwt, obs, identityOf }: BearerTokenParts): BearerTokens {
  // A verified bearer JWT is not checked again for as long as the realm's keys are trusted (a key
  // removed from the realm must stop its tokens within that time).
  const bearers = new TtlCache<string, { identity: Identity; exp: number }>(20_000, JWKS_MAX_AGE_MS);

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
      bearers.set(token, { identity, exp: payload.exp! });
      return identity;
    } catch (err) {
      obs.log.debug({ reason: (err as Error).message }, 'bearer token refused');
      return undefined;
    }
  }

  return { realmBearer, bearerIdentity, clear: () => bearers.clear() };
}
