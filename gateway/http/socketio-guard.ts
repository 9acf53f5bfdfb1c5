// An admin's Socket.IO traffic, read by the gateway (issue 24): Open WebUI lets any admin join and
// edit any note live (socket/main.py `join-note`, `ydoc:document:*`; judged while
// CHATUI_BYPASS_ADMIN_ACCESS_CONTROL is false) and join any chat's room, its live tokens
// (`events:chat` type `join`; judged always, ENABLE_ADMIN_CHAT_ACCESS is fixed false). Both
// transports are read:
//   - WebSocket: the client's frames are read as RFC 6455 has a server read them
//     (the reader, below: a frame the protocol forbids closes the connection, 1002),
//     each Engine.IO message packet (`4...`) is a Socket.IO packet (`2` event, `5` binary event with
//     attachments that follow as binary messages); an event the rule drops is not sent on, nor are
//     its attachments. Frames that pass are sent on byte for byte, in order. The upgrade is made
//     without permessage-deflate so every payload can be read.
//   - HTTP long-polling: the POST body's packets (separated by \x1e, attachments as `b<base64>`)
//     are judged the same way and the body is rebuilt from the packets that pass.
// The rule (which event needs which note, with which permission) is policies/socket-events.ts
// `socketEventNeed`; whether the admin may reach the note is asked of the upstream, as for
// GET /api/v1/notes/{id}. Plain users never come here: their sockets stay a byte pipe.
import { isUtf8 } from 'node:buffer';
import { socketDataToken, socketEventNeed, socketTokenNeed, type SocketEventNeed } from '../../policies/socket-events.js';

/** Largest client message the guard assembles; past it the connection is closed. */
export const MAX_GUARDED_MESSAGE_BYTES = 16 * 1024 * 1024;
/** Most frames of one client message (each is held until the message is whole; as `ws` servers allow). */
export const MAX_GUARDED_FRAGMENTS = 16 * 1024;
/** Bytes of an admin's frames that may wait for judgements before the client is no longer read. */
export const MAX_QUEUED_BYTES = 1024 * 1024;

export interface ParsedEvent {
  event: string;
  data: unknown;
  /** binary attachments that follow (BINARY_EVENT) */
  attachments: number;
}

/** A Socket.IO packet of an Engine.IO message (`4` already removed): an event, or undefined for anything else. */
export function parseSocketIoPacket(packet: string): ParsedEvent | 'unreadable' | undefined {
  const type = packet[0];
  if (type !== '2' && type !== '5') return undefined; // CONNECT, DISCONNECT, ACK, ... carry no event
  let i = 1;
  let attachments = 0;
  if (type === '5') {
    const dash = packet.indexOf('-', i);
    if (dash < 0 || !/^[0-9]+$/.test(packet.slice(i, dash))) return 'unreadable';
    attachments = Number(packet.slice(i, dash));
    i = dash + 1;
  }
  if (packet[i] === '/') {
    const comma = packet.indexOf(',', i);
    if (comma < 0) return 'unreadable';
    i = comma + 1;
  }
  while (i < packet.length && packet[i]! >= '0' && packet[i]! <= '9') i++; // ack id
  try {
    const args = JSON.parse(packet.slice(i)) as unknown;
    if (!Array.isArray(args) || typeof args[0] !== 'string') return 'unreadable';
    return { event: args[0], data: args[1], attachments };
  } catch {
    return 'unreadable';
  }
}

/** A CONNECT packet's auth payload (`0`, optional `/namespace,`, optional JSON), or 'unreadable'. */
export function parseConnectAuth(packet: string): unknown {
  let rest = packet.slice(1);
  if (rest[0] === '/') {
    const comma = rest.indexOf(',');
    rest = comma < 0 ? '' : rest.slice(comma + 1);
  }
  if (rest === '') return undefined;
  try {
    return JSON.parse(rest) as unknown;
  } catch {
    return 'unreadable';
  }
}

export interface JudgedPacket {
  /** the token the packet carries: checked first */
  token: SocketEventNeed;
  need: SocketEventNeed;
  attachments: number;
  event?: string;
}

const NONE: SocketEventNeed = { need: 'none' };

/** What to do with one Engine.IO packet's text. */
export function judgePacket(text: string, judgeNotes: boolean): JudgedPacket {
  if (text[0] !== '4') return { token: NONE, need: NONE, attachments: 0 };
  const packet = text.slice(1);
  if (packet[0] === '0') {
    const auth = parseConnectAuth(packet);
    if (auth === 'unreadable') return { token: NONE, need: { need: 'drop', why: 'unreadable Socket.IO CONNECT' }, attachments: 0, event: 'connect' };
    return {
      token: socketTokenNeed(typeof auth === 'object' && auth !== null ? (auth as { token?: unknown }).token : undefined),
      need: NONE,
      attachments: 0,
      event: 'connect',
    };
  }
  const parsed = parseSocketIoPacket(packet);
  if (parsed === undefined) return { token: NONE, need: NONE, attachments: 0 };
  // An event the gateway cannot read is not sent on for an admin (fail closed).
  if (parsed === 'unreadable') return { token: NONE, need: { need: 'drop', why: 'unreadable Socket.IO packet' }, attachments: 0 };
  return {
    token: socketTokenNeed(socketDataToken(parsed.data)),
    need: socketEventNeed(parsed.event, parsed.data, judgeNotes),
    attachments: parsed.attachments,
    event: parsed.event,
  };
}

/** Asks whether the admin may reach the note or chat an event names, or owns the account its token opens; false drops the event. */
export type SocketJudge = (need: Extract<SocketEventNeed, { need: 'note' | 'own-chat' | 'own-account' }>) => Promise<boolean>;
export type DropReport = (event: string | undefined, why: string) => void;

