// The bench's table and its targets, judged on ratios measured in the same run.
export interface Row {
  scenario: string;
  peer: string;
  unit: 'req/s' | 'MB/s' | 'events/s' | 'echo/s' | 'conns';
  rate: number;
  p50Ms: number;
  p99Ms: number;
  /** peak resident memory of the peer's processes during this row, MB; null for direct */
  peakRssMB: number | null;
  /** the peer's own CPU time (user + system, all its processes) per unit of work, microseconds */
  cpuUsPerUnit?: number | null;
  /** the user-space part of cpuUsPerUnit (the rest is the kernel's: syscalls, TCP on loopback) */
  userUsPerUnit?: number | null;
  /** V8 mark-compacts (full GCs) the peer ran during the measured runs, all rounds; null where not counted (nginx) */
  markCompacts?: number | null;
  /** idle scenario: the peer's RSS growth per idle keep-alive connection held (median round), bytes */
  bytesPerConnection?: number | null;
  errors: number;
  count: number;
  /** measurements taken (interleaved with the other peers); the row is their median */
  rounds?: number;
  /** each round's rate, in the order taken: round r of every peer ran in the same rotation */
  roundRates?: number[];
  /** each round's CPU per unit, microseconds (null where not counted) */
  roundCpu?: Array<number | null>;
  note?: string;
  vsNginx?: number | null;
  vsDirect?: number | null;
  /** the targets judged on this row: "id: yes|no" */
  target?: string;
}

export interface Target {
  id: string;
  scenario: string;
  goal: string;
  measured: string;
  /** null: not measured in this run (peer absent, scenario not selected) */
  met: boolean | null;
}

export interface Results {
  date: string;
  mode: 'smoke' | 'full';
  machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string; nginx: string | null; loadGenerator: string; oauth2Proxy?: string | null };
  gatewayCredential: string;
  /** the node peers ran compiled (as the image runs the gateway) or through tsx */
  peersRunAs: string;
  parameters: Record<string, number>;
  notices: string[];
  /** the machine's load average (1, 5 and 15 minutes) when the run began and when it ended */
  load: { before: number[]; after: number[] };
  rows: Row[];
  targets: Target[];
  seconds: number;
}

const isGateway = (peer: string) => peer.startsWith('gateway');

/** The gateway's small requests per core against oauth2-proxy's: at least this many times. */
const O2P_PER_CORE = 2.5;

/**
 * A notice when the machine was busy with other work (load average over its cores at the start or
 * at the end): the ratios of such a run are the ones to distrust.
 */
export function loadNotice(load: Results['load'], cores: number): string | undefined {
  const [before = 0] = load.before;
  const [after = 0] = load.after;
  if (before <= cores && after <= cores) return undefined;
  return `the machine was not quiet: load average ${before.toFixed(2)} at the start and ${after.toFixed(2)} at the end (1 minute), over its ${cores} cores: other work shared them, so compare ratios within this run only, and trust them less`;
}

const loads = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');

const ok = (r: Row | undefined): r is Row => r !== undefined && r.errors === 0 && r.count > 0;
const cpuOf = (r: Row | undefined) => (ok(r) && r.cpuUsPerUnit != null ? r.cpuUsPerUnit : undefined);

/** Each row's ratio to nginx (the same worker count) and to direct, in its scenario. */
function setRatios(rows: Row[]): void {
  const find = (scenario: string, peer: string) => rows.find((r) => r.scenario === scenario && r.peer === peer);
  for (const r of rows) {
    const nginx =
      r.scenario === 'small-workers'
        ? rows.find((x) => x.scenario === r.scenario && x.peer.startsWith('nginx x'))
        : r.scenario === 'auth-providers'
          ? find(r.scenario, 'nginx (static file)')
          : find(r.scenario, 'nginx');
    const direct = find(r.scenario, 'direct');
    r.vsNginx = ok(nginx) && nginx !== r ? r.rate / nginx.rate : null;
    r.vsDirect = ok(direct) && direct !== r ? r.rate / direct.rate : null;
  }
}

/** The run's rows as the targets read them, and the two common kinds of target: a ratio of rates, an added latency. */
class TargetList {
  readonly targets: Target[] = [];
  constructor(private readonly rows: Row[]) {}

  find(scenario: string, peer: string): Row | undefined {
    return this.rows.find((r) => r.scenario === scenario && r.peer === peer);
  }

