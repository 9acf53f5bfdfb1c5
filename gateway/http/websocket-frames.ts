// A client's WebSocket frames, read as RFC 6455 has a server read them: the admin's Socket.IO
// guard (gateway/enforcement/socketio-guard.ts) judges whole messages from them. Why not ws's Receiver:
// docs/design/websocket-frames.md.
import { isUtf8 } from 'node:buffer';

// The reader: the client's side of an admin's WebSocket, read as RFC 6455 has a server read it,
// for the guard above. No extension is ever negotiated on these sockets (gateway/pipeline/handle.ts
// removes Sec-WebSocket-Extensions from an admin's upgrade), so every RSV bit must be clear.
//
// What the client sends is kept as it came: the reader hands on each frame's own bytes (header,
// mask, masked payload) so the guard can send it on unchanged. Bytes wait in a list of the chunks
// the socket delivered until a whole frame is there, then the frame is cut out once: a view when
// it lies in one chunk, else one copy of exactly its length. Chunks under SMALL_CHUNK bytes are
// first gathered into one buffer (a client trickling single bytes would otherwise cost an object
// per byte). A text message is unmasked once, into one buffer, when its last frame arrives. So
// every byte is copied at most three times, whatever the chunking (a 16 MiB frame in 64 KiB reads
// used to be copied about 2 GB in total).
//
// Refused, and nothing read after it (the caller fails the connection, RFC 6455 7.1.7):
//   1002 (protocol error): an RSV bit set, a reserved opcode (3-7, 0xB-0xF), a continuation without
//        a message, a new data message inside a fragmented one, a control frame fragmented or over
//        125 bytes, a Close of one byte or with a code RFC 6455 7.4 does not allow, an unmasked frame;
//   1007 (invalid data): a text message or a Close reason that is not UTF-8;
//   1008 (policy violation): a data message in more than `maxFragments` frames (each is held
//        until the message is whole; `ws` servers refuse the same past 16,384);
//   1009 (message too big): a data message over the limit, judged from the frame headers before
//        its payload is held.
// Each is checked where the `ws` package checks it (the header's first two bytes, its length, the
// whole frame, the whole message), in the same order, so both name the same refusal for the same
// bytes (test/unit/websocket-frames.test.ts). Bytes after a Close frame are not read.

export const PROTOCOL_ERROR = 1002;
export const INVALID_DATA = 1007;
export const POLICY_VIOLATION = 1008;
export const MESSAGE_TOO_BIG = 1009;

/** The rule behind each refusal's code, as the audit line names it. */
export const REFUSAL_RULES: Readonly<Record<number, string>> = {
  [PROTOCOL_ERROR]: 'RFC 6455: a frame the protocol forbids (1002 protocol error)',
  [INVALID_DATA]: 'RFC 6455 8.1: text that is not UTF-8 (1007 invalid data)',
  [POLICY_VIOLATION]: 'admin WebSocket reader: a message in too many frames (1008)',
  [MESSAGE_TOO_BIG]: 'admin WebSocket reader: a message over its size limit (1009 message too big)',
};

/** One frame as the client sent it. */
export interface ClientFrame {
  /** header, mask and masked payload, byte for byte */
  raw: Buffer;
  opcode: number;
  fin: boolean;
  /** where the payload starts in `raw` (its mask is the four bytes before) */
  payloadAt: number;
}

export interface ReaderSink {
  /** A whole data message, its frames in order; `text` for a text message, null for a binary one. */
  message(frames: ClientFrame[], text: string | null): void;
  /** A ping, pong or Close frame, when it comes (between the frames of a fragmented message too). */
  control(frame: ClientFrame): void;
  /** The client broke the protocol or sent too much: `code` for its Close frame. Nothing more is read. */
  refuse(code: number, why: string): void;
}

/** The payload of `frames`, unmasked, in one new buffer. */
export function unmaskedPayload(frames: readonly ClientFrame[]): Buffer {
  let length = 0;
  for (const f of frames) length += f.raw.length - f.payloadAt;
  const out = Buffer.allocUnsafe(length);
  let o = 0;
  for (const { raw, payloadAt } of frames) {
    const m = payloadAt - 4;
    for (let i = payloadAt; i < raw.length; i++) out[o++] = raw[i]! ^ raw[m + ((i - payloadAt) & 3)]!;
  }
  return out;
}

