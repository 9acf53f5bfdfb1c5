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
import { callOpenWebUI, startRealWorld, type Answer, type RealWorld } from '../support/open-webui.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('objects named in an admin\u2019s request body, on the real Open WebUI 0.12.4 (its flags all false, gateway bypass false)', function () {
  this.timeout(120_000);
  let w: RealWorld;
  let admin: Jar;
  let alice: Jar;
  let adminId: string;
  let aliceId: string;
  let adminToken: string;
  const c = {} as Record<'folder' | 'folderOwn' | 'file' | 'file2' | 'fileOwn' | 'kb' | 'kbOwn' | 'kbProbe' | 'note' | 'noteOwn', string>;

  const direct = (method: string, path: string, body?: unknown): Promise<Answer> => callOpenWebUI(w.owui.url, adminToken, method, path, body);
  const via = (jar: Jar, method: string, path: string, body?: unknown) =>
    browse(jar, path, {
      method,
      headers: method === 'GET' ? {} : { origin: w.url, 'content-type': 'application/json' },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  const ok = async <T>(p: Promise<Answer>, what: string): Promise<T> => {
    const r = await p;
    expect(r.status, `${what}: ${r.text}`).to.equal(200);
    return r.json<T>();
  };
  const refused = async (r: Answer, method: string, path: string) => {
    expect(r.status, `${method} ${path}: ${r.text}`).to.equal(403);
    const line = () => w.obs.lines.find((l) => l.event === 'admin-access-denied' && l.path === path && l.method === method && l.callerId === adminId);
    for (let i = 0; i < 40 && !line(); i++) await sleep(25);
    expect(line(), `audit line of ${method} ${path}`).to.not.equal(undefined);
    expect(String(line()!.rule)).to.match(/^route table: /);
  };
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
    admin = (await signIn(w.url, 'sysadmin')).jar;
    alice = (await signIn(w.url, 'alice')).jar;
    adminId = (await ok<{ id: string }>(via(admin, 'GET', '/api/v1/auths/'), 'me')).id;
    aliceId = (await ok<{ id: string }>(via(alice, 'GET', '/api/v1/auths/'), 'alice')).id;
    const r = await fetch(`${w.owui.url}/api/v1/auths/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-email': 'sysadmin@platform.example', 'x-forwarded-role': 'admin' },
      body: JSON.stringify({ email: '', password: '' }),
    });
    adminToken = ((await r.json()) as { token: string }).token;

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
    expect((await via(admin, 'GET', `/api/v1/models/model?id=planted-${tag}`)).status).to.not.equal(200);
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
