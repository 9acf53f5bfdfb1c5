// A signed-in browser opening a page while Open WebUI is hung or down gets a page of the gateway's
// own, in its language, with a way to try again (504 or 502); API clients keep the JSON answers.
// Open WebUI sits behind a TCP relay the test stalls (a hung process) and cuts (a dead one).
import { expect } from 'chai';
import { browse, signIn, startWorld, type Jar, type World } from '../support/cookie-jar.js';
import { cutOffProxy, type CutOffProxy } from '../support/redis.js';
import { freePort } from '../support/raw-http.js';
import { UPSTREAM_DOWN, UPSTREAM_TIMEOUT } from '../../gateway/http/respond.js';

const UPSTREAM_TIMEOUT_MS = 800;

describe('a page while the chat front-end is hung or down', function () {
  this.timeout(20_000);
  let w: World;
  let relay: CutOffProxy;
  let jar: Jar;

  const page = (path: string, headers: Record<string, string> = {}) =>
    browse(jar, path, { headers: { accept: 'text/html,application/xhtml+xml', ...headers } });

  before(async () => {
    const port = await freePort();
    relay = await cutOffProxy(port);
    w = await startWorld({
      upstream: { port },
      env: { UPSTREAM_URL: `http://127.0.0.1:${relay.port}`, UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS) },
    });
    ({ jar } = await signIn(w.url, 'alice'));
    // the account's upstream sign-in is made while Open WebUI answers: what follows is the proxied page
    expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
  });
  afterEach(() => relay.reopen());
  after(async () => {
    await w?.close();
    await relay?.close();
  });

  it('hung: a page is answered 504 with a try-again page in the browser’s language; the API keeps its JSON 504', async () => {
    relay.stall();
    const [answer, api] = await Promise.all([page('/c/abc?x=1', { 'accept-language': 'de-DE,de;q=0.9,en;q=0.5' }), browse(jar, '/api/v1/chats/')]);
    expect(answer.status).to.equal(504);
    expect(answer.headers.get('content-type')).to.match(/^text\/html/);
    expect(answer.headers.get('content-security-policy')).to.contain("default-src 'none'");
    expect(answer.headers.get('cache-control')).to.equal('no-store');
    expect(answer.text).to.contain('id="chat-timeout"').and.to.contain('Der Chat hat nicht rechtzeitig geantwortet');
    expect(answer.text).to.contain('href="/c/abc?x=1"');
    expect(api.status).to.equal(504);
    expect(api.json()).to.deep.equal({ detail: UPSTREAM_TIMEOUT });
    // the user is not signed out
    expect(answer.setCookies.filter((c) => c.startsWith('appSession') && /Max-Age=0|Expires=Thu, 01 Jan 1970/i.test(c))).to.deep.equal([]);
  });

  it('down: a page is answered 502 with a try-again page; a request that does not ask for HTML gets the JSON 502', async () => {
    relay.cut();
    const answer = await page('/');
    expect(answer.status).to.equal(502);
    expect(answer.headers.get('content-type')).to.match(/^text\/html/);
    expect(answer.text).to.contain('id="chat-down"').and.to.contain('The chat is not available right now');
    expect(answer.text).to.contain('href="/"');
    const notHtml = await browse(jar, '/', { headers: { accept: 'application/json' } });
    expect(notHtml.status).to.equal(502);
    expect(notHtml.json()).to.deep.equal({ detail: UPSTREAM_DOWN });
    const asset = await browse(jar, '/static/app.js', { headers: { accept: 'text/html' } });
    expect(asset.status, 'not a page').to.equal(502);
    expect(asset.json()).to.deep.equal({ detail: UPSTREAM_DOWN });
  });

  it('back again: the same page is Open WebUI’s own', async () => {
    const answer = await page('/');
    expect(answer.status).to.be.below(500);
    expect(answer.text).to.not.contain('id="chat-down"');
  });
});
