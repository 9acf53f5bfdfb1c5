// The identity's sign-in at Open WebUI is cached by the gateway (gateway/upstream/accounts.ts). On the
// REAL Open WebUI (each checked release): when Open WebUI refuses that token before the cache
// expires (an admin sets the user's password, or revokes their sessions: 0.12 renews the account's
// session_stamp, 0.11.4 only with Redis; the token's own JWT_EXPIRES_IN runs out, on every release),
// the user's next request through the gateway is still answered 200 with their own data. Each
// event is shown at Open WebUI first (the token the gateway held, refused straight at Open WebUI),
// or said not to happen on this release. A user calling an admin-only route, which Open WebUI
// answers 401 on its own, costs a check a while and never a sign-in. One Open WebUI boot.
import { expect } from 'chai';
import { browse, signIn, type Jar } from '../support/cookie-jar.js';
import { OPEN_WEBUI_VERSION, callOpenWebUI, releaseAtLeast, startRealWorld, type Answer, type RealWorld } from '../support/open-webui.js';
import { sleep } from '../support/wait.js';
import { ACCESS_PROHIBITED } from '../../sandbox/open-webui/http.js';
import { TOKEN_CHECK_INTERVAL_MS } from '../../policies/sign-in-renewal.js';

/** 0.12 keeps a session_stamp per account; 0.11.4 revokes in Redis only, and this Open WebUI has none. */
const REVOKES_WITHOUT_REDIS = releaseAtLeast('0.12.0');

