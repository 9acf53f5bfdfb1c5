// What stands in front of the bench upstream (bare, node-http, nginx, the gateway, oauth2-proxy),
// each as its own process so that its CPU and memory are its own (bench/README.md, "How it measures").
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, logPath, spawnChild, type Child } from './proc.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const node = process.execPath;

/**
 * How the node peers are run. Compiled (the default): bench/tsconfig.json is compiled with tsc
 * into a fresh folder under .tmp/ (inside the repository, so node_modules resolves) and run with
 * plain node, as the image runs dist/gateway/main.js: no tsx loader in the CPU or memory figures.
 * BENCH_TSX=1 runs the sources through tsx instead (no build; memory figures then include tsx).
 */
export interface Runner {
  /** node arguments that run a source file, e.g. `bench/upstream.ts` */
  args(source: string): string[];
  kind: 'compiled' | 'tsx';
  /** tsc's complaints, when it emitted anyway */
  warnings?: string;
  /** the build folder (removed at the end of the run) */
  dir?: string;
  /** its node peers count their mark-compacts (bench/gc-count.ts; a baseline older than that does not) */
  countsGc: boolean;
}

export async function prepareRunner(): Promise<Runner> {
  if (process.env.BENCH_TSX === '1') {
    return { kind: 'tsx', countsGc: true, args: (source) => ['--import', 'tsx', '--no-warnings=ExperimentalWarning', join(root, source)] };
  }
  mkdirSync(join(root, '.tmp'), { recursive: true });
  const out = mkdtempSync(join(root, '.tmp', 'bench-build-'));
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const p = spawn(node, [tsc, '-p', join(root, 'bench/tsconfig.json'), '--outDir', out], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c));
    p.stderr.on('data', (c: Buffer) => (stderr += c));
    p.once('exit', (status) => resolve({ status, stdout, stderr }));
  });
  if (!existsSync(join(out, 'gateway/main.js')) || !existsSync(join(out, 'bench/gateway-process.js'))) {
    throw new Error(`tsc did not build the gateway for the bench:\n${r.stdout}${r.stderr}`);
  }
  writeFileSync(join(out, 'package.json'), '{"type":"module"}\n');
  return {
    kind: 'compiled',
    countsGc: true,
    args: (source) => [join(out, source.replace(/\.ts$/, '.js'))],
    ...(r.status !== 0 ? { warnings: `${r.stdout}${r.stderr}`.trim() } : {}),
    dir: out,
  };
}

/**
 * `--baseline=REV`: the gateway as it was at a git revision, built the same way (that revision's
 * own bench/tsconfig.json), so one run measures before and after side by side. Its sources are
 * exported with `git archive` into a folder under .tmp/ (node_modules resolves from the
 * repository: the baseline runs on today's dependencies).
 */
