// QUIET_GC_MS: a full garbage collection once the gateway is quiet after a burst, so that the
// memory the burst left behind is returned before the next one instead of being added to it.
//
// Why: the gateway runs with `--heap-growing-percent=300` (few mark-compacts while bodies stream,
// bench/README.md), so V8 lets its old generation grow to about four times what is live before it
// collects; V8's own memory reducer, which would collect once allocation stops, waits 8 s and more.
// A burst (2,000 connections opened and dropped, a run of rewritten file lists) thus left 20 to 30 MB
// of garbage that the next burst found still there: peaks of 150 to 160 MB where one burst alone
// reaches 125 (issue 27). Collected when nothing is in flight, the pause (tens of ms) costs no
// request anything; an open WebSocket's frames may wait for it, once after a burst.
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';

/** The old generation must have grown this much since the last collection for a quiet one to run. */
export const QUIET_GC_MIN_GROWTH_BYTES = 8 * 2 ** 20;

export interface QuietGcState {
  /** requests begun and not yet answered (WebSockets count only while their handshake runs) */
  inFlight: number;
  /** how long since a request began or ended */
  quietForMs: number;
  /** the old generation's growth since the last collection (or since start) */
  grownBytes: number;
}

/** The decision, alone: nothing in flight, quiet long enough, and enough to collect. */
export function shouldCollect(state: QuietGcState, quietMs: number): boolean {
  return quietMs > 0 && state.inFlight === 0 && state.quietForMs >= quietMs && state.grownBytes >= QUIET_GC_MIN_GROWTH_BYTES;
}

export interface QuietGc {
  /** a request began */
  begin(): void;
  /** a request's answer ended (finished or cut) */
  end(): void;
  /** something happened that is over at once (a WebSocket handshake) */
  touch(): void;
  stop(): void;
}

/** Bytes in V8's old spaces (everything a young collection does not free). */
function oldGenerationBytes(): number {
  let bytes = 0;
  for (const s of v8.getHeapSpaceStatistics()) if (s.space_name !== 'new_space' && s.space_name !== 'new_large_object_space') bytes += s.space_used_size;
  return bytes;
}

/**
 * V8's `gc`, without `--expose-gc` on the command line and without a global `gc` in the gateway's
 * own context: the flag set at run time reaches only contexts created after it, here a private one.
 */
function obtainGc(): (() => void) | undefined {
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc: unknown = vm.runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}

const OFF: QuietGc = { begin() {}, end() {}, touch() {}, stop() {} };

export function createQuietGc(o: { quietMs: number; log: Logger; collections: Counter }): QuietGc {
  if (o.quietMs <= 0) return OFF;
  const gc = obtainGc();
  if (!gc) {
    o.log.warn('QUIET_GC_MS: V8 refused --expose-gc at run time; memory is left to V8 alone');
    return OFF;
  }
  let inFlight = 0;
  // Set on every begin and end (a store, nothing more on the request's path); the timer reads it.
  let active = false;
  let lastActive = Date.now();
  // One collection per quiet period, and only after some activity since the last one.
  let pending = false;
  let afterLast = oldGenerationBytes();
  const timer = setInterval(
    () => {
      const now = Date.now();
      if (active) {
        active = false;
        lastActive = now;
        pending = true;
      }
      if (!pending || inFlight > 0 || now - lastActive < o.quietMs) return;
      pending = false;
      const before = oldGenerationBytes();
      if (!shouldCollect({ inFlight, quietForMs: now - lastActive, grownBytes: before - afterLast }, o.quietMs)) return;
      const started = performance.now();
      gc();
      afterLast = oldGenerationBytes();
      o.collections.inc();
      o.log.debug(
        { ms: Math.round(performance.now() - started), beforeMB: Math.round(before / 2 ** 20), afterMB: Math.round(afterLast / 2 ** 20) },
        'quiet garbage collection',
      );
    },
    Math.max(25, Math.min(o.quietMs, 1_000) / 4),
  );
  timer.unref();
  return {
    begin() {
      inFlight++;
      active = true;
    },
    end() {
      inFlight--;
      active = true;
    },
    touch() {
      active = true;
    },
    stop() {
      clearInterval(timer);
    },
  };
}
