// Objects an admin names in a request BODY (policies/open-webui-routes.ts BodyRef), over real
// sockets against the Open WebUI stand-in, which lets admins through as 0.12.4 does: a subfolder
// inside another user's folder, another user's file added to the admin's own knowledge base (one
// or in a batch). Each is first shown open straight at the stand-in, then refused by the gateway,
// audited, the other user's objects unchanged; the admin's own ids still work. A chat completion's
// vector collection names and a client-described (direct) model's knowledge are checked the same way.
import { expect } from 'chai';
import { startOpenWebUI, type OpenWebUIStandIn, type StandInFile } from '../../sandbox/open-webui/stand-in.js';
import { emptyWorkspace, type Workspace } from '../../sandbox/open-webui/workspace.js';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';

const users = [
  { id: 'u-admin', email: 'sysadmin@platform.test', name: 'Sys Admin', role: 'admin' as const, groups: ['tenant-a'] },
  { id: 'u-bob', email: 'bob@globex.test', name: 'Bob', role: 'user' as const, groups: ['tenant-b'] },
];
const SECRET = 'GLOBEX-SECRET';
const now = Math.floor(Date.now() / 1000);

const file = (id: string, owner: string, content: string): StandInFile => ({
  id,
  user_id: owner,
  hash: null,
  filename: `${id}.txt`,
  data: { content },
  meta: { name: `${id}.txt`, content_type: 'text/plain', size: content.length },
  created_at: now,
  updated_at: now,
});

function seed(): Workspace {
  const ws = emptyWorkspace();
  const put = (kind: keyof Workspace['objects'], o: Record<string, unknown> & { id: string; user_id: string }) =>
    ws.objects[kind].set(o.id, { created_at: now, updated_at: now, ...o });
  put('folder', { id: 'fo-bob', user_id: 'u-bob', name: 'globex', parent_id: null, access_grants: [] });
  put('folder', { id: 'fo-admin', user_id: 'u-admin', name: 'mine', parent_id: null, access_grants: [] });
  put('knowledge', { id: 'k-admin', user_id: 'u-admin', name: 'own kb', content: '', access_grants: [] });
  put('knowledge', { id: 'k-bob', user_id: 'u-bob', name: 'globex kb', content: SECRET, access_grants: [] });
  // the model the completions run: registered, the admin's (a model an admin may not read is refused)
  put('model', { id: 'gpt-test', user_id: '', name: 'gpt-test', info: { user_id: 'u-admin', access_grants: [] } });
  return ws;
}

