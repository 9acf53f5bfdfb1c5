// The route table over real sockets: the gateway in front of the Open WebUI stand-in set the way the
// upstream ships (every admin flag true, so the upstream hands an admin everything), with both
// values of CHATUI_BYPASS_ADMIN_ACCESS_CONTROL. What an admin sees through the route table's
// classes: another user's note, private channel message, DM, rated chat, memory, knowledge base
// and folder never reach them; their own content and content shared with them still work; an
// admin cannot change another user's email or password; every refusal is audited with its rule.
import { expect } from 'chai';
import { startOpenWebUI, type OpenWebUIStandIn, type StandInChat } from '../../sandbox/open-webui/stand-in.js';
import { emptyWorkspace, grant, type Workspace } from '../../sandbox/open-webui/workspace.js';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';

const users = [
  { id: 'u-admin', email: 'sysadmin@platform.test', name: 'Sys Admin', role: 'admin' as const, groups: ['tenant-a'] },
  { id: 'u-alice', email: 'alice@acme.test', name: 'Alice', role: 'user' as const, groups: ['tenant-a'] },
  { id: 'u-bob', email: 'bob@globex.test', name: 'Bob', role: 'user' as const, groups: ['tenant-b'] },
  // the platform superuser: an admin in every tenant group (spec A5)
  { id: 'u-super', email: 'superuser@platform.test', name: 'Super', role: 'admin' as const, groups: ['tenant-a', 'tenant-b'] },
];
const SECRET = 'GLOBEX-SECRET';
const now = Math.floor(Date.now() / 1000);

function seed(): Workspace {
  const ws = emptyWorkspace();
  const put = (kind: keyof Workspace['objects'], o: Record<string, unknown> & { id: string; user_id: string }) =>
    ws.objects[kind].set(o.id, { created_at: now, updated_at: now, ...o });
  put('note', { id: 'n-bob', user_id: 'u-bob', title: `${SECRET} note`, data: { content: { md: SECRET } }, access_grants: [] });
  put('note', { id: 'n-shared', user_id: 'u-bob', title: 'shared with the admin', data: {}, access_grants: [grant('note', 'n-shared', 'user:u-admin')] });
  put('note', { id: 'n-group', user_id: 'u-alice', title: 'tenant-a note', data: {}, access_grants: [grant('note', 'n-group', 'group:tenant-a')] });
  put('note', { id: 'n-admin', user_id: 'u-admin', title: 'own note', data: {}, access_grants: [] });
  put('note', {
    id: 'n-bob-to-alice',
    user_id: 'u-bob',
    title: 'read-only for alice',
    data: {},
    access_grants: [grant('note', 'n-bob-to-alice', 'user:u-alice')],
  });
  put('folder', { id: 'fo-bob', user_id: 'u-bob', name: 'globex', access_grants: [] });
  put('knowledge', { id: 'k-bob', user_id: 'u-bob', name: 'globex kb', content: SECRET, access_grants: [] });
  put('knowledge', {
    id: 'k-tenant-b',
    user_id: 'u-bob',
    name: 'tenant-b kb',
    content: SECRET,
    access_grants: [grant('knowledge', 'k-tenant-b', 'group:tenant-b')],
  });
  put('knowledge', {
    id: 'k-tenant-a',
    user_id: 'u-alice',
    name: 'tenant-a kb',
    content: 'acme',
    access_grants: [grant('knowledge', 'k-tenant-a', 'group:tenant-a')],
  });
  put('knowledge', { id: 'k-admin', user_id: 'u-admin', name: 'own kb', content: 'mine', access_grants: [] });
  put('channel', { id: 'ch-bob', user_id: 'u-bob', type: null, name: 'globex-private', access_grants: [] });
  put('channel', { id: 'ch-dm', user_id: 'u-bob', type: 'dm', name: '', access_grants: [] });
  ws.members.set('ch-dm', new Set(['u-bob', 'u-alice']));
  ws.messages.push({ id: 'msg-1', channel_id: 'ch-bob', user_id: 'u-bob', content: `${SECRET} channel`, created_at: now });
  ws.messages.push({ id: 'msg-2', channel_id: 'ch-dm', user_id: 'u-bob', content: `${SECRET} dm`, created_at: now });
  put('feedback', {
    id: 'fb-bob',
    user_id: 'u-bob',
    type: 'rating',
    data: { rating: 1, model_id: 'm-tenant-a', sibling_model_ids: ['m-admin'], tags: [`${SECRET}-rating-tag`, 'shared-word'] },
    snapshot: { chat: { title: 'rated', chat: { messages: [{ content: SECRET }] } } },
  });
  put('feedback', {
    id: 'fb-admin',
    user_id: 'u-admin',
    type: 'rating',
    data: { rating: -1, model_id: 'm-tenant-a', sibling_model_ids: ['m-admin'], tags: ['shared-word', 'admin-rating-tag'] },
    snapshot: { chat: {} },
  });
  // bob rates his own private model: its history of wins and losses names no text, but tells it exists and is used
  put('feedback', { id: 'fb-bob-private', user_id: 'u-bob', type: 'rating', data: { rating: 1, model_id: 'm-bob', sibling_model_ids: [] }, snapshot: {} });
  put('memory', { id: 'm-bob', user_id: 'u-bob', content: `${SECRET} memory` });
  put('model', { id: 'arena-model', user_id: '', arena: true, name: 'Arena Model', info: { meta: { access_grants: [] } } });
  put('model', {
    id: 'm-admin',
    user_id: '',
    name: 'own model',
    base_model_id: 'gpt-base',
    meta: { tags: [{ name: 'admin-model-tag' }] },
    info: { user_id: 'u-admin', access_grants: [] },
  });
  put('model', {
    id: 'm-bob',
    user_id: '',
    name: 'bob private model',
    base_model_id: 'gpt-base',
    meta: { tags: [{ name: `${SECRET}-model-tag` }] },
    info: { user_id: 'u-bob', access_grants: [] },
  });
  put('prompt', { id: 'p-bob', user_id: 'u-bob', command: '/bob', name: 'bob prompt', content: SECRET, tags: [`${SECRET}-prompt-tag`], access_grants: [] });
  put('prompt', { id: 'p-admin', user_id: 'u-admin', command: '/mine', name: 'own prompt', content: 'mine', tags: ['admin-prompt-tag'], access_grants: [] });
  put('prompt', {
    id: 'p-tenant-a',
    user_id: 'u-alice',
    command: '/acme',
    name: 'acme prompt',
    content: 'acme',
    tags: ['acme-prompt-tag'],
    access_grants: [grant('prompt', 'p-tenant-a', 'group:tenant-a')],
  });
  put('model', {
    id: 'm-tenant-a',
    user_id: '',
    name: 'tenant-a model',
    base_model_id: 'gpt-base',
    meta: { tags: [{ name: 'tenant-a-model-tag' }] },
    info: { user_id: 'u-provisioner', access_grants: [grant('model', 'm-tenant-a', 'group:tenant-a')] },
  });
  put('model', {
    id: 'm-tenant-b',
    user_id: '',
    name: 'tenant-b model',
    info: { user_id: 'u-provisioner', access_grants: [grant('model', 'm-tenant-b', 'group:tenant-b')] },
  });
  put('model', { id: 'gpt-base', user_id: '', name: 'base connection model' });
  // a provider's model whose id holds a slash (OpenRouter's `org/model`, Ollama's `hf.co/...`)
  put('model', { id: 'org/slashed', user_id: '', name: 'a provider model named org/model' });
  ws.settings.set('u-bob', { ui: { system: `${SECRET} system prompt` } });
  return ws;
}