  /** The one-worker gateway's row of a scenario. */
  gw(scenario: string): Row | undefined {
    return this.find(scenario, 'gateway');
  }

  /** The first row of a scenario whose peer starts with `peer`. */
  startingWith(scenario: string, peer: string): Row | undefined {
    return this.rows.find((r) => r.scenario === scenario && r.peer.startsWith(peer));
  }

  gatewayRows(): Row[] {
    return this.rows.filter((r) => r.peer === 'gateway' && r.peakRssMB !== null);
  }

  push(target: Target): void {
    this.targets.push(target);
  }

  ratio(id: string, scenario: string, gw: Row | undefined, ref: Row | undefined, refName: string, min: number): void {
    const met = ok(gw) && ok(ref) ? gw.rate / ref.rate >= min : null;
    this.push({
      id,
      scenario,
      goal: `>= ${min}x ${refName} (${gw?.unit ?? ''})`,
      measured:
        ok(gw) && ok(ref)
          ? `${(gw.rate / ref.rate).toFixed(2)}x (${gw.rate.toFixed(0)} vs ${ref.rate.toFixed(0)}${byRound(gw.roundRates, ref.roundRates)})`
          : notMeasured(gw, ref),
      met: gw && !ok(gw) ? false : met,
    });
  }

  added(id: string, scenario: string, gw: Row | undefined, ref: Row | undefined, refName: string, field: 'p50Ms' | 'p99Ms', max: number): void {
    const d = ok(gw) && ok(ref) ? gw[field] - ref[field] : undefined;
    this.push({
      id,
      scenario,
      goal: `added ${field.slice(0, 3)} <= ${max} ms vs ${refName}`,
      measured: d !== undefined ? `+${d.toFixed(2)} ms (${gw![field].toFixed(2)} vs ${ref![field].toFixed(2)})` : notMeasured(gw, ref),
      met: gw && !ok(gw) ? false : d === undefined ? null : d <= max,
    });
  }
}

function passThroughTargets(t: TargetList): void {
  t.ratio('pass-through vs floor', 'small', t.gw('small'), t.find('small', 'bare http-proxy-3'), 'bare http-proxy-3', 0.8);
  t.ratio('pass-through vs nginx', 'small', t.gw('small'), t.find('small', 'nginx'), 'nginx (1 worker)', 0.4);
  t.added('pass-through p50', 'small-latency', t.gw('small-latency'), t.find('small-latency', 'direct'), 'direct', 'p50Ms', 1);
  t.added('pass-through p99', 'small-latency', t.gw('small-latency'), t.find('small-latency', 'direct'), 'direct', 'p99Ms', 5);
  const nginxMulti = t.startingWith('small-workers', 'nginx x');
  t.ratio('workers vs nginx', 'small-workers', t.startingWith('small-workers', 'gateway x'), nginxMulti, nginxMulti?.peer ?? 'nginx with as many workers', 0.8);
}

/**
 * The same ratio round by round (round r of each peer ran in the same rotation, seconds apart), as
 * "; by round 0.56x to 1.06x": how far this machine moved it within the run. Empty with fewer than
 * two rounds on either side.
 */
export function byRound(num: Array<number | null> | undefined, den: Array<number | null> | undefined): string {
  if (!num || !den || num.length < 2 || num.length !== den.length) return '';
  const ratios: number[] = [];
  for (let i = 0; i < num.length; i++) {
    const a = num[i];
    const b = den[i];
    if (a == null || b == null || !(b > 0) || !Number.isFinite(a / b)) return '';
    ratios.push(a / b);
  }
  return `; by round ${Math.min(...ratios).toFixed(2)}x to ${Math.max(...ratios).toFixed(2)}x`;
}

function filesRewriteTargets(t: TargetList): void {
  const rewrite = t.gw('files-page');
  const passed = t.find('files-page', 'gateway (pass-through)');
  t.added('files rewrite p50', 'files-page', rewrite, passed, 'the same page passed through', 'p50Ms', 5);
  // The rewrite's CPU per request at most 3x passing the same page through.
  const measured = cpuOf(rewrite) !== undefined && cpuOf(passed) !== undefined;
  t.push({
    id: 'files rewrite CPU',
    scenario: 'files-page',
    goal: 'CPU per request <= 3x the same page passed through',
    measured: measured
      ? `${(cpuOf(rewrite)! / cpuOf(passed)!).toFixed(2)}x (${cpuOf(rewrite)!.toFixed(0)} vs ${cpuOf(passed)!.toFixed(0)} us)`
      : notMeasured(rewrite, passed),
    met: measured ? cpuOf(rewrite)! <= 3 * cpuOf(passed)! : rewrite && !ok(rewrite) ? false : null,
  });
}

