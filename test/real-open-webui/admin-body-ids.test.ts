// Objects an admin names in a request BODY, on the REAL Open WebUI 0.12.4 (its admin flags as the
// platform sets them, all false; the gateway's CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=false). Each
// door is first shown OPEN straight at Open WebUI (the admin's own token, no gateway): a folder made
// inside another user's folder (it becomes theirs), another user's file added to the admin's own
// knowledge base (alone or in a batch), another user's knowledge base attached to the admin's model,
// another user's note attached to a chat completion (its text reaches the model).
// Then through the gateway: refused, audited with its rule, the other user's objects unchanged;
// the admin's own folder, files and knowledge base still work. One Open WebUI boot.
import { expect } from 'chai';
import { browse, signIn, type Jar } from '../support/cookie-jar.js';
import { OPEN_WEBUI_VERSION, callOpenWebUI, releaseAtLeast, startRealWorld, type Answer, type RealWorld } from '../support/open-webui.js';
import { sleep } from '../support/wait.js';

/** The admin's side of a world: straight at Open WebUI, through the gateway, and the refusal's audit line. */
interface AdminSide {
  w: RealWorld;
  adminId: string;
  /** the admin's own Open WebUI token, from a sign-in straight at Open WebUI */
  adminToken: string;
}
function adminHelpers(s: AdminSide) {
  const direct = (method: string, path: string, body?: unknown): Promise<Answer> => callOpenWebUI(s.w.owui.url, s.adminToken, method, path, body);
  const via = (jar: Jar, method: string, path: string, body?: unknown) =>
    browse(jar, path, {
      method,
      headers: method === 'GET' ? {} : { origin: s.w.url, 'content-type': 'application/json' },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  const ok = async <T>(p: Promise<Answer>, what: string): Promise<T> => {
    const r = await p;
    expect(r.status, `${what}: ${r.text}`).to.equal(200);
    return r.json<T>();
  };
  /**
   * Never forwarded: the status, and an audit line of one of `events` by the admin naming its rule
   * (and `names`, when given); the route table's own refusals are `policy-denied` lines.
   */
  const refused = async (
    r: Answer,
    method: string,
    path: string,
    { status = 403, names, events = ['admin-access-denied'] }: { status?: number; names?: string; events?: string[] } = {},
  ) => {
    expect(r.status, `${method} ${path}: ${r.text}`).to.equal(status);
    const line = () =>
      s.w.obs.lines.find(
        (l) =>
          events.includes(String(l.event)) &&
          l.path === path &&
          l.method === method &&
          (l.callerId === s.adminId || (l.event === 'policy-denied' && l.callerId === undefined)) &&
          (names === undefined || String(l.rule).includes(names)),
      );
    for (let i = 0; i < 40 && !line(); i++) await sleep(25);
    expect(line(), `audit line of ${method} ${path}`).to.not.equal(undefined);
    expect(String(line()!.rule)).to.match(/^(route table: |ENABLE_ADMIN_CHAT_ACCESS)/);
  };
  return { direct, via, ok, refused };
}

/** The admin's own Open WebUI token: a trusted-header sign-in straight at Open WebUI, no gateway. */
async function adminTokenOf(w: RealWorld): Promise<string> {
  const r = await fetch(`${w.owui.url}/api/v1/auths/signin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-email': 'sysadmin@platform.example', 'x-forwarded-role': 'admin' },
    body: JSON.stringify({ email: '', password: '' }),
  });
  return ((await r.json()) as { token: string }).token;
}

describe(`objects named in an admin\u2019s request body, on the real Open WebUI ${OPEN_WEBUI_VERSION} (its flags all false, gateway bypass false)`, function () {
  this.timeout(120_000);
  let w: RealWorld;
  let admin: Jar;
  let alice: Jar;
  let adminId: string;
  let aliceId: string;
  const c = {} as Record<'folder' | 'folderOwn' | 'file' | 'file2' | 'fileOwn' | 'kb' | 'kbOwn' | 'kbProbe' | 'note' | 'noteOwn', string>;
  const side = {} as AdminSide;
  const { direct, via, ok, refused } = adminHelpers(side);

  const upload = async (jar: Jar, name: string, text: string) => {
    const form = new FormData();
    form.append('file', new Blob([text], { type: 'text/plain' }), name);
    const res = await fetch(`${w.url}/api/v1/files/`, { method: 'POST', headers: { cookie: jar.header('/api/v1/files/') }, body: form });
    expect(res.status, await res.clone().text()).to.equal(200);
    return ((await res.json()) as { id: string }).id;
  };
  const filesOf = async (kb: string) =>
    (await ok<{ items: Array<{ id: string }> }>(via(admin, 'GET', `/api/v1/knowledge/${kb}/files`), `files of ${kb}`)).items.map((f) => f.id);
  const folderNames = async (jar: Jar) => (await ok<Array<{ name: string }>>(via(jar, 'GET', '/api/v1/folders/'), 'folders')).map((f) => f.name);

  before(async function () {
    this.timeout(300_000);
    w = await startRealWorld({
      flags: { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false },
      model: true,
      owuiEnv: { USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ACCESS: 'True' },
    });
    side.w = w;
    admin = (await signIn(w.url, 'sysadmin')).jar;
    alice = (await signIn(w.url, 'alice')).jar;
    adminId = side.adminId = (await ok<{ id: string }>(via(admin, 'GET', '/api/v1/auths/'), 'me')).id;
    aliceId = (await ok<{ id: string }>(via(alice, 'GET', '/api/v1/auths/'), 'alice')).id;
    side.adminToken = await adminTokenOf(w);

    const folder = async (jar: Jar, name: string) => (await ok<{ id: string }>(via(jar, 'POST', '/api/v1/folders/', { name }), `folder ${name}`)).id;
    const kb = async (jar: Jar, name: string) =>
      (await ok<{ id: string }>(via(jar, 'POST', '/api/v1/knowledge/create', { name, description: name, access_grants: [] }), `knowledge ${name}`)).id;
    c.folder = await folder(alice, 'Alice folder');
    c.folderOwn = await folder(admin, 'Admin folder');
    c.file = await upload(alice, 'alice-secret.txt', 'ALICE-FILE-SECRET');
    c.file2 = await upload(alice, 'alice-secret-2.txt', 'ALICE-FILE-SECRET-2');
    c.fileOwn = await upload(admin, 'admin-own.txt', 'ADMIN-OWN-FILE');
    c.kb = await kb(alice, 'Alice KB');
    c.kbOwn = await kb(admin, 'Admin KB');
    c.kbProbe = await kb(admin, 'Admin KB probe');
    const note = async (jar: Jar, title: string, md: string) =>
      (await ok<{ id: string }>(via(jar, 'POST', '/api/v1/notes/create', { title, data: { content: { md, html: `<p>${md}</p>`, json: null } } }), title)).id;
    c.note = await note(alice, 'Alice note', 'ALICE-NOTE-SECRET');
    c.noteOwn = await note(admin, 'Admin note', 'ADMIN-OWN-NOTE');
    // with BYPASS_ADMIN_ACCESS_CONTROL false even an admin chats only with a registered model (check_model_access)
    await ok(via(admin, 'POST', '/api/v1/models/create', { id: w.model!.model, name: 'Tiny', base_model_id: null, meta: {}, params: {} }), 'model');
  });
  after(async () => {
    await w?.close();
  });

  it('POST /folders/ with another user\u2019s folder as parent: open straight at Open WebUI (made as theirs), refused through the gateway', async () => {
    const open = await ok<{ user_id: string; parent_id: string }>(direct('POST', '/api/v1/folders/', { name: 'probe', parent_id: c.folder }), 'the door');
    expect(open).to.deep.include({ user_id: aliceId, parent_id: c.folder });
    expect(await folderNames(alice)).to.include('probe');

    await refused(await via(admin, 'POST', '/api/v1/folders/', { name: 'planted', parent_id: c.folder }), 'POST', '/api/v1/folders/');
    expect(await folderNames(alice)).to.not.include('planted');
    // another user's file attached to a new folder of the admin's: refused too
    await refused(
      await via(admin, 'POST', '/api/v1/folders/', { name: 'with file', data: { files: [{ type: 'file', id: c.file }] } }),
      'POST',
      '/api/v1/folders/',
    );
    expect(await folderNames(admin)).to.not.include('with file');

    // own: a subfolder of the admin's folder, a folder at the top, the admin's own file attached
    const sub = await ok<{ user_id: string }>(via(admin, 'POST', '/api/v1/folders/', { name: 'sub', parent_id: c.folderOwn }), 'own subfolder');
    expect(sub.user_id).to.equal(adminId);
    await ok(via(admin, 'POST', '/api/v1/folders/', { name: 'own file', data: { files: [{ type: 'file', id: c.fileOwn }] } }), 'own file attached');
  });

  // The slim install has no vector store, so Open WebUI fails at indexing (a 400 naming PGVECTOR_DB_URL),
  // which it reaches only AFTER its ownership check of the file passed: that answer is the open door.
  const PAST_THE_CHECK = /PGVECTOR_DB_URL/;

  it('knowledge file/add with another user\u2019s file into the admin\u2019s own base: open straight at Open WebUI, refused through the gateway', async () => {
    // a plain user adding a file not theirs is stopped by Open WebUI's own check (403)
    const control = await via(alice, 'POST', `/api/v1/knowledge/${c.kb}/file/add`, { file_id: c.fileOwn });
    expect(control.status, control.text).to.equal(403);
    const open = await direct('POST', `/api/v1/knowledge/${c.kbProbe}/file/add`, { file_id: c.file });
    expect(open.status, open.text).to.equal(400);
    expect(open.text, 'Open WebUI went on to index the other user\u2019s file').to.match(PAST_THE_CHECK);

    const path = `/api/v1/knowledge/${c.kbOwn}/file/add`;
    const res = await via(admin, 'POST', path, { file_id: c.file });
    await refused(res, 'POST', path);
    expect(res.text).to.not.match(PAST_THE_CHECK);
    expect(await filesOf(c.kbOwn)).to.deep.equal([]);

    // the admin's own file is forwarded (and meets the same missing vector store)
    const own = await via(admin, 'POST', path, { file_id: c.fileOwn });
    expect(own.status, own.text).to.equal(400);
    expect(own.text).to.match(PAST_THE_CHECK);
  });

  it('knowledge files/batch/add naming one file of another user: open straight at Open WebUI, refused whole through the gateway', async () => {
    // Open WebUI's per-file check stops a plain user (alice, her own base, the admin's file: 403) and
    // skips role admin ('if user.role != admin'): the admin's batch with alice's file answers 200
    const control = await via(alice, 'POST', `/api/v1/knowledge/${c.kb}/files/batch/add`, [{ file_id: c.fileOwn }]);
    expect(control.status, control.text).to.equal(403);
    const open = await direct('POST', `/api/v1/knowledge/${c.kbProbe}/files/batch/add`, [{ file_id: c.file2 }]);
    expect(open.status, open.text).to.equal(200);

    const path = `/api/v1/knowledge/${c.kbOwn}/files/batch/add`;
    await refused(await via(admin, 'POST', path, [{ file_id: c.fileOwn }, { file_id: c.file2 }]), 'POST', path);
    expect(await filesOf(c.kbOwn)).to.deep.equal([]);
    // the admin's own file alone is forwarded (Open WebUI answers, as for the probe)
    const own = await via(admin, 'POST', path, [{ file_id: c.fileOwn }]);
    expect(own.status, own.text).to.equal(200);
  });

  it('a model whose knowledge is another user\u2019s base: open straight at Open WebUI, refused through the gateway; the admin\u2019s own base works', async () => {
    const tag = Math.random().toString(36).slice(2, 8);
    const model = (id: string, kb: string) => ({
      id,
      name: id,
      base_model_id: null,
      meta: { knowledge: [{ type: 'collection', id: kb }] },
      params: {},
      access_grants: [],
    });
    await ok(direct('POST', '/api/v1/models/create', model(`probe-${tag}`, c.kb)), 'the door');
    await refused(await via(admin, 'POST', '/api/v1/models/create', model(`planted-${tag}`, c.kb)), 'POST', '/api/v1/models/create');
    expect((await via(admin, 'GET', `/api/v1/models/model?id=planted-${tag}`)).status, 'no model planted').to.equal(404);
    await ok(via(admin, 'POST', '/api/v1/models/create', model(`own-${tag}`, c.kbOwn)), 'own base');
  });

  it('a chat completion attaching another user\u2019s note: its text reaches the model straight at Open WebUI, never through the gateway', async () => {
    const completion = (noteId: string) => ({
      model: w.model!.model,
      stream: false,
      messages: [{ role: 'user', content: 'What does the attached note say?' }],
      files: [{ type: 'note', id: noteId }],
    });
    const asked = () => JSON.stringify(w.model!.completions);
    const open = await direct('POST', '/api/chat/completions', completion(c.note));
    expect(open.status, open.text).to.equal(200);
    expect(asked(), 'the model was given the other user\u2019s note').to.include('ALICE-NOTE-SECRET');
    w.model!.completions.length = 0;

    const res = await via(admin, 'POST', '/api/chat/completions', completion(c.note));
    expect(res.status, res.text).to.equal(401);
    expect(asked()).to.not.include('ALICE-NOTE-SECRET');
    const line = w.obs.lines.find((l) => l.event === 'admin-chat-access-denied' && l.path === '/api/chat/completions' && l.callerId === adminId);
    expect(String(line?.rule)).to.include(`/api/v1/notes/${c.note}`);

    const own = await via(admin, 'POST', '/api/chat/completions', completion(c.noteOwn));
    expect(own.status, own.text).to.equal(200);
    expect(asked()).to.include('ADMIN-OWN-NOTE');
  });
});

describe(`what an admin\u2019s request names beyond its path, on the real Open WebUI ${OPEN_WEBUI_VERSION} (its flags all false, gateway bypass false)`, function () {
  this.timeout(120_000);
  let w: RealWorld;
  let admin: Jar;
  let superuser: Jar;
  let alice: Jar;
  let aliceId: string;
  const side = {} as AdminSide;
  const { direct, via, ok, refused } = adminHelpers(side);
  const asked = () => JSON.stringify(w.model!.completions);

  before(async function () {
    this.timeout(300_000);
    w = side.w = await startRealWorld({
      flags: { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false },
      model: true,
    });
    admin = (await signIn(w.url, 'sysadmin')).jar;
    superuser = (await signIn(w.url, 'superuser')).jar;
    alice = (await signIn(w.url, 'alice')).jar;
    side.adminId = (await ok<{ id: string }>(via(admin, 'GET', '/api/v1/auths/'), 'me')).id;
    aliceId = (await ok<{ id: string }>(via(alice, 'GET', '/api/v1/auths/'), 'alice')).id;
    side.adminToken = await adminTokenOf(w);
    // the connection's model, registered by the admin for everyone (with BYPASS_ADMIN_ACCESS_CONTROL false
    // even an admin chats only with a registered model, and a model built on it needs it readable)
    const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
    await ok(
      via(admin, 'POST', '/api/v1/models/create', { id: w.model!.model, name: 'Tiny', base_model_id: null, meta: {}, params: {}, access_grants: everyone }),
      'model',
    );
  });
  after(async () => {
    await w?.close();
  });

  it('another user\u2019s private model: its system prompt reaches the model straight at Open WebUI, never through the gateway, by any generation route; the admin\u2019s own models work', async () => {
    const tag = Math.random().toString(36).slice(2, 8);
    const model = (id: string, system: string) => ({ id, name: id, base_model_id: w.model!.model, meta: {}, params: { system }, access_grants: [] });
    const theirs = `su-private-${tag}`;
    await ok(via(superuser, 'POST', '/api/v1/models/create', model(theirs, 'SU-SYSTEM-SECRET')), 'the other admin\u2019s private model');
    const chat = (m: string) => ({ model: m, stream: false, messages: [{ role: 'user', content: 'Hello' }] });
    // Open WebUI serves generations from its list of models, built when it is listed
    await ok(direct('GET', '/api/models?refresh=true'), 'the models, listed');

    // its owner uses it; straight at Open WebUI, its OpenAI route lets any admin use it too (check_model_access
    // skips role admin there; the main chat route checks admins only while BYPASS_ADMIN_ACCESS_CONTROL is false)
    await ok(via(superuser, 'POST', '/api/chat/completions', chat(theirs)), 'its owner');
    w.model!.completions.length = 0;
    const open = await direct('POST', '/openai/chat/completions', chat(theirs));
    expect(open.status, open.text).to.equal(200);
    expect(asked(), 'the model was given the other user\u2019s system prompt').to.include('SU-SYSTEM-SECRET');
    w.model!.completions.length = 0;

    const lookup = `/api/v1/models/model?id=${theirs}`;
    await refused(await via(admin, 'POST', '/api/chat/completions', chat(theirs)), 'POST', '/api/chat/completions', {
      status: 401,
      names: lookup,
      events: ['admin-chat-access-denied'],
    });
    await refused(await via(admin, 'POST', '/api/v1/tasks/title/completions', chat(theirs)), 'POST', '/api/v1/tasks/title/completions', { names: lookup });
    await refused(await via(admin, 'POST', '/openai/chat/completions', chat(theirs)), 'POST', '/openai/chat/completions', { names: lookup });
    expect(asked()).to.not.include('SU-SYSTEM-SECRET');
    // the arena model picks among every model, the other admin's included: Open WebUI has no entry for it
    const arena = await via(admin, 'POST', '/api/chat/completions', chat('arena-model'));
    await refused(arena, 'POST', '/api/chat/completions', { status: 401, names: '/api/v1/models/model?id=arena-model', events: ['admin-chat-access-denied'] });

    // the connection's model, and a model of the admin's own with its own system prompt
    await ok(via(admin, 'POST', '/api/chat/completions', chat(w.model!.model)), 'the connection\u2019s model');
    const mine = `sys-own-${tag}`;
    await ok(via(admin, 'POST', '/api/v1/models/create', model(mine, 'ADMIN-OWN-SYSTEM')), 'the admin\u2019s own model');
    await ok(direct('GET', '/api/models?refresh=true'), 'the models, listed again');
    await ok(via(admin, 'POST', '/api/chat/completions', chat(mine)), 'the admin\u2019s own model');
    expect(asked()).to.include('ADMIN-OWN-SYSTEM');
  });

  it('a group made under another group: open straight at Open WebUI, refused through the gateway; a group of its own is made, and a group\u2019s preview keeps what others shared with it to Open WebUI', async () => {
    const tenant = (await ok<{ id: string }>(via(admin, 'POST', '/api/v1/groups/create', { name: 'tenant-x', description: 'a tenant' }), 'a group')).id;
    const probe = await ok<{ parent_group_id: string | null }>(
      direct('POST', '/api/v1/groups/create', { name: 'probe', description: '', parent_group_id: tenant }),
      'the door',
    );
    // 0.11.4 has no group hierarchy: it ignores the field, and there is no door
    if (releaseAtLeast('0.12')) expect(probe.parent_group_id).to.equal(tenant);
    else expect(probe.parent_group_id ?? null).to.equal(null);
    await refused(
      await via(admin, 'POST', '/api/v1/groups/create', { name: 'ops', description: '', parent_group_id: tenant }),
      'POST',
      '/api/v1/groups/create',
    );
    const names = (await ok<Array<{ name: string }>>(via(admin, 'GET', '/api/v1/groups/'), 'groups')).map((g) => g.name);
    expect(names).to.include('tenant-x').and.not.include('ops');
    await ok(via(admin, 'POST', '/api/v1/groups/create', { name: 'ops', description: '', parent_group_id: null }), 'a group of its own');

    const preview = `/api/v1/groups/id/${tenant}/preview`;
    expect(await ok<Record<string, unknown>>(direct('GET', preview), 'the preview, straight')).to.include.keys('models', 'knowledge', 'tools');
    const seen = await ok<Record<string, unknown>>(via(admin, 'GET', preview), 'the preview, through the gateway');
    expect(seen).to.include.keys('group', 'permissions');
    // kept in the shape Open WebUI's panel reads (preview.models.items.length), empty
    for (const list of ['models', 'knowledge', 'tools']) expect(seen[list], list).to.deep.equal({ items: [], total: 0 });
  });

  it('a calendar shared with the admin for writing: its sharing, named in the body of /update, is refused through the gateway (0.11.4 and 0.12.3 take it there from any admin; 0.12.4 ignores it)', async () => {
    const everyoneWrites = [{ principal_type: 'user', principal_id: '*', permission: 'write' }];
    const cal = (
      await ok<{ id: string }>(
        via(alice, 'POST', '/api/v1/calendars/create', {
          name: 'Alice calendar',
          color: '#336699',
          access_grants: [{ principal_type: 'user', principal_id: side.adminId, permission: 'write' }],
        }),
        'alice\u2019s calendar',
      )
    ).id;
    const path = `/api/v1/calendars/${cal}/update`;
    const sharing = async () =>
      (
        await ok<{ access_grants: Array<{ principal_id: string; permission: string }> }>(via(alice, 'GET', `/api/v1/calendars/${cal}`), 'alice reads it')
      ).access_grants
        .map((g) => `${g.principal_id}:${g.permission}`)
        .sort();
    const shared = await sharing();
    expect(shared).to.deep.equal([`${side.adminId}:write`]);
    expect((await direct('POST', path, { access_grants: everyoneWrites })).status).to.equal(200);
    if (releaseAtLeast('0.12.4')) expect(await sharing(), 'no door: 0.12.4 takes sharing at /access/update, from the owner').to.deep.equal(shared);
    else {
      expect(await sharing(), 'the door: before 0.12.4 an admin shares another user\u2019s calendar with everyone').to.deep.equal(['*:write']);
      await ok(
        via(alice, 'POST', path, { access_grants: [{ principal_type: 'user', principal_id: side.adminId, permission: 'write' }] }),
        'alice shares it back',
      );
      expect(await sharing()).to.deep.equal(shared);
    }
    await refused(await via(admin, 'POST', path, { access_grants: everyoneWrites }), 'POST', path, { names: 'access_grants' });
    await refused(await via(admin, 'POST', path, { name: 'x', access_grants: [] }), 'POST', path, { names: 'access_grants' });
    expect(await sharing()).to.deep.equal(shared);
    // what the write grant is for still passes
    await ok(via(admin, 'POST', path, { name: 'Alice calendar, renamed by the admin' }), 'a rename');
  });

  it('refused: another user\u2019s memory named as the collection to write, the list of every user\u2019s running generations, the context compaction settings', async () => {
    await refused(
      await via(admin, 'POST', '/api/v1/retrieval/process/text', { name: 'x', content: 'planted', collection_name: `user-memory-${aliceId}` }),
      'POST',
      '/api/v1/retrieval/process/text',
      { names: `user-memory-${aliceId}` },
    );
    expect((await direct('GET', '/api/tasks')).status, 'the door').to.equal(200);
    await refused(await via(admin, 'GET', '/api/tasks'), 'GET', '/api/tasks', { events: ['policy-denied'] });
    const config = await ok<Record<string, unknown>>(via(admin, 'GET', '/api/v1/chats/config'), 'the chat settings, read');
    await refused(await via(admin, 'POST', '/api/v1/chats/config', config), 'POST', '/api/v1/chats/config', { events: ['policy-denied'] });
    await ok(via(admin, 'POST', '/api/v1/chats/read'), 'the admin\u2019s own chats marked read');
  });
});
