// The bounded load test (test/hardening/hardening-load.test.ts: 1,000 connections, 100 WebSockets, mixed
// traffic, 5 s) run N times in a row in one process (`npm run load:repeat`, N=50 by default,
// about 10 minutes on two cores). It proves the gateway survives the races a single run hits
// only now and then: before the fix of the proxy's error listener, about one run in twelve ended with an uncaught
// `write EPIPE` from a WebSocket whose client left mid-handshake. Any uncaught error, or a run
// that does not hold, fails it. Too long for every CI run; run it before a release.
import { pathToFileURL } from 'node:url';
import { runSoak } from './soak.js';

export async function repeatLoad(runs: number, log: (line: string) => void = console.log): Promise<{ uncaught: string[]; failedRuns: string[] }> {
  const uncaught: string[] = [];
  const failedRuns: string[] = [];
  const count = (err: Error & { code?: string }) => void uncaught.push(`${err.code ?? ''} ${err.stack ?? err.message}`);
  process.on('uncaughtException', count);
  try {
    for (let i = 1; i <= runs; i++) {
      const started = Date.now();
      const report = await runSoak({ durationMs: 5_000, connections: 1_000, websockets: 100, logins: 6, thinkMs: 100, gateway: 'inline' });
      const problems = [...report.failures];
      if (report.serverErrors) problems.push(`${report.serverErrors} 5xx`);
      if (report.websockets.errors) problems.push(`${report.websockets.errors} WebSocket errors`);
      if (problems.length) failedRuns.push(`run ${i}: ${problems.join('; ')}`);
      log(
        `run ${i}/${runs}: ${((Date.now() - started) / 1000).toFixed(1)} s, uncaught so far ${uncaught.length}${problems.length ? `, FAILED: ${problems.join('; ')}` : ''}`,
      );
    }
  } finally {
    process.removeListener('uncaughtException', count);
  }
  return { uncaught, failedRuns };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const runs = Number(process.env.RUNS ?? process.argv[2] ?? 50);
  if (!Number.isInteger(runs) || runs < 1) throw new Error('RUNS must be a positive integer');
  const started = Date.now();
  const { uncaught, failedRuns } = await repeatLoad(runs);
  console.log(`${runs} runs in ${((Date.now() - started) / 60_000).toFixed(1)} min: ${uncaught.length} uncaught errors, ${failedRuns.length} failed runs`);
  for (const line of [...uncaught.slice(0, 5), ...failedRuns]) console.log(line);
  process.exit(uncaught.length || failedRuns.length ? 1 : 0);
}
