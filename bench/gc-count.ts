// BENCH_GC_DIR=DIR (the bench sets it for every node peer): each mark-compact (V8's full,
// old-generation collection) a process runs appends one byte to DIR/<pid>, so the bench can count
// them per measurement by pid, like CPU time (bench/proc.ts). A mark-compact during streaming is
// what must stay gone; counting them in every run keeps it visible instead of a one-off trace.
import { appendFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PerformanceObserver, constants } from 'node:perf_hooks';

export function countMarkCompacts(): void {
  const dir = process.env.BENCH_GC_DIR;
  if (!dir) return;
  const file = join(dir, String(process.pid));
  const observer = new PerformanceObserver((list) => {
    let n = 0;
    for (const e of list.getEntries()) if ((e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) n++;
    if (n) appendFileSync(file, '.'.repeat(n));
  });
  observer.observe({ entryTypes: ['gc'] });
}

/** Mark-compacts the processes `pids` ran so far (BENCH_GC_DIR). */
export function markCompacts(dir: string, pids: number[]): number {
  let n = 0;
  for (const pid of pids) {
    try {
      n += statSync(join(dir, String(pid))).size;
    } catch {
      // no file: none yet
    }
  }
  return n;
}