export async function prepareBaseline(rev: string): Promise<Runner & { rev: string }> {
  const short = execFileSync('git', ['rev-parse', '--short', `${rev}^{commit}`], { cwd: root, encoding: 'utf8' }).trim();
  mkdirSync(join(root, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(root, '.tmp', `bench-baseline-${short}-`));
  execFileSync('sh', ['-c', `git archive --format=tar ${short} | tar -x -C "${dir}"`], { cwd: root });
  const out = join(dir, 'out');
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const r = spawnSync(node, [tsc, '-p', join(dir, 'bench/tsconfig.json'), '--outDir', out], { encoding: 'utf8' });
  if (!existsSync(join(out, 'bench/gateway-process.js'))) throw new Error(`tsc did not build the baseline ${short}:\n${r.stdout}${r.stderr}`);
  writeFileSync(join(out, 'package.json'), '{"type":"module"}\n');
  // config/settings.ts reads the per-stage env files beside itself
  for (const f of ['dev.env', 'prod.env']) if (existsSync(join(dir, 'config', f))) copyFileSync(join(dir, 'config', f), join(out, 'config', f));
  return {
    kind: 'compiled',
    rev: short,
    countsGc: existsSync(join(out, 'bench/gc-count.js')),
    args: (source) => [join(out, source.replace(/\.ts$/, '.js'))],
    dir,
    ...(r.status !== 0 ? { warnings: `${r.stdout}${r.stderr}`.trim() } : {}),
  };
}

export interface Peer {
  name: string;
  /** http://127.0.0.1:PORT */
  url: string;
  child: Child;
  /** a node peer of this build that counts its mark-compacts (bench/gc-count.ts) */
  countsGc: boolean;
  pids(): number[];
  stop(): Promise<void>;
}

const portLine = (line: string) => {
  const m = /^\{"port":(\d+)\}$/.exec(line.trim());
  return m ? Number(m[1]) : undefined;
};

function peer(name: string, port: number, child: Child, countsGc: boolean): Peer {
  return { name, url: `http://127.0.0.1:${port}`, child, countsGc, pids: () => child.pids(), stop: () => child.stop() };
}

export async function startUpstream(logDir: string, run: Runner): Promise<Peer> {
  const { child, info } = await spawnChild('upstream', node, run.args('bench/upstream.ts'), {
    env: { ...process.env, BENCH_UPSTREAM_CHILD: '1' },
    ready: portLine,
    logFile: logPath(logDir, 'upstream'),
  });
  return peer('upstream', info, child, run.countsGc);
}

/** The bare floor; with `features` (bench/bare-proxy.ts), the floor plus the cheapest form of those. */
export async function startBare(logDir: string, run: Runner, target: string, features = '', logName?: string): Promise<Peer> {
  const flags = (process.env.BENCH_BARE_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const name = features ? `bare + ${features}` : 'bare http-proxy-3';
  const log = logName ?? (features ? 'bare-features' : 'bare');
  const { child, info } = await spawnChild(log, node, [...flags, ...run.args('bench/bare-proxy.ts')], {
    env: { ...process.env, BENCH_BARE_CHILD: '1', BENCH_TARGET: target, BENCH_BARE_FEATURES_OF_CHILD: features },
    ready: portLine,
    logFile: logPath(logDir, log),
  });
  return peer(name, info, child, run.countsGc);
}

/** http-proxy-3's own cost: the same proxy written on node:http alone (bench/bare-proxy.ts). */
export async function startNodeHttpProxy(logDir: string, run: Runner, target: string): Promise<Peer> {
  const { child, info } = await spawnChild('node-http', node, run.args('bench/bare-proxy.ts'), {
    env: { ...process.env, BENCH_BARE_CHILD: '1', BENCH_BARE_KIND: 'node-http', BENCH_TARGET: target },
    ready: portLine,
    logFile: logPath(logDir, 'node-http'),
  });
  return peer('node:http proxy', info, child, run.countsGc);
}

export function nginxPath(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v nginx || ls /usr/sbin/nginx'], { encoding: 'utf8' }).trim().split('\n')[0] || undefined;
  } catch {
    return undefined;
  }
}

export function nginxVersion(bin: string): string {
  const r = spawnSync(bin, ['-v'], { encoding: 'utf8' });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().replace(/^nginx version: /, '');
}

export interface NginxOptions {
  workers: number;
  upstreamPort: number;
  /** served as a static file at /api/v1/auth-providers/ (the cached-answer comparison) */
  staticAuthProviders: string;
  /** its folder and log under the run's folder (default nginx-<workers>w): a second nginx needs its own */
  tag?: string;
}

/**
 * The part of an nginx peer's configuration every peer shares: the process, the event loop, the
 * http defaults and the `chat` upstream; `http {` is left open for the peer's own blocks.
 */
export function nginxPreamble(dir: string, o: { generatedBy: string; workers: number; upstreamPort: number }): string {
  return `# generated by ${o.generatedBy}
worker_processes ${o.workers};
worker_rlimit_nofile 20000;
daemon off;
master_process on;
error_log stderr notice;
pid ${dir}/nginx.pid;

events {
  worker_connections 16384;
}

http {
  access_log off;
  default_type application/octet-stream;
  sendfile on;
  tcp_nodelay on;
  keepalive_timeout 65s;
  keepalive_requests 1000000;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;

  upstream chat {
    server 127.0.0.1:${o.upstreamPort};
    keepalive 64;
  }

  # "" keeps the upstream connection alive; a WebSocket handshake asks for the upgrade
  map $http_upgrade $connection_upgrade {
    default upgrade;
    ''      '';
  }
`;
}

export function nginxConfig(dir: string, port: number, o: NginxOptions): string {
  return `${nginxPreamble(dir, { generatedBy: 'bench/peers.ts', workers: o.workers, upstreamPort: o.upstreamPort })}

  server {
    listen 127.0.0.1:${port};
    client_max_body_size 0;

    location / {
      proxy_pass http://chat;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      # streaming both ways: server-sent events and large bodies are not held back
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 300s;
      proxy_send_timeout 300s;
    }

    location = /api/v1/auth-providers/ {
      root ${dir}/static;
      default_type application/json;
      try_files /auth-providers.json =404;
    }
  }
}
`;
}

export async function startNginx(logDir: string, bin: string, o: NginxOptions): Promise<Peer> {
  const tag = o.tag ?? `nginx-${o.workers}w`;
  const dir = join(logDir, tag);
  for (const d of ['', 'static', 'client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) {
    mkdirSync(join(dir, d), { recursive: true });
    chmodSync(join(dir, d), 0o755); // workers run as nobody when the bench runs as root
  }
  writeFileSync(join(dir, 'static/auth-providers.json'), o.staticAuthProviders, { mode: 0o644 });
  const port = await freePort();
  writeFileSync(join(dir, 'nginx.conf'), nginxConfig(dir, port, o));
  let started = 0;
  const { child } = await spawnChild(tag, bin, ['-e', 'stderr', '-p', dir, '-c', join(dir, 'nginx.conf')], {
    ready: (line) => (/start worker process/.test(line) && ++started >= o.workers ? true : undefined),
    logFile: logPath(logDir, tag),
  });
  return peer(o.workers === 1 ? 'nginx' : `nginx x${o.workers}`, port, child, false);
}

export interface GatewayOptions {
  workers: number;
  port: number;
  upstreamUrl: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** the peer's name in the table (default `gateway`, or `gateway xN`) */
  name?: string;
  /** extra node flags, e.g. --cpu-prof --cpu-prof-dir=DIR (BENCH_GATEWAY_NODE_FLAGS) */
  nodeFlags?: string[];
  env?: Record<string, string>;
  /** its log file's name (default: the peer's name): a second gateway of the same name needs its own */
  logName?: string;
}

/** The node flags `npm start` runs the gateway with (package.json; the Dockerfile's CMD has the same). */
export function gatewayNodeFlags(): string[] {
  const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  return [...start.matchAll(/\s(--(?!import\b)[a-z0-9-]+(?:=\S+)?)/g)].map((m) => m[1]!);
}

/**
 * The environment the image gives the gateway (the final stage's `ENV` lines of the Dockerfile,
 * e.g. MALLOC_ARENA_MAX): the bench runs it as deployed.
 */
export function gatewayImageEnv(): Record<string, string> {
  const lines = readFileSync(join(root, 'Dockerfile'), 'utf8').split('\n');
  const finalStage = lines.slice(lines.map((l) => /^FROM\s/i.test(l)).lastIndexOf(true));
  return Object.fromEntries(
    finalStage
      .filter((l) => /^ENV\s+[A-Za-z_][A-Za-z0-9_]*=\S*\s*$/.test(l))
      .map((l) => l.replace(/^ENV\s+/i, '').trim())
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

export async function startGateway(logDir: string, run: Runner, o: GatewayOptions): Promise<Peer> {
  const port = o.port;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    UPSTREAM_URL: o.upstreamUrl,
    OIDC_ISSUER_URL: o.issuer,
    OIDC_CLIENT_ID: o.clientId,
    OIDC_CLIENT_SECRET: o.clientSecret,
    SESSION_SECRET: 'bench-session-secret-0123456789abcdef0123456789',
    CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
    CHATUI_ENABLE_ADMIN_EXPORT: 'false',
    ALLOW_UPSTREAM_API_KEYS: 'true',
    LOG_LEVEL: 'info',
    GATEWAY_WORKERS: String(o.workers),
    SHUTDOWN_GRACE_MS: '500',
    DRIFT_CHECK_SECONDS: '0',
    ...gatewayImageEnv(),
    ...(process.env.BENCH_GC_DIR ? { BENCH_GC_DIR: process.env.BENCH_GC_DIR } : {}),
    ...(process.env.BENCH_MEMORY_DIR ? { BENCH_MEMORY_DIR: process.env.BENCH_MEMORY_DIR } : {}),
    ...(process.env.BENCH_ALLOC_PROFILE_DIR
      ? { BENCH_ALLOC_PROFILE_DIR: process.env.BENCH_ALLOC_PROFILE_DIR, BENCH_ALLOC_PROFILE_SURVIVORS: process.env.BENCH_ALLOC_PROFILE_SURVIVORS ?? '' }
      : {}),
    ...o.env,
  };
  let listening = 0;
  const name = o.name ?? (o.workers === 1 ? 'gateway' : `gateway x${o.workers}`);
  const { child } = await spawnChild(name, node, [...gatewayNodeFlags(), ...(o.nodeFlags ?? []), ...run.args('bench/gateway-process.ts')], {
    env,
    ready: (line) => (line.includes('"gateway listening"') && ++listening >= o.workers ? true : undefined),
    timeoutMs: 30_000,
    logFile: logPath(logDir, o.logName ?? name),
  });
  return peer(name, port, child, run.countsGc);
}
