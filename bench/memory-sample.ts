// BENCH_MEMORY_DIR=DIR: each node peer appends, once a second, the largest RSS it had in that
// second and what it was made of (V8's heap spaces, memory outside the heap, array buffers) to
// DIR/<name>-<pid>.jsonl, so that a peak RSS in the table can be taken apart afterwards (where the gateway's memory goes in the websocket and idle scenarios). Off unless set.
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapSpaceStatistics } from 'node:v8';

const MB = 2 ** 20;

export function sampleMemory(name: string): void {
  const dir = process.env.BENCH_MEMORY_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${process.pid}.jsonl`);
  let peak: Record<string, number> | undefined;
  const sample = setInterval(() => {
    const m = process.memoryUsage();
    if (peak && m.rss <= peak.rss! * MB) return;
    const spaces: Record<string, number> = {};
    for (const s of getHeapSpaceStatistics()) spaces[s.space_name.replace(/_space$/, '')] = Math.round(s.physical_space_size / MB);
    peak = {
      t: Math.round(performance.timeOrigin + performance.now()),
      rss: Math.round(m.rss / MB),
      heapTotal: Math.round(m.heapTotal / MB),
      heapUsed: Math.round(m.heapUsed / MB),
      external: Math.round(m.external / MB),
      arrayBuffers: Math.round(m.arrayBuffers / MB),
      ...spaces,
    };
  }, 50);
  const flush = setInterval(() => {
    if (peak) appendFileSync(file, JSON.stringify(peak) + '\n');
    peak = undefined;
  }, 1000);
  sample.unref();
  flush.unref();
}
