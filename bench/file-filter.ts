// The streamed file filter (gateway/enforcement/file-stream-filter.ts) before and after a change, in
// one process: the same pages, the two filters interleaved round by round, so that load from
// elsewhere on a shared machine hits both alike. Prints the CPU time (the process's user + system:
// steadier than the clock where other work takes turns on the cores) in ns per byte of body for
// each, the median of the rounds with the fastest and slowest round, and their ratio round by round.
//   node --import tsx bench/file-filter.ts [--baseline=REV] [--candidate=REV] [--rounds=20] [--pages=200] [--chunk=65536]
// The baseline (default HEAD) is exported with `git archive` into a folder under .tmp/, read from
// there and removed at the end: the old code is never written into the repository's sources. The
// candidate is the work tree, or another revision exported the same way (the baseline itself
// once more shows what the machine's noise alone makes of the ratio).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    baseline: { type: 'string', default: 'HEAD' },
    candidate: { type: 'string' },
    rounds: { type: 'string', default: '20' },
    pages: { type: 'string', default: '200' },
    chunk: { type: 'string', default: '65536' },
  },
});
const ROUNDS = Number(opts.rounds);
const PAGES = Number(opts.pages);
const CHUNK = Number(opts.chunk);
const CALLER = 'b3f0c9e2-5d1a-4c6b-9e7f-000000000001';
const OTHER = 'c47d1e0a-2b3c-4d5e-8f90-000000000002';

interface Filter {
  write(buf: Buffer): void;
  end(): { body: Buffer; kept: number; removed: number };
}
type FilterClass = new (shape: 'list' | 'array', callerId: string) => Filter;

/** One record as Open WebUI lists it; every seventh another user's, some names with escapes and non-ASCII. */
function fileRecord(i: number): object {
  const id = `f${String(i).padStart(7, '0')}-7c2e-4d8a-9b1f-3a5e6c7d8e9f`;
  const name = i % 5 === 0 ? `Quartalsbericht "Q${i % 4}" \\ Übersicht\n${i}.pdf` : i % 3 === 0 ? `résumé-${i}.docx` : `report-${i}.pdf`;
  return {
    id,
    user_id: i % 7 === 3 ? OTHER : CALLER,
    hash: `${((i * 2654435761) >>> 0).toString(16).padStart(8, '0')}a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff`.slice(0, 64),
    filename: name,
    data: { status: 'completed' },
    meta: { name, content_type: 'application/pdf', size: 10_000 + i * 37, collection_name: `file-${id}` },
    access_control: null,
    created_at: 1_735_689_600 + i,
    updated_at: 1_735_689_600 + i,
  };
}

/** A list page of `count` records cut into socket-sized chunks, each a view into one buffer at an odd offset (chunks start anywhere in memory). */
function page(count: number, first: number, escaped: boolean): { chunks: Buffer[]; bytes: number } {
  const items = Array.from({ length: count }, (_, k) => fileRecord(first + k));
  // JSON.stringify writes non-ASCII as is; on some pages 'é' as Python's json.dumps writes it, \u00e9
  const text = JSON.stringify({ items, total: 5_000 }).replace(/é/g, (c) => (escaped ? '\\u00e9' : c));
  const body = Buffer.from(text);
  const backing = Buffer.alloc(body.length + 3);
  body.copy(backing, 3);
  const chunks: Buffer[] = [];
  for (let at = 0; at < body.length; at += CHUNK) chunks.push(backing.subarray(3 + at, 3 + Math.min(body.length, at + CHUNK)));
  return { chunks, bytes: body.length };
}

type Run = (Filter: FilterClass, pages: { chunks: Buffer[] }[], n: number, caller: string) => number;
/**
 * A loop that filters `n` pages, compiled anew for each filter: V8 keeps what it learns per
 * function, so a loop shared by both would see two classes at its calls and serve neither as
 * the gateway's own caller, which only ever sees one.
 */
const runner = (): Run =>
  new Function(
    'Filter',
    'pages',
    'n',
    'caller',
    `let kept = 0;
    for (let k = 0; k < n; k++) {
      const f = new Filter('list', caller);
      for (const chunk of pages[k % pages.length].chunks) f.write(chunk);
      kept += f.end().kept;
    }
    return kept;`,
  ) as Run;

