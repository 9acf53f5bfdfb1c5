// The rewritten file list and search, filtered as the upstream's bytes arrive, through
// the real gateway: an answer split into many small writes is filtered as a whole one was, and a
// body that turns bad after a good start, or is cut, fails closed: a 502, never a part of it.
import { expect } from 'chai';
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';
import { sleep } from '../support/wait.js';

type Mode = 'split' | 'bad-tail' | 'cut' | 'split-search';

describe('rewritten file views: streamed filter through the gateway', function () {
  this.timeout(20_000);
  let server: http.Server;
  let gw: RunningGateway;
  let mode: Mode = 'split';
  const own = Array.from({ length: 30 }, (_, i) => ({
    id: `own-${i}`,
    user_id: 'u-admin',
    filename: `own-${i}.txt`,
    meta: { name: `own "${i}" \u00e9`, size: i },
  }));
  const foreign = { id: 'foreign-1', user_id: 'u-bob', filename: 'globex-secret.txt' };

  /** Writes `text` in pieces of `size` bytes, a few ms apart, so the gateway reads many chunks. */
  async function dribble(res: http.ServerResponse, text: string, size: number): Promise<void> {
    const bytes = Buffer.from(text);
    for (let i = 0; i < bytes.length; i += size) {
      res.write(bytes.subarray(i, i + size));
      await sleep(1);
    }
  }

  before(async () => {
    server = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/api/v1/auths/') return res.end(JSON.stringify({ id: 'u-admin', email: 'admin@x', name: 'A', role: 'admin' }));
      if (req.url === '/api/v1/files/user/count') return res.end(JSON.stringify(own.length));
      if (req.url?.startsWith('/api/v1/files/search') || req.url?.startsWith('/api/v1/files/user/search')) {
        void dribble(res, JSON.stringify(own), 7).then(() => res.end());
        return;
      }
      if (req.url?.startsWith('/api/v1/files/')) {
        if (mode === 'split') {
          void dribble(res, JSON.stringify({ items: own, total: own.length }), 5).then(() => res.end());
        } else if (mode === 'bad-tail') {
          // a good start, a foreign record, then a body that is not JSON
          void dribble(res, `{"items":[${JSON.stringify(own[0])},${JSON.stringify(foreign)}],"total":2} trailing`, 16).then(() => res.end());
        } else if (mode === 'cut') {
          res.setHeader('content-length', '10000');
          void dribble(res, `{"items":[${JSON.stringify(own[0])},${JSON.stringify(foreign)}`, 16).then(() => res.destroy());
        }
        return;
      }
      res.statusCode = 404;
      res.end('{"detail":"Not Found"}');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    gw = await startGateway(baseEnv(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { ALLOW_UPSTREAM_API_KEYS: 'true', LOG_LEVEL: 'silent' }));
  });
  after(async () => {
    await gw?.close();
    server?.close();
  });

  const get = (path: string) => fetch(`${gw.url}${path}`, { headers: { authorization: 'Bearer sk-0123456789' } });

  it('a list written in 5-byte pieces: the caller\u2019s files, as the upstream wrote them', async () => {
    mode = 'split';
    const res = await get('/api/v1/files/?page=1');
    expect(res.status).to.equal(200);
    expect(res.headers.get('cache-control')).to.equal('private, no-store');
    expect(await res.json()).to.deep.equal({ items: own, total: own.length });
  });

  it('a search answer written in 7-byte pieces: the same array', async () => {
    const res = await get('/api/v1/files/search?filename=*');
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal(own);
  });

  it('a body that turns bad after a foreign record: 502, nothing of the page', async () => {
    mode = 'bad-tail';
    const res = await get('/api/v1/files/?page=1');
    expect(res.status).to.equal(502);
    const text = await res.text();
    expect(text).to.not.include('globex');
    expect(text).to.not.include('own-0');
  });

  it('a body cut before its end: 502, nothing of the page', async () => {
    mode = 'cut';
    const res = await get('/api/v1/files/?page=1');
    expect(res.status).to.equal(502);
    const text = await res.text();
    expect(text).to.not.include('globex');
    expect(text).to.not.include('own-0');
  });
});
