// What the check of a signed-in request costs with Redis: the gateway at a baseline revision and
// today's, each its own process (gateway/main.ts through tsx) with REDIS_URL to one redis-server,
// in front of the same Open WebUI stand-in, each with a session signed in at the sandbox's OpenID
// provider, measured in interleaved rounds with autocannon on a signed-in API route. Today's check
// reads the clock to see whether the mirror's lease runs (gateway/state/redis-sync.ts); what the
// rest of the request costs is the same in both. One server is enough: the check made on every
// request is the same map lookup and clock read on Sentinel and Cluster. Usage:
//   node --import tsx bench/session-check.ts [--baseline=REV] [--rounds=5] [--seconds=8] [--connections=16]
import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { startOpenWebUI } from '../sandbox/open-webui.js';
import { startIdp } from '../sandbox/idp.js';
import { demoIdentityProviders } from '../sandbox/demo-realm.js';
import { freePort } from './proc.js';
import { gatewaySessionCookie } from './sign-in.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    baseline: { type: 'string', default: 'main' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '16' },
  },
});
const rounds = Number(opts.rounds);
const seconds = Number(opts.seconds);
const connections = Number(opts.connections);
const rev = execSync(`git rev-parse --short ${opts.baseline}`, { cwd: root, encoding: 'utf8' }).trim();
const base = join(root, '.tmp', `session-check-${rev}`);
if (!existsSync(base)) {
  mkdirSync(base, { recursive: true });
  execSync(`git archive ${rev} | tar -x -C ${base}`, { cwd: root });
  symlinkSync(join(root, 'node_modules'), join(base, 'node_modules'));
}

const children: ChildProcess[] = [];
const stopAll = () => {
  for (const c of children) c.kill('SIGKILL');
};
process.on('exit', stopAll);

/** One redis-server, no persistence, on a free loopback port. */
async function redisServer(): Promise<string> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  children.push(child);
  const listening = () =>
    new Promise<boolean>((done) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        done(true);
      });
      s.on('error', () => done(false));
    });
  for (let i = 0; i < 100 && !(await listening()); i++) await new Promise((r) => setTimeout(r, 50));
  return `redis://127.0.0.1:${port}/0`;
}

const redisUrl = await redisServer();
const upstream = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: false, groups: ['acme', 'globex', 'initech'] });
const ports = [await freePort(), await freePort()];
const urls = ports.map((p) => `http://127.0.0.1:${p}`);
const CLIENT = { client_id: 'bench-gateway', client_secret: 'bench-gateway-secret' };
const idp = await startIdp({
  clients: [{ ...CLIENT, redirect_uris: urls.map((u) => `${u}/auth/callback`), post_logout_redirect_uris: urls.map((u) => `${u}/auth/login`) }],
  accessTokenTtl: 3_600,
});
const dir = mkdtempSync(join(tmpdir(), 'session-check-'));
const providersFile = join(dir, 'providers.json');
writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));

async function gateway(cwd: string, port: number): Promise<{ url: string; child: ChildProcess; cookie: string }> {
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'gateway/main.ts'], {
    cwd,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: url,
      UPSTREAM_URL: upstream.url,
      OIDC_ISSUER_URL: idp.issuer,
      OIDC_CLIENT_ID: CLIENT.client_id,
      OIDC_CLIENT_SECRET: CLIENT.client_secret,
      SESSION_SECRET: 'bench-session-secret-0123456789abcdef',
      IDP_PROVIDERS_FILE: providersFile,
      CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
      CHATUI_ENABLE_ADMIN_EXPORT: 'false',
      REDIS_URL: redisUrl,
      LOG_LEVEL: 'warn',
      DRIFT_CHECK_SECONDS: '0',
    },
  });
  children.push(child);
  for (let i = 0; i < 300; i++) {
    if (
      await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { url, child, cookie: await gatewaySessionCookie(url, 'alice') };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gateway in ${cwd} did not get ready`);
}

const peers = { [`gateway@${rev}`]: await gateway(base, ports[0]!), 'gateway (today)': await gateway(root, ports[1]!) };
const path = '/api/v1/auths/';
for (const [name, p] of Object.entries(peers)) {
  const status = (await fetch(`${p.url}${path}`, { headers: { cookie: p.cookie } })).status;
  if (status !== 200) throw new Error(`${name}: the signed-in request answered ${status}`);
}

/** CPU time of a process so far, in microseconds (utime + stime from /proc, 100 ticks a second). */
const cpuUs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
};
const rate: Record<string, number[]> = {};
const cpu: Record<string, number[]> = {};
const p99: Record<string, number[]> = {};
for (let round = 0; round < rounds; round++) {
  const order = Object.entries(peers);
  if (round % 2) order.reverse();
  for (const [name, p] of order) {
    const before = cpuUs(p.child.pid!);
    const instance = autocannon({ url: `${p.url}${path}`, connections, duration: seconds, headers: { cookie: p.cookie } });
    const r = await new Promise<{ requests: { average: number }; latency: { p99: number }; non2xx: number }>((done) => instance.once('done', done));
    if (r.non2xx) throw new Error(`${name}: ${r.non2xx} answers were not 2xx`);
    (rate[name] ??= []).push(r.requests.average);
    (cpu[name] ??= []).push((cpuUs(p.child.pid!) - before) / (r.requests.average * seconds));
    (p99[name] ??= []).push(r.latency.p99);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`\n${path} with a session cookie, REDIS_URL; ${rounds} interleaved rounds of ${seconds} s, ${connections} connections; median of rounds`);
for (const name of Object.keys(rate)) {
  console.log(
    `${name.padEnd(22)} ${median(rate[name]!).toFixed(0).padStart(7)} req/s  p99 ${median(p99[name]!)} ms  CPU ${median(cpu[name]!).toFixed(0)} us/req   rounds: ${rate[name]!.map((x) => x.toFixed(0)).join(', ')} req/s`,
  );
}
const [then, now] = Object.keys(rate) as [string, string];
const ratios = rate[now]!.map((x, i) => x / rate[then]![i]!);
console.log(
  `today / ${then}: ${median(ratios).toFixed(3)} (req/s, median of the per-round ratios ${ratios.map((x) => x.toFixed(3)).join(', ')}); CPU per request ${(median(cpu[now]!) / median(cpu[then]!)).toFixed(3)}`,
);
stopAll();
await Promise.all([upstream.close(), idp.close()]);
rmSync(dir, { recursive: true, force: true });
if (process.env.KEEP_BASE !== '1') rmSync(base, { recursive: true, force: true });
