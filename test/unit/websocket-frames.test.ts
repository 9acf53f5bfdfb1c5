// The admin WebSocket reader (gateway/enforcement/socketio-guard.ts, ClientFrameReader) proved
// against an independent one: the `ws` package's own Receiver, as a `ws` server reads its clients.
// Random frame sequences (valid and invalid, fragmented messages with control frames between their
// frames, masked or not, every payload length encoding, split at random points) go to both, which
// must find the same messages, pings, pongs and Close, and refuse at the same point with the same
// code. Then the guard itself: what it sends on is the client's frames, whole; and what a large
// message costs it grows with the message, not with the number of reads it arrived in.
import { expect } from 'chai';
import fc from 'fast-check';
import { MAX_GUARDED_FRAGMENTS, MAX_GUARDED_MESSAGE_BYTES, WebSocketGuard } from '../../gateway/enforcement/socketio-guard.js';
import { ClientFrameReader, unmaskedPayload, type ReaderLimits } from '../../gateway/http/websocket-frames.js';
import { Receiver } from '../support/websocket-wire.js';

// Small limits, the same for both readers, so that random sequences reach them. The guard's own are
// MAX_GUARDED_MESSAGE_BYTES (16 MiB: stricter than a `ws` server's 100 MiB default, since every
// message of an admin is held whole to be judged) and MAX_GUARDED_FRAGMENTS (16,384, as `ws` servers).
const LIMITS: ReaderLimits = { maxMessageBytes: 600, maxFragments: 5 };

interface Spec {
  fin: boolean;
  rsv: number;
  opcode: number;
  masked: boolean;
  mask: number[];
  payload: Uint8Array;
  /** payload length field: the shortest, or 16 or 64 bits whatever the length */
  encoding: 'shortest' | 16 | 64;
  /** a length claimed without its payload following (a header alone) */
  claimed?: bigint;
}

function encode(s: Spec): Buffer {
  const n = s.claimed ?? BigInt(s.payload.length);
  const bits = s.encoding === 16 && n < 65536n ? 16 : s.encoding === 64 || n >= 65536n ? 64 : n < 126n ? 7 : 16;
  const head = [(s.fin ? 0x80 : 0) | (s.rsv << 4) | s.opcode];
  const mask = s.masked ? 0x80 : 0;
  if (bits === 7) head.push(mask | Number(n));
  else if (bits === 16) head.push(mask | 126, Number(n >> 8n), Number(n & 0xffn));
  else {
    head.push(mask | 127);
    for (let k = 7; k >= 0; k--) head.push(Number((n >> BigInt(8 * k)) & 0xffn));
  }
  if (s.masked) head.push(...s.mask);
  if (s.claimed !== undefined) return Buffer.from(head);
  const body = Buffer.from(s.payload);
  if (s.masked) for (let i = 0; i < body.length; i++) body[i]! ^= s.mask[i & 3]!;
  return Buffer.concat([Buffer.from(head), body]);
}

const maskKey = fc.oneof(
  { weight: 9, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 }) },
  { weight: 1, arbitrary: fc.constant<number[]>([0, 0, 0, 0]) },
);
const encoding = fc.constantFrom<Spec['encoding']>('shortest', 'shortest', 'shortest', 16, 64);
const utf8 = (maxLength: number) => fc.string({ unit: 'binary', maxLength }).map((t) => new Uint8Array(Buffer.from(t)));
/** mostly short, sometimes past 125 (the 16-bit length), rarely past the message limit */
const payload = fc.oneof(
  { weight: 6, arbitrary: fc.uint8Array({ maxLength: 40 }) },
  { weight: 3, arbitrary: fc.uint8Array({ minLength: 120, maxLength: 300 }) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 580, maxLength: 640 }) },
);
const textPayload = fc.oneof({ weight: 8, arbitrary: utf8(80) }, { weight: 2, arbitrary: payload });

type Item =
  | { control: Omit<Spec, 'fin' | 'rsv'> }
  | { message: { binary: boolean; payload: Uint8Array; cuts: number[]; controls: Array<{ at: number; spec: Omit<Spec, 'fin' | 'rsv'> }> } };

