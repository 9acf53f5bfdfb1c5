// The process's life: signals (a graceful stop; SIGHUP, gateway/hangups.ts: read POLICY_FILE now) and, with
// GATEWAY_WORKERS > 1, node:cluster, whose primary only supervises (docs/design/workers.md).
import cluster, { type Worker } from 'node:cluster';
import pino from 'pino';
import type { Settings } from '../config/settings.js';
import { reloadOnHangup } from './hangups.js';

const YOUNG_MS = 5_000;
const MAX_PAUSE_MS = 30_000;

export function superviseWorkers(settings: Pick<Settings, 'server' | 'policy'>): void {
  const log = pino({ level: settings.policy.logLevel, name: 'primary' });
  const count = settings.server.workers;
  let stopping = false;
  let pause = 0;
  const startedAt = new Map<Worker, number>();
  // a worker still starting gets its SIGHUP once it listens (it reads POLICY_FILE then, once)
  const starting = new Map<Worker, boolean>();

  const fork = () => {
    const worker = cluster.fork();
    startedAt.set(worker, Date.now());
    starting.set(worker, false);
    worker.once('listening', () => {
      const hangup = starting.get(worker);
      starting.delete(worker);
      if (hangup) worker.process.kill('SIGHUP');
    });
  };

  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (startedAt.get(worker) ?? 0);
    startedAt.delete(worker);
    starting.delete(worker);
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    pause = lived < YOUNG_MS ? Math.min(MAX_PAUSE_MS, Math.max(500, pause * 2)) : 0;
    log.error({ workerPid: worker.process.pid, code, signal, livedMs: lived, restartInMs: pause }, 'gateway worker died; starting a new one');
    // not unref'd: with every worker gone this timer is all that keeps the primary alive to restart them
    setTimeout(() => {
      if (!stopping) fork();
    }, pause);
  });

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    log.info({ signal, workers: workers.length }, 'shutting down: passing the signal to the workers');
    if (workers.length === 0) process.exit(0);
    for (const w of workers) w.process.kill('SIGTERM');
    setTimeout(() => {
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
      process.exit(1);
    }, settings.server.shutdownGraceMs + 5_000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  reloadOnHangup(() => {
    log.info({ signal: 'SIGHUP' }, 'passing SIGHUP to the workers: each reads POLICY_FILE now');
    for (const w of Object.values(cluster.workers ?? {})) {
      if (!w) continue;
      if (starting.has(w)) starting.set(w, true);
      else w.process.kill('SIGHUP');
    }
  });

  for (let i = 0; i < count; i++) fork();
  log.info({ workers: count }, 'gateway primary supervising workers');
}

/**
 * SIGTERM and SIGINT: run `close` (the gateway's stops accepting, lets in-flight requests and
 * streams finish up to SHUTDOWN_GRACE_MS and closes WebSockets), then exit 0, or 1 when closing
 * failed. Past the grace period everything still open is cut, so this always ends.
 */
export function exitOnSignals(log: { info(o: object, msg: string): void; error(o: object, msg: string): void }, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    // npm passes the terminal's Ctrl-C on as well: a repeated signal is the same request.
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    close().then(
      () => {
        log.info({}, 'stopped');
        process.exit(0);
      },
      (err: Error) => {
        log.error({ err: { message: err.message } }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
