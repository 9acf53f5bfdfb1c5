// The real Open WebUI 0.12.4's WebSocket (uvicorn) and an admin's frames behind the gateway, which
// reads them (gateway/enforcement/socketio-guard.ts). Open WebUI negotiates permessage-deflate when a
// client offers it; the gateway keeps an admin's socket uncompressed, so a frame with RSV1 set is
// one the protocol forbids there. A frame RFC 6455 forbids is refused by Open WebUI itself with
// 1002, and through the gateway with the same code, before it reaches Open WebUI, audited.
// Real Open WebUI, the real oidc-provider, real sockets.
import { expect } from 'chai';
import { browse, signIn, type Jar } from '../support/cookie-jar.js';
import { OPEN_WEBUI_VERSION, startRealWorld, type RealWorld } from '../support/open-webui.js';
import { clientFrame, rawWebSocket, type RawWebSocket } from '../support/websocket-wire.js';
import { eventually } from '../support/wait.js';

const OFFER = { 'Sec-WebSocket-Extensions': 'permessage-deflate; client_max_window_bits' };

describe(`the real Open WebUI ${OPEN_WEBUI_VERSION}: an admin\u2019s WebSocket frames, read by the gateway`, function () {
  this.timeout(120_000);
  let w: RealWorld;
  let admin: Jar;
  let alice: Jar;
  before(async function () {
    this.timeout(240_000);
    w = await startRealWorld({ flags: { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false } });
    admin = (await signIn(w.url, 'sysadmin')).jar;
    alice = (await signIn(w.url, 'alice')).jar;
    for (const jar of [admin, alice]) expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
  });
  after(async () => {
    await w?.close();
  });

  const viaGateway = (jar: Jar, headers: Record<string, string> = {}) =>
    rawWebSocket(w.url, { cookie: jar.header('/ws/socket.io/'), origin: w.url, ...headers });
  /** Engine.IO's open packet came: the socket is Open WebUI's. */
  const opened = async (s: RawWebSocket) => {
    expect(s.head).to.match(/^HTTP\/1\.1 101 /);
    expect(await eventually(() => s.received.some((m) => m.startsWith('0{'))), s.received.join(' | ')).to.equal(true);
  };

  it('Open WebUI negotiates permessage-deflate when offered; through the gateway an admin\u2019s socket is not compressed, a plain user\u2019s is', async () => {
    const straight = await rawWebSocket(w.owui.url, OFFER);
    expect(straight.head).to.match(/^HTTP\/1\.1 101 /);
    expect(straight.head).to.match(/^sec-websocket-extensions: permessage-deflate/im);
    straight.destroy();
    const mine = await viaGateway(admin, OFFER);
    expect(mine.head).to.not.match(/sec-websocket-extensions/i);
    await opened(mine); // read uncompressed
    mine.destroy();
    const theirs = await viaGateway(alice, OFFER);
    expect(theirs.head).to.match(/^sec-websocket-extensions: permessage-deflate/im);
    theirs.destroy();
  });

  const ping = Buffer.from('2');
  const forbidden: Array<[string, Buffer]> = [
    ['a reserved opcode (3)', clientFrame(3, ping)],
    ['an unmasked frame', clientFrame(1, ping, { masked: false })],
    ['RSV1 set, no extension negotiated', clientFrame(1, ping, { rsv: 4 })],
    ['a ping of 126 bytes', clientFrame(9, Buffer.alloc(126, 0x61))],
    ['a fragmented ping', clientFrame(9, ping, { fin: false })],
  ];
  for (const [what, bad] of forbidden) {
    it(`${what}: Open WebUI closes with 1002; through the gateway the admin\u2019s socket closes with 1002 too, audited`, async () => {
      const straight = await rawWebSocket(w.owui.url);
      await opened(straight);
      straight.send(bad);
      expect(await eventually(() => straight.state.close !== undefined || straight.state.ended)).to.equal(true);
      expect(straight.state.close, 'Open WebUI alone').to.equal(1002);
      straight.destroy();

      const before = w.obs.lines.length;
      const s = await viaGateway(admin);
      await opened(s);
      s.send(bad);
      expect(await eventually(() => s.state.ended)).to.equal(true);
      expect(s.state.close, 'through the gateway').to.equal(1002);
      const audit = w.obs.lines.slice(before).filter((l) => l.event === 'admin-socket-closed');
      expect(audit.map((l) => l.code)).to.deep.equal([1002]);
      s.destroy();
    });
  }
});
