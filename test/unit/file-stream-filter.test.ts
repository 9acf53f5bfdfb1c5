// The streamed file filter (gateway/enforcement/file-stream-filter.ts) gives the same answer as the
// whole-document filter it replaces (JSON.parse, parseFileList / parseFileArray, keepOwn,
// JSON.stringify) for any body split into any chunks: valid pages, pages with foreign and broken
// records, duplicate and escaped keys, and malformed or hostile JSON, which must fail closed.
import { expect } from 'chai';
import fc from 'fast-check';
import { FileFilterError, FileStreamFilter, type FileAnswerShape } from '../../gateway/enforcement/file-stream-filter.js';
import { keepOwn, parseFileArray, parseFileList } from '../../policies/file-scoping.js';

const CALLER = 'alice';

type Outcome = { ok: false } | { ok: true; json: string; kept: number; removed: number };

/** The whole-document filter the streamed one replaced: the document parsed, filtered, serialized. */
function whole(shape: FileAnswerShape, body: Buffer): Outcome {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return { ok: false };
  }
  if (shape === 'list') {
    const list = parseFileList(value);
    if (!list) return { ok: false };
    const { own, removed } = keepOwn(list.items, CALLER);
    return { ok: true, json: JSON.stringify({ items: own, total: list.total }), kept: own.length, removed };
  }
  const found = parseFileArray(value);
  if (!found) return { ok: false };
  const { own, removed } = keepOwn(found, CALLER);
  return { ok: true, json: JSON.stringify(own), kept: own.length, removed };
}

/** The chunks of a body of `length` bytes cut at `cuts` (each within the body, once, in order), made by `slice`. */
function* chunksOf(length: number, cuts: number[], slice: (from: number, to: number) => Buffer): Generator<Buffer> {
  let from = 0;
  for (const to of [...[...new Set(cuts.map((c) => c % (length + 1)))].sort((a, b) => a - b), length]) {
    yield slice(from, to);
    from = to;
  }
}

/** What the streamed filter answers for these chunks, as a client reads it. */
function filterChunks(shape: FileAnswerShape, chunks: Iterable<Buffer>): Outcome {
  const f = new FileStreamFilter(shape, CALLER);
  try {
    for (const chunk of chunks) f.write(chunk);
    const out = f.end();
    // what a client reads: the answer is JSON, and the same JSON as the whole-document filter's
    return { ok: true, json: JSON.stringify(JSON.parse(out.body.toString('utf8'))), kept: out.kept, removed: out.removed };
  } catch (err) {
    if (err instanceof FileFilterError) return { ok: false };
    throw err;
  }
}

function streamed(shape: FileAnswerShape, body: Buffer, cuts: number[]): Outcome {
  // copies, so that a kept slice of a chunk cannot lean on the test's buffer
  return filterChunks(
    shape,
    chunksOf(body.length, cuts, (from, to) => Buffer.from(body.subarray(from, to))),
  );
}

/**
 * The same, with every chunk a view into one buffer at `offset` bytes past a 4-byte boundary: the
 * filter reads strings four bytes at a time from the first aligned byte of each chunk, and socket
 * chunks start anywhere.
 */
function streamedAt(shape: FileAnswerShape, body: Buffer, cuts: number[], offset: number): Outcome {
  const backing = Buffer.alloc(body.length + 8);
  body.copy(backing, offset);
  return filterChunks(
    shape,
    chunksOf(body.length, cuts, (from, to) => backing.subarray(offset + from, offset + to)),
  );
}

function same(shape: FileAnswerShape, body: Buffer, cuts: number[]): void {
  const want = whole(shape, body);
  const got = streamed(shape, body, cuts);
  expect(got, `${shape} ${JSON.stringify(body.toString('latin1').slice(0, 400))} cut at ${cuts}`).to.deep.equal(want);
}

// ---- generators: JSON text built token by token, so keys can repeat, be escaped, be reordered

const ws = fc.constantFrom('', '', ' ', '\n', '\t', ' \r\n ');
/** A key as JSON text: plain, or with some characters written as \u escapes. */
const keyText = (k: string) =>
  fc.boolean().map((esc) =>
    esc && k.length > 0
      ? `"${k.slice(0, -1)}\\u${k
          .charCodeAt(k.length - 1)
          .toString(16)
          .padStart(4, '0')}"`
      : JSON.stringify(k),
  );
