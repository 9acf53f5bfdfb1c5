// What `Cache-Control: private, no-store` on personal answers costs the chat
// front-end's static assets, which it leaves alone: the gateway at a baseline revision and today's,
// both as their own process (gateway/main.ts through tsx) in front of the same Open WebUI stand-in,
// measured in interleaved rounds with autocannon. Usage:
//   node --import tsx bench/static-assets.ts [BASELINE_REV] [ROUNDS] [SECONDS]
import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { startOpenWebUI } from '../sandbox/open-webui/stand-in.js';
import { freePort } from './proc.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const [rev = '70c391b', roundsArg = '3', secondsArg = '8'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const seconds = Number(secondsArg);
const base = join(root, '.tmp', `static-bench-${rev}`);
if (!existsSync(base)) {
  mkdirSync(base, { recursive: true });
  execSync(`git archive ${rev} | tar -x -C ${base}`, { cwd: root });
  symlinkSync(join(root, 'node_modules'), join(base, 'node_modules'));
}

const upstream = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: false });
async function gateway(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'gateway/main.ts'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      UPSTREAM_URL: upstream.url,
      OIDC_ISSUER_URL: 'http://127.0.0.1:9/realms/platform',
      OIDC_CLIENT_ID: 'bench',
      OIDC_CLIENT_SECRET: 'bench-secret',
      SESSION_SECRET: 'bench-session-secret-0123456789abcdef',
      CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
      CHATUI_ENABLE_ADMIN_EXPORT: 'false',
      LOG_LEVEL: 'warn',
      DRIFT_CHECK_SECONDS: '0',
    },
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    if (
      await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { url, child };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gateway in ${dir} did not start`);
}

const peers = { [`gateway@${rev}`]: await gateway(base), 'gateway (today)': await gateway(root) };
const paths = ['/static/favicon.png', '/static/app.js'];
for (const [name, p] of Object.entries(peers)) {
  for (const path of paths) {
    const h = (await fetch(`${p.url}${path}`)).headers;
    console.log(`${name.padEnd(20)} ${path.padEnd(20)} cache-control: ${h.get('cache-control') ?? '(none)'}`);
  }
}
/** CPU time of a process so far, in microseconds (utime + stime from /proc, 100 ticks a second). */
const cpuUs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
};
const cpu: Record<string, number[]> = {};
const results: Record<string, number[]> = {};
const p99: Record<string, number[]> = {};
for (let round = 0; round < rounds; round++) {
  const order = Object.entries(peers);
  if (round % 2) order.reverse();
  for (const [name, p] of order) {
    for (const path of paths) {
      const before = cpuUs(p.child.pid!);
      const instance = autocannon({ url: `${p.url}${path}`, connections: 16, duration: seconds });
      const r = await new Promise<{ requests: { average: number }; latency: { p99: number }; non2xx: number }>((done) => instance.once('done', done));
      if (r.non2xx) throw new Error(`${name} ${path}: ${r.non2xx} answers were not 2xx`);
      const key = `${name} ${path}`;
      (results[key] ??= []).push(r.requests.average);
      (cpu[key] ??= []).push((cpuUs(p.child.pid!) - before) / (r.requests.average * seconds));
      (p99[key] ??= []).push(r.latency.p99);
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`\n${rounds} interleaved rounds of ${seconds} s, 16 connections; median of rounds`);
for (const key of Object.keys(results)) {
  console.log(
    `${key.padEnd(42)} ${median(results[key]!).toFixed(0).padStart(7)} req/s  p99 ${median(p99[key]!)} ms  CPU ${median(cpu[key]!).toFixed(0)} us/req   rounds: ${results[key]!.map((x) => x.toFixed(0)).join(', ')} req/s; ${cpu[key]!.map((x) => x.toFixed(0)).join(', ')} us`,
  );
}
for (const p of Object.values(peers)) p.child.kill('SIGTERM');
await upstream.close();
if (process.env.KEEP_BASE !== '1') rmSync(base, { recursive: true, force: true });
