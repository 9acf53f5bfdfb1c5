// BENCH_ALLOC_PROFILE_DIR=DIR: a node peer (the gateway, the bare floor) records what it
// allocates, by allocating function, with V8's sampling heap profiler, collected objects included
// (so garbage counts: it is what the GC pays for), and how many requests its HTTP server began
// (diagnostics_channel `http.server.request.start`). At SIGTERM it writes
// DIR/<name>-<pid>.json = {name, requests, profile}. `node --import tsx bench/alloc-report.ts DIR`
// prints bytes per request and where the gateway allocates more than the floor.
// BENCH_ALLOC_PROFILE_SURVIVORS=1 keeps only what outlived the young generation (objects promoted
// to the old one, collected later or not): what makes the old generation grow and mark-compacts run.
import diagnostics from 'node:diagnostics_channel';
import inspector from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function sampleAllocations(name: string): void {
  const dir = process.env.BENCH_ALLOC_PROFILE_DIR;
  if (!dir) return;
  let requests = 0;
  diagnostics.subscribe('http.server.request.start', () => requests++);
  const session = new inspector.Session();
  session.connect();
  session.post('HeapProfiler.enable');
  const survivorsOnly = process.env.BENCH_ALLOC_PROFILE_SURVIVORS === '1';
  session.post('HeapProfiler.startSampling', {
    samplingInterval: survivorsOnly ? 1024 : 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: !survivorsOnly,
  } as inspector.HeapProfiler.StartSamplingParameterType);
  process.prependListener('SIGTERM', () => {
    // The in-process session answers synchronously: the file is written before any exit.
    session.post('HeapProfiler.stopSampling', (err, result) => {
      if (!err) writeFileSync(join(dir, `${name}-${process.pid}.json`), JSON.stringify({ name, requests, profile: result.profile }));
    });
    // This listener replaced the default action of SIGTERM: exit when no one else handles it.
    if (process.listenerCount('SIGTERM') === 1) process.exit(0);
  });
}