/** Against oauth2-proxy, per core (CPU per request: the machine's cores are shared with the load generator and the upstream, so req/s alone says how the scheduler split them). */
function oauth2ProxyTargets(t: TargetList): void {
  const small = t.gw('small');
  const o2pSmall = t.find('small', 'oauth2-proxy');
  const perCore = cpuOf(small) !== undefined && cpuOf(o2pSmall) !== undefined;
  t.push({
    id: 'pass-through vs oauth2-proxy',
    scenario: 'small',
    goal: `>= ${O2P_PER_CORE}x oauth2-proxy requests per second per core (1 / CPU per request)`,
    measured: perCore
      ? `${(cpuOf(o2pSmall)! / cpuOf(small)!).toFixed(2)}x (${cpuOf(small)!.toFixed(0)} vs ${cpuOf(o2pSmall)!.toFixed(0)} us per request; ${small!.rate.toFixed(0)} vs ${o2pSmall!.rate.toFixed(0)} req/s${byRound(o2pSmall!.roundCpu, small!.roundCpu)})`
      : notMeasured(small, o2pSmall),
    met: perCore ? cpuOf(o2pSmall)! / cpuOf(small)! >= O2P_PER_CORE : null,
  });
  const lat = t.gw('small-latency');
  const o2pLat = t.find('small-latency', 'oauth2-proxy');
  const directLat = t.find('small-latency', 'direct');
  const measurable = ok(lat) && ok(o2pLat) && ok(directLat);
  t.push({
    id: 'added p99 vs oauth2-proxy',
    scenario: 'small-latency',
    goal: "added p99 (vs direct) <= oauth2-proxy's",
    measured: measurable ? `+${(lat.p99Ms - directLat.p99Ms).toFixed(2)} ms vs +${(o2pLat.p99Ms - directLat.p99Ms).toFixed(2)} ms` : notMeasured(lat, o2pLat),
    met: measurable ? lat.p99Ms - directLat.p99Ms <= o2pLat.p99Ms - directLat.p99Ms : null,
  });
}

function streamingTargets(t: TargetList): void {
  for (const s of ['upload', 'download']) {
    const g = t.gw(s);
    const limit = 150;
    t.push({
      id: `${s} RSS`,
      scenario: s,
      goal: `gateway peak RSS < ${limit} MB`,
      measured: g?.peakRssMB != null ? `${g.peakRssMB.toFixed(0)} MB` : 'not measured',
      met: g?.peakRssMB != null && ok(g) ? g.peakRssMB < limit : g ? false : null,
    });
    t.ratio(`${s} throughput`, s, g, t.find(s, 'nginx'), 'nginx', 0.7);
    t.ratio(`${s} vs oauth2-proxy`, s, g, t.find(s, 'oauth2-proxy'), 'oauth2-proxy', 1.0);
  }
  // Streaming must not set off full GCs the floor does not run (the pattern: dozens of
  // mark-compacts a second once the heap had JSON work, each freeing nothing).
  const streamed: Array<[string, Row | undefined, Row | undefined]> = [
    ['files page passed through', t.find('files-page', 'gateway (pass-through)'), t.find('files-page', 'bare http-proxy-3')],
    ['upload', t.gw('upload'), t.find('upload', 'bare http-proxy-3')],
    ['download', t.gw('download'), t.find('download', 'bare http-proxy-3')],
  ];
  const counted = streamed.filter(([, g, b]) => g?.markCompacts != null && b?.markCompacts != null);
  t.push({
    id: 'streaming full GCs',
    scenario: 'download',
    goal: "gateway mark-compacts while streaming <= the bare floor's + 1 per round",
    measured: counted.length ? counted.map(([what, g, b]) => `${what} ${g!.markCompacts} (floor ${b!.markCompacts})`).join(', ') : 'not measured',
    met: counted.length ? counted.every(([, g, b]) => g!.markCompacts! <= b!.markCompacts! + (g!.rounds ?? 1)) : null,
  });
}

