// The benchmark harness works: `npm run bench -- --smoke` starts every peer, measures every
// scenario against each, and writes its JSON. Speed is measured in bench/, never asserted here:
// this test checks only that the harness produced results for every scenario and peer present.
import { execFile, execFileSync } from 'node:child_process';
import net from 'node:net';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { evaluateTargets, loadNotice, targetLines, type Results, type Row } from '../../bench/report.js';
import { SCENARIOS } from '../../bench/scenarios.js';
import { freePorts } from '../../sandbox/ports.js';
import { spawnChild } from '../../bench/proc.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** `npm run bench -- --smoke ARGS` with BENCH_OUT in DIR: its results and what it printed; the error names the run and ends with its stderr. */
function runBench(dir: string, args: string[], env: Record<string, string>, timeout: number): Promise<{ results: Results; stdout: string }> {
  const out = join(dir, 'results.json');
  return new Promise((resolveRun, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--no-warnings=ExperimentalWarning', join(root, 'bench/run.ts'), '--smoke', ...args],
      { cwd: root, env: { ...process.env, BENCH_OUT: out, ...env }, timeout, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`npm run bench -- --smoke ${args.join(' ')} failed: ${err.message}\n${stderr.slice(-4000)}`));
        else resolveRun({ results: JSON.parse(readFileSync(out, 'utf8')) as Results, stdout });
      },
    );
  });
}

