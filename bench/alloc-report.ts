// Reads the files BENCH_ALLOC_PROFILE_DIR collected (bench/alloc-profile.ts) and prints, per
// process, the bytes allocated per request, then, by allocating function, where the gateway
// allocates more per request than the bare http-proxy-3 floor.
//   node --import tsx bench/alloc-report.ts DIR [rows]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: ProfileNode[];
}
interface Collected {
  name: string;
  requests: number;
  profile: { head: ProfileNode };
}

const dir = process.argv[2];
if (!dir) throw new Error('usage: bench/alloc-report.ts DIR [rows]');
const rows = Number(process.argv[3] ?? 30);

const where = (f: ProfileNode['callFrame']) =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(bench-build-[^/]+|out)\//, '')}:${f.lineNumber + 1}`;

function perRequest(c: Collected): { total: number; by: Map<string, number> } {
  const by = new Map<string, number>();
  let total = 0;
  const walk = (n: ProfileNode) => {
    total += n.selfSize;
    if (n.selfSize) by.set(where(n.callFrame), (by.get(where(n.callFrame)) ?? 0) + n.selfSize);
    for (const child of n.children ?? []) walk(child);
  };
  walk(c.profile.head);
  const n = Math.max(1, c.requests);
  for (const [k, v] of by) by.set(k, v / n);
  return { total: total / n, by };
}

const collected = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Collected);
for (const c of collected) console.log(`${c.name.padEnd(12)} ${c.requests} requests, ${Math.round(perRequest(c).total)} bytes allocated per request`);
const gateway = collected.find((c) => c.name === 'gateway');
const bare = collected.find((c) => c.name === 'bare');
if (gateway && bare) {
  const g = perRequest(gateway).by;
  const b = perRequest(bare).by;
  const diff = [...new Set([...g.keys(), ...b.keys()])].map((k) => ({ k, g: g.get(k) ?? 0, b: b.get(k) ?? 0 })).sort((x, y) => y.g - y.b - (x.g - x.b));
  console.log('\nbytes per request, by allocating function (gateway, bare, difference)');
  for (const d of diff.slice(0, rows))
    console.log(
      `${Math.round(d.g).toString().padStart(7)} ${Math.round(d.b).toString().padStart(7)} ${Math.round(d.g - d.b)
        .toString()
        .padStart(7)}  ${d.k}`,
    );
}