const obj = (entries: fc.Arbitrary<[string, string][]>) =>
  fc
    .tuple(entries, fc.array(ws, { minLength: 8, maxLength: 8 }))
    .map(([es, w]) => `{${w[0]}${es.map(([k, v]) => `${k}${w[1]}:${w[2]}${v}`).join(`${w[3]},${w[4]}`)}${w[5]}}`);
const arr = (items: fc.Arbitrary<string[]>) => fc.tuple(items, ws, ws).map(([xs, a, b]) => `[${a}${xs.join(`${b},${a}`)}${b}]`);

const anyJson = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v));
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 8 }), fc.constantFrom('alice', 'bob', 'Alice', 'alice ', ''));
const stringValue = fc.oneof(
  text.map((s) => JSON.stringify(s)),
  // the caller's id written with escapes, which only a decoder sees as theirs
  fc.constantFrom('"al\\u0069ce"', '"\\u0061lice"', '"alic\\u0065"', '"bo\\u0062"', '"\\ud800"', '"a\\/b"'),
);
const userIdValue = fc.oneof({ weight: 6, arbitrary: stringValue }, { weight: 1, arbitrary: anyJson });
const idValue = fc.oneof({ weight: 6, arbitrary: stringValue }, { weight: 1, arbitrary: anyJson });

const recordEntries: fc.Arbitrary<[string, string][]> = fc
  .tuple(
    fc.option(fc.tuple(keyText('user_id'), userIdValue), { freq: 12 }),
    fc.option(fc.tuple(keyText('id'), idValue), { freq: 12 }),
    fc.array(
      fc.tuple(
        fc.oneof(
          keyText('filename'),
          keyText('meta'),
          keyText('items'),
          keyText('total'),
          text.map((s) => JSON.stringify(s)),
        ),
        anyJson,
      ),
      { maxLength: 4 },
    ),
    fc.array(fc.tuple(fc.oneof(keyText('user_id'), keyText('id')), fc.oneof(userIdValue, idValue)), { maxLength: 1 }),
  )
  .chain(([u, i, rest, dup]) => {
    const es: [string, string][] = [...(u ? [u] : []), ...(i ? [i] : []), ...rest, ...dup];
    return fc.shuffledSubarray(es, { minLength: es.length, maxLength: es.length });
  });
const record = fc.oneof({ weight: 20, arbitrary: obj(recordEntries) }, { weight: 1, arbitrary: anyJson });
const records = arr(fc.array(record, { maxLength: 6 }));
const totalValue = fc.oneof(
  fc.nat({ max: 100 }).map(String),
  fc.constantFrom('-1', '1.5', '1e2', '1E+2', '-0', '0.0', '1e400', '"3"', 'null', '12345678901234567890'),
);
const listEntries: fc.Arbitrary<[string, string][]> = fc
  .tuple(
    fc.option(fc.tuple(keyText('items'), fc.oneof({ weight: 10, arbitrary: records }, { weight: 1, arbitrary: anyJson })), { freq: 15 }),
    fc.option(fc.tuple(keyText('total'), totalValue), { freq: 15 }),
    fc.array(
      fc.tuple(
        fc.oneof(
          keyText('items'),
          keyText('total'),
          keyText('other'),
          text.map((s) => JSON.stringify(s)),
        ),
        fc.oneof(anyJson, records),
      ),
      { maxLength: 3 },
    ),
  )
  .chain(([it, t, rest]) => {
    const es: [string, string][] = [...(it ? [it] : []), ...(t ? [t] : []), ...rest];
    return fc.shuffledSubarray(es, { minLength: es.length, maxLength: es.length });
  });
const page = fc
  .tuple(ws, fc.oneof({ weight: 10, arbitrary: obj(listEntries) }, { weight: 2, arbitrary: records }, { weight: 1, arbitrary: anyJson }), ws)
  .map(([a, v, b]) => `${a}${v}${b}`);

