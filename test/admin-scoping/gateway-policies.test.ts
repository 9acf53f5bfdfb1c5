// Spec area A over real sockets: the gateway in front of an Open WebUI stand-in that is set the
// way the upstream ships (every admin flag TRUE), so only the gateway stands between an admin
// and other tenants' content. Callers use upstream API keys (ALLOW_UPSTREAM_API_KEYS): the
// gateway learns who they are from the upstream itself. Sign-in tests cover sessions and JWTs.
import { expect } from 'chai';
import { startOpenWebUI, type OpenWebUIStandIn, type StandInFile } from '../../sandbox/open-webui/stand-in.js';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';
import { ADMIN_SCOPED, EXPORT_DISABLED } from '../../policies/admin-scoping.js';
import { seedChats, seedFile } from '../support/raw-http.js';
import { sleep } from '../support/wait.js';

const file = seedFile;

const users = [
  { id: 'u-admin', email: 'sysadmin@platform.test', name: 'Sys Admin', role: 'admin' as const, groups: [] },
  { id: 'u-alice', email: 'alice@acme.test', name: 'Alice', role: 'user' as const, groups: [] },
  { id: 'u-bob', email: 'bob@globex.test', name: 'Bob', role: 'user' as const, groups: [] },
];
const files = [
  file('f-admin-1', 'u-admin', 'admin-notes.txt', 10),
  file('f-alice-1', 'u-alice', 'acme-plan.txt', 20),
  file('f-admin-2', 'u-admin', 'admin-budget.txt', 30),
  file('f-alice-2', 'u-alice', 'acme-budget.txt', 40),
  file('f-bob-1', 'u-bob', 'globex-secret.txt', 50),
];
const chats = seedChats();

async function json(res: Response): Promise<any> {
  return JSON.parse(await res.text());
}

