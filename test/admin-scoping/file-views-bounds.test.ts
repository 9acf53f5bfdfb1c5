// The rebuilt file views (rule A1 when the upstream returns other users' files) cost a bounded
// number of upstream calls per request, and never read an out-of-range skip/limit as a slice.
import { expect } from 'chai';
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui.js';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';
import { seedFile, seedUsers } from '../support/raw-http.js';
import { MAX_WALK_PAGES } from '../../gateway/upstream/file-views.js';

describe('rebuilt file views: bounded work per request', function () {
  this.timeout(30_000);
  let upstream: OpenWebUIStandIn;
  let gw: RunningGateway;
  let adminKey: string;

  before(async () => {
    // More files than the bound lets the gateway walk: 42 upstream pages of 50.
    const files = Array.from({ length: 2_100 }, (_, i) => seedFile(`f-${i}`, i % 2 ? 'u-bob' : 'u-admin', `file-${i}.txt`, i));
    upstream = await startOpenWebUI({ users: seedUsers, files, bypassAdminAccessControl: true });
    adminKey = upstream.apiKeyFor('u-admin');
    gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true', LOG_LEVEL: 'silent' }));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it(`a list past ${MAX_WALK_PAGES} upstream pages is a 502 after at most ${MAX_WALK_PAGES} page fetches, not 2,000`, async () => {
    const before = upstream.requests.filter((r) => r.url.startsWith('/api/v1/files/')).length;
    const res = await fetch(`${gw.url}/api/v1/files/?page=1`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect(res.status).to.equal(502);
    expect(await res.text()).to.not.include('u-bob');
    const calls = upstream.requests.filter((r) => r.url.startsWith('/api/v1/files/')).length - before;
    expect(calls, 'upstream calls for one request').to.be.at.most(MAX_WALK_PAGES + 1);
  });

  it('the count takes the same bound', async () => {
    const res = await fetch(`${gw.url}/api/v1/files/count`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect(res.status).to.equal(502);
  });
});

describe('rebuilt file search: skip and limit the upstream would refuse are refused, never sliced from the end', function () {
  this.timeout(20_000);
  let server: http.Server;
  let gw: RunningGateway;
  const files = [
    { id: 'own-1', user_id: 'u-admin', filename: 'own-1.txt' },
    { id: 'foreign-1', user_id: 'u-bob', filename: 'globex-secret.txt' },
    { id: 'own-2', user_id: 'u-admin', filename: 'own-2.txt' },
  ];

  before(async () => {
    // An upstream that answers whatever skip/limit it is sent (no validation), with a foreign file.
    server = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/api/v1/auths/') return res.end(JSON.stringify({ id: 'u-admin', email: 'admin@x', name: 'A', role: 'admin' }));
      if (req.url?.startsWith('/api/v1/files/search')) return res.end(JSON.stringify(files));
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

  const search = (q: string) => fetch(`${gw.url}/api/v1/files/search?filename=*${q}`, { headers: { authorization: 'Bearer sk-0123456789' } });

  for (const q of ['&skip=-1', '&skip=-100&limit=1', '&limit=0', '&limit=-1', '&limit=100000', '&skip=abc', '&skip=1e3', '&skip=99999999999999999999']) {
    it(`${q.slice(1)}: 422`, async () => {
      const res = await search(q);
      expect(res.status).to.equal(422);
      expect(await res.text()).to.not.include('own-2');
    });
  }

  it('valid values slice the caller\u2019s own matches', async () => {
    const res = await search('&skip=1&limit=1');
    expect(res.status).to.equal(200);
    expect((await res.json()).map((f: { id: string }) => f.id)).to.deep.equal(['own-2']);
  });
});