const BYTES = [...'{}[]":,\\ 0-+.eEtfnu'].map((c) => c.charCodeAt(0)).concat([0x00, 0x1f, 0x7f, 0x80, 0xc3, 0xe2, 0xed, 0xef, 0xff]);
/** A page with a few bytes deleted, inserted, replaced, or its tail cut off. */
const mutated = fc
  .tuple(page, fc.array(fc.tuple(fc.constantFrom('del', 'ins', 'set', 'cut'), fc.nat(), fc.constantFrom(...BYTES)), { minLength: 1, maxLength: 3 }))
  .map(([p, ops]) => {
    let b = Buffer.from(p);
    for (const [op, pos, byte] of ops) {
      const at = b.length ? pos % b.length : 0;
      if (op === 'del') b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
      else if (op === 'ins') b = Buffer.concat([b.subarray(0, at), Buffer.from([byte]), b.subarray(at)]);
      else if (op === 'set' && b.length) b[at] = byte;
      else if (op === 'cut') b = b.subarray(0, at);
    }
    return b;
  });

const body = fc.oneof(
  { weight: 6, arbitrary: page.map((p) => Buffer.from(p)) },
  { weight: 6, arbitrary: mutated },
  { weight: 1, arbitrary: fc.json().map((j) => Buffer.from(j)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u)) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'{}[]":,\\ 0-1.eEtrufalsn'), maxLength: 30 }).map((s) => Buffer.from(s)) },
);
const cuts = fc.array(fc.nat(), { maxLength: 6 });

