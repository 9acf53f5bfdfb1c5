// The real Keycloak, for `npm run test:keycloak` and `npm run sandbox:keycloak`, importing the realm
// file docker-compose imports (docs/development.md, "Keycloak 26.7.2"). It runs in its own process
// group, killed by stop(), and a watchdog kills it when Node goes away without stop() (a test run
// killed), so that no server is left behind.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, copyFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { freePorts } from './ports.js';

export const REPO = resolve(import.meta.dirname, '..');
export const PLATFORM_REALM_FILE = join(REPO, 'deploy/keycloak/realm-platform.json');
/** A second realm in the same server playing Acme's own identity provider (brokered as acme-entra). */
export const ACME_IDP_REALM_FILE = join(REPO, 'sandbox/realm-acme-idp.json');

export const KC_ADMIN = { username: 'kc-test-admin', password: 'kc-test-admin-pass' };

export interface RunningKeycloak {
  /** http://127.0.0.1:PORT, also the pinned hostname (the `iss` of every token) */
  url: string;
  managementPort: number;
  /** its process group (kc.sh leads it): `process.kill(-pid, signal)` reaches every process of it */
  pid: number;
  /** milliseconds from spawn to the last realm answering discovery */
  startMs: number;
  issuer(realm: string): string;
  /** A call of the Admin REST API as the bootstrap administrator (master realm). */
  admin<T = unknown>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T; location: string | null }>;
  output(): string;
  stop(): Promise<void>;
}

