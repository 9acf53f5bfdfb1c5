// An admin's ratings views (the ratings list, its total and ids, the export, the leaderboard's tags)
// through the gateway in front of the Open WebUI stand-in: the admin's own ratings only, ordered and
// paged as Open WebUI orders every user's, more than Open WebUI's 30 a page and more than the 1,200
// the gateway once read; the copy they come from follows the admin's own writes at once, and within
// RATINGS_QUIET_MS asks Open WebUI nothing more.
import { expect } from 'chai';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { emptyWorkspace, type Workspace } from '../../sandbox/open-webui/workspace.js';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';

const users = [
  { id: 'u-admin', email: 'sysadmin@platform.test', name: 'Sys Admin', role: 'admin' as const, groups: [] },
  { id: 'u-bob', email: 'bob@globex.test', name: 'Bob', role: 'user' as const, groups: [] },
];
const now = Math.floor(Date.now() / 1000);
const OWN = 1_300;

function seed(): Workspace {
  const ws = emptyWorkspace();
  for (let i = 0; i < OWN + 700; i++) {
    // bob's 700 among the admin's first 700, then 600 more of the admin's
    const mine = i < 1_400 ? i % 2 === 0 : true;
    const id = `fb-${String(i).padStart(5, '0')}`;
    const user_id = mine ? 'u-admin' : 'u-bob';
    const created = now - 100_000 + i;
    ws.objects.feedback.set(id, {
      id,
      user_id,
      version: 0,
      type: 'rating',
      data: { rating: i % 3 ? 1 : -1, model_id: i % 4 ? 'm-a' : 'm-b', sibling_model_ids: ['m-b'], tags: mine ? [`own-${i % 7}`] : ['GLOBEX-tag'] },
      meta: {},
      snapshot: { chat: { title: mine ? 'own chat' : 'GLOBEX chat' } },
      created_at: created,
      // some changed after they were made
      updated_at: created + (i % 5 === 0 ? 50_000 : 0),
    } as never);
  }
  ws.objects.model.set('m-a', { id: 'm-a', user_id: 'u-admin', base_model_id: 'base', name: 'a', meta: {}, access_grants: [] } as never);
  ws.objects.model.set('m-b', { id: 'm-b', user_id: 'u-admin', base_model_id: 'base', name: 'b', meta: {}, access_grants: [] } as never);
  ws.objects.model.set('m-c', { id: 'm-c', user_id: 'u-admin', base_model_id: 'base', name: 'c', meta: {}, access_grants: [] } as never);
  return ws;
}

interface Rating {
  id: string;
  user_id: string;
  created_at: number;
  updated_at: number;
  data: { model_id: string; tags: string[] };
}

