// One schema over the environment. Every setting of the gateway is read here and nowhere else.
//
// Precedence: the process environment, then the per-stage env file (config/dev.env or
// config/prod.env, chosen by NODE_ENV), then the schema default. Every problem is reported at
// once, naming the variable, so an operator fixes a bad deployment in one round.
import { readFileSync, existsSync } from 'node:fs';
import { createHmac, randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { ID_SYNTAX } from '../policies/syntax.js';
import { UPSTREAM_RELEASE_POLICIES, type UpstreamReleasePolicy } from '../policies/upstream-release.js';
import { redactUrl, redactValue } from './redact.js';

export type Env = Record<string, string | undefined>;

const here = dirname(fileURLToPath(import.meta.url));

/** `true`/`false`, exactly: the two policy switches must never be guessed from `1` or `TRUE`. */
const strictSwitch = z
  .enum(['true', 'false'], {
    error: (issue) => `must be exactly 'true' or 'false' (got ${issue.input === undefined ? 'nothing' : JSON.stringify(issue.input)})`,
  })
  .transform((v) => v === 'true');

/** Lenient booleans for the other switches, as the contract says. */
const flag = (fallback: boolean) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return fallback;
      const s = v.trim().toLowerCase();
      if (['true', '1', 'yes'].includes(s)) return true;
      if (['false', '0', 'no'].includes(s)) return false;
      ctx.addIssue({ code: 'custom', message: `must be one of true/false/1/0/yes/no (got ${JSON.stringify(v)})` });
      return z.NEVER;
    });

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

/** An absolute URL of one of `schemes`; `check` refuses what else the setting must not hold. */
const urlSetting = (schemes: string[], message: (v: string) => string, check: (u: URL) => string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return undefined;
      try {
        const u = new URL(v.trim());
        if (!schemes.includes(u.protocol)) throw new Error('scheme');
        return check(u);
      } catch {
        ctx.addIssue({ code: 'custom', message: message(v) });
        return z.NEVER;
      }
    });

const httpUrl = urlSetting(
  ['http:', 'https:'],
  (v) => `must be an absolute http(s) URL without credentials (got ${JSON.stringify(redactUrl(v))})`,
  (u) => {
    if (u.username || u.password) throw new Error('credentials');
    return u.href.replace(/\/$/, '');
  },
);

/**
 * A password holding `#`, `@`, `/`, `?` or `%` breaks the URL (`#` starts a fragment, a second `@`
 * moves the host): say how to write it, without echoing it.
 */