async function load(dir: string): Promise<FilterClass> {
  const mod = (await import(pathToFileURL(join(dir, 'gateway/enforcement/file-stream-filter.ts')).href)) as { FileStreamFilter: FilterClass };
  return mod.FileStreamFilter;
}

const short = (rev: string) => execFileSync('git', ['rev-parse', '--short', `${rev}^{commit}`], { cwd: root, encoding: 'utf8' }).trim();
mkdirSync(join(root, '.tmp'), { recursive: true });
const dirs: string[] = [];
/** The sources of `rev` in a folder under .tmp/ (node_modules resolves from there). */
function exported(rev: string): string {
  const dir = mkdtempSync(join(root, '.tmp', `file-filter-${rev}-`));
  dirs.push(dir);
  execFileSync('sh', ['-c', `git archive --format=tar ${rev} gateway policies config | tar -x -C "${dir}"`], { cwd: root });
  return dir;
}
try {
  const base = short(opts.baseline);
  const cand = opts.candidate === undefined ? undefined : short(opts.candidate);
  const candLabel = cand === undefined ? 'work tree' : 'candidate';
  const filters: [string, FilterClass, Run][] = [
    [`baseline ${base}`, await load(exported(base)), runner()],
    [cand === undefined ? 'work tree' : `candidate ${cand}`, await load(cand === undefined ? root : exported(cand)), runner()],
  ];
  const sizes = [50, 1_000];
  // a few distinct pages per size, cycled: different bytes without holding 200 large pages
  const sets = sizes.map((size) => Array.from({ length: 8 }, (_, p) => page(size, p * size, p % 2 === 1)));
  for (const set of sets) {
    for (const p of set) {
      const out = filters.map(([, F]) => {
        const f = new F('list', CALLER);
        for (const chunk of p.chunks) f.write(chunk);
        return f.end();
      });
      if (!out[0]!.body.equals(out[1]!.body) || out[0]!.kept !== out[1]!.kept || out[0]!.removed !== out[1]!.removed) {
        throw new Error('the two filters answer differently');
      }
    }
  }
  // warm-up: both compiled by the optimizing tier before anything is counted
  for (let w = 0; w < 3; w++) for (const [, F, run] of filters) for (const set of sets) run(F, set, PAGES, CALLER);

  const nsPerByte = sizes.map(() => filters.map((): number[] => []));
  for (let r = 0; r < ROUNDS; r++) {
    // alternate which runs first, so neither always follows the other's garbage
    const order = r % 2 === 0 ? [0, 1] : [1, 0];
    sets.forEach((set, s) => {
      const bytes = Array.from({ length: PAGES }, (_, k) => set[k % set.length]!.bytes).reduce((a, b) => a + b, 0);
      for (const f of order) {
        const t0 = process.cpuUsage();
        const [, F, run] = filters[f]!;
        run(F, set, PAGES, CALLER);
        const t = process.cpuUsage(t0);
        nsPerByte[s]![f]!.push(((t.user + t.system) * 1000) / bytes);
      }
    });
  }

  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  const fmt = (x: number) => x.toFixed(3);
  console.log(`${ROUNDS} interleaved rounds x ${PAGES} pages, ${CHUNK}-byte chunks, node ${process.version}`);
  sizes.forEach((size, s) => {
    const pageBytes = Math.round(sets[s]!.reduce((a, p) => a + p.bytes, 0) / sets[s]!.length);
    console.log(`\n${size} records a page (${pageBytes} bytes on average); CPU ns per byte: median [fastest, slowest]`);
    filters.forEach(([name], f) => {
      const xs = nsPerByte[s]![f]!;
      console.log(`  ${name.padEnd(18)} ${fmt(median(xs))}  [${fmt(Math.min(...xs))}, ${fmt(Math.max(...xs))}]`);
    });
    const ratios = nsPerByte[s]![1]!.map((x, r) => x / nsPerByte[s]![0]![r]!);
    console.log(`  ${candLabel} / baseline, round by round: median ${fmt(median(ratios))}  [${fmt(Math.min(...ratios))}, ${fmt(Math.max(...ratios))}]`);
  });
} finally {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