describe('an admin\u2019s ratings views: their own, from a copy kept up to date', function () {
  this.timeout(30_000);
  let upstream: OpenWebUIStandIn;
  let gw: RunningGateway;
  let key: string;

  before(async () => {
    upstream = await startOpenWebUI({ users, workspace: seed() });
    key = upstream.apiKeyFor('u-admin');
    gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true', LOG_LEVEL: 'silent' }));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(gw.url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  };
  const own = () => [...upstream.workspace.objects.feedback.values()].filter((f) => f.user_id === 'u-admin') as unknown as Rating[];
  const asked = (fragment: string) => upstream.requests.filter((r) => r.url.includes(fragment)).length;

  it('the ratings list, page after page: every one of theirs, none of anyone else\u2019s, in Open WebUI\u2019s order, the total theirs', async () => {
    const listed: Rating[] = [];
    for (let page = 1; ; page++) {
      const r = await call('GET', `/api/v1/evaluations/feedbacks/list?order_by=updated_at&direction=desc&page=${page}`);
      expect(r.status).to.equal(200);
      const body = JSON.parse(r.text) as { items: Rating[]; total: number };
      expect(body.total).to.equal(OWN);
      expect(r.text).to.not.include('GLOBEX');
      listed.push(...body.items);
      if (body.items.length < 30) break;
    }
    const want = own().sort((a, b) => b.updated_at - a.updated_at || a.created_at - b.created_at);
    expect(listed.map((f) => f.id)).to.deep.equal(want.map((f) => f.id));
  });

  it('without an order: newest made first; a model\u2019s ratings only; page 0 is the first, a page that is no number is 422', async () => {
    const first = JSON.parse((await call('GET', '/api/v1/evaluations/feedbacks/list')).text) as { items: Rating[] };
    expect(first.items.map((f) => f.id)).to.deep.equal(
      own()
        .sort((a, b) => b.created_at - a.created_at)
        .slice(0, 30)
        .map((f) => f.id),
    );
    const ofB = JSON.parse((await call('GET', '/api/v1/evaluations/feedbacks/list?model_id=m-b&page=0')).text) as { items: Rating[]; total: number };
    expect(ofB.total).to.equal(own().filter((f) => f.data.model_id === 'm-b').length);
    expect(ofB.items.every((f) => f.data.model_id === 'm-b')).to.equal(true);
    expect((await call('GET', '/api/v1/evaluations/feedbacks/list?page=x')).status).to.equal(422);
  });

  it('the ids: theirs, newest change first', async () => {
    const ids = JSON.parse((await call('GET', '/api/v1/evaluations/feedbacks/all/ids')).text) as Array<{ id: string; user_id: string }>;
    expect(ids.map((i) => i.id)).to.deep.equal(
      own()
        .sort((a, b) => b.updated_at - a.updated_at || a.created_at - b.created_at)
        .map((f) => f.id),
    );
  });

  it('the export: theirs with their chats, in Open WebUI\u2019s order, none of anyone else\u2019s', async () => {
    const r = await call('GET', '/api/v1/evaluations/feedbacks/all/export');
    expect(r.status).to.equal(200);
    expect(r.text).to.not.include('GLOBEX');
    expect((JSON.parse(r.text) as Rating[]).map((f) => f.id)).to.deep.equal(own().map((f) => f.id));
  });

  it('the leaderboard\u2019s tags: counted over theirs; within the quiet time Open WebUI is not asked for their ratings again', async () => {
    const before = asked('/feedbacks/user');
    const board = JSON.parse((await call('GET', '/api/v1/evaluations/leaderboard')).text) as {
      entries: Array<{ model_id: string; top_tags: Array<{ tag: string; count: number }> }>;
    };
    const a = board.entries.find((e) => e.model_id === 'm-a')!;
    const counts = new Map<string, number>();
    for (const f of own()) if (f.data.model_id === 'm-a') for (const t of f.data.tags) counts.set(t, (counts.get(t) ?? 0) + 1);
    expect(new Map(a.top_tags.map((t) => [t.tag, t.count]))).to.deep.equal(new Map([...counts].sort((x, y) => y[1] - x[1]).slice(0, 5)));
    expect(JSON.stringify(board)).to.not.include('GLOBEX');
    expect(asked('/feedbacks/user'), 'the copy read before is used as it is').to.equal(before);
  });

  it('a rating the admin makes or deletes through the gateway counts at once', async () => {
    const made = await call('POST', '/api/v1/evaluations/feedback', {
      type: 'rating',
      data: { rating: 1, model_id: 'm-c', sibling_model_ids: ['m-a'], tags: ['brand-new-tag'] },
      meta: {},
      snapshot: { chat: {} },
    });
    expect(made.status).to.equal(200);
    const id = (JSON.parse(made.text) as { id: string }).id;
    const tagsOf = async () =>
      (
        JSON.parse((await call('GET', '/api/v1/evaluations/leaderboard')).text) as { entries: Array<{ model_id: string; top_tags: Array<{ tag: string }> }> }
      ).entries
        .find((e) => e.model_id === 'm-c')
        ?.top_tags.map((t) => t.tag) ?? [];
    const list = JSON.parse((await call('GET', '/api/v1/evaluations/feedbacks/list')).text) as { items: Rating[]; total: number };
    expect(list.total).to.equal(OWN + 1);
    expect(list.items[0]!.id).to.equal(id);
    expect(await tagsOf()).to.include('brand-new-tag');
    expect((await call('DELETE', `/api/v1/evaluations/feedback/${id}`)).status).to.equal(200);
    expect((JSON.parse((await call('GET', '/api/v1/evaluations/feedbacks/list')).text) as { total: number }).total).to.equal(OWN);
    expect(await tagsOf()).to.not.include('brand-new-tag');
  });
});