describe('gateway policies (spec area A) against the stand-in upstream', function () {
  let upstream: OpenWebUIStandIn;
  let adminKey: string;
  let aliceKey: string;

  before(async () => {
    upstream = await startOpenWebUI({ users, files, chats });
    adminKey = upstream.apiKeyFor('u-admin');
    aliceKey = upstream.apiKeyFor('u-alice');
  });
  after(() => upstream.close());

  const reached = (fragment: string) => upstream.requests.filter((r) => r.url.includes(fragment));

  for (const bypass of [false, true]) {
    for (const exportOn of [false, true]) {
      describe(`CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=${bypass}, CHATUI_ENABLE_ADMIN_EXPORT=${exportOn}`, () => {
        let gw: RunningGateway;
        before(async () => {
          gw = await startGateway(
            baseEnv(upstream.url, {
              CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: String(bypass),
              CHATUI_ENABLE_ADMIN_EXPORT: String(exportOn),
              ALLOW_UPSTREAM_API_KEYS: 'true',
            }),
          );
        });
        after(() => gw.close());
        const get = (path: string, key: string, init: RequestInit = {}) =>
          fetch(gw.url + path, { ...init, headers: { authorization: `Bearer ${key}`, 'accept-encoding': 'gzip, br', ...(init.headers as object) } });

        it(
          bypass ? 'A2: the admin file list is what the upstream answers' : 'A1: the admin file list holds only the admin\u2019s files, with a matching total',
          async () => {
            const res = await get('/api/v1/files/', adminKey);
            expect(res.status).to.equal(200);
            const body = await json(res);
            const owners = new Set(body.items.map((f: StandInFile) => f.user_id));
            if (bypass) {
              expect(body.items).to.have.length(5);
            } else {
              expect([...owners]).to.deep.equal(['u-admin']);
              expect(body.items.map((f: StandInFile) => f.id)).to.deep.equal(['f-admin-1', 'f-admin-2']);
              expect(body.total).to.equal(2);
              expect(res.headers.get('cache-control')).to.equal('private, no-store');
              expect(res.headers.get('etag')).to.equal(null);
              expect(res.headers.get('content-encoding')).to.equal(null);
            }
          },
        );

        it(
          bypass ? 'A2: search passes as the upstream answers' : 'A1: search returns only own matches, and 404 when only others\u2019 files match',
          async () => {
            const all = await get('/api/v1/files/search?filename=*budget*', adminKey);
            expect(all.status).to.equal(200);
            const ids = (await json(all)).map((f: StandInFile) => f.id);
            expect(ids).to.have.members(bypass ? ['f-admin-2', 'f-alice-2'] : ['f-admin-2']);
            const foreign = await get('/api/v1/files/search?filename=globex*', adminKey);
            expect(foreign.status).to.equal(bypass ? 200 : 404);
            if (!bypass) expect(await json(foreign)).to.have.property('detail');
            const none = await get('/api/v1/files/search?filename=nothing-matches*', adminKey);
            expect(none.status).to.equal(404);
          },
        );

        it(bypass ? 'A2: count is the upstream\u2019s' : 'A1: count agrees with what the admin can list', async () => {
          const res = await get('/api/v1/files/count', adminKey);
          expect(res.status).to.equal(200);
          expect(await json(res)).to.equal(bypass ? 5 : 2);
        });

        it('a plain user sees only their own files', async () => {
          const body = await json(await get('/api/v1/files/', aliceKey));
          expect(body.items.map((f: StandInFile) => f.user_id)).to.deep.equal(['u-alice', 'u-alice']);
          expect(body.total).to.equal(2);
        });

        it('HEAD is judged as GET', async () => {
          const res = await get('/api/v1/files/', adminKey, { method: 'HEAD' });
          expect(res.status).to.equal(200);
          expect(await res.text()).to.equal('');
          if (!bypass) expect(res.headers.get('cache-control')).to.equal('private, no-store');
        });

        it(
          exportOn ? 'A6: the export streams through for an admin' : 'A6: the export answers 401 for every caller and the upstream is never asked',
          async () => {
            const before = reached('/chats/all/db').length + reached('/utils/db/download').length;
            const admin = await get('/api/v1/chats/all/db', adminKey);
            const dump = await get('/api/v1/utils/db/download', adminKey);
            const user = await get('/api/v1/chats/all/db', aliceKey);
            if (exportOn) {
              expect(admin.status).to.equal(200);
              expect((await json(admin)).map((c: { user_id: string }) => c.user_id)).to.have.members(['u-admin', 'u-alice', 'u-bob']);
              expect(dump.status).to.equal(200);
              expect((await dump.arrayBuffer()).byteLength).to.be.greaterThan(16);
              expect(user.status).to.equal(401); // the upstream's own rule: admin only
            } else {
              for (const res of [admin, dump, user]) {
                expect(res.status).to.equal(401);
                expect(await json(res)).to.deep.equal({ detail: EXPORT_DISABLED });
              }
              expect(reached('/chats/all/db').length + reached('/utils/db/download').length).to.equal(before);
            }
          },
        );

        it('ENABLE_ADMIN_CHAT_ACCESS stays false: browsing another user\u2019s chats is 401, not forwarded', async () => {
          const before = reached('/chats/list/user/').length;
          const res = await get('/api/v1/chats/list/user/u-alice', adminKey);
          expect(res.status).to.equal(401);
          expect(reached('/chats/list/user/').length).to.equal(before);
        });

        it('A7: an admin can still read a file by id, and that is audited', async () => {
          const res = await get('/api/v1/files/f-bob-1/content', adminKey);
          expect(res.status).to.equal(200);
          expect(await res.text()).to.equal('text of globex-secret.txt');
          await sleep(100);
          const audit = gw.obs.lines.find((l) => l.event === 'admin-file-access' && l.fileId === 'f-bob-1');
          expect(audit, 'audit event').to.not.equal(undefined);
          expect(audit).to.include({ owner: 'u-bob', callerId: 'u-admin', operation: 'read' });
        });

        it('A7: reading one\u2019s own file is not audited; a user cannot read another\u2019s file (upstream 404)', async () => {
          const own = await get('/api/v1/files/f-admin-1', adminKey);
          expect(own.status).to.equal(200);
          const other = await get('/api/v1/files/f-bob-1', aliceKey);
          expect(other.status).to.equal(404);
          await sleep(100);
          expect(gw.obs.lines.some((l) => l.event === 'admin-file-access' && l.fileId === 'f-admin-1')).to.equal(false);
        });
      });
    }
  }

  describe('A7: deleting another user\u2019s file', () => {
    it('passes as the upstream answers and the audit records the owner before the record is gone', async () => {
      upstream.files.set('f-doomed', file('f-doomed', 'u-bob', 'doomed.txt', 5));
      const gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true' }));
      try {
        const res = await fetch(`${gw.url}/api/v1/files/f-doomed`, { method: 'DELETE', headers: { authorization: `Bearer ${adminKey}` } });
        expect(res.status).to.equal(200);
        expect(upstream.files.has('f-doomed')).to.equal(false);
        const audit = gw.obs.lines.find((l) => l.event === 'admin-file-access' && l.fileId === 'f-doomed');
        expect(audit).to.include({ owner: 'u-bob', operation: 'delete' });
      } finally {
        await gw.close();
      }
    });
  });

  for (const bypass of [false, true]) {
    describe(`A7 names reading and deleting by id, nothing else (CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=${bypass})`, () => {
      let gw: RunningGateway;
      before(async () => {
        gw = await startGateway(baseEnv(upstream.url, { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: String(bypass), ALLOW_UPSTREAM_API_KEYS: 'true' }));
      });
      after(() => gw.close());
      const send = (method: string, path: string, key: string, body?: unknown) =>
        fetch(gw.url + path, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      const forwarded = (method: string, path: string) => upstream.requests.filter((r) => r.method === method && r.url === path).length;

      it(
        bypass
          ? 'with the bypass on, rewriting and renaming another user\u2019s file are left to the upstream, audited'
          : 'rewriting and renaming another user\u2019s file are refused, never forwarded, audited; the admin\u2019s own file is theirs to change',
        async () => {
          upstream.files.set('f-bob-w', file('f-bob-w', 'u-bob', 'bob-writable.txt', 60));
          upstream.files.set('f-admin-w', file('f-admin-w', 'u-admin', 'admin-writable.txt', 61));
          try {
            for (const [path, body] of [
              ['/api/v1/files/f-bob-w/data/content/update', { content: 'rewritten by the admin' }],
              ['/api/v1/files/f-bob-w/rename', { filename: 'renamed-by-admin.txt' }],
            ] as const) {
              const before = forwarded('POST', path);
              const res = await send('POST', path, adminKey, body);
              if (bypass) {
                expect(res.status, path).to.equal(200);
                expect(forwarded('POST', path)).to.equal(before + 1);
                const audit = () => gw.obs.lines.find((l) => l.event === 'admin-file-access' && l.path === path);
                for (let i = 0; i < 40 && !audit(); i++) await sleep(25);
                expect(audit(), path).to.include({ owner: 'u-bob', callerId: 'u-admin', operation: 'write' });
              } else {
                expect(res.status, path).to.equal(403);
                expect(((await res.json()) as { detail: string }).detail).to.equal(ADMIN_SCOPED);
                expect(forwarded('POST', path), `${path} reached the upstream`).to.equal(before);
                const audit = gw.obs.lines.find((l) => l.event === 'admin-access-denied' && l.path === path);
                expect(audit, path).to.include({ callerId: 'u-admin', method: 'POST' });
                expect(String(audit!.rule)).to.match(/^A7/);
              }
            }
            const bob = upstream.files.get('f-bob-w')!;
            if (!bypass) expect([bob.filename, bob.data.content]).to.deep.equal(['bob-writable.txt', 'text of bob-writable.txt']);
            // the admin's own file
            const own = await send('POST', '/api/v1/files/f-admin-w/data/content/update', adminKey, { content: 'my own words' });
            expect(own.status).to.equal(200);
            expect((await send('POST', '/api/v1/files/f-admin-w/rename', adminKey, { filename: 'mine.txt' })).status).to.equal(200);
            expect([upstream.files.get('f-admin-w')!.filename, upstream.files.get('f-admin-w')!.data.content]).to.deep.equal(['mine.txt', 'my own words']);
            // a plain user's own file: the upstream's rule alone
            expect((await send('POST', '/api/v1/files/f-bob-w/rename', upstream.apiKeyFor('u-bob'), { filename: 'bob-renamed.txt' })).status).to.equal(200);
          } finally {
            upstream.files.delete('f-bob-w');
            upstream.files.delete('f-admin-w');
          }
        },
      );

      it(
        bypass
          ? 'with the bypass on, DELETE /api/v1/files/all is left to the upstream and audited'
          : 'DELETE /api/v1/files/all (every user\u2019s files) is refused and never forwarded; every file stays',
        async () => {
          const kept = new Map(upstream.files);
          try {
            const before = forwarded('DELETE', '/api/v1/files/all');
            const res = await send('DELETE', '/api/v1/files/all', adminKey);
            if (bypass) {
              expect(res.status).to.equal(200);
              expect(upstream.files.size).to.equal(0);
              expect(gw.obs.lines.find((l) => l.event === 'admin-file-access' && l.fileId === '*')).to.include({ operation: 'delete', owner: '*' });
            } else {
              expect(res.status).to.equal(403);
              expect(forwarded('DELETE', '/api/v1/files/all')).to.equal(before);
              expect([...upstream.files.keys()]).to.deep.equal([...kept.keys()]);
              expect(gw.obs.lines.find((l) => l.event === 'policy-denied' && l.path === '/api/v1/files/all')).to.include({ method: 'DELETE' });
            }
          } finally {
            for (const [id, f] of kept) upstream.files.set(id, f);
          }
        },
      );

      it('reading and deleting another user\u2019s file by id still pass as the upstream answers (rule A7), audited', async () => {
        upstream.files.set('f-bob-d', file('f-bob-d', 'u-bob', 'bob-doomed.txt', 62));
        expect((await send('GET', '/api/v1/files/f-bob-d/data/content', adminKey)).status).to.equal(200);
        const res = await send('DELETE', '/api/v1/files/f-bob-d', adminKey);
        expect(res.status).to.equal(200);
        expect(upstream.files.has('f-bob-d')).to.equal(false);
        expect(gw.obs.lines.find((l) => l.event === 'admin-file-access' && l.fileId === 'f-bob-d' && l.operation === 'delete')).to.include({ owner: 'u-bob' });
      });
    });
  }

  describe('policy drift', () => {
    it('logs and counts when the upstream returns other users\u2019 files with the bypass off', async () => {
      const gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true' }));
      try {
        await fetch(`${gw.url}/api/v1/files/`, { headers: { authorization: `Bearer ${adminKey}` } });
        expect(gw.obs.lines.some((l) => l.level >= 50 && /policy drift/.test(String(l.msg)))).to.equal(true);
        const metrics = await gw.gateway.obs.metrics.registry.getSingleMetricAsString('gateway_policy_drift_total');
        expect(metrics).to.match(/gateway_policy_drift_total\{kind="files-list"\} [1-9]/);
      } finally {
        await gw.close();
      }
    });

    it('no drift is reported when the upstream is set as the platform expects', async () => {
      upstream.flags.bypassAdminAccessControl = false;
      const gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true' }));
      try {
        const body = await json(await fetch(`${gw.url}/api/v1/files/`, { headers: { authorization: `Bearer ${adminKey}` } }));
        expect(body.total).to.equal(2);
        expect(gw.obs.lines.some((l) => /policy drift/.test(String(l.msg)))).to.equal(false);
      } finally {
        upstream.flags.bypassAdminAccessControl = true;
        await gw.close();
      }
    });
  });

  describe('rewritten answers', () => {
    let gw: RunningGateway;
    before(async () => {
      gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true' }));
    });
    after(() => gw.close());

    it('never forward conditional or range headers, and ask the upstream for an uncompressed body', async () => {
      const mark = upstream.requests.length;
      const res = await fetch(`${gw.url}/api/v1/files/`, {
        headers: {
          authorization: `Bearer ${adminKey}`,
          'if-none-match': '"anything"',
          'if-modified-since': new Date().toUTCString(),
          range: 'bytes=0-10',
          'accept-encoding': 'gzip',
        },
      });
      expect(res.status).to.equal(200);
      const sent = upstream.requests.slice(mark).filter((r) => r.url.startsWith('/api/v1/files/'));
      expect(sent.length).to.be.greaterThan(0);
      for (const r of sent) {
        expect(r.headers).to.not.have.any.keys('if-none-match', 'if-modified-since', 'range');
        expect(r.headers['accept-encoding']).to.equal('identity');
      }
    });

    it('pages through the admin\u2019s own files when the upstream is not scoped', async () => {
      for (let i = 0; i < 60; i++) upstream.files.set(`f-bulk-${i}`, file(`f-bulk-${i}`, i % 2 ? 'u-admin' : 'u-bob', `bulk-${i}.txt`, 100 + i));
      try {
        const p1 = await json(await fetch(`${gw.url}/api/v1/files/?page=1`, { headers: { authorization: `Bearer ${adminKey}` } }));
        const p2 = await json(await fetch(`${gw.url}/api/v1/files/?page=2&content=false`, { headers: { authorization: `Bearer ${adminKey}` } }));
        expect(p1.total).to.equal(32);
        expect(p1.items).to.have.length(32);
        expect(p2.items).to.have.length(0);
        const count = await json(await fetch(`${gw.url}/api/v1/files/count`, { headers: { authorization: `Bearer ${adminKey}` } }));
        expect(count).to.equal(32);
        for (const f of p1.items) expect(f.user_id).to.equal('u-admin');
      } finally {
        for (let i = 0; i < 60; i++) upstream.files.delete(`f-bulk-${i}`);
      }
    });
  });
});
