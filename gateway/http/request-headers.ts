// Header hygiene on every forwarded request, HTTP and WebSocket alike, and the one place the
// headers sent upstream are assembled (`upstreamHeaders`, and `lookupHeaders` for the gateway's
// own requests as the caller). Done before the request is handed to
// the proxy, never in a `proxyReq` listener (that event does not fire for
// `Expect: 100-continue`).
import type { IncomingHttpHeaders } from 'node:http';

export interface TrustedHeaderNames {
  email: string;
  name: string;
  role: string;
  groups: string;
  /** the groups header's value for a user in no group (config/settings.ts) */
  noGroups: string;
}

/** What the chat front-end is told about the caller (a verified gateway identity). */
export interface TrustedIdentity {
  email: string;
  name: string;
  admin: boolean;
  groups: readonly string[];
}

// Hop-by-hop headers (RFC 9110 7.6.1) and the ones only a proxy in front of us could set.
// X-Forwarded-* and Forwarded are dropped: the gateway is the edge and sets its own.
const ALWAYS_DROP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'x-real-ip',
  'x-original-url',
  'x-rewrite-url',
  'expect',
]);

/** `X_Forwarded_Email`, `x-forwarded-email` and `X-FORWARDED-EMAIL` are one header to Starlette. */
const normalizeHeaderName = (name: string) => {
  const lower = name.toLowerCase();
  return lower.includes('_') ? lower.replace(/_/g, '-') : lower;
};

/** Did the client ask for a WebSocket upgrade? */
export function isWebSocketUpgrade(headers: IncomingHttpHeaders): boolean {
  return headers.upgrade !== undefined && String(headers.upgrade).toLowerCase() === 'websocket';
}

/**
 * What a client must not send upstream: every copy of the trusted identity headers in any
 * spelling, hop-by-hop headers, and whatever the client listed in `Connection:` (unless it is one
 * of ours: a client must not be able to make a hop-by-hop rule drop the gateway's headers).
 */
function clientOnly(headers: IncomingHttpHeaders, trusted: ReadonlySet<string>): (name: string) => boolean {
  // (a Connection naming the body's framing is refused before this: `connectionNamesFraming`)
  const listed = connectionListed(headers);
  return (name) => {
    const n = normalizeHeaderName(name);
    return trusted.has(n) || ALWAYS_DROP.has(n) || (listed.length > 0 && n !== 'content-length' && listed.includes(n));
  };
}

/** The header names `Connection:` lists, as Starlette would spell them. */
function connectionListed(headers: IncomingHttpHeaders): string[] {
  return headers.connection === undefined
    ? []
    : String(headers.connection)
        .split(',')
        .map((t) => normalizeHeaderName(t.trim()))
        .filter(Boolean);
}

/** Headers that say where a message ends or whom it is for: never hop-by-hop. */
const FRAMING = new Set(['content-length', 'transfer-encoding', 'host']);

/**
 * Does `Connection:` name the body's framing? Honouring it would send the body upstream without its
 * length, as raw bytes after a bodiless request: a second request that nobody judged (smuggling).
 */
export function connectionNamesFraming(headers: IncomingHttpHeaders): boolean {
  return headers.connection !== undefined && connectionListed(headers).some((n) => FRAMING.has(n));
}

export function trustedHeaderSet(names: TrustedHeaderNames): ReadonlySet<string> {
  return new Set([names.email, names.name, names.role, names.groups].map(normalizeHeaderName));
}

/** Header values must be visible ASCII; a name such as "José" is sent percent-encoded. */
function headerValue(value: string): string {
  const clean = value.replace(/[\r\n\0]/g, ' ').trim();
  return /^[\x20-\x7e]*$/.test(clean) ? clean : encodeURIComponent(clean);
}

/** Group names, comma-separated; a user in none gets the name no group has, never an empty header (Open WebUI ignores that). */
function groupsValue(names: TrustedHeaderNames, groups: readonly string[]): string {
  const told = groups.map((g) => headerValue(g).replace(/,/g, ' ').trim()).filter(Boolean);
  return told.length ? told.join(',') : names.noGroups;
}

