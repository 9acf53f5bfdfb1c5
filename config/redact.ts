// One place that decides what of the configuration may be shown: `npm run check-config`, the
// startup log line and the sandbox banner all print settings through here, so no secret (the
// session secrets, the OIDC client secret, the admin client secret, a password in REDIS_URL, the
// Redis passwords of Sentinel and Cluster) can reach a terminal or a log file by one of them
// forgetting it.
const REDACTED = '[redacted]';

/** Variables whose whole value is secret. */
const SECRET_VARIABLES: readonly string[] = ['OIDC_CLIENT_SECRET', 'SESSION_SECRET', 'IDP_ADMIN_CLIENT_SECRET', 'WEBUI_SECRET_KEY'];
/** Variables that are URLs which may carry credentials (user:password@). */
const URL_VARIABLES: readonly string[] = ['REDIS_URL', 'DATABASE_URL'];
/** Variables that are lists of `host:port` or URLs, where an operator may have put credentials anyway. */
const URL_LIST_VARIABLES: readonly string[] = ['REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'];

/**
 * A URL as it may be shown: `redis://user:secret@host:6379/0` gives `redis://[redacted]@host:6379/0`.
 * Everything between the scheme's `//` and the last '@' is taken out, however a URL parser would
 * split it: a password may hold '@', '#', '/' or '?' written raw, and a parser then reads part of
 * it as the host, a path or a fragment (the last '@' may also be one of a query: more is hidden
 * then, never less). The values of a query are taken out too (ioredis reads `?password=`), and a
 * fragment. A value that is no `scheme://` URL is shown the same way, so an operator sees the typo
 * (`kc.example.com/realms/platform`, `https//chat.example.com`); only where it has no '@' and its
 * host part reads as `user:password` (a ':' not followed by a port) is what follows the ':' taken
 * out.
 */
export function redactUrl(value: string): string {
  const v = value.trim();
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(v)?.[0] ?? '';
  const at = v.lastIndexOf('@');
  if (at >= scheme.length) return `${scheme}${REDACTED}${redactQuery(v.slice(at))}`;
  const rest = v.slice(scheme.length);
  // `default:secret` parses too (as a URL of the scheme `default:`): only a `scheme://` one is taken as read
  return `${scheme}${scheme && URL.canParse(v) ? redactQuery(rest) : redactBareCredentials(redactQuery(rest))}`;
}

/** `user:secret/path` as `user:[redacted]/path`; `host:8080/path` unchanged (a port is no secret). */
function redactBareCredentials(rest: string): string {
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const colon = authority.indexOf(':');
  if (colon < 0 || /^:\d*$/.test(authority.slice(colon))) return rest;
  return `${authority.slice(0, colon + 1)}${REDACTED}${end < 0 ? '' : rest.slice(end)}`;
}

/** As redactUrl, without the mark where the credentials were: `redis://host:6379/0` (how log lines name a server). */
export function urlWithoutCredentials(value: string): string {
  const shown = redactUrl(value);
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(shown)?.[0] ?? '';
  return shown.startsWith(`${scheme}${REDACTED}@`) ? scheme + shown.slice(scheme.length + REDACTED.length + 1) : shown;
}

/** `?a=1&b=2&c#f` as `?a=[redacted]&b=[redacted]&[redacted]#[redacted]`: the names of pairs only. */
function redactQuery(rest: string): string {
  const hash = rest.indexOf('#');
  const beforeHash = hash < 0 ? rest : rest.slice(0, hash);
  const q = beforeHash.indexOf('?');
  const head = q < 0 ? beforeHash : beforeHash.slice(0, q);
  const query =
    q < 0
      ? ''
      : `?${beforeHash
          .slice(q + 1)
          .split('&')
          .map((pair) => (pair.includes('=') ? `${pair.slice(0, pair.indexOf('='))}=${REDACTED}` : pair && REDACTED))
          .join('&')}`;
  return `${head}${query}${hash < 0 ? '' : `#${REDACTED}`}`;
}

/**
 * `host:port,redis://user:secret@host:port` as it may be shown: an entry names a node, so whatever
 * comes before its last '@' is credentials, however a URL parser would split them (a password may
 * hold '@' or '#' written raw); the rest goes through redactUrl (read as if it had a scheme). So
 * `u:p@ss#word@host:26379` gives `[redacted]@host:26379`.
 */
export function redactUrlList(value: string): string {
  return value
    .split(',')
    .map((entry) => {
      const e = entry.trim();
      if (!e) return e;
      const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(e)?.[0] ?? '';
      const at = e.lastIndexOf('@');
      const node = at >= scheme.length ? e.slice(at + 1) : e.slice(scheme.length);
      const shown = redactUrl(`${scheme || 'redis://'}${node}`);
      const rest = shown.startsWith(scheme || 'redis://') ? shown.slice((scheme || 'redis://').length) : REDACTED;
      return `${scheme}${at >= scheme.length ? `${REDACTED}@` : ''}${rest}`;
    })
    .join(',');
}

/** One variable's value as it may be shown. */
export function redactValue(name: string, value: string): string {
  if (SECRET_VARIABLES.includes(name) || /SECRET|PASSWORD|_TOKEN$/i.test(name)) return value ? REDACTED : '';
  if (URL_VARIABLES.includes(name) || /_URL$/.test(name)) return redactUrl(value);
  if (URL_LIST_VARIABLES.includes(name)) return redactUrlList(value);
  return value;
}

/** The parts of the settings (config/settings.ts) that hold secrets. */
export interface SettingsWithSecrets {
  oidc: { clientSecret?: string; sessionSecrets: readonly string[] };
  trustedHeaders: { noGroups: string };
  catalog: { clientSecret?: string };
  policy: { tenantAliases: ReadonlyMap<string, string> };
  policySources?: { file?: string; checkMs: number };
  policyWarnings?: readonly string[];
  redisUrl?: string;
  redisSentinel?: { password?: string; sentinelPassword?: string };
  redisCluster?: { password?: string };
}

/** An optional secret as it may be shown: whether it is set, not what it is. */
const secretShown = (value: string | undefined) => (value ? REDACTED : undefined);

/** The resolved settings as plain JSON, every secret replaced. */
export function redactSettings(settings: SettingsWithSecrets): Record<string, unknown> {
  // how the live settings are read again: where from (the values are `policy`); warnings are said apart
  const { policySources, policyWarnings: _warned, ...shown } = settings;
  return {
    ...shown,
    ...(policySources ? { policySources: { file: policySources.file, checkMs: policySources.checkMs } } : {}),
    oidc: { ...settings.oidc, clientSecret: settings.oidc.clientSecret ? REDACTED : '', sessionSecrets: settings.oidc.sessionSecrets.map(() => REDACTED) },
    trustedHeaders: { ...settings.trustedHeaders, noGroups: REDACTED },
    catalog: { ...settings.catalog, clientSecret: settings.catalog.clientSecret ? REDACTED : '' },
    policy: { ...settings.policy, tenantAliases: Object.fromEntries(settings.policy.tenantAliases) },
    ...(settings.redisUrl ? { redisUrl: redactUrl(settings.redisUrl) } : {}),
    ...(settings.redisSentinel
      ? {
          redisSentinel: {
            ...settings.redisSentinel,
            password: secretShown(settings.redisSentinel.password),
            sentinelPassword: secretShown(settings.redisSentinel.sentinelPassword),
          },
        }
      : {}),
    ...(settings.redisCluster ? { redisCluster: { ...settings.redisCluster, password: secretShown(settings.redisCluster.password) } } : {}),
  };
}
