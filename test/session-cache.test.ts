// The cache behind sessions, bearer tokens and Cookie headers: bounded, with a time-to-live, and
// least recently used out first (recency kept to the second).
import { expect } from 'chai';
import { TtlCache } from '../gateway/session.js';

describe('TtlCache', () => {
  it('answers until the time-to-live runs out', () => {
    const c = new TtlCache<string, number>(10, 5_000);
    c.set('a', 1, undefined, 0);
    expect(c.get('a', 4_999)).to.equal(1);
    expect(c.get('a', 5_000)).to.equal(undefined);
    expect(c.get('a', 1)).to.equal(undefined); // expired entries are gone, not just hidden
  });

  it('when full, drops the least recently used entry', () => {
    const c = new TtlCache<string, number>(2, 60_000);
    c.set('a', 1, undefined, 0);
    c.set('b', 2, undefined, 0);
    expect(c.get('a', 2_000)).to.equal(1); // a used after b
    c.set('c', 3, undefined, 2_001);
    expect(c.get('b', 2_002)).to.equal(undefined);
    expect(c.get('a', 2_002)).to.equal(1);
    expect(c.get('c', 2_002)).to.equal(3);
  });

  it('keeps recency to the second: a use within a second of the last one does not reorder', () => {
    const c = new TtlCache<string, number>(2, 60_000);
    c.set('a', 1, undefined, 0);
    c.set('b', 2, undefined, 0);
    expect(c.get('a', 500)).to.equal(1); // too soon to move: a is still the oldest
    c.set('c', 3, undefined, 600);
    expect(c.get('a', 700)).to.equal(undefined);
    expect(c.get('b', 700)).to.equal(2);
  });
});