const controlSpec = fc.oneof(
  fc.record({ opcode: fc.constantFrom(9, 10), payload: fc.uint8Array({ maxLength: 125 }) }),
  fc.record({
    opcode: fc.constant(8),
    payload: fc.oneof(
      fc.constant(new Uint8Array(0)),
      fc
        .tuple(fc.constantFrom(1000, 1001, 1003, 1011, 1014, 3000, 4999), utf8(40))
        .map(([code, reason]) => new Uint8Array(Buffer.concat([Buffer.from([code >> 8, code & 0xff]), reason]))),
      fc
        .tuple(fc.integer({ min: 0, max: 65535 }), fc.uint8Array({ maxLength: 12 }))
        .map(([code, reason]) => new Uint8Array([code >> 8, code & 0xff, ...reason])),
    ),
  }),
);
const withFraming = <T extends object>(a: fc.Arbitrary<T>) =>
  fc.record({ x: a, masked: fc.constant(true), mask: maskKey, encoding }).map(({ x, ...rest }) => ({ ...x, ...rest }));
const control = withFraming(controlSpec);

const message = (text: fc.Arbitrary<Uint8Array>) =>
  fc.boolean().chain((binary) =>
    fc.record({
      binary: fc.constant(binary),
      payload: binary ? payload : text,
      cuts: fc.array(fc.nat(), { maxLength: 6 }),
      controls: fc.array(fc.record({ at: fc.nat(), spec: control }), { maxLength: 2 }),
    }),
  );

/** A message's frames: cut at `cuts`, control frames between them. */
function frames(item: Item, rest: { mask: number[]; encoding: Spec['encoding'] }): Spec[] {
  if ('control' in item) return [{ ...item.control, fin: true, rsv: 0 }];
  const m = item.message;
  const at = [...new Set(m.cuts.map((c) => c % (m.payload.length + 1)))].sort((a, b) => a - b);
  const edges = [0, ...at, m.payload.length];
  const parts: Spec[] = [];
  for (let k = 0; k + 1 < edges.length; k++) {
    parts.push({
      fin: k + 2 === edges.length,
      rsv: 0,
      opcode: k === 0 ? (m.binary ? 2 : 1) : 0,
      masked: true,
      ...rest,
      payload: m.payload.subarray(edges[k], edges[k + 1]),
    });
  }
  const out: Spec[] = [];
  parts.forEach((p, k) => {
    if (k > 0) for (const c of m.controls.filter((c) => c.at % parts.length === k)) out.push({ ...c.spec, fin: true, rsv: 0 });
    out.push(p);
  });
  return out;
}

type Fault = { at: number } & ({ rsv: number } | { opcode: number } | { unmasked: true } | { finFlip: true } | { claimed: bigint } | { lengthByte: number });
const fault = fc.oneof(
  fc.record({ at: fc.nat(), rsv: fc.integer({ min: 1, max: 7 }) }),
  fc.record({ at: fc.nat(), opcode: fc.integer({ min: 0, max: 15 }) }),
  fc.record({ at: fc.nat(), unmasked: fc.constant(true as const) }),
  fc.record({ at: fc.nat(), finFlip: fc.constant(true as const) }),
  fc.record({
    at: fc.nat(),
    claimed: fc.oneof(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.constantFrom(2n ** 53n, 2n ** 53n - 1n, 2n ** 63n, 601n, 126n)),
  }),
  // a control frame claiming an extended length (126, 127) or a Close of one byte
  fc.record({ at: fc.nat(), lengthByte: fc.constantFrom(1, 126, 127) }),
);

function apply(specs: Spec[], faults: Fault[]): Spec[] {
  const out = specs.map((s) => ({ ...s }));
  for (const f of faults) {
    if (!out.length) break;
    const s = out[f.at % out.length]!;
    if ('rsv' in f) s.rsv = f.rsv;
    else if ('opcode' in f) s.opcode = f.opcode;
    else if ('unmasked' in f) s.masked = false;
    else if ('finFlip' in f) s.fin = !s.fin;
    else if ('claimed' in f) s.claimed = f.claimed;
    else if (s.opcode >= 8) s.payload = new Uint8Array(f.lengthByte === 1 ? 1 : f.lengthByte === 126 ? 126 : 200).fill(65);
  }
  return out;
}

