// One schema over the environment. Every setting of the gateway is read here and nowhere else.
//
// Precedence: the process environment, then the per-stage env file (config/dev.env or
// config/prod.env, chosen by NODE_ENV), then the schema default. Every problem is reported at
// once, naming the variable, so an operator fixes a bad deployment in one round.
import { createHmac, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { effectiveEnv, type Env } from './env.js';
import { requiredProblems } from './required.js';
import { redisCredentialsProblem, redisNodes, redisPasswordHint, redisProblems, type RedisClusterSettings, type RedisSentinelSettings } from './redis.js';
import { redactUrl, redactValue } from './redact.js';
import { flag, liveVariablesOf, LIVE_VARIABLES, readPolicy, type Policy, type PolicySources } from './policy.js';
import { readPolicyFile } from './policy-file.js';

const int = (fallback: number, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return fallback;
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `must be a whole number from ${min} to ${max} (got ${JSON.stringify(v)})` });
        return z.NEVER;
      }
      return n;
    });

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** A URL refused for a reason of its own, said instead of the setting's usual message. */
class UrlProblem extends Error {}

/** Why a value is not an absolute URL of one of `schemes` (the first condition it fails), in words. */
function urlDefect(raw: string, schemes: string[], err: unknown): string {
  const named = schemes.map((s) => `${s}//`).join(' or ');
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) return `it does not start with ${named}`;
  if (!URL.canParse(raw)) return 'it does not read as a URL after its scheme (the host, port or path)';
  const scheme = new URL(raw).protocol;
  if (!schemes.includes(scheme)) return `its scheme is ${scheme}//, not ${named}`;
  if (err instanceof Error && err.message === 'credentials') return 'it holds a user or password (user:password@)';
  if (err instanceof Error && err.message === 'host') return 'it names no host';
  return 'it is not one';
}

/** An absolute URL of one of `schemes`; `check` refuses what else the setting must not hold. */
const urlSetting = (schemes: string[], message: (v: string, why: string) => string, check: (u: URL, raw: string) => string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return undefined;
      try {
        const u = new URL(v.trim());
        if (!schemes.includes(u.protocol)) throw new Error('scheme');
        return check(u, v.trim());
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: err instanceof UrlProblem ? err.message : message(v, urlDefect(v.trim(), schemes, err)) });
        return z.NEVER;
      }
    });

const httpUrl = urlSetting(
  ['http:', 'https:'],
  (v, why) => `must be an absolute http(s) URL without credentials: ${why} (got ${JSON.stringify(redactUrl(v))})`,
  (u) => {
    if (u.username || u.password) throw new Error('credentials');
    return u.href.replace(/\/$/, '');
  },
);

/**
 * redis:// or rediss:// (TLS), credentials allowed (redacted wherever settings are shown, never
 * echoed), but only as ioredis will read them (redisCredentialsProblem).
 */
const redisUrl = urlSetting(
  ['redis:', 'rediss:'],
  (v, why) => `must be redis://[user:password@]host:port[/db] or rediss://...: ${why}${redisPasswordHint(v)}`,
  (u, raw) => {
    if (!u.hostname) throw new Error('host');
    const problem = redisCredentialsProblem(raw);
    if (problem) throw new UrlProblem(problem);
    return u.href;
  },
);

/** A password: taken as written (spaces included), empty is none. */
const secretText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));

const list = (fallback: string[]) =>
  z
    .string()
    .optional()
    .transform((v) =>
      v === undefined || v.trim() === ''
        ? fallback
        : v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
    );

/** An HTTP header name a client could also send; kept lower-case for comparisons. */
const headerName = (fallback: string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      const name = v === undefined || v.trim() === '' ? fallback : v.trim();
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) {
        ctx.addIssue({ code: 'custom', message: `must be an HTTP header name (got ${JSON.stringify(v)})` });
        return z.NEVER;
      }
      return name.toLowerCase();
    });

