// What a session keeps of its access token, and when that token is renewed: the name of the state
// a refresh replaces and the margin before expiry.
import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import { epoch, type SessionData } from './session-cookie.js';

/** What a session keeps of the tokens the realm just gave (sign-in or refresh). */
export function tokenState(
  tokens: { access_token: string; expires_in?: number },
  now = epoch(),
): Pick<SessionData, 'expires_at' | 'token_lifetime' | 'at_hash'> {
  let claims: { exp?: number; iat?: number } = {};
  try {
    claims = decodeJwt(tokens.access_token);
  } catch {
    // an opaque access token: its answer's expires_in is all there is
  }
  const lifetime =
    typeof tokens.expires_in === 'number' ? tokens.expires_in : claims.exp !== undefined && claims.iat !== undefined ? claims.exp - claims.iat : undefined;
  const expiresAt = typeof tokens.expires_in === 'number' ? now + tokens.expires_in : (claims.exp ?? now);
  const atHash = createHash('sha256').update(tokens.access_token).digest().subarray(0, 16).toString('base64url');
  return { expires_at: expiresAt, ...(lifetime !== undefined && lifetime >= 0 ? { token_lifetime: lifetime } : {}), at_hash: atHash };
}

/**
 * The name of the state a refresh replaces (single flights here and among instances): the
 * session, its access token's expiry, its refresh token and, once kept, its access token. A realm
 * that does not rotate refresh tokens gives the same expiry and refresh token to two refreshes in
 * one second; the access token tells them apart. (A cookie written before the hash was kept is
 * named as before: its refresh is shared with instances that do not keep it yet.)
 */
export function refreshStateName(data: SessionData): string {
  const rt = data.refresh_token ? createHash('sha256').update(data.refresh_token).digest('base64url').slice(0, 22) : '-';
  return `${data.id}:${data.expires_at}:${rt}${data.at_hash ? `:${data.at_hash}` : ''}`;
}

/**
 * How long before its access token expires a session is refreshed: TOKEN_REFRESH_MARGIN_SECONDS,
 * at most half the token's lifetime, so that tokens shorter than the margin are not refreshed on
 * every request (a session written before the lifetime was kept: the margin as set).
 */
export function refreshMargin(data: SessionData, marginSeconds: number): number {
  return data.token_lifetime === undefined ? marginSeconds : Math.min(marginSeconds, Math.floor(data.token_lifetime / 2));
}
