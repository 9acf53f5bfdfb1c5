// `npm run bench`: the gateway against no proxy (direct), a bare http-proxy-3 proxy (the floor of
// our stack), nginx and oauth2-proxy, in one run, on one machine, so the ratios are fair even when
// absolute numbers are noisy. Options and variables: bench/README.md, "Running it" (or `--help`).
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { mkdtempSync, mkdirSync, chmodSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadGenerator } from './load.js';
import { nginxVersion } from './peers.js';
import { stopAll as stopChildren, killAllSync } from './proc.js';
import { evaluateTargets, loadNotice, printTable, type Row, type Results } from './report.js';
import { SCENARIOS, type Scenario } from './scenarios.js';
import { goVersion, OAUTH2_PROXY_VERSION } from './oauth2-proxy.js';
import type { Bench } from './compare.js';
import { setUp, type Setup } from './setup.js';
import { runScenario, type Sizes } from './scenario-runs.js';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
// --help, or an option this file does not know: the usage (the comment at the top) instead of a
// nine-minute full run started by a typo.
const known = ['--smoke', '--only=', '--peers=', '--baseline='];
if (args.some((a) => !known.some((k) => (k.endsWith('=') ? a.startsWith(k) : a === k)))) {
  const usage = readFileSync(fileURLToPath(import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('//'))
    .map((l) => l.slice(3));
  const bad = args.filter((a) => a !== '--help' && !known.some((k) => (k.endsWith('=') ? a.startsWith(k) : a === k)));
  console.log(
    `${bad.length ? `unknown option ${bad.join(' ')}\n\n` : ''}${usage.slice(0, usage.findIndex((l) => l.startsWith('  BENCH_BARE_FEATURES')) + 2).join('\n')}`,
  );
  console.log(`scenarios: ${SCENARIOS.join(', ')}`);
  process.exit(bad.length ? 2 : 0);
}
const smoke = args.includes('--smoke') || process.env.BENCH_SMOKE === '1';
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',')
  .filter(Boolean);
/** --peers=gateway,bare: measure only the targets whose name starts with one of these (profiling) */
const peerFilter = args
  .find((a) => a.startsWith('--peers='))
  ?.slice('--peers='.length)
  .split(',')
  .filter(Boolean);
/** --baseline=REV: the gateway at that git revision runs beside today's (before/after in one run) */
const baselineRev = args.find((a) => a.startsWith('--baseline='))?.slice('--baseline='.length);
/**
 * BENCH_VARIANT_NODE_FLAGS="--flag ...": today's gateway once more, with these node flags after
 * `npm start`'s (the last of a flag wins), measured beside it in the same run, as `gateway <flags>`:
 * a node setting weighed in every scenario at once (RSS against full GCs). It takes
 * --baseline's place, so not both.
 */
const variantFlags = (process.env.BENCH_VARIANT_NODE_FLAGS ?? '').split(' ').filter(Boolean);
/** BENCH_VARIANT_ENV="NAME=value ...": environment for that variant (e.g. glibc's MALLOC_ARENA_MAX) */
const variantEnv = Object.fromEntries(
  (process.env.BENCH_VARIANT_ENV ?? '')
    .split(' ')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const variant = [...Object.entries(variantEnv).map(([k, v]) => `${k}=${v}`), ...variantFlags].join(' ');
if (variant && baselineRev) throw new Error('BENCH_VARIANT_NODE_FLAGS or BENCH_VARIANT_ENV, and --baseline: one or the other');
const outFile = resolve(process.env.BENCH_OUT ?? join(here, 'results.json'));
const WORKERS = Math.max(2, cpus().length);

/** BENCH_ROUNDS: rounds per request scenario in a full run (default 3; more rounds, steadier medians). */
function roundsSetting(): number {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`BENCH_ROUNDS must be a whole number of at least 1, not "${process.env.BENCH_ROUNDS}"`);
  return rounds;
}

/** Sizes and durations: full run for people, smoke for CI. */
const P: Sizes = smoke
  ? {
      rounds: 1,
      seconds: 0.3,
      warmup: 0.1,
      firstWarmup: 0.1,
      latencySeconds: 0.3,
      transferBytes: 16 << 20,
      sseStreams: 5,
      sseSeconds: 0.5,
      wsConnections: 50,
      wsHold: 0.2,
      wsEchoes: 100,
      connections: 16,
      idleConnections: 50,
    }
  : {
      rounds: roundsSetting(),
      seconds: 3,
      warmup: 1,
      firstWarmup: 3,
      latencySeconds: 2,
      transferBytes: 1 << 30,
      sseStreams: 100,
      sseSeconds: 5,
      wsConnections: 5000,
      wsHold: 2,
      wsEchoes: 2000,
      connections: 32,
      idleConnections: 2000,
    };