const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: int(8080, 0, 65535),
  /** default 0.0.0.0, and 127.0.0.1 for the sandbox (its demo passwords are public): see loadSettings */
  HOST: optionalText,
  PUBLIC_URL: httpUrl,
  UPSTREAM_URL: httpUrl,
  UPSTREAM_TIMEOUT_MS: int(60_000, 100, 3_600_000),
  UPSTREAM_MAX_SOCKETS: int(256, 1, 100_000),
  REWRITE_MAX_BYTES: int(64 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  HEADERS_TIMEOUT_MS: int(15_000, 1_000, 600_000),
  REQUEST_TIMEOUT_MS: int(0, 0, 86_400_000),
  IDLE_TIMEOUT_MS: int(65_000, 1_000, 3_600_000),
  SHUTDOWN_GRACE_MS: int(10_000, 0, 600_000),
  QUIET_GC_MS: int(1_000, 0, 600_000).refine((ms) => ms === 0 || ms >= 100, 'must be 0 (off) or at least 100'),

  OIDC_ISSUER_URL: httpUrl,
  OIDC_CLIENT_ID: optionalText,
  OIDC_CLIENT_SECRET: optionalText,
  OIDC_SCOPES: z.string().default('openid profile email'),
  SESSION_SECRET: list([]),
  SESSION_ROLLING_SECONDS: int(24 * 3600, 60, 30 * 24 * 3600),
  SESSION_ABSOLUTE_SECONDS: int(7 * 24 * 3600, 60, 365 * 24 * 3600),
  TOKEN_REFRESH_MARGIN_SECONDS: int(30, 0, 3600),
  WEBSOCKET_SESSION_CHECK_SECONDS: int(15, 1, 300),
  /** ask the realm whether another client's bearer token's session still stands (policies/tokens.ts) */
  BEARER_INTROSPECTION: flag(true),
  BEARER_INTROSPECTION_CACHE_SECONDS: int(5, 0, 300),
  OAUTH_ROLES_CLAIM: z.string().default('roles'),
  OAUTH_ADMIN_ROLES: list(['PlatformSysAdmin']),
  OAUTH_GROUPS_CLAIM: z.string().default('groups'),
  TENANTS_CLAIM: z.string().default('tenants'),
  ALLOWED_ORIGINS: list([]),

  IDP_ADMIN_URL: httpUrl,
  IDP_ADMIN_CLIENT_ID: optionalText,
  IDP_ADMIN_CLIENT_SECRET: optionalText,
  IDP_PROVIDERS_FILE: optionalText,
  IDP_CACHE_SECONDS: int(300, 1, 86_400),
  TENANT_LOOKUP_RATE_LIMIT: int(0, 0, 1_000_000),
  TENANT_LOOKUP_RATE_WINDOW_SECONDS: int(60, 1, 86_400),
  REDIS_URL: redisUrl,
  REDIS_SENTINELS: redisNodes(26379, 'REDIS_PASSWORD (the data nodes) or REDIS_SENTINEL_PASSWORD (the sentinels)'),
  REDIS_SENTINEL_NAME: optionalText,
  REDIS_SENTINEL_USERNAME: optionalText,
  REDIS_SENTINEL_PASSWORD: secretText,
  REDIS_CLUSTER_NODES: redisNodes(6379, 'REDIS_PASSWORD'),
  REDIS_USERNAME: optionalText,
  REDIS_PASSWORD: secretText,

  WEBUI_AUTH_TRUSTED_EMAIL_HEADER: headerName('X-Forwarded-Email'),
  WEBUI_AUTH_TRUSTED_NAME_HEADER: headerName('X-Forwarded-Name'),
  WEBUI_AUTH_TRUSTED_ROLE_HEADER: headerName('X-Forwarded-Role'),
  WEBUI_AUTH_TRUSTED_GROUPS_HEADER: headerName('X-Forwarded-Groups'),
  ALLOW_UPSTREAM_API_KEYS: flag(false),

  AUDIT_LOG_FILE: optionalText,
  METRICS_PORT: int(0, 0, 65535),
  DRIFT_CHECK_SECONDS: int(300, 0, 86_400),
  GATEWAY_WORKERS: int(1, 1, 256),
  /** production: accept an http: OIDC_ISSUER_URL that is not loopback (e.g. a realm inside a trusted network) */
  ALLOW_INSECURE_ISSUER: flag(false),
  /** the live settings (config/policy.ts), read again whenever the file changes and on SIGHUP */
  POLICY_FILE: optionalText,
  POLICY_FILE_CHECK_MS: int(1_000, 100, 60_000),
});

