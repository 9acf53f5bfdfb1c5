import http from 'node:http';
import zlib from 'node:zlib';
import { expect } from 'chai';
import WebSocket from 'ws';
import { startOpenWebUI, type OpenWebUIStandIn, type StandInChat, type StandInFile, type StandInUser } from '../../sandbox/open-webui/stand-in.js';
import { ACCESS_PROHIBITED, INVALID_TRUSTED_HEADER } from '../../sandbox/open-webui/http.js';

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  /** body after undoing Content-Encoding */
  body: Buffer;
  text(): string;
  json(): any;
}

/** One request over a fresh connection (no keep-alive, no automatic decompression). */
function call(
  s: OpenWebUIStandIn,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: string | Buffer; agent?: http.Agent } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: s.port, method, path, headers: opts.headers ?? {}, agent: opts.agent ?? false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const raw = Buffer.concat(parts);
        const enc = res.headers['content-encoding'];
        const body = enc === 'gzip' ? zlib.gunzipSync(raw) : enc === 'br' ? zlib.brotliDecompressSync(raw) : raw;
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          raw,
          body,
          text: () => body.toString('utf8'),
          json: () => JSON.parse(body.toString('utf8')),
        });
      });
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const bearer = (t: string): Record<string, string> => ({ authorization: `Bearer ${t}` });

const USERS: StandInUser[] = [
  { id: 'u-admin', email: 'admin@example.com', name: 'Admin', role: 'admin', groups: [] },
  { id: 'u-alice', email: 'alice@example.com', name: 'Alice', role: 'user', groups: ['team'] },
  { id: 'u-bob', email: 'bob@example.com', name: 'Bob', role: 'user', groups: [] },
  { id: 'u-carol', email: 'carol@example.com', name: 'Carol', role: 'user', groups: ['other'] },
  { id: 'u-pending', email: 'pending@example.com', name: 'Pending', role: 'pending', groups: [] },
];

function file(id: string, owner: string, filename: string, updated: number, extra: Partial<StandInFile> = {}): StandInFile {
  const content = `content of ${filename}`;
  return {
    id,
    user_id: owner,
    hash: null,
    filename,
    data: { content },
    meta: { name: filename, content_type: 'text/plain', size: content.length },
    created_at: updated,
    updated_at: updated,
    ...extra,
  };
}

const FILES: StandInFile[] = [
  file('f-admin', 'u-admin', 'admin-notes.txt', 100),
  file('f-alice-1', 'u-alice', 'report.pdf', 200),
  file('f-alice-2', 'u-alice', 'notes.md', 300),
  file('f-bob-1', 'u-bob', 'bob-secret.txt', 150),
  file('f-bob-team', 'u-bob', 'team-plan.txt', 250, {
    access_grants: [{ principal_type: 'group', principal_id: 'team', permission: 'read' }],
  }),
  file('f-bob-any', 'u-bob', 'public.txt', 260, {
    access_grants: [{ principal_type: 'user', principal_id: '*', permission: 'read' }],
  }),
  file('f-bob-write', 'u-bob', 'shared-edit.txt', 270, {
    access_grants: [{ principal_type: 'user', principal_id: 'u-carol', permission: 'write' }],
  }),
];

function chat(id: string, owner: string): StandInChat {
  return {
    id,
    user_id: owner,
    title: `chat ${id}`,
    chat: { messages: [{ role: 'user', content: `secret of ${owner}` }] },
    created_at: 1,
    updated_at: 2,
    share_id: null,
    archived: false,
    pinned: false,
    meta: {},
    folder_id: null,
  };
}

const CHATS = [chat('c-alice', 'u-alice'), chat('c-bob', 'u-bob'), chat('c-admin', 'u-admin')];

