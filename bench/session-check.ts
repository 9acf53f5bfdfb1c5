// What the check of a signed-in request costs with Redis, at a baseline revision and today: the check
// alone in this process, then the request through each revision's gateway (bench/README.md, "Running
// it"). One redis-server is enough: the check is the same on Sentinel and
// Cluster.
import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { startOpenWebUI } from '../sandbox/open-webui/stand-in.js';
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
    'check-only': { type: 'boolean', default: false },
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

// ---- 1. the check alone
interface Checker {
  end(by: { id: string }, until: number): Promise<unknown>;
  isEnded(s: { id: string; sid?: string | null; sub: string; iat: number }): boolean | undefined;
  ready(): { ok: boolean };
  close(): Promise<void>;
}
async function checker(tree: string, prefix: string): Promise<Checker> {
  const { redisState } = (await import(pathToFileURL(join(tree, 'gateway/state/redis-state.ts')).href)) as {
    redisState: (url: string, obs: unknown, o: { keyPrefix: string }) => Promise<Checker>;
  };
  const { createObservability } = (await import(pathToFileURL(join(tree, 'gateway/observability/observability.ts')).href)) as {
    createObservability: (o: { level: string }) => unknown;
  };
  const state = await redisState(redisUrl, createObservability({ level: 'silent' }), { keyPrefix: prefix });
  while (!state.ready().ok) await new Promise((r) => setTimeout(r, 20));
  const until = Math.floor(Date.now() / 1000) + 3_600;
  await Promise.all(Array.from({ length: 2_000 }, (_, i) => state.end({ id: `ended-${i}` }, until)));
  return state;
}
const CHECKS = 2_000_000;
const live = Array.from({ length: 1_000 }, (_, i) => ({ id: `live-${i}`, sid: `sid-${i}`, sub: `user-${i % 50}`, iat: Math.floor(Date.now() / 1000) - 60 }));
/**
 * CPU ns per check: `CHECKS` checks of live sessions (each must say "live"), in slices of 10,000
 * with the event loop let go between them, as requests interleave with the heartbeats that keep
 * the lease (a loop that held it for longer than the lease would rightly be told "cannot know").
 */
async function nsPerCheck(state: Checker): Promise<number> {
  let used = 0;
  for (let done = 0; done < CHECKS; done += 10_000) {
    await new Promise((r) => setImmediate(r));
    const before = process.cpuUsage();
    for (let i = done; i < done + 10_000; i++) if (state.isEnded(live[i % live.length]!) !== false) throw new Error('a live session not said live');
    const slice = process.cpuUsage(before);
    used += slice.user + slice.system;
  }
  return (used * 1000) / CHECKS;
}
const checkers = { [`@${rev}`]: await checker(base, 'bench-then:'), today: await checker(root, 'bench-now:') };
for (const c of Object.values(checkers)) await nsPerCheck(c); // warm
const ns: Record<string, number[]> = {};
for (let round = 0; round < 2 * rounds; round++) {
  const order = Object.entries(checkers);
  if (round % 2) order.reverse();
  for (const [name, c] of order) (ns[name] ??= []).push(await nsPerCheck(c));
}
const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `\nthe check alone: ${CHECKS} checks of live sessions per round, a mirror of 2,000 ended sessions, ${2 * rounds} interleaved rounds; CPU ns per check, median (rounds)`,
);
for (const [name, xs] of Object.entries(ns))
  console.log(`  ${name.padEnd(12)} ${mid(xs).toFixed(1).padStart(6)} ns   (${xs.map((x) => x.toFixed(1)).join(', ')})`);
console.log(`  today - @${rev}: ${(mid(ns.today!) - mid(ns[`@${rev}`]!)).toFixed(1)} ns per check`);
for (const c of Object.values(checkers)) await c.close();
if (opts['check-only']) {
  stopAll();
  if (process.env.KEEP_BASE !== '1') rmSync(base, { recursive: true, force: true });
  process.exit(0);
}

// ---- 2. the request
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
