// An admin's Socket.IO traffic, read by the gateway: Open WebUI lets any admin join and edit any note
// live and join any chat's room (policies/socket-events.ts says which event needs what). An event the
// rule drops never reaches Open WebUI, nor does a packet the gateway cannot read (fail closed); how
// the guard reads and what it sends on: docs/design/websocket-frames.md, "The guard".
import { decodePacket } from 'engine.io-parser';
import { Decoder, PacketType, type Packet } from 'socket.io-parser';
import { ClientFrameReader, type ClientFrame } from '../http/websocket-frames.js';
import { socketDataToken, socketEventNeed, socketTokenNeed, socketUpdateNeed, type SocketEventNeed } from '../../policies/socket-events.js';

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

/** Engine.IO's separator of a long-polling body's packets (engine.io-parser splits on it without exporting it). */
const POLLING_SEPARATOR = '\x1e';

/** One Socket.IO packet as socket.io-parser reads it, or 'unreadable' when it refuses the packet. */
function decodeSocketIo(text: string): Packet | 'unreadable' {
  const decoder = new Decoder();
  let packet: Packet | undefined;
  decoder.on('decoded', (p: Packet) => (packet = p));
  try {
    decoder.add(text);
  } catch {
    return 'unreadable';
  }
  return packet ?? 'unreadable';
}

/**
 * A BINARY_EVENT's attachment count and the packet after it, read here: socket.io-parser's Decoder
 * gives a binary event only once its attachments have arrived, while the guard judges the event
 * before them, to send them on or drop them as they come. Digits only, as python-socketio reads
 * them (the library also takes `1e0-` and ` 1-`).
 */
function binaryEventHeader(packet: string): { attachments: number; rest: string } | undefined {
  const header = /^[0-9]+-/.exec(packet.slice(1))?.[0];
  if (header === undefined) return undefined;
  return { attachments: Number(header.slice(0, -1)), rest: packet.slice(1 + header.length) };
}

/** A Socket.IO packet of an Engine.IO message: an event, or undefined for anything else. */
export function parseSocketIoPacket(packet: string): ParsedEvent | 'unreadable' | undefined {
  const type = packet[0];
  const binary = type === String(PacketType.BINARY_EVENT);
  if (type !== String(PacketType.EVENT) && !binary) return undefined; // CONNECT, DISCONNECT, ACK, ... carry no event
  const header = binary ? binaryEventHeader(packet) : { attachments: 0, rest: packet.slice(1) };
  if (header === undefined) return 'unreadable';
  // The event's namespace, ack id and arguments, read as an EVENT (a BINARY_EVENT's are the same).
  const decoded = decodeSocketIo(`${PacketType.EVENT}${header.rest}`);
  if (decoded === 'unreadable') return 'unreadable';
  const args: unknown = decoded.data;
  if (!Array.isArray(args) || typeof args[0] !== 'string') return 'unreadable';
  return { event: args[0], data: args[1], attachments: header.attachments };
}

/** A CONNECT packet's auth payload (an object, or undefined when it carries none), or 'unreadable'. */
export function parseConnectAuth(packet: string): unknown {
  const decoded = decodeSocketIo(packet);
  return decoded === 'unreadable' ? 'unreadable' : decoded.data;
}

export interface JudgedPacket {
  /** the token the packet carries: checked first */
  token: SocketEventNeed;
  need: SocketEventNeed;
  /** what a document update carries (policies/socket-events.ts socketUpdateNeed): checked last */
  update?: SocketEventNeed;
  attachments: number;
  event?: string;
  /** a binary Engine.IO message: the attachment of the binary event before it */
  attachment?: true;
}

const NONE: SocketEventNeed = { need: 'none' };
const PASS: JudgedPacket = { token: NONE, need: NONE, attachments: 0 };
/** A binary WebSocket message: an attachment. */
const BINARY: JudgedPacket = { ...PASS, attachment: true };