describe('admin: objects named in a request body (stand-in upstream)', function () {
  let upstream: OpenWebUIStandIn;
  let gw: RunningGateway;
  let adminKey: string;
  before(async () => {
    upstream = await startOpenWebUI({
      users,
      files: [file('f-bob', 'u-bob', SECRET), file('f-bob-2', 'u-bob', SECRET), file('f-admin', 'u-admin', 'own words')],
      workspace: seed(),
    });
    adminKey = upstream.apiKeyFor('u-admin');
    gw = await startGateway(baseEnv(upstream.url, { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false', ALLOW_UPSTREAM_API_KEYS: 'true' }));
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  const send = (base: string, method: string, path: string, body: unknown) =>
    fetch(base + path, { method, headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const direct = (method: string, path: string, body: unknown) => send(upstream.url, method, path, body);
  const call = (method: string, path: string, body: unknown) => send(gw.url, method, path, body);
  const reached = (method: string, fragment: string) => upstream.requests.filter((r) => r.method === method && r.url.includes(fragment)).length;
  const denied = (rulePart: string) => gw.obs.lines.filter((l) => l.event === 'admin-access-denied' && String(l.rule).includes(rulePart));
  const foldersOf = (owner: string) => [...upstream.workspace.objects.folder.values()].filter((f) => f.user_id === owner).map((f) => f.id);
  const kb = (id: string) => upstream.workspace.objects.knowledge.get(id)!;

  it('a folder inside another user\u2019s folder: open at the stand-in, refused by the gateway; own parents still work', async () => {
    // Open WebUI on its own: made, as bob's, inside bob's tree
    const open = await direct('POST', '/api/v1/folders/', { name: 'planted', parent_id: 'fo-bob' });
    expect(open.status).to.equal(200);
    const planted = (await open.json()) as { id: string; user_id: string };
    expect(planted.user_id).to.equal('u-bob');
    upstream.workspace.objects.folder.delete(planted.id);

    const bobs = foldersOf('u-bob');
    const before = reached('POST', '/api/v1/folders/');
    const res = await call('POST', '/api/v1/folders/', { name: 'planted', parent_id: 'fo-bob' });
    expect(res.status).to.equal(403);
    expect(reached('POST', '/api/v1/folders/')).to.equal(before);
    expect(foldersOf('u-bob')).to.deep.equal(bobs);
    expect(denied('own POST /api/v1/folders/')).to.have.length.greaterThan(0);

    // attaching bob's file or knowledge base to a new folder of the admin's: refused too
    for (const entry of [
      { type: 'file', id: 'f-bob' },
      { type: 'collection', id: 'k-bob' },
    ])
      expect((await call('POST', '/api/v1/folders/', { name: `with ${entry.id}`, data: { files: [entry] } })).status, entry.id).to.equal(403);

    // a subfolder of the admin's own folder, a top-level folder, and the admin's own file attached
    for (const body of [
      { name: 'sub', parent_id: 'fo-admin' },
      { name: 'top' },
      { name: 'top2', parent_id: null },
      { name: 'own file', data: { files: [{ type: 'file', id: 'f-admin' }] } },
    ])
      expect((await call('POST', '/api/v1/folders/', body)).status, JSON.stringify(body)).to.equal(200);
  });

  it('another user\u2019s file added to the admin\u2019s own knowledge base: open at the stand-in, refused by the gateway; own files still work', async () => {
    const open = await direct('POST', '/api/v1/knowledge/k-admin/file/add', { file_id: 'f-bob' });
    expect(open.status).to.equal(200);
    expect(String(kb('k-admin').content)).to.include(SECRET);
    Object.assign(kb('k-admin'), { content: '', file_ids: [] });

    const before = reached('POST', '/file/add');
    const res = await call('POST', '/api/v1/knowledge/k-admin/file/add', { file_id: 'f-bob' });
    expect(res.status).to.equal(403);
    expect(await res.text()).to.not.include(SECRET);
    expect(reached('POST', '/file/add')).to.equal(before);
    expect(kb('k-admin').file_ids).to.deep.equal([]);
    expect(denied('by-id-write POST /api/v1/knowledge/{id}/file/add')).to.have.length.greaterThan(0);

    // a body the gateway cannot read as Open WebUI does: refused, never forwarded
    for (const body of [{ file_id: ['f-bob'] }, { file_id: { id: 'f-bob' } }, {}])
      expect((await call('POST', '/api/v1/knowledge/k-admin/file/add', body)).status, JSON.stringify(body)).to.equal(403);
    expect(reached('POST', '/file/add')).to.equal(before);

    const own = await call('POST', '/api/v1/knowledge/k-admin/file/add', { file_id: 'f-admin' });
    expect(own.status).to.equal(200);
    expect(kb('k-admin').file_ids).to.deep.equal(['f-admin']);
  });

  it('a batch naming one file of another user among the admin\u2019s: open at the stand-in, refused whole by the gateway', async () => {
    const batch = [{ file_id: 'f-admin' }, { file_id: 'f-bob-2' }];
    const open = await direct('POST', '/api/v1/knowledge/k-admin/files/batch/add', batch);
    expect(open.status).to.equal(200);
    expect(kb('k-admin').file_ids).to.include('f-bob-2');
    Object.assign(kb('k-admin'), { content: '', file_ids: [] });

    const before = reached('POST', '/files/batch/add');
    expect((await call('POST', '/api/v1/knowledge/k-admin/files/batch/add', batch)).status).to.equal(403);
    expect(reached('POST', '/files/batch/add')).to.equal(before);
    expect(kb('k-admin').file_ids).to.deep.equal([]);

    expect((await call('POST', '/api/v1/knowledge/k-admin/files/batch/add', [{ file_id: 'f-admin' }])).status).to.equal(200);
    expect(kb('k-admin').file_ids).to.deep.equal(['f-admin']);
  });

  it('a chat completion attaching another user\u2019s knowledge base, note or folder never reaches Open WebUI; the admin\u2019s own base does', async () => {
    const completion = (files: unknown[], extra: Record<string, unknown> = {}) => ({
      model: 'gpt-test',
      stream: false,
      messages: [{ role: 'user', content: 'what does it say?' }],
      files,
      ...extra,
    });
    const before = reached('POST', '/api/chat/completions');
    for (const body of [
      completion([{ type: 'collection', id: 'k-bob' }]),
      completion([{ type: 'file', id: 'f-bob' }]),
      completion([{ type: 'folder', id: 'fo-bob' }]),
      completion([], { folder_id: 'fo-bob' }),
      completion([{ type: 'collection', id: { $ne: null } }]),
    ]) {
      const res = await call('POST', '/api/chat/completions', body);
      expect(res.status, JSON.stringify(body)).to.equal(401);
      expect(await res.text()).to.not.include(SECRET);
    }
    expect(reached('POST', '/api/chat/completions')).to.equal(before);
    expect(gw.obs.lines.some((l) => l.event === 'admin-chat-access-denied' && String(l.rule).includes('/api/v1/knowledge/k-bob'))).to.equal(true);
    await call('POST', '/api/chat/completions', completion([{ type: 'collection', id: 'k-admin' }], { folder_id: 'fo-admin' }));
    expect(reached('POST', '/api/chat/completions')).to.equal(before + 1);
  });

  it('the path object is still checked first: a file of the admin\u2019s into another user\u2019s base is refused', async () => {
    expect((await call('POST', '/api/v1/knowledge/k-bob/file/add', { file_id: 'f-admin' })).status).to.equal(403);
    expect(kb('k-bob').file_ids).to.equal(undefined);
  });

  // Beyond `{type, id}` entries (found by a review): vector collections named on any files[] entry
  // (retrieval/utils.py get_sources_from_items, filter_accessible_collections passing every name for
  // role admin) and a "direct" model_item whose knowledge get_accessible_folder_files keeps whole.
  const complete = (body: Record<string, unknown>) =>
    fetch(gw.url + '/api/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', stream: false, messages: [{ role: 'user', content: 'what does it say?' }], ...body }),
    });
  const completions = () => reached('POST', '/api/chat/completions');

  for (const entry of [
    { type: 'text', collection_name: 'file-f-bob' }, // bob's file's chunks
    { type: 'text', collection_name: 'k-bob' }, // bob's knowledge base
    { type: 'text', collection_name: 'user-memory-u-bob' }, // bob's memories
    { type: 'web_search', collection_name: 'file-f-bob' }, // "trusted server-generated", but the client sends it
    { type: 'web_search', collection_name: 'web-search-u-bob-0123abcd' }, // bob's own web search
    { collection_names: ['file-f-admin', 'file-f-bob'] }, // one of the admin's, one of bob's
    { type: 'text', collection_name: { $ne: '' } }, // not a name
  ])
    it(`files[] ${JSON.stringify(entry)} never reaches Open WebUI (401, as {type: file, id: f-bob} is)`, async () => {
      const before = completions();
      const res = await complete({ files: [entry] });
      expect(res.status).to.equal(401);
      expect(completions()).to.equal(before);
    });

  for (const entry of [{ type: 'collection', id: 'k-bob' }, { type: 'file', id: 'f-bob' }, { collection_name: 'file-f-bob' }])
    it(`a direct model_item whose meta.knowledge holds ${JSON.stringify(entry)} never reaches Open WebUI`, async () => {
      const before = completions();
      const res = await complete({
        params: { function_calling: 'legacy' },
        files: [],
        model_item: { id: 'gpt-test', direct: true, info: { meta: { knowledge: [entry] } } },
      });
      expect(res.status).to.equal(401);
      expect(completions()).to.equal(before);
    });

  it('the admin\u2019s own collections, memories, web searches and knowledge still go through', async () => {
    const before = completions();
    const res = await complete({
      files: [
        { type: 'text', collection_name: 'file-f-admin' },
        { type: 'text', collection_name: 'k-admin' },
        { type: 'text', collection_name: 'user-memory-u-admin' },
        { type: 'web_search', collection_name: 'web-search-u-admin-0123abcd' },
        { type: 'text', content: 'pasted text names nothing' },
      ],
      model_item: { id: 'gpt-test', direct: true, info: { meta: { knowledge: [{ type: 'collection', id: 'k-admin' }] } } },
    });
    expect(res.status, await res.text()).to.equal(200);
    expect(completions()).to.equal(before + 1);
  });
});
