// The cache behind sessions, bearer tokens, Cookie headers and the shared state's local copies:
// bounded, with a time-to-live (per entry when given), least recently used out first.
import { expect } from 'chai';
import { TtlCache } from '../gateway/auth/session.js';

describe('TtlCache', () => {
  it('answers until the time-to-live runs out, and then no more', () => {
    const clock = { t: 1 };
    const c = new TtlCache<string, number>(10, 5_000, () => clock.t);
    c.set('a', 1);
    clock.t = 4_999;
    expect(c.get('a')).to.equal(1);
    clock.t = 5_002;
    expect(c.get('a')).to.equal(undefined);
    clock.t = 2; // expired entries are gone, not just hidden
    expect(c.get('a')).to.equal(undefined);
    expect(c.size).to.equal(0);
  });

  it('takes a time-to-live per entry', () => {
    const clock = { t: 1 };
    const c = new TtlCache<string, number>(10, 60_000, () => clock.t);
    c.set('short', 1, 1_000);
    c.set('long', 2);
    clock.t = 1_500;
    expect(c.get('short')).to.equal(undefined);
    expect(c.get('long')).to.equal(2);
  });

  it('when full, drops the least recently used entry', () => {
    const clock = { t: 1 };
    const c = new TtlCache<string, number>(2, 60_000, () => clock.t);
    c.set('a', 1);
    c.set('b', 2);
    clock.t = 2_000;
    expect(c.get('a')).to.equal(1); // a used after b
    c.set('c', 3);
    expect(c.get('b')).to.equal(undefined);
    expect(c.get('a')).to.equal(1);
    expect(c.get('c')).to.equal(3);
    expect(c.size).to.equal(2);
  });

  it('delete and clear', () => {
    const c = new TtlCache<string, number>(10, 60_000);
    c.set('a', 1);
    c.set('b', 2);
    c.delete('a');
    expect(c.get('a')).to.equal(undefined);
    expect(c.get('b')).to.equal(2);
    c.clear();
    expect(c.size).to.equal(0);
  });
});
