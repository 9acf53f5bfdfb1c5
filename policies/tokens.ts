// Which realm tokens may sign a caller in as a bearer (gateway/auth/realm.ts verifies them first).

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
