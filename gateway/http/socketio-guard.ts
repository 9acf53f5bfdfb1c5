// An admin's Socket.IO traffic, read by the gateway (issue 24): Open WebUI lets any admin join and
// edit any note live (socket/main.py `join-note`, `ydoc:document:*`; judged while
// CHATUI_BYPASS_ADMIN_ACCESS_CONTROL is false) and join any chat's room, its live tokens
// (`events:chat` type `join`; judged always, ENABLE_ADMIN_CHAT_ACCESS is fixed false). Both
// transports are read:
//   - WebSocket: the client's frames are parsed (RFC 6455: masked, possibly fragmented), each
//     Engine.IO message packet (`4...`) is a Socket.IO packet (`2` event, `5` binary event with
//     attachments that follow as binary messages); an event the rule drops is not sent on, nor are
//     its attachments. Frames that pass are sent on byte for byte, in order. The upgrade is made
//     without permessage-deflate so every payload can be read.
//   - HTTP long-polling: the POST body's packets (separated by \x1e, attachments as `b<base64>`)
//     are judged the same way and the body is rebuilt from the packets that pass.
// The rule (which event needs which note, with which permission) is policies/open-webui-routes.ts
// `socketEventNeed`; whether the admin may reach the note is asked of the upstream, as for
// GET /api/v1/notes/{id}. Plain users never come here: their sockets stay a byte pipe.
import { socketDataToken, socketEventNeed, socketTokenNeed, type SocketEventNeed } from '../../policies/open-webui-routes.js';

/** Largest client message the guard assembles; past it the connection is closed. */
export const MAX_GUARDED_MESSAGE_BYTES = 16 * 1024 * 1024;
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

interface Frame {
  raw: Buffer;
  fin: boolean;
  opcode: number;
  payload: Buffer;
}

/**
 * The client-to-upstream direction of an admin's WebSocket. `write` takes the client's bytes;
 * `send` receives what goes on to the upstream, in order; `fail` is called on a protocol error or
 * an oversized message (the connection is then closed by the caller).
 */
export class WebSocketGuard {
  private buf: Buffer = Buffer.alloc(0);
  private chain: Promise<void> = Promise.resolve();
  /** frames of a fragmented data message, until its FIN */
  private fragments: Frame[] = [];
  private fragmentBytes = 0;
  private skipAttachments = 0;
  private failed = false;
  /** bytes of frames waiting in the chain (behind a judgement that asks Open WebUI) */
  private queued = 0;
  private held = false;

  constructor(
    private readonly judge: SocketJudge,
    private readonly report: DropReport,
    private readonly send: (bytes: Buffer) => void,
    private readonly fail: (why: string) => void,
    /** note events are judged while the bypass is off; chat joins always */
    private readonly judgeNotes: boolean,
    /** the client's reading: paused while more than MAX_QUEUED_BYTES wait, resumed at half */
    private readonly flow?: { pause(): void; resume(): void },
  ) {}

  write(chunk: Buffer): void {
    if (this.failed) return;
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    for (;;) {
      const frame = this.nextFrame();
      if (!frame) return;
      this.onFrame(frame);
      if (this.failed) return;
    }
  }

  /** `done` once every frame written so far has been judged and sent on (or dropped). */
  end(done: () => void): void {
    this.chain = this.chain.then(done, done);
  }

  private nextFrame(): Frame | undefined {
    const b = this.buf;
    if (b.length < 2) return undefined;
    const masked = (b[1]! & 0x80) !== 0;
    let len = b[1]! & 0x7f;
    let off = 2;
    if (len === 126) {
      if (b.length < 4) return undefined;
      len = b.readUInt16BE(2);
      off = 4;
    } else if (len === 127) {
      if (b.length < 10) return undefined;
      const big = b.readBigUInt64BE(2);
      if (big > BigInt(MAX_GUARDED_MESSAGE_BYTES)) return (this.abort('frame too large'), undefined);
      len = Number(big);
      off = 10;
    }
    if (len > MAX_GUARDED_MESSAGE_BYTES) return (this.abort('frame too large'), undefined);
    const maskOff = off;
    if (masked) off += 4;
    if (b.length < off + len) return undefined;
    const raw = b.subarray(0, off + len);
    this.buf = b.subarray(off + len);
    const payload = Buffer.from(raw.subarray(off));
    if (masked) for (let i = 0; i < payload.length; i++) payload[i]! ^= raw[maskOff + (i & 3)]!;
    // RSV bits: no extension was negotiated, so a set bit is a payload the gateway cannot read
    if ((raw[0]! & 0x70) !== 0) return (this.abort('compressed or extended frame'), undefined);
    return { raw: Buffer.from(raw), fin: (raw[0]! & 0x80) !== 0, opcode: raw[0]! & 0x0f, payload };
  }

  private abort(why: string): void {
    if (this.failed) return;
    this.failed = true;
    this.fail(why);
  }

  private onFrame(f: Frame): void {
    if (f.opcode >= 0x8) return this.enqueue([f], undefined); // control frames: in order, never judged
    if (f.opcode !== 0 && this.fragments.length) return this.abort('new message inside a fragmented one');
    if (f.opcode === 0 && !this.fragments.length) return this.abort('continuation without a message');
    this.fragments.push(f);
    this.fragmentBytes += f.payload.length;
    if (this.fragmentBytes > MAX_GUARDED_MESSAGE_BYTES) return this.abort('message too large');
    if (!f.fin) return;
    const frames = this.fragments;
    this.fragments = [];
    this.fragmentBytes = 0;
    const opcode = frames[0]!.opcode;
    this.enqueue(frames, opcode === 1 ? Buffer.concat(frames.map((x) => x.payload)).toString('utf8') : null);
  }

  /** `text`: a text message to judge; null: a binary message (an attachment); undefined: a control frame. */
  private enqueue(frames: Frame[], text: string | null | undefined): void {
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
  private async pass(frames: Frame[], text: string | null | undefined): Promise<void> {
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
