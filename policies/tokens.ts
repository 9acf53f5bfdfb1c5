// Which realm tokens may sign a caller in as a bearer (gateway/auth/realm.ts verifies them first),
// and when the realm is asked whether a bearer token's session still stands (gateway/auth/bearer-introspection.ts).

/**
 * Is a verified JWT an access token? Only one that says so: Keycloak's `typ: Bearer`, RFC 9068's
 * header `typ: at+jwt`, or the `scope`/`scp` an access token carries (Auth0, Okta, Entra ID) and an
 * ID token does not. ID tokens (`typ` ID, or `at_hash`, `c_hash`, `nonce`), logout tokens
 * (`events`) and refresh tokens are not: an ID token travels in end-session URLs (id_token_hint)
 * and must sign no one in. Fails closed: a token that shows none of these is not taken.
 */
export function isAccessToken(payload: Readonly<Record<string, unknown>>, headerTyp: string | undefined): boolean {
  if (payload.at_hash !== undefined || payload.c_hash !== undefined || payload.events !== undefined) return false;
  if (payload.typ !== undefined) return String(payload.typ).toLowerCase() === 'bearer';
  if (payload.nonce !== undefined) return false;
  const t = headerTyp?.toLowerCase();
  if (t === 'at+jwt' || t === 'application/at+jwt') return true;
  return typeof payload.scope === 'string' || typeof payload.scp === 'string' || Array.isArray(payload.scp);
}

/** Whether the realm is asked if a bearer token's session still stands, and the rule that says so. */
export interface SessionCheck {
  ask: boolean;
  rule: string;
}

/**
 * Must the realm be asked whether a verified bearer token's session still stands
 * (docs/design/bearer-introspection.md)? The realm tells the gateway of a session's end only when
 * the gateway's client took part in it (back-channel logout goes to the session's clients). A
 * token whose `azp` is the gateway's own client was issued in such a session; any other was issued
 * to a client the gateway knows nothing of, whose session may end untold. `introspection`:
 * BEARER_INTROSPECTION.
 */
export function sessionCheckOf(claims: Readonly<Record<string, unknown>>, clientId: string, introspection: boolean): SessionCheck {
  if (!introspection) return { ask: false, rule: 'BEARER_INTROSPECTION off: back-channel logout only' };
  if (claims.azp === clientId) return { ask: false, rule: "the gateway's client took part in the session: back-channel logout tells its end" };
  return { ask: true, rule: "another client's token: the realm tells the gateway nothing of its session's end" };
}

/** What the realm's answer says of a token's session: `unusable` is no answer (the gateway cannot judge). */
export type IntrospectionStanding = 'active' | 'ended' | 'unusable';

/**
 * An introspection answer (RFC 7662, 2.2) for a token whose subject is `sub`: `active: false` is
 * an ended session (or a token the realm no longer honours for any reason: revoked, the user or
 * client disabled); `active: true` about another subject, or no boolean `active`, is not an answer.
 */
export function introspectionStanding(answer: Readonly<Record<string, unknown>>, sub: string): { standing: IntrospectionStanding; rule: string } {
  if (answer.active === false) return { standing: 'ended', rule: 'the realm no longer honours the token' };
  if (answer.active !== true) return { standing: 'unusable', rule: 'the answer has no boolean active' };
  if (answer.sub !== undefined && answer.sub !== sub) return { standing: 'unusable', rule: 'the answer is about another subject' };
  return { standing: 'active', rule: 'the realm honours the token' };
}

/**
 * How long an answer is kept, in milliseconds: an active one `cacheSeconds`
 * (BEARER_INTROSPECTION_CACHE_SECONDS) but never past `until`, the last second the gateway would
 * take the token (its expiry and the clock tolerance); an ended one until then (the realm never
 * honours it again, so it is not asked again). 0: not kept.
 */
export function introspectionKeepMs(standing: 'active' | 'ended', cacheSeconds: number, until: number, nowMs: number): number {
  const untilExpiry = Math.max(0, until * 1000 - nowMs);
  return standing === 'ended' ? untilExpiry : Math.min(cacheSeconds * 1000, untilExpiry);
}