describe(`a cached sign-in the real Open WebUI ${OPEN_WEBUI_VERSION} refused is renewed: the user's next request works`, function () {
  this.timeout(120_000);
  let w: RealWorld;
  let adminToken: string;

  /** Through the gateway, as a signed-in browser. */
  const via = (jar: Jar, method: string, path: string, body?: unknown) =>
    browse(jar, path, {
      method,
      headers: method === 'GET' ? {} : { origin: w.url, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  /** Straight at Open WebUI, no gateway. */
  const direct = (method: string, path: string, body?: unknown, token = adminToken): Promise<Answer> => callOpenWebUI(w.owui.url, token, method, path, body);
  const ok = async <T>(p: Promise<Answer>, what: string): Promise<T> => {
    const r = await p;
    expect(r.status, `${what}: ${r.text}`).to.equal(200);
    return r.json<T>();
  };
  const metric = async (name: string, labels: string) => {
    const text = await w.obs.metrics.registry.getSingleMetricAsString(name);
    return Number(new RegExp(`^${name}\\{${labels}\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  };
  /** The user's own chat, made through the gateway, and their token as the gateway supplies it (Open WebUI echoes it). */
  const userWithChat = async (username: string) => {
    const jar = (await signIn(w.url, username)).jar;
    const title = `${username.toUpperCase()}-OWN-CHAT-${Math.random().toString(36).slice(2, 8)}`;
    const chat = await ok<{ id: string }>(via(jar, 'POST', '/api/v1/chats/new', { chat: { title, messages: [], history: { messages: {} } } }), 'a chat');
    const me = await ok<{ id: string; email: string; name: string; token: string }>(via(jar, 'GET', '/api/v1/auths/'), 'me');
    return { jar, chat: chat.id, title, ...me };
  };
  /** Their chat list through the gateway: 200 with their own chat. */
  const stillServed = async (u: { jar: Jar; title: string; id: string }) => {
    const list = await via(u.jar, 'GET', '/api/v1/chats/');
    expect(list.status, `their chats through the gateway: ${list.text}`).to.equal(200);
    expect(list.json<Array<{ title: string }>>().map((c) => c.title)).to.include(u.title);
    expect((await ok<{ id: string }>(via(u.jar, 'GET', '/api/v1/auths/'), 'me again')).id).to.equal(u.id);
  };

  before(async function () {
    this.timeout(300_000);
    w = await startRealWorld({ flags: { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false } });
    await signIn(w.url, 'sysadmin'); // the first account: Open WebUI's admin
    const r = await fetch(`${w.owui.url}/api/v1/auths/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-email': 'sysadmin@platform.example', 'x-forwarded-role': 'admin' },
      body: JSON.stringify({ email: '', password: '' }),
    });
    adminToken = ((await r.json()) as { token: string }).token;
  });
  after(() => w?.close());

  it(`an admin sets the user's password at Open WebUI: ${REVOKES_WITHOUT_REDIS ? 'their token is refused there' : 'this release keeps their token (it revokes in Redis only)'}; through the gateway their next requests answer 200 with their own data`, async () => {
    const alice = await userWithChat('alice');
    const set = await direct('POST', `/api/v1/users/${alice.id}/update`, { name: alice.name, email: alice.email, password: 'Another-Passw0rd!' });
    expect(set.status, set.text).to.equal(200);
    const held = await direct('GET', '/api/v1/auths/', undefined, alice.token);
    expect(held.status, `the token the gateway held, straight at Open WebUI: ${held.text}`).to.equal(REVOKES_WITHOUT_REDIS ? 401 : 200);
    await stillServed(alice);
    expect(await metric('gateway_upstream_signin_renewals_total', 'reason="revoked"')).to.equal(REVOKES_WITHOUT_REDIS ? 1 : 0);
    const logged = w.obs.lines.filter((l) => l.event === 'upstream-sign-in-renewed');
    expect(logged.map((l) => [l.reason, l.caller])).to.deep.equal(REVOKES_WITHOUT_REDIS ? [['revoked', 'alice@acme.example']] : []);
    expect(JSON.stringify(w.obs.lines), 'no token in the log').to.not.include(alice.token);
  });

  it(`an admin revokes the user's sessions at Open WebUI: ${REVOKES_WITHOUT_REDIS ? 'their token is refused there' : 'this release has no such route'}; through the gateway their next request answers 200`, async () => {
    const bob = await userWithChat('bob');
    const revoked = await direct('POST', `/api/v1/users/${bob.id}/sessions/revoke`);
    if (!REVOKES_WITHOUT_REDIS) expect(revoked.status, `no sessions/revoke route: ${revoked.text}`).to.be.oneOf([404, 405]);
    else {
      expect(revoked.status, revoked.text).to.equal(200);
      expect((await direct('GET', '/api/v1/auths/', undefined, bob.token)).status, 'the token the gateway held, straight at Open WebUI').to.equal(401);
    }
    await stillServed(bob);
  });

  it('the token runs out (an operator\u2019s shorter JWT_EXPIRES_IN): refused at Open WebUI, renewed by the gateway, on every release', async () => {
    const config = await ok<Record<string, unknown>>(direct('GET', '/api/v1/auths/admin/config'), 'admin config');
    // what the admin page sends back: every value it read (an unset one left out), one changed
    const set = (expiry: unknown) =>
      ok(
        direct('POST', '/api/v1/auths/admin/config', { ...Object.fromEntries(Object.entries(config).filter(([, v]) => v !== null)), JWT_EXPIRES_IN: expiry }),
        'expiry set',
      );
    await set('6s');
    try {
      const carol = await userWithChat('carol'); // signed in first now: a token of 6 s
      await sleep(7_000);
      expect((await direct('GET', '/api/v1/auths/', undefined, carol.token)).status, 'the token the gateway held, straight at Open WebUI').to.equal(401);
      const before = await metric('gateway_upstream_signin_renewals_total', 'reason="expired"');
      await stillServed(carol);
      expect((await metric('gateway_upstream_signin_renewals_total', 'reason="expired"')) - before).to.be.within(1, 2);
    } finally {
      await set(config.JWT_EXPIRES_IN);
    }
  });

  it('a user calling an admin-only route Open WebUI answers 401 itself: its 401 every time, at most one check per interval, no sign-in', async () => {
    const tina = (await signIn(w.url, 'tina')).jar;
    await ok(via(tina, 'GET', '/api/v1/auths/'), 'signed in');
    const signIns = () => metric('gateway_cache_lookups_total', 'cache="upstream-account",result="miss"');
    const [signInsBefore, checksBefore] = [await signIns(), await metric('gateway_upstream_token_checks_total', 'result="accepted"')];
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 5 }, () => via(tina, 'GET', '/api/v1/analytics/daily')));
    for (let i = 0; i < 15; i++) answers.push(await via(tina, 'GET', '/api/v1/analytics/daily'));
    const elapsed = Date.now() - started;
    for (const a of answers) expect([a.status, a.json<{ detail: string }>().detail], a.text).to.deep.equal([401, ACCESS_PROHIBITED]);
    expect((await signIns()) - signInsBefore, 'no sign-in').to.equal(0);
    const checks = (await metric('gateway_upstream_token_checks_total', 'result="accepted"')) - checksBefore;
    expect(checks, `checks in ${elapsed} ms`).to.be.within(1, 1 + Math.floor(elapsed / TOKEN_CHECK_INTERVAL_MS));
  });
});
