// The session cookie's format, which the gateway owns (gateway/auth/session-cookie.ts,
// docs/design/session-cookie.md): version 2 in the protected header, the cookies written before it (express-openid-connect's
// layout, no version) still read and renewed as version 2, any other version refused: signed out
// cleanly, never a 5xx. The key is derived here as docs/security.md says, not through the gateway's code.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { CompactEncrypt, decodeProtectedHeader } from 'jose';
import { readSessionCookie, SessionCodec, SESSION_COOKIE, type SessionData, type SessionHeader } from '../gateway/auth/session-cookie.js';
import { SessionStore } from '../gateway/auth/session-store.js';
import { SharedStateUnavailable } from '../gateway/http/respond.js';
import { SESSION_SECRET, startWorld, type World } from './support/cookie-jar.js';
import { oldLayoutCookie, sessionKey as key } from './support/old-session-cookie.js';

const ROLLING = 86_400;
const ABSOLUTE = 7 * 86_400;
const now = () => Math.floor(Date.now() / 1000);

const eocEraCookie = oldLayoutCookie;

/** A cookie value of the right key whose protected header names format `v` (a later release's, say). */
const versioned = (v: unknown, data: unknown, header: SessionHeader) =>
  new CompactEncrypt(new TextEncoder().encode(JSON.stringify(data)))
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', v, ...header })
    .encrypt(key(SESSION_SECRET));

function session(email = 'alice@acme.example', groups: string[] = []): SessionData {
  return {
    v: 1,
    id: `s-${randomBytes(6).toString('hex')}`,
    user: { sub: `sub-${email}`, email, name: 'Alice', roles: [], groups, tenants: ['acme'] },
    active_tenant: 'acme',
    refresh_token: null,
    expires_at: now() + 3600,
    sid: null,
  };
}

