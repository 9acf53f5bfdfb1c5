// What `npm run check-config` (and the startup log) warns about although the settings load: names
// the gateway does not read but an operator plainly meant for it (a misspelt switch is silently
// ignored, and its default applies; Open WebUI's Redis Sentinel and Cluster variables, which the
// gateway does not read), a Redis password that needs percent-encoding, and tenant links to
// aliases the provider catalog does not know. Warnings never stop startup.
import { KNOWN_VARIABLES } from './settings.js';
import { type Env } from './env.js';
import { redisCredentialsProblem, redisPasswordHint } from './redis.js';

/** Prefixes of the gateway's variables: an unknown name with one of them is most likely a typo. */
const GATEWAY_PREFIXES: readonly string[] = [
  'CHATUI_',
  'BEARER_',
  'OIDC_',
  'OAUTH_',
  'IDP_',
  'WEBUI_AUTH_',
  'SESSION_',
  'REDIS_',
  'TENANT_',
  'GATEWAY_',
  'UPSTREAM_',
  'SANDBOX_',
];

/**
 * Read by something else that shares the env file (one env file serves both: docs/operating/settings.md,
 * "The variables"): Open WebUI's own variables with a gateway prefix, the compose file's, the
 * sandbox's. Not typos.
 */
const READ_ELSEWHERE: ReadonlySet<string> = new Set([
  // the sandbox (sandbox/main.ts)
  'SANDBOX_IDP_PORT',
  // Open WebUI (same env file in docker compose and Kubernetes)
  'WEBUI_AUTH_SIGNOUT_REDIRECT_URL',
  'WEBUI_AUTH_TRUSTED_EMAIL_HEADER',
  'WEBUI_AUTH_TRUSTED_NAME_HEADER',
  'WEBUI_AUTH_TRUSTED_ROLE_HEADER',
  'WEBUI_AUTH_TRUSTED_GROUPS_HEADER',
  'OAUTH_CLIENT_ID',
  'OAUTH_CLIENT_SECRET',
  'OAUTH_PROVIDER_NAME',
  'OAUTH_SCOPES',
  'OAUTH_MERGE_ACCOUNTS_BY_EMAIL',
  'OAUTH_ALLOWED_ROLES',
  'OAUTH_EMAIL_CLAIM',
  'OAUTH_USERNAME_CLAIM',
  'OAUTH_PICTURE_CLAIM',
  'OAUTH_ALLOWED_DOMAINS',
  'OAUTH_UPDATE_PICTURE_ON_LOGIN',
  'OAUTH_CODE_CHALLENGE_METHOD',
  'OAUTH_ROLES_SEPARATOR',
  'OAUTH_GROUPS_SEPARATOR',
  'OAUTH_BLOCKED_GROUPS',
  'OAUTH_SUB_CLAIM',
  'OAUTH_SESSION_TOKEN_ENCRYPTION_KEY',
  'OAUTH_TIMEOUT',
  'OAUTH_AUDIENCE',
  'REDIS_SENTINEL_HOSTS',
  'REDIS_SENTINEL_PORT',
  'REDIS_KEY_PREFIX',
  'REDIS_CLUSTER',
  'SESSION_COOKIE_SAME_SITE',
  'SESSION_COOKIE_SECURE',
]);

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return row[b.length]!;
}

/** The known variable closest to `name`, when it is close enough to be a typo of it. */
function nearestVariable(name: string): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const known of KNOWN_VARIABLES) {
    const d = distance(name, known);
    if (!best || d < best.d) best = { name: known, d };
  }
  return best && best.d <= Math.max(2, Math.floor(best.name.length / 4)) ? best.name : undefined;
}

/** Warnings about the environment itself (no I/O). */
export function configWarnings(env: Env): string[] {
  const warnings: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (env[name] === undefined || KNOWN_VARIABLES.includes(name) || READ_ELSEWHERE.has(name)) continue;
    if (!GATEWAY_PREFIXES.some((p) => name.startsWith(p))) continue;
    const near = nearestVariable(name);
    warnings.push(`${name}: not a setting of the gateway, ignored${near ? `; did you mean ${near}?` : ''}`);
  }
  // Open WebUI's Redis topology variables (same env file): the gateway reads its own.
  const set = (name: string) => (env[name] ?? '').trim() !== '';
  if (set('REDIS_SENTINEL_HOSTS') && !set('REDIS_SENTINELS')) {
    warnings.push(
      `REDIS_SENTINEL_HOSTS: Open WebUI's Sentinel setting, not the gateway's: the gateway reads REDIS_SENTINELS (host:port,...) with REDIS_SENTINEL_NAME${set('REDIS_URL') ? ', and takes REDIS_URL as one plain server' : ''}`,
    );
  }
  if (/^true$/i.test((env.REDIS_CLUSTER ?? '').trim()) && !set('REDIS_CLUSTER_NODES')) {
    warnings.push(
      `REDIS_CLUSTER: Open WebUI's Cluster switch, not the gateway's: the gateway reads REDIS_CLUSTER_NODES (host:port,...)${set('REDIS_URL') ? ', and takes REDIS_URL as one plain server' : ''}`,
    );
  }
  // A URL read as written, with a raw '@' in its password: taken, but other tools may split it elsewhere.
  // One that is not read as written is refused by the settings, which say so.
  const redis = env.REDIS_URL?.trim();
  if (redis && URL.canParse(redis) && !redisCredentialsProblem(redis)) {
    const hint = redisPasswordHint(redis);
    if (hint) warnings.push(`REDIS_URL: the URL is read, but its password may not be what you meant${hint}`);
  }
  return warnings;
}