/** What to do with one Engine.IO packet's text (a polling body's packet, a WebSocket text message). */
export function judgePacket(text: string, judgeNotes: boolean): JudgedPacket {
  const message = decodePacket(text);
  if (message.type !== 'message') return PASS;
  // `b<base64>` is binary however it comes, as python-engineio reads it.
  if (message.data !== undefined && typeof message.data !== 'string') return BINARY;
  const packet = message.data ?? '';
  if (packet[0] === String(PacketType.CONNECT)) return judgeConnect(packet);
  const parsed = parseSocketIoPacket(packet);
  if (parsed === undefined) return PASS;
  // An event the gateway cannot read is not sent on for an admin (fail closed).
  if (parsed === 'unreadable') return { token: NONE, need: { need: 'drop', why: 'unreadable Socket.IO packet' }, attachments: 0 };
  return {
    token: socketTokenNeed(socketDataToken(parsed.data)),
    need: socketEventNeed(parsed.event, parsed.data, judgeNotes),
    update: socketUpdateNeed(parsed.event, parsed.data),
    attachments: parsed.attachments,
    event: parsed.event,
  };
}

function judgeConnect(packet: string): JudgedPacket {
  const auth = parseConnectAuth(packet);
  if (auth === 'unreadable') return { token: NONE, need: { need: 'drop', why: 'unreadable Socket.IO CONNECT' }, attachments: 0, event: 'connect' };
  const token = typeof auth === 'object' && auth !== null ? (auth as { token?: unknown }).token : undefined;
  return { token: socketTokenNeed(token), need: NONE, attachments: 0, event: 'connect' };
}

/** Asks whether the admin may reach the note or chat an event names, or owns the account its token opens; false drops the event. */
export type SocketJudge = (need: Extract<SocketEventNeed, { need: 'note' | 'own-chat' | 'own-account' }>) => Promise<boolean>;
export type DropReport = (event: string | undefined, why: string) => void;

async function allowed(j: JudgedPacket, judge: SocketJudge, report: DropReport): Promise<boolean> {
  return (
    (await allowedBy(j.token, j.event, judge, report)) &&
    (await allowedBy(j.need, j.event, judge, report)) &&
    (await allowedBy(j.update ?? NONE, j.event, judge, report))
  );
}

/** yjs, loaded on the first document update an admin sends (nobody else's frames are read). */
let yjs: Promise<typeof import('yjs')> | undefined;

/** Do these bytes decode as a Yjs update, as Open WebUI 0.12 asks of one before it keeps it (applied to an empty document)? */
export async function decodesAsYjsUpdate(bytes: readonly number[]): Promise<boolean> {
  const Y = await (yjs ??= import('yjs'));
  try {
    Y.applyUpdate(new Y.Doc(), Uint8Array.from(bytes));
    return true;
  } catch {
    return false;
  }
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
  if (n.need === 'yjs-update') {
    const ok = await decodesAsYjsUpdate(n.bytes);
    if (!ok)
      report(event, 'a collaborative document update that does not decode (Open WebUI 0.11.4 would keep it, and the document could no longer be joined)');
    return ok;
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
  for (const packet of body.split(POLLING_SEPARATOR)) {
    const j = judgePacket(packet, judgeNotes);
    if (j.attachment) {
      if (skipAttachments > 0) skipAttachments--;
      else kept.push(packet);
      continue;
    }
    if (await allowed(j, judge, report)) kept.push(packet);
    else skipAttachments = j.attachments;
  }
  return kept.length ? kept.join('\x1e') : undefined;
}

/**
 * The client-to-upstream direction of an admin's WebSocket. `write` takes the client's bytes
 * (read by ClientFrameReader, gateway/http/websocket-frames.ts); `send` receives what goes on to the upstream, whole
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
    const pass = text === undefined || (await this.judged(text === null ? BINARY : judgePacket(text, this.judgeNotes)));
    if (pass && !this.failed) for (const f of frames) this.send(f.raw);
  }

  /** A message's judgement: an attachment goes with its event; an event as the rule says. */
  private async judged(j: JudgedPacket): Promise<boolean> {
    if (j.attachment) {
      if (this.skipAttachments === 0) return true;
      this.skipAttachments--;
      return false;
    }
    if (await allowed(j, this.judge, this.report)) return true;
    this.skipAttachments = j.attachments;
    return false;
  }
}