describe('bench: the harness (smoke mode)', function () {
  this.timeout(150_000);
  let dir: string;
  let results: Results;
  let output = '';

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
    ({ results, stdout: output } = await runBench(dir, [], { BENCH_BARE_FEATURES: 'all' }, 145_000));
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it('prints one table and a targets table', () => {
    expect(output).to.match(/\| scenario\s+\| peer\s+\|/);
    expect(output).to.match(/\| target\s+\| goal\s+\|/);
  });

  it('measured every scenario', () => {
    expect(results.mode).to.equal('smoke');
    expect([...new Set(results.rows.map((r) => r.scenario))].sort()).to.deep.equal([...SCENARIOS].sort());
  });

  it('measured every peer present in each scenario, with no failed request', () => {
    const nginx = results.machine.nginx !== null;
    const expected: Record<string, string[]> = {
      // BENCH_BARE_FEATURES=all adds the floor plus the cheapest form of the gateway's features.
      small: ['direct', 'bare http-proxy-3', 'bare + headers,log,metrics,hooks', 'gateway', ...(nginx ? ['nginx'] : [])],
      'small-latency': ['direct', 'bare http-proxy-3', 'gateway', ...(nginx ? ['nginx'] : [])],
      'small-workers': ['direct', ...results.rows.filter((r) => r.scenario === 'small-workers' && r.peer !== 'direct').map((r) => r.peer)],
      'files-page': ['direct', 'bare http-proxy-3', 'gateway', 'gateway (pass-through)', ...(nginx ? ['nginx'] : [])],
      upload: ['direct', 'bare http-proxy-3', 'gateway', ...(nginx ? ['nginx'] : [])],
      download: ['direct', 'bare http-proxy-3', 'gateway', ...(nginx ? ['nginx'] : [])],
      sse: ['direct', 'bare http-proxy-3', 'gateway', ...(nginx ? ['nginx'] : [])],
      websocket: ['direct', 'bare http-proxy-3', 'gateway', ...(nginx ? ['nginx'] : [])],
      idle: ['bare http-proxy-3', 'gateway', ...(nginx ? ['nginx'] : [])],
      'auth-providers': ['gateway', ...(nginx ? ['nginx (static file)'] : [])],
    };
    expect(results.rows.some((r) => r.scenario === 'small-workers' && r.peer.startsWith('gateway x'))).to.equal(true);
    if (nginx) expect(results.rows.some((r) => r.scenario === 'small-workers' && r.peer.startsWith('nginx x'))).to.equal(true);
    // oauth2-proxy beside the gateway in every request scenario but the gateway-only
    // ones, when its binary is built (a smoke run never builds it: CI skips it with a notice)
    if (results.machine.oauth2Proxy) {
      for (const s of ['small', 'small-latency', 'files-page', 'upload', 'download', 'sse', 'websocket', 'idle'])
        expected[s]!.push('oauth2-proxy', ...(nginx ? ['nginx + oauth2-proxy'] : []));
    } else {
      expect(results.notices.join('\n')).to.match(/oauth2-proxy/);
    }
    for (const [scenario, peers] of Object.entries(expected)) {
      const rows = results.rows.filter((r) => r.scenario === scenario);
      for (const peer of peers) {
        const row = rows.find((r) => r.peer === peer);
        expect(row, `${scenario} / ${peer}`).to.not.equal(undefined);
        expect(row!.errors, `${scenario} / ${peer}: ${row!.note ?? ''}`).to.equal(0);
        expect(row!.count, `${scenario} / ${peer}`).to.be.greaterThan(0);
        expect(Number.isFinite(row!.rate) && row!.rate > 0, `${scenario} / ${peer} rate`).to.equal(true);
      }
    }
  });

  it('judged every target on the rows it wrote (met or not, as the rows say), printed each, and said which credential the gateway got', () => {
    expect(results.targets.length).to.be.greaterThan(10);
    // unmeasured only for want of a peer: nginx absent, or oauth2-proxy skipped (its own targets)
    const absent = (id: string) => results.machine.nginx === null || (id.includes('oauth2-proxy') && !results.machine.oauth2Proxy);
    for (const t of results.targets) expect(t.met === true || t.met === false || (t.met === null && absent(t.id)), t.id).to.equal(true);
    // what was written is the judgement of the rows measured, not of fewer or other ones
    const rows = structuredClone(results.rows);
    expect(evaluateTargets(rows, { wsConnections: results.parameters.wsConnections!, smoke: true })).to.deep.equal(results.targets);
    for (const line of targetLines(results)) expect(output, 'the printed targets').to.include(line);
    expect(results.gatewayCredential).to.match(/session cookie|bearer|API key/);
  });

  it('measured the memory of an idle connection for every peer of the idle scenario, and judged the gateway\u2019s against the floor\u2019s', () => {
    const idle = results.rows.filter((x) => x.scenario === 'idle' && x.peer !== 'direct');
    expect(idle.map((r) => r.peer)).to.include.members(['gateway', 'bare http-proxy-3']);
    for (const r of idle) expect(r.bytesPerConnection, r.peer).to.be.a('number').and.satisfy(Number.isFinite);
    const [gateway, floor] = ['gateway', 'bare http-proxy-3'].map((p) => idle.find((r) => r.peer === p)!.bytesPerConnection!);
    const target = results.targets.find((t) => t.id === 'idle connection memory')!;
    expect(target.met).to.equal(gateway! <= 2 * Math.max(floor!, 1));
    expect(target.measured).to.include(`${(gateway! / 1024).toFixed(1)} KB vs ${(floor! / 1024).toFixed(1)} KB`);
  });

  it('recorded the peak RSS of every peer process it measured', () => {
    for (const r of results.rows) if (r.peer !== 'direct' || r.peakRssMB !== null) expect(r.peakRssMB, `${r.scenario} / ${r.peer}`).to.be.greaterThan(0);
  });

  it('split the CPU of each peer it measured into user and system time (user at most the whole)', () => {
    const measured = results.rows.filter((r) => r.cpuUsPerUnit != null);
    expect(measured.length).to.be.greaterThan(10);
    for (const r of measured) {
      expect(r.userUsPerUnit, `${r.scenario} / ${r.peer}`).to.be.a('number').and.at.least(0);
      expect(r.userUsPerUnit!, `${r.scenario} / ${r.peer}`).to.be.at.most(r.cpuUsPerUnit!);
    }
  });

  it('said the load average at its start and its end, and that the machine was not quiet when it was over the cores', () => {
    for (const l of [results.load.before, results.load.after]) {
      expect(l).to.have.length(3);
      for (const x of l) expect(x).to.be.a('number').and.at.least(0);
    }
    const two = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
    expect(output).to.include(`Load average (1, 5, 15 minutes): ${two(results.load.before)} before the run, ${two(results.load.after)} after it`);
    const busy = results.load.before[0]! > results.machine.cpus || results.load.after[0]! > results.machine.cpus;
    const notice = results.notices.find((n) => n.startsWith('the machine was not quiet'));
    expect(notice !== undefined, `load ${two(results.load.before)} / ${two(results.load.after)}`).to.equal(busy);
    if (notice) expect(output).to.include(`NOTICE: ${notice}`);
  });

  it('counted the mark-compacts of every node peer (a number, nginx none) and judged streaming by them', () => {
    for (const r of results.rows) {
      if (r.peer.startsWith('nginx') || r.peer.startsWith('oauth2-proxy')) expect(r.markCompacts ?? null, `${r.scenario} / ${r.peer}`).to.equal(null);
      else expect(r.markCompacts, `${r.scenario} / ${r.peer}`).to.be.a('number').and.at.least(0);
    }
    expect(output).to.match(/\| full GCs \|/);
    const streaming = results.targets.find((t) => t.id === 'streaming full GCs')!;
    const gcs = (scenario: string, peer: string) => results.rows.find((r) => r.scenario === scenario && r.peer === peer)!;
    const pairs = [
      ['files page passed through', gcs('files-page', 'gateway (pass-through)'), gcs('files-page', 'bare http-proxy-3')],
      ['upload', gcs('upload', 'gateway'), gcs('upload', 'bare http-proxy-3')],
      ['download', gcs('download', 'gateway'), gcs('download', 'bare http-proxy-3')],
    ] as const;
    expect(streaming.measured).to.equal(pairs.map(([what, g, b]) => `${what} ${g.markCompacts} (floor ${b.markCompacts})`).join(', '));
    expect(streaming.met, streaming.measured).to.equal(pairs.every(([, g, b]) => g.markCompacts! <= b.markCompacts! + (g.rounds ?? 1)));
  });
});