/**
 * The configuration read once at start. The live settings are `policy` (config/policy.ts): the
 * gateway hands each request the policy in force when it began (gateway/app.ts), never these.
 */
export interface Settings {
  /** No UPSTREAM_URL outside production: `npm start` runs the self-contained sandbox. */
  sandbox: boolean;
  listen: { host: string; port: number; metricsPort: number };
  publicUrl: string;
  /** Origins allowed to open WebSockets: the public origin plus ALLOWED_ORIGINS. */
  allowedOrigins: string[];
  upstream: {
    url: string;
    timeoutMs: number;
    maxSockets: number;
    rewriteMaxBytes: number;
  };
  server: { headersTimeoutMs: number; requestTimeoutMs: number; idleTimeoutMs: number; shutdownGraceMs: number; quietGcMs: number; workers: number };
  oidc: {
    issuerUrl: string;
    clientId: string;
    clientSecret: string;
    scopes: string;
    sessionSecrets: string[];
    rollingSeconds: number;
    absoluteSeconds: number;
    refreshMarginSeconds: number;
    /** how often open WebSockets' sessions are judged again (ends on other instances, expiry) */
    socketCheckSeconds: number;
    /** ask the realm (token introspection) whether a bearer token of another client still stands */
    bearerIntrospection: boolean;
    /** how long the realm's answer that such a token stands is kept, per token */
    introspectionCacheSeconds: number;
    rolesClaim: string;
    adminRoles: string[];
    groupsClaim: string;
    tenantsClaim: string;
  };
  login: {
    cacheSeconds: number;
    tenantLookupRateLimit: number;
    tenantLookupRateWindowSeconds: number;
  };
  catalog: { adminUrl?: string; clientId: string; clientSecret: string; providersFile?: string };
  /**
   * The trusted-header names, and `noGroups`: the groups header's value for a user in no group. Open
   * WebUI (the table release) syncs memberships only when the header names a group (auths.py `signin`), so an
   * empty header left a user removed from every realm group in their old Open WebUI groups, with
   * those groups' grants. A name no group can have makes the sync remove every membership: derived
   * from the session secret, so no admin can create a group of that name beforehand.
   */
  trustedHeaders: { email: string; name: string; role: string; groups: string; noGroups: string };
  allowUpstreamApiKeys: boolean;
  log: { auditFile?: string };
  driftCheckSeconds: number;
  /**
   * Where the state every instance shares lives, at most one of the three (config: one topology);
   * none: in this process.
   */
  redisUrl?: string;
  redisSentinel?: RedisSentinelSettings;
  redisCluster?: RedisClusterSettings;
  /** the live settings at start: the environment, then POLICY_FILE, then the stage file */
  policy: Policy;
  /** where the live settings are read again while the gateway runs */
  policySources: PolicySources;
  /** what reading them said besides (a key the environment also sets, one that needs a restart) */
  policyWarnings: string[];
}

export class SettingsError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'SettingsError';
  }
}

/** The groups header's value for a user in no group (see Settings.trustedHeaders). */
export function noGroupsName(secret: string | undefined): string {
  const key = secret ?? randomBytes(32).toString('hex');
  return 'no-group-' + createHmac('sha256', key).update('open-webui groups header: a member of no group').digest('hex').slice(0, 32);
}

