// WebSocket bytes for tests that speak the protocol over raw sockets (RFC 6455): the client's
// handshake, an upstream's 101 to it (the accept key of that handshake's key), a masked text frame,
// a client frame of any shape, and the `ws` package's frame reader.
import { createRequire } from 'node:module';
import net from 'node:net';
import type { Writable } from 'node:stream';
import WebSocket from 'ws';
import { sleep } from './wait.js';

export const HANDSHAKE =
  'GET /ws/socket.io/ HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';
export const ACCEPT =
  'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n';

/** A masked client text frame (payload under 126 bytes). */
export function frame(text: string): Buffer {
  const p = Buffer.from(text);
  const mask = Buffer.from([1, 2, 3, 4]);
  const out = Buffer.alloc(6 + p.length);
  out[0] = 0x81;
  out[1] = 0x80 | p.length;
  mask.copy(out, 2);
  for (let i = 0; i < p.length; i++) out[6 + i] = p[i]! ^ mask[i & 3]!;
  return out;
}

/** A client frame of any shape, the forbidden ones included (masked unless told otherwise). */
export function clientFrame(opcode: number, payload: Buffer, o: { fin?: boolean; rsv?: number; masked?: boolean } = {}): Buffer {
  const masked = o.masked ?? true;
  const n = payload.length;
  const head = [((o.fin ?? true) ? 0x80 : 0) | ((o.rsv ?? 0) << 4) | opcode];
  const m = masked ? 0x80 : 0;
  if (n < 126) head.push(m | n);
  else if (n < 65536) head.push(m | 126, n >> 8, n & 0xff);
  else head.push(m | 127, 0, 0, 0, 0, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
  const mask = [0x5a, 0x13, 0xc4, 0x07];
  if (masked) head.push(...mask);
  const body = Buffer.from(payload);
  if (masked) for (let i = 0; i < body.length; i++) body[i]! ^= mask[i & 3]!;
  return Buffer.concat([Buffer.from(head), body]);
}

/** The `ws` package's own frame reader, as its servers (isServer) and clients use it; its type declarations leave it out. */
export type WsReceiver = Writable & { errored: Error | null };
export const Receiver = createRequire(import.meta.url)('ws').Receiver as new (o: {
  isServer: boolean;
  maxPayload?: number;
  maxFragments?: number;
}) => WsReceiver;

export interface RawWebSocket {
  /** the answer's head, up to its blank line */
  head: string;
  /** messages that came (binary ones as `<binary hex>`) */
  received: string[];
  /** the Close frame that came, the reader's error, whether the connection ended */
  state: { close?: number; reason?: string; error?: string; ended: boolean };
  send(bytes: Buffer): void;
  destroy(): void;
}

/**
 * A WebSocket spoken byte by byte (to send frames a WebSocket client never would), its server's
 * frames read by the `ws` package's client-side reader. Resolves once the answer's head came.
 */
export async function rawWebSocket(
  base: string,
  headers: Record<string, string> = {},
  path = '/ws/socket.io/?EIO=4&transport=websocket',
): Promise<RawWebSocket> {
  const url = new URL(base);
  const s = net.connect(Number(url.port), url.hostname);
  s.on('error', () => {});
  const out: RawWebSocket = { head: '', received: [], state: { ended: false }, send: (b) => void s.write(b), destroy: () => s.destroy() };
  const rx = new Receiver({ isServer: false });
  rx.on('message', (data: Buffer, isBinary: boolean) => out.received.push(isBinary ? `<binary ${data.toString('hex')}>` : data.toString()));
  rx.on('conclude', (code: number, reason: Buffer) => Object.assign(out.state, { close: code, reason: reason.toString() }));
  rx.on('error', (err: Error) => (out.state.error = err.message));
  let raw = Buffer.alloc(0);
  let open = false;
  s.on('data', (d: Buffer) => {
    if (open) return void (out.state.close === undefined && !out.state.error && rx.write(d));
    raw = Buffer.concat([raw, d]);
    const end = raw.indexOf('\r\n\r\n');
    if (end < 0) return;
    open = true;
    out.head = raw.subarray(0, end + 4).toString('latin1');
    if (raw.length > end + 4) rx.write(raw.subarray(end + 4));
  });
  s.on('close', () => (out.state.ended = true));
  await new Promise((r) => s.once('connect', r));
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  s.write(
    `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra.join('')}\r\n`,
  );
  for (let t = 0; !open && !out.state.ended && t < 10_000; t += 10) await sleep(10);
  return out;
}

/** Does a Socket.IO WebSocket open at `url` (the gateway) with these headers? 101, or the status it was refused with. */
export function socketIoUpgradeStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((done, fail) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, { headers });
    ws.once('upgrade', (res) => {
      done(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.once('unexpected-response', (_req, res) => {
      done(res.statusCode ?? 0);
      res.resume();
    });
    ws.once('error', (err) => (err.message.includes('Unexpected server response') ? undefined : fail(err)));
  });
}
