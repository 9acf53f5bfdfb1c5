// Proxied WebSockets, tracked by the gateway itself (Node's server.close() waits for upgraded sockets
// and closeAllConnections() does not reach them): closed cleanly at shutdown, when the session behind
// one ends and when a new policy would not let it through (docs/design/websocket-join.md, "Closing").
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { SocketVerdict } from '../../policies/session-ends.js';

const GOING_AWAY = 1001;
/** RFC 6455 7.4.1: the session behind the socket ended or changed. */
const POLICY_VIOLATION = 1008;
/** How long a socket closed for its session (or its client's frames) may wait for the frame under way, then its client's goodbye. */
const SESSION_CLOSE_WAIT_MS = 1_000;

/** The session an open WebSocket was upgraded with. */
export interface SocketSession {
  /** the gateway session id (absent for a bearer token): a change to it re-judges its sockets at once */
  key?: string;
  /** who, for the log */
  label: string;
  /** may it stay open, as things stand now? */
  verdict(): SocketVerdict;
}

export interface TrackOptions {
  session?: SocketSession;
  /** may it stay open under the policy in force now? (an admin's socket; judged when a policy is applied) */
  policy?: () => SocketVerdict;
  /** who, for the log (a socket without a session) */
  label?: string;
  /** the session cookie the upgrade renewed: sent on the 101 answer (a browser stores it, RFC 6455 4.1) */
  setCookies?: readonly string[];
}

export interface TrackerOptions {
  /** WEBSOCKET_SESSION_CHECK_SECONDS in ms; 0: only the re-checks asked for */
  checkEveryMs?: number;
  /** a socket closed because its session ended or changed */
  closedForSession?: (label: string, reason: string) => void;
  /** a socket closed because the policy now in force would not let it through as it is */
  closedForPolicy?: (label: string, reason: string, rule: string) => void;
  /** asked once before sockets are closed because their sessions' ends could not be known (SharedState.settle) */
  settle?: () => Promise<void>;
}

/** Follows RFC 6455 frame boundaries in a byte stream without buffering payloads. */
export class FrameBoundaries {
  private header: number[] = [];
  private remaining = 0;

  get atBoundary(): boolean {
    return this.header.length === 0 && this.remaining === 0;
  }

  /**
   * Consume bytes; with `stopAtBoundary`, stop at the first frame boundary reached (possibly at
   * once). Returns how many bytes were consumed.
   */
  consume(buf: Uint8Array, stopAtBoundary = false): number {
    let i = 0;
    while (i < buf.length) {
      if (stopAtBoundary && this.atBoundary) return i;
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, buf.length - i);
        this.remaining -= n;
        i += n;
        continue;
      }
      this.header.push(buf[i]!);
      i++;
      const need = this.headerLength();
      if (need !== undefined && this.header.length === need) {
        this.remaining = this.payloadLength();
        this.header = [];
      }
    }
    return i;
  }

  /** Total header length, once the second byte is known. */
  private headerLength(): number | undefined {
    if (this.header.length < 2) return undefined;
    const b1 = this.header[1]!;
    const len7 = b1 & 0x7f;
    const ext = len7 === 126 ? 2 : len7 === 127 ? 8 : 0;
    return 2 + ext + (b1 & 0x80 ? 4 : 0);
  }

  private payloadLength(): number {
    const h = this.header;
    const len7 = h[1]! & 0x7f;
    if (len7 < 126) return len7;
    if (len7 === 126) return (h[2]! << 8) | h[3]!;
    let n = 0;
    for (let k = 2; k < 10; k++) n = n * 256 + h[k]!;
    return n;
  }
}

export function closeFrame(code = GOING_AWAY, reason = 'server shutting down'): Buffer {
  const text = Buffer.from(reason.slice(0, 120), 'utf8');
  const frame = Buffer.alloc(4 + text.length);
  frame[0] = 0x88; // FIN + opcode 8 (close)
  frame[1] = 2 + text.length;
  frame.writeUInt16BE(code, 2);
  text.copy(frame, 4);
  return frame;
}

/** A Close frame as a client sends it (masked, RFC 6455 5.3): what the gateway tells the upstream for a client it cut. */
export function clientCloseFrame(code: number): Buffer {
  const mask = randomBytes(4);
  const frame = Buffer.alloc(8);
  frame[0] = 0x88;
  frame[1] = 0x80 | 2;
  mask.copy(frame, 2);
  frame[6] = (code >> 8) ^ mask[0]!;
  frame[7] = (code & 0xff) ^ mask[1]!;
  return frame;
}

type WriteCallback = (err?: Error | null) => void;