type Parsed = z.infer<typeof schema>;

function oidcOf(e: Parsed): Settings['oidc'] {
  return {
    issuerUrl: e.OIDC_ISSUER_URL ?? '',
    clientId: e.OIDC_CLIENT_ID ?? '',
    clientSecret: e.OIDC_CLIENT_SECRET ?? '',
    scopes: e.OIDC_SCOPES,
    sessionSecrets: e.SESSION_SECRET,
    rollingSeconds: e.SESSION_ROLLING_SECONDS,
    absoluteSeconds: e.SESSION_ABSOLUTE_SECONDS,
    refreshMarginSeconds: e.TOKEN_REFRESH_MARGIN_SECONDS,
    socketCheckSeconds: e.WEBSOCKET_SESSION_CHECK_SECONDS,
    bearerIntrospection: e.BEARER_INTROSPECTION,
    introspectionCacheSeconds: e.BEARER_INTROSPECTION_CACHE_SECONDS,
    rolesClaim: e.OAUTH_ROLES_CLAIM,
    adminRoles: e.OAUTH_ADMIN_ROLES,
    groupsClaim: e.OAUTH_GROUPS_CLAIM,
    tenantsClaim: e.TENANTS_CLAIM,
  };
}

/** One Redis topology at most (redisProblems refused more). */
function redisOf(e: Parsed): Pick<Settings, 'redisUrl' | 'redisSentinel' | 'redisCluster'> {
  return {
    redisUrl: e.REDIS_URL,
    redisSentinel: e.REDIS_SENTINELS && {
      sentinels: e.REDIS_SENTINELS.nodes,
      name: e.REDIS_SENTINEL_NAME!,
      tls: e.REDIS_SENTINELS.tls,
      username: e.REDIS_USERNAME,
      password: e.REDIS_PASSWORD,
      sentinelUsername: e.REDIS_SENTINEL_USERNAME,
      sentinelPassword: e.REDIS_SENTINEL_PASSWORD,
    },
    redisCluster: e.REDIS_CLUSTER_NODES && {
      nodes: e.REDIS_CLUSTER_NODES.nodes,
      tls: e.REDIS_CLUSTER_NODES.tls,
      username: e.REDIS_USERNAME,
      password: e.REDIS_PASSWORD,
    },
  };
}

/**
 * Validate and build the settings. Throws SettingsError listing every problem.
 * `options.stageFiles: false` skips config/*.env (tests pass complete environments).
 */