export function redisPasswordHint(value: string): string {
  const rest = value.trim().replace(/^rediss?:\/\//i, '');
  const at = rest.lastIndexOf('@');
  const userinfo = at >= 0 ? rest.slice(0, at) : (rest.split(/[/?]/)[0] ?? '');
  const chars = ['#', '@', '/', '?'].filter((c) => (c === '#' ? rest.includes('#') : userinfo.includes(c)));
  if (!chars.length) return '';
  const codes: Record<string, string> = { '#': '%23', '@': '%40', '/': '%2F', '?': '%3F' };
  return `; a ${chars.map((c) => `'${c}'`).join(' or ')} in the password must be percent-encoded (${chars.map((c) => `${c} as ${codes[c]}`).join(', ')})`;
}

/** redis:// or rediss:// (TLS), credentials allowed (redacted wherever settings are shown, never echoed). */
const redisUrl = urlSetting(
  ['redis:', 'rediss:'],
  (v) => `must be redis://[user:password@]host:port[/db] or rediss://... (got a value that is not)${redisPasswordHint(v)}`,
  (u) => {
    if (!u.hostname) throw new Error('host');
    return u.href;
  },
);

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

/** What a tenant id and an alias may look like, in words (the grammar is policies/syntax.ts). */
const ID_WORDS = "letters, digits, '.', '_' and '-', starting with a letter or digit";

/**
 * IDP_TENANT_IDP_ALIASES: `<tenant_id>=<idp_alias>,...`. Empty turns tenant links off.
 * Spec, login links rule 5: a malformed pair or a repeated tenant stops startup. Every problem is
 * named, each pair on its own (`acme=,globex` gives two). An empty entry (a trailing or doubled
 * comma) is refused too, with words saying so: a template whose pair came out empty
 * (`acme=x,${GLOBEX_PAIR}`) must not pass unnoticed.
 */
function tenantAliasProblems(raw: string | undefined): { map: Map<string, string>; problems: string[] } {
  const map = new Map<string, string>();
  const problems: string[] = [];
  if (raw === undefined || raw.trim() === '') return { map, problems };
  const parts = raw.split(',');
  parts.forEach((part, i) => {
    const pair = part.trim();
    const where = parts.length > 1 ? ` (entry ${i + 1} of ${parts.length})` : '';
    if (!pair) {
      const why = i === parts.length - 1 ? 'a trailing comma' : i === 0 ? 'a leading comma' : 'two commas in a row';
      problems.push(`malformed pair${where}: the entry is empty (${why}); remove the extra comma`);
      return;
    }
    const eq = pair.indexOf('=');
    const bad = (why: string) => problems.push(`malformed pair ${JSON.stringify(pair)}${where}: ${why}; expected <tenant_id>=<idp_alias>`);
    if (eq < 0) return void bad('no "="');
    const tenant = pair.slice(0, eq).trim();
    const alias = pair.slice(eq + 1).trim();
    if (!tenant) return void bad('no tenant id before "="');
    if (!alias) return void bad(`no alias after "=" for tenant ${JSON.stringify(tenant)}`);
    if (!ID_SYNTAX.test(tenant)) return void bad(`tenant id ${JSON.stringify(tenant)} is not a valid tenant id (${ID_WORDS})`);
    if (!ID_SYNTAX.test(alias)) return void bad(`alias ${JSON.stringify(alias)} is not a valid provider alias (${ID_WORDS})`);
    if (map.has(tenant)) return void problems.push(`tenant ${JSON.stringify(tenant)} appears twice`);
    map.set(tenant, alias);
  });
  return { map, problems: [...new Set(problems)] };
}

export function parseTenantAliases(raw: string | undefined): { ok: true; map: Map<string, string> } | { ok: false; error: string } {
  const { map, problems } = tenantAliasProblems(raw);
  return problems.length ? { ok: false, error: problems.join('; ') } : { ok: true, map };
}

const tenantAliases = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const { map, problems } = tenantAliasProblems(v);
    for (const message of problems) ctx.addIssue({ code: 'custom', message });
    return problems.length ? z.NEVER : map;
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
  /** what to do behind an Open WebUI release the route table was not checked against (policies/upstream-release.ts) */
  UPSTREAM_RELEASE_POLICY: z
    .enum(UPSTREAM_RELEASE_POLICIES, {
      error: (issue) => `must be one of ${UPSTREAM_RELEASE_POLICIES.join(', ')} (got ${JSON.stringify(issue.input)})`,
    })
    .default('warn'),
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
  OAUTH_ROLES_CLAIM: z.string().default('roles'),
  OAUTH_ADMIN_ROLES: list(['PlatformSysAdmin']),
  OAUTH_GROUPS_CLAIM: z.string().default('groups'),
  TENANTS_CLAIM: z.string().default('tenants'),
  ALLOWED_ORIGINS: list([]),

  CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: strictSwitch,
  CHATUI_ENABLE_ADMIN_EXPORT: strictSwitch,

  IDP_LOGIN_WELCOME_PAGE: flag(false),
  SHOW_IDP_LOGIN: flag(false),
  IDP_TENANT_IDP_ALIASES: tenantAliases,
  IDP_ADMIN_URL: httpUrl,
  IDP_ADMIN_CLIENT_ID: optionalText,
  IDP_ADMIN_CLIENT_SECRET: optionalText,
  IDP_PROVIDERS_FILE: optionalText,
  IDP_CACHE_SECONDS: int(300, 1, 86_400),
  TENANT_LOOKUP_RATE_LIMIT: int(0, 0, 1_000_000),
  TENANT_LOOKUP_RATE_WINDOW_SECONDS: int(60, 1, 86_400),
  REDIS_URL: redisUrl,

  WEBUI_AUTH_TRUSTED_EMAIL_HEADER: headerName('X-Forwarded-Email'),
  WEBUI_AUTH_TRUSTED_NAME_HEADER: headerName('X-Forwarded-Name'),
  WEBUI_AUTH_TRUSTED_ROLE_HEADER: headerName('X-Forwarded-Role'),
  WEBUI_AUTH_TRUSTED_GROUPS_HEADER: headerName('X-Forwarded-Groups'),
  ALLOW_UPSTREAM_API_KEYS: flag(false),

  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  AUDIT_LOG_FILE: optionalText,
  METRICS_PORT: int(0, 0, 65535),
  DRIFT_CHECK_SECONDS: int(300, 0, 86_400),
  GATEWAY_WORKERS: int(1, 1, 256),
  /** production: accept an http: OIDC_ISSUER_URL that is not loopback (e.g. a realm inside a trusted network) */
  ALLOW_INSECURE_ISSUER: flag(false),
});

