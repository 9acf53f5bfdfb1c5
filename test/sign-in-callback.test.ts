// The code flow's checks as a browser and an attacker see them (gateway/auth/sign-in.ts, with
// openid-client): the transaction cookie that binds /auth/start to /auth/callback reveals nothing
// and is used once; a callback without it, with another sign-in's, or tampered, makes no session;
// a token endpoint out of reach at the callback is the "temporarily unavailable" page, not a 400.
import { expect } from 'chai';
import { loginThroughIdp } from '../sandbox/idp-browser.js';
import { browse, Jar, startWorld, type World } from './support/cookie-jar.js';

describe('sign-in: the code flow’s transaction', () => {
  let w: World;
  before(async () => {
    w = await startWorld();
  });
  after(async () => {
    await w?.close();
  });

  /** /auth/start in `jar`, then the realm's login form: the callback URL the realm sends the browser to. */
  async function begin(jar: Jar, username = 'alice', query = 'returnTo=%2Fc%2F7') {
    const start = await browse(jar, `/auth/start?${query}`);
    expect(start.status).to.equal(302);
    const { callbackUrl } = await loginThroughIdp(start.location!, username, undefined, new Jar());
    return { start, callbackUrl };
  }

  it('the transaction cookie is encrypted, HttpOnly, scoped to the callback, short-lived; it names none of the checks', async () => {
    const jar = new Jar(w.url);
    const start = await browse(jar, '/auth/start?returnTo=%2Fc%2F7');
    const line = start.setCookies.find((c) => c.startsWith('auth_verification='))!;
    expect(line)
      .to.match(/; Path=\/auth\/callback;/)
      .and.match(/; HttpOnly/)
      .and.match(/; SameSite=Lax/)
      .and.match(/; Max-Age=900/);
    const value = line.split(';')[0]!.slice('auth_verification='.length);
    const authorize = new URL(start.location!);
    const state = authorize.searchParams.get('state')!;
    const nonce = authorize.searchParams.get('nonce')!;
    expect(authorize.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(authorize.searchParams.get('code_challenge')).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(value.split('.'), 'a JWE').to.have.length(5);
    const readable = value
      .split('.')
      .map((p) => Buffer.from(p, 'base64url').toString('latin1'))
      .join('|');
    for (const secret of [state, nonce, '/c/7', 'code_verifier']) expect(readable, secret).to.not.include(secret);
  });

  it('a callback is used once: the cookie is cleared, the same callback again makes no second session', async () => {
    const jar = new Jar(w.url);
    const { callbackUrl } = await begin(jar);
    const done = await browse(jar, callbackUrl);
    expect(done.status).to.equal(302);
    expect(done.location).to.equal(`${w.url}/c/7`);
    expect(done.setCookies.some((c) => /^auth_verification=;.*Max-Age=0/.test(c))).to.equal(true);
    const session = jar.get('appSession');
    // the Back button: the browser is signed in, it goes home; the cookie it has stays the same
    const again = await browse(jar, callbackUrl, { headers: { accept: 'text/html' } });
    expect(again.status).to.equal(302);
    expect(again.location).to.equal(`${w.url}/`);
    expect(again.setCookies.some((c) => c.startsWith('appSession='))).to.equal(false);
    expect(jar.get('appSession')).to.equal(session);
  });

  it('no session from a callback without the transaction cookie, with another sign-in’s, or with a tampered one', async () => {
    const victim = new Jar(w.url);
    const { callbackUrl } = await begin(victim, 'sysadmin');
    // an attacker's own sign-in under way in the victim's browser (login CSRF): its cookie, the victim's code
    const attacker = new Jar(w.url);
    await browse(attacker, '/auth/start');
    const theirs = attacker.get('auth_verification')!;
    const mine = victim.get('auth_verification')!;
    const flipped = mine.slice(0, 60) + (mine[60] === 'A' ? 'B' : 'A') + mine.slice(61);
    for (const [why, cookie] of [
      ['no transaction cookie', ''],
      ['another sign-in’s', `auth_verification=${theirs}`],
      ['tampered', `auth_verification=${flipped}`],
      ['garbage', 'auth_verification=garbage'],
    ]) {
      const r = await browse(undefined, callbackUrl, { headers: { cookie: cookie!, accept: 'application/json' } });
      expect(r.status, why).to.equal(400);
      expect(
        r.setCookies.some((c) => c.startsWith('appSession=')),
        why,
      ).to.equal(false);
      expect(r.json<{ detail: string }>().detail, why).to.equal('Sign-in failed, please start again');
    }
  });

  it('the token endpoint out of reach at the callback: the "temporarily unavailable" page (503), no session', async () => {
    const jar = new Jar(w.url);
    const { callbackUrl } = await begin(jar);
    await w.idp.down();
    try {
      const r = await browse(jar, callbackUrl, { headers: { accept: 'text/html' } });
      expect(r.status).to.equal(503);
      expect(r.headers.get('retry-after')).to.equal('30');
      expect(r.text).to.match(/temporarily/i);
      expect(r.setCookies.some((c) => c.startsWith('appSession='))).to.equal(false);
    } finally {
      await w.idp.up();
    }
  });
});