const stream = (text: fc.Arbitrary<Uint8Array>) =>
  fc
    .record({
      items: fc.array(
        fc.oneof({ weight: 3, arbitrary: message(text).map((message) => ({ message })) }, { weight: 1, arbitrary: control.map((control) => ({ control })) }),
        {
          maxLength: 7,
        },
      ),
      framing: fc.record({ mask: maskKey, encoding }),
      faults: fc.oneof({ weight: 1, arbitrary: fc.constant([] as Fault[]) }, { weight: 1, arbitrary: fc.array(fault, { minLength: 1, maxLength: 2 }) }),
      cuts: fc.array(fc.integer({ min: 1, max: 48 }), { maxLength: 60 }),
    })
    .map(({ items, framing, faults, cuts }) => {
      const specs = apply(
        items.flatMap((i) => frames(i as Item, framing)),
        faults,
      );
      const bytes = Buffer.concat(specs.map(encode));
      const chunks: Buffer[] = [];
      let o = 0;
      for (const c of cuts) {
        if (o >= bytes.length) break;
        chunks.push(bytes.subarray(o, o + c));
        o += c;
      }
      if (o < bytes.length) chunks.push(bytes.subarray(o));
      return { chunks, faulty: faults.length > 0 };
    });

type Event = { m: 'text' | 'binary' | 'ping' | 'pong'; data: string } | { m: 'close'; code: number; reason: string } | { m: 'refused'; code: number };

function closeEvent(payload: Buffer): Event {
  return payload.length ? { m: 'close', code: payload.readUInt16BE(0), reason: payload.subarray(2).toString('hex') } : { m: 'close', code: 1005, reason: '' };
}

function byReader(chunks: Buffer[], limits = LIMITS): Event[] {
  const events: Event[] = [];
  const reader = new ClientFrameReader(
    {
      message: (frames, text) => events.push({ m: text === null ? 'binary' : 'text', data: unmaskedPayload(frames).toString('hex') }),
      control: (f) =>
        events.push(f.opcode === 8 ? closeEvent(unmaskedPayload([f])) : { m: f.opcode === 9 ? 'ping' : 'pong', data: unmaskedPayload([f]).toString('hex') }),
      refuse: (code) => events.push({ m: 'refused', code }),
    },
    limits,
  );
  for (const c of chunks) reader.write(c);
  return events;
}

function statusOf(err: Error): number {
  const key = Object.getOwnPropertySymbols(err).find((s) => s.description === 'status-code');
  return key ? (err as unknown as Record<symbol, number>)[key]! : -1;
}

function byWs(chunks: Buffer[], limits = LIMITS): Event[] {
  const events: Event[] = [];
  const rx = new Receiver({ isServer: true, maxPayload: limits.maxMessageBytes, maxFragments: limits.maxFragments });
  let over = false;
  rx.on('message', (data: Buffer, isBinary: boolean) => events.push({ m: isBinary ? 'binary' : 'text', data: data.toString('hex') }));
  rx.on('ping', (data: Buffer) => events.push({ m: 'ping', data: data.toString('hex') }));
  rx.on('pong', (data: Buffer) => events.push({ m: 'pong', data: data.toString('hex') }));
  rx.on('conclude', (code: number, reason: Buffer) => {
    over = true;
    events.push({ m: 'close', code, reason: reason.toString('hex') });
  });
  rx.on('error', () => {});
  for (const c of chunks) {
    rx.write(Buffer.from(c)); // a copy: it unmasks in place
    if (rx.errored) {
      events.push({ m: 'refused', code: statusOf(rx.errored) });
      break;
    }
    if (over) break;
  }
  return events;
}

describe('the admin WebSocket reader against the ws package\u2019s Receiver', function () {
  this.timeout(120_000);

  it('random frame sequences, valid and not, split at random points: the same messages, control frames and refusals', () => {
    let refused = 0;
    let valid = 0;
    fc.assert(
      fc.property(stream(textPayload), ({ chunks }) => {
        const expected = byWs(chunks);
        expect(byReader(chunks)).to.deep.equal(expected);
        if (expected.at(-1)?.m === 'refused') refused++;
        else valid++;
      }),
      { numRuns: 3000 },
    );
    // both kinds were tried, in numbers
    expect(refused, 'refused sequences').to.be.greaterThan(500);
    expect(valid, 'sequences read to the end').to.be.greaterThan(500);
  });

  it('every refusal the reader knows is reached, with the code ws gives', () => {
    const seen = new Set<number>();
    fc.assert(
      fc.property(stream(textPayload), ({ chunks }) => {
        const last = byReader(chunks).at(-1);
        if (last?.m === 'refused') seen.add(last.code);
      }),
      { numRuns: 1000 },
    );
    expect([...seen].sort()).to.deep.equal([1002, 1007, 1008, 1009]);
  });
});

