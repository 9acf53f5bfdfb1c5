// A caller's kept copy of their own records (gateway/enforcement/kept-copies.ts), against a source
// that lists them as Open WebUI's owner-scoped routes do (newest change first, a total): the copy is
// always what the source holds, read whole once, then by the pages that changed; read whole again
// after a deletion or when it is older than the source allows; used as it is within `quietMs`
// unless the caller wrote through this gateway.
import { expect } from 'chai';
import { KeptCopies, restOfPages, type CopySource } from '../../gateway/enforcement/kept-copies.js';

interface Rec {
  id: string;
  updatedAt: number;
  v: string;
}

/** Records as Open WebUI lists them, and what was asked of it. */
class Listed {
  records = new Map<string, Rec>();
  /** records Open WebUI counts but lists nothing for (a chat without messages) */
  unlisted = 0;
  pagesRead: number[] = [];
  wholeReads = 0;
  constructor(readonly pageSize: number) {}

  put(id: string, updatedAt: number, v = id): void {
    this.records.set(id, { id, updatedAt, v });
  }

  source(o: Partial<CopySource<Rec>> = {}): CopySource<Rec> {
    const page = async (n: number) => {
      this.pagesRead.push(n);
      const all = [...this.records.values()].sort((a, b) => b.updatedAt - a.updatedAt);
      return { items: all.slice((n - 1) * this.pageSize, n * this.pageSize), total: all.length + this.unlisted };
    };
    return {
      pageSize: this.pageSize,
      page,
      readAll: async (first) => {
        this.wholeReads++;
        return restOfPages(first, this.pageSize, 2, page);
      },
      ...o,
    };
  }
}

const H = {};
const view = (rs: Rec[]) => rs.map((r) => `${r.id}:${r.v}`).sort();
const truth = (l: Listed) => view([...l.records.values()]);