function sseTargets(t: TargetList): void {
  const sse = t.gw('sse');
  t.push({
    id: 'sse p99',
    scenario: 'sse',
    goal: 'event upstream -> client p99 <= 5 ms',
    measured: ok(sse) ? `${sse.p99Ms.toFixed(2)} ms` : notMeasured(sse, sse),
    met: sse ? ok(sse) && sse.p99Ms <= 5 : null,
  });
  // The p99 no more than 1.2x nginx's in the same run (each the median of its rounds).
  const sseNginx = t.find('sse', 'nginx');
  // The node floor's and oauth2-proxy's p99 beside it: what a proxy other than nginx reaches here.
  const sseOthers = [t.find('sse', 'bare http-proxy-3'), t.find('sse', 'oauth2-proxy')]
    .filter((r): r is Row => ok(r))
    .map((r) => `; ${r.peer} ${r.p99Ms.toFixed(2)}`)
    .join('');
  t.push({
    id: 'sse p99 vs nginx',
    scenario: 'sse',
    goal: "event upstream -> client p99 <= 1.2x nginx's",
    measured:
      ok(sse) && ok(sseNginx)
        ? `${(sse.p99Ms / sseNginx.p99Ms).toFixed(2)}x (${sse.p99Ms.toFixed(2)} vs ${sseNginx.p99Ms.toFixed(2)} ms${sseOthers})`
        : notMeasured(sse, sseNginx),
    met: ok(sse) && ok(sseNginx) ? sse.p99Ms <= 1.2 * sseNginx.p99Ms : sse && !ok(sse) ? false : null,
  });
}

