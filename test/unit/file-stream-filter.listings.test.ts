// The streamed filter (gateway/enforcement/file-stream-filter.ts) judging each record parsed, as an
// admin's listings and the ratings export are filtered: for any body split into any chunks, the
// same answer as the whole-document filter (JSON.parse, keep what the rule keeps, JSON.stringify)
// or both refuse it; written out as judged (the export), what went out before a refusal is only
// records the rule kept, each whole.
import { expect } from 'chai';
import fc from 'fast-check';
import { FileFilterError, FileStreamFilter, type RecordRule } from '../../gateway/enforcement/file-stream-filter.js';

type Outcome = { ok: false } | { ok: true; json: string; kept: number; removed: number };
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What the admin may read in these tests: their own records, or those granted to them. */
const mine = (r: Obj) => r.user_id === 'alice' || (Array.isArray(r.grants) && r.grants.includes('alice'));
const rule: RecordRule = (r) => mine(r);

/** The whole-document listing filter: a bare array, or `{items[, total]}` / `{data}`, records judged, the total lowered. */
function whole(body: Buffer, shape: 'any' | 'array'): Outcome {
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    return { ok: false };
  }
  const judge = (list: unknown[]) => {
    const kept = list.filter((x) => isObj(x) && mine(x));
    return { kept, removed: list.length - kept.length };
  };
  if (Array.isArray(v)) {
    const { kept, removed } = judge(v);
    return { ok: true, json: JSON.stringify(kept), kept: kept.length, removed };
  }
  if (shape === 'array' || !isObj(v) || ('items' in v && 'data' in v)) return { ok: false };
  const key = 'items' in v ? 'items' : 'data' in v ? 'data' : undefined;
  if (!key || !Array.isArray(v[key])) return { ok: false };
  const total = v.total;
  if ('total' in v && !(typeof total === 'number' && Number.isInteger(total) && total >= 0)) return { ok: false };
  const { kept, removed } = judge(v[key] as unknown[]);
  const out: Obj = { [key]: kept };
  if (typeof total === 'number') out.total = Math.max(0, total - removed);
  return { ok: true, json: JSON.stringify(out), kept: kept.length, removed };
}

function chunked(body: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const to of [...at, body.length]) {
    out.push(Buffer.from(body.subarray(from, to)));
    from = to;
  }
  return out;
}

function streamed(body: Buffer, cuts: number[], shape: 'any' | 'array'): Outcome {
  const f = new FileStreamFilter(shape, '', { rule, totalLessRemoved: true });
  try {
    for (const c of chunked(body, cuts)) f.write(c);
    const out = f.end();
    return { ok: true, json: JSON.stringify(JSON.parse(out.body.toString('utf8'))), kept: out.kept, removed: out.removed };
  } catch (err) {
    if (err instanceof FileFilterError) return { ok: false };
    throw err;
  }
}

/** Written out as judged: the bytes that went out, and whether the body was accepted. */
function writtenOut(body: Buffer, cuts: number[]): { ok: boolean; out: Buffer; kept: number; removed: number } {
  const parts: Buffer[] = [];
  const f = new FileStreamFilter('array', '', { rule, out: { record: (b, first) => parts.push(...(first ? [] : [Buffer.from(',')]), Buffer.from(b)) } });
  try {
    for (const c of chunked(body, cuts)) f.write(c);
    const counts = f.end();
    return { ok: true, out: Buffer.concat(parts), kept: counts.kept, removed: counts.removed };
  } catch (err) {
    if (err instanceof FileFilterError) return { ok: false, out: Buffer.concat(parts), kept: 0, removed: 0 };
    throw err;
  }
}

// ---- generators

const owner = fc.constantFrom('"alice"', '"bob"', '"al\\u0069ce"', '7', 'null');
const grants = fc.constantFrom('[]', '["alice"]', '["bob","alice"]', '"alice"', '{"alice":1}');
const anyJson = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v));
const record = fc
  .tuple(
    fc.option(owner, { freq: 8 }),
    fc.option(grants, { freq: 3 }),
    fc.array(fc.tuple(fc.constantFrom('id', 'name', 'meta', 'user_id', 'grants'), anyJson), { maxLength: 3 }),
  )
  .map(([o, g, rest]) => `{${[...(o ? [`"user_id":${o}`] : []), ...(g ? [`"grants":${g}`] : []), ...rest.map(([k, v]) => `"${k}":${v}`)].join(',')}}`);
const element = fc.oneof({ weight: 10, arbitrary: record }, { weight: 1, arbitrary: anyJson });
const array = fc.array(element, { maxLength: 6 }).map((xs) => `[${xs.join(',')}]`);
const total = fc.oneof(fc.nat({ max: 50 }).map(String), fc.constantFrom('-1', '2.5', '"3"', 'null'));
const object = fc
  .tuple(
    fc.constantFrom('items', 'data', 'items', 'other'),
    fc.oneof({ weight: 8, arbitrary: array }, { weight: 1, arbitrary: anyJson }),
    fc.option(total, { freq: 2 }),
    fc.option(fc.tuple(fc.constantFrom('items', 'data', 'x'), fc.oneof(array, anyJson)), { freq: 4 }),
  )
  .map(([k, list, t, extra]) => `{"${k}":${list}${t === null ? '' : `,"total":${t}`}${extra ? `,"${extra[0]}":${extra[1]}` : ''}}`);
