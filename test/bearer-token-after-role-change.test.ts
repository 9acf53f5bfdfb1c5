// Found by a review (fixed): the newest-facts rule (abd08eb) signs an older bearer token in upstream as the
// user's NEWEST identity, but the gateway still judges the request by the token's own (older)
// facts. After a promotion that is the wrong way round: a realm token from before it is judged as
// a plain user (the admin route table, chat scoping and files filter are skipped) while the
// request carries the upstream credential of the admin sign-in, so Open WebUI acts with role admin.
// An admin the gateway is meant to hold to the admin rules escapes them with an access token kept
// from before the promotion (sessions are renewed first when stale; bearer tokens were not). Now
// such a token is judged as the newest facts, the identity Open WebUI is told.
import { expect } from 'chai';
import { changeableDemoAccounts, browse, signIn, startWorld, CLIENT_ID, type World } from './support/cookie-jar.js';
import { seedChats, seedUsers, FOREIGN_MARKER } from './support/raw-http.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a bearer token from before a role change is judged by the newest facts, never by its old role', function () {
  this.timeout(30_000);
  const accounts = changeableDemoAccounts();
  const sysadmin = accounts.find((a) => a.username === 'sysadmin')!;
  const adminRoles = [...sysadmin.roles];
  let w: World;
  before(async () => {
    w = await startWorld({ accounts, upstream: { users: seedUsers.map((u) => ({ ...u })), chats: seedChats(), enableAdminChatAccess: true } });
  });
  after(() => w?.close());

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
