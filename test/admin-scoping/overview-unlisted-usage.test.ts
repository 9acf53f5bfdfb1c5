// The model overview's tags of an admin whose chats Open WebUI cannot list as usage lines: Open WebUI
// 0.12.4 answers /chats/stats/usage 400 for every page holding a chat whose last message has no
// whole-number `timestamp` (one written by an API client, or imported). The admin still gets the
// tags of their own chats that used the model, read from their export, never a 502.
import { expect } from 'chai';
import { startOpenWebUI, type OpenWebUIStandIn, type StandInChat } from '../../sandbox/open-webui/stand-in.js';
import { emptyWorkspace, type Workspace } from '../../sandbox/open-webui/workspace.js';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';

const users = [
  { id: 'u-admin', email: 'sysadmin@platform.test', name: 'Sys Admin', role: 'admin' as const, groups: ['tenant-a'] },
  { id: 'u-bob', email: 'bob@globex.test', name: 'Bob', role: 'user' as const, groups: ['tenant-b'] },
];
const now = Math.floor(Date.now() / 1000);

/** A chat of `user_id` that used m-own, tagged; `timestamp` on its messages as given. */
function chat(id: string, user_id: string, tags: string[], timestamp: number | undefined): StandInChat {
  const at = timestamp === undefined ? {} : { timestamp };
  return {
    id,
    user_id,
    title: id,
    chat: {
      history: {
        currentId: 'a',
        messages: { q: { role: 'user', content: 'q', parentId: null, ...at }, a: { role: 'assistant', model: 'm-own', content: 'a', parentId: 'q', ...at } },
      },
    },
    created_at: now,
    updated_at: now,
    share_id: null,
    archived: false,
    pinned: false,
    meta: { tags },
    folder_id: null,
  };
}

function seed(): Workspace {
  const ws = emptyWorkspace();
  ws.objects.model.set('m-own', {
    id: 'm-own',
    user_id: '',
    name: 'own model',
    base_model_id: 'gpt-base',
    info: { user_id: 'u-admin', access_grants: [] },
    created_at: now,
    updated_at: now,
  } as never);
  return ws;
}

describe('the model overview of an admin with a chat Open WebUI cannot list as a usage line', function () {
  this.timeout(30_000);
  let upstream: OpenWebUIStandIn;
  let gw: RunningGateway;
  let key: string;

  before(async () => {
    const chats = [
      chat('c-admin-app', 'u-admin', ['work', 'typed'], now),
      // imported: its messages carry a fractional timestamp (a ChatGPT export's create_time)
      chat('c-admin-imported', 'u-admin', ['work', 'imported'], now + 0.5),
      chat('c-bob', 'u-bob', ['work', 'GLOBEX-tag'], now),
    ];
    upstream = await startOpenWebUI({ users, chats, groups: ['tenant-a', 'tenant-b'], workspace: seed() });
    key = upstream.apiKeyFor('u-admin');
    gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true', LOG_LEVEL: 'silent' }));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('Open WebUI refuses the admin\u2019s usage lines; through the gateway the overview counts the tags of both their chats, none of bob\u2019s', async () => {
    const usage = await fetch(`${upstream.url}/api/v1/chats/stats/usage`, { headers: { authorization: `Bearer ${key}` } });
    expect(usage.status, 'the door: Open WebUI answers the usage lines').to.equal(400);
    const res = await fetch(`${gw.url}/api/v1/analytics/models/m-own/overview?days=7`, { headers: { authorization: `Bearer ${key}` } });
    const text = await res.text();
    expect(res.status, text).to.equal(200);
    const overview = JSON.parse(text) as { tags: Array<{ tag: string; count: number }> };
    expect(overview.tags).to.have.deep.members([
      { tag: 'work', count: 2 },
      { tag: 'typed', count: 1 },
      { tag: 'imported', count: 1 },
    ]);
  });
});