describe('bench: oauth2-proxy and nginx + oauth2-proxy (smoke mode, where the binary is built)', function () {
  this.timeout(180_000);
  let results: Results;
  let dir: string;

  before(async function () {
    const { ensureOauth2Proxy } = await import('../../bench/oauth2-proxy.js');
    const found = ensureOauth2Proxy({ build: false });
    if ('why' in found) {
      // CI without Go or the binary: the peer is skipped, with the reason as a notice
      process.stderr.write(`      notice: ${found.why}\n`);
      this.skip();
    }
    dir = mkdtempSync(join(tmpdir(), 'bench-o2p-'));
    ({ results } = await runBench(
      dir,
      ['--only=small,small-latency,websocket,idle', '--peers=direct,bare,gateway,oauth2-proxy,nginx'],
      { BENCH_OAUTH2_PROXY: '1' },
      175_000,
    ));
  });
  after(() => dir && rmSync(dir, { recursive: true, force: true }));

  it('signs in to oauth2-proxy by its own flow and measures it beside the gateway, with no failed request', () => {
    expect(results.machine.oauth2Proxy).to.be.a('string');
    const nginx = results.machine.nginx !== null;
    for (const scenario of ['small', 'small-latency', 'websocket', 'idle']) {
      for (const peer of ['gateway', 'oauth2-proxy', ...(nginx ? ['nginx + oauth2-proxy'] : [])]) {
        const row = results.rows.find((r) => r.scenario === scenario && r.peer === peer);
        expect(row, `${scenario} / ${peer}`).to.not.equal(undefined);
        expect(row!.errors, `${scenario} / ${peer}: ${row!.note ?? ''}`).to.equal(0);
        expect(row!.count, `${scenario} / ${peer}`).to.be.greaterThan(0);
        if (peer !== 'gateway') expect(row!.markCompacts ?? null, `${scenario} / ${peer}`).to.equal(null);
      }
    }
    for (const id of ['pass-through vs oauth2-proxy', 'added p99 vs oauth2-proxy', 'idle connection memory'])
      expect(results.targets.find((t) => t.id === id)?.met, id).to.be.a('boolean');
    // each judged on the rows this run wrote
    expect(evaluateTargets(structuredClone(results.rows), { wsConnections: results.parameters.wsConnections!, smoke: true })).to.deep.equal(results.targets);
  });
});

describe('bench: the notice of a busy machine', () => {
  it('is given when the load average was over the cores at the start or at the end, and only then', () => {
    expect(loadNotice({ before: [1.5, 1, 1], after: [1.9, 1, 1] }, 2)).to.equal(undefined);
    expect(loadNotice({ before: [2.4, 1, 1], after: [1.2, 1, 1] }, 2)).to.match(
      /^the machine was not quiet: load average 2\.40 at the start and 1\.20 at the end/,
    );
    expect(loadNotice({ before: [0.5, 1, 1], after: [3, 1, 1] }, 2)).to.include('over its 2 cores');
  });
});