describe('Open WebUI stand-in', function () {
  this.timeout(10_000);
  let s: OpenWebUIStandIn;
  const tok: Record<string, string> = {};

  beforeEach(async () => {
    s = await startOpenWebUI({ users: USERS, files: FILES, chats: CHATS, groups: ['team', 'other', 'ops'] });
    for (const u of USERS) tok[u.id] = await s.tokenFor(u.id);
  });
  afterEach(async () => {
    await s.close();
  });

  describe('authentication', () => {
    it('401 without a token, or with one that is not a JWT of its secret or a known key, in get_current_user\u2019s words', async () => {
      for (const [headers, detail] of [
        [{}, 'Not authenticated'],
        [bearer('garbage'), '401 Unauthorized'],
        [{ cookie: 'token=nope' }, '401 Unauthorized'],
        [bearer('sk-0000'), 'Your session has expired or the token is invalid. Please sign in again.'],
      ] as const) {
        const r = await call(s, 'GET', '/api/v1/files/', { headers });
        expect(r.status).to.equal(401);
        expect(r.json()).to.deep.equal({ detail });
      }
    });

    it('revoked sessions (a new session_stamp): every older token 401 Invalid token, a new one opens the account', async () => {
      s.revokeSessions('u-alice');
      let r = await call(s, 'GET', '/api/v1/auths/', { headers: bearer(tok['u-alice']!) });
      expect([r.status, r.json()]).to.deep.equal([401, { detail: 'Invalid token' }]);
      expect((await call(s, 'GET', '/api/v1/auths/', { headers: bearer(await s.tokenFor('u-alice')) })).status).to.equal(200);
      // an admin setting another user's password revokes theirs; so does "revoke sessions"
      const admin = { ...bearer(tok['u-admin']!), 'content-type': 'application/json' };
      r = await call(s, 'POST', '/api/v1/users/u-bob/update', {
        headers: admin,
        body: JSON.stringify({ name: 'Bob', email: 'bob@example.com', password: 'Taken-0ver!' }),
      });
      expect(r.status).to.equal(200);
      expect((await call(s, 'GET', '/api/v1/auths/', { headers: bearer(tok['u-bob']!) })).json()).to.deep.equal({ detail: 'Invalid token' });
      r = await call(s, 'POST', '/api/v1/users/u-carol/sessions/revoke', { headers: admin });
      expect([r.status, r.json()]).to.deep.equal([200, true]);
      expect((await call(s, 'GET', '/api/v1/auths/', { headers: bearer(tok['u-carol']!) })).status).to.equal(401);
      expect((await call(s, 'POST', '/api/v1/users/nobody/sessions/revoke', { headers: admin })).status).to.equal(404);
      // the first user's sessions by that user only; a plain user may revoke nobody's
      r = await call(s, 'POST', '/api/v1/users/u-admin/sessions/revoke', { headers: bearer(await s.tokenFor('u-alice')) });
      expect(r.status).to.equal(401);
      // the account gone: its token no longer opens anything
      s.users.delete('u-pending');
      expect((await call(s, 'GET', '/api/v1/auths/', { headers: bearer(tok['u-pending']!) })).json()).to.deep.equal({
        detail: 'Invalid authentication request.',
      });
    });

    it('accepts a bearer JWT, the token cookie, an sk- key as bearer and as x-api-key', async () => {
      const key = s.apiKeyFor('u-alice');
      expect(key).to.match(/^sk-[0-9a-f]+$/);
      for (const headers of [bearer(tok['u-alice']!), { cookie: `a=b; token=${tok['u-alice']}` }, bearer(key), { 'x-api-key': key }]) {
        const r = await call(s, 'GET', '/api/v1/auths/', { headers });
        expect(r.status).to.equal(200);
        expect(r.json()).to.include({ id: 'u-alice', email: 'alice@example.com', role: 'user' });
      }
    });

    it('a JWT signed with another secret is refused', async () => {
      const other = await startOpenWebUI({ users: USERS, secretKey: 'another-secret' });
      try {
        const r = await call(s, 'GET', '/api/v1/auths/', { headers: bearer(await other.tokenFor('u-alice')) });
        expect(r.status).to.equal(401);
      } finally {
        await other.close();
      }
    });

    it('GET /api/v1/auths/ returns the caller and re-sets the token cookie', async () => {
      const r = await call(s, 'GET', '/api/v1/auths/', { headers: bearer(tok['u-admin']!) });
      expect(r.json()).to.include.keys('id', 'email', 'name', 'role', 'profile_image_url', 'permissions');
      expect(String(r.headers['set-cookie'])).to.match(new RegExp(`^token=${tok['u-admin']};.*HttpOnly`));
    });

    it('pending users may read /auths/ but not the files API', async () => {
      expect((await call(s, 'GET', '/api/v1/auths/', { headers: bearer(tok['u-pending']!) })).status).to.equal(200);
      expect((await call(s, 'GET', '/api/v1/files/', { headers: bearer(tok['u-pending']!) })).status).to.equal(401);
    });
  });

  describe('trusted-header sign-in', () => {
    const signin = (headers: Record<string, string>, body = '{"email":"","password":""}'): Promise<Reply> =>
      call(s, 'POST', '/api/v1/auths/signin', { headers: { 'content-type': 'application/json', ...headers }, body });

    it('creates an unknown user on the spot, with name header and role user', async () => {
      const r = await signin({ 'X-Forwarded-Email': 'New.Person@Example.com', 'X-Forwarded-Name': 'New Person' });
      expect(r.status).to.equal(200);
      const b = r.json();
      expect(b).to.include({ token_type: 'Bearer', email: 'new.person@example.com', name: 'New Person', role: 'user' });
      expect(b.expires_at).to.be.a('number');
      expect(String(r.headers['set-cookie'])).to.match(/^token=[^;]+;/);
      expect(s.users.get(b.id)).to.include({ email: 'new.person@example.com' });
      const me = await call(s, 'GET', '/api/v1/auths/', { headers: bearer(b.token) });
      expect(me.json().id).to.equal(b.id);
    });

    it('role header overwrites the stored role (valid values only); groups header syncs existing groups', async () => {
      let r = await signin({ 'X-Forwarded-Email': 'alice@example.com', 'X-Forwarded-Role': 'admin', 'X-Forwarded-Groups': 'ops, nonexistent,team' });
      expect(r.json()).to.include({ id: 'u-alice', role: 'admin' });
      expect(s.users.get('u-alice')!.groups).to.have.members(['ops', 'team']);
      r = await signin({ 'X-Forwarded-Email': 'alice@example.com', 'X-Forwarded-Role': 'superuser', 'X-Forwarded-Groups': 'other' });
      expect(r.json().role).to.equal('admin');
      expect(s.users.get('u-alice')!.groups).to.deep.equal(['other']);
      r = await signin({ 'X-Forwarded-Email': 'alice@example.com', 'X-Forwarded-Role': 'user' });
      expect(r.json().role).to.equal('user');
      expect(s.users.get('u-alice')!.groups).to.deep.equal(['other']); // no groups header: unchanged
    });

    it('the body must still parse (422), and without the header sign-in is refused (400)', async () => {
      let r = await signin({ 'X-Forwarded-Email': 'alice@example.com' }, 'not json');
      expect(r.status).to.equal(422);
      r = await signin({ 'X-Forwarded-Email': 'alice@example.com' }, '{"email":"x"}');
      expect(r.status).to.equal(422);
      r = await signin({}, '{"email":"alice@example.com","password":"pw"}');
      expect(r.status).to.equal(400);
      expect(r.json().detail).to.equal(INVALID_TRUSTED_HEADER);
    });

    it('401 User mismatch when the email header names someone else than the token', async () => {
      for (const cred of [bearer(tok['u-alice']!), { 'x-api-key': s.apiKeyFor('u-alice') }]) {
        let r = await call(s, 'GET', '/api/v1/files/', { headers: { ...cred, 'X-Forwarded-Email': 'bob@example.com' } });
        expect(r.status).to.equal(401);
        expect(r.json()).to.deep.equal({ detail: 'User mismatch. Please sign in again.' });
        r = await call(s, 'GET', '/api/v1/files/', { headers: { ...cred, 'X-Forwarded-Email': 'ALICE@example.com' } });
        expect(r.status).to.equal(200);
      }
    });

    it('is off when no email header is configured, and /api/config says so', async () => {
      const off = await startOpenWebUI({ users: USERS, trustedHeaders: {} });
      try {
        const r = await call(off, 'POST', '/api/v1/auths/signin', {
          headers: { 'content-type': 'application/json', 'X-Forwarded-Email': 'alice@example.com' },
          body: '{"email":"","password":""}',
        });
        expect(r.status).to.equal(400);
        expect((await call(off, 'GET', '/api/config')).json().features.auth_trusted_header).to.equal(false);
        expect((await call(s, 'GET', '/api/config')).json().features.auth_trusted_header).to.equal(true);
      } finally {
        await off.close();
      }
    });
  });

  describe('file list, search and count scoping', () => {
    const ids = (items: Array<{ id: string }>): string[] => items.map((f) => f.id);

    it('bypass on: admin sees all files, a user their own; newest first', async () => {
      const admin = (await call(s, 'GET', '/api/v1/files/', { headers: bearer(tok['u-admin']!) })).json();
      expect(admin.total).to.equal(FILES.length);
      expect(ids(admin.items)).to.deep.equal(['f-alice-2', 'f-bob-write', 'f-bob-any', 'f-bob-team', 'f-alice-1', 'f-bob-1', 'f-admin']);
      const alice = (await call(s, 'GET', '/api/v1/files/', { headers: bearer(tok['u-alice']!) })).json();
      expect(alice).to.deep.include({ total: 2 });
      expect(ids(alice.items)).to.deep.equal(['f-alice-2', 'f-alice-1']);
      expect((await call(s, 'GET', '/api/v1/files/count', { headers: bearer(tok['u-admin']!) })).text()).to.equal('7');
      expect((await call(s, 'GET', '/api/v1/files/count', { headers: bearer(tok['u-alice']!) })).text()).to.equal('2');
      const search = await call(s, 'GET', '/api/v1/files/search?filename=*.txt', { headers: bearer(tok['u-admin']!) });
      expect(ids(search.json())).to.have.members(['f-admin', 'f-bob-1', 'f-bob-team', 'f-bob-any', 'f-bob-write']);
    });

    it('bypass off: the admin sees only their own', async () => {
      s.flags.bypassAdminAccessControl = false;
      const admin = (await call(s, 'GET', '/api/v1/files/', { headers: bearer(tok['u-admin']!) })).json();
      expect(admin.total).to.equal(1);
      expect(ids(admin.items)).to.deep.equal(['f-admin']);
      expect((await call(s, 'GET', '/api/v1/files/count', { headers: bearer(tok['u-admin']!) })).json()).to.equal(1);
      const search = await call(s, 'GET', '/api/v1/files/search?filename=*', { headers: bearer(tok['u-admin']!) });
      expect(ids(search.json())).to.deep.equal(['f-admin']);
      const bob = (await call(s, 'GET', '/api/v1/files/', { headers: bearer(tok['u-bob']!) })).json();
      expect(bob.total).to.equal(4);
    });

    it('search: glob with * and ?, 404 when nothing matches, 422 without filename, skip/limit', async () => {
      const h = { headers: bearer(tok['u-alice']!) };
      expect(ids((await call(s, 'GET', '/api/v1/files/search?filename=REPORT.p?f', h)).json())).to.deep.equal(['f-alice-1']);
      const none = await call(s, 'GET', '/api/v1/files/search?filename=bob*', h);
      expect(none.status).to.equal(404);
      expect(none.json().detail).to.equal('No files found matching the pattern.');
      expect((await call(s, 'GET', '/api/v1/files/search', h)).status).to.equal(422);
      expect((await call(s, 'GET', '/api/v1/files/search?filename=*&limit=1001', h)).status).to.equal(422);
      expect(ids((await call(s, 'GET', '/api/v1/files/search?filename=*&skip=1&limit=1', h)).json())).to.deep.equal(['f-alice-1']);
    });

    it('content=false drops data.content; pages of 50', async () => {
      for (let i = 0; i < 60; i++) s.files.set(`extra-${i}`, file(`extra-${i}`, 'u-carol', `x${i}.txt`, 1000 + i));
      const h = { headers: bearer(tok['u-carol']!) };
      const p1 = (await call(s, 'GET', '/api/v1/files/?content=false', h)).json();
      expect(p1.total).to.equal(60);
      expect(p1.items).to.have.length(50);
      expect(p1.items[0].id).to.equal('extra-59');
      expect(p1.items[0].data).to.not.have.property('content');
      const p2 = (await call(s, 'GET', '/api/v1/files/?page=2', h)).json();
      expect(p2.items).to.have.length(10);
      expect(p2.items[0].data.content).to.be.a('string');
      expect((await call(s, 'GET', '/api/v1/files/?page=0', h)).status).to.equal(422);
    });

    it('routes on the decoded path, the last repeated query value wins, and records the raw target', async () => {
      const target = '/api/v1/files/%73earch?filename=nothing*&filename=report*';
      const r = await call(s, 'GET', target, { headers: bearer(tok['u-alice']!) });
      expect(ids(r.json())).to.deep.equal(['f-alice-1']);
      const rec = s.requests.at(-1)!;
      expect(rec).to.include({ method: 'GET', url: target, upgrade: false, bodyBytes: 0 });
      expect(rec.headers['authorization']).to.equal(`Bearer ${tok['u-alice']}`);
      expect(rec.rawHeaders).to.include('authorization');
    });

    it('DELETE /all is admin only', async () => {
      expect((await call(s, 'DELETE', '/api/v1/files/all', { headers: bearer(tok['u-alice']!) })).status).to.equal(401);
      expect((await call(s, 'DELETE', '/api/v1/files/all', { headers: bearer(tok['u-admin']!) })).status).to.equal(200);
      expect(s.files.size).to.equal(0);
    });
  });

  describe('per-file access', () => {
    const get = (who: string, path: string): Promise<Reply> => call(s, 'GET', path, { headers: bearer(tok[who]!) });

    it('admin (whatever the bypass flag), owner and grantees read; others get 404 like a missing id', async () => {
      s.flags.bypassAdminAccessControl = false;
      const r = await get('u-admin', '/api/v1/files/f-bob-1');
      expect(r.status).to.equal(200);
      expect(r.json()).to.include({ id: 'f-bob-1', user_id: 'u-bob' }).and.to.have.property('path');
      expect((await get('u-bob', '/api/v1/files/f-bob-1')).status).to.equal(200);
      expect((await get('u-alice', '/api/v1/files/f-bob-team')).status).to.equal(200); // group grant
      expect((await get('u-carol', '/api/v1/files/f-bob-team')).status).to.equal(404);
      expect((await get('u-carol', '/api/v1/files/f-bob-any')).status).to.equal(200); // user:*
      const denied = await get('u-alice', '/api/v1/files/f-bob-1');
      const missing = await get('u-alice', '/api/v1/files/does-not-exist');
      expect(denied.status).to.equal(404);
      expect(denied.json()).to.deep.equal(missing.json());
    });

    it('content variants', async () => {
      let r = await get('u-admin', '/api/v1/files/f-bob-1/content');
      expect(r.text()).to.equal('content of bob-secret.txt');
      expect(String(r.headers['content-disposition'])).to.match(/^inline/);
      r = await get('u-admin', '/api/v1/files/f-bob-1/content?attachment=true');
      expect(String(r.headers['content-disposition'])).to.match(/^attachment/);
      r = await get('u-alice', '/api/v1/files/f-bob-team/content/anything.txt');
      expect(r.status).to.equal(200);
      expect(String(r.headers['content-disposition'])).to.match(/^attachment/);
      r = await get('u-alice', '/api/v1/files/f-bob-team/content/html');
      expect(r.headers['content-type']).to.match(/^text\/html/);
      r = await get('u-alice', '/api/v1/files/f-bob-team/data/content');
      expect(r.json()).to.deep.equal({ content: 'content of team-plan.txt' });
      for (const p of ['/content', '/content/x.txt', '/content/html', '/data/content', '/process/status']) {
        expect((await get('u-carol', `/api/v1/files/f-bob-1${p}`)).status, p).to.equal(404);
      }
    });

    it('writes need the write permission exactly', async () => {
      const post = (who: string, path: string, body: unknown): Promise<Reply> =>
        call(s, 'POST', path, { headers: { ...bearer(tok[who]!), 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect((await post('u-alice', '/api/v1/files/f-bob-team/data/content/update', { content: 'x' })).status).to.equal(404);
      const r = await post('u-carol', '/api/v1/files/f-bob-write/data/content/update', { content: 'edited' });
      expect(r.status).to.equal(200);
      expect(s.files.get('f-bob-write')!.data.content).to.equal('edited');
      expect((await post('u-carol', '/api/v1/files/f-bob-write/rename', { filename: 'renamed.txt' })).json().filename).to.equal('renamed.txt');
      expect((await get('u-carol', '/api/v1/files/f-bob-write')).status).to.equal(404); // write grant is not read
      expect((await call(s, 'DELETE', '/api/v1/files/f-bob-1', { headers: bearer(tok['u-alice']!) })).status).to.equal(404);
      expect((await call(s, 'DELETE', '/api/v1/files/f-bob-1', { headers: bearer(tok['u-admin']!) })).status).to.equal(200);
      expect(s.files.has('f-bob-1')).to.equal(false);
    });

    it('process/status?stream=true is a stream of server-sent events', async () => {
      const r = await get('u-bob', '/api/v1/files/f-bob-1/process/status?stream=true');
      expect(r.headers['content-type']).to.match(/^text\/event-stream/);
      const events = r.text().split('\n\n').filter(Boolean);
      expect(events.length).to.be.greaterThan(1);
      expect(JSON.parse(events.at(-1)!.replace(/^data: /, ''))).to.deep.equal({ status: 'completed' });
    });

    it('a synthetic_size file streams that many generated bytes', async () => {
      const size = 8 * 1024 * 1024 + 3;
      s.files.set(
        'big',
        file('big', 'u-bob', 'big.bin', 5, { meta: { name: 'big.bin', content_type: 'application/octet-stream', size, synthetic_size: size } }),
      );
      const r = await get('u-bob', '/api/v1/files/big/content');
      expect(Number(r.headers['content-length'])).to.equal(size);
      expect(r.raw.length).to.equal(size);
    });
  });

  describe('chats and exports', () => {
    const get = (who: string, path: string): Promise<Reply> => call(s, 'GET', path, { headers: bearer(tok[who]!) });

    it('chats/all/db: non-admin 401; flag off 401 even for admin; on: every chat', async () => {
      expect((await get('u-alice', '/api/v1/chats/all/db')).status).to.equal(401);
      const all = await get('u-admin', '/api/v1/chats/all/db');
      expect(all.status).to.equal(200);
      expect(all.json().map((c: StandInChat) => c.id)).to.have.members(['c-alice', 'c-bob', 'c-admin']);
      expect(all.json()[0]).to.include.keys('id', 'user_id', 'title', 'chat', 'share_id', 'archived', 'pinned', 'meta', 'folder_id');
      s.flags.enableAdminExport = false;
      const off = await get('u-admin', '/api/v1/chats/all/db');
      expect(off.status).to.equal(401);
      expect(off.json().detail).to.equal(ACCESS_PROHIBITED);
      expect((await call(s, 'GET', '/api/config', { headers: bearer(tok['u-admin']!) })).json().features.enable_admin_export).to.equal(false);
    });

    it('utils/db/download: same gates, a sqlite file', async () => {
      expect((await get('u-alice', '/api/v1/utils/db/download')).status).to.equal(401);
      const r = await get('u-admin', '/api/v1/utils/db/download');
      expect(r.status).to.equal(200);
      expect(r.body.subarray(0, 16).toString('latin1')).to.equal('SQLite format 3\0');
      s.flags.enableAdminExport = false;
      expect((await get('u-admin', '/api/v1/utils/db/download')).status).to.equal(401);
    });

    it('admin chat access flag gates list/user and opening any chat by id', async () => {
      expect((await get('u-admin', '/api/v1/chats/list/user/u-alice')).json().map((c: { id: string }) => c.id)).to.deep.equal(['c-alice']);
      expect((await get('u-admin', '/api/v1/chats/c-alice')).status).to.equal(200);
      // chats.py answers 401 (with its NOT_FOUND text) for a chat the caller may not open
      expect((await get('u-bob', '/api/v1/chats/c-alice')).status).to.equal(401);
      expect((await get('u-bob', '/api/v1/chats/list/user/u-alice')).status).to.equal(401);
      s.flags.enableAdminChatAccess = false;
      expect((await get('u-admin', '/api/v1/chats/list/user/u-alice')).status).to.equal(401);
      expect((await get('u-admin', '/api/v1/chats/c-alice')).status).to.equal(401);
      expect((await get('u-admin', '/api/v1/chats/c-admin')).status).to.equal(200);
    });

    it("chats/all is the caller's own chats as NDJSON", async () => {
      const r = await get('u-bob', '/api/v1/chats/all');
      const lines = r
        .text()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.map((c) => c.id)).to.deep.equal(['c-bob']);
    });
  });

  describe('HTTP behaviour', () => {
    it('gzip when accepted, br when preferred, identity otherwise', async () => {
      const h = bearer(tok['u-admin']!);
      let r = await call(s, 'GET', '/api/v1/files/', { headers: { ...h, 'accept-encoding': 'gzip, deflate, br' } });
      expect(r.headers['content-encoding']).to.equal('gzip');
      expect(r.headers['vary']).to.match(/accept-encoding/i);
      expect(r.json().total).to.equal(7);
      expect(r.raw[0]).to.equal(0x1f);
      r = await call(s, 'GET', '/api/v1/files/', { headers: { ...h, 'accept-encoding': 'gzip;q=0.5, br' } });
      expect(r.headers['content-encoding']).to.equal('br');
      expect(r.json().total).to.equal(7);
      for (const ae of [undefined, 'identity']) {
        r = await call(s, 'GET', '/api/v1/files/', { headers: ae ? { ...h, 'accept-encoding': ae } : h });
        expect(r.headers['content-encoding']).to.equal(undefined);
        expect(r.raw.toString()).to.match(/^\{"items"/);
      }
      r = await call(s, 'GET', '/', { headers: { 'accept-encoding': 'gzip' } });
      expect(r.headers['content-encoding']).to.equal('gzip');
      expect(r.text()).to.match(/<title>Open WebUI<\/title>/);
      const off = await startOpenWebUI({ compress: false });
      try {
        expect((await call(off, 'GET', '/health', { headers: { 'accept-encoding': 'gzip' } })).headers['content-encoding']).to.equal(undefined);
      } finally {
        await off.close();
      }
    });

    it('ETag on JSON GETs, 304 on If-None-Match', async () => {
      const h = bearer(tok['u-alice']!);
      const r = await call(s, 'GET', '/api/v1/files/', { headers: h });
      const etag = r.headers['etag'];
      expect(etag).to.be.a('string');
      const again = await call(s, 'GET', '/api/v1/files/', { headers: { ...h, 'if-none-match': etag! } });
      expect(again.status).to.equal(304);
      expect(again.raw.length).to.equal(0);
      const other = await call(s, 'GET', '/api/v1/files/', { headers: { ...bearer(tok['u-bob']!), 'if-none-match': etag! } });
      expect(other.status).to.equal(200);
    });

    it('anonymous meta routes and the SPA shell', async () => {
      expect((await call(s, 'GET', '/health')).json()).to.deep.equal({ status: true });
      expect((await call(s, 'GET', '/ready')).status).to.equal(200);
      expect((await call(s, 'GET', '/manifest.json')).json().name).to.equal('Open WebUI');
      expect((await call(s, 'GET', '/static/favicon.png')).raw.length).to.be.greaterThan(0);
      const cfg = (await call(s, 'GET', '/api/config')).json();
      expect(cfg).to.include({ status: true, name: 'Open WebUI', version: '0.12.4' });
      // 0.12.4: the admin flags only for a signed-in caller
      expect(cfg.features).to.include({ auth: true, auth_trusted_header: true });
      expect(cfg.features).to.not.have.any.keys('enable_admin_export', 'enable_admin_chat_access', 'enable_admin_analytics');
      const signedIn = (await call(s, 'GET', '/api/config', { headers: bearer(tok['u-alice']!) })).json();
      expect(signedIn.features).to.include({ enable_admin_export: true, enable_admin_chat_access: true, enable_admin_analytics: true });
      expect((await call(s, 'GET', '/some/page')).text()).to.match(/<!doctype html>/i);
      expect((await call(s, 'GET', '/api/v1/nope', { headers: bearer(tok['u-alice']!) })).status).to.equal(404);
    });

    it('SSE completions arrive incrementally, then [DONE]', async () => {
      const arrivals: Array<{ at: number; text: string }> = [];
      const t0 = Date.now();
      await new Promise<void>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: s.port,
            method: 'POST',
            path: '/api/chat/completions',
            agent: false,
            headers: { ...bearer(tok['u-alice']!), 'content-type': 'application/json', 'accept-encoding': 'gzip' },
          },
          (res) => {
            expect(res.headers['content-type']).to.match(/^text\/event-stream/);
            expect(res.headers['content-encoding']).to.equal(undefined);
            res.setEncoding('utf8');
            res.on('data', (text: string) => arrivals.push({ at: Date.now() - t0, text }));
            res.on('end', () => resolve());
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ model: 'm', stream: true, n: 10, messages: [] }));
      });
      const all = arrivals.map((a) => a.text).join('');
      const events = all.split('\n\n').filter(Boolean);
      expect(events).to.have.length(11);
      expect(events.at(-1)).to.equal('data: [DONE]');
      expect(JSON.parse(events[0]!.slice(6)).choices[0].delta.content).to.be.a('string');
      expect(arrivals.length).to.be.greaterThan(5);
      expect(arrivals.at(-1)!.at - arrivals[0]!.at).to.be.greaterThan(150);
    });

    it('WebSocket at /ws/socket.io: hello with the upgrade headers, then echo', async () => {
      const ws = new WebSocket(`ws://127.0.0.1:${s.port}/ws/socket.io/?EIO=4&transport=websocket`, { headers: { 'x-probe': 'yes' } });
      const messages: string[] = [];
      let wake: () => void = () => undefined;
      ws.on('message', (d) => {
        messages.push(d.toString());
        wake();
      });
      const got = (n: number): Promise<void> =>
        new Promise((resolve) => {
          wake = () => {
            if (messages.length >= n) resolve();
          };
          wake();
        });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      await got(1);
      ws.send('ping 42');
      await got(2);
      const hello = JSON.parse(messages[0]!);
      expect(hello.type).to.equal('hello');
      expect(hello.headers['x-probe']).to.equal('yes');
      expect(messages[1]).to.equal('ping 42');
      const rec = s.requests.find((r) => r.upgrade);
      expect(rec).to.include({ url: '/ws/socket.io/?EIO=4&transport=websocket', upgrade: true });
      ws.close();
    });

    it('streams a 50 MiB multipart upload and records its size', async () => {
      const MiB = 1024 * 1024;
      const boundary = '----standin' + Date.now();
      const head = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n{"source":"test"}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big upload.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      );
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      const block = Buffer.alloc(MiB, 0x2d); // '-' bytes: stresses the boundary scan
      const total = head.length + 50 * MiB + tail.length;
      const reply = await new Promise<Reply>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: s.port,
            method: 'POST',
            path: '/api/v1/files/?process=true',
            agent: false,
            headers: { ...bearer(tok['u-bob']!), 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': total },
          },
          (res) => {
            const parts: Buffer[] = [];
            res.on('data', (c: Buffer) => parts.push(c));
            res.on('end', () => {
              const body = Buffer.concat(parts);
              resolve({
                status: res.statusCode ?? 0,
                headers: res.headers,
                raw: body,
                body,
                text: () => body.toString(),
                json: () => JSON.parse(body.toString()),
              });
            });
          },
        );
        req.on('error', reject);
        void (async () => {
          req.write(head);
          for (let i = 0; i < 50; i++) {
            if (!req.write(block)) await new Promise((r) => req.once('drain', r));
          }
          req.end(tail);
        })();
      });
      expect(reply.status).to.equal(200);
      const rec = reply.json();
      expect(rec.meta).to.deep.include({ name: 'big upload.bin', size: 50 * MiB, content_type: 'application/octet-stream' });
      expect(rec.meta.data).to.deep.equal({ source: 'test' });
      expect(rec.user_id).to.equal('u-bob');
      expect(s.files.get(rec.id)!.meta.size).to.equal(50 * MiB);
      const recorded = s.requests.find((r) => r.method === 'POST' && r.url === '/api/v1/files/?process=true')!;
      expect(recorded.bodyBytes).to.equal(total);
      const headReply = await call(s, 'HEAD', `/api/v1/files/${rec.id}/content`, { headers: bearer(tok['u-bob']!) });
      expect(Number(headReply.headers['content-length'])).to.equal(50 * MiB);
    });

    it('a small upload keeps its bytes and text content', async () => {
      const boundary = 'xyz';
      const body = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="hello.txt"\r\nContent-Type: text/plain\r\n\r\nhello world\r\n--${boundary}--\r\n`;
      const r = await call(s, 'POST', '/api/v1/files/', {
        headers: { ...bearer(tok['u-alice']!), 'content-type': `multipart/form-data; boundary=${boundary}` },
        body,
      });
      expect(r.status).to.equal(200);
      expect(r.json().meta.size).to.equal(11);
      expect(r.json().data.content).to.equal('hello world');
      expect((await call(s, 'GET', `/api/v1/files/${r.json().id}/content`, { headers: bearer(tok['u-alice']!) })).text()).to.equal('hello world');
      const noFile = await call(s, 'POST', '/api/v1/files/', { headers: { ...bearer(tok['u-alice']!), 'content-type': 'application/json' }, body: '{}' });
      expect(noFile.status).to.equal(422);
    });

    it('the multipart scan survives delimiters split across tiny chunks and near-miss boundaries', async () => {
      const boundary = 'xyz';
      const content = 'a\r\n--xy\r\n--x\r\n-\r\n--xyZ end';
      const body = Buffer.from(
        `preamble\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''na%C3%AFve.txt\r\nContent-Type: text/plain\r\n\r\n` +
          `${content}\r\n--${boundary}\r\nContent-Disposition: form-data; name="other"\r\n\r\nignored\r\n--${boundary}--\r\nepilogue`,
      );
      const reply = await new Promise<Reply>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: s.port,
            method: 'POST',
            path: '/api/v1/files/',
            agent: false,
            headers: { ...bearer(tok['u-alice']!), 'content-type': `multipart/form-data; boundary="${boundary}"` },
          },
          (res) => {
            const parts: Buffer[] = [];
            res.on('data', (c: Buffer) => parts.push(c));
            res.on('end', () => {
              const b = Buffer.concat(parts);
              resolve({ status: res.statusCode ?? 0, headers: res.headers, raw: b, body: b, text: () => b.toString(), json: () => JSON.parse(b.toString()) });
            });
          },
        );
        req.on('error', reject);
        req.setNoDelay(true);
        void (async () => {
          for (let i = 0; i < body.length; i += 3) {
            req.write(body.subarray(i, i + 3));
            if (i % 30 === 0) await new Promise((r) => setImmediate(r));
          }
          req.end();
        })();
      });
      expect(reply.status).to.equal(200);
      expect(reply.json().filename).to.equal('naïve.txt');
      expect(reply.json().meta.size).to.equal(Buffer.byteLength(content));
      expect(reply.json().data.content).to.equal(content);
    });

    it('close() ends keep-alive sockets, websockets and open streams: openSockets() back to 0', async () => {
      const agent = new http.Agent({ keepAlive: true });
      await call(s, 'GET', '/health', { agent });
      const ws = new WebSocket(`ws://127.0.0.1:${s.port}/ws/socket.io`);
      ws.on('error', () => undefined);
      await new Promise((r) => ws.once('message', r));
      const sse = http.request({
        host: '127.0.0.1',
        port: s.port,
        method: 'POST',
        path: '/api/chat/completions',
        agent: false,
        headers: { ...bearer(tok['u-alice']!), 'content-type': 'application/json' },
      });
      sse.on('error', () => undefined);
      await new Promise<void>((resolve) => {
        sse.on('response', (res) => {
          res.on('error', () => undefined);
          res.once('data', () => resolve());
        });
        sse.end(JSON.stringify({ stream: true, n: 1000 }));
      });
      expect(s.openSockets()).to.equal(3);
      const started = Date.now();
      await s.close();
      expect(s.openSockets()).to.equal(0);
      expect(Date.now() - started).to.be.lessThan(1000);
      agent.destroy();
    });
  });
});
