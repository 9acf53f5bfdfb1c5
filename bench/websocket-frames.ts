// `node --import tsx bench/websocket-frames.ts`: the admin WebSocket reader against the `ws` package's
// Receiver doing the guard's job, in one process, interleaved, so the two see the same machine
// (bench/README.md; docs/design/websocket-frames.md, why the reader stays).
import { createRequire } from 'node:module';
import type { Writable } from 'node:stream';
import { ClientFrameReader } from '../gateway/http/websocket-frames.js';
import { MAX_GUARDED_FRAGMENTS, MAX_GUARDED_MESSAGE_BYTES } from '../gateway/enforcement/socketio-guard.js';
import { median } from './compare.js';

const require = createRequire(import.meta.url);
type WsReceiver = Writable & { errored: Error | null };
const { Receiver, Sender } = require('ws') as {
  Receiver: new (o: { isServer: boolean; maxPayload: number; maxFragments: number }) => WsReceiver;
  Sender: { frame(data: Buffer, o: { fin: boolean; opcode: number; mask: boolean; readOnly: boolean; rsv1: boolean }): Buffer[] };
};

const ROUNDS = Number(process.env.ROUNDS ?? 7);

/** A masked client frame. */
function frame(opcode: number, payload: Buffer, fin = true): Buffer {
  const n = payload.length;
  const head = [(fin ? 0x80 : 0) | opcode];
  if (n < 126) head.push(0x80 | n);
  else if (n < 65536) head.push(0x80 | 126, n >> 8, n & 0xff);
  else head.push(0x80 | 127, 0, 0, 0, 0, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
  const mask = [0x5a, 0x13, 0xc4, 0x07];
  const body = Buffer.from(payload);
  for (let i = 0; i < n; i++) body[i]! ^= mask[i & 3]!;
  return Buffer.concat([Buffer.from([...head, ...mask]), body]);
}

function inReads(bytes: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o < bytes.length; o += size) out.push(bytes.subarray(o, o + size));
  return out;
}

interface Workload {
  name: string;
  messages: number;
  bytes: number;
  /** a fresh copy of the client's reads (the Receiver unmasks them in place) */
  reads(): Buffer[];
}

function socketIoEvents(count: number): Buffer[] {
  return Array.from({ length: count }, (_, i) =>
    frame(1, Buffer.from(`42${JSON.stringify(['usage', { action: 'update', model: 'canned-answers', chat_id: `c-${i % 97}`, message_id: `m-${i}` }])}`)),
  );
}

function workloads(): Workload[] {
  const events = socketIoEvents(20_000);
  const eventBytes = Buffer.concat(events);
  const big = Buffer.concat(Array.from({ length: 16 }, () => frame(2, Buffer.alloc(1 << 20, 7))));
  const text = Buffer.from(`42${JSON.stringify(['heartbeat', 'x'.repeat(8 * (1 << 20) - 20)])}`);
  const step = Math.ceil(text.length / 4);
  const fragmented = Buffer.concat(Array.from({ length: 4 }, (_, k) => frame(k === 0 ? 1 : 0, text.subarray(k * step, (k + 1) * step), k === 3)));
  return [
    { name: 'Socket.IO events (~110 B), one a read', messages: events.length, bytes: eventBytes.length, reads: () => events.map((e) => Buffer.from(e)) },
    {
      name: 'Socket.IO events (~110 B), 64 KiB reads',
      messages: events.length,
      bytes: eventBytes.length,
      reads: () => inReads(Buffer.from(eventBytes), 65536),
    },
    { name: '1 MiB binary messages, 64 KiB reads', messages: 16, bytes: big.length, reads: () => inReads(Buffer.from(big), 65536) },
    { name: '8 MiB text in 4 frames, 64 KiB reads', messages: 1, bytes: fragmented.length, reads: () => inReads(Buffer.from(fragmented), 65536) },
  ];
}