describe('bench: a ratio round by round', () => {
  const small = (peer: string, roundRates: number[], roundCpu: number[]): Row => ({
    scenario: 'small',
    peer,
    unit: 'req/s',
    rate: [...roundRates].sort((a, b) => a - b)[roundRates.length >> 1]!,
    p50Ms: 1,
    p99Ms: 1,
    peakRssMB: 1,
    cpuUsPerUnit: [...roundCpu].sort((a, b) => a - b)[roundCpu.length >> 1]!,
    errors: 0,
    count: 1,
    rounds: roundRates.length,
    roundRates,
    roundCpu,
  });
  const targets = evaluateTargets(
    [
      small('gateway', [4000, 6000, 4500], [250, 170, 230]),
      small('bare http-proxy-3', [8000, 5000, 5000], [125, 200, 180]),
      small('oauth2-proxy', [2000, 2200, 2100], [600, 550, 575]),
    ],
    { wsConnections: 1, smoke: true },
  );

  it('shows how far the rounds of one run moved the ratio the target is judged on (the medians)', () => {
    const floor = targets.find((t) => t.id === 'pass-through vs floor')!;
    expect(floor.measured).to.equal('0.90x (4500 vs 5000; by round 0.50x to 1.20x)');
    expect(floor.met).to.equal(true);
    const perCore = targets.find((t) => t.id === 'pass-through vs oauth2-proxy')!;
    expect(perCore.measured).to.equal('2.50x (230 vs 575 us per request; 4500 vs 2100 req/s; by round 2.40x to 3.24x)');
  });

  it('is left out when a row has one round', () => {
    const one = evaluateTargets([small('gateway', [4000], [250]), small('bare http-proxy-3', [8000], [125])], { wsConnections: 1, smoke: true });
    expect(one.find((t) => t.id === 'pass-through vs floor')!.measured).to.equal('0.50x (4000 vs 8000)');
  });
});

describe('bench: the streaming full-GC target', () => {
  const row = (scenario: string, peer: string, markCompacts: number, rounds = 1): Row => ({
    scenario,
    peer,
    unit: 'MB/s',
    rate: 1,
    p50Ms: 1,
    p99Ms: 1,
    peakRssMB: 1,
    errors: 0,
    count: 1,
    rounds,
    markCompacts,
  });
  const judged = (passThrough: number, floor: number) =>
    evaluateTargets(
      [
        row('files-page', 'gateway (pass-through)', passThrough, 3),
        row('files-page', 'bare http-proxy-3', floor, 3),
        row('upload', 'gateway', 0),
        row('upload', 'bare http-proxy-3', 0),
        row('download', 'gateway', 1),
        row('download', 'bare http-proxy-3', 0),
      ],
      { wsConnections: 1, smoke: true },
    ).find((t) => t.id === 'streaming full GCs')!;

  it('is met while the gateway runs at most one more mark-compact a round than the floor', () => {
    expect(judged(5, 2).met).to.equal(true);
    expect(judged(0, 0).met).to.equal(true);
  });

  it('is missed by the streaming GC pattern (dozens of mark-compacts while a body streams)', () => {
    const t = judged(134, 3);
    expect(t.met).to.equal(false);
    expect(t.measured).to.equal('files page passed through 134 (floor 3), upload 0 (floor 0), download 1 (floor 0)');
  });
});

describe('bench: the event-stream target against nginx', () => {
  const row = (peer: string, p99Ms: number): Row => ({
    scenario: 'sse',
    peer,
    unit: 'events/s',
    rate: 1,
    p50Ms: 0.5,
    p99Ms,
    peakRssMB: 1,
    errors: 0,
    count: 1,
  });
  const judged = (rows: Row[]) => evaluateTargets(rows, { wsConnections: 1, smoke: true }).find((t) => t.id === 'sse p99 vs nginx')!;

  it('is judged on the gateway against nginx alone, and shows the node floor and oauth2-proxy beside them', () => {
    const t = judged([row('gateway', 2.03), row('nginx', 1.64), row('bare http-proxy-3', 2.09), row('oauth2-proxy', 2.19)]);
    expect(t.met).to.equal(false);
    expect(t.measured).to.equal('1.24x (2.03 vs 1.64 ms; bare http-proxy-3 2.09; oauth2-proxy 2.19)');
    expect(judged([row('gateway', 1.9), row('nginx', 1.64)])).to.include({ met: true, measured: '1.16x (1.90 vs 1.64 ms)' });
  });
});

