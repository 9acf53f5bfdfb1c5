// The ended-sessions mirror every instance keeps (gateway/shared-state.ts), and the per-process
// state used without REDIS_URL. With Redis: sessions-shared.test.ts.
import { expect } from 'chai';
import { EndedMirror, processState, redactedRedisUrl } from '../gateway/shared-state.js';
import { createObservability } from '../gateway/observability.js';

describe('shared state', () => {
  const now = 1_000_000;
  const session = { id: 'g1', sid: 'realm-1', sub: 'u1', iat: now - 100 };

  it('a session is ended by its own id, by its realm session id, or by its subject before a time', () => {
    for (const [member, ended] of [
      [EndedMirror.member({ id: 'g1' }), true],
      [EndedMirror.member({ id: 'g2' }), false],
      [EndedMirror.member({ sid: 'realm-1' }), true],
      [EndedMirror.member({ sid: 'realm-2' }), false],
      [EndedMirror.member({ sub: 'u1', before: now - 100 }), true], // begun in that very second: ended (fail closed)
      [EndedMirror.member({ sub: 'u1', before: now - 101 }), false], // begun after
      [EndedMirror.member({ sub: 'u2', before: now }), false],
    ] as const) {
      const m = new EndedMirror();
      m.add(member, now + 60);
      expect(m.has(session, now), member).to.equal(ended);
    }
  });

  it('forgets an entry once no session it names can be alive, not before; no count cap', () => {
    const m = new EndedMirror();
    for (let i = 0; i < 150_000; i++) m.add(EndedMirror.member({ id: `s${i}` }), now + 10);
    m.add(EndedMirror.member({ sub: 'u1:with:colons', before: now }), now + 20);
    expect(m.size).to.equal(150_001);
    expect(m.has({ id: 's0', sub: 'x', iat: 0 }, now)).to.equal(true);
    expect(m.has({ id: 'z', sub: 'u1:with:colons', iat: now - 5 }, now)).to.equal(true);
    m.sweep(now + 10);
    expect(m.size).to.equal(1);
    expect(m.has({ id: 's0', sub: 'x', iat: 0 }, now + 10)).to.equal(false);
    expect([...m.entries()]).to.deep.equal([[`sub:${now}:u1:with:colons`, now + 20]]);
  });

  it('without REDIS_URL: known at once in this process, logout tokens used once, the limit counts', async () => {
    const state = processState(createObservability({ level: 'silent' }));
    try {
      expect(state.isEnded(session, now)).to.equal(false);
      state.end({ sid: 'realm-1' }, Math.floor(Date.now() / 1000) + 60);
      expect(state.isEnded(session)).to.equal(true);
      expect(await state.firstUse('jti-1', Math.floor(Date.now() / 1000) + 60)).to.equal(true);
      expect(await state.firstUse('jti-1', Math.floor(Date.now() / 1000) + 60)).to.equal(false);
      const limit = state.rateLimit('t', 2, 60);
      expect(await limit.take('a')).to.deep.equal({ ok: true });
      expect(await limit.take('a')).to.deep.equal({ ok: true });
      expect(await limit.take('a')).to.deep.equal({ ok: false, retryAfter: 60 });
      expect(await limit.take('b')).to.deep.equal({ ok: true });
      expect(state.ready().ok).to.equal(true);
    } finally {
      await state.close();
    }
  });

  it('never shows Redis credentials', () => {
    expect(redactedRedisUrl('redis://user:s3cret@redis.internal:6380/2')).to.equal('redis://redis.internal:6380/2');
  });
});
