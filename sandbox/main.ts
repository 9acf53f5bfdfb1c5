// The sandbox behind `npm start` when no UPSTREAM_URL is set (and NODE_ENV is not production): the
// real gateway in front of the Open WebUI stand-in (or the real one, `npm run sandbox:open-webui`),
// an OpenID provider dressed as the Keycloak realm `platform`, the demo catalog and a POLICY_FILE
// the newcomer edits while it runs. The banner says only what was done. Nothing is written outside
// one temporary directory; production never loads this module.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './ports.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings, SettingsError, type Settings } from '../config/settings.js';
import { effectiveEnv } from '../config/env.js';
import { redisTarget, type RedisNode } from '../config/redis.js';
import { redactSettings } from '../config/redact.js';
import { configWarnings } from '../config/lint.js';
import { createGateway, type Gateway } from '../gateway/app.js';
import { readRelease } from '../gateway/upstream/release.js';
import { describeRelease } from '../policies/upstream-release.js';
import { exitOnSignals } from '../gateway/lifecycle.js';
import { reloadOnHangup } from '../gateway/hangups.js';
import { LIVE_VARIABLES, policyVariables, type Policy } from '../config/policy.js';
import { demoAccounts, demoIdentityProviders, demoTenantAliases, type KeycloakIdentityProvider } from './demo-realm.js';
import type { TestIdp } from './idp.js';
import { startOpenWebUI, type OpenWebUIStandIn } from './open-webui/stand-in.js';
import { isPlatformSysAdmin, sandboxSeed, userIdOf, type Seed } from './seed.js';
import { seedThroughGateway, type RealSeedReport } from './seed-open-webui.js';

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
  /** the command that started it, for the banner's hints (default `npm start`) */
  command?: string;
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
   * Open WebUI, sandbox/real-open-webui.ts). It starts empty; with `seed` the demo accounts
   * get their files and chats there through the gateway, and `model` (the connection Open WebUI
   * was started with) is registered for every account.
   */
  openWebUI?: {
    url: string;
    version: string;
    model?: { id: string; name: string; description: string; baseUrl: string };
    seed?: boolean;
    close(): Promise<void>;
  };
}

function fail(message: string): never {
  process.stderr.write(`\nThe sandbox did not start: ${message}\n`);
  process.exit(2);
}

/** Why the sandbox cannot start, found once something is running: what it started is stopped first, then fail(). */
class CannotStart extends Error {}

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

interface Addresses {
  host: string;
  port: number;
  publicUrl: string;
  idpPort: number;
}

async function sandboxAddresses(base: Settings, env: NodeJS.ProcessEnv): Promise<Addresses> {
  const host = base.listen.host; // 127.0.0.1 unless HOST says otherwise (config/settings.ts): demo passwords are public
  const port = base.listen.port === 0 ? await freePort(host === '0.0.0.0' ? '127.0.0.1' : host) : base.listen.port;
  const publicUrl = env.PUBLIC_URL?.trim() ? base.publicUrl : `http://localhost:${port}`;
  const idpPort = env.SANDBOX_IDP_PORT?.trim() ? Number(env.SANDBOX_IDP_PORT) : base.listen.port === 0 ? 0 : port + 1;
  if (!Number.isInteger(idpPort) || idpPort < 0 || idpPort > 65535)
    fail(`SANDBOX_IDP_PORT must be a port number (got ${JSON.stringify(env.SANDBOX_IDP_PORT)})`);
  return { host, port, publicUrl, idpPort };
}

/** The Open WebUI stand-in with the demo data, its switches set like the gateway's, as docker-compose.yml does: no drift to warn about. */
function startStandIn(base: Settings, seed: Seed): Promise<OpenWebUIStandIn> {
  return startOpenWebUI({
    ...seed,
    secretKey: randomBytes(24).toString('base64url'),
    bypassAdminAccessControl: base.policy.bypassAdminAccessControl,
    enableAdminExport: base.policy.enableAdminExport,
    enableAdminChatAccess: false,
    trustedHeaders: base.trustedHeaders,
  });
}