const chats: StandInChat[] = users.map((u) => ({
  id: `c-${u.id}`,
  user_id: u.id,
  title: `chat of ${u.name}`,
  chat: { messages: [{ role: 'user', content: u.id === 'u-bob' ? SECRET : 'own words' }] },
  created_at: now,
  updated_at: now,
  share_id: null,
  archived: false,
  pinned: false,
  meta: {},
  folder_id: u.id === 'u-bob' ? 'fo-bob' : null,
}));
// chats that used the model m-tenant-a, filed under tags by their owners
const taggedChat = (id: string, user_id: string, tags: string[]) => ({
  ...chats[0]!,
  id,
  user_id,
  title: id,
  // as the front-end stores a chat: a history of linked messages and the current one
  chat: {
    history: {
      currentId: 'a',
      messages: {
        q: { role: 'user', content: 'q', parentId: null, timestamp: now },
        a: { role: 'assistant', model: 'm-tenant-a', content: 'a', parentId: 'q', timestamp: now },
      },
    },
  },
  meta: { tags },
  folder_id: null,
});
// and one that used bob's private model
chats.push({
  ...taggedChat('c-bob-private-model', 'u-bob', []),
  chat: { messages: [{ role: 'assistant', model: 'm-bob', content: 'a' }] },
});
chats.push(
  taggedChat('c-bob-tagged-1', 'u-bob', [`${SECRET}-divorce`, 'work']),
  taggedChat('c-bob-tagged-2', 'u-bob', [`${SECRET}-divorce`, 'work']),
  taggedChat('c-admin-tagged', 'u-admin', ['work', 'admin-chat-tag']),
);

