// An admin's Socket.IO traffic, read by the gateway: Open WebUI lets any admin join and
// edit any note live (socket/main.py `join-note`, `ydoc:document:*`; judged while
// CHATUI_BYPASS_ADMIN_ACCESS_CONTROL is false) and join any chat's room, its live tokens
// (`events:chat` type `join`; judged always, ENABLE_ADMIN_CHAT_ACCESS is fixed false). Both
// transports are read:
//   - WebSocket: the client's frames are read as RFC 6455 has a server read them
//     (gateway/http/websocket-frames.ts: a frame the protocol forbids closes the connection, 1002),
//     each Engine.IO message packet (`4...`) is a Socket.IO packet (`2` event, `5` binary event with
//     attachments that follow as binary messages); an event the rule drops is not sent on, nor are
//     its attachments. Frames that pass are sent on byte for byte, in order. The upgrade is made
//     without permessage-deflate so every payload can be read.
//   - HTTP long-polling: the POST body's packets (separated by \x1e, attachments as `b<base64>`)
//     are judged the same way and the body is rebuilt from the packets that pass.
// The rule (which event needs which note, with which permission) is policies/socket-events.ts
// `socketEventNeed`; whether the admin may reach the note is asked of the upstream, as for
// GET /api/v1/notes/{id}. A collaborative document's update must decode as Yjs (socketUpdateNeed),
// with either switch: Open WebUI 0.11.4 keeps one that does not, and the document can no longer be
// joined. Plain users never come here: their sockets stay a byte pipe.
import { ClientFrameReader, type ClientFrame } from './websocket-frames.js';
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
  /** what a document update carries (policies/socket-events.ts socketUpdateNeed): checked last */
  update?: SocketEventNeed;
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
    update: socketUpdateNeed(parsed.event, parsed.data),
    attachments: parsed.attachments,
    event: parsed.event,
  };
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
