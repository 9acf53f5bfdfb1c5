// What the gateway adds in front of the REAL Open WebUI 0.12.4, in one run:
// p50/p99 of a page load (GET /) and of GET /api/v1/chats/, directly and through the gateway.
//
//   bash scripts/open-webui.sh install        # once (cached outside git)
//   npm run bench:open-webui                  # BENCH_OWUI_N=300 requests per row (default)
//
// Open WebUI runs unmodified (sandbox/real-open-webui.ts); the gateway is gateway/main.ts in its
// own process (as in bench/run.ts), signed in by a real code-flow login of the demo user alice
// against the embedded realm; direct requests carry alice's own Open WebUI token (trusted-header
// sign-in; ten chats of hers are created first). Requests are sequential (one at a time: latency, not throughput) and interleaved,
// the four rows in a shuffled order every round, so machine noise hits all rows alike.
import { performance } from 'node:perf_hooks';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoIdentityProviders } from '../sandbox/demo-realm.js';
import { startIdp } from '../sandbox/idp.js';
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { gatewayImageEnv, gatewayNodeFlags } from './peers.js';
import { freePort } from './proc.js';
import { gatewaySessionCookie } from './sign-in.js';
import { startRealOpenWebUI } from '../sandbox/real-open-webui.js';
import { percentile } from './load.js';

const N = Number(process.env.BENCH_OWUI_N ?? 300);
// The gateway's client at the embedded realm, and its settings: the bench's own (bench/ never imports test code).
const CLIENT_ID = 'bench-gateway';
const CLIENT_SECRET = 'bench-gateway-secret';
const WARMUP = 20;

async function main(): Promise<void> {
  const owui = await startRealOpenWebUI({ flags: { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false } });
  console.log(`Open WebUI 0.12.4 up in ${owui.bootSeconds.toFixed(1)} s at ${owui.url}`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const idp = await startIdp({ clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${url}/auth/callback`] }] });
  const providersFile = join(mkdtempSync(join(tmpdir(), 'bench-owui-')), 'providers.json');
  writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
  // gateway/main.ts with the node flags of `npm start` and the image's environment (as bench/run.ts
  // runs it), its own process, its log to a file (never a pipe this process would have to drain
  // while it measures).
  const logFile = join(tmpdir(), `bench-owui-gateway-${port}.log`);
  const out = openSync(logFile, 'w');
  const gw = spawn(process.execPath, [...gatewayNodeFlags(), '--import', 'tsx', 'gateway/main.ts'], {
    env: {
      PATH: process.env.PATH,
      ...gatewayImageEnv(),
      NODE_ENV: 'production',
      UPSTREAM_URL: owui.url,
      PUBLIC_URL: url,
      OIDC_ISSUER_URL: idp.issuer,
      OIDC_CLIENT_ID: CLIENT_ID,
      OIDC_CLIENT_SECRET: CLIENT_SECRET,
      SESSION_SECRET: 'bench-session-secret-0123456789abcdef0123456789',
      IDP_PROVIDERS_FILE: providersFile,
      IDP_TENANT_IDP_ALIASES: 'acme=acme-entra,globex=globex-okta',
      CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
      CHATUI_ENABLE_ADMIN_EXPORT: 'false',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', out, out],
  });
  try {
    for (let i = 0; ; i++) {
      const up = await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (i > 200 || gw.exitCode !== null) throw new Error(`the gateway did not start (log: ${logFile})`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const cookie = await gatewaySessionCookie(url, 'alice');
    const direct = await fetch(`${owui.url}/api/v1/auths/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-email': 'alice@acme.example', 'x-forwarded-name': 'Alice', 'x-forwarded-role': 'user' },
      body: JSON.stringify({ email: '', password: '' }),
    });
    const token = ((await direct.json()) as { token: string }).token;
    // alice has chats, so the list is not empty
    for (let i = 0; i < 10; i++) {
      const made = await fetch(`${owui.url}/api/v1/chats/new`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ chat: { title: `Bench chat ${i}`, models: [], messages: [], history: { messages: {}, currentId: null } } }),
      });
      if (made.status !== 200) throw new Error(`creating a chat: ${made.status}`);
    }
    const rows: Array<{ name: string; url: string; headers: Record<string, string> }> = [
      { name: 'GET / (page) direct', url: `${owui.url}/`, headers: {} },
      { name: 'GET / (page) through the gateway', url: `${url}/`, headers: { cookie } },
      { name: 'GET /api/v1/chats/ direct', url: `${owui.url}/api/v1/chats/`, headers: { authorization: `Bearer ${token}` } },
      { name: 'GET /api/v1/chats/ through the gateway', url: `${url}/api/v1/chats/`, headers: { cookie } },
    ];
    const once = async (r: (typeof rows)[number]): Promise<number> => {
      const t0 = performance.now();
      const res = await fetch(r.url, { headers: { 'accept-encoding': 'gzip, br', ...r.headers }, redirect: 'manual' });
      await res.arrayBuffer();
      const ms = performance.now() - t0;
      if (res.status !== 200) throw new Error(`${r.name}: ${res.status}`);
      return ms;
    };
    for (let i = 0; i < WARMUP; i++) for (const r of rows) await once(r);
    const samples = rows.map(() => [] as number[]);
    for (let i = 0; i < N; i++) {
      const order = rows.map((_, k) => k).sort(() => Math.random() - 0.5);
      for (const k of order) samples[k]!.push(await once(rows[k]!));
    }
    const table = rows.map((r, k) => {
      const sorted = samples[k]!.sort((a, b) => a - b);
      return { row: r.name, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
    });
    console.log(`\n${N} sequential requests per row, interleaved (warm-up ${WARMUP}):\n`);
    console.log('| request | p50 ms | p99 ms |\n| --- | ---: | ---: |');
    for (const t of table) console.log(`| ${t.row} | ${t.p50.toFixed(2)} | ${t.p99.toFixed(2)} |`);
    const added = (a: number, b: number) => ({ p50: table[b]!.p50 - table[a]!.p50, p99: table[b]!.p99 - table[a]!.p99 });
    const page = added(0, 1);
    const chats = added(2, 3);
    const ms = (v: number) => `${v >= 0 ? '+' : ''}${v.toFixed(2)} ms`;
    console.log(`\nadded by the gateway: page p50 ${ms(page.p50)}, p99 ${ms(page.p99)}; chats p50 ${ms(chats.p50)}, p99 ${ms(chats.p99)}`);
  } finally {
    gw.kill('SIGTERM');
    await idp.close();
    await owui.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