function websocketTargets(t: TargetList, wsConnections: number): void {
  const ws = t.gw('websocket');
  const held = ws?.note ? Number(/^(\d+)\//.exec(ws.note)?.[1] ?? 0) : 0;
  t.push({
    id: 'websocket held',
    scenario: 'websocket',
    goal: `${wsConnections} idle connections held`,
    measured: ws ? `${held}/${wsConnections}` : 'not measured',
    met: ws ? held === wsConnections : null,
  });
  t.added('websocket echo p50', 'websocket', ws, t.find('websocket', 'direct'), 'direct', 'p50Ms', 1);
}

const perConnection = (r: Row | undefined) =>
  ok(r) && r.bytesPerConnection != null && Number.isFinite(r.bytesPerConnection) ? r.bytesPerConnection : undefined;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

function memoryTargets(t: TargetList): void {
  // An idle keep-alive connection costs at most 2x what it costs the bare floor.
  const idleGw = t.gw('idle');
  const idleBare = t.find('idle', 'bare http-proxy-3');
  const [mine, floor, nginx] = [idleGw, idleBare, t.find('idle', 'nginx')].map(perConnection);
  t.push({
    id: 'idle connection memory',
    scenario: 'idle',
    goal: "RSS per idle keep-alive connection <= 2x the bare floor's",
    measured:
      mine !== undefined && floor !== undefined
        ? `${kb(mine)} vs ${kb(floor)} (${(mine / Math.max(1, floor)).toFixed(2)}x)${nginx !== undefined ? `; nginx ${kb(nginx)}` : ''}`
        : notMeasured(idleGw, idleBare),
    met: mine !== undefined && floor !== undefined ? mine <= 2 * Math.max(floor, 1) : idleGw && !ok(idleGw) ? false : null,
  });
  // Peak RSS under 150 MB in every scenario, in the order the run took them (the
  // one-worker gateway; the idle scenario's is its fresh process).
  const peaks = t.gatewayRows();
  const over = peaks.filter((r) => r.peakRssMB! >= 150);
  t.push({
    id: 'peak RSS, every scenario',
    scenario: 'all',
    goal: 'gateway peak RSS < 150 MB in every scenario of the run',
    measured: peaks.length
      ? `largest ${Math.max(...peaks.map((r) => r.peakRssMB!)).toFixed(0)} MB${over.length ? ` (over: ${over.map((r) => `${r.scenario} ${r.peakRssMB!.toFixed(0)}`).join(', ')})` : ''}`
      : 'not measured',
    met: peaks.length ? over.length === 0 : null,
  });
}

/** Each gateway row names whether the targets judged on it were met. */
function labelRows(rows: Row[], targets: Target[]): void {
  for (const r of rows) {
    if (!isGateway(r.peer) || r.peer === 'gateway (pass-through)') continue;
    const mine = targets.filter((t) => t.scenario === r.scenario && (r.peer === 'gateway' ? true : r.peer.startsWith('gateway x')));
    if (mine.length) r.target = mine.map((t) => `${t.met === null ? '?' : t.met ? 'yes' : 'NO'}`).join(' ');
  }
}

export function evaluateTargets(rows: Row[], o: { wsConnections: number; smoke: boolean }): Target[] {
  setRatios(rows);
  const t = new TargetList(rows);
  passThroughTargets(t);
  filesRewriteTargets(t);
  oauth2ProxyTargets(t);
  streamingTargets(t);
  sseTargets(t);
  websocketTargets(t, o.wsConnections);
  memoryTargets(t);
  t.ratio(
    'auth-providers vs static',
    'auth-providers',
    t.gw('auth-providers'),
    t.find('auth-providers', 'nginx (static file)'),
    'nginx serving a static file',
    0.5,
  );
  labelRows(rows, t.targets);
  return t.targets;
}

function notMeasured(gw: Row | undefined, ref: Row | undefined): string {
  if (!gw) return 'not measured';
  if (!ref) return 'no reference row';
  const bad = [gw, ref].find((r) => r.errors > 0 || r.count === 0);
  return bad ? `${bad.peer} failed: ${bad.errors} errors${bad.note ? ` (${bad.note})` : ''}` : 'not measured';
}

const num = (n: number | null | undefined, digits = 2) => (n === null || n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(digits));

export function tableLines(r: Results): string[] {
  const header = [
    'scenario',
    'peer',
    'rate',
    'unit',
    'p50 ms',
    'p99 ms',
    'peak RSS MB',
    'CPU us/unit',
    'user us/unit',
    'full GCs',
    'vs nginx',
    'vs direct',
    'KB/idle conn',
    'target met',
  ];
  const body = r.rows.map((x) => [
    x.scenario,
    x.peer,
    num(x.rate, x.unit === 'MB/s' ? 0 : 0),
    x.unit,
    num(x.p50Ms),
    num(x.p99Ms),
    num(x.peakRssMB, 0),
    num(x.cpuUsPerUnit, 0),
    num(x.userUsPerUnit, 0),
    num(x.markCompacts, 0),
    num(x.vsNginx),
    num(x.vsDirect),
    x.bytesPerConnection == null ? '' : num(x.bytesPerConnection / 1024, 1),
    (x.target ?? '') + (x.errors ? ` (${x.errors} errors)` : ''),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i >= 2 && i <= 12 && i !== 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  return [line(header), `|${widths.map((w, i) => (i >= 2 && i <= 12 && i !== 3 ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2))).join('|')}|`, ...body.map(line)];
}

export function targetLines(r: Results): string[] {
  const header = ['target', 'goal', 'measured', 'met'];
  const body = r.targets.map((t) => [t.id, t.goal, t.measured, t.met === null ? 'not measured' : t.met ? 'yes' : 'NO']);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)];
}

export function printTable(r: Results): void {
  const out = [
    '',
    `Benchmark ${r.mode} run, ${r.date}: ${r.machine.cpus} x ${r.machine.cpuModel}, ${r.machine.memoryGiB} GiB, node ${r.machine.node}, ${r.machine.nginx ?? 'no nginx'}, ${r.machine.oauth2Proxy ? `oauth2-proxy ${r.machine.oauth2Proxy}` : 'no oauth2-proxy'}, load from ${r.machine.loadGenerator}`,
    `Gateway credential: ${r.gatewayCredential}; node peers run ${r.peersRunAs === 'compiled' ? 'compiled with tsc (as the image runs them)' : 'through tsx'}`,
    `Load average (1, 5, 15 minutes): ${loads(r.load.before)} before the run, ${loads(r.load.after)} after it (${r.machine.cpus} cores)`,
    ...r.notices.map((n) => `NOTICE: ${n}`),
    '',
    ...tableLines(r),
    '',
    ...targetLines(r),
    ...(r.mode === 'smoke' ? ['', 'Smoke run: proves the harness works; its numbers are not a measurement.'] : []),
    '',
  ];
  process.stdout.write(out.join('\n'));
}
