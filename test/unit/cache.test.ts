// The gateway's caches (gateway/cache/cache.ts): TtlCache behind sessions, bearer tokens, Cookie headers
// and the shared state's local copies (bounded, a time-to-live per entry when given, least recently
// used out first); LoadingCache behind the identity provider catalog, the realm's discovery and the
// readiness probes (single flight, stale on error); SingleFlight behind a session's token refresh.
import { expect } from 'chai';
import { LoadingCache, SingleFlight, TtlCache } from '../../gateway/cache/cache.js';

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

describe('LoadingCache (the identity provider catalog\u2019s cache)', () => {
  const setup = (o: { maxEntries?: number; pinned?: (key: string) => boolean } = {}) => {
    const clock = { t: 1_000 };
    const lookups: string[] = [];
    const cache = new LoadingCache<string>({
      ttlMs: 60_000,
      retryMs: 15_000,
      maxEntries: o.maxEntries ?? 100,
      now: () => clock.t,
      pinned: o.pinned ?? (() => false),
      onLookup: (_key, result) => lookups.push(result),
    });
    return { clock, lookups, cache };
  };
  const tick = () => new Promise((r) => setImmediate(r));

  it('one load in flight per key: concurrent callers share it, and the answer is fresh for the TTL', async () => {
    const { clock, cache, lookups } = setup();
    let loads = 0;
    let release!: (v: string) => void;
    const load = () => {
      loads++;
      return new Promise<string>((r) => (release = r));
    };
    const waiting = Array.from({ length: 10 }, () => cache.get('list', load));
    await tick();
    release('v1');
    expect(await Promise.all(waiting)).to.deep.equal(Array(10).fill('v1'));
    expect(loads).to.equal(1);
    expect(lookups.filter((l) => l === 'coalesced')).to.have.length(9);
    clock.t += 59_999;
    expect(await cache.get('list', async () => 'v2')).to.equal('v1');
    clock.t += 1;
    expect(await cache.get('list', async () => 'v2')).to.equal('v2');
  });

  it('stale on error: the last good answer is served at once, and the source asked again once per retry period', async () => {
    const { clock, cache } = setup();
    await cache.get('list', async () => 'good');
    clock.t += 60_000;
    let loads = 0;
    const failing = async () => {
      loads++;
      throw new Error('Keycloak is down');
    };
    expect(await cache.get('list', failing)).to.equal('good');
    expect(loads).to.equal(1);
    clock.t += 14_999;
    expect(await cache.get('list', failing)).to.equal('good');
    expect(loads, 'not asked again within the retry period').to.equal(1);
    clock.t += 1;
    let backgroundDone!: () => void;
    const slow = () => new Promise<string>((r) => (backgroundDone = () => r('new')));
    expect(await cache.get('list', slow), 'served at once while the background load runs').to.equal('good');
    backgroundDone();
    await tick();
    await tick();
    expect(await cache.get('list', failing)).to.equal('new');
  });

  it('a failure with no earlier answer is remembered for the retry period: callers do not queue on a dead source', async () => {
    const { clock, cache, lookups } = setup();
    let loads = 0;
    const failing = async (): Promise<string> => {
      loads++;
      throw new Error('Keycloak is down');
    };
    const refusal = (p: Promise<string>) =>
      p.then(
        () => 'resolved',
        (e: Error) => e.message,
      );
    expect(await refusal(cache.get('alias:a', failing))).to.equal('Keycloak is down');
    expect(await refusal(cache.get('alias:a', failing))).to.equal('Keycloak is down');
    expect(loads).to.equal(1);
    expect(lookups.at(-1)).to.equal('error');
    clock.t += 15_000;
    expect(await cache.get('alias:a', async () => 'back')).to.equal('back');
  });

  it('bounded: any number of looked-up keys keeps at most maxEntries of them, and the pinned keys always stay', async () => {
    const { cache } = setup({ maxEntries: 3, pinned: (k) => k === 'list' || k === 'alias:acme' });
    await cache.get('list', async () => 'providers');
    await cache.get('alias:acme', async () => 'acme-oidc');
    for (let i = 0; i < 1_000; i++) await cache.get(`alias:guess-${i}`, async () => 'none');
    expect(cache.size).to.equal(5);
    let loads = 0;
    expect(await cache.get('list', async () => (loads++, 'again'))).to.equal('providers');
    expect(await cache.get('alias:acme', async () => (loads++, 'again'))).to.equal('acme-oidc');
    expect(loads).to.equal(0);
  });
});

describe('SingleFlight', () => {
  it('callers that come while a run is under way share it; once it settles the key runs again', async () => {
    const flights = new SingleFlight<string>();
    let runs = 0;
    let finish!: (v: string) => void;
    const work = () => (runs++, new Promise<string>((r) => (finish = r)));
    const first = flights.run('session-1', work);
    const second = flights.run('session-1', work);
    expect(runs).to.equal(1);
    expect(flights.has('session-1')).to.equal(true);
    finish('tokens');
    expect(await Promise.all([first, second])).to.deep.equal(['tokens', 'tokens']);
    expect(flights.has('session-1')).to.equal(false);
    const third = flights.run('session-1', work);
    expect(runs).to.equal(2);
    finish('new tokens');
    expect(await third).to.equal('new tokens');
  });

  it('keys are independent, and a failed run frees its key: the next caller tries again', async () => {
    const flights = new SingleFlight<string>();
    let runs = 0;
    const failing = flights.run('a', async () => {
      runs++;
      throw new Error('realm down');
    });
    const other = flights.run('b', async () => (runs++, 'b'));
    await failing.then(
      () => expect.fail('the failure reaches the caller'),
      (err: Error) => expect(err.message).to.equal('realm down'),
    );
    expect(await other).to.equal('b');
    expect(flights.size).to.equal(0);
    expect(await flights.run('a', async () => (runs++, 'a'))).to.equal('a');
    expect(runs).to.equal(3);
  });
});