/** The guard with every event allowed; what it sends on, and how it failed. */
async function throughGuard(chunks: Buffer[]): Promise<{ sent: Buffer; failed?: number }> {
  const sent: Buffer[] = [];
  let failed: number | undefined;
  const guard = new WebSocketGuard(
    async () => true,
    () => {},
    (b) => sent.push(b),
    (code) => (failed = code),
    true,
  );
  for (const c of chunks) guard.write(c);
  await new Promise<void>((r) => guard.end(r));
  return { sent: Buffer.concat(sent), failed };
}

const dataOnly = (e: Event[]) => e.filter((x) => x.m === 'text' || x.m === 'binary');
const controlOnly = (e: Event[]) => e.filter((x) => x.m === 'ping' || x.m === 'pong' || x.m === 'close');

describe('the Socket.IO guard sends on the client\u2019s frames whole', function () {
  this.timeout(120_000);
  const guardLimits = { maxMessageBytes: MAX_GUARDED_MESSAGE_BYTES, maxFragments: MAX_GUARDED_FRAGMENTS };
  // text that is not an Engine.IO message packet ("4..."), so nothing is judged or dropped
  const notAPacket = textPayload.map((p) => new Uint8Array([0x78, ...p]));

  it('what passes reads, at a ws server, as what the client sent: the same messages, the same control frames in their order; a refusal fails the connection with ws\u2019s code', async () => {
    await fc.assert(
      fc.asyncProperty(stream(notAPacket), async ({ chunks }) => {
        const expected = byWs(chunks, guardLimits);
        const { sent, failed } = await throughGuard(chunks);
        if (expected.at(-1)?.m === 'refused') {
          expect(failed).to.equal((expected.at(-1) as { code: number }).code);
          return;
        }
        expect(failed).to.equal(undefined);
        const after = byWs([sent], guardLimits);
        expect(after.at(-1)?.m).to.not.equal('refused');
        expect(dataOnly(after)).to.deep.equal(dataOnly(expected));
        // a control frame between the frames of a fragmented message goes on ahead of it
        expect(controlOnly(after)).to.deep.equal(controlOnly(expected));
      }),
      { numRuns: 1000 },
    );
  });
});

/** Bytes of every Buffer made while `work` runs (alloc, allocUnsafe, concat, from: a copy or a new buffer each). */
function bytesAllocatedBy(work: () => void): number {
  const B = Buffer as unknown as Record<string, (...a: unknown[]) => Buffer>;
  const saved: Record<string, (...a: unknown[]) => Buffer> = {};
  let total = 0;
  for (const name of ['alloc', 'allocUnsafe', 'allocUnsafeSlow', 'concat', 'from']) {
    const original = (saved[name] = B[name]!);
    B[name] = (...a: unknown[]) => {
      const out = original.apply(Buffer, a);
      total += out.length;
      return out;
    };
  }
  try {
    work();
  } finally {
    Object.assign(B, saved);
  }
  return total;
}

function maskedFrame(opcode: number, payload: Buffer, fin = true): Buffer {
  return encode({ fin, rsv: 0, opcode, masked: true, mask: [0x11, 0x22, 0x33, 0x44], payload, encoding: 'shortest' });
}

function inChunks(bytes: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o < bytes.length; o += size) out.push(bytes.subarray(o, o + size));
  return out;
}

