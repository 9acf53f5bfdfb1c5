// The world a soak runs in (bench/soak.ts): the Open WebUI stand-in seeded with files, the realm
// (the real oidc-provider) and the gateway under test, in this process or alone in a child process
// as in production, measured through its own /metrics after a full GC.
import v8 from 'node:v8';
import vm from 'node:vm';
import { Writable } from 'node:stream';
import { closeSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import { loadSettings } from '../config/settings.js';
import { createGateway, type Gateway } from '../gateway/app.js';
import { createObservability } from '../gateway/observability/observability.js';
import { startIdp, type TestIdp } from '../sandbox/idp.js';
import { startOpenWebUI, type OpenWebUIStandIn, type StandInFile, type StandInUser } from '../sandbox/open-webui/stand-in.js';
import { demoIdentityProviders } from '../sandbox/demo-realm.js';
import { freePort, sleep } from './proc.js';

export const CLIENT_ID = 'chat-gateway';
const CLIENT_SECRET = 'soak-client-secret';
const SESSION_SECRET = 'soak-session-secret-0123456789abcdef-0123456789';

/** A real GC between measurements, without --expose-gc on the command line. */
function collectGarbage(): void {
  v8.setFlagsFromString('--expose_gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  gc();
}

function handleCounts(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}
const totalHandles = () => process.getActiveResourcesInfo().length;

/** The demo accounts as Open WebUI users (same emails, so trusted-header sign-in finds them). */
export const USERS: StandInUser[] = [
  { id: 'u-sysadmin', email: 'sysadmin@platform.example', name: 'Sam Sysadmin', role: 'admin', groups: [] },
  { id: 'u-superuser', email: 'superuser@platform.example', name: 'Sue Superuser', role: 'admin', groups: [] },
  { id: 'u-alice', email: 'alice@acme.example', name: 'Alice Acme', role: 'user', groups: [] },
  { id: 'u-bob', email: 'bob@globex.example', name: 'Bob Globex', role: 'user', groups: [] },
];
export const LOGIN_USERS = ['sysadmin', 'alice', 'bob', 'superuser'];

function seedFiles(): StandInFile[] {
  const now = Math.floor(Date.now() / 1000);
  const files: StandInFile[] = [];
  for (const u of USERS) {
    for (let i = 0; i < 20; i++) {
      const id = `${u.id}-f${i}`;
      files.push({
        id,
        user_id: u.id,
        hash: null,
        filename: `${id}.txt`,
        data: { content: `text of ${id}` },
        meta: { name: `${id}.txt`, content_type: 'text/plain', size: 12 },
        created_at: now - i,
        updated_at: now - i,
      });
    }
  }
  return files;
}

/** The gateway under test, wherever it runs. */
export interface GatewayUnderTest {
  url: string;
  /** where its log lines go (a child process only) */
  logFile?: string;
  /** heap after a full GC, rss and open handles of the gateway's process */
  measure(): Promise<{ heap: number; rss: number; handles: number; detail: Record<string, number> }>;
  /** its idle keep-alive sockets toward Open WebUI: what IDLE_TIMEOUT_MS does later, done now */
  dropIdleUpstreamSockets(): Promise<void>;
  /** client connections it holds (inline only: a child's show in its handle count) */
  connections(): Promise<number | undefined>;
  /** rss and heap now, without a GC (progress lines) */
  sample(): Promise<{ rss: number; heap: number }>;
  close(): Promise<void>;
}

export interface World {
  idp: TestIdp;
  upstream: OpenWebUIStandIn;
  gateway: GatewayUnderTest;
  url: string;
  close(): Promise<void>;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Preloaded into the child: a full GC on SIGUSR2, so its /metrics can be read after one. */
const GC_ON_SIGNAL =
  "data:text/javascript,import v8 from 'node:v8';import vm from 'node:vm';v8.setFlagsFromString('--expose_gc');const gc=vm.runInNewContext('gc');process.on('SIGUSR2',()=>{gc();gc();});";

export async function startSoakWorld(mode: 'inline' | 'process'): Promise<World> {
  // Open WebUI set as the platform expects (BYPASS_ADMIN_ACCESS_CONTROL=false): a drifted upstream
  // makes every admin list a walk over all pages, which is tested elsewhere, not soaked.
  const upstream = await startOpenWebUI({ users: USERS, files: seedFiles(), bypassAdminAccessControl: false, enableAdminExport: true });
  // What started is closed when a later step fails: a run that cannot start must still end.
  const started: { close(): Promise<void> }[] = [upstream];
  try {
    return await startGatewayAndRealm(mode, upstream, started);
  } catch (err) {
    for (const part of started.reverse()) await part.close().catch(() => undefined);
    throw err;
  }
}

async function startGatewayAndRealm(mode: 'inline' | 'process', upstream: OpenWebUIStandIn, started: { close(): Promise<void> }[]): Promise<World> {
  // the gateway's port must be known to the realm (redirect URI) before it listens
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const idp = await startIdp({
    clients: [
      { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${url}/auth/callback`], post_logout_redirect_uris: [`${url}/auth/login`] },
    ],
    accessTokenTtl: 3600,
  });
  started.push(idp);
  const providersFile = join(mkdtempSync(join(tmpdir(), 'soak-')), 'providers.json');
  writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: String(port),
    UPSTREAM_URL: upstream.url,
    PUBLIC_URL: url,
    OIDC_ISSUER_URL: idp.issuer,
    OIDC_CLIENT_ID: CLIENT_ID,
    OIDC_CLIENT_SECRET: CLIENT_SECRET,
    SESSION_SECRET,
    CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
    CHATUI_ENABLE_ADMIN_EXPORT: 'false',
    IDP_PROVIDERS_FILE: providersFile,
    IDP_TENANT_IDP_ALIASES: 'acme=acme-entra,globex=globex-okta',
    ALLOW_UPSTREAM_API_KEYS: 'true',
    DRIFT_CHECK_SECONDS: '0',
    LOG_LEVEL: 'warn',
  };
  const gateway = mode === 'process' ? await childGateway(env, url) : await inlineGateway(env, port, url);
  return {
    idp,
    upstream,
    gateway,
    url,
    async close() {
      await gateway.close();
      await upstream.close();
      await idp.close();
    },
  };
}

async function inlineGateway(env: Record<string, string>, port: number, url: string): Promise<GatewayUnderTest> {
  const settings = loadSettings(env, { stageFiles: false });
  // Logs are dropped: a soak must not measure its own log buffer.
  const destination = new Writable({ write: (_chunk, _enc, done) => done() });
  const obs = createObservability({ level: 'warn', destination });
  const gateway: Gateway = await createGateway(settings, { obs });
  try {
    await gateway.listen(port, '127.0.0.1');
  } catch (err) {
    await gateway.close();
    throw err;
  }
  return {
    url,
    async measure() {
      await sleep(50);
      collectGarbage();
      return { heap: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss, handles: totalHandles(), detail: handleCounts() };
    },
    async dropIdleUpstreamSockets() {
      for (const list of Object.values(gateway.upstream.agent.freeSockets)) for (const socket of list ?? []) socket.destroy();
      await sleep(200);
    },
    connections: () => new Promise((r) => gateway.server.getConnections((_e, n) => r(n))),
    sample: async () => ({ rss: process.memoryUsage().rss, heap: process.memoryUsage().heapUsed }),
    async close() {
      await gateway.close();
    },
  };
}

/** The child's UPSTREAM_TIMEOUT_MS (generous: Open WebUI's stand-in shares the soak's busy process) and IDLE_TIMEOUT_MS. */
const CHILD_UPSTREAM_TIMEOUT_MS = 15_000;
const CHILD_IDLE_MS = CHILD_UPSTREAM_TIMEOUT_MS + 1_000;

/** The gateway/main.ts child, with its log in a file; resolves once /healthz answers (30 s at most). */
async function spawnGateway(env: Record<string, string>, url: string) {
  // its log (warnings and errors only) goes to a file, named in the report
  const logFile = join(mkdtempSync(join(tmpdir(), 'soak-gateway-')), 'gateway.log');
  const logFd = openSync(logFile, 'w');
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', '--import', GC_ON_SIGNAL, 'gateway/main.ts'], {
    cwd: ROOT,
    // idle keep-alive sockets toward Open WebUI expire soon, so that "nothing left" can be seen
    env: { ...process.env, ...env, UPSTREAM_TIMEOUT_MS: String(CHILD_UPSTREAM_TIMEOUT_MS), IDLE_TIMEOUT_MS: String(CHILD_IDLE_MS) },
    stdio: ['ignore', logFd, 'pipe'],
  });
  closeSync(logFd);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const until = Date.now() + 30_000;
  for (;;) {
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null || Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`the gateway did not start: ${stderr}`);
    }
    await sleep(200);
  }
  return { child, logFile, exited };
}

/** The gateway's heap, resident set and open handles (by type), from its own /metrics. */
async function childMetrics(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m =
      /^(gateway_(?:nodejs_heap_size_used_bytes|process_resident_memory_bytes|nodejs_active_handles_total|nodejs_active_handles)(?:\{type="([^"]+)"\})?) ([0-9.e+]+)$/.exec(
        line,
      );
    if (m) out[m[2] ? `handles:${m[2]}` : m[1]!.replace('gateway_', '')] = Number(m[3]);
  }
  return out;
}

async function childGateway(env: Record<string, string>, url: string): Promise<GatewayUnderTest> {
  const { child, logFile, exited } = await spawnGateway(env, url);
  return {
    url,
    logFile,
    async measure() {
      child.kill('SIGUSR2');
      await sleep(300);
      const m = await childMetrics(url);
      const detail = Object.fromEntries(
        Object.entries(m)
          .filter(([k]) => k.startsWith('handles:'))
          .map(([k, v]) => [k.slice(8), v]),
      );
      return { heap: m.nodejs_heap_size_used_bytes ?? NaN, rss: m.process_resident_memory_bytes ?? NaN, handles: m.nodejs_active_handles_total ?? NaN, detail };
    },
    async dropIdleUpstreamSockets() {
      await sleep(CHILD_IDLE_MS + 1_000);
    },
    connections: async () => undefined,
    async sample() {
      const m = await childMetrics(url).catch(() => ({}) as Record<string, number>);
      return { rss: m.process_resident_memory_bytes ?? NaN, heap: m.nodejs_heap_size_used_bytes ?? NaN };
    },
    async close() {
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(15_000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