describe('streamed file filter = whole-document filter', function () {
  this.timeout(120_000);

  it('any file list, any chunking: the same answer, or both refuse it', () => {
    fc.assert(
      fc.property(body, cuts, (b, c) => same('list', b, c)),
      { numRuns: 4_000 },
    );
  });

  it('any search answer (a bare array), any chunking: the same answer, or both refuse it', () => {
    fc.assert(
      fc.property(body, cuts, (b, c) => same('array', b, c)),
      { numRuns: 4_000 },
    );
  });

  it('valid pages are mostly accepted by the generators (the property is not only about refusals)', () => {
    // guards the generators: if they only made broken pages, the properties above would prove little
    const samples = fc.sample(
      page.map((p) => Buffer.from(p)),
      { numRuns: 2_000, seed: 27 },
    );
    const accepted = samples.filter((b) => whole('list', b).ok).length;
    const withForeign = samples.filter((b) => {
      const o = whole('list', b);
      return o.ok && o.removed > 0 && o.kept > 0;
    }).length;
    expect(accepted).to.be.greaterThan(200);
    expect(withForeign).to.be.greaterThan(50);
  });

  it('every byte boundary of a real page, one byte per chunk included', () => {
    const p = Buffer.from(
      JSON.stringify({
        items: [
          { id: 'f1', user_id: 'alice', filename: 'a "q" \u00e9\u{1f600}.txt', meta: { data: { n: [1, -2.5e-3, null, true, false] } } },
          { id: 'f2', user_id: 'bob', filename: 'globex-secret.txt' },
          { user_id: 'alice', id: 'f3', path: 'C:\\x\\y' },
        ],
        total: 3,
      }),
    );
    for (let k = 0; k <= p.length; k++) same('list', p, [k]);
    same(
      'list',
      p,
      Array.from({ length: p.length }, (_, k) => k),
    );
    const out = new FileStreamFilter('list', CALLER);
    out.write(p);
    const r = out.end();
    expect(r).to.include({ kept: 2, removed: 1, total: 3 });
    expect(r.body.toString()).to.not.include('globex');
  });

  it('hostile bodies fail closed: deep nesting, huge numbers, a foreign record after a broken one, trailing garbage', () => {
    const deep = Buffer.from(`{"items":[{"id":"x","user_id":"alice","m":${'['.repeat(20_000)}${']'.repeat(20_000)}}],"total":1}`);
    // JSON.stringify of the whole-document filter overflows its stack here (it answered 502); the
    // streamed filter copies the record's bytes and never recurses
    const f = new FileStreamFilter('list', CALLER);
    f.write(deep.subarray(0, 10_000));
    f.write(deep.subarray(10_000));
    const got = f.end();
    expect(got).to.include({ kept: 1, removed: 0, total: 1 });
    expect(got.body.equals(deep)).to.equal(true);
    const hostileDeep = Buffer.from(`{"items":[{"id":"x","user_id":"alice","m":${'['.repeat(20_000)}}],"total":1}`);
    expect(streamed('list', hostileDeep, [5000]).ok).to.equal(false);
    for (const b of [
      '{"items":[{"id":"x","user_id":"alice"}],"total":1}x',
      '{"items":[{"id":"x","user_id":"alice"}],"total":1',
      '{"items":[{"id":"x","user_id":"alice"},{"id":"y","user_id":"bob"}],"total":2,}',
      '{"items":[{"id":"x","user_id":"alice"},{"id":"y","user_id":"bob"}]}',
      '{"items":[{"id":"x","user_id":"alice"},{"id":"y","user_id":"bob","user_id":7}],"total":2}',
      '{"items":[{"id":"x","user_id":"alice"}],"total":1e400}',
      '{"items":[{"id":"x","user_id":"alice"}],"total":1,"items":{"id":"y","user_id":"bob"}}',
      '{"items":[{"id":"x","user_id":"alice"}],"total":1}{"items":[{"id":"y","user_id":"bob"}],"total":1}',
      '{"items":[{"id":"x","user_id":"alice\u0001"}],"total":1}',
      '{"items":[{"id":"x","user_id":"alice\\x"}],"total":1}',
      '\ufeff{"items":[],"total":0}',
    ]) {
      expect(streamed('list', Buffer.from(b), []).ok, b).to.equal(false);
      same('list', Buffer.from(b), [3, 30]);
    }
  });

  it('the last of duplicate keys wins, as in JSON.parse', () => {
    const b = Buffer.from('{"items":[{"id":"x","user_id":"bob"}],"total":9,"items":[{"id":"y","user_id":"bob","user_id":"alice"}],"total":1}');
    const f = new FileStreamFilter('list', CALLER);
    f.write(b);
    const r = f.end();
    expect(JSON.parse(r.body.toString())).to.deep.equal({ items: [{ id: 'y', user_id: 'alice' }], total: 1 });
    same('list', b, [50]);
  });

  it('long strings read a word at a time: any byte that ends or breaks a string, at any place and alignment', () => {
    // '"' ends the string (the rest is then a syntax error or another token), '\\' starts an escape,
    // a control byte is refused; each at every position of a string up to 24 bytes, after 0 to 3
    // bytes of misalignment, in the record's user_id (judged) and in a field nobody reads
    const stops = [...Array.from({ length: 0x20 }, (_, k) => k), 0x22, 0x5c, 0x1f, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xff];
    for (let n = 1; n <= 24; n++)
      for (let p = 0; p < n; p++)
        for (const stop of stops) {
          const s = Buffer.alloc(n, 0x61);
          s[p] = stop;
          for (const field of ['user_id', 'hash']) {
            const b = Buffer.concat([Buffer.from(`{"items":[{"id":"x","user_id":"alice","${field}":"`), s, Buffer.from(`"}],"total":1}`)]);
            const want = whole('list', b);
            for (let offset = 0; offset < 4; offset++) expect(streamedAt('list', b, [], offset), `${field} ${n} ${p} ${stop} +${offset}`).to.deep.equal(want);
          }
        }
  });

  it('any file list in chunks that start anywhere in memory: the same answer, or both refuse it', () => {
    const long = fc.string({ unit: fc.constantFrom(...'ab"\\\u0001\n é'), minLength: 8, maxLength: 60 }).map((t) => JSON.stringify(t));
    const longPage = fc
      .tuple(fc.array(fc.tuple(fc.constantFrom('"alice"', '"bob"'), long, long), { maxLength: 5 }), fc.boolean())
      .map(
        ([rs, raw]) =>
          `{"items":[${rs.map(([u, a, b]) => `{"id":${a},"user_id":${u},"note":${raw ? b.replace(/\\n/g, '\n') : b}}`).join(',')}],"total":${rs.length}}`,
      );
    fc.assert(
      fc.property(
        fc.oneof(
          body,
          longPage.map((p) => Buffer.from(p)),
        ),
        cuts,
        fc.nat({ max: 3 }),
        (b, c, offset) => {
          expect(streamedAt('list', b, c, offset)).to.deep.equal(whole('list', b));
        },
      ),
      { numRuns: 4_000 },
    );
  });

  it('a syntax error is refused at its byte, before the rest of the body arrives', () => {
    const f = new FileStreamFilter('list', CALLER);
    f.write(Buffer.from('{"items":[{"id":"x","user_id":"alice"}'));
    expect(() => f.write(Buffer.from(' x'))).to.throw(FileFilterError);
    expect(() => f.end()).to.throw(FileFilterError);
  });
});