describe('admin route table against the stand-in upstream', function () {
  let upstream: OpenWebUIStandIn;
  let adminKey: string;
  let aliceKey: string;
  let superKey: string;

  before(async () => {
    upstream = await startOpenWebUI({ users, chats, groups: ['tenant-a', 'tenant-b'], workspace: seed() });
    adminKey = upstream.apiKeyFor('u-admin');
    superKey = upstream.apiKeyFor('u-super');
    aliceKey = upstream.apiKeyFor('u-alice');
  });
  after(() => upstream.close());

  const reached = (method: string, fragment: string) => upstream.requests.filter((r) => r.method === method && r.url.includes(fragment)).length;

  for (const bypass of [false, true]) {
    describe(`CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=${bypass}`, () => {
      let gw: RunningGateway;
      before(async () => {
        gw = await startGateway(baseEnv(upstream.url, { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: String(bypass), ALLOW_UPSTREAM_API_KEYS: 'true' }));
      });
      after(() => gw.close());

      const call = (method: string, path: string, key: string, body?: unknown) =>
        fetch(gw.url + path, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      const text = async (res: Response) => res.text();
      /** the answer holds nothing of bob's content */
      const clean = async (res: Response) => expect(await text(res)).to.not.include(SECRET);
      const denied = (rulePart: string) =>
        gw.obs.lines.filter(
          (l) =>
            (l.event === 'admin-access-denied' || l.event === 'policy-denied' || l.event === 'admin-chat-access-denied') && String(l.rule).includes(rulePart),
        );

      it(
        bypass ? 'notes: by id as Open WebUI answers' : 'notes: another user\u2019s note is refused and audited; own, user-shared and group-shared notes work',
        async () => {
          const foreign = await call('GET', '/api/v1/notes/n-bob', adminKey);
          if (bypass) {
            expect(foreign.status).to.equal(200);
            return;
          }
          expect(foreign.status).to.equal(403);
          await clean(foreign);
          expect(denied('by-id-read GET /api/v1/notes/{id}')).to.have.length.greaterThan(0);
          for (const id of ['n-admin', 'n-shared', 'n-group']) expect((await call('GET', `/api/v1/notes/${id}`, adminKey)).status, id).to.equal(200);
          // case and trailing slash do not get around it
          expect((await call('GET', '/API/V1/NOTES/n-bob/', adminKey)).status).to.equal(403);
        },
      );

      it(bypass ? 'notes: writes pass' : 'notes: a write on another user\u2019s note never reaches Open WebUI; a write on one\u2019s own works', async () => {
        const before = reached('POST', '/notes/n-bob/update');
        const res = await call('POST', '/api/v1/notes/n-bob/update', adminKey, { title: 'taken' });
        if (bypass) return expect(res.status).to.equal(200);
        expect(res.status).to.equal(403);
        expect(reached('POST', '/notes/n-bob/update')).to.equal(before);
        expect(upstream.workspace.objects.note.get('n-bob')!.title).to.include(SECRET);
        expect((await call('POST', '/api/v1/notes/n-admin/update', adminKey, { title: 'renamed' })).status).to.equal(200);
        // read-only share: no write
        expect((await call('POST', '/api/v1/notes/n-shared/update', adminKey, { title: 'x' })).status).to.equal(403);
      });

      it(bypass ? 'note search: everything Open WebUI lists' : 'note search: only own and shared notes', async () => {
        const res = await call('GET', '/api/v1/notes/search', adminKey);
        expect(res.status).to.equal(200);
        const body = JSON.parse(await text(res));
        const ids = body.items.map((n: { id: string }) => n.id);
        if (bypass) return expect(ids).to.include('n-bob');
        expect(ids).to.have.members(['n-admin', 'n-shared', 'n-group']);
        expect(body.total).to.equal(3);
        expect(res.headers.get('cache-control')).to.equal('private, no-store');
      });

      it('note search of a plain user passes as Open WebUI 0.12.4 answers it: a read-only share shows with permission=read only', async () => {
        // Notes.search_notes filters on `permission`, 'write' when the query does not name it (seen on the real app)
        const search = async (q: string) =>
          JSON.parse(await text(await call('GET', `/api/v1/notes/search${q}`, aliceKey))).items.map((n: { id: string }) => n.id);
        expect(await search('')).to.have.members(['n-group']);
        expect(await search('?permission=read')).to.have.members(['n-group', 'n-bob-to-alice']);
      });

      it(
        bypass
          ? 'folders: another user\u2019s folder passes; its chats and a self-granted folder grant are refused (ENABLE_ADMIN_CHAT_ACCESS fixed false)'
          : 'folders: another user\u2019s folder, its chats and a self-granted folder grant are refused',
        async () => {
          const folder = await call('GET', '/api/v1/folders/fo-bob', adminKey);
          const shared = await call('GET', '/api/v1/folders/fo-bob/shared/chats', adminKey);
          expect([folder.status, shared.status]).to.deep.equal([bypass ? 200 : 403, 403]);
          await clean(folder);
          await clean(shared);
          const before = reached('POST', '/folders/fo-bob/access/update');
          const grantSelf = await call('POST', '/api/v1/folders/fo-bob/access/update', adminKey, {
            access_grants: [{ principal_type: 'user', principal_id: 'u-admin', permission: 'read' }],
          });
          expect(grantSelf.status).to.equal(403);
          expect(reached('POST', '/folders/fo-bob/access/update')).to.equal(before);
          expect(upstream.workspace.objects.folder.get('fo-bob')!.access_grants).to.deep.equal([]);
        },
      );

      it('a chat in another user\u2019s folder stays closed with either switch (ENABLE_ADMIN_CHAT_ACCESS fixed false)', async () => {
        const res = await call('GET', '/api/v1/chats/c-u-bob', adminKey);
        expect(res.status).to.equal(401);
        await clean(res);
      });

      it(
        bypass ? 'knowledge passes' : 'knowledge: the list holds own and group-granted bases; another tenant\u2019s base and its export are refused',
        async () => {
          const list = JSON.parse(await text(await call('GET', '/api/v1/knowledge/', adminKey)));
          const ids = list.items.map((k: { id: string }) => k.id);
          if (bypass) return expect(ids).to.include.members(['k-bob', 'k-tenant-b']);
          expect(ids).to.have.members(['k-admin', 'k-tenant-a']);
          expect(list.total).to.equal(2);
          expect((await call('GET', '/api/v1/knowledge/k-tenant-a', adminKey)).status).to.equal(200);
          for (const p of ['/api/v1/knowledge/k-bob', '/api/v1/knowledge/k-bob/export', '/api/v1/knowledge/k-tenant-b/export']) {
            const res = await call('GET', p, adminKey);
            expect(res.status, p).to.equal(403);
            await clean(res);
          }
        },
      );

      it(
        bypass
          ? 'channels pass as Open WebUI answers'
          : 'channels: a private channel\u2019s messages and a DM are refused, joining a DM never reaches Open WebUI',
        async () => {
          const priv = await call('GET', '/api/v1/channels/ch-bob/messages', adminKey);
          if (bypass) return expect(priv.status).to.equal(200);
          expect(priv.status).to.equal(403);
          await clean(priv);
          const before = reached('POST', '/channels/ch-dm/update/members/add');
          const join = await call('POST', '/api/v1/channels/ch-dm/update/members/add', adminKey, { user_ids: ['u-admin'] });
          expect(join.status).to.equal(403);
          expect(reached('POST', '/channels/ch-dm/update/members/add')).to.equal(before);
          expect([...upstream.workspace.members.get('ch-dm')!]).to.not.include('u-admin');
          const dm = await call('GET', '/api/v1/channels/ch-dm/messages', adminKey);
          expect(dm.status).to.equal(403);
          await clean(dm);
          expect(denied('by-id-write POST /api/v1/channels/{id}/update/members/add')).to.have.length.greaterThan(0);
        },
      );

      it(
        bypass
          ? 'feedback: the list passes; the export holds only the admin\u2019s own and another user\u2019s rated chat by id is refused (ENABLE_ADMIN_CHAT_ACCESS fixed false)'
          : 'feedback: the export and the list hold only the admin\u2019s own; another user\u2019s rated chat by id is refused',
        async () => {
          const exp = await call('GET', '/api/v1/evaluations/feedbacks/all/export', adminKey);
          expect(exp.status).to.equal(200);
          const body = await text(exp);
          expect(body).to.not.include(SECRET);
          expect(JSON.parse(body).map((f: { id: string }) => f.id)).to.deep.equal(['fb-admin']);
          const list = JSON.parse(await text(await call('GET', '/api/v1/evaluations/feedbacks/list', adminKey)));
          const listed = list.items.map((f: { id: string }) => f.id);
          // the list names ratings, not the rated chats: Open WebUI's own with the bypass on
          if (bypass) expect(listed).to.include.members(['fb-bob', 'fb-admin']);
          else expect(listed).to.deep.equal(['fb-admin']);
          const one = await call('GET', '/api/v1/evaluations/feedback/fb-bob', adminKey);
          expect(one.status).to.equal(403);
          await clean(one);
          if (bypass) return;
          expect(list.total).to.equal(1);
        },
      );

      it(
        bypass
          ? 'memories pass; message analytics, a chat\u2019s messages, is refused (ENABLE_ADMIN_CHAT_ACCESS fixed false)'
          : 'memories and message analytics: refused before Open WebUI',
        async () => {
          const before = reached('POST', '/retrieval/query/collection');
          const analyticsBefore = reached('GET', '/analytics/messages');
          const mem = await call('POST', '/api/v1/retrieval/query/collection', adminKey, { collection_names: ['user-memory-u-bob'], query: 'x' });
          const ana = await call('GET', '/api/v1/analytics/messages?chat_id=c-u-bob', adminKey);
          expect([mem.status, ana.status]).to.deep.equal([bypass ? 200 : 403, 403]);
          expect(reached('GET', '/analytics/messages')).to.equal(analyticsBefore);
          if (bypass) return;
          await clean(mem);
          await clean(ana);
          expect(reached('POST', '/retrieval/query/collection')).to.equal(before);
          expect(denied('refused POST /api/v1/retrieval/query/collection')).to.have.length.greaterThan(0);
        },
      );

      it(
        bypass
          ? 'A2: the model list is Open WebUI\u2019s'
          : 'A4, A5: the model list holds own and tenant-granted models; the arena, base and other tenants\u2019 models are absent',
        async () => {
          const res = await call('GET', '/api/models', adminKey);
          expect(res.status).to.equal(200);
          const ids = JSON.parse(await text(res)).data.map((m: { id: string }) => m.id);
          if (bypass) return expect(ids).to.include.members(['arena-model', 'm-tenant-b']);
          expect(ids).to.have.members(['m-admin', 'm-tenant-a']);
        },
      );

      it(
        bypass
          ? 'tags: model, prompt, chat and rating tags as Open WebUI answers'
          : 'tags: only those of the admin\u2019s own chats and ratings and of models and prompts they may read; the overview and leaderboard keep their counts',
        async () => {
          const models = JSON.parse(await text(await call('GET', '/api/v1/models/tags', adminKey))) as string[];
          const prompts = JSON.parse(await text(await call('GET', '/api/v1/prompts/tags', adminKey))) as string[];
          const overviewRes = await call('GET', '/api/v1/analytics/models/m-tenant-a/overview?days=3', adminKey);
          expect(overviewRes.status).to.equal(200);
          const overview = JSON.parse(await text(overviewRes)) as { history: unknown[]; tags: Array<{ tag: string; count: number }> };
          expect(overview.history).to.have.length(4);
          if (bypass) {
            expect(models).to.include(`${SECRET}-model-tag`);
            expect(prompts).to.include(`${SECRET}-prompt-tag`);
            expect(overview.tags).to.deep.include({ tag: 'work', count: 3 });
            expect(await text(await call('GET', '/api/v1/evaluations/leaderboard', adminKey))).to.include(`${SECRET}-rating-tag`);
            return;
          }
          expect(models).to.deep.equal(['admin-model-tag', 'tenant-a-model-tag']);
          expect(prompts).to.deep.equal(['acme-prompt-tag', 'admin-prompt-tag']);
          expect(overview.tags).to.have.deep.members([
            { tag: 'work', count: 1 },
            { tag: 'admin-chat-tag', count: 1 },
          ]);
          expect(JSON.stringify(overview)).to.not.include(SECRET);
          expect(gw.obs.lines.filter((l) => l.event === 'admin-names-filtered').map((l) => l.path)).to.include.members([
            '/api/v1/models/tags',
            '/api/v1/prompts/tags',
            '/api/v1/analytics/models/m-tenant-a/overview',
          ]);
          // the leaderboard: ratings as Open WebUI counts them, tags of the admin's own ratings only; its query is refused
          const board = JSON.parse(await text(await call('GET', '/api/v1/evaluations/leaderboard', adminKey))) as {
            entries: Array<{ model_id: string; won: number; lost: number; top_tags: Array<{ tag: string; count: number }> }>;
          };
          expect(board.entries.find((e) => e.model_id === 'm-tenant-a')).to.deep.include({
            won: 1,
            lost: 1,
            top_tags: [
              { tag: 'shared-word', count: 1 },
              { tag: 'admin-rating-tag', count: 1 },
            ],
          });
          expect(JSON.stringify(board)).to.not.include(SECRET);
          const before = reached('GET', '/evaluations/leaderboard');
          expect((await call('GET', '/api/v1/evaluations/leaderboard?query=divorce', adminKey)).status).to.equal(403);
          expect(reached('GET', '/evaluations/leaderboard')).to.equal(before);
          // a plain user gets Open WebUI's own answer (their readable objects only)
          expect(JSON.parse(await text(await call('GET', '/api/v1/prompts/tags', aliceKey)))).to.deep.equal(['acme-prompt-tag']);
        },
      );

      it(
        bypass
          ? 'model ids: usage counts name every model, as Open WebUI answers'
          : 'model ids: usage counts name the models the admin may see only; another user\u2019s private model is dropped with its counts',
        async () => {
          const get = async (path: string) => {
            const res = await call('GET', path, adminKey);
            expect(res.status, path).to.equal(200);
            return JSON.parse(await text(res)) as Record<string, unknown>;
          };
          const analytics = (await get('/api/v1/analytics/models')) as { models: Array<{ model_id: string }> };
          const tokens = (await get('/api/v1/analytics/tokens')) as { models: Array<{ model_id: string }> };
          const daily = (await get('/api/v1/analytics/daily')) as { data: Array<{ models: Record<string, number> }> };
          const rated = (await get('/api/v1/evaluations/feedbacks/models')) as unknown as string[];
          const board = (await get('/api/v1/evaluations/leaderboard')) as { entries: Array<{ model_id: string }> };
          const named = {
            analytics: analytics.models.map((m) => m.model_id),
            tokens: tokens.models.map((m) => m.model_id),
            daily: Object.keys(daily.data[0]!.models),
            board: board.entries.map((e) => e.model_id),
          };
          if (bypass) {
            for (const ids of Object.values(named)) expect(ids).to.include('m-tenant-a');
            expect(named.analytics).to.include('m-bob');
            return;
          }
          for (const [what, ids] of Object.entries(named)) {
            expect(ids, what).to.include('m-tenant-a');
            expect(ids, what).to.not.include('m-bob');
          }
          // m-admin is the admin's own; ratings of models nobody may see are gone too
          expect(rated).to.deep.equal(['m-tenant-a']);
          expect(gw.obs.lines.some((l) => l.event === 'admin-names-filtered' && l.path === '/api/v1/analytics/models')).to.equal(true);
        },
      );

      it(
        bypass
          ? 'one model\u2019s counts: any model id is answered, as Open WebUI answers it'
          : 'one model\u2019s counts (overview, wins and losses, its ratings list) only for a model the admin may see: a guessed private id gets the same refusal as an id that names nothing',
        async () => {
          const history = (id: string) => call('GET', `/api/v1/evaluations/leaderboard/${encodeURIComponent(id)}/history?days=7`, adminKey);
          const overview = (id: string) => call('GET', `/api/v1/analytics/models/${encodeURIComponent(id)}/overview?days=7`, adminKey);
          const wins = async (res: Response) => (JSON.parse(await text(res)) as { history: Array<{ won: number }> }).history.reduce((n, d) => n + d.won, 0);
          // the front-end asks for a model whose id holds a slash percent-encoded, as Starlette reads it
          for (const res of [await history('org/slashed'), await overview('org/slashed')]) expect(res.status, 'org%2Fslashed').to.equal(200);
          expect((JSON.parse(await text(await history('org/slashed'))) as { model_id: string }).model_id).to.equal('org/slashed');
          const bobs = await history('m-bob');
          if (bypass) {
            expect(bobs.status).to.equal(200);
            expect(await wins(bobs), 'bob\u2019s rating of his private model').to.equal(1);
            const listed = await call('GET', '/api/v1/evaluations/feedbacks/list?model_id=m-bob', adminKey);
            expect((JSON.parse(await text(listed)) as { total: number }).total).to.equal(1);
            return;
          }
          const ratings = (search: string) => call('GET', `/api/v1/evaluations/feedbacks/list${search}`, adminKey);
          const seen = { history: reached('GET', '/history'), overview: reached('GET', '/overview'), ratings: reached('GET', '/feedbacks/list') };
          const refusals = [
            bobs,
            await history('m-nothing'),
            await overview('m-bob'),
            await overview('m-nothing'),
            // the ratings list's `total` counts every user's ratings of the model its query names
            await ratings('?model_id=m-bob&page=9'),
            await ratings('?model_id=m-nothing'),
            await ratings('?model_id=m-tenant-a&model_id=m-bob'),
          ];
          for (const res of refusals) {
            expect(res.status).to.equal(403);
            expect(JSON.parse(await text(res))).to.deep.equal({ detail: 'Admins reach only their own content and content shared with them on this platform' });
          }
          expect(
            { history: reached('GET', '/history'), overview: reached('GET', '/overview'), ratings: reached('GET', '/feedbacks/list') },
            'never asked of the upstream',
          ).to.deep.equal(seen);
          expect(denied('not a model the admin may see').map((l) => l.path)).to.include.members([
            '/api/v1/evaluations/leaderboard/m-bob/history',
            '/api/v1/analytics/models/m-nothing/overview',
          ]);
          // a model shared with the admin's tenant, the admin's own, a connection's: answered
          const shared = await history('m-tenant-a');
          expect(shared.status).to.equal(200);
          expect(
            (JSON.parse(await text(shared)) as { history: Array<{ won: number; lost: number }> }).history.reduce((n, d) => n + d.won + d.lost, 0),
          ).to.equal(2);
          for (const id of ['m-admin', 'gpt-base']) expect((await history(id)).status, id).to.equal(200);
          const ofShared = await ratings('?model_id=m-tenant-a');
          expect(ofShared.status).to.equal(200);
          expect((JSON.parse(await text(ofShared)) as { items: Array<{ id: string }> }).items.map((f) => f.id)).to.deep.equal(['fb-admin']);
          expect((await ratings('')).status, 'every model\u2019s ratings, the admin\u2019s own listed').to.equal(200);
          expect((await call('GET', '/api/v1/evaluations/leaderboard/m-bob/history', aliceKey)).status, 'a plain user: Open WebUI\u2019s own answer').to.equal(
            401,
          );
        },
      );

      it('A5: the superuser in every tenant group loses no tenant\u2019s models or knowledge', async () => {
        const models = JSON.parse(await text(await call('GET', '/api/models', superKey))).data.map((m: { id: string }) => m.id);
        expect(models).to.include.members(['m-tenant-a', 'm-tenant-b']);
        const kbs = JSON.parse(await text(await call('GET', '/api/v1/knowledge/', superKey))).items.map((k: { id: string }) => k.id);
        expect(kbs).to.include.members(['k-tenant-a', 'k-tenant-b']);
        expect((await call('GET', '/api/v1/knowledge/k-tenant-b/export', superKey)).status).to.equal(200);
        if (!bypass) expect(models).to.not.include('arena-model');
      });

      it(bypass ? 'account updates pass' : 'an admin cannot change another user\u2019s email or password; their own account works', async () => {
        const before = reached('POST', '/users/u-bob/update');
        const res = await call('POST', '/api/v1/users/u-bob/update', adminKey, { email: 'taken@platform.test', password: 'x', name: 'Bob', role: 'user' });
        if (bypass) {
          expect(res.status).to.equal(200);
          upstream.users.get('u-bob')!.email = 'bob@globex.test';
          return;
        }
        expect(res.status).to.equal(403);
        expect(reached('POST', '/users/u-bob/update')).to.equal(before);
        expect(upstream.users.get('u-bob')!.email).to.equal('bob@globex.test');
        expect(
          (await call('POST', '/api/v1/users/u-admin/update', adminKey, { name: 'Sys Admin', email: 'sysadmin@platform.test', role: 'admin' })).status,
        ).to.equal(200);
        expect((await call('POST', '/api/v1/users/u-admin/update', adminKey, { name: 'Sys Admin' })).status).to.equal(200);
        expect(denied('account POST /api/v1/users/{user_id}/update')).to.have.length.greaterThan(0);
        // nor give their OWN account another email: whoever signs in with it next would get the account
        const own = reached('POST', '/users/u-admin/update');
        const moved = await call('POST', '/api/v1/users/u-admin/update', adminKey, { name: 'Sys Admin', email: 'newhire@acme.test' });
        expect(moved.status).to.equal(403);
        expect(reached('POST', '/users/u-admin/update')).to.equal(own);
        expect(upstream.users.get('u-admin')!.email).to.equal('sysadmin@platform.test');
        expect(denied('the email stays the realm')).to.have.length.greaterThan(0);
      });

      it(
        bypass ? 'adding an account passes' : 'an admin cannot add an account (its answer holds the new account\u2019s token); it never reaches Open WebUI',
        async () => {
          const before = reached('POST', '/auths/add');
          const res = await call('POST', '/api/v1/auths/add', adminKey, {
            name: 'New Hire',
            email: 'newhire@acme.test',
            password: 'Str0ng-Passw0rd!',
            role: 'user',
          });
          if (bypass) {
            expect(res.status, await res.text()).to.equal(200);
            expect(reached('POST', '/auths/add')).to.equal(before + 1);
            const added = [...upstream.users.values()].find((u) => u.email === 'newhire@acme.test');
            expect(added?.role).to.equal('user');
            upstream.users.delete(added!.id);
            return;
          }
          expect(res.status).to.equal(403);
          expect(reached('POST', '/auths/add')).to.equal(before);
          expect(denied('refused POST /api/v1/auths/add')).to.have.length.greaterThan(0);
        },
      );

      it(bypass ? 'user records come as Open WebUI answers' : 'user management works without other users\u2019 own settings and info', async () => {
        const list = await call('GET', '/api/v1/users/', adminKey);
        const one = await call('GET', '/api/v1/users/u-bob', adminKey);
        expect([list.status, one.status]).to.deep.equal([200, 200]);
        const [listText, oneText] = [await text(list), await text(one)];
        if (bypass) return expect(listText).to.include(SECRET);
        for (const t of [listText, oneText]) expect(t).to.not.include(SECRET);
        const users = JSON.parse(listText).users;
        expect(users.map((u: { id: string }) => u.id)).to.include.members(['u-admin', 'u-alice', 'u-bob']);
        expect(users.every((u: object) => !('settings' in u) && !('info' in u))).to.equal(true);
        expect(JSON.parse(oneText)).to.include({ id: 'u-bob', email: 'bob@globex.test' });
      });

      it(
        bypass
          ? 'a user\u2019s access preview comes as Open WebUI answers'
          : 'a user\u2019s access preview keeps the user and their groups, not the names of their private knowledge bases, models and tools',
        async () => {
          // users.py get_user_preview lists ids and names of what the user reaches (seen leaking on the real 0.12.4)
          const res = await call('GET', '/api/v1/users/u-bob/preview', adminKey);
          expect(res.status).to.equal(200);
          const body = JSON.parse(await text(res));
          if (bypass) return expect(body.knowledge.items.map((k: { name: string }) => k.name)).to.include('globex kb');
          // the lists kept in the shape the front-end reads (preview.knowledge.items), empty
          const none = { items: [], total: 0 };
          expect(body).to.deep.equal({
            user: { id: 'u-bob', name: 'Bob' },
            groups: [{ id: 'tenant-b', name: 'tenant-b' }],
            models: none,
            knowledge: none,
            tools: none,
          });
          expect(res.headers.get('cache-control')).to.equal('private, no-store');
        },
      );

      it('a completion naming another user\u2019s chat never reaches Open WebUI (either switch); one\u2019s own and unsaved chats work', async () => {
        const before = reached('POST', '/api/chat/completions');
        const foreign = await call('POST', '/api/chat/completions', adminKey, {
          model: 'm-admin',
          stream: false,
          chat_id: 'c-u-bob',
          messages: [{ role: 'user', content: 'hi' }],
        });
        expect(foreign.status).to.equal(401);
        expect(reached('POST', '/api/chat/completions')).to.equal(before);
        for (const chatId of ['c-u-admin', 'local:abc', undefined]) {
          const res = await call('POST', '/api/chat/completions', adminKey, {
            model: 'm-admin',
            stream: false,
            chat_id: chatId,
            messages: [{ role: 'user', content: 'hi' }],
          });
          expect(res.status, String(chatId)).to.equal(200);
          expect(JSON.parse(await text(res)).choices[0].message.content).to.include('token0');
        }
        expect(reached('POST', '/api/chat/completions')).to.equal(before + 3);
      });

      it(bypass ? 'unknown routes pass' : 'a route Open WebUI 0.12.4 does not have is refused for admins (fail closed), passed for users', async () => {
        const admin = await call('GET', '/api/v1/notes/n-bob/some-future-route', adminKey);
        const user = await call('GET', '/api/v1/notes/n-bob/some-future-route', aliceKey);
        expect(admin.status).to.equal(bypass ? 404 : 403);
        expect(user.status).to.equal(404); // forwarded; the stand-in has no such route
        if (!bypass) expect(denied('unknown route')).to.have.length.greaterThan(0);
      });

      if (!bypass)
        it('an id that names no object is answered 404, as Open WebUI answers it: not refused, no audit warning; another user\u2019s object stays refused and audited', async () => {
          const from = gw.obs.lines.length;
          // what the front-end asks on every home page load while no model is chosen
          const image = await call('GET', '/api/v1/models/model/profile/image?id=undefined', adminKey);
          expect(image.status).to.equal(404);
          expect(((await image.json()) as { detail: string }).detail).to.equal("We could not find what you're looking for :/");
          expect((await call('GET', '/api/v1/notes/no-such-note', adminKey)).status).to.equal(404);
          const writes = reached('POST', '/notes/no-such-note/update');
          expect((await call('POST', '/api/v1/notes/no-such-note/update', adminKey, { title: 'x' })).status).to.equal(404);
          expect(reached('POST', '/notes/no-such-note/update'), 'a write is still never forwarded on a guess').to.equal(writes);
          expect(gw.obs.lines.slice(from).filter((l) => Number(l.level) >= 40)).to.deep.equal([]);
          const foreign = await call('GET', '/api/v1/notes/n-bob', adminKey);
          expect(foreign.status).to.equal(403);
          const warned = gw.obs.lines.slice(from).filter((l) => Number(l.level) >= 40);
          expect(warned.map((l) => [l.event, l.path])).to.deep.equal([['admin-access-denied', '/api/v1/notes/n-bob']]);
        });

      it('an admin who opens another user\u2019s chat link gets a page saying why, audited (either switch); their own chat\u2019s page opens', async () => {
        const page = (path: string, key: string, lang = 'en') =>
          fetch(gw.url + path, { headers: { authorization: `Bearer ${key}`, accept: 'text/html', 'accept-language': lang } });
        const from = gw.obs.lines.length;
        const forwarded = reached('GET', '/c/c-bob-tagged-1');
        const foreign = await page('/c/c-bob-tagged-1', adminKey);
        expect(foreign.status).to.equal(403);
        expect(foreign.headers.get('content-type')).to.equal('text/html; charset=utf-8');
        expect(foreign.headers.get('content-security-policy')).to.include("default-src 'none'");
        const html = await foreign.text();
        expect(html).to.include('This chat cannot be opened').and.include('administrators open only their own chats');
        expect(html).to.include('href="/"').and.not.include('c-bob-tagged-1').and.not.include(SECRET);
        expect(reached('GET', '/c/c-bob-tagged-1'), 'the page never comes from Open WebUI').to.equal(forwarded);
        const warned = gw.obs.lines.slice(from).filter((l) => Number(l.level) >= 40);
        expect(warned.map((l) => [l.event, l.path])).to.deep.equal([['admin-chat-access-denied', '/c/c-bob-tagged-1']]);
        // in the languages of the gateway's pages
        const german = await (await page('/c/c-bob-tagged-1', adminKey, 'de-DE,de;q=0.9')).text();
        expect(german).to.include('<html lang="de">').and.include('Administratoren nur ihre eigenen Chats');
        // their own chat opens (Open WebUI's page), and a plain user's visit is Open WebUI's to answer
        expect((await page('/c/c-admin-tagged', adminKey)).status).to.equal(200);
        expect((await page('/c/c-bob-tagged-1', aliceKey)).status).to.equal(200);
      });

      it('a plain user is scoped by Open WebUI itself: shared notes work, another user\u2019s note is its own 403', async () => {
        expect((await call('GET', '/api/v1/notes/n-group', aliceKey)).status).to.equal(200);
        const foreign = await call('GET', '/api/v1/notes/n-bob', aliceKey);
        expect(foreign.status).to.equal(403);
        await clean(foreign);
      });
    });
  }
});