async function startEmbeddedIdp(startIdp: (typeof import('./idp.js'))['startIdp'], addresses: Addresses, clientSecret: string): Promise<TestIdp> {
  const { publicUrl, idpPort } = addresses;
  try {
    return await startIdp({
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
      throw new CannotStart(`port ${idpPort} (the embedded OpenID provider) is in use: set SANDBOX_IDP_PORT, or another PORT.`);
    throw err;
  }
}

interface SandboxFiles {
  providersFile: string;
  policyFile: string;
  /** live settings the environment sets, which the file cannot change */
  heldByEnvironment: string[];
}

/** The demo catalog and the live settings, in `dir` unless the environment names its own. */
function writeSandboxFiles(base: Settings, env: NodeJS.ProcessEnv, dir: string, withRealm: boolean): SandboxFiles {
  // With the real realm the catalog comes from its Admin REST API (IDP_PROVIDERS_FILE unset).
  const providersFile = env.IDP_PROVIDERS_FILE?.trim() || (withRealm ? '' : join(dir, 'providers.json'));
  if (!env.IDP_PROVIDERS_FILE?.trim() && !withRealm) writeFileSync(providersFile, JSON.stringify(demoIdentityProviders, null, 2));
  // The live settings, in a file the newcomer edits while it runs (the environment's keys stay the environment's).
  const policyFile = env.POLICY_FILE?.trim() || join(dir, 'policy.yaml');
  const heldByEnvironment = LIVE_VARIABLES.filter((k) => env[k] !== undefined);
  if (!env.POLICY_FILE?.trim()) writeFileSync(policyFile, sandboxPolicyText(base.policy, heldByEnvironment));
  return { providersFile, policyFile, heldByEnvironment };
}

/** The gateway's own settings, pointing at the stand-ins. */
function gatewaySettings(
  env: NodeJS.ProcessEnv,
  addresses: Addresses,
  peers: { upstreamUrl: string; issuer: string; clientSecret: string },
  files: SandboxFiles,
): Settings {
  try {
    return loadSettings({
      ...env,
      HOST: addresses.host,
      PORT: String(addresses.port),
      PUBLIC_URL: addresses.publicUrl,
      UPSTREAM_URL: peers.upstreamUrl,
      OIDC_ISSUER_URL: peers.issuer,
      OIDC_CLIENT_ID: SANDBOX_CLIENT_ID,
      OIDC_CLIENT_SECRET: peers.clientSecret,
      SESSION_SECRET: randomBytes(32).toString('base64url'),
      ...(files.providersFile ? { IDP_PROVIDERS_FILE: files.providersFile } : {}),
      POLICY_FILE: files.policyFile,
    });
  } catch (err) {
    if (err instanceof SettingsError) throw new CannotStart(err.message);
    throw err;
  }
}

async function listen(gateway: Gateway, addresses: Addresses): Promise<void> {
  const { port, host } = addresses;
  try {
    await gateway.start(port, host);
  } catch (err) {
    if ((err as { code?: string }).code === 'EADDRINUSE') throw new CannotStart(`port ${port} is in use: start with another, e.g. PORT=${port + 10} npm start`);
    throw err;
  }
  // With Redis, the first connection decides whether "ready" is true.
  const deadline = Date.now() + 2_500;
  while (redisTarget(gateway.settings) && !gateway.sharedState.ready().ok && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** Things started, stopped in the reverse order, each once, whatever one of them throws. */
function cleanups() {
  const list: Array<() => Promise<void> | void> = [];
  return {
    add: (c: () => Promise<void> | void) => void list.push(c),
    run: async () => {
      for (const c of list.splice(0).reverse()) await Promise.resolve(c()).catch(() => undefined);
    },
  };
}

/**
 * Start the stand-ins and the gateway. `base` are the settings `npm start` validated (sandbox
 * mode); the gateway's own settings are built here, pointing at the stand-ins.
 */
export async function startSandbox(base: Settings, options: SandboxOptions = {}): Promise<Sandbox> {
  const env = options.env ?? process.env;
  const addresses = await sandboxAddresses(base, env);
  const { realm, openWebUI: real } = options;
  // What a production start logs and check-config prints: a mistyped setting is ignored, so say so.
  const warnings = configWarnings(effectiveEnv(env));
  const { startIdp } = realm ? { startIdp: undefined } : await loadIdp();
  const dir = mkdtempSync(join(tmpdir(), 'chat-gateway-sandbox-'));
  const started = cleanups();
  started.add(() => rmSync(dir, { recursive: true, force: true }));

  try {
    const seed = real ? undefined : sandboxSeed();
    const upstream = seed ? await startStandIn(base, seed) : undefined;
    if (upstream) started.add(() => upstream.close());
    if (real) started.add(() => real.close());
    if (realm) {
      started.add(() => realm.close());
      await realm.onAddress(addresses.publicUrl);
    }
    const clientSecret = realm?.clientSecret ?? randomBytes(24).toString('base64url');
    const idp = startIdp ? await startEmbeddedIdp(startIdp, addresses, clientSecret) : undefined;
    if (idp) started.add(() => idp.close());
    const files = writeSandboxFiles(base, env, dir, !!realm);
    const issuer = realm?.issuer ?? idp!.issuer;
    const upstreamUrl = real?.url ?? upstream!.url;
    const settings = gatewaySettings(env, addresses, { upstreamUrl, issuer, clientSecret }, files);

    const gateway = await createGateway(settings);
    started.add(() => gateway.close().then(() => gateway.obs.close()));
    // The stand-in takes the two switches as the gateway applies them (the real Open WebUI reads its own at its start).
    if (upstream)
      gateway.policy.onChange((next) => {
        upstream.flags.bypassAdminAccessControl = next.bypassAdminAccessControl;
        upstream.flags.enableAdminExport = next.enableAdminExport;
      });
    for (const warning of warnings) gateway.obs.log.warn({ event: 'config-warning' }, warning);
    await listen(gateway, addresses);
    const banner = await bannerOnceListening(gateway, options, { addresses, issuer, upstreamUrl, seed, files, warnings });
    if (options.print !== false) process.stdout.write(banner);
    const sandbox: Sandbox = { url: addresses.publicUrl, gateway, upstream, idp: idp as TestIdp, settings, banner, close: started.run };
    if (options.signals !== false) {
      exitOnSignals(gateway.obs.log, started.run);
      reloadOnHangup(() => gateway.reloadPolicy());
    }
    return sandbox;
  } catch (err) {
    // nothing left behind: its temporary directory, the stand-ins, a real peer started for it
    await started.run();
    if (err instanceof CannotStart) fail(err.message);
    throw err;
  }
}

/** The banner, once the gateway listens: the release it found, and the demo data put into the real Open WebUI. */
async function bannerOnceListening(
  gateway: Gateway,
  options: SandboxOptions,
  start: { addresses: Addresses; issuer: string; upstreamUrl: string; seed: Seed | undefined; files: SandboxFiles; warnings: string[] },
): Promise<string> {
  const { settings } = gateway;
  const real = options.openWebUI;
  const warnings = [...start.warnings];
  // A release the route table was not checked against is said atop the banner, as a mistyped setting is.
  const release = await readRelease(gateway.upstream.calls);
  if (release.state !== 'supported') warnings.push(describeRelease(release, gateway.policy.current.upstreamRelease));
  let seeded: RealSeedReport | undefined;
  if (real?.seed && gateway.sharedState.ready().ok) {
    if (options.print !== false) process.stdout.write('Putting the demo files and chats into Open WebUI through the gateway...\n');
    seeded = await seedThroughGateway({ publicUrl: start.addresses.publicUrl, model: real.model });
  }
  return renderBanner(settings, {
    issuer: start.issuer,
    real: !!options.realm,
    upstream: real
      ? { url: real.url, real: real.version, model: seeded?.model && real.model ? { ...seeded.model, baseUrl: real.model.baseUrl } : undefined }
      : { url: start.upstreamUrl },
    listenHost: start.addresses.host,
    shared: gateway.sharedState.ready(),
    command: options.command ?? 'npm start',
    warnings: [...warnings, ...settings.policyWarnings, ...(seeded?.problems.map((p) => `the demo data: ${p}`) ?? [])],
    policy: { file: start.files.policyFile, heldByEnvironment: start.files.heldByEnvironment, standInFollows: !!start.seed },
    holdings: start.seed ? holdingsOfSeed(start.seed) : holdingsOfReport(seeded),
  });
}

/**
 * The sandbox's POLICY_FILE: the live settings as they are at start, but those the environment holds
 * (`CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true npm start`), which the file could not change; the demo
 * realm's tenant links unless the environment sets its own.
 */
function sandboxPolicyText(policy: Policy, heldByEnvironment: readonly string[]): string {
  const values: Record<string, string> = { ...policyVariables(policy), IDP_TENANT_IDP_ALIASES: demoTenantAliases };
  const lines = [
    "# The sandbox's live settings. Edit and save: the gateway applies them within a second, no restart.",
    '# A value that does not validate is refused (the log names it) and the settings in force stay.',
    ...Object.entries(values).map(([k, v]) => (heldByEnvironment.includes(k) ? `# ${k}: set in the environment, which wins` : `${k}: "${v}"`)),
  ];
  return lines.join('\n') + '\n';
}

/** What a tenant link does with the catalog (spec links-3: only usable providers). */
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

/** What each demo account owns in the chat front-end at start, by username (what was done, nothing else). */
type Holdings = Map<string, { files: string[]; chats: string[] }>;

function holdingsOfSeed(seed: Seed): Holdings {
  return new Map(
    demoAccounts.map((a) => [
      a.username,
      {
        files: seed.files.filter((f) => f.user_id === userIdOf(a)).map((f) => f.filename),
        chats: seed.chats.filter((c) => c.user_id === userIdOf(a)).map((c) => c.title),
      },
    ]),
  );
}

function holdingsOfReport(report: RealSeedReport | undefined): Holdings {
  return new Map((report?.accounts ?? []).map((a) => [a.username, { files: a.files, chats: a.chats }]));
}

const count = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
const owning = (h: { files: string[]; chats: string[] }) => `${count(h.files.length, 'file')} and ${count(h.chats.length, 'chat')}`;

interface BannerParts {
  issuer: string;
  real: boolean;
  upstream: { url: string; real?: string; model?: { id: string; name: string; baseUrl: string } };
  listenHost: string;
  shared: { ok: boolean; detail: string };
  command: string;
  warnings: string[];
  holdings: Holdings;
  policy: { file: string; heldByEnvironment: readonly string[]; standInFollows: boolean };
}

function renderBanner(settings: Settings, parts: BannerParts): string {
  const u = settings.publicUrl;
  const lines = [
    '',
    'Chat policy gateway: SANDBOX (no UPSTREAM_URL set). Demo data only, nothing leaves this machine.',
    '',
    ...parts.warnings.map((w) => `  WARNING: ${w}`),
    ...(parts.warnings.length ? [''] : []),
    parts.shared.ok ? `  Sandbox ready: ${u}/` : `  Sandbox started but NOT READY: ${u}/`,
    ...(parts.shared.ok
      ? []
      : [
          `  WARNING: ${parts.shared.detail}.`,
          `  Sign-in pages work; every signed-in request answers 503 until Redis is reachable (or unset ${redisVariable(settings)}).`,
        ]),
    '',
    ...peerLines(settings, parts),
    '',
    ...loginLines(parts),
    '',
    ...clickThroughLines(settings, parts),
    '',
    ...policyLines(settings, parts),
    `  Logs: JSON lines below, one per request (LOG_LEVEL=warn ${parts.command} for fewer).`,
    '  Stop with Ctrl-C.',
    '',
  ];
  return lines.join('\n') + '\n';
}

/** What the gateway stands in front of. */
function peerLines(settings: Settings, parts: BannerParts): string[] {
  return [
    `  The gateway listens on ${parts.listenHost}:${settings.listen.port}, in front of:`,
    parts.upstream.real
      ? `    chat front-end   the real Open WebUI ${parts.upstream.real}, unmodified  ${parts.upstream.url}`
      : `    chat front-end   Open WebUI stand-in with demo users, files and chats  ${parts.upstream.url}`,
    ...(parts.upstream.model
      ? [
          `    model            "${parts.upstream.model.name}": one fixed answer, streamed word by word  ${parts.upstream.model.baseUrl}`,
          `                     Open WebUI's OpenAI connection; registered by sysadmin as ${parts.upstream.model.id}, readable by every user`,
        ]
      : []),
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
  ];
}

/** The demo logins, and what each owns in the chat front-end. */
function loginLines(parts: BannerParts): string[] {
  const width = Math.max(...demoAccounts.map((a) => `${a.username} / ${a.password}`.length)) + 3;
  const held = demoAccounts.map((a) => parts.holdings.get(a.username) ?? { files: [], chats: [] });
  const alike = held.every((h) => owning(h) === owning(held[0]!));
  const where = parts.upstream.real ? ' in Open WebUI (put there through the gateway at start)' : '';
  return [
    parts.upstream.real && held.every((h) => h.files.length + h.chats.length === 0)
      ? '  Demo logins (username / password); each account is created in Open WebUI at its first sign-in:'
      : alike
        ? `  Demo logins (username / password), each owning ${owning(held[0]!)}${where}:`
        : `  Demo logins (username / password), with what each owns${where}:`,
    ...demoAccounts.map((a, i) => `    ${`${a.username} / ${a.password}`.padEnd(width)}${a.note}${alike ? '' : ` [${owning(held[i]!)}]`}`),
  ];
}

/** The pages to try, as the settings in force make them. */
function clickThroughLines(settings: Settings, parts: BannerParts): string[] {
  const u = settings.publicUrl;
  const tenants = [...settings.policy.tenantAliases.entries()];
  let catalog: KeycloakIdentityProvider[] = [];
  try {
    catalog = parts.real ? demoIdentityProviders : (JSON.parse(readFileSync(settings.catalog.providersFile ?? '', 'utf8')) as KeycloakIdentityProvider[]);
  } catch {
    /* the gateway says what is wrong with it */
  }
  return [
    '  Click through:',
    settings.policy.welcomePage
      ? `    ${u}/auth/login           the welcome page (IDP_LOGIN_WELCOME_PAGE=true: the provider list is withheld)`
      : `    ${u}/auth/login           one button per provider (hidden, link-only and disabled ones are left out)`,
    `    ${u}/auth/start           the realm's own username and password form (no provider hint): how platform administrators such as sysadmin sign in${settings.policy.showIdpLogin ? ' (also the direct-login entry on /auth/login)' : ''}`,
    ...tenants.map(([tenant, alias]) => `    ${`${u}/${tenant}`.padEnd(u.length + 22)}${tenantLink(alias, catalog)}`),
    ...(parts.real
      ? [
          "    Acme's link goes through Keycloak to the realm acme-idp (sign in as dana / dana-pass); signing out",
          '    ends that session too (the link then asks for the password again). The other brokered providers',
          '    point at outside services that do not exist here.',
        ]
      : [
          '    The brokered providers (Entra, Okta, ...) do not exist here: the OpenID provider shows its own',
          '    login form, naming the provider hint it received. Sign in there with a demo login.',
        ]),
    parts.upstream.real
      ? `    ${u}/                     the real chat front-end, signed in by trusted headers; its own menu signs out${parts.upstream.model ? '; send a message for a canned answer' : ''}`
      : `    ${u}/                     the chat front-end (stand-in): who you are, links, and its own Sign out`,
    settings.policy.bypassAdminAccessControl
      ? `    ${u}/api/v1/files/        as sysadmin: everyone's files (CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true)`
      : `    ${u}/api/v1/files/        as sysadmin: only sysadmin's own files (the gateway filters the list)`,
    settings.policy.enableAdminExport
      ? `    ${u}/api/v1/chats/all/db  the full chat export: open to admins (CHATUI_ENABLE_ADMIN_EXPORT=true)`
      : `    ${u}/api/v1/chats/all/db  the full chat export: 401 for everyone while the export is off`,
    `    ${u}/auth/session         who you are;  ${u}/auth/logout  sign out`,
    `    ${u}/readyz  ${u}/metrics  operations`,
  ];
}

/** The live switches: their values at start, and how to flip them. */
function policyLines(settings: Settings, parts: BannerParts): string[] {
  const on = (v: boolean) => (v ? 'true' : 'false');
  const cmd = parts.command;
  const admin = demoAccounts.find(isPlatformSysAdmin);
  const adminFiles = admin ? (parts.holdings.get(admin.username)?.files ?? []) : [];
  return [
    `  Policy switches at start: CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=${on(settings.policy.bypassAdminAccessControl)}  CHATUI_ENABLE_ADMIN_EXPORT=${on(settings.policy.enableAdminExport)}`,
    `  Flip them while it runs: edit ${parts.policy.file} and save (no restart)${parts.policy.standInFollows ? '; the stand-in takes them too' : ''}:`,
    `    CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "true"   admins see everyone's files`,
    `    CHATUI_ENABLE_ADMIN_EXPORT: "true"           admins may download the full chat export`,
    `    IDP_LOGIN_WELCOME_PAGE: "true"               the welcome page instead of the provider buttons`,
    ...(parts.policy.standInFollows
      ? []
      : ["    (Open WebUI keeps the switches it started with: one turned on here takes effect only if Open WebUI's was on)"]),
    parts.policy.heldByEnvironment.length
      ? `    Held by the environment, which wins over the file: ${parts.policy.heldByEnvironment.join(', ')}`
      : `    Or at start: CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true ${cmd} (the environment then holds it, not the file)`,
    ...(admin && adminFiles.length ? [`  Files seeded for ${admin.username}: ${adminFiles.join(', ')}.`] : []),
  ];
}