/** RFC 6455 7.4: the codes a Close frame may carry (1004-1006 and 1015 are never sent). */
export function validCloseCode(code: number): boolean {
  return (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
}

interface Header {
  fin: boolean;
  opcode: number;
  /** header with its mask */
  length: number;
  payloadLength: number;
}

/** Chunks shorter than this are copied into a shared buffer of GATHER_BYTES instead of kept one by one. */
const SMALL_CHUNK = 2048;
const GATHER_BYTES = 32 * 1024;

export interface ReaderLimits {
  /** largest data message, in payload bytes */
  maxMessageBytes: number;
  /** most frames of one data message */
  maxFragments: number;
}

export class ClientFrameReader {
  /** the bytes not yet cut into frames, as the socket delivered them */
  private chunks: Buffer[] = [];
  /** small chunks gathered, not yet in `chunks`: the first `gathered` bytes of `gather` */
  private gather: Buffer | undefined;
  private gathered = 0;
  /** bytes in `chunks` and `gather` */
  private buffered = 0;
  /** the frame under way, once its header is read */
  private header: Header | undefined;
  /** the data message under way: its frames until the one with FIN */
  private fragments: ClientFrame[] = [];
  /** its opcode (1 text, 2 binary), 0 between messages */
  private messageOpcode = 0;
  private messageBytes = 0;
  /** refused, or a Close frame read: nothing more is read */
  private done = false;

  constructor(
    private readonly sink: ReaderSink,
    private readonly limits: ReaderLimits,
  ) {}

  write(chunk: Buffer): void {
    if (this.done || chunk.length === 0) return;
    this.append(chunk);
    while (!this.done) {
      if (!this.header) {
        if (this.buffered < 2) return;
        this.flush();
        if (!(this.header = this.readHeader())) return;
      }
      const { length, payloadLength, opcode, fin } = this.header;
      if (this.buffered < length + payloadLength) return;
      this.flush();
      this.header = undefined;
      this.onFrame({ raw: this.take(length + payloadLength), opcode, fin, payloadAt: length });
    }
  }

  private append(chunk: Buffer): void {
    this.buffered += chunk.length;
    if (chunk.length >= SMALL_CHUNK) {
      this.flush();
      this.chunks.push(chunk);
      return;
    }
    if (!this.gather || this.gathered + chunk.length > this.gather.length) {
      this.flush();
      this.gather = Buffer.allocUnsafe(GATHER_BYTES);
    }
    this.gathered += chunk.copy(this.gather, this.gathered);
  }

  /** What was gathered joins `chunks` (as a view: the rest of `gather` is filled after it, never over it). */
  private flush(): void {
    if (!this.gathered) return;
    this.chunks.push(this.gather!.subarray(0, this.gathered));
    this.gather = this.gather!.subarray(this.gathered);
    this.gathered = 0;
  }

  private refuse(code: number, why: string): undefined {
    this.stop();
    this.sink.refuse(code, why);
    return undefined;
  }

  private stop(): void {
    this.done = true;
    this.chunks = [];
    this.gather = undefined;
    this.gathered = 0;
    this.buffered = 0;
    this.fragments = [];
  }

  /** The next frame's header once all of it is buffered (undefined until then, or when refused). */
  private readHeader(): Header | undefined {
    if (this.buffered < 2) return undefined;
    const [b0, b1] = this.peek(2);
    if (b0! & 0x30) return this.refuse(PROTOCOL_ERROR, 'RSV2 or RSV3 set: no extension was negotiated');
    if (b0! & 0x40) return this.refuse(PROTOCOL_ERROR, 'RSV1 set: no extension (permessage-deflate) was negotiated');
    const fin = (b0! & 0x80) !== 0;
    const opcode = b0! & 0x0f;
    const len7 = b1! & 0x7f;
    if (opcode === 0) {
      if (!this.messageOpcode) return this.refuse(PROTOCOL_ERROR, 'continuation frame without a message');
    } else if (opcode === 1 || opcode === 2) {
      if (this.messageOpcode) return this.refuse(PROTOCOL_ERROR, 'new message inside a fragmented one');
    } else if (opcode >= 8 && opcode <= 10) {
      if (!fin) return this.refuse(PROTOCOL_ERROR, 'fragmented control frame');
      if (len7 > 125) return this.refuse(PROTOCOL_ERROR, 'control frame over 125 bytes');
      if (opcode === 8 && len7 === 1) return this.refuse(PROTOCOL_ERROR, 'Close frame of one byte');
    } else {
      return this.refuse(PROTOCOL_ERROR, `reserved opcode ${opcode}`);
    }
    if (!(b1! & 0x80)) return this.refuse(PROTOCOL_ERROR, 'unmasked client frame');
    const ext = len7 === 126 ? 2 : len7 === 127 ? 8 : 0;
    if (this.buffered < 2 + ext) return undefined;
    let payloadLength = len7;
    if (ext) {
      const h = this.peek(2 + ext);
      if (ext === 2) payloadLength = h.readUInt16BE(2);
      else {
        const high = h.readUInt32BE(2);
        // a length no safe integer holds is over any limit (`ws` refuses it the same way)
        if (high > 2 ** 21 - 1) return this.refuse(MESSAGE_TOO_BIG, 'frame length over 2^53 - 1');
        payloadLength = high * 2 ** 32 + h.readUInt32BE(6);
      }
    }
    if (opcode < 8 && payloadLength > 0) {
      this.messageBytes += payloadLength;
      if (this.messageBytes > this.limits.maxMessageBytes) return this.refuse(MESSAGE_TOO_BIG, `message over ${this.limits.maxMessageBytes} bytes`);
    }
    // the fragmented message begins with this frame's header (a continuation is judged against it)
    if (opcode < 8 && !fin && !this.messageOpcode) this.messageOpcode = opcode;
    return { fin, opcode, length: 2 + ext + 4, payloadLength };
  }

  private onFrame(f: ClientFrame): void {
    if (f.opcode >= 8) {
      if (f.opcode === 8) {
        const payload = unmaskedPayload([f]);
        if (payload.length >= 2) {
          const code = payload.readUInt16BE(0);
          if (!validCloseCode(code)) return void this.refuse(PROTOCOL_ERROR, `Close code ${code}`);
          if (!isUtf8(payload.subarray(2))) return void this.refuse(INVALID_DATA, 'Close reason not UTF-8');
        }
        // the client's last frame (RFC 6455 5.5.1): what follows is not read
        this.stop();
      }
      return this.sink.control(f);
    }
    if (this.fragments.length >= this.limits.maxFragments) return void this.refuse(POLICY_VIOLATION, `message in more than ${this.limits.maxFragments} frames`);
    this.fragments.push(f);
    if (!f.fin) return;
    const frames = this.fragments;
    const opcode = this.messageOpcode || f.opcode;
    this.fragments = [];
    this.messageOpcode = 0;
    this.messageBytes = 0;
    if (opcode === 2) return this.sink.message(frames, null);
    const payload = unmaskedPayload(frames);
    if (!isUtf8(payload)) return void this.refuse(INVALID_DATA, 'text message not UTF-8');
    this.sink.message(frames, payload.toString('utf8'));
  }

  /** The first `n` buffered bytes (n <= 14, a header), not consumed. */
  private peek(n: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length >= n) return first;
    const out = Buffer.allocUnsafe(n);
    let o = 0;
    for (let i = 0; o < n; i++) o += this.chunks[i]!.copy(out, o, 0, Math.min(this.chunks[i]!.length, n - o));
    return out;
  }

  /** Cut the first `n` buffered bytes out: a view of one chunk, or one copy across several. */
  private take(n: number): Buffer {
    this.buffered -= n;
    const first = this.chunks[0]!;
    if (n <= first.length) {
      if (n === first.length) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let o = 0;
    let i = 0;
    while (o < n) {
      const c = this.chunks[i]!;
      const k = Math.min(c.length, n - o);
      c.copy(out, o, 0, k);
      o += k;
      if (k < c.length) this.chunks[i] = c.subarray(k);
      else i++;
    }
    // one splice for every chunk used up (shifting them one by one would cost their count each time)
    this.chunks.splice(0, i);
    return out;
  }
}
