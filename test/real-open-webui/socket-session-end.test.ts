// The real Open WebUI 0.12.4's Socket.IO behind the gateway: the chat front-end's own sign-out closes
// that session's open WebSocket at once (Close 1008 "signed out"), and another user's stays open.
// Real Open WebUI, the real oidc-provider, real sockets.
import { expect } from 'chai';
import WebSocket from 'ws';
import { browse, signIn, type Jar } from '../support/cookie-jar.js';
import { OPEN_WEBUI_VERSION, startRealWorld, type RealWorld } from '../support/open-webui.js';
import { sleep } from '../support/wait.js';

describe(`the real Open WebUI ${OPEN_WEBUI_VERSION}: an open Socket.IO WebSocket ends with its session`, function () {
  this.timeout(120_000);
  let w: RealWorld;
  before(async function () {
    this.timeout(240_000);
    w = await startRealWorld({ flags: { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false } });
  });
  after(async () => {
    await w?.close();
  });

  /** Open WebUI's engine.io handshake over the WebSocket transport: resolves once its open packet came. */
  async function socketOf(jar: Jar) {
    const ws = new WebSocket(`${w.url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, {
      headers: { cookie: jar.header('/ws/socket.io/'), origin: w.url },
    });
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    const opened = await new Promise<string>((resolve, reject) => {
      ws.once('message', (d) => resolve(String(d)));
      ws.once('error', reject);
      ws.once('unexpected-response', (_q, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
    });
    return { ws, opened, closed };
  }

  it("Open WebUI's sign-out closes that session's socket (1008), not another user's", async () => {
    const alice = (await signIn(w.url, 'alice')).jar;
    const bob = (await signIn(w.url, 'bob')).jar;
    expect((await browse(alice, '/api/v1/auths/')).status).to.equal(200);
    expect((await browse(bob, '/api/v1/auths/')).status).to.equal(200);
    const mine = await socketOf(alice);
    const theirs = await socketOf(bob);
    expect(mine.opened.startsWith('0{'), mine.opened).to.equal(true);
    const out = await browse(alice, '/api/v1/auths/signout', {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: w.url, 'sec-fetch-site': 'same-origin' },
    });
    expect(out.status).to.equal(200);
    const closed = await Promise.race([mine.closed, sleep(3_000).then(() => 'open' as const)]);
    expect(closed).to.deep.equal({ code: 1008, reason: 'signed out' });
    await sleep(300);
    expect(theirs.ws.readyState, 'another user’s socket').to.equal(WebSocket.OPEN);
    theirs.ws.close();
  });
});