async function allowed(j: JudgedPacket, judge: SocketJudge, report: DropReport): Promise<boolean> {
  return (await allowedBy(j.token, j.event, judge, report)) && (await allowedBy(j.need, j.event, judge, report));
}

function refusal(n: Extract<SocketEventNeed, { need: 'note' | 'own-chat' | 'own-account' }>): string {
  if (n.need === 'note') return `note ${n.noteId}: not the admin's own and not shared with them (${n.permission})`;
  if (n.need === 'own-chat') return `chat ${n.chatId}: not the admin's own (ENABLE_ADMIN_CHAT_ACCESS fixed false)`;
  return `token of account ${n.userId}: not the admin's own`;
}

async function allowedBy(n: SocketEventNeed, event: string | undefined, judge: SocketJudge, report: DropReport): Promise<boolean> {
  if (n.need === 'none') return true;
  if (n.need === 'drop') {
    report(event, n.why);
    return false;
  }
  const ok = await judge(n).catch(() => false);
  if (!ok) report(event, refusal(n));
  return ok;
}

/**
 * A long-polling POST body: the packets that pass, re-joined; undefined when none is left (the
 * gateway then answers as Engine.IO does, `OK`, without calling the upstream).
 */
export async function guardPollingBody(body: string, judge: SocketJudge, report: DropReport, judgeNotes: boolean): Promise<string | undefined> {
  const kept: string[] = [];
  let skipAttachments = 0;
  for (const packet of body.split('\x1e')) {
    if (packet.startsWith('b')) {
      if (skipAttachments > 0) skipAttachments--;
      else kept.push(packet);
      continue;
    }
    const j = judgePacket(packet, judgeNotes);
    if (await allowed(j, judge, report)) kept.push(packet);
    else skipAttachments = j.attachments;
  }
  return kept.length ? kept.join('\x1e') : undefined;
}

/**
 * The client-to-upstream direction of an admin's WebSocket. `write` takes the client's bytes
 * (read by ClientFrameReader, below); `send` receives what goes on to the upstream, whole
 * frames in order, except that a control frame (ping, pong, Close) sent between the frames of a
 * fragmented message goes on before that message, which waits until it is whole and judged.
 * `fail` is called once, with the Close code for the client, when the client breaks the protocol
 * or sends too much; nothing more goes on after it, not even messages still being judged (the
 * caller closes the connection).
 */
export class WebSocketGuard {
  private readonly reader: ClientFrameReader;
  private chain: Promise<void> = Promise.resolve();
  private skipAttachments = 0;
  private failed = false;
  /** bytes of frames waiting in the chain (behind a judgement that asks Open WebUI) */
  private queued = 0;
  private held = false;

  constructor(
    private readonly judge: SocketJudge,
    private readonly report: DropReport,
    private readonly send: (bytes: Buffer) => void,
    private readonly fail: (code: number, why: string) => void,
    /** note events are judged while the bypass is off; chat joins always */
    private readonly judgeNotes: boolean,
    /** the client's reading: paused while more than MAX_QUEUED_BYTES wait, resumed at half */
    private readonly flow?: { pause(): void; resume(): void },
  ) {
    this.reader = new ClientFrameReader(
      {
        message: (frames, text) => this.enqueue(frames, text),
        control: (frame) => this.enqueue([frame], undefined),
        refuse: (code, why) => this.abort(code, why),
      },
      { maxMessageBytes: MAX_GUARDED_MESSAGE_BYTES, maxFragments: MAX_GUARDED_FRAGMENTS },
    );
  }

  write(chunk: Buffer): void {
    if (!this.failed) this.reader.write(chunk);
  }

  /** `done` once every frame written so far has been judged and sent on (or dropped). */
  end(done: () => void): void {
    this.chain = this.chain.then(done, done);
  }

  private abort(code: number, why: string): void {
    if (this.failed) return;
    this.failed = true;
    this.fail(code, why);
  }

  /** `text`: a text message to judge; null: a binary message (an attachment); undefined: a control frame. */
  private enqueue(frames: ClientFrame[], text: string | null | undefined): void {
    // Frames behind a judgement wait in memory: a client writing faster than Open WebUI answers
    // the lookups is paused instead of being buffered without bound.
    const bytes = frames.reduce((n, f) => n + f.raw.length, 0);
    this.queued += bytes;
    if (this.queued > MAX_QUEUED_BYTES && !this.held) {
      this.held = true;
      this.flow?.pause();
    }
    this.chain = this.chain.then(async () => {
      try {
        await this.pass(frames, text);
      } finally {
        this.queued -= bytes;
        if (this.held && this.queued <= MAX_QUEUED_BYTES / 2) {
          this.held = false;
          this.flow?.resume();
        }
      }
    });
  }

  /** One message (or control frame) in its turn: judged, then sent on or dropped. */
  private async pass(frames: ClientFrame[], text: string | null | undefined): Promise<void> {
    if (this.failed) return;
    let pass = true;
    if (text === null) {
      if (this.skipAttachments > 0) {
        this.skipAttachments--;
        pass = false;
      }
    } else if (text !== undefined) {
      const j = judgePacket(text, this.judgeNotes);
      pass = await allowed(j, this.judge, this.report);
      if (!pass) this.skipAttachments = j.attachments;
    }
    if (pass && !this.failed) for (const f of frames) this.send(f.raw);
  }
}

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
// bytes (test/websocket-reader.test.ts). Bytes after a Close frame are not read.

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