type Parsed = z.output<typeof schema>;

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
    /** UPSTREAM_RELEASE_POLICY: behind a release the route table was not checked against */
    releasePolicy: UpstreamReleasePolicy;
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
    rolesClaim: string;
    adminRoles: string[];
    groupsClaim: string;
    tenantsClaim: string;
  };
  policy: { bypassAdminAccessControl: boolean; enableAdminExport: boolean };
  login: {
    welcomePage: boolean;
    showIdpLogin: boolean;
    tenantAliases: ReadonlyMap<string, string>;
    cacheSeconds: number;
    tenantLookupRateLimit: number;
    tenantLookupRateWindowSeconds: number;
  };
  catalog: { adminUrl?: string; clientId: string; clientSecret: string; providersFile?: string };
  /**
   * The trusted-header names, and `noGroups`: the groups header's value for a user in no group. Open
   * WebUI 0.12.4 syncs memberships only when the header names a group (auths.py `signin`), so an
   * empty header left a user removed from every realm group in their old Open WebUI groups, with
   * those groups' grants. A name no group can have makes the sync remove every membership: derived
   * from the session secret, so no admin can create a group of that name beforehand.
   */
  trustedHeaders: { email: string; name: string; role: string; groups: string; noGroups: string };
  allowUpstreamApiKeys: boolean;
  log: { level: Parsed['LOG_LEVEL']; auditFile?: string };
  driftCheckSeconds: number;
  /** where the state every instance shares lives; undefined: in this process */
  redisUrl?: string;
}

export class SettingsError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'SettingsError';
  }
}