interface Tracked {
  socket: Duplex;
  frames: FrameBoundaries;
  /** the 101 answer has been written: what follows are frames */
  open: boolean;
  /** not a WebSocket answer (the upstream refused the upgrade): never inject frames */
  plainHttp: boolean;
  closing: boolean;
  closed: boolean;
  /** the Close frame it gets */
  code: number;
  reason: string;
  session: SocketSession | undefined;
  policy: (() => SocketVerdict) | undefined;
  label: string | undefined;
  /** the socket's own write, bypassing the wrapper */
  write: (chunk: Uint8Array) => boolean;
}

/** A verdict, or the closing one when it cannot be had. */
function failClosed(verdict: () => SocketVerdict, reason: string): SocketVerdict {
  try {
    return verdict();
  } catch {
    return { keep: false, reason, rule: 'the check failed: fail closed' };
  }
}

/** The response head with `lines` as Set-Cookie fields before its blank line. */
function withSetCookies(head: string, end: number, lines: readonly string[]): string {
  return head.slice(0, end) + lines.map((l) => `\r\nSet-Cookie: ${l}`).join('') + head.slice(end);
}

/** The upgraded client sockets of one server. */
export class WebSocketTracker {
  private readonly sockets = new Set<Tracked>();
  private readonly tracked = new WeakMap<Duplex, Tracked>();
  /** the sockets of each gateway session: a change to one session costs a lookup, not a pass over every socket */
  private readonly bySession = new Map<string, Set<Tracked>>();
  private readonly timer: NodeJS.Timeout | undefined;
  /** sessions to re-judge on the next turn (undefined in it: every socket) */
  private pending: Set<string | undefined> | undefined;

  constructor(private readonly options: TrackerOptions = {}) {
    if (options.checkEveryMs) this.timer = setInterval(() => this.check(undefined), options.checkEveryMs).unref();
  }

  get size(): number {
    return this.sockets.size;
  }

  /** Call before the socket is handed to the proxy: watches what is written to the client. */
  track(socket: Duplex, o: TrackOptions = {}): void {
    const write = socket.write.bind(socket) as (chunk: unknown, encoding?: BufferEncoding, cb?: WriteCallback) => boolean;
    const t: Tracked = {
      socket,
      frames: new FrameBoundaries(),
      open: false,
      plainHttp: false,
      closing: false,
      closed: false,
      code: GOING_AWAY,
      reason: 'server shutting down',
      session: o.session,
      policy: o.policy,
      label: o.label,
      write: (c) => write(c),
    };
    this.sockets.add(t);
    this.tracked.set(socket, t);
    const key = o.session?.key;
    if (key !== undefined) {
      let same = this.bySession.get(key);
      if (!same) this.bySession.set(key, (same = new Set()));
      same.add(t);
    }
    socket.on('close', () => {
      this.sockets.delete(t);
      const same = key === undefined ? undefined : this.bySession.get(key);
      if (same?.delete(t) && same.size === 0) this.bySession.delete(key!);
    });
    socket.write = ((chunk: unknown, encoding?: BufferEncoding | WriteCallback, cb?: WriteCallback): boolean => {
      const done = typeof encoding === 'function' ? encoding : cb;
      const enc = typeof encoding === 'function' ? undefined : encoding;
      if (t.closed) {
        // After our Close frame nothing more may reach the client.
        if (done) process.nextTick(done);
        return true;
      }
      // A Buffer is used as it is (the pipe hands over Buffers; a copy per chunk was pure cost).
      let bytes = typeof chunk === 'string' ? Buffer.from(chunk, enc ?? 'utf8') : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      if (!t.open && !t.plainHttp) {
        // The proxy writes the whole response head in one call (gateway/upstream/proxy.ts rawResponseHead).
        const text = bytes.toString('latin1');
        const end = /^HTTP\/1\.[01] \d{3} /.test(text) ? text.indexOf('\r\n\r\n') : -1;
        if (/^HTTP\/1\.[01] 101 /.test(text)) {
          t.open = true;
          if (end >= 0) t.frames.consume(bytes.subarray(end + 4));
        } else {
          t.plainHttp = true;
        }
        // A renewed session cookie goes on the 101 or on the upstream's refusal alike: its rotated
        // refresh token must reach the browser either way.
        if (end >= 0 && o.setCookies?.length) bytes = Buffer.from(withSetCookies(text, end, o.setCookies), 'latin1');
        const ok = write(bytes, undefined, done);
        // Its session ended while the upgrade was under way: the Close frame follows the 101, so the
        // upstream side is closed by the proxy's own handlers (cut earlier, they were not set yet).
        if (t.open && t.closing && t.code !== GOING_AWAY && t.frames.atBoundary) this.finish(t);
        return ok;
      }
      if (!t.open || !t.closing) {
        if (t.open) t.frames.consume(bytes);
        return write(bytes, undefined, done);
      }
      // Closing: pass the rest of the current frame, then the Close frame, then end.
      const n = t.frames.consume(bytes, true);
      const ok = n > 0 ? write(bytes.subarray(0, n)) : true;
      if (t.frames.atBoundary) this.finish(t);
      if (done) process.nextTick(done);
      return ok;
    }) as Duplex['write'];
  }

