// Two live sessions of one user from either side of a demotion (one signed in before, still admin
// until its refresh; one after) must not take turns telling Open WebUI their role: the newest facts
// the realm gave win (policies/session-ends.ts). The older session is renewed before it is believed
// again (or refused while it cannot be), and an older bearer token is judged and signed in as the newest
// identity: the role inside the chat front-end never returns to admin once the demotion was seen.
// A bearer token from before a promotion is judged by the newest facts too (found by a review: it
// was judged as a plain user while Open WebUI was told the admin, and read another user's chat).
import { expect } from 'chai';
import { changeableDemoAccounts, browse, signIn, startWorld, CLIENT_ID, type World } from './support/cookie-jar.js';
import { seedChats, seedUsers, FOREIGN_MARKER } from './support/raw-http.js';
import { sleep } from './support/wait.js';

describe('the newest identity facts of a user win at the chat front-end', function () {
  this.timeout(30_000);
  const accounts = changeableDemoAccounts();
  const sysadmin = accounts.find((a) => a.username === 'sysadmin')!;
  const adminRoles = [...sysadmin.roles];
  let w: World;
  before(async () => {
    // 300 s access tokens: no refresh comes on its own here; another user's chat to be kept from the admin
    w = await startWorld({ accounts, upstream: { users: seedUsers.map((u) => ({ ...u })), chats: seedChats(), enableAdminChatAccess: true } });
  });
  after(() => w?.close());
  afterEach(() => {
    sysadmin.roles = [...adminRoles];
    w.idp.failRefresh = false;
  });

  const role = async (jar: Parameters<typeof browse>[0]) => {
    const r = await browse(jar, '/api/v1/auths/');
    return {
      status: r.status,
      role: r.status === 200 ? r.json<{ role: string }>().role : undefined,
      renewed: r.setCookies.some((c) => c.startsWith('appSession=')),
    };
  };
  const upstreamRole = () => [...w.upstream.users.values()].find((u) => u.email === sysadmin.email)?.role;

  it('sessions from before and after a demotion, alternating: the role stays user; the older session is renewed first', async () => {
    const before = await signIn(w.url, 'sysadmin');
    expect((await role(before.jar)).role).to.equal('admin');
    sysadmin.roles = [];
    await sleep(1_100); // the realm's word comes a second later
    const after = await signIn(w.url, 'sysadmin');
    expect((await role(after.jar)).role).to.equal('user');
    const old = await role(before.jar);
    expect(old).to.deep.equal({ status: 200, role: 'user', renewed: true });
    for (let i = 0; i < 3; i++) {
      expect((await role(before.jar)).role).to.equal('user');
      expect(upstreamRole()).to.equal('user');
      expect((await role(after.jar)).role).to.equal('user');
      expect(upstreamRole()).to.equal('user');
    }
    expect((await browse(before.jar, '/auth/session')).json<{ user: { admin: boolean } }>().user.admin, 'the older session renewed').to.equal(false);
  });

  it('the older session cannot be renewed (realm refuses): refused, never believed on its admin role', async () => {
    const before = await signIn(w.url, 'sysadmin');
    expect((await role(before.jar)).role).to.equal('admin');
    sysadmin.roles = [];
    await sleep(1_100);
    const after = await signIn(w.url, 'sysadmin');
    expect((await role(after.jar)).role).to.equal('user');
    w.idp.failRefresh = true;
    expect((await role(before.jar)).status).to.equal(401);
    expect(upstreamRole()).to.equal('user');
  });

  it('a bearer token issued before the demotion: the account stays user', async () => {
    const oldToken = await w.idp.accessTokenFor('sysadmin', CLIENT_ID);
    sysadmin.roles = [];
    await sleep(1_100);
    const after = await signIn(w.url, 'sysadmin');
    expect((await role(after.jar)).role).to.equal('user');
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${w.url}/api/v1/auths/`, { headers: { authorization: `Bearer ${oldToken}` } });
      expect(res.status).to.equal(200);
      expect(((await res.json()) as { role: string }).role).to.equal('user');
      expect(upstreamRole()).to.equal('user');
      expect((await role(after.jar)).role).to.equal('user');
    }
  });

  it('a promotion seen later wins the same way: the newest word is admin', async () => {
    sysadmin.roles = [];
    const before = await signIn(w.url, 'sysadmin');
    expect((await role(before.jar)).role).to.equal('user');
    sysadmin.roles = [...adminRoles];
    await sleep(1_100);
    const after = await signIn(w.url, 'sysadmin');
    expect((await role(after.jar)).role).to.equal('admin');
    expect((await role(before.jar)).role).to.equal('admin');
    expect((await role(after.jar)).role).to.equal('admin');
  });

  it('GET /api/v1/chats/c-u-bob with a pre-promotion token: refused like any admin request, never forwarded', async () => {
    sysadmin.roles = [];
    const oldToken = await w.idp.accessTokenFor('sysadmin', CLIENT_ID); // plain user facts
    sysadmin.roles = [...adminRoles];
    await sleep(1_100);
    const promoted = await signIn(w.url, 'sysadmin'); // admin facts, newer
    expect((await browse(promoted.jar, '/api/v1/auths/')).json<{ role: string }>().role).to.equal('admin');
    // the admin's session: the rule holds (the gateway asks Open WebUI whose chat it is, then refuses)
    const asked = (from: number) => w.upstream.requests.slice(from).filter((r) => r.url.startsWith('/api/v1/chats/c-u-bob')).length;
    const sessionMark = w.upstream.requests.length;
    expect((await browse(promoted.jar, '/api/v1/chats/c-u-bob')).status).to.equal(401);
    const sessionAsked = asked(sessionMark);
    // the same user with the older token: handled exactly as the admin's session (judged by the newest facts)
    const mark = w.upstream.requests.length;
    const res = await fetch(`${w.url}/api/v1/chats/c-u-bob`, { headers: { authorization: `Bearer ${oldToken}` } });
    const text = await res.text();
    expect({ status: res.status, upstreamAsked: asked(mark), leaked: text.includes(FOREIGN_MARKER) }).to.deep.equal({
      status: 401,
      upstreamAsked: sessionAsked,
      leaked: false,
    });
  });
});