/** The gateway's reader: the frames as the client sent them, a text message decoded once. */
function byReader(reads: Buffer[]): { out: number; texts: number } {
  let out = 0;
  let texts = 0;
  const reader = new ClientFrameReader(
    {
      message: (frames, text) => {
        if (text !== null) texts += text.length;
        for (const f of frames) out += f.raw.length;
      },
      control: (f) => (out += f.raw.length),
      refuse: (code, why) => {
        throw new Error(`refused ${code}: ${why}`);
      },
    },
    { maxMessageBytes: MAX_GUARDED_MESSAGE_BYTES, maxFragments: MAX_GUARDED_FRAGMENTS },
  );
  for (const r of reads) reader.write(r);
  return { out, texts };
}

/** ws's Receiver as a ws server reads its clients, each message framed again (masked) to be sent on. */
function byReceiver(reads: Buffer[]): { out: number; texts: number } {
  let out = 0;
  let texts = 0;
  const rx = new Receiver({ isServer: true, maxPayload: MAX_GUARDED_MESSAGE_BYTES, maxFragments: MAX_GUARDED_FRAGMENTS });
  rx.on('message', (data: Buffer, isBinary: boolean) => {
    if (!isBinary) texts += data.toString().length;
    for (const b of Sender.frame(data, { fin: true, opcode: isBinary ? 2 : 1, mask: true, readOnly: false, rsv1: false })) out += b.length;
  });
  rx.on('error', (err: Error) => {
    throw err;
  });
  for (const r of reads) rx.write(r);
  return { out, texts };
}

/** Runs `work`, counting the bytes of every Buffer made meanwhile (alloc, allocUnsafe, concat, from: a copy or a new buffer each). */
function buffersMadeBy<T>(work: () => T): { result: T; made: number } {
  const B = Buffer as unknown as Record<string, (...a: unknown[]) => Buffer>;
  const saved: Record<string, (...a: unknown[]) => Buffer> = {};
  let made = 0;
  for (const name of ['alloc', 'allocUnsafe', 'allocUnsafeSlow', 'concat', 'from']) {
    const original = (saved[name] = B[name]!);
    B[name] = (...a: unknown[]) => {
      const out = original.apply(Buffer, a);
      made += out.length;
      return out;
    };
  }
  try {
    return { result: work(), made };
  } finally {
    Object.assign(B, saved);
  }
}

function measure(run: (reads: Buffer[]) => { out: number; texts: number }, w: Workload, countBuffers: boolean) {
  const reads = w.reads();
  if (countBuffers) return { ms: NaN, made: buffersMadeBy(() => run(reads)).made };
  const t0 = process.hrtime.bigint();
  run(reads);
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, made: NaN };
}

const fmtRow = (cells: string[], widths: number[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;

function main(): void {
  const rows: string[][] = [];
  for (const w of workloads()) {
    const samples = { reader: [] as number[], receiver: [] as number[] };
    for (let r = 0; r < ROUNDS; r++) {
      // alternate which goes first, so neither always runs on a warmer heap
      const order = r % 2 ? (['receiver', 'reader'] as const) : (['reader', 'receiver'] as const);
      for (const who of order) {
        const m = measure(who === 'reader' ? byReader : byReceiver, w, false);
        if (r > 0) samples[who].push(m.ms); // the first round warms both up
      }
    }
    for (const who of ['reader', 'receiver'] as const) {
      const ms = median(samples[who]);
      const made = measure(who === 'reader' ? byReader : byReceiver, w, true).made;
      rows.push([
        w.name,
        who === 'reader' ? 'ClientFrameReader' : 'ws Receiver + Sender.frame',
        `${ms.toFixed(2)} ms`,
        `${(w.bytes / 1048576 / (ms / 1000)).toFixed(0)} MB/s`,
        `${((ms * 1e3) / w.messages).toFixed(2)} us`,
        `${(made / w.bytes).toFixed(2)}x`,
      ]);
    }
  }
  const header = ['workload', 'reader', 'time (median)', 'throughput', 'per message', 'Buffers made / bytes read'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  console.log(`node ${process.version}, ${ROUNDS - 1} measured rounds each, interleaved`);
  console.log(fmtRow(header, widths));
  console.log(`|${widths.map((x) => '-'.repeat(x + 2)).join('|')}|`);
  for (const r of rows) console.log(fmtRow(r, widths));
}

main();
