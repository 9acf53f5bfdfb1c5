// The gateway as the bench runs it: gateway/main.ts unchanged, plus one duty of a bench child,
// ending when the bench's stdin pipe closes (the bench died or was interrupted), so no gateway
// outlives a run. Cluster workers re-run this file; only the primary watches the pipe, and the
// primary forwards SIGTERM to its workers (gateway/main.ts).
import cluster from 'node:cluster';
import { sampleAllocations } from './alloc-profile.js';
import { countMarkCompacts } from './gc-count.js';
import { sampleMemory } from './memory-sample.js';

if (cluster.isPrimary) {
  process.stdin.resume();
  process.stdin.once('end', () => process.kill(process.pid, 'SIGTERM'));
  process.stdin.once('error', () => process.kill(process.pid, 'SIGTERM'));
}
sampleAllocations('gateway');
countMarkCompacts();
sampleMemory('gateway');
await import('../gateway/main.js');
