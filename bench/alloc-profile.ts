// BENCH_ALLOC_PROFILE_DIR=DIR: a node peer records what it allocates, by allocating function (V8's
// sampling heap profiler, garbage included: it is what the GC pays for), and the requests it began;
// `bench/alloc-report.ts DIR` prints bytes per request against the floor (bench/README.md).
// BENCH_ALLOC_PROFILE_SURVIVORS=1 keeps only what outlived the young generation.
import diagnostics from 'node:diagnostics_channel';
import inspector from 'node:inspector';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function sampleAllocations(name: string): void {
  const dir = process.env.BENCH_ALLOC_PROFILE_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
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