  /**
   * May the client's bytes still go upstream? Not once its session ended or changed, or the
   * gateway refused its frames (what a guard still holds is dropped); while the gateway shuts down
   * they do (the client's Close frame).
   */
  mayForward(socket: Duplex): boolean {
    const t = this.tracked.get(socket);
    return !t || !(t.closing && t.code !== GOING_AWAY);
  }

  /**
   * Close one socket now with `code` (an admin's frames the gateway refused, gateway/enforcement/socketio-guard.ts):
   * nothing more of its client goes upstream; a Close frame at the next frame boundary, then the end.
   */
  close(socket: Duplex, code: number, reason: string): void {
    const t = this.tracked.get(socket);
    if (t && !t.closing && !t.closed) this.closeWith(t, code, reason);
  }

  /**
   * Judge again, on the next turn, the sockets of the session `key` (undefined: every socket):
   * its state changed here (a sign-out, a refresh). Calls of one turn are judged together.
   */
  recheck(key?: string): void {
    if (!this.pending) {
      this.pending = new Set();
      setImmediate(() => {
        const keys = this.pending!;
        this.pending = undefined;
        this.check(keys.has(undefined) ? undefined : keys);
      });
    }
    this.pending.add(key);
  }

  private check(keys: ReadonlySet<string | undefined> | undefined): void {
    if (!keys) return this.judge(this.sockets);
    for (const key of keys) {
      const same = this.bySession.get(key!);
      if (same) this.judge(same);
    }
  }

  /** `settled`: the shared state was asked already; what still cannot be known closes its socket. */
  private judge(sockets: Iterable<Tracked>, settled = false): void {
    const unsure: Tracked[] = [];
    for (const t of [...sockets]) {
      const s = t.session;
      if (t.closing || t.closed) continue;
      if (s) {
        const verdict = failClosed(s.verdict, 'sign-in cannot be checked');
        if (!verdict.keep && verdict.unknown && !settled && this.options.settle) {
          unsure.push(t);
          continue;
        }
        if (!verdict.keep) {
          this.closeForSession(t, s, verdict.reason);
          continue;
        }
      }
      if (t.policy) {
        const verdict = failClosed(t.policy, 'policy cannot be checked');
        if (!verdict.keep) {
          this.options.closedForPolicy?.(s?.label ?? t.label ?? 'unknown', verdict.reason, verdict.rule);
          this.closeWith(t, POLICY_VIOLATION, verdict.reason);
        }
      }
    }
    if (unsure.length > 0) {
      const again = () => this.judge(unsure, true);
      void this.options.settle!().then(again, again);
    }
  }

  /** Its session ended or changed: nothing more of the client goes upstream; a Close frame 1008, then the end. */
  private closeForSession(t: Tracked, s: SocketSession, reason: string): void {
    this.options.closedForSession?.(s.label, reason);
    this.closeWith(t, POLICY_VIOLATION, reason);
  }

  private closeWith(t: Tracked, code: number, reason: string): void {
    t.closing = true;
    t.code = code;
    t.reason = reason;
    // Stop reading the client: its frames would reach the upstream under the old identity (the
    // proxy forwards them from its 'data' listener, gateway/upstream/proxy.ts forward()).
    t.socket.removeAllListeners('data');
    t.socket.pause();
    setTimeout(() => t.socket.destroy(), SESSION_CLOSE_WAIT_MS).unref();
    if (t.plainHttp) return void t.socket.destroy();
    if (!t.open) return; // the 101 is still to come: the Close frame follows it (above)
    if (t.frames.atBoundary) this.finish(t);
  }

  /** Send every open WebSocket a Close frame (at the next frame boundary) and end it. */
  closeAll(): void {
    if (this.timer) clearInterval(this.timer);
    for (const t of this.sockets) {
      if (t.closing || t.closed) continue;
      t.closing = true;
      if (!t.open || t.plainHttp) {
        t.socket.end();
        continue;
      }
      if (t.frames.atBoundary) this.finish(t);
    }
  }

  /** Whatever is still open at the deadline. */
  destroyAll(): void {
    if (this.timer) clearInterval(this.timer);
    for (const t of this.sockets) t.socket.destroy();
    this.sockets.clear();
  }

  private finish(t: Tracked): void {
    if (t.closed) return;
    t.closed = true;
    t.write(closeFrame(t.code, t.reason));
    t.socket.end();
  }
}
