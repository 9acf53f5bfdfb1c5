// When the gateway signs an identity in again at Open WebUI before its cached sign-in expires
// (gateway/upstream/accounts.ts; docs/design/sign-in-renewal.md): Open WebUI answered 401 to a
// request that carried the token the gateway supplied, and GET /api/v1/auths/ with that token says
// the token itself is refused. Pure: the answers and the request give the decision.

/** The least time between two checks (so two renewals) of one identity's upstream token, per instance. */
export const TOKEN_CHECK_INTERVAL_MS = 5_000;

/** Why Open WebUI refused a token: the label of gateway_upstream_signin_renewals_total. */
export type RenewalReason = 'revoked' | 'expired' | 'account-gone' | 'email-changed' | 'refused';

// The 401 details of Open WebUI's get_current_user (utils/auth.py, 0.11.4 to 0.12.4).
const REASONS: ReadonlyMap<string, RenewalReason> = new Map([
  // is_valid_token: the account's session_stamp changed (0.12: a password set, its sessions revoked,
  // a second factor changed) or Redis holds a revocation (a password set, a sign-out)
  ['Invalid token', 'revoked'],
  // not decodable: expired (JWT_EXPIRES_IN), or signed with another WEBUI_SECRET_KEY
  ['401 Unauthorized', 'expired'],
  // no account behind the token's id: deleted (0.12 get_auth, then 0.11 get_user_by_id)
  ['Invalid authentication request.', 'account-gone'],
  ['Your session has expired or the token is invalid. Please sign in again.', 'account-gone'],
  // the account's email is no longer the one the trusted header names
  ['User mismatch. Please sign in again.', 'email-changed'],
]);

export type TokenCheck = { refused: false } | { refused: true; reason: RenewalReason };

/**
 * What GET /api/v1/auths/ with the token (and the identity's trusted headers) answered. That route
 * needs no role, so a 401 there is the token refused; anything else (200, a 5xx, no answer) is not.
 */
export function tokenCheck(status: number, detail: unknown): TokenCheck {
  if (status !== 401) return { refused: false };
  return { refused: true, reason: (typeof detail === 'string' && REASONS.get(detail)) || 'refused' };
}

/** What `mayResend` reads of a request answered 401. */
export interface ResendFacts {
  /** the gateway read the body to judge it, and holds it */
  heldBody: boolean;
  contentLength: string | undefined;
  transferEncoding: string | undefined;
}

/**
 * May a request Open WebUI answered 401 be sent again with the renewed token? Only with its whole
 * body in hand: none at all, or one the gateway holds. A streamed body was spent on the first try.
 * A 401 of get_current_user comes before the route's own code, so the first try changed nothing.
 */
export function mayResend(r: ResendFacts): boolean {
  if (r.heldBody) return true;
  return r.transferEncoding === undefined && (r.contentLength === undefined || r.contentLength.trim() === '0');
}