export function loadSettings(processEnv: Env = process.env, options: { stageFiles?: boolean } = {}): Settings {
  const env = effectiveEnv(processEnv, options);
  const problems = [...requiredProblems(env), ...redisProblems(env)];
  const result = schema.safeParse(env);
  if (!result.success) {
    for (const issue of result.error.issues) problems.push(`${String(issue.path[0] ?? '(environment)')}: ${issue.message}`);
  }
  const sources = policySourcesOf(processEnv, env);
  const file = sources.file === undefined ? undefined : readPolicyFile(sources.file);
  if (file && !file.ok) problems.push(file.problem);
  const policy = readPolicy(sources, file?.ok ? file.text : undefined, KNOWN_VARIABLES);
  if (!policy.ok) problems.push(...policy.problems);
  if (problems.length || !result.success || !policy.ok) throw new SettingsError([...new Set(problems)].sort());
  const e = result.data;
  const sandbox = e.NODE_ENV !== 'production' && !e.UPSTREAM_URL;

  const publicUrl = e.PUBLIC_URL ?? `http://localhost:${e.PORT}`;
  const publicOrigin = new URL(publicUrl).origin;
  const adminUrl = e.IDP_ADMIN_URL ?? deriveAdminUrl(e.OIDC_ISSUER_URL);
  return {
    sandbox,
    listen: { host: e.HOST ?? (sandbox ? '127.0.0.1' : '0.0.0.0'), port: e.PORT, metricsPort: e.METRICS_PORT },
    publicUrl,
    allowedOrigins: [publicOrigin, ...e.ALLOWED_ORIGINS.map((o) => o.replace(/\/$/, ''))],
    upstream: {
      url: e.UPSTREAM_URL ?? '',
      timeoutMs: e.UPSTREAM_TIMEOUT_MS,
      maxSockets: e.UPSTREAM_MAX_SOCKETS,
      rewriteMaxBytes: e.REWRITE_MAX_BYTES,
    },
    server: {
      headersTimeoutMs: e.HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
      idleTimeoutMs: e.IDLE_TIMEOUT_MS,
      shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
      quietGcMs: e.QUIET_GC_MS,
      workers: e.GATEWAY_WORKERS,
    },
    oidc: oidcOf(e),
    login: {
      cacheSeconds: e.IDP_CACHE_SECONDS,
      tenantLookupRateLimit: e.TENANT_LOOKUP_RATE_LIMIT,
      tenantLookupRateWindowSeconds: e.TENANT_LOOKUP_RATE_WINDOW_SECONDS,
    },
    catalog: {
      adminUrl,
      clientId: e.IDP_ADMIN_CLIENT_ID ?? e.OIDC_CLIENT_ID ?? '',
      clientSecret: e.IDP_ADMIN_CLIENT_SECRET ?? e.OIDC_CLIENT_SECRET ?? '',
      providersFile: e.IDP_PROVIDERS_FILE,
    },
    trustedHeaders: {
      email: e.WEBUI_AUTH_TRUSTED_EMAIL_HEADER,
      name: e.WEBUI_AUTH_TRUSTED_NAME_HEADER,
      role: e.WEBUI_AUTH_TRUSTED_ROLE_HEADER,
      groups: e.WEBUI_AUTH_TRUSTED_GROUPS_HEADER,
      noGroups: noGroupsName(e.SESSION_SECRET[0]),
    },
    allowUpstreamApiKeys: e.ALLOW_UPSTREAM_API_KEYS,
    log: { auditFile: e.AUDIT_LOG_FILE },
    driftCheckSeconds: e.DRIFT_CHECK_SECONDS,
    ...redisOf(e),
    policy: policy.policy,
    policySources: sources,
    policyWarnings: policy.warnings,
  };
}

/** POLICY_FILE, and the live variables the process environment sets (they win) apart from the stage file's (they lose). */
function policySourcesOf(processEnv: Env, env: Env): PolicySources {
  const environment = liveVariablesOf(processEnv);
  const defaults: Env = {};
  for (const [key, value] of Object.entries(liveVariablesOf(env))) if (environment[key] === undefined) defaults[key] = value;
  const file = env.POLICY_FILE?.trim() || undefined;
  const checkMs = Number(env.POLICY_FILE_CHECK_MS?.trim() || 1_000);
  return { ...(file ? { file } : {}), checkMs: Number.isInteger(checkMs) ? checkMs : 1_000, environment, defaults };
}

/** `.../realms/R` gives `.../admin/realms/R` (Keycloak's layout). */
export function deriveAdminUrl(issuer: string | undefined): string | undefined {
  if (!issuer) return undefined;
  const m = /^(.*)\/realms\/([^/]+)\/?$/.exec(issuer);
  return m ? `${m[1]}/admin/realms/${m[2]}` : undefined;
}

/** The effective settings as text, secrets redacted (for `npm run check-config`): config/redact.ts decides. */
export function describeSettings(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  const effective = effectiveEnv(env);
  for (const key of [...KNOWN_VARIABLES].sort()) {
    const v = effective[key];
    if (v !== undefined) out[key] = redactValue(key, v);
  }
  return out;
}

/** Every variable the gateway reads (for the check of misspelt names, config/lint.ts). */
export const KNOWN_VARIABLES: readonly string[] = [...Object.keys(schema.shape), ...LIVE_VARIABLES];