/** The built server's folder (installs it first when missing: minutes). */
export function keycloakHome(): string {
  return execFileSync('bash', [join(REPO, 'scripts/keycloak.sh'), 'home'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** Java for Keycloak: JAVA_HOME when set, else the Temurin 25 JDK when present (supported from 26.6), else `java`. */
function javaHome(): string | undefined {
  if (process.env.JAVA_HOME) return process.env.JAVA_HOME;
  const jvm = '/usr/lib/jvm';
  const temurin = existsSync(jvm) ? readdirSync(jvm).find((d) => /^temurin-25/.test(d)) : undefined;
  return temurin ? join(jvm, temurin) : undefined;
}

/**
 * A home of its own: bin/kc.sh copied (it derives kc.home.dir from its own path), the built lib/,
 * conf/, themes/, providers/ linked, and an empty data/ (a fresh database, this run's imports).
 */
function runHome(home: string, realms: string[]): string {
  const run = mkdtempSync(join(tmpdir(), 'keycloak-'));
  mkdirSync(join(run, 'bin'));
  for (const f of readdirSync(join(home, 'bin'))) if (f.endsWith('.sh')) copyFileSync(join(home, 'bin', f), join(run, 'bin', f));
  chmodSync(join(run, 'bin/kc.sh'), 0o755);
  for (const d of ['lib', 'conf', 'themes', 'providers']) symlinkSync(join(home, d), join(run, d));
  mkdirSync(join(run, 'data/import'), { recursive: true });
  for (const f of [PLATFORM_REALM_FILE, ...realms]) copyFileSync(f, join(run, 'data/import', basename(f)));
  return run;
}

/** Waits until the realm answers discovery: undefined, or why it never will (Keycloak exited, the deadline passed). */
async function untilRealmServed(child: ChildProcess, url: string, realm: string, deadline: number): Promise<string | undefined> {
  for (;;) {
    if (child.exitCode !== null) return `Keycloak exited with ${child.exitCode}`;
    const ok = await fetch(`${url}/realms/${realm}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return undefined;
    if (Date.now() > deadline) return `Keycloak did not serve realm ${realm} in time`;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The Admin REST API as the bootstrap admin (its token reused until shortly before it expires). */
function adminApi(url: string): RunningKeycloak['admin'] {
  let token: { value: string; until: number } | undefined;
  async function adminToken(): Promise<string> {
    if (token && Date.now() < token.until) return token.value;
    const res = await fetch(`${url}/realms/master/protocol/openid-connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', ...KC_ADMIN }).toString(),
    });
    const body = (await res.json()) as { access_token: string; expires_in: number };
    if (res.status !== 200) throw new Error(`admin token: ${res.status} ${JSON.stringify(body)}`);
    token = { value: body.access_token, until: Date.now() + (body.expires_in - 10) * 1000 };
    return token.value;
  }

  return async function admin<T>(method: string, path: string, body?: unknown) {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${await adminToken()}`,
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON
    }
    if (res.status >= 400) throw new Error(`Keycloak admin ${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
    return { status: res.status, body: parsed as T, location: res.headers.get('location') };
  };
}

/** kc.sh in its own process group, on loopback, importing the realms of its home. */
function spawnKeycloak(run: string, at: { url: string; port: number; managementPort: number }, env: Record<string, string> | undefined): ChildProcess {
  const { url, port, managementPort } = at;
  const java = javaHome();
  return spawn(
    join(run, 'bin/kc.sh'),
    [
      'start',
      '--optimized',
      '--http-enabled=true',
      '--http-host=127.0.0.1',
      `--http-port=${port}`,
      `--http-management-port=${managementPort}`,
      `--hostname=${url}`,
      '--cache=local',
      '--import-realm',
      '--log-level=warn',
    ],
    {
      cwd: run,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...(java ? { JAVA_HOME: java } : {}),
        JAVA_OPTS_KC_HEAP: '-Xms128m -Xmx768m',
        KC_BOOTSTRAP_ADMIN_USERNAME: KC_ADMIN.username,
        KC_BOOTSTRAP_ADMIN_PASSWORD: KC_ADMIN.password,
        KC_SERVER_URL: url,
        ...env,
      },
    },
  );
}

/**
 * The server `scripts/keycloak.sh install` built, started on 127.0.0.1 on free ports with its own data
 * folder, importing deploy/keycloak/realm-platform.json and the `realms` given (sandbox/realm-acme-idp.json:
 * Acme's own identity provider).
 *
 *   const kc = await startKeycloak({ realms: [ACME_IDP_REALM_FILE], env: {...} });
 *   kc.issuer('platform'); await kc.admin('GET', '/admin/realms/platform/users'); await kc.stop();
 */
export async function startKeycloak(o: { realms?: string[]; env?: Record<string, string>; readyTimeoutMs?: number } = {}): Promise<RunningKeycloak> {
  const home = keycloakHome();
  const run = runHome(home, o.realms ?? []);

  const [port, managementPort] = (await freePorts(2)) as [number, number];
  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  let output = '';
  const child = spawnKeycloak(run, { url, port, managementPort }, o.env);
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
  const killGroup = () => {
    try {
      if (child.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  process.once('exit', killGroup);
  // If this Node process dies without stop(), the watchdog takes the server down with it.
  const watchdog = spawn(
    'sh',
    ['-c', `while kill -0 ${process.pid} 2>/dev/null && kill -0 -${child.pid} 2>/dev/null; do sleep 1; done; kill -KILL -${child.pid} 2>/dev/null`],
    { detached: true, stdio: 'ignore' },
  );
  watchdog.unref();

  const stop = async () => {
    process.removeListener('exit', killGroup);
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      killGroup();
      await exited;
    }
    try {
      if (watchdog.pid && watchdog.exitCode === null) process.kill(watchdog.pid, 'SIGKILL');
    } catch {
      // gone
    }
    rmSync(run, { recursive: true, force: true });
  };

  // Ready when every imported realm answers discovery (health says UP before the import is done).
  const realms = ['platform', ...(o.realms ?? []).map((f) => (JSON.parse(readFileSync(f, 'utf8')) as { realm: string }).realm)];
  const deadline = started + (o.readyTimeoutMs ?? 240_000);
  for (const realm of realms) {
    const problem = await untilRealmServed(child, url, realm, deadline);
    if (problem) {
      await stop();
      throw new Error(`${problem}:\n${output.slice(-4000)}`);
    }
  }
  const startMs = Date.now() - started;

  const admin = adminApi(url);

  return {
    url,
    managementPort,
    pid: child.pid!,
    startMs,
    issuer: (realm) => `${url}/realms/${realm}`,
    admin,
    output: () => output,
    stop,
  };
}

/**
 * What an operator sets in the platform realm for one gateway deployment (Admin REST API), here
 * for gateways on loopback ports: the gateway client's callback, sign-out and back-channel logout
 * addresses (the realm file names the compose ones, http://localhost:8080 and http://gateway:8080),
 * and acme-entra brokering to the acme-idp realm of this server (the file's points at Microsoft).
 * Signing out of the platform realm also ends the session at acme-idp (`logoutUrl` with
 * `backchannelSupported`: Keycloak calls the provider's end-session endpoint itself, with the ID
 * token it was given): without it the provider's session survives the sign-out, and the next
 * tenant link signs the same person straight back in, no password asked.
 */
export async function pointRealmAt(
  kc: RunningKeycloak,
  o: {
    gatewayUrls: string[];
    backchannelUrl: string;
    realm?: string;
    clientId?: string;
    /** false: leave the provider's session alone at sign-out */ tenantLogout?: boolean;
  },
): Promise<void> {
  const realm = o.realm ?? 'platform';
  const clients = await kc.admin<Array<{ id: string; attributes: Record<string, string> }>>(
    'GET',
    `/admin/realms/${realm}/clients?clientId=${o.clientId ?? 'chat-gateway'}`,
  );
  const client = clients.body[0]!;
  await kc.admin('PUT', `/admin/realms/${realm}/clients/${client.id}`, {
    ...client,
    redirectUris: o.gatewayUrls.map((u) => `${u}/auth/callback`),
    webOrigins: o.gatewayUrls,
    attributes: {
      ...client.attributes,
      'post.logout.redirect.uris': o.gatewayUrls.map((u) => `${u}/*`).join('##'),
      'backchannel.logout.url': o.backchannelUrl,
    },
  });
  const acme = (await kc.admin<{ config: Record<string, string> }>('GET', `/admin/realms/${realm}/identity-provider/instances/acme-entra`)).body;
  const tenantIdp = kc.issuer('acme-idp');
  await kc.admin('PUT', `/admin/realms/${realm}/identity-provider/instances/acme-entra`, {
    ...acme,
    config: {
      ...acme.config,
      issuer: tenantIdp,
      authorizationUrl: `${tenantIdp}/protocol/openid-connect/auth`,
      tokenUrl: `${tenantIdp}/protocol/openid-connect/token`,
      userInfoUrl: `${tenantIdp}/protocol/openid-connect/userinfo`,
      jwksUrl: `${tenantIdp}/protocol/openid-connect/certs`,
      ...(o.tenantLogout === false
        ? { backchannelSupported: 'false', logoutUrl: '' }
        : { logoutUrl: `${tenantIdp}/protocol/openid-connect/logout`, backchannelSupported: 'true' }),
    },
  });
}
