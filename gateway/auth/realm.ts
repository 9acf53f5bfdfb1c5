// Keycloak as the gateway calls it, written once: its URL layout and a confidential client's
// POST to the token endpoint (client_secret_basic, RFC 6749 2.3.1), used for the sign-in refresh
// and revocation (gateway/auth/authenticator.ts) and the catalog's service-account token (gateway/login/routes.ts).

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
