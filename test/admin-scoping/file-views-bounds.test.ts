// The rebuilt file views (rule A1 when the upstream returns other users' files) cost what the
// caller's own files cost: the pages, counts and searches of an admin among thousands of other
// users' files come from the owner-scoped routes, in a few upstream calls, with no page cap; and
// they never read an out-of-range skip/limit as a slice.
import { expect } from 'chai';
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';
import { seedFile, seedUsers } from '../support/raw-http.js';

describe('rebuilt file views: the caller\u2019s own files at any volume, in calls that grow with theirs only', function () {
  this.timeout(30_000);
  let upstream: OpenWebUIStandIn;
  let gw: RunningGateway;
  let adminKey: string;
  // 6,000 files of another user, 1,100 of the admin's, some changed after their upload (the list's
  // order is not the upload order)
  const files = [
    ...Array.from({ length: 6_000 }, (_, i) => seedFile(`f-bob-${String(i).padStart(5, '0')}`, 'u-bob', `bob-${i}.txt`, i)),
    ...Array.from({ length: 1_100 }, (_, i) => {
      const f = seedFile(`f-admin-${String(i).padStart(5, '0')}`, 'u-admin', `admin-${i}.txt`, i * 3);
      if (i % 7 === 0) f.updated_at += 5_000 + i;
      return f;
    }),
  ];
  const own = files.filter((f) => f.user_id === 'u-admin');
  const listOrder = [...own].sort((a, b) => b.updated_at - a.updated_at || (a.id < b.id ? 1 : -1)).map((f) => f.id);
  const fileCalls = () => upstream.requests.filter((r) => r.url.startsWith('/api/v1/files/')).length;

  before(async () => {
    upstream = await startOpenWebUI({ users: seedUsers, files, bypassAdminAccessControl: true });
    adminKey = upstream.apiKeyFor('u-admin');
    gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true', LOG_LEVEL: 'silent' }));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });
  const get = (path: string) => fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${adminKey}` } });

  it('every page of the list: the admin\u2019s files in the list\u2019s order, the total theirs, past the 40 pages the gateway once walked', async () => {
    const seen: string[] = [];
    for (let page = 1; page <= 23; page++) {
      const before = fileCalls();
      const res = await get(`/api/v1/files/?page=${page}&content=false`);
      expect(res.status).to.equal(200);
      const body = (await res.json()) as { items: Array<{ id: string; user_id: string; data: Record<string, unknown> }>; total: number };
      expect(body.total).to.equal(own.length);
      expect(body.items.every((f) => f.user_id === 'u-admin' && !('content' in f.data))).to.equal(true);
      seen.push(...body.items.map((f) => f.id));
      // two batches of keys (1,000 a call), the page's records, and (once) the list asked first
      expect(fileCalls() - before, `upstream calls for page ${page}`).to.be.at.most(page === 1 ? 5 : 4);
    }
    expect(seen).to.deep.equal(listOrder);
  });

  it('a page with the text, as asked: the same files, with their content', async () => {
    const res = await get('/api/v1/files/?page=2');
    const body = (await res.json()) as { items: Array<{ id: string; data: { content?: string } }> };
    expect(body.items.map((f) => f.id)).to.deep.equal(listOrder.slice(50, 100));
    expect(body.items.every((f) => typeof f.data.content === 'string')).to.equal(true);
  });

  it('a page past the end: no files, the total theirs', async () => {
    expect(await (await get('/api/v1/files/?page=40')).json()).to.deep.equal({ items: [], total: own.length });
  });

  it('the count: theirs, in one call', async () => {
    const before = fileCalls();
    const res = await get('/api/v1/files/count');
    expect(await res.json()).to.equal(own.length);
    expect(fileCalls() - before).to.equal(1);
  });

  it('the search: theirs only, paged as asked, in one call', async () => {
    const before = fileCalls();
    const res = await get('/api/v1/files/search?filename=*-10*&skip=2&limit=5');
    const hits = (await res.json()) as Array<{ user_id: string; filename: string }>;
    expect(fileCalls() - before).to.equal(1);
    const want = own
      .filter((f) => /^admin-10/.test(f.filename))
      .sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? 1 : -1))
      .slice(2, 7)
      .map((f) => f.filename);
    expect(hits.map((f) => f.filename)).to.deep.equal(want);
    expect((await get('/api/v1/files/search?filename=bob-*')).status).to.equal(404);
  });
});

describe('rebuilt file search behind 0.11.4: skip and limit the upstream would refuse are refused, never sliced from the end', function () {
  this.timeout(20_000);
  let server: http.Server;
  let gw: RunningGateway;
  const files = [
    { id: 'own-1', user_id: 'u-admin', filename: 'own-1.txt' },
    { id: 'foreign-1', user_id: 'u-bob', filename: 'globex-secret.txt' },
    { id: 'own-2', user_id: 'u-admin', filename: 'own-2.txt' },
  ];

  before(async () => {
    // An upstream that answers whatever skip/limit it is sent (no validation), with a foreign file:
    // a release without the caller's own search (0.11.4), whose all-users search is read instead.
    server = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/api/version') return res.end(JSON.stringify({ version: '0.11.4' }));
      if (req.url === '/api/v1/auths/') return res.end(JSON.stringify({ id: 'u-admin', email: 'admin@x', name: 'A', role: 'admin' }));
      if (req.url?.startsWith('/api/v1/files/search')) return res.end(JSON.stringify(files));
      res.statusCode = 404;
      res.end('{"detail":"Not Found"}');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    gw = await startGateway(baseEnv(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { ALLOW_UPSTREAM_API_KEYS: 'true', LOG_LEVEL: 'silent' }));
    // the release is read at every readiness probe
    await fetch(`${gw.url}/readyz`);
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

describe('a rebuilt file page while the caller keeps changing their files: their last reading, never a 502', function () {
  this.timeout(30_000);
  let upstream: OpenWebUIStandIn;
  let gw: RunningGateway;
  const files = [
    ...Array.from({ length: 300 }, (_, i) => seedFile(`f-bob-${String(i).padStart(4, '0')}`, 'u-bob', `bob-${i}.txt`, i)),
    ...Array.from({ length: 120 }, (_, i) => seedFile(`f-admin-${String(i).padStart(4, '0')}`, 'u-admin', `admin-${i}.txt`, i * 2)),
  ];

  before(async () => {
    upstream = await startOpenWebUI({ users: seedUsers, files, bypassAdminAccessControl: true });
    gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true', LOG_LEVEL: 'silent' }));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('one of their newest files deleted at every read: the page holds their own files only, the total theirs as last read', async () => {
    // every read of the files by the stand-in first deletes the admin's newest file: between the
    // gateway's reading of the keys and of the page, a file on the page is gone, every time
    const store = upstream.files;
    const values = store.values.bind(store);
    let deleted = 0;
    store.values = () => {
      const newest = [...values()].filter((f) => f.user_id === 'u-admin').sort((a, b) => b.updated_at - a.updated_at)[0];
      if (newest) (store.delete(newest.id), deleted++);
      return values();
    };
    try {
      const res = await fetch(`${gw.url}/api/v1/files/?page=1&content=false`, { headers: { authorization: `Bearer ${upstream.apiKeyFor('u-admin')}` } });
      expect(res.status).to.equal(200);
      const body = (await res.json()) as { items: Array<{ id: string; user_id: string }>; total: number };
      expect(deleted, 'files deleted while the page was read').to.be.at.least(4);
      expect(body.items.length).to.be.within(40, 50);
      expect(body.items.every((f) => f.user_id === 'u-admin')).to.equal(true);
      expect(body.total).to.be.within(120 - deleted, 120);
    } finally {
      store.values = values;
    }
  });
});
