// The sandbox behind `npm start` when no UPSTREAM_URL is set (and NODE_ENV is not production):
// the real gateway in front of
//   - the Open WebUI stand-in (sandbox/open-webui.ts), seeded with one user per demo
//     account, their files and chats (sandbox/seed.ts), its switches set like the gateway's,
//     as the compose deployment does;
//   - an OpenID provider dressed as the Keycloak realm `platform` (sandbox/idp.ts, the real
//     oidc-provider package), with the demo accounts and a client for the gateway;
//   - the demo realm's provider catalog, written to a temporary IDP_PROVIDERS_FILE, and its
//     tenant links (IDP_TENANT_IDP_ALIASES).
// Nothing is written outside one temporary directory, removed on exit. main.ts imports this
// module only in sandbox mode: production never loads it or the stand-ins.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './ports.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings, SettingsError, type Settings } from '../config/settings.js';
import { redisTarget, type RedisNode } from '../config/redis.js';
import { redactSettings } from '../config/redact.js';
import { createGateway, type Gateway } from '../gateway/app.js';
import { exitOnSignals } from '../gateway/lifecycle.js';
import { demoAccounts, demoIdentityProviders, demoTenantAliases, type KeycloakIdentityProvider } from './demo-realm.js';
import type { TestIdp } from './idp.js';
import { startOpenWebUI, type OpenWebUIStandIn } from './open-webui.js';
import { sandboxSeed, seededFileNames } from './seed.js';

export const SANDBOX_CLIENT_ID = 'chat-gateway';

export interface Sandbox {
  /** where the browser goes: the gateway's PUBLIC_URL */
  url: string;
  gateway: Gateway;
  /** the Open WebUI stand-in; undefined in front of the real Open WebUI (`openWebUI`) */
  upstream: OpenWebUIStandIn | undefined;
  idp: TestIdp;
  settings: Settings;
  banner: string;
  close(): Promise<void>;
}

export interface SandboxOptions {
  /** environment to read; default process.env */
  env?: NodeJS.ProcessEnv;
  /** print the banner on stdout (default true) */
  print?: boolean;
  /** stop everything and exit on SIGTERM/SIGINT (default true) */
  signals?: boolean;
  /**
   * Sign in against this realm instead of the embedded OpenID provider, the provider catalog
   * read from its Admin REST API (`npm run sandbox:keycloak`: the real Keycloak, sandbox/keycloak.ts).
   * It must already accept the gateway's addresses (`onAddress` is called before the gateway starts).
   */
  realm?: { issuer: string; clientSecret: string; onAddress(publicUrl: string): Promise<void>; close(): Promise<void> };
  /**
   * In front of this Open WebUI instead of the stand-in (`npm run sandbox:open-webui`: the real
   * Open WebUI 0.12.4, sandbox/real-open-webui.ts); it starts empty, without the demo files and chats.
   */
  openWebUI?: { url: string; version: string; close(): Promise<void> };
}

function fail(message: string): never {
  process.stderr.write(`\nThe sandbox did not start: ${message}\n`);
  process.exit(2);
}

async function loadIdp(): Promise<typeof import('./idp.js')> {
  try {
    return await import('./idp.js');
  } catch (err) {
    const e = err as Error & { code?: string };
    if (e.code === 'ERR_MODULE_NOT_FOUND') {
      fail(
        `a development dependency is missing (${e.message.split('\n')[0]}).\n` +
          'The sandbox runs an embedded OpenID provider (the oidc-provider package, a dev dependency): run `npm install`\n' +
          '(not `npm ci --omit=dev`), or set UPSTREAM_URL and the OIDC_* settings to run the gateway against real services.',
      );
    }
    throw err;
  }
}

/**
 * Start the stand-ins and the gateway. `base` are the settings `npm start` validated (sandbox
 * mode); the gateway's own settings are built here, pointing at the stand-ins.
 */
/**
 * The settings of a `npm run sandbox:*` command (sandbox/with-keycloak.ts, with-open-webui.ts), or
 * exit 2 naming what is wrong: invalid settings, or settings that are not the sandbox's.
 */
