// A WebSocket opening handshake is a GET (RFC 6455 4.1): an upgrade asked with any other method is
// refused by the gateway (405, Allow: GET) and never reaches Open WebUI, which would otherwise get a
// tunnel under a method nobody judged. Raw sockets, a realm bearer JWT, the stand-in of Open WebUI.
import { expect } from 'chai';
import { startWorld, CLIENT_ID, type World } from '../support/cookie-jar.js';
import { parseResponses, rawExchange } from '../support/raw-http.js';

describe('WebSocket upgrades are GET only', function () {
  this.timeout(20_000);
  let w: World;
  let port: number;
  let bearer: string;
  before(async () => {
    w = await startWorld();
    port = Number(new URL(w.url).port);
    bearer = await w.idp.accessTokenFor('alice', CLIENT_ID);
  });
  after(() => w?.close());

  const handshake = (method: string, extra = '') =>
    `${method} /ws/socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${bearer}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`;

  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'])
    it(`${method}: 405 with Allow: GET, the upstream never asked`, async () => {
      const mark = w.upstream.requests.length;
      const { text, closedByServer } = await rawExchange(port, handshake(method, method === 'HEAD' ? '' : 'Content-Length: 0\r\n'), 2_000);
      const answer = parseResponses(text, [method])[0];
      expect(answer?.status, text).to.equal(405);
      expect(answer?.headers.allow).to.equal('GET');
      expect(closedByServer).to.equal(true);
      expect(w.upstream.requests.slice(mark).filter((r) => r.upgrade || r.url.startsWith('/ws/'))).to.deep.equal([]);
    });

  it('GET: switched (101), as before', async () => {
    const { text } = await rawExchange(port, handshake('GET'), 1_000);
    expect(text.startsWith('HTTP/1.1 101 '), text.slice(0, 200)).to.equal(true);
  });
});
