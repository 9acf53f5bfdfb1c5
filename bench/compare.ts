// One scenario of `npm run bench` measured against its peers, as rows of the table: each target
// `rounds` times, interleaved (A B C, B C A, C A B...), so that a burst of load from elsewhere on
// the machine hits all of them alike; each target's row is the median round (rate, p50 and p99
// each), its peak RSS the largest, its CPU the peer's own user+system time per unit of work.
import type { Measured } from './load.js';
import type { Peer } from './peers.js';
import { cpuTimes, sleep, watchRss } from './proc.js';
import { markCompacts } from './gc-count.js';
import type { Row } from './report.js';
import type { Scenario } from './scenarios.js';

/** What a scenario measures: a peer at a URL, with the headers its credential needs. */
export interface Target {
  name: string;
  peer: Peer | undefined;
  url: string;
  headers?: Record<string, string>;
}

/**
 * One measured run of a target. A load with a warm-up calls `measuring` when the measured run
 * starts: the CPU counts from there, so a peer's JIT compiling its hot path during warm-up (the
 * gateway has more code to compile than the bare proxy) is not counted as the cost of its
 * requests. The first round of each target warms up longer (`first`).
 */
export interface Run {
  first: boolean;
  measuring: () => void;
}

export type Load = (t: Target, run: Run) => Promise<Measured>;

/** The run's measuring: the rows so far, its progress lines, where the peers count their full GCs. */
export interface Bench {
  smoke: boolean;
  gcDir: string;
  /** --peers: only the targets whose name starts with one of these */
  peerFilter: string[] | undefined;
  rows: Row[];
  say(line: string): void;
}

type Sample = Measured & { rss: number | null; cpu: number | null; user: number | null; markCompacts: number | null };

export function median(values: number[]): number {
  const finite = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (finite.length === 0) return NaN;
  const mid = finite.length >> 1;
  return finite.length % 2 ? finite[mid]! : (finite[mid - 1]! + finite[mid]!) / 2;
}

const fmt = (ms: number) => (Number.isFinite(ms) ? `${ms.toFixed(2)} ms` : '-');

/** One run of `load` against `t`, with the peer's RSS, CPU and full GCs over it. */
async function sampleOnce(b: Bench, t: Target, load: Load, first: boolean): Promise<Sample> {
  const rss = t.peer ? watchRss(() => t.peer!.pids()) : undefined;
  let cpu0 = t.peer ? cpuTimes(t.peer.pids()) : { user: 0, system: 0 };
  let gc0 = t.peer ? markCompacts(b.gcDir, t.peer.pids()) : 0;
  const measuring = () => {
    if (!t.peer) return;
    cpu0 = cpuTimes(t.peer.pids());
    gc0 = markCompacts(b.gcDir, t.peer.pids());
  };
  let m: Measured;
  try {
    m = await load(t, { first, measuring });
  } catch (e) {
    m = { rate: 0, p50: NaN, p99: NaN, errors: 1, count: 0, units: 0, note: (e as Error).message };
  }
  if (m.count === 0 && m.errors === 0) m = { ...m, errors: 1, note: m.note ?? 'no successful response' };
  const cpu1 = t.peer ? cpuTimes(t.peer.pids()) : undefined;
  return {
    ...m,
    rss: rss ? rss.stop() : null,
    cpu: cpu1 ? cpu1.user + cpu1.system - cpu0.user - cpu0.system : null,
    user: cpu1 ? cpu1.user - cpu0.user : null,
    markCompacts: t.peer?.countsGc ? markCompacts(b.gcDir, t.peer.pids()) - gc0 : null,
  };
}

/** A sample's progress line. */
function sampleLine(scenario: Scenario, unit: Row['unit'], t: Target, s: Sample): string {
  const cpu =
    s.cpu === null ? '-' : `${((s.cpu * 1000) / Math.max(1, s.units)).toFixed(0)} us/unit (user ${((s.user! * 1000) / Math.max(1, s.units)).toFixed(0)})`;
  return (
    `  ${scenario.padEnd(15)} ${t.name.padEnd(24)} ${s.rate.toFixed(1).padStart(9)} ${unit}  p50 ${fmt(s.p50)}  p99 ${fmt(s.p99)}  rss ${s.rss?.toFixed(0) ?? '-'} MB  cpu ${cpu}` +
    `${s.markCompacts === null ? '' : `  full GCs ${s.markCompacts}`}${s.errors ? `  errors ${s.errors}` : ''}${s.note ? `  (${s.note})` : ''}`
  );
}

/** A target's row: the median round, the largest RSS, the CPU of all rounds per unit of work. */
function rowOf(scenario: Scenario, unit: Row['unit'], t: Target, list: Sample[], cpuPerUnit: boolean): Row {
  const units = list.reduce((a, x) => a + x.units, 0);
  const cpu = list.every((x) => x.cpu !== null) ? list.reduce((a, x) => a + x.cpu!, 0) : null;
  const user = list.every((x) => x.user !== null) ? list.reduce((a, x) => a + x.user!, 0) : null;
  const notes = [...new Set(list.map((x) => x.note).filter(Boolean))];
  return {
    scenario,
    peer: t.name,
    unit,
    rate: median(list.map((x) => x.rate)),
    p50Ms: median(list.map((x) => x.p50)),
    p99Ms: median(list.map((x) => x.p99)),
    peakRssMB: list.some((x) => x.rss !== null) ? Math.max(...list.map((x) => x.rss ?? 0)) : null,
    cpuUsPerUnit: cpu !== null && cpuPerUnit && units > 0 ? (cpu * 1000) / units : null,
    userUsPerUnit: user !== null && cpuPerUnit && units > 0 ? (user * 1000) / units : null,
    markCompacts: list.every((x) => x.markCompacts !== null) ? list.reduce((a, x) => a + x.markCompacts!, 0) : null,
    errors: list.reduce((a, x) => a + x.errors, 0),
    count: list.reduce((a, x) => a + x.count, 0),
    rounds: list.length,
    roundRates: list.map((x) => x.rate),
    roundCpu: list.map((x) => (x.cpu !== null && cpuPerUnit && x.units > 0 ? (x.cpu * 1000) / x.units : null)),
    ...(notes.length ? { note: notes.join('; ') } : {}),
  };
}

/** Measures every target `rounds` times, interleaved, and adds their rows to `b.rows`. */
export async function compare(b: Bench, scenario: Scenario, unit: Row['unit'], all: Target[], load: Load, rounds: number, cpuPerUnit = true): Promise<void> {
  const targets = b.peerFilter ? all.filter((t) => b.peerFilter!.some((f) => t.name.startsWith(f))) : all;
  const samples = new Map<Target, Sample[]>();
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < targets.length; i++) {
      const t = targets[(i + r) % targets.length]!;
      const sample = await sampleOnce(b, t, load, r === 0);
      samples.set(t, [...(samples.get(t) ?? []), sample]);
      b.say(sampleLine(scenario, unit, t, sample));
      await sleep(b.smoke ? 50 : 300); // let the previous peer's sockets settle
    }
  }
  for (const t of targets) b.rows.push(rowOf(scenario, unit, t, samples.get(t) ?? [], cpuPerUnit));
}