/** Things to undo at the end besides the child processes (the IdP, the build folder). */
const cleanups: Array<() => unknown> = [];
async function stopAll(): Promise<void> {
  await stopChildren();
  for (const c of cleanups.splice(0)) await Promise.resolve(c()).catch(() => {});
}

/** The scenarios --only names (all by default), a name it does not know refused. */
function selectedScenarios(): Scenario[] {
  if (only)
    for (const s of only) if (!(SCENARIOS as readonly string[]).includes(s)) throw new Error(`--only: no scenario ${s} (have: ${SCENARIOS.join(', ')})`);
  return SCENARIOS.filter((s) => !only || only.includes(s));
}

/** The run's folder of logs; every node peer counts its mark-compacts in its gc/ (bench/gc-count.ts), per pid. */
function logFolders(): { logDir: string; gcDir: string } {
  const logDir = mkdtempSync(join(tmpdir(), 'bench-'));
  chmodSync(logDir, 0o755);
  const gcDir = join(logDir, 'gc');
  mkdirSync(gcDir);
  process.env.BENCH_GC_DIR = gcDir;
  return { logDir, gcDir };
}

function resultsOf(rows: Row[], s: Setup, notices: string[], started: number, loadBefore: number[]): Results {
  const load = { before: loadBefore, after: loadavg() };
  const busy = loadNotice(load, cpus().length);
  return {
    date: new Date().toISOString(),
    mode: smoke ? 'smoke' : 'full',
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      nginx: s.nginxBin ? nginxVersion(s.nginxBin) : null,
      oauth2Proxy: s.o2pBin ? `${OAUTH2_PROXY_VERSION} (${goVersion() ?? 'go'})` : null,
      loadGenerator: process.env.BENCH_LOADGEN === 'autocannon' ? 'autocannon' : loadGenerator(),
    },
    gatewayCredential: s.auth.kind,
    peersRunAs: s.runner.kind,
    parameters: { ...P, workers: WORKERS },
    notices: busy ? [busy, ...notices] : notices,
    load,
    rows,
    targets: evaluateTargets(rows, { wsConnections: P.wsConnections, smoke }),
    seconds: Math.round((Date.now() - started) / 1000),
  };
}

async function main(): Promise<void> {
  const started = Date.now();
  // before anything of the run's own: what else the machine was doing
  const loadBefore = loadavg();
  const selected = selectedScenarios();
  if (smoke && process.env.BENCH_LOADGEN !== 'wrk') process.env.BENCH_LOADGEN = 'autocannon'; // wrk cannot run for less than 1 s
  const { logDir, gcDir } = logFolders();
  const say = (line: string) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s] ${line}\n`);
  say(`bench: ${smoke ? 'smoke' : 'full'} run, scenarios ${selected.join(', ')}; load from ${loadGenerator()}; logs in ${logDir}`);
  say(`bench: load average ${loadBefore.map((x) => x.toFixed(2)).join(' ')} (${cpus().length} cores)`);
  const notices: string[] = [];
  const setup = await setUp({
    smoke,
    selected,
    workers: WORKERS,
    baselineRev,
    variant: { label: variant, flags: variantFlags, env: variantEnv },
    logDir,
    notices,
    cleanups,
    say,
  });
  const bench: Bench = { smoke, gcDir, peerFilter, rows: [], say };
  for (const scenario of selected) {
    say(`bench: ${scenario}`);
    await runScenario(scenario, bench, setup, P, logDir);
  }
  const results = resultsOf(bench.rows, setup, notices, started, loadBefore);
  say('bench: stopping the peers');
  await stopAll();
  say('bench: stopped');
  printTable(results);
  writeFileSync(outFile, JSON.stringify(results, null, 2) + '\n');
  say(`bench: wrote ${outFile} (${results.seconds} s)`);
  if (process.env.BENCH_KEEP_LOGS === '1') say(`bench: logs kept in ${logDir}`);
  else rmSync(logDir, { recursive: true, force: true });
}

process.once('exit', killAllSync);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    process.stderr.write(`bench: ${signal}, stopping the peers\n`);
    stopAll().finally(() => process.exit(130));
  });

main().then(
  () => process.exit(0),
  async (err: Error) => {
    process.stderr.write(`bench failed: ${err.stack ?? err.message}\n`);
    await stopAll();
    process.exit(1);
  },
);
