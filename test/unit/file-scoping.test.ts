// The caller's own files at any volume (policies/file-scoping.ts): which release serves the
// owner-scoped routes, the list's order as SQLite sorts it, its pages, and the few windows of the
// search order a rebuilt page's records are fetched by.
import { expect } from 'chai';
import { listOrder, listPage, listPageNumber, servesOwnFileRoutes, windowsOf, SEARCH_BATCH } from '../../policies/file-scoping.js';

describe('policies/file-scoping.ts: the caller\u2019s own files', () => {
  it('the owner-scoped routes: served by 0.12.4 and by any release the table was not checked against; not by 0.11.4', () => {
    expect(servesOwnFileRoutes('0.12.4')).to.equal(true);
    expect(servesOwnFileRoutes('0.11.4')).to.equal(false);
    expect(servesOwnFileRoutes('0.13.0')).to.equal(true);
    expect(servesOwnFileRoutes(undefined)).to.equal(true);
  });

  it('the list\u2019s order: updated_at descending (a legacy file without one last), then id descending byte by byte', () => {
    const keys = [
      { id: 'b', updatedAt: 5 },
      { id: 'a', updatedAt: 9 },
      { id: 'legacy', updatedAt: null },
      { id: 'c', updatedAt: 5 },
      { id: '\u{1f600}', updatedAt: 5 },
      { id: '\uffff', updatedAt: 5 },
    ];
    // U+1F600 is written 0xF0... in UTF-8, after U+FFFF's 0xEF...: first in a descending order
    expect([...keys].sort(listOrder).map((k) => k.id)).to.deep.equal(['a', '\u{1f600}', '\uffff', 'c', 'b', 'legacy']);
  });

  it('a page of 50, and past the end none', () => {
    const keys = Array.from({ length: 120 }, (_, i) => ({ id: `f${String(i).padStart(3, '0')}`, updatedAt: i }));
    expect(listPage(keys, 1).map((k) => k.id)[0]).to.equal('f119');
    expect(listPage(keys, 3).map((k) => k.id)).to.deep.equal(
      keys
        .slice(0, 20)
        .reverse()
        .map((k) => k.id),
    );
    expect(listPage(keys, 4)).to.deep.equal([]);
  });

  it('windows of the search order: near places share one, none larger than a search batch', () => {
    expect(windowsOf([5, 3, 4, 4])).to.deep.equal([{ skip: 3, limit: 3 }]);
    expect(windowsOf([0, 15, 100])).to.deep.equal([
      { skip: 0, limit: 16 },
      { skip: 100, limit: 1 },
    ]);
    const spread = Array.from({ length: 50 }, (_, i) => i * 30);
    expect(windowsOf(spread)).to.have.length(50);
    const dense = Array.from({ length: 2 * SEARCH_BATCH }, (_, i) => i);
    expect(windowsOf(dense).every((w) => w.limit <= SEARCH_BATCH)).to.equal(true);
    expect(windowsOf(dense).reduce((n, w) => n + w.limit, 0)).to.equal(2 * SEARCH_BATCH);
  });

  it('a page number as the list takes it', () => {
    expect([undefined, '1', ' 2', '+3', '0', '-1', 'x', '1.0'].map(listPageNumber)).to.deep.equal([1, 1, 2, 3, undefined, undefined, undefined, undefined]);
  });
});