export function sandboxSettingsOrExit(command: string): Settings {
  let base: Settings;
  try {
    base = loadSettings();
  } catch (err) {
    if (err instanceof SettingsError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (!base.sandbox) {
    process.stderr.write(`${command} runs the sandbox: unset UPSTREAM_URL (and NODE_ENV=production).\n`);
    process.exit(2);
  }
  return base;
}

export async function startSandbox(base: Settings, options: SandboxOptions = {}): Promise<Sandbox> {
  const env = options.env ?? process.env;
  const host = base.listen.host; // 127.0.0.1 unless HOST says otherwise (config/settings.ts): demo passwords are public
  const port = base.listen.port === 0 ? await freePort(host === '0.0.0.0' ? '127.0.0.1' : host) : base.listen.port;
  const publicUrl = env.PUBLIC_URL?.trim() ? base.publicUrl : `http://localhost:${port}`;
  const idpPort = env.SANDBOX_IDP_PORT?.trim() ? Number(env.SANDBOX_IDP_PORT) : base.listen.port === 0 ? 0 : port + 1;
  if (!Number.isInteger(idpPort) || idpPort < 0 || idpPort > 65535)
    fail(`SANDBOX_IDP_PORT must be a port number (got ${JSON.stringify(env.SANDBOX_IDP_PORT)})`);

  const realm = options.realm;
  const { startIdp } = realm ? { startIdp: undefined } : await loadIdp();
  const dir = mkdtempSync(join(tmpdir(), 'chat-gateway-sandbox-'));
  const cleanups: Array<() => Promise<void> | void> = [() => rmSync(dir, { recursive: true, force: true })];
  const cleanup = async () => {
    for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => undefined);
  };

  try {
    const real = options.openWebUI;
    const upstream = real
      ? undefined
      : await startOpenWebUI({
          ...sandboxSeed(),
          secretKey: randomBytes(24).toString('base64url'),
          // Set like the gateway, as docker-compose.yml does: no drift to warn about.
          bypassAdminAccessControl: base.policy.bypassAdminAccessControl,
          enableAdminExport: base.policy.enableAdminExport,
          enableAdminChatAccess: false,
          trustedHeaders: base.trustedHeaders,
        });
    if (upstream) cleanups.push(() => upstream.close());
    if (real) cleanups.push(() => real.close());
    const upstreamUrl = real?.url ?? upstream!.url;

    if (realm) {
      cleanups.push(() => realm.close());
      await realm.onAddress(publicUrl);
    }
    const clientSecret = realm?.clientSecret ?? randomBytes(24).toString('base64url');
    let idp: TestIdp | undefined;
    if (startIdp)
      try {
        idp = await startIdp({
          port: idpPort,
          clients: [
            {
              client_id: SANDBOX_CLIENT_ID,
              client_secret: clientSecret,
              redirect_uris: [`${publicUrl}/auth/callback`],
              post_logout_redirect_uris: [`${publicUrl}/auth/login`, `${publicUrl}/`],
            },
          ],
        });
      } catch (err) {
        if ((err as { code?: string }).code === 'EADDRINUSE')
          fail(`port ${idpPort} (the embedded OpenID provider) is in use: set SANDBOX_IDP_PORT, or another PORT.`);
        throw err;
      }
    if (idp) cleanups.push(() => idp.close());

    // With the real realm the catalog comes from its Admin REST API (IDP_PROVIDERS_FILE unset).
    const providersFile = env.IDP_PROVIDERS_FILE?.trim() || (realm ? '' : join(dir, 'providers.json'));
    if (!env.IDP_PROVIDERS_FILE?.trim() && !realm) writeFileSync(providersFile, JSON.stringify(demoIdentityProviders, null, 2));

    let settings: Settings;
    try {
      settings = loadSettings({
        ...env,
        HOST: host,
        PORT: String(port),
        PUBLIC_URL: publicUrl,
        UPSTREAM_URL: upstreamUrl,
        OIDC_ISSUER_URL: realm?.issuer ?? idp!.issuer,
        OIDC_CLIENT_ID: SANDBOX_CLIENT_ID,
        OIDC_CLIENT_SECRET: clientSecret,
        SESSION_SECRET: randomBytes(32).toString('base64url'),
        ...(providersFile ? { IDP_PROVIDERS_FILE: providersFile } : {}),
        IDP_TENANT_IDP_ALIASES: env.IDP_TENANT_IDP_ALIASES ?? demoTenantAliases,
        // The gateway's own default (info: a line per request, and the audit lines): one truth for
        // the README, check-config and the sandbox. LOG_LEVEL=warn keeps only warnings and audit.
        LOG_LEVEL: env.LOG_LEVEL ?? 'info',
      });
    } catch (err) {
      if (err instanceof SettingsError) fail(err.message);
      throw err;
    }

    const gateway = await createGateway(settings);
    cleanups.push(() => gateway.close().then(() => gateway.obs.close()));
    try {
      await gateway.start(port, host);
    } catch (err) {
      if ((err as { code?: string }).code === 'EADDRINUSE') fail(`port ${port} is in use: start with another, e.g. PORT=${port + 10} npm start`);
      throw err;
    }

    // With Redis, the first connection decides whether "ready" is true (issue 28 item 2).
    const deadline = Date.now() + 2_500;
    while (redisTarget(settings) && !gateway.sharedState.ready().ok && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const banner = renderBanner(settings, {
      issuer: realm?.issuer ?? idp!.issuer,
      real: !!realm,
      upstream: real ? { url: real.url, real: real.version } : { url: upstreamUrl },
      listenHost: host,
      shared: gateway.sharedState.ready(),
    });
    if (options.print !== false) process.stdout.write(banner);
    const sandbox: Sandbox = { url: publicUrl, gateway, upstream, idp: idp as TestIdp, settings, banner, close: cleanup };
    if (options.signals !== false) exitOnSignals(gateway.obs.log, cleanup);
    return sandbox;
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** What a tenant link does with the catalog (spec links rule 3: only usable providers). */
function tenantLink(alias: string, catalog: KeycloakIdentityProvider[]): string {
  const p = catalog.find((x) => x.alias === alias);
  if (!p) return `tenant link to "${alias}", not in the catalog: the login page`;
  if (!p.enabled) return `tenant link to "${alias}" (disabled): the login page`;
  if (p.linkOnly) return `tenant link to "${alias}" (link-only): the login page`;
  return `tenant link: straight to provider "${alias}"`;
}

/** The variable that names the Redis in use. */
const redisVariable = (s: Settings) => (s.redisSentinel ? 'REDIS_SENTINELS' : s.redisCluster ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL');
const hosts = (nodes: RedisNode[]) => nodes.map((n) => `${n.host}:${n.port}`).join(',');

function renderBanner(
  settings: Settings,
  parts: { issuer: string; real: boolean; upstream: { url: string; real?: string }; listenHost: string; shared: { ok: boolean; detail: string } },
): string {
  const u = settings.publicUrl;
  const on = (v: boolean) => (v ? 'true' : 'false');
  const width = Math.max(...demoAccounts.map((a) => `${a.username} / ${a.password}`.length)) + 3;
  const tenants = [...settings.login.tenantAliases.entries()];
  let catalog: KeycloakIdentityProvider[] = [];
  try {
    catalog = parts.real ? demoIdentityProviders : (JSON.parse(readFileSync(settings.catalog.providersFile ?? '', 'utf8')) as KeycloakIdentityProvider[]);
  } catch {
    /* the gateway says what is wrong with it */
  }
  const lines = [
    '',
    'Chat policy gateway: SANDBOX (no UPSTREAM_URL set). Demo data only, nothing leaves this machine.',
    '',
    parts.shared.ok ? `  Sandbox ready: ${u}/` : `  Sandbox started but NOT READY: ${u}/`,
    ...(parts.shared.ok
      ? []
      : [
          `  WARNING: ${parts.shared.detail}.`,
          `  Sign-in pages work; every signed-in request answers 503 until Redis is reachable (or unset ${redisVariable(settings)}).`,
        ]),
    '',
    `  The gateway listens on ${parts.listenHost}:${settings.listen.port}, in front of:`,
    parts.upstream.real
      ? `    chat front-end   the real Open WebUI ${parts.upstream.real}, unmodified, starting empty  ${parts.upstream.url}`
      : `    chat front-end   Open WebUI stand-in with demo users, files and chats  ${parts.upstream.url}`,
    parts.real
      ? `    sign-in          the real Keycloak, realm "platform" of deploy/keycloak/realm-platform.json  ${parts.issuer}`
      : `    sign-in          OpenID provider playing the Keycloak realm "platform"  ${parts.issuer}`,
    parts.real
      ? `    provider list    Keycloak's Admin REST API (${settings.catalog.adminUrl}); Acme's provider is the realm acme-idp (dana / dana-pass)`
      : `    provider list    the demo realm's identity providers (${settings.catalog.providersFile})`,
    ...(settings.redisUrl ? [`    shared state     Redis ${String(redactSettings(settings).redisUrl)} (REDIS_URL)`] : []),
    ...(settings.redisSentinel
      ? [`    shared state     Redis Sentinel "${settings.redisSentinel.name}" at ${hosts(settings.redisSentinel.sentinels)} (REDIS_SENTINELS)`]
      : []),
    ...(settings.redisCluster ? [`    shared state     Redis Cluster at ${hosts(settings.redisCluster.nodes)} (REDIS_CLUSTER_NODES)`] : []),
    '',
    parts.upstream.real
      ? '  Demo logins (username / password); each account is created in Open WebUI at its first sign-in:'
      : '  Demo logins (username / password), each owning 2 files and 1 chat:',
    ...demoAccounts.map((a) => `    ${`${a.username} / ${a.password}`.padEnd(width)}${a.note}`),
    '',
    '  Click through:',
    settings.login.welcomePage
      ? `    ${u}/auth/login           the welcome page (IDP_LOGIN_WELCOME_PAGE=true: the provider list is withheld)`
      : `    ${u}/auth/login           one button per provider (hidden, link-only and disabled ones are left out)`,
    `    ${u}/auth/start           the realm's own username and password form (no provider hint): how platform administrators such as sysadmin sign in${settings.login.showIdpLogin ? ' (also the direct-login entry on /auth/login)' : ''}`,
    ...tenants.map(([tenant, alias]) => `    ${`${u}/${tenant}`.padEnd(u.length + 22)}${tenantLink(alias, catalog)}`),
    ...(parts.real
      ? [
          "    Acme's link goes through Keycloak to the realm acme-idp (sign in as dana / dana-pass); the other",
          '    brokered providers point at outside services that do not exist here.',
        ]
      : [
          '    The brokered providers (Entra, Okta, ...) do not exist here: the OpenID provider shows its own',
          '    login form, naming the provider hint it received. Sign in there with a demo login.',
        ]),
    parts.upstream.real
      ? `    ${u}/                     the real chat front-end, signed in by trusted headers; its own menu signs out`
      : `    ${u}/                     the chat front-end (stand-in): who you are, links, and its own Sign out`,
    settings.policy.bypassAdminAccessControl
      ? `    ${u}/api/v1/files/        as sysadmin: everyone's files (CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true)`
      : `    ${u}/api/v1/files/        as sysadmin: only sysadmin's own files (the gateway filters the list)`,
    settings.policy.enableAdminExport
      ? `    ${u}/api/v1/chats/all/db  the full chat export: open to admins (CHATUI_ENABLE_ADMIN_EXPORT=true)`
      : `    ${u}/api/v1/chats/all/db  the full chat export: 401 for everyone while the export is off`,
    `    ${u}/auth/session         who you are;  ${u}/auth/logout  sign out`,
    `    ${u}/readyz  ${u}/metrics  operations`,
    '',
    `  Policy switches now: CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=${on(settings.policy.bypassAdminAccessControl)}  CHATUI_ENABLE_ADMIN_EXPORT=${on(settings.policy.enableAdminExport)}`,
    "    CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true npm start   admins see everyone's files",
    '    CHATUI_ENABLE_ADMIN_EXPORT=true npm start           admins may download the full chat export',
    '    Other settings work too, e.g. IDP_LOGIN_WELCOME_PAGE=true SHOW_IDP_LOGIN=true npm start',
    `  Files seeded for sysadmin: ${seededFileNames(demoAccounts[0]!).join(', ')}. Logs: JSON lines below, one per request (LOG_LEVEL=warn npm start for fewer).`,
    '  Stop with Ctrl-C.',
    '',
  ];
  return lines.join('\n') + '\n';
}