describe('the session cookie: the gateway’s own format (version 2)', () => {
  const codec = new SessionCodec([SESSION_SECRET], { secure: false, rollingSeconds: ROLLING, absoluteSeconds: ABSOLUTE });
  const fresh = (): SessionHeader => ({ iat: now(), uat: now(), exp: now() + 3600 });

  it('round trip: a JWE (dir, A256GCM) whose protected header names version 2 and the times', async () => {
    const data = session();
    const header = fresh();
    const value = await codec.encrypt(data, header);
    expect(value.split('.')).to.have.length(5);
    expect(value.split('.')[1], 'no encrypted key with dir').to.equal('');
    expect(decodeProtectedHeader(value)).to.deep.equal({ alg: 'dir', enc: 'A256GCM', v: 2, ...header });
    expect(await codec.decrypt(value)).to.deep.equal({ header, data, version: 2 });
  });

  it('a cookie written before the change (express-openid-connect’s layout, no version) is read', async () => {
    const data = session();
    const header = fresh();
    expect(await codec.decrypt(eocEraCookie(SESSION_SECRET, data, header))).to.deep.equal({ header, data, version: undefined });
    // under another key it is still nobody's
    expect(await codec.decrypt(eocEraCookie('another-secret-of-some-length-0123456789', data, header))).to.equal(undefined);
  });

  it('an unknown version is refused, even under the right key', async () => {
    const data = session();
    for (const v of [3, 1, 0, '2', null, { n: 2 }]) expect(await codec.decrypt(await versioned(v, data, fresh())), JSON.stringify(v)).to.equal(undefined);
    expect(await codec.decrypt(await versioned(2, data, fresh())), 'the same writer with v 2 is read').to.not.equal(undefined);
  });

  it('a tampered cookie is refused: any part flipped, a header rewritten, another key', async () => {
    const value = await codec.encrypt(session(), fresh());
    const parts = value.split('.');
    const flip = (s: string, at: number) => s.slice(0, at) + (s[at] === 'A' ? 'B' : 'A') + s.slice(at + 1);
    for (const i of [0, 2, 3, 4]) {
      const tampered = parts.map((p, j) => (j === i ? flip(p, 3) : p)).join('.');
      expect(await codec.decrypt(tampered), `part ${i}`).to.equal(undefined);
    }
    const longer = Buffer.from(JSON.stringify({ ...decodeProtectedHeader(value), exp: now() + 10 * 365 * 86_400 })).toString('base64url');
    expect(await codec.decrypt([longer, ...parts.slice(1)].join('.')), 'exp pushed out').to.equal(undefined);
    const other = new SessionCodec(['another-secret-of-some-length-0123456789'], { secure: false, rollingSeconds: ROLLING, absoluteSeconds: ABSOLUTE });
    expect(await codec.decrypt(await other.encrypt(session(), fresh()))).to.equal(undefined);
    for (const junk of ['', 'garbage', 'a.b.c.d.e', `${value}.AAAA`]) expect(await codec.decrypt(junk), junk).to.equal(undefined);
  });

  it('chunked: a large session is cut into cookies of at most 4096 bytes and read back joined, in any order', async () => {
    const data = session(
      'alice@acme.example',
      Array.from({ length: 200 }, (_, i) => `group-with-a-long-name-${i}`),
    );
    const header = fresh();
    const lines = codec.setCookieLines(await codec.encrypt(data, header), header.exp, [SESSION_COOKIE]);
    const chunks = lines.filter((l) => /^appSession\.\d+=/.test(l));
    expect(chunks.length).to.be.greaterThan(1);
    expect(lines.every((l) => l.length <= 4096)).to.equal(true);
    expect(
      lines.some((l) => /^appSession=;/.test(l)),
      'the single cookie the request carried is cleared',
    ).to.equal(true);
    const pairs = chunks.map((l) => l.split(';')[0]!).reverse();
    const found = readSessionCookie(pairs.join('; '))!;
    expect(found.names).to.have.members(chunks.map((l) => l.split('=')[0]));
    expect(await codec.decrypt(found.value)).to.deep.equal({ header, data, version: 2 });
    // a chunk missing: nothing
    expect(await codec.decrypt(readSessionCookie(pairs.slice(1).join('; '))!.value)).to.equal(undefined);
  });

  it('a rolling touch whose new cookie could not be made is tried again by the next request, not refused for good', async () => {
    let failures = 1;
    class Flaky extends SessionCodec {
      override encrypt(data: SessionData, header: SessionHeader): Promise<string> {
        return failures-- > 0 ? Promise.reject(new Error('no cookie this time')) : super.encrypt(data, header);
      }
    }
    const flaky = new Flaky([SESSION_SECRET], { secure: false, rollingSeconds: 100, absoluteSeconds: 1000 });
    const store = new SessionStore(
      flaky,
      { refreshMarginSeconds: 60, rollingSeconds: 100, absoluteSeconds: 1000 },
      { refresh: () => Promise.reject(new Error('no refresh here')), ended: () => {}, unavailable: () => {} },
      { end: async () => 'durable' as const, isEnded: () => false, settle: async () => {} },
    );
    const t = now() - 60; // past half the rolling duration: the next request renews it
    const value = await codec.encrypt(session(), { iat: t, uat: t, exp: t + 100 });
    const found = { value, names: [SESSION_COOKIE] };
    let first: unknown;
    await Promise.resolve(store.live(found)).catch((e: Error) => (first = e.message));
    expect(first).to.equal('no cookie this time');
    const second = await store.live(found);
    expect(second?.header.uat, 'renewed').to.be.at.least(now() - 1);
    expect(second?.value).to.not.equal(value);
  });

  it('a session whose end cannot be known at once is asked again before it is refused: served when asking settles it, 503 when not', async () => {
    const storeAnswering = (settled: boolean | undefined) => {
      let known: boolean | undefined;
      let asked = 0;
      const store = new SessionStore(
        codec,
        { refreshMarginSeconds: 60, rollingSeconds: 1000, absoluteSeconds: 10_000 },
        { refresh: () => Promise.reject(new Error('no refresh here')), ended: () => {}, unavailable: () => {} },
        {
          end: async () => 'durable' as const,
          isEnded: () => known,
          settle: async () => {
            asked++;
            known = settled;
          },
        },
      );
      return { store, asked: () => asked };
    };
    const t = now();
    const data = session();
    const found = { value: await codec.encrypt(data, { iat: t, uat: t, exp: t + 1000 }), names: [SESSION_COOKIE] };
    const lapsed = storeAnswering(false);
    expect((await lapsed.store.live(found))?.data.id, 'served').to.equal(data.id);
    expect(lapsed.asked()).to.equal(1);
    const unreachable = storeAnswering(undefined);
    let refused: unknown;
    await unreachable.store.live(found).catch((err: unknown) => (refused = err));
    expect(refused).to.be.instanceOf(SharedStateUnavailable);
    expect(unreachable.asked()).to.equal(1);
    const ended = storeAnswering(true);
    expect(await ended.store.live(found), 'ended once asked').to.equal(undefined);
  });

  describe('through the gateway', () => {
    let w: World;
    before(async () => {
      w = await startWorld();
    });
    after(async () => {
      await w?.close();
    });

    const api = (cookie: string) => fetch(`${w.url}/api/v1/auths/`, { headers: { cookie } });
    const sessionCookieOf = (res: Response) => res.headers.getSetCookie().find((c) => c.startsWith('appSession='));

    it('a cookie of the old layout signs in, and its next renewal writes version 2 with the same session', async () => {
      const data = session();
      const t = now();
      const read = await api(`appSession=${eocEraCookie(SESSION_SECRET, data, { iat: t, uat: t, exp: t + 3600 })}`);
      expect(read.status).to.equal(200);
      expect(sessionCookieOf(read), 'nothing to renew yet').to.equal(undefined);
      // last touched more than half the rolling duration ago: the rolling touch renews it
      const old = t - w.settings.oidc.rollingSeconds / 2 - 60;
      const touched = await api(`appSession=${eocEraCookie(SESSION_SECRET, data, { iat: old, uat: old, exp: old + w.settings.oidc.rollingSeconds })}`);
      expect(touched.status).to.equal(200);
      const line = sessionCookieOf(touched);
      expect(line, 'renewed').to.be.a('string');
      const value = line!.split(';')[0]!.slice('appSession='.length);
      expect(decodeProtectedHeader(value)).to.include({ v: 2, iat: old });
      const reader = new SessionCodec([SESSION_SECRET], {
        secure: false,
        rollingSeconds: w.settings.oidc.rollingSeconds,
        absoluteSeconds: w.settings.oidc.absoluteSeconds,
      });
      expect((await reader.decrypt(value))?.data).to.deep.equal(data);
      expect((await api(`appSession=${value}`)).status, 'the renewed cookie signs in').to.equal(200);
    });

    it('a cookie of an unknown version signs the browser out cleanly: 401, cookie cleared, login page; never a 5xx', async () => {
      const t = now();
      const cookie = `appSession=${await versioned(3, session(), { iat: t, uat: t, exp: t + 3600 })}`;
      const mark = w.upstream.requests.length;
      const r = await api(cookie);
      expect(r.status).to.equal(401);
      expect(await r.json()).to.deep.equal({ detail: 'Not authenticated' });
      expect(r.headers.getSetCookie().some((c) => /^appSession=;.*Expires=Thu, 01 Jan 1970/.test(c))).to.equal(true);
      expect(r.headers.get('clear-site-data')).to.equal('"cache", "cookies", "storage"');
      const page = await fetch(`${w.url}/c/1`, { headers: { cookie }, redirect: 'manual' });
      expect(page.status).to.equal(302);
      expect(page.headers.get('location')).to.match(/\/auth\/login/);
      expect(await (await fetch(`${w.url}/auth/session`, { headers: { cookie } })).json()).to.deep.equal({ authenticated: false });
      expect(
        w.upstream.requests.slice(mark).filter((q) => q.url.startsWith('/api/v1/auths')),
        'nothing forwarded for it',
      ).to.have.length(0);
    });
  });
});