/** The trusted headers that tell the chat front-end who the caller is, as [name, value] pairs. */
export function identityHeaders(names: TrustedHeaderNames, identity: TrustedIdentity): Array<[string, string]> {
  return [
    [names.email, headerValue(identity.email)],
    [names.name, headerValue(identity.name || identity.email)],
    [names.role, identity.admin ? 'admin' : 'user'],
    [names.groups, groupsValue(names, identity.groups)],
  ];
}

export function setIdentityHeaders(headers: IncomingHttpHeaders, names: TrustedHeaderNames, identity: TrustedIdentity): void {
  for (const [name, value] of identityHeaders(names, identity)) headers[name] = value;
}

/**
 * The credentials and identity a request sends upstream, as the steps before forwarding decide
 * them (the request's context, gateway/pipeline/context.ts): the client's own until a step
 * consumes or replaces them. Never edited on `req.headers`.
 */
export interface OutgoingCredentials {
  authorization: string | undefined;
  apiKey: string | string[] | undefined;
  cookie: string | undefined;
  /** the trusted identity headers, [name, value] */
  trustedHeaders: ReadonlyArray<readonly [string, string]>;
}

/** Headers `upstreamHeaders` writes itself: a client's copy is never forwarded. */
const GATEWAY_SET = new Set(['host', 'authorization', 'x-api-key', 'cookie', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-request-id']);

/**
 * What is sent upstream, assembled in one place from the client's headers (those a client may not
 * send left out: `clientOnly`; the client's own headers object is never changed) and what the
 * steps decided (`out`): a new plain object in insertion order (deleted properties would turn V8's
 * object into a slow dictionary that http-proxy-3 and Node then walk; bench/README.md).
 * The upstream learns the host from the gateway, never from the client (which may send anything a
 * parser lets through): the public one, as on every other header it builds links from.
 */
export function upstreamHeaders(
  client: IncomingHttpHeaders,
  out: OutgoingCredentials,
  facts: { clientIp: string | undefined; publicOrigin: PublicOrigin; requestId: string; trusted: ReadonlySet<string>; upgrade?: boolean },
): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = { host: facts.publicOrigin.host };
  const dropped = clientOnly(client, facts.trusted);
  for (const name in client) {
    const value = client[name];
    if (value !== undefined && !GATEWAY_SET.has(name) && !dropped(name)) headers[name] = value;
  }
  // only on the upgrade path: a plain request that names `Upgrade: websocket` is not one
  if (facts.upgrade && isWebSocketUpgrade(client)) {
    headers.connection = 'Upgrade';
    headers.upgrade = 'websocket';
  }
  for (const [name, value] of out.trustedHeaders) headers[name] = value;
  if (out.authorization !== undefined) headers.authorization = out.authorization;
  if (out.apiKey !== undefined) headers['x-api-key'] = out.apiKey;
  if (out.cookie !== undefined) headers.cookie = out.cookie;
  if (facts.clientIp) headers['x-forwarded-for'] = facts.clientIp;
  headers['x-forwarded-proto'] = facts.publicOrigin.proto;
  headers['x-forwarded-host'] = facts.publicOrigin.host;
  headers['x-request-id'] = facts.requestId;
  return headers;
}

/** Headers the gateway's own requests as the caller keep of those assembled (no conditionals, no ranges, no encodings). */
const LOOKUP_KEEP = new Set([
  'authorization',
  'cookie',
  'x-api-key',
  'user-agent',
  'x-request-id',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'accept-language',
]);

/**
 * The headers of the gateway's own requests as the caller (owner lookups, rewritten answers): the
 * caller's credential and trusted headers from what `upstreamHeaders` assembled, JSON asked for.
 */
export function lookupHeaders(assembled: IncomingHttpHeaders, trusted: ReadonlySet<string>): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = { accept: 'application/json' };
  for (const [k, v] of Object.entries(assembled)) if (LOOKUP_KEEP.has(k) || trusted.has(k)) out[k] = v;
  return out;
}