/** Reads `KEY=value` lines; `#` comments and blank lines are skipped, quotes are removed. */
export function parseEnvFile(text: string): Env {
  const env: Env = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m || line.trim().startsWith('#')) continue;
    let value = m[2] ?? '';
    if (/^(['"]).*\1$/.test(value)) value = value.slice(1, -1);
    env[m[1]!] = value;
  }
  return env;
}

/** The groups header's value for a user in no group (see Settings.trustedHeaders). */
export function noGroupsName(secret: string | undefined): string {
  const key = secret ?? randomBytes(32).toString('hex');
  return 'no-group-' + createHmac('sha256', key).update('open-webui groups header: a member of no group').digest('hex').slice(0, 32);
}

export function stageFile(stage: string): string {
  const name = stage === 'production' ? 'prod.env' : 'dev.env';
  // Beside this module, or, when compiled to dist/config/, in the project's config/.
  const candidates = [join(here, name), join(here, '..', '..', 'config', name)];
  return candidates.find((f) => existsSync(f)) ?? candidates[0]!;
}

/** The environment as the gateway sees it: process values over the stage file's defaults. */
export function effectiveEnv(processEnv: Env, options: { stageFiles?: boolean } = {}): Env {
  const stage = processEnv.NODE_ENV === 'production' ? 'production' : 'development';
  const file = stageFile(stage);
  const fileEnv = options.stageFiles !== false && existsSync(file) ? parseEnvFile(readFileSync(file, 'utf8')) : {};
  // Secrets never come from a file the gateway reads at runtime: the dev stage file's are public
  // (docker compose hands them over as environment, where the rule in requiredProblems applies).
  const merged: Env = {};
  for (const [k, v] of Object.entries(fileEnv)) if (!SECRETS.includes(k)) merged[k] = v;
  for (const [k, v] of Object.entries(processEnv)) if (v !== undefined) merged[k] = v;
  return merged;
}

const SECRETS = ['OIDC_CLIENT_SECRET', 'SESSION_SECRET', 'IDP_ADMIN_CLIENT_SECRET'];
/** config/dev.env's secrets are public (they are in the repository): their values start so. */
const PUBLIC_DEV_SECRET = /^dev-only-/;

/** localhost, 127.0.0.0/8 or [::1]: an address only this machine reaches. */
function isLoopbackUrl(value: string | undefined): boolean {
  try {
    const host = new URL((value ?? '').trim()).hostname;
    return host === 'localhost' || /^127(?:\.\d{1,3}){3}$/.test(host) || host === '[::1]';
  } catch {
    return false;
  }
}

/** What must be present given the stage; checked on the raw values so that every problem is listed at once. */
function requiredProblems(env: Env): string[] {
  const problems: string[] = [];
  const has = (name: string) => (env[name] ?? '').trim() !== '';
  const production = env.NODE_ENV === 'production';
  const sandbox = !production && !has('UPSTREAM_URL');
  const need = (name: string, why: string) => {
    if (!has(name)) problems.push(`${name}: required ${why}`);
  };
  if (!sandbox) {
    need('UPSTREAM_URL', 'in production (the chat front-end, e.g. http://open-webui:8080)');
    need('OIDC_ISSUER_URL', '(the realm, e.g. https://kc.example/realms/platform)');
    need('OIDC_CLIENT_ID', "(the gateway's confidential client)");
    need('OIDC_CLIENT_SECRET', "(the gateway's confidential client)");
    need('SESSION_SECRET', '(at least 32 characters)');
    if (production) need('PUBLIC_URL', 'in production (the address browsers use)');
  }
  // Anyone can forge an admin session with a public secret: only the sandbox (which makes its own)
  // and a development gateway that only this machine reaches (docker compose with the dev stage
  // file, PUBLIC_URL on localhost) may run on one.
  const publicUrl = has('PUBLIC_URL') ? env.PUBLIC_URL : `http://localhost:${env.PORT ?? 8080}`;
  if (production || !isLoopbackUrl(publicUrl)) {
    for (const name of SECRETS) {
      if ((env[name] ?? '').split(',').some((v) => PUBLIC_DEV_SECRET.test(v.trim()))) {
        problems.push(
          `${name}: the public dev-only value of config/dev.env is refused ${production ? 'in production' : `with PUBLIC_URL ${publicUrl} (not loopback)`}: set a secret of your own`,
        );
      }
    }
  }
  // A realm reached over plain http can be impersonated on the way: production wants https.
  if (
    production &&
    has('OIDC_ISSUER_URL') &&
    /^http:/i.test(env.OIDC_ISSUER_URL!.trim()) &&
    !isLoopbackUrl(env.OIDC_ISSUER_URL) &&
    !/^(true|1|yes)$/i.test((env.ALLOW_INSECURE_ISSUER ?? '').trim())
  ) {
    problems.push(
      `OIDC_ISSUER_URL: an http: issuer is refused in production unless it is a loopback address or ALLOW_INSECURE_ISSUER=true (got ${JSON.stringify(env.OIDC_ISSUER_URL)})`,
    );
  }
  const secrets = (env.SESSION_SECRET ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  secrets.forEach((secret, i) => {
    if (secret.length < 32) problems.push(`SESSION_SECRET: key ${i + 1} has ${secret.length} characters, at least 32 are required`);
  });
  const file = (env.IDP_PROVIDERS_FILE ?? '').trim();
  if (file && !existsSync(file)) problems.push(`IDP_PROVIDERS_FILE: no such file ${JSON.stringify(file)}`);
  if (env.OAUTH_ADMIN_ROLES !== undefined && env.OAUTH_ADMIN_ROLES.split(',').every((r) => !r.trim()) && env.OAUTH_ADMIN_ROLES.trim() !== '') {
    problems.push('OAUTH_ADMIN_ROLES: at least one role is required');
  }
  return problems;
}

/**
 * Validate and build the settings. Throws SettingsError listing every problem.
 * `options.stageFiles: false` skips config/*.env (tests pass complete environments).
 */
export function loadSettings(processEnv: Env = process.env, options: { stageFiles?: boolean } = {}): Settings {
  const env = effectiveEnv(processEnv, options);
  const problems = requiredProblems(env);
  const result = schema.safeParse(env);
  if (!result.success) {
    for (const issue of result.error.issues) problems.push(`${String(issue.path[0] ?? '(environment)')}: ${issue.message}`);
  }
  if (problems.length || !result.success) throw new SettingsError(problems.sort());
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
      releasePolicy: e.UPSTREAM_RELEASE_POLICY,
    },
    server: {
      headersTimeoutMs: e.HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
      idleTimeoutMs: e.IDLE_TIMEOUT_MS,
      shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
      quietGcMs: e.QUIET_GC_MS,
      workers: e.GATEWAY_WORKERS,
    },
    oidc: {
      issuerUrl: e.OIDC_ISSUER_URL ?? '',
      clientId: e.OIDC_CLIENT_ID ?? '',
      clientSecret: e.OIDC_CLIENT_SECRET ?? '',
      scopes: e.OIDC_SCOPES,
      sessionSecrets: e.SESSION_SECRET,
      rollingSeconds: e.SESSION_ROLLING_SECONDS,
      absoluteSeconds: e.SESSION_ABSOLUTE_SECONDS,
      refreshMarginSeconds: e.TOKEN_REFRESH_MARGIN_SECONDS,
      socketCheckSeconds: e.WEBSOCKET_SESSION_CHECK_SECONDS,
      rolesClaim: e.OAUTH_ROLES_CLAIM,
      adminRoles: e.OAUTH_ADMIN_ROLES,
      groupsClaim: e.OAUTH_GROUPS_CLAIM,
      tenantsClaim: e.TENANTS_CLAIM,
    },
    policy: { bypassAdminAccessControl: e.CHATUI_BYPASS_ADMIN_ACCESS_CONTROL, enableAdminExport: e.CHATUI_ENABLE_ADMIN_EXPORT },
    login: {
      welcomePage: e.IDP_LOGIN_WELCOME_PAGE,
      showIdpLogin: e.SHOW_IDP_LOGIN,
      tenantAliases: e.IDP_TENANT_IDP_ALIASES,
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
    log: { level: e.LOG_LEVEL, auditFile: e.AUDIT_LOG_FILE },
    driftCheckSeconds: e.DRIFT_CHECK_SECONDS,
    redisUrl: e.REDIS_URL,
  };
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
  for (const key of Object.keys(schema.shape).sort()) {
    const v = effective[key];
    if (v !== undefined) out[key] = redactValue(key, v);
  }
  return out;
}

/** Every variable the gateway reads (for the check of misspelt names, config/lint.ts). */
export const KNOWN_VARIABLES: readonly string[] = Object.keys(schema.shape);
