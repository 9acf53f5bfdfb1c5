// QUIET_GC_MS: a full garbage collection once the gateway is quiet after a burst, so that the memory
// the burst left behind is returned before the next one instead of being added to it
// (docs/design/quiet-gc.md, with the numbers).
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';

/** The old generation must have grown this much since the last collection for a quiet one to run. */
export const QUIET_GC_MIN_GROWTH_BYTES = 8 * 2 ** 20;

export interface QuietGcState {
  /** client connections with a request being answered or a WebSocket handshake being judged */
  busy: number;
  /** how long since a request began or ended */
  quietForMs: number;
  /** the old generation's growth since the last collection (or since start) */
  grownBytes: number;
}

/** The decision, alone: nothing in flight, quiet long enough, and enough to collect. */
export function shouldCollect(state: QuietGcState, quietMs: number): boolean {
  return quietMs > 0 && state.busy === 0 && state.quietForMs >= quietMs && state.grownBytes >= QUIET_GC_MIN_GROWTH_BYTES;
}

/** A client connection as the watch sees it; `answering` is the watch's own mark on it. */
interface Connection {
  readonly destroyed: boolean;
  answering?: boolean;
}

/**
 * What the gateway has been doing, from the server's calls, and when a collection is due (the
 * timer asks). Time and heap sizes are passed in, so that the sequence is testable as it is.
 */
export class QuietWatch {
  // Connections, not requests: Node never emits 'close' for pipelined answers still queued when
  // their connection dies, so a count of requests could stay above zero for good (and turn the
  // collection off); a destroyed connection is dropped from this set whatever its answers did.
  // A connection stays in the set between its answers and leaves it at the tick that finds it idle
  // or gone: added and removed on every answer, the set's table was reallocated every few dozen
  // requests, garbage that lived long enough to reach the old generation.
  private readonly seen = new Set<Connection>();
  private busy = 0;
  // Set on every begin and end (a store, nothing more on the request's path); `due` reads it.
  private active = false;
  private lastActive: number;
  // One collection per quiet period, and only after some activity since the last one.
  private pending = false;
  private afterLast: number;

  constructor(
    private readonly quietMs: number,
    now: number,
    oldGenerationBytes: number,
  ) {
    this.lastActive = now;
    this.afterLast = oldGenerationBytes;
  }

  /** The connection's first answer (or its handshake) began. */
  begin(connection: Connection): void {
    connection.answering = true;
    this.seen.add(connection);
    this.active = true;
  }

  /** The connection has no answer (or handshake) under way any more. */
  end(connection: Connection): void {
    connection.answering = false;
    this.active = true;
  }

  /** Whether to collect now; `oldGenerationBytes` is read only when everything else says yes. */
  due(now: number, oldGenerationBytes: () => number): boolean {
    if (this.active) {
      this.active = false;
      this.lastActive = now;
      this.pending = true;
    }
    // Every tick, quiet or not: a dead connection is not kept (nor what it references) while traffic goes on.
    this.busy = 0;
    for (const c of this.seen) {
      if (c.destroyed || !c.answering) this.seen.delete(c);
      else this.busy++;
    }
    if (!this.pending || this.busy > 0 || now - this.lastActive < this.quietMs) return false;
    this.pending = false;
    return shouldCollect({ busy: this.busy, quietForMs: now - this.lastActive, grownBytes: oldGenerationBytes() - this.afterLast }, this.quietMs);
  }

  /** Connections counted as busy at the last tick (for tests and diagnostics). */
  get busyConnections(): number {
    return this.busy;
  }

  /** A collection ran; its result is the new base for "grown". */
  collected(oldGenerationBytes: number): void {
    this.afterLast = oldGenerationBytes;
  }
}

/** Bytes in V8's old spaces (everything a young collection does not free). */
export function oldGenerationBytes(): number {
  let bytes = 0;
  for (const s of v8.getHeapSpaceStatistics()) if (s.space_name !== 'new_space' && s.space_name !== 'new_large_object_space') bytes += s.space_used_size;
  return bytes;
}

/**
 * V8's `gc`: the global one if node was started with --expose-gc; else the flag is set at run time,
 * where it reaches only contexts created after it, here a private one (no global `gc` in the
 * gateway's own context). Never under --freeze-flags-after-init, where V8 would abort the process.
 */
export function obtainGc(argv: readonly string[] = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)]): (() => void) | undefined {
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === 'function') return own as () => void;
  if (argv.some((a) => /^--?freeze[-_]flags[-_]after[-_]init(?:=(?!false$|0$).*)?$/.test(a))) return undefined;
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc: unknown = vm.runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}

export interface QuietGc {
  begin(connection: Connection): void;
  end(connection: Connection): void;
  stop(): void;
}

const OFF: QuietGc = { begin() {}, end() {}, stop() {} };

export function createQuietGc(o: { quietMs: number; log: Logger; collections: Counter; gc?: () => void }): QuietGc {
  if (o.quietMs <= 0) return OFF;
  const gc = o.gc ?? obtainGc();
  if (!gc) {
    o.log.warn('QUIET_GC_MS: no way to run a collection (V8 flags are frozen); memory is left to V8 alone');
    return OFF;
  }
  const watch = new QuietWatch(o.quietMs, performance.now(), oldGenerationBytes());
  const timer = setInterval(
    () => {
      if (!watch.due(performance.now(), oldGenerationBytes)) return;
      const started = performance.now();
      const before = oldGenerationBytes();
      gc();
      const after = oldGenerationBytes();
      watch.collected(after);
      o.collections.inc();
      o.log.debug(
        { ms: Math.round(performance.now() - started), beforeMB: Math.round(before / 2 ** 20), afterMB: Math.round(after / 2 ** 20) },
        'quiet garbage collection',
      );
    },
    Math.min(o.quietMs, 1_000) / 4,
  );
  timer.unref();
  return {
    begin: (c) => watch.begin(c),
    end: (c) => watch.end(c),
    stop: () => clearInterval(timer),
  };
}