/** RFC 9110 7.2 / RFC 3986 3.2.2: a reg-name, IPv4 or bracketed IPv6 literal, and an optional port. */
const HOST_SYNTAX = /^(?:[A-Za-z0-9\-._~!$&'()*+,=%]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/** A Host header the gateway can read unambiguously (Node lets `a b` through); HTTP/1.0 may send none. */
export function validHost(host: string | undefined, httpVersion: string): boolean {
  return host === undefined ? httpVersion === '1.0' : HOST_SYNTAX.test(host);
}

/** PUBLIC_URL as the X-Forwarded-Proto and X-Forwarded-Host values, worked out once. */
export interface PublicOrigin {
  proto: string;
  host: string;
}

export function publicOriginOf(publicUrl: string): PublicOrigin {
  const u = new URL(publicUrl);
  return { proto: u.protocol.replace(':', ''), host: u.host };
}

/** Open WebUI's session cookie (its JWT): a credential of the chat front-end. */
const UPSTREAM_TOKEN_COOKIE = /^token$/;

/**
 * Forward exactly one credential, the one the gateway checked: every client-sent credential of
 * the chat front-end (Authorization, x-api-key, the `token` cookie) is replaced by `credential`.
 * A client with a gateway session could otherwise send someone else's upstream token or key
 * alongside it, and the upstream would act on that instead.
 */
export function setUpstreamCredential(out: OutgoingCredentials, credential: { authorization: string } | { 'x-api-key': string }): void {
  if ('authorization' in credential) {
    out.authorization = credential.authorization;
    out.apiKey = undefined;
  } else {
    out.apiKey = credential['x-api-key'];
    out.authorization = undefined;
  }
  out.cookie = withoutUpstreamToken(out.cookie);
}

/**
 * An anonymous request (a public asset, no identity, no accepted key): no credential of the chat
 * front-end goes along, since the gateway checked none. Its other cookies stay.
 */
export function withoutUpstreamCredentials(out: OutgoingCredentials): void {
  out.authorization = undefined;
  out.apiKey = undefined;
  out.cookie = withoutUpstreamToken(out.cookie);
}

/** The Cookie header without Open WebUI's `token` cookie. */
function withoutUpstreamToken(cookie: string | undefined): string | undefined {
  // `token` anywhere, not `token=`: Starlette trims cookie names, so `token =JWT` is its token too.
  if (typeof cookie !== 'string' || !cookie.includes('token')) return cookie;
  return withoutCookies(cookie, UPSTREAM_TOKEN_COOKIE) || undefined;
}

/**
 * A Cookie header without the cookies whose (trimmed) names match `drop`, every other pair passed
 * on byte for byte. Written here rather than with the `cookie` package: parsing and re-serializing
 * would decode and re-encode the values the chat front-end reads (gateway/auth/session-cookie.ts parses
 * the gateway's own cookies with it).
 */
export function withoutCookies(cookie: string, drop: RegExp): string {
  return cookie
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p && !drop.test(starletteName(p)))
    .join('; ');
}

/**
 * A cookie pair's name as Starlette reads it (`cookie_parser`: `key.strip()`): Python strips more
 * than JavaScript's trim() (\x1c-\x1f and \x85 too; header bytes arrive as Latin-1), so `\x85token`
 * is Open WebUI's `token`.
 */
function starletteName(pair: string): string {
  const eq = pair.indexOf('=');
  return eq < 0 ? '' : pair.slice(0, eq).replace(PYTHON_EDGE_SPACE, '');
}
// Python's str.isspace() in the Latin-1 range, at either end (built from a string: a literal control-character class trips the linter)
const PY_SPACE = '[\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0]';
const PYTHON_EDGE_SPACE = new RegExp(`^${PY_SPACE}+|${PY_SPACE}+$`, 'g');

/** `Authorization: Bearer sk-...` or `x-api-key: sk-...`: an API key of the chat front-end. */
export function upstreamApiKey(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  const bearer = typeof auth === 'string' ? /^Bearer\s+(sk-[A-Za-z0-9_-]+)$/i.exec(auth.trim())?.[1] : undefined;
  if (bearer) return bearer;
  const key = headers['x-api-key'];
  return typeof key === 'string' && /^sk-[A-Za-z0-9_-]+$/.test(key.trim()) ? key.trim() : undefined;
}
