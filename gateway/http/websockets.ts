// Proxied WebSockets at shutdown. Node's `server.close()` waits for upgraded sockets and
// `closeAllConnections()` does not reach them, so the gateway tracks them itself.
//
// Closing cleanly means the browser gets a Close frame (1001 "going away") and then the end of
// the stream, so socket.io reconnects at once (to another instance) instead of waiting for a
// timeout. The gateway only pipes bytes; to put its Close frame between two frames of the
// upstream, it follows the frame boundaries of what it writes to the client (header lengths
// only, payloads are never read). The client answers with its own Close frame, which still
// flows to the upstream, so the upstream sees a clean close as well.
import type { Duplex } from 'node:stream';

const GOING_AWAY = 1001;

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
  /** the socket's own write, bypassing the wrapper */
  write: (chunk: Uint8Array) => boolean;
}

/** The upgraded client sockets of one server. */
export class WebSocketTracker {
  private readonly sockets = new Set<Tracked>();

  get size(): number {
    return this.sockets.size;
  }

  /** Call before the socket is handed to the proxy: watches what is written to the client. */
  track(socket: Duplex): void {
    const write = socket.write.bind(socket) as (chunk: unknown, encoding?: BufferEncoding, cb?: WriteCallback) => boolean;
    const t: Tracked = { socket, frames: new FrameBoundaries(), open: false, plainHttp: false, closing: false, closed: false, write: (c) => write(c) };
    this.sockets.add(t);
    socket.once('close', () => this.sockets.delete(t));
    socket.write = ((chunk: unknown, encoding?: BufferEncoding | WriteCallback, cb?: WriteCallback): boolean => {
      const done = typeof encoding === 'function' ? encoding : cb;
      const enc = typeof encoding === 'function' ? undefined : encoding;
      if (t.closed) {
        // After our Close frame nothing more may reach the client.
        if (done) process.nextTick(done);
        return true;
      }
      // A Buffer is used as it is (the pipe hands over Buffers; a copy per chunk was pure cost).
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk, enc ?? 'utf8') : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      if (!t.open && !t.plainHttp) {
        // http-proxy-3 writes the whole response head in one call.
        const text = bytes.toString('latin1');
        if (/^HTTP\/1\.[01] 101 /.test(text)) {
          const end = text.indexOf('\r\n\r\n');
          t.open = true;
          if (end >= 0) t.frames.consume(bytes.subarray(end + 4));
        } else {
          t.plainHttp = true;
        }
        return write(bytes, undefined, done);
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

  /** Send every open WebSocket a Close frame (at the next frame boundary) and end it. */
  closeAll(): void {
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
    for (const t of this.sockets) t.socket.destroy();
    this.sockets.clear();
  }

  private finish(t: Tracked): void {
    if (t.closed) return;
    t.closed = true;
    t.write(closeFrame());
    t.socket.end();
  }
}
