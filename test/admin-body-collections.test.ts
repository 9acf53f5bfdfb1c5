// Objects an admin's chat completion names beyond `{type, id}` entries (found by a review of the
// body-ids change; Open WebUI 0.12.4's code cited in policies/open-webui-routes.ts):
//   - `collection_name` / `collection_names` on any files[] entry: retrieval/utils.py
//     get_sources_from_items searches the named vector collection for `text` and `web_search` items,
//     and filter_accessible_collections passes every name for role admin, so an admin's completion
//     would read another user's file (`file-<id>`), knowledge base or memories (`user-memory-<id>`);
//   - `model_item` with `direct: true`: main.py uses the client's own model definition, whose
//     `info.meta.knowledge` get_accessible_folder_files keeps whole for role admin.
// Both refused unless the admin may reach what they name; the admin's own collections still pass.
import { expect } from 'chai';
import { startOpenWebUI, type OpenWebUIStandIn, type StandInFile } from '../sandbox/open-webui.js';
import { emptyWorkspace, type Workspace } from '../sandbox/open-webui-workspace.js';
import { baseEnv, startGateway, type RunningGateway } from './support/gateway-harness.js';

const users = [
  { id: 'u-admin', email: 'sysadmin@platform.test', name: 'Sys Admin', role: 'admin' as const, groups: ['tenant-a'] },
  { id: 'u-bob', email: 'bob@globex.test', name: 'Bob', role: 'user' as const, groups: ['tenant-b'] },
];
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
  ws.objects.knowledge.set('k-bob', {
    id: 'k-bob',
    user_id: 'u-bob',
    name: 'globex kb',
    content: 'GLOBEX',
    access_grants: [],
    created_at: now,
    updated_at: now,
  });
  ws.objects.knowledge.set('k-admin', {
    id: 'k-admin',
    user_id: 'u-admin',
    name: 'own kb',
    content: 'OWN',
    access_grants: [],
    created_at: now,
    updated_at: now,
  });
  return ws;
}

describe('admin scoping: vector collections and direct models named in a chat completion', function () {
  let upstream: OpenWebUIStandIn;
  let gw: RunningGateway;
  let adminKey: string;
  before(async () => {
    upstream = await startOpenWebUI({ users, files: [file('f-bob', 'u-bob', 'GLOBEX'), file('f-admin', 'u-admin', 'OWN')], workspace: seed() });
    adminKey = upstream.apiKeyFor('u-admin');
    gw = await startGateway(baseEnv(upstream.url, { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false', ALLOW_UPSTREAM_API_KEYS: 'true' }));
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  const call = (body: Record<string, unknown>) =>
    fetch(gw.url + '/api/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', stream: false, messages: [{ role: 'user', content: 'what does it say?' }], ...body }),
    });
  const reached = () => upstream.requests.filter((r) => r.method === 'POST' && r.url.includes('/api/chat/completions')).length;

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
      const before = reached();
      const res = await call({ files: [entry] });
      expect(res.status).to.equal(401);
      expect(reached()).to.equal(before);
    });

  for (const entry of [{ type: 'collection', id: 'k-bob' }, { type: 'file', id: 'f-bob' }, { collection_name: 'file-f-bob' }])
    it(`a direct model_item whose meta.knowledge holds ${JSON.stringify(entry)} never reaches Open WebUI`, async () => {
      const before = reached();
      const res = await call({
        params: { function_calling: 'legacy' },
        files: [],
        model_item: { id: 'gpt-test', direct: true, info: { meta: { knowledge: [entry] } } },
      });
      expect(res.status).to.equal(401);
      expect(reached()).to.equal(before);
    });

  it('the admin\u2019s own collections, memories, web searches and knowledge still go through', async () => {
    const before = reached();
    const res = await call({
      files: [
        { type: 'text', collection_name: 'file-f-admin' },
        { type: 'text', collection_name: 'k-admin' },
        { type: 'text', collection_name: 'user-memory-u-admin' },
        { type: 'web_search', collection_name: 'web-search-u-admin-0123abcd' },
        { type: 'text', content: 'pasted text names nothing' },
      ],
      model_item: { id: 'gpt-test', direct: true, info: { meta: { knowledge: [{ type: 'collection', id: 'k-admin' }] } } },
    });
    expect(res.status).to.not.equal(401);
    expect(reached()).to.equal(before + 1);
  });
});
