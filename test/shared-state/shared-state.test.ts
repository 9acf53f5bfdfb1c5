// The ended-sessions mirror every instance keeps (gateway/state/ended-mirror.ts), and the per-process
// state used without REDIS_URL. With Redis: ../sessions/sessions-shared.test.ts.
import { expect } from 'chai';
import { EndedMirror } from '../../gateway/state/ended-mirror.js';
import { processState } from '../../gateway/state/process-state.js';
import { redactedRedisUrl } from '../../gateway/state/redis-connections.js';
import { createObservability } from '../../gateway/observability/observability.js';

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

describe('shared state: what one instance without REDIS_URL loads', function () {
  this.timeout(30_000);
  it('neither ioredis nor rate-limiter-flexible until they are needed (they cost ~36 MB of RSS)', async () => {
    const { spawnSync } = await import('node:child_process');
    const script = `
      import { createRequire } from 'node:module';
      // both stores' modules, as the gateway loads them; the one in this process is used
      const { processState } = await import('./gateway/state/process-state.ts');
      await import('./gateway/state/redis-state.ts');
      const { createObservability } = await import('./gateway/observability/observability.ts');
      const state = processState(createObservability({ level: 'silent' }));
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).filter((k) => /node_modules\\/(ioredis|rate-limiter-flexible)\\//.test(k)).map((k) => k.split('node_modules/')[1].split('/')[0]);
      const before = [...new Set(loaded())];
      const limit = state.rateLimit('t', 1, 60);
      await limit.take('a');
      const after = [...new Set(loaded())];
      await state.close();
      console.log(JSON.stringify({ before, after }));
    `;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    const line = r.stdout.trim().split('\n').pop() ?? '';
    expect(line, r.stderr).to.match(/^\{/);
    expect(JSON.parse(line)).to.deep.equal({ before: [], after: ['rate-limiter-flexible'] });
  });
});
