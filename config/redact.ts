// One place that decides what of the configuration may be shown: `npm run check-config`, the
// startup log line and the sandbox banner all print settings through here, so no secret (the
// session secrets, the OIDC client secret, the admin client secret, a password in REDIS_URL, the
// Redis passwords of Sentinel and Cluster) can reach a terminal or a log file by one of them
// forgetting it.
import type { Settings } from './settings.js';

const REDACTED = '[redacted]';

/** Variables whose whole value is secret. */
const SECRET_VARIABLES: readonly string[] = ['OIDC_CLIENT_SECRET', 'SESSION_SECRET', 'IDP_ADMIN_CLIENT_SECRET', 'WEBUI_SECRET_KEY'];
/** Variables that are URLs which may carry credentials (user:password@). */
const URL_VARIABLES: readonly string[] = ['REDIS_URL', 'DATABASE_URL'];
/** Variables that are lists of `host:port` or URLs, where an operator may have put credentials anyway. */
const URL_LIST_VARIABLES: readonly string[] = ['REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'];

/**
 * A URL as it may be shown: `redis://user:secret@host:6379/0` gives `redis://[redacted]@host:6379/0`.
 * A value that is not a URL is shown only up to its scheme (it may hold a password the parser did
 * not find, e.g. one with an unencoded `#`).
 */
export function redactUrl(value: string): string {
  try {
    const u = new URL(value);
    if (!u.username && !u.password) return value;
    u.username = '';
    u.password = '';
    return u.href.replace(/^([a-z][a-z0-9+.-]*:\/\/)/i, `$1${REDACTED}@`);
  } catch {
    const scheme = /^([a-z][a-z0-9+.-]*:\/\/)/i.exec(value.trim())?.[1];
    return scheme ? `${scheme}${REDACTED}` : REDACTED;
  }
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

/** An optional secret as it may be shown: whether it is set, not what it is. */
const secretShown = (value: string | undefined) => (value ? REDACTED : undefined);

/** The resolved settings as plain JSON, every secret replaced. */
export function redactSettings(settings: Settings): Record<string, unknown> {
  return {
    ...settings,
    oidc: { ...settings.oidc, clientSecret: settings.oidc.clientSecret ? REDACTED : '', sessionSecrets: settings.oidc.sessionSecrets.map(() => REDACTED) },
    trustedHeaders: { ...settings.trustedHeaders, noGroups: REDACTED },
    catalog: { ...settings.catalog, clientSecret: settings.catalog.clientSecret ? REDACTED : '' },
    login: { ...settings.login, tenantAliases: Object.fromEntries(settings.login.tenantAliases) },
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
