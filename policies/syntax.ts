// The grammar of the names a request may carry, one copy each: tenant ids and provider aliases
// (IDP_TENANT_IDP_ALIASES, query parameters, path segments) and locale prefixes. Used by the
// settings, the route classes, the sign-in routes and the login routing alike.

/** Tenant ids and aliases as IDP_TENANT_IDP_ALIASES accepts them (config/settings.ts). */
export const ID_SYNTAX = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** Longest tenant id or alias the gateway takes from a request (a path segment, a query, a body). */
const MAX_ID_LENGTH = 128;

/** A tenant id or alias as a request may name one: the syntax above, bounded. */
export function isIdSyntax(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_ID_LENGTH && ID_SYNTAX.test(value);
}

/** A language tag in the first path segment: `/de/...`, `/de-CH/...` (contract: `{locale}`). */
const LOCALE_SYNTAX = /^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$/i;

/**
 * First path segments that belong to a route, never to a locale, although some look like a
 * language tag (`api`, `ws`): `/api/auth/login` is the chat front-end's, not a localized login page.
 */
export const RESERVED_FIRST_SEGMENTS: ReadonlySet<string> = new Set([
  'api',
  'ws',
  'auth',
  'oauth',
  'openai',
  'ollama',
  'cache',
  'static',
  '_app',
  'favicon',
  'health',
  'healthz',
  'readyz',
  'metrics',
]);

/** A locale prefix: the language-tag syntax, and not a reserved first segment. */
export function isLocaleSegment(segment: string): boolean {
  return LOCALE_SYNTAX.test(segment) && !RESERVED_FIRST_SEGMENTS.has(segment.toLowerCase());
}

/** An alias as a path gives it: printable, bounded. Anything else names no provider. */
export function plausibleAlias(alias: string): boolean {
  // eslint-disable-next-line no-control-regex
  return alias.length > 0 && alias.length <= 255 && !/[\u0000-\u001f\u007f/\\]/.test(alias);
}
