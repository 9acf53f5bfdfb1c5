// What the realm's error answer at the sign-in callback means for the user.

/** The error codes of an authorization error answer (RFC 6749 4.1.2.1, OIDC Core 3.1.2.6), grouped by what the user can do. */
export type OAuthErrorKind =
  | 'access_denied'
  | 'login_required'
  | 'interaction_required'
  | 'consent_required'
  | 'account_selection_required'
  | 'temporarily_unavailable'
  | 'server_error'
  | 'misconfigured'
  | 'other';

const OAUTH_ERROR_KINDS: Readonly<Record<string, OAuthErrorKind>> = {
  access_denied: 'access_denied',
  login_required: 'login_required',
  interaction_required: 'interaction_required',
  consent_required: 'consent_required',
  account_selection_required: 'account_selection_required',
  temporarily_unavailable: 'temporarily_unavailable',
  server_error: 'server_error',
  // The request itself was refused: the gateway or the realm's client is set up wrongly.
  invalid_request: 'misconfigured',
  unauthorized_client: 'misconfigured',
  unsupported_response_type: 'misconfigured',
  invalid_scope: 'misconfigured',
  invalid_request_uri: 'misconfigured',
  invalid_request_object: 'misconfigured',
  request_not_supported: 'misconfigured',
  request_uri_not_supported: 'misconfigured',
  registration_not_supported: 'misconfigured',
  invalid_client: 'misconfigured',
};

/** An error code's kind; `other` for one outside the standards. */
export function oauthErrorKind(code: string): OAuthErrorKind {
  return Object.hasOwn(OAUTH_ERROR_KINDS, code) ? OAUTH_ERROR_KINDS[code]! : 'other';
}

/** The error code of a callback the realm answered with an error (query or form body), if it is one. */
export function callbackError(req: { query?: unknown; body?: unknown }): string | undefined {
  for (const source of [req.query, req.body]) {
    const e = source && typeof source === 'object' ? (source as Record<string, unknown>).error : undefined;
    if (typeof e === 'string' && /^[\x20-\x7e]{1,128}$/.test(e)) return e;
  }
  return undefined;
}
