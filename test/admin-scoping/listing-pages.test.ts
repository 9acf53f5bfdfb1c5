// An admin's paged listing through the gateway in front of the Open WebUI stand-in set as Open WebUI
// ships (its own bypass on: every user's knowledge bases, 30 a page): each page the admin asks for
// holds the items they own or hold a grant on, in Open WebUI's order, and `total` counts those only;
// an admin whose page Open WebUI already scoped gets it as Open WebUI answered.
import { expect } from 'chai';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { emptyWorkspace, grant, type Workspace } from '../../sandbox/open-webui/workspace.js';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';

const users = [
  { id: 'u-admin', email: 'sysadmin@platform.test', name: 'Sys Admin', role: 'admin' as const, groups: ['tenant-a'] },
  { id: 'u-bob', email: 'bob@globex.test', name: 'Bob', role: 'user' as const, groups: ['tenant-b'] },
];
const now = Math.floor(Date.now() / 1000);

/** 110 knowledge bases: bob's private ones among the admin's own and those granted to the admin or their group. */
function seed(): Workspace {
  const ws = emptyWorkspace();
  for (let i = 0; i < 110; i++) {
    const id = `k-${String(i).padStart(3, '0')}`;
    const kind = i % 11 < 7 ? 'bob' : i % 11 < 9 ? 'own' : i % 11 < 10 ? 'user-grant' : 'group-grant';
    const access_grants =
      kind === 'user-grant' ? [grant('knowledge', id, 'user:u-admin')] : kind === 'group-grant' ? [grant('knowledge', id, 'group:tenant-a')] : [];
    ws.objects.knowledge.set(id, {
      id,
      user_id: kind === 'own' ? 'u-admin' : 'u-bob',
      name: kind === 'bob' ? `GLOBEX ${id}` : `readable ${id}`,
      access_grants,
      created_at: now,
      updated_at: now,
    } as never);
  }
  return ws;
}

describe('an admin\u2019s paged listing among every user\u2019s objects: pages and total of theirs', function () {
  this.timeout(30_000);
  let upstream: OpenWebUIStandIn;
  let gw: RunningGateway;
  let key: string;

  before(async () => {
    upstream = await startOpenWebUI({ users, groups: ['tenant-a', 'tenant-b'], workspace: seed() });
    key = upstream.apiKeyFor('u-admin');
    gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true', LOG_LEVEL: 'silent' }));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const page = async (n: number) => {
    const res = await fetch(`${gw.url}/api/v1/knowledge/?page=${n}`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).to.equal(200);
    const text = await res.text();
    expect(text).to.not.include('GLOBEX');
    return JSON.parse(text) as { items: Array<{ id: string }>; total: number };
  };

  it('every page holds the admin\u2019s items in Open WebUI\u2019s order, total their count, past the end none', async () => {
    const readable = [...upstream.workspace.objects.knowledge.values()]
      .filter((k) => (k as unknown as { name: string }).name.startsWith('readable'))
      .map((k) => k.id);
    expect(readable).to.have.length(40);
    const p1 = await page(1);
    const p2 = await page(2);
    expect(p1.total).to.equal(40);
    expect(p2.total).to.equal(40);
    expect([...p1.items, ...p2.items].map((k) => k.id)).to.deep.equal(readable);
    expect(p1.items).to.have.length(30);
    expect(await page(3)).to.deep.equal({ items: [], total: 40 });
  });

  it('the audit line says how many items of other users one page lost', async () => {
    await page(1);
    const lines = gw.obs.lines.filter((l) => l.event === 'admin-list-filtered' && l.path === '/api/v1/knowledge/');
    expect(lines.length).to.be.greaterThan(0);
    expect(lines[lines.length - 1]!.removed).to.equal(21);
  });

  it('with Open WebUI’s bypass off, the page Open WebUI scoped is answered as it is, one upstream page', async () => {
    upstream.flags.bypassAdminAccessControl = false;
    try {
      const before = upstream.requests.filter((r) => r.url.startsWith('/api/v1/knowledge')).length;
      const p2 = await page(2);
      expect(p2.total).to.equal(40);
      expect(p2.items).to.have.length(10);
      expect(upstream.requests.filter((r) => r.url.startsWith('/api/v1/knowledge')).length - before).to.equal(1);
    } finally {
      upstream.flags.bypassAdminAccessControl = true;
    }
  });
});