const page = fc.oneof(object, array);
const body = fc.oneof(
  { weight: 8, arbitrary: page.map((p) => Buffer.from(p)) },
  {
    weight: 3,
    arbitrary: fc.tuple(page, fc.nat(), fc.constantFrom(0x7b, 0x7d, 0x5d, 0x2c, 0x22, 0x3a, 0x20)).map(([p, at, byte]) => {
      const b = Buffer.from(p);
      if (b.length) b[at % b.length] = byte;
      return b;
    }),
  },
  { weight: 1, arbitrary: fc.tuple(page, fc.nat()).map(([p, at]) => Buffer.from(p).subarray(0, at % (p.length + 1))) },
);
const cuts = fc.array(fc.nat(), { maxLength: 5 });

describe('streamed listing filter = whole-document listing filter', function () {
  this.timeout(120_000);

  it('any listing (a bare array, {items, total} or {data}), any chunking: the same answer, or both refuse it', () => {
    fc.assert(
      fc.property(body, cuts, (b, c) => {
        expect(streamed(b, c, 'any'), b.toString('latin1')).to.deep.equal(whole(b, 'any'));
      }),
      { numRuns: 4_000 },
    );
  });

  it('the generators make accepted listings that keep and drop records (the property is not only about refusals)', () => {
    const samples = fc.sample(
      page.map((p) => Buffer.from(p)),
      { numRuns: 1_000, seed: 7 },
    );
    const mixed = samples.filter((b) => {
      const o = whole(b, 'any');
      return o.ok && o.kept > 0 && o.removed > 0;
    });
    expect(mixed.length).to.be.greaterThan(100);
  });

  it('an export written out as judged: the same records as the whole-document filter; before a refusal, only kept records, each whole', () => {
    fc.assert(
      fc.property(body, cuts, (b, c) => {
        const want = whole(b, 'array');
        const got = writtenOut(b, c);
        if (want.ok && got.ok) {
          expect(JSON.stringify(JSON.parse(`[${got.out.toString('utf8')}]`))).to.equal(want.json);
          expect({ kept: got.kept, removed: got.removed }).to.deep.equal({ kept: want.kept, removed: want.removed });
        } else expect(got.ok, 'both refuse').to.equal(false);
        // what went out is records the rule kept, separated by commas, never a part of one
        const sent = JSON.parse(`[${got.out.toString('utf8')}]`) as unknown[];
        for (const r of sent) expect(isObj(r) && mine(r), JSON.stringify(r)).to.equal(true);
      }),
      { numRuns: 4_000 },
    );
  });

  it('a record larger than any chunk, foreign records between: written out whole, the foreign ones never', () => {
    const big = 'x'.repeat(70_000);
    const b = Buffer.from(
      JSON.stringify([
        { id: 1, user_id: 'alice', snapshot: big },
        { id: 2, user_id: 'bob', snapshot: `globex ${big}` },
        { id: 3, user_id: 'alice', snapshot: 'small' },
      ]),
    );
    const got = writtenOut(
      b,
      Array.from({ length: 40 }, (_, k) => k * 5_000),
    );
    expect(got.ok).to.equal(true);
    expect(got.out.toString()).to.not.include('globex');
    expect((JSON.parse(`[${got.out}]`) as Array<{ id: number }>).map((r) => r.id)).to.deep.equal([1, 3]);
  });

  it('an export judged by owner, written out: the caller\u2019s records as the upstream wrote them, each whole, in order', () => {
    const rows = Array.from({ length: 40 }, (_, id) => ({
      id: `r${id}`,
      user_id: id % 3 ? 'bob' : 'alice',
      snapshot: { text: `t${id} \u00e9 ${'z'.repeat(id * 97)}` },
    }));
    const b = Buffer.from(JSON.stringify(rows));
    const got: string[] = [];
    const f = new FileStreamFilter('array', 'alice', { out: { record: (bytes) => got.push(bytes.toString('utf8')) } });
    for (const c of chunked(b, [7, 100, 1000, 1001, 2500, 4000])) f.write(c);
    expect(f.end()).to.include({ kept: 14, removed: 26 });
    expect(got).to.deep.equal(rows.filter((r) => r.user_id === 'alice').map((r) => JSON.stringify(r)));
  });

  it('a held answer keeps at most maxKeptBytes: more is refused, not cut', () => {
    const f = new FileStreamFilter('any', '', { rule, maxKeptBytes: 100 });
    const b = Buffer.from(JSON.stringify({ items: Array.from({ length: 10 }, (_, id) => ({ id, user_id: 'alice', pad: 'p'.repeat(20) })), total: 10 }));
    expect(() => f.write(b)).to.throw(FileFilterError, /more than 100 bytes kept/);
  });
});