describe('what a large message costs the guard grows with its size, not with the reads it came in', function () {
  this.timeout(120_000);
  const guard = () =>
    new WebSocketGuard(
      async () => true,
      () => {},
      () => {},
      (code, why) => expect.fail(`refused ${code}: ${why}`),
      true,
    );

  for (const [what, bytes, chunk] of [
    ['a binary frame near the 16 MiB limit in 64 KiB reads', maskedFrame(2, Buffer.alloc(MAX_GUARDED_MESSAGE_BYTES - 1024, 7)), 64 * 1024],
    ['a text message of 8 MiB in four frames, in 64 KiB reads', fragmentedText(8 * 1024 * 1024, 4), 64 * 1024],
    ['a 64 KiB frame one byte at a time', maskedFrame(2, Buffer.alloc(64 * 1024, 7)), 1],
  ] as const) {
    it(`${what}: the Buffers made add up to under three times its size`, () => {
      const chunks = inChunks(bytes, chunk);
      const g = guard();
      const allocated = bytesAllocatedBy(() => {
        for (const c of chunks) g.write(c);
      });
      expect(allocated, `${allocated} bytes for a ${bytes.length}-byte message`).to.be.below(3 * bytes.length);
    });
  }
});

function fragmentedText(size: number, parts: number): Buffer {
  const text = Buffer.from(`42${JSON.stringify(['heartbeat', 'x'.repeat(size - 20)])}`);
  const step = Math.ceil(text.length / parts);
  const frames: Buffer[] = [];
  for (let o = 0; o < text.length; o += step) frames.push(maskedFrame(o === 0 ? 1 : 0, text.subarray(o, o + step), o + step >= text.length));
  return Buffer.concat(frames);
}

describe('frames RFC 6455 forbids are refused with 1002, nothing after them sent on', function () {
  const cases: Array<[string, Buffer]> = [
    ['a reserved data opcode (3)', maskedFrame(3, Buffer.from([1, 2, 3]))],
    ['a reserved control opcode (0xB)', maskedFrame(0xb, Buffer.alloc(0))],
    ['an unmasked frame', encode({ fin: true, rsv: 0, opcode: 1, masked: false, mask: [], payload: Buffer.from('42["heartbeat",{}]'), encoding: 'shortest' })],
    ['a ping of 126 bytes', maskedFrame(9, Buffer.alloc(126))],
    ['a fragmented ping', maskedFrame(9, Buffer.from('hi'), false)],
    [
      'RSV1 set (no permessage-deflate was negotiated)',
      encode({ fin: true, rsv: 4, opcode: 1, masked: true, mask: [1, 2, 3, 4], payload: Buffer.from('x'), encoding: 'shortest' }),
    ],
    ['RSV3 set', encode({ fin: true, rsv: 1, opcode: 2, masked: true, mask: [1, 2, 3, 4], payload: Buffer.from('x'), encoding: 'shortest' })],
    ['a continuation without a message', maskedFrame(0, Buffer.from('x'))],
    ['a Close with code 1005', maskedFrame(8, Buffer.from([0x03, 0xed]))],
  ];
  for (const [what, bad] of cases) {
    it(what, async () => {
      const before = maskedFrame(1, Buffer.from('42["heartbeat",{}]'));
      const after = maskedFrame(2, Buffer.from([9, 9, 9]));
      // the first frame goes on alone, before the bad one arrives
      const sent: Buffer[] = [];
      let failed: number | undefined;
      const guard = new WebSocketGuard(
        async () => true,
        () => {},
        (b) => sent.push(b),
        (code) => (failed = code),
        true,
      );
      guard.write(before);
      await new Promise<void>((r) => guard.end(r));
      guard.write(Buffer.concat([bad, after]));
      await new Promise<void>((r) => guard.end(r));
      expect(failed).to.equal(1002);
      expect(Buffer.concat(sent).equals(before)).to.equal(true);
      expect(byWs([bad]).at(-1)).to.deep.equal({ m: 'refused', code: 1002 });
    });
  }

  it('a binary event dropped, then a reserved-opcode frame: refused, so the attachment after it is not taken for the dropped event\u2019s', async () => {
    const sent: Buffer[] = [];
    let failed: number | undefined;
    const guard = new WebSocketGuard(
      async () => false,
      () => {},
      (b) => sent.push(b),
      (code) => (failed = code),
      true,
    );
    const update = `451-${JSON.stringify(['ydoc:document:update', { document_id: 'note:n-bob', update: { _placeholder: true, num: 0 } }])}`;
    guard.write(maskedFrame(1, Buffer.from(update)));
    guard.write(maskedFrame(3, Buffer.from([1])));
    guard.write(maskedFrame(2, Buffer.from([2])));
    await new Promise<void>((r) => guard.end(r));
    expect(failed).to.equal(1002);
    expect(sent).to.deep.equal([]);
  });
});
