// `npm run bench:open-webui`: what the gateway costs in front of the REAL Open WebUI holding a
// platform's volume, every rewritten view straight at Open WebUI against through the gateway, then
// many users listing at once (bench/README.md, "At a platform's volume", for the settings).
import { performance } from 'node:perf_hooks';
import { mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { demoAccounts, demoIdentityProviders } from '../sandbox/demo-realm.js';
import { startIdp, type TestIdp } from '../sandbox/idp.js';
import { cannedModelConnection, startCannedModel, CANNED_MODEL_ID } from '../sandbox/canned-model.js';
import { OPEN_WEBUI_VERSION, type AdminFlags } from '../sandbox/real-open-webui.js';
import { platformVolume, startVolumeOpenWebUI, VOLUME_ADMIN, volumeAccounts, type VolumeSpec } from '../sandbox/seed-volume.js';
import { gatewayImageEnv, gatewayNodeFlags } from './peers.js';
import { freePort, sleep } from './proc.js';
import { gatewaySessionCookie } from './sign-in.js';
import { percentile } from './load.js';

const N = Number(process.env.BENCH_OWUI_N ?? 7);
const USERS = Number(process.env.BENCH_OWUI_USERS ?? 30);
const LOAD_SECONDS = Number(process.env.BENCH_OWUI_LOAD_SECONDS ?? 20);
const VOLUME = process.env.BENCH_OWUI_VOLUME ?? 'issue';
const FLAGS = process.env.BENCH_OWUI_FLAGS ?? 'both';
// The gateway's client at the embedded realm, and its settings: the bench's own (bench/ never imports test code).
const CLIENT_ID = 'bench-gateway';
const CLIENT_SECRET = 'bench-gateway-secret';
const MODEL = CANNED_MODEL_ID;

/** The issue's platform (200 users, 20,000 files, 30,000 chats, 7,000 ratings, the admin's share of each), or 200,000 files. */
function volumeSpec(): VolumeSpec {
  const files = VOLUME === '200k' ? 200_000 : 20_000;
  return platformVolume({
    users: 200,
    files,
    chats: 30_000,
    ratings: 7_000,
    models: [MODEL, 'model-b', 'model-c', 'private-model'],
    admin: { account: VOLUME_ADMIN, files: VOLUME === '200k' ? 4_000 : 400, chats: 3_000, ratings: 2_000, chatBytes: 12_000, snapshotBytes: 16_000 },
    chatBytes: 12_000,
    snapshotBytes: 16_000,
    // thirty users who sign in, whatever BENCH_OWUI_USERS (the seeded database stays the cached one)
    accounts: volumeAccounts(30),
  });
}

interface View {
  name: string;
  path: string;
  rounds?: number;
}

const ALL_VIEWS: View[] = [
  { name: 'files list, page 1 (with the text)', path: '/api/v1/files/' },
  { name: 'files list, page 3, content=false', path: '/api/v1/files/?page=3&content=false' },
  { name: 'files count', path: '/api/v1/files/count' },
  { name: 'files search *.txt (100)', path: '/api/v1/files/search?filename=*.txt' },
  { name: 'model overview (tags)', path: `/api/v1/analytics/models/${MODEL}/overview` },
  { name: 'leaderboard (top tags)', path: '/api/v1/evaluations/leaderboard' },
  { name: 'ratings list, page 1', path: '/api/v1/evaluations/feedbacks/list?order_by=updated_at&direction=desc&page=1' },
  { name: 'rating ids', path: '/api/v1/evaluations/feedbacks/all/ids' },
  { name: 'ratings export', path: '/api/v1/evaluations/feedbacks/all/export', rounds: 3 },
  { name: 'chat list (passed through)', path: '/api/v1/chats/' },
];
/** BENCH_OWUI_VIEWS: only the views whose name holds one of these words (comma-separated) */
const VIEWS = process.env.BENCH_OWUI_VIEWS ? ALL_VIEWS.filter((v) => process.env.BENCH_OWUI_VIEWS!.split(',').some((w) => v.name.includes(w))) : ALL_VIEWS;

const FLAG_SETS: Array<{ name: string; flags: AdminFlags }> = [
  { name: 'Open WebUI flags false (the platform)', flags: { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false } },
  { name: 'Open WebUI flags true (its defaults)', flags: { BYPASS_ADMIN_ACCESS_CONTROL: true, ENABLE_ADMIN_EXPORT: true, ENABLE_ADMIN_CHAT_ACCESS: true } },
].filter((f) => FLAGS === 'both' || (FLAGS === 'drifted') === f.flags.BYPASS_ADMIN_ACCESS_CONTROL);

/** One timed GET: ms, status and bytes read. */
async function timed(url: string, headers: Record<string, string>): Promise<{ ms: number; status: number; bytes: number }> {
  const t0 = performance.now();
  const res = await fetch(url, { headers, redirect: 'manual' });
  let bytes = 0;
  for await (const chunk of res.body ?? []) bytes += (chunk as Uint8Array).length;
  return { ms: performance.now() - t0, status: res.status, bytes };
}

/** CPU time (ms) the process has used so far, from /proc (user and system). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** The gateway's resident set (MB) now and at its peak, from /proc. */
function rssOf(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { now: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

async function startGatewayProcess(port: number, owuiUrl: string, idp: TestIdp): Promise<{ url: string; child: ChildProcess; logFile: string }> {
  const url = `http://127.0.0.1:${port}`;
  const providersFile = join(mkdtempSync(join(tmpdir(), 'bench-owui-')), 'providers.json');
  writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
  const logFile = join(tmpdir(), `bench-owui-gateway-${port}.log`);
  const out = openSync(logFile, 'w');
  // bench/gateway-process.ts: gateway/main.ts, ended with this process, BENCH_MEMORY_DIR sampled
  const child = spawn(process.execPath, [...gatewayNodeFlags(), '--import', 'tsx', 'bench/gateway-process.ts'], {
    env: {
      PATH: process.env.PATH,
      ...gatewayImageEnv(),
      NODE_ENV: 'production',
      UPSTREAM_URL: owuiUrl,
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
      ...(process.env.BENCH_MEMORY_DIR ? { BENCH_MEMORY_DIR: process.env.BENCH_MEMORY_DIR } : {}),
    },
    stdio: ['pipe', out, out],
  });
  for (let i = 0; ; i++) {
    const up = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return { url, child, logFile };
    if (i > 300 || child.exitCode !== null) throw new Error(`the gateway did not start (log: ${logFile})`);
    await sleep(100);
  }
}

async function directToken(owuiUrl: string, email: string, role: string): Promise<string> {
  const res = await fetch(`${owuiUrl}/api/v1/auths/signin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-email': email, 'x-forwarded-name': email, 'x-forwarded-role': role },
    body: JSON.stringify({ email: '', password: '' }),
  });
  return ((await res.json()) as { token: string }).token;
}

interface Row {
  view: string;
  direct: number;
  gateway: number;
  first?: number;
  /** the gateway's own CPU per request through it (ms) */
  cpu: number;
  bytes: number;
  ok: boolean;
}

async function measureViews(owuiUrl: string, gwUrl: string, token: string, cookie: string, pid: number): Promise<Row[]> {
  const rows: Row[] = [];
  for (const v of VIEWS) {
    const direct = { url: `${owuiUrl}${v.path}`, headers: { authorization: `Bearer ${token}` } };
    const through = { url: `${gwUrl}${v.path}`, headers: { cookie } };
    // the first request through the gateway (what an admin's first visit costs: kept copies are read whole)
    const first = await timed(through.url, through.headers);
    if (first.status !== 200) throw new Error(`${v.name} through the gateway: ${first.status}`);
    const samples = { direct: [] as number[], gateway: [] as number[] };
    let bytes = 0;
    let cpu = 0;
    for (let i = 0; i < (v.rounds ?? N); i++) {
      for (const which of Math.random() < 0.5 ? (['direct', 'gateway'] as const) : (['gateway', 'direct'] as const)) {
        const before = which === 'gateway' ? cpuMs(pid) : 0;
        const r = which === 'direct' ? await timed(direct.url, direct.headers) : await timed(through.url, through.headers);
        if (which === 'gateway') cpu += cpuMs(pid) - before;
        if (r.status !== 200) throw new Error(`${v.name} ${which}: ${r.status}`);
        samples[which].push(r.ms);
        if (which === 'gateway') bytes = r.bytes;
      }
    }
    const p50 = (xs: number[]) => percentile(Float64Array.from(xs).sort(), 50);
    const d = p50(samples.direct);
    const g = p50(samples.gateway);
    const cpuPer = cpu / (v.rounds ?? N);
    rows.push({ view: v.name, direct: d, gateway: g, first: first.ms, cpu: cpuPer, bytes, ok: g <= 1.5 * d + 50 });
    console.log(
      `  ${v.name}: direct ${d.toFixed(0)} ms, gateway ${g.toFixed(0)} ms (first ${first.ms.toFixed(0)} ms, gateway CPU ${cpuPer.toFixed(1)} ms), ${(bytes / 1024).toFixed(0)} KB`,
    );
  }
  return rows;
}

/** USERS users and the admin listing their files at once for LOAD_SECONDS: latencies, errors, the gateway's RSS. */
async function listingAtOnce(
  gwUrl: string,
  pid: number,
  cookies: string[],
): Promise<{ requests: number; errors: number; statuses: Record<number, number>; p50: number; p99: number; peakRss: number }> {
  const latencies: number[] = [];
  let errors = 0;
  const statuses: Record<number, number> = {};
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssOf(pid).now)), 100);
  const until = Date.now() + LOAD_SECONDS * 1000;
  const paths = ['/api/v1/files/', '/api/v1/files/?page=2&content=false', '/api/v1/files/count', '/api/v1/files/search?filename=*'];
  await Promise.all(
    cookies.map(async (cookie, k) => {
      for (let i = k; Date.now() < until; i++) {
        const r = await timed(`${gwUrl}${paths[i % paths.length]}`, { cookie });
        latencies.push(r.ms);
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        if (r.status !== 200 && r.status !== 404) errors++;
      }
    }),
  );
  clearInterval(sampler);
  const sorted = Float64Array.from(latencies).sort();
  return { requests: latencies.length, errors, statuses, p50: percentile(sorted, 50), p99: percentile(sorted, 99), peakRss };
}

type LoadResult = Awaited<ReturnType<typeof listingAtOnce>> & { idle: number };
interface SetResult {
  set: string;
  rows: Row[];
  load: LoadResult;
  rss: { now: number; peak: number };
}

async function main(): Promise<void> {
  const spec = volumeSpec();
  const model = await startCannedModel();
  const results: SetResult[] = [];
  try {
    for (const set of FLAG_SETS) results.push(await measureFlagSet(set, spec, model));
  } finally {
    await model.close();
  }
  for (const r of results) printResult(r);
}

/** One set of Open WebUI's admin flags: its Open WebUI, the views through a gateway, then the listing at once through another. */
async function measureFlagSet(set: (typeof FLAG_SETS)[number], spec: VolumeSpec, model: Awaited<ReturnType<typeof startCannedModel>>): Promise<SetResult> {
  console.log(`\n${set.name}: Open WebUI ${OPEN_WEBUI_VERSION} on the ${VOLUME} volume`);
  const t0 = Date.now();
  const owui = await startVolumeOpenWebUI({ spec, flags: set.flags, env: cannedModelConnection(model) });
  console.log(
    `  ready in ${((Date.now() - t0) / 1000).toFixed(0)} s (${owui.seededNow ? `seeded now in ${owui.seed.seconds} s` : 'seeded database from the cache'}): ${JSON.stringify(owui.seed.counts)}`,
  );
  const gwPort = await freePort();
  const idp = await startIdp({
    clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`http://127.0.0.1:${gwPort}/auth/callback`] }],
    accounts: [...demoAccounts, ...volumeAccounts(USERS)],
  });
  let gw: Awaited<ReturnType<typeof startGatewayProcess>> | undefined;
  try {
    gw = await startGatewayProcess(gwPort, owui.url, idp);
    const cookie = await gatewaySessionCookie(gw.url, VOLUME_ADMIN.username);
    const token = await directToken(owui.url, VOLUME_ADMIN.email, 'admin');
    const rows = await measureViews(owui.url, gw.url, token, cookie, gw.child.pid!);
    const rss = rssOf(gw.child.pid!);
    console.log(`  the gateway after the views: RSS ${rss.now.toFixed(0)} MB, peak ${rss.peak.toFixed(0)} MB`);
    // the listing at once in a gateway of its own, so that its peak is the listing's
    gw.child.kill('SIGTERM');
    await new Promise((r) => gw!.child.once('exit', r));
    gw = await startGatewayProcess(gwPort, owui.url, idp);
    const cookies = await signedInListers(gw.url);
    const idle = rssOf(gw.child.pid!).now;
    const load = await listingAtOnce(gw.url, gw.child.pid!, cookies);
    console.log(
      `  ${cookies.length} users listing at once: ${load.requests} requests (statuses ${JSON.stringify(load.statuses)}), p50 ${load.p50.toFixed(0)} ms, p99 ${load.p99.toFixed(0)} ms; gateway RSS ${idle.toFixed(0)} MB before, peak ${load.peakRss.toFixed(0)} MB`,
    );
    return { set: set.name, rows, load: { ...load, idle }, rss };
  } finally {
    gw?.child.kill('SIGTERM');
    await idp.close();
    await owui.close();
  }
}

/** The admin and USERS users signed in at the gateway and at Open WebUI: their session cookies. */
async function signedInListers(gwUrl: string): Promise<string[]> {
  const cookies: string[] = [];
  for (const a of [{ username: VOLUME_ADMIN.username, password: VOLUME_ADMIN.password }, ...volumeAccounts(USERS)]) {
    const c = await gatewaySessionCookie(gwUrl, a.username, a.password);
    // signed in at Open WebUI before the listing (its own sign-in writes the user's row: a burst of
    // 31 at one moment had SQLite lock and Open WebUI answer 503 to one or two)
    await timed(`${gwUrl}/api/v1/auths/`, { cookie: c });
    cookies.push(c);
  }
  return cookies;
}

/** One flag set's table of views and its listing at once, as bench/README.md shows them. */
function printResult(r: SetResult): void {
  console.log(`\n${r.set}, ${VOLUME} volume, p50 of ${N} rounds (the export 3), ms; target: gateway <= 1.5 x direct + 50:\n`);
  console.log(
    '| view | direct | gateway | first through the gateway | gateway CPU per request | answer KB | target |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |',
  );
  for (const row of r.rows)
    console.log(
      `| ${row.view} | ${row.direct.toFixed(0)} | ${row.gateway.toFixed(0)} | ${row.first?.toFixed(0)} | ${row.cpu.toFixed(1)} | ${(row.bytes / 1024).toFixed(0)} | ${row.ok ? 'met' : 'MISSED'} |`,
    );
  console.log(
    `\n${USERS} users and the admin listing at once for ${LOAD_SECONDS} s (a gateway of their own): ${r.load.requests} requests (statuses ${JSON.stringify(r.load.statuses)}), p50 ${r.load.p50.toFixed(0)} ms, p99 ${r.load.p99.toFixed(0)} ms; gateway RSS ${r.load.idle.toFixed(0)} MB before, peak ${r.load.peakRss.toFixed(0)} MB; the views' gateway peaked at ${r.rss.peak.toFixed(0)} MB`,
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
