// Cross-site rules for what a browser sends with its cookies (an ambient credential): a request
// from another site must not switch the tenant, sign the user out or open a WebSocket as them.
// Pure: request facts -> a value with the rule that made it; the gateway carries it out.

export type OriginDecision = { allow: true; rule: string } | { allow: false; status: 403; detail: string; rule: string };

const FORBIDDEN_ORIGIN: OriginDecision = { allow: false, status: 403, detail: 'Forbidden origin', rule: 'Origin not one of PUBLIC_URL / ALLOWED_ORIGINS' };

/**
 * A state-changing request of the gateway's own (POST /auth/session/tenant): an Origin, when the
 * browser sends one, must be one of ours. No Origin: not a browser's cross-site request.
 */
export function stateChangeOrigin(origin: string | undefined, allowedOrigins: readonly string[]): OriginDecision {
  if (origin === undefined) return { allow: true, rule: 'no Origin: not a cross-site browser request' };
  return allowedOrigins.includes(origin) ? { allow: true, rule: 'Origin is ours' } : FORBIDDEN_ORIGIN;
}

/**
 * The chat front-end's sign-out (POST /api/v1/auths/signout since Open WebUI 0.10.2, GET before): a
 * cross-site request (a link, an image or a form on another site) must not sign the user out; the
 * browser says so in Sec-Fetch-Site, and a POST's Origin must be ours when it names one.
 */
export function signOutRequest(
  method: string,
  secFetchSite: string | string[] | undefined,
  origin: string | undefined,
  allowedOrigins: readonly string[],
): OriginDecision {
  if (secFetchSite === 'cross-site') return { allow: false, status: 403, detail: 'Forbidden', rule: 'Sec-Fetch-Site: cross-site' };
  if (method === 'POST') return stateChangeOrigin(origin, allowedOrigins);
  return { allow: true, rule: 'not cross-site' };
}

/**
 * A WebSocket upgrade: a browser sends its cookies with any cross-site WebSocket, so a
 * cookie-session upgrade needs an Origin of ours; a bearer-token upgrade that sends an Origin
 * needs one of ours too. A bearer token without Origin is no browser's ambient credential.
 */
export function websocketOrigin(via: 'session' | 'bearer', origin: string | undefined, allowedOrigins: readonly string[]): OriginDecision {
  if (via !== 'session' && origin === undefined) return { allow: true, rule: 'bearer token, no Origin' };
  return origin !== undefined && allowedOrigins.includes(origin) ? { allow: true, rule: 'Origin is ours' } : FORBIDDEN_ORIGIN;
}