describe('bench: --baseline=REV and BENCH_ALLOC_PROFILE_DIR (smoke mode)', function () {
  this.timeout(180_000);

  it('builds HEAD from git into its own folder and gives it a row of its own, signed in like the gateway; the peers record their allocations per request', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-baseline-'));
    try {
      const allocations = join(dir, 'alloc');
      mkdirSync(allocations);
      const { results } = await runBench(
        dir,
        ['--only=small,websocket', '--peers=gateway,bare', '--baseline=HEAD'],
        { BENCH_ALLOC_PROFILE_DIR: allocations },
        175_000,
      );
      const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
      const rows = results.rows.filter((r) => r.scenario === 'small');
      expect(rows.map((r) => r.peer)).to.include.members(['gateway', `gateway@${head}`]);
      const baseline = rows.find((r) => r.peer === `gateway@${head}`)!;
      expect(baseline.errors, baseline.note ?? '').to.equal(0);
      expect(baseline.count).to.be.greaterThan(0);
      expect(baseline.cpuUsPerUnit).to.be.greaterThan(0);
      // a WebSocket carries the baseline's own credential and Origin (a cookie session's Origin must be its own)
      const ws = results.rows.find((r) => r.scenario === 'websocket' && r.peer === `gateway@${head}`);
      expect(ws, 'websocket row of the baseline').to.not.equal(undefined);
      expect(ws!.errors, ws!.note ?? '').to.equal(0);
      // the build folder is gone with the run
      expect(readdirSync(join(root, '.tmp')).filter((f) => f.startsWith('bench-baseline-'))).to.deep.equal([]);
      // the gateway (and a baseline that has bench/alloc-profile.ts) and the bare floor wrote what
      // they allocated, with the requests they served
      const written = readdirSync(allocations).map((f) => JSON.parse(readFileSync(join(allocations, f), 'utf8')) as { name: string; requests: number });
      expect(written.filter((w) => w.name === 'gateway' && w.requests > 0)).to.have.length.of.at.least(1);
      expect(written.filter((w) => w.name === 'bare' && w.requests > 0)).to.have.length(1);
      const report = execFileSync(process.execPath, ['--import', 'tsx', join(root, 'bench/alloc-report.ts'), allocations], { cwd: root, encoding: 'utf8' });
      expect(report).to.match(/^gateway +\d+ requests, \d+ bytes allocated per request$/m);
      expect(report).to.include('bytes per request, by allocating function (gateway, bare, difference)');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bench and tests: free ports for programs that must know theirs before listening', () => {
  it('are distinct, listenable, and outside the range outgoing connections take their local ports from', async () => {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number) as [number, number];
    const ports = await freePorts(20);
    expect(new Set(ports).size).to.equal(20);
    for (const port of ports) {
      expect(port < low || port > high, `${port} in ${low}-${high}`).to.equal(true);
      const server = net.createServer();
      await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
      await new Promise((r) => server.close(r));
    }
  });
});

describe('bench: a child is ready by what it writes, not by what its log file held before', () => {
  it('a second child logging to the same file is read from where the file ended', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-log-'));
    const log = join(dir, 'peer.log');
    const say = (n: number) => ['-e', `console.log(JSON.stringify({ port: ${n} })); setTimeout(() => {}, 5000)`];
    const ready = (line: string) => (/^\{"port":(\d+)\}$/.exec(line) ? Number(JSON.parse(line).port) : undefined);
    const first = await spawnChild('first', process.execPath, say(1111), { ready, logFile: log });
    await first.child.stop();
    const second = await spawnChild('second', process.execPath, say(2222), { ready, logFile: log });
    await second.child.stop();
    rmSync(dir, { recursive: true, force: true });
    expect(first.info).to.equal(1111);
    expect(second.info).to.equal(2222);
  });
});