describe('kept copies of a caller\u2019s own records', () => {
  it('read whole once, then only the pages holding what changed: always what the source holds', async () => {
    const l = new Listed(3);
    for (let i = 0; i < 10; i++) l.put(`r${i}`, 100 + i);
    const copies = new KeptCopies(l.source(), 1000, 60_000);
    expect(view(await copies.records('me', H))).to.deep.equal(truth(l));
    expect(l.wholeReads).to.equal(1);
    l.pagesRead = [];
    // one changed, one new, one deleted and one made: read whole again (a deletion)
    l.put('r2', 200, 'changed');
    l.put('r10', 201);
    l.records.delete('r9');
    l.put('r11', 202);
    expect(view(await copies.records('me', H))).to.deep.equal(truth(l));
    expect(l.wholeReads, 'a deletion was read whole').to.equal(2);
    l.pagesRead = [];
    l.put('r4', 300, 'changed');
    expect(view(await copies.records('me', H))).to.deep.equal(truth(l));
    // the first page's last (r10, 201) is older than the copy's newest (202): nothing changed past it
    expect(l.pagesRead).to.deep.equal([1]);
    expect(l.wholeReads).to.equal(2);
    // more changed than a page holds, in the second of the newest: read on past the ties until an older one
    l.pagesRead = [];
    for (const id of ['r0', 'r1', 'r3', 'r4', 'r5']) l.put(id, 300, 'again');
    expect(view(await copies.records('me', H))).to.deep.equal(truth(l));
    expect(l.pagesRead).to.deep.equal([1, 2]);
    expect(l.wholeReads).to.equal(2);
  });

  it('a deleted record: read whole again (the source counts fewer than the copy holds)', async () => {
    const l = new Listed(3);
    for (let i = 0; i < 7; i++) l.put(`r${i}`, 100 + i);
    const copies = new KeptCopies(l.source(), 1000, 60_000);
    await copies.records('me', H);
    l.records.delete('r1');
    l.put('r9', 300); // and one made, so the count alone stays the same
    l.records.delete('r3');
    expect(view(await copies.records('me', H))).to.deep.equal(truth(l));
    expect(l.wholeReads).to.equal(2);
  });

  it('records the source counts but does not list: kept in the count, and a new one of them reads all again', async () => {
    const l = new Listed(4);
    for (let i = 0; i < 9; i++) l.put(`r${i}`, 100 + i);
    l.unlisted = 2;
    const copies = new KeptCopies(l.source(), 1000, 60_000);
    await copies.records('me', H);
    l.put('r1', 400, 'changed');
    expect(view(await copies.records('me', H))).to.deep.equal(truth(l));
    expect(l.wholeReads).to.equal(1);
    l.unlisted = 3;
    expect(view(await copies.records('me', H))).to.deep.equal(truth(l));
    expect(l.wholeReads).to.equal(2);
  });

  it('a copy older than the source allows is read whole again (what its order does not show)', async () => {
    const l = new Listed(2);
    l.put('a', 1, 'tag-x');
    l.put('b', 5);
    l.put('c', 6);
    let now = 0;
    const copies = new KeptCopies(l.source({ freshForMs: 600 }), 1000, 60_000, () => now);
    await copies.records('me', H);
    // changed without a newer updated_at, past the pages an update reads: not seen until the copy is old
    l.put('a', 1, 'tag-y');
    now = 599;
    expect(view(await copies.records('me', H))).to.deep.equal(['a:tag-x', 'b:b', 'c:c']);
    now = 600;
    expect(view(await copies.records('me', H))).to.deep.equal(['a:tag-y', 'b:b', 'c:c']);
  });

  it('within quietMs the copy is used as it is, unless the caller wrote through this gateway', async () => {
    const l = new Listed(5);
    l.put('a', 1);
    let now = 0;
    const copies = new KeptCopies(l.source({ quietMs: 30 }), 1000, 60_000, () => now);
    await copies.records('me', H);
    l.pagesRead = [];
    l.put('b', 2);
    now = 29;
    expect(view(await copies.records('me', H))).to.deep.equal(['a:a']);
    expect(l.pagesRead).to.deep.equal([]);
    copies.changed('me');
    expect(view(await copies.records('me', H))).to.deep.equal(truth(l));
    l.put('c', 3);
    now = 58;
    expect(view(await copies.records('me', H))).to.deep.equal(['a:a', 'b:b']);
    now = 59;
    expect(view(await copies.records('me', H))).to.deep.equal(truth(l));
  });

  it('a write told while a read is under way: the copy that read made is not taken as quiet, and the next use shows the write', async () => {
    const l = new Listed(5);
    l.put('a', 1);
    let now = 0;
    let holdNext: (() => void) | undefined;
    let held: Promise<void> | undefined;
    const source = l.source({ quietMs: 30_000 });
    const page = source.page;
    source.page = async (n, callerId, headers) => {
      const answer = await page(n, callerId, headers);
      if (held) await held;
      return answer;
    };
    const copies = new KeptCopies(source, 1000, 3_600_000, () => now);
    await copies.records('me', H);
    now = 40_000; // past the quiet time: the next use brings the copy up to date
    held = new Promise((r) => (holdNext = r));
    const underWay = copies.records('me', H);
    await new Promise((r) => setTimeout(r, 10));
    // the caller's write lands at the source while that read is under way, and is told
    l.put('b', 2);
    copies.changed('me');
    held = undefined;
    holdNext!();
    expect(view(await underWay)).to.deep.equal(['a:a']);
    now = 41_000;
    expect(view(await copies.records('me', H))).to.deep.equal(truth(l));
  });

  it('one read per caller at a time; callers apart', async () => {
    const l = new Listed(5);
    l.put('a', 1);
    const copies = new KeptCopies(l.source(), 1000, 60_000);
    await Promise.all([copies.records('me', H), copies.records('me', H), copies.records('me', H)]);
    expect(l.wholeReads).to.equal(1);
    await copies.records('you', H);
    expect(l.wholeReads).to.equal(2);
  });

  it('bounded: past `maxKept` records over every caller the least recently used copy goes', async () => {
    const l = new Listed(50);
    for (let i = 0; i < 40; i++) l.put(`r${i}`, i);
    const copies = new KeptCopies(l.source(), 100, 60_000);
    await copies.records('a', H);
    await copies.records('b', H);
    await copies.records('c', H); // 3 x 41 > 100: a goes
    await copies.records('a', H);
    expect(l.wholeReads).to.equal(4);
  });
});
