// ENABLE_ADMIN_CHAT_ACCESS fixed false on every route that names a chat, whatever the upstream's
// own flag: over real sockets, against the stand-in set both ways. An admin reads, copies, changes
// and exports the stats of their own chats only; a chat shared with them is reached by its share
// id; deleting another user's chat passes and is audited; writes to another user's chat never
// reach the upstream. Plain users keep what Open WebUI gives them.
import { expect } from 'chai';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';
import { loadSettings } from '../../config/settings.js';
import { ChatViews, SHARE_MISS_TTL_MS } from '../../gateway/enforcement/chat-views.js';
import { createObservability } from '../../gateway/observability/observability.js';
import { Upstream } from '../../gateway/upstream/proxy.js';
import { ADMIN_CHAT_ACCESS_DISABLED } from '../../policies/admin-scoping.js';
import {
  chatAccess,
  chatAccessAllowed,
  shareCandidates,
  sharedByShareId,
  shareGrantsReach,
  sharesFollowGrants,
  sharesNeedGrantsRead,
} from '../../policies/chat-scoping.js';
import { FOREIGN_MARKER, seedChats, seedUsers } from '../support/raw-http.js';

const BOB_CHAT = 'c-u-bob';
const ADMIN_CHAT = 'c-u-admin';
const BOB_SHARE = 'share-of-bob';
/** bob's other chat, shared with alice only */
const BOB_CHAT_FOR_ALICE = 'c-u-bob-for-alice';
const BOB_SHARE_FOR_ALICE = 'share-of-bob-for-alice';

describe('chat scoping rule (pure)', () => {
  const seg = (p: string) => p.split('/').filter(Boolean);
  it('names the chat of every route that carries one, and only those', () => {
    expect(chatAccess('GET', seg('/api/v1/chats/abc'))).to.deep.equal({ need: 'own-chat', chatId: 'abc' });
    expect(chatAccess('POST', seg('/api/v1/chats/abc/messages/m1'))).to.deep.equal({ need: 'own-chat', chatId: 'abc' });
    expect(chatAccess('POST', seg('/api/v1/chats/abc/messages/m1/event'))).to.deep.equal({ need: 'own-chat', chatId: 'abc' });
    expect(chatAccess('POST', seg('/api/v1/chats/abc/pin'))).to.deep.equal({ need: 'own-chat', chatId: 'abc' });
    expect(chatAccess('GET', seg('/api/v1/chats/share/abc'))).to.deep.equal({ need: 'share-or-own', id: 'abc' });
    expect(chatAccess('POST', seg('/api/v1/chats/abc/clone/shared'))).to.deep.equal({ need: 'share-or-own', id: 'abc' });
    expect(chatAccess('POST', seg('/api/v1/chats/shared/abc/access/update'))).to.deep.equal({ need: 'own-chat', chatId: 'abc' });
    expect(chatAccess('GET', seg('/api/v1/chats/shared/abc/access'))).to.deep.equal({ need: 'own-chat', chatId: 'abc' });
    expect(chatAccess('GET', seg('/api/v1/chats/stats/export/abc'))).to.deep.equal({ need: 'own-chat', chatId: 'abc' });
    expect(chatAccess('DELETE', seg('/api/v1/chats/abc'))).to.deep.equal({ need: 'own-chat', chatId: 'abc' });
    for (const p of [
      '/api/v1/chats/',
      '/api/v1/chats/list',
      '/api/v1/chats/new',
      '/api/v1/chats/all',
      '/api/v1/chats/search',
      '/api/v1/chats/pinned',
      '/api/v1/chats/shared',
      '/api/v1/chats/stats/usage',
      '/api/v1/chats/stats/export',
      '/api/v1/chats/ALL/archived',
    ])
      expect(chatAccess('GET', seg(p)), p).to.equal(undefined);
  });
  it('another user\u2019s chat reached by its share id needs the upstream to hold shares to their grants (its own ENABLE_ADMIN_CHAT_ACCESS false: the admin route answers 401)', () => {
    expect(sharesFollowGrants(401)).to.equal(true);
    for (const status of [200, 403, 404, 500]) expect(sharesFollowGrants(status), String(status)).to.equal(false);
    expect(sharedByShareId({ need: 'share-or-own', id: 's' }, { id: 's', user_id: 'bob', share_id: 's' }, 'me')).to.equal(true);
    expect(sharedByShareId({ need: 'share-or-own', id: 's' }, { id: 'c', user_id: 'me', share_id: 's' }, 'me')).to.equal(false);
    expect(sharedByShareId({ need: 'own-chat', chatId: 'c' }, { id: 'c', user_id: 'bob', share_id: 'c' }, 'me')).to.equal(false);
  });
  it('with the upstream\u2019s flag drifted true (its admin route answers 200) a share is judged by its grants as Open WebUI would with the flag false', () => {
    expect(sharesNeedGrantsRead(200)).to.equal(true);
    for (const status of [401, 403, 404, 500]) expect(sharesNeedGrantsRead(status), String(status)).to.equal(false);
    const me = { userId: 'me', groupIds: new Set(['ops']) };
    const grant = (principal_type: string, principal_id: string, permission = 'read') => [{ principal_type, principal_id, permission }];
    expect(shareGrantsReach(grant('anyone', '*'), me), 'open to everyone').to.equal(true);
    expect(shareGrantsReach(grant('user', '*'), me), 'every user').to.equal(true);
    expect(shareGrantsReach(grant('user', 'me'), me), 'me by name').to.equal(true);
    expect(shareGrantsReach(grant('group', 'ops'), me), 'my group').to.equal(true);
    expect(shareGrantsReach(grant('user', 'me', 'write'), me), 'write only: Open WebUI reads exactly read').to.equal(false);
    expect(shareGrantsReach(grant('group', 'sales'), me), 'another group').to.equal(false);
    expect(shareGrantsReach(grant('user', 'bob'), me), 'another user').to.equal(false);
    expect(shareGrantsReach(grant('anyone', 'me'), me), 'anyone is only *').to.equal(false);
    for (const broken of [undefined, null, {}, 'read', [null], [{ principal_type: 'user', principal_id: 7, permission: 'read' }]])
      expect(shareGrantsReach(broken, me), JSON.stringify(broken)).to.equal(false);
    expect(shareGrantsReach(grant('user', '*'), { userId: '', groupIds: new Set() }), 'no caller').to.equal(false);
  });
  it('the chat a share was taken from is looked for among the owner\u2019s chats of its title first, a bounded number', () => {
    const list = [
      { id: 'a', title: 'Other' },
      { id: 'b', title: 'Trip' },
      { id: 'c', title: 'Trip plans' },
      { id: 'd', title: 'Trip' },
    ];
    expect(shareCandidates(list, 'Trip', 10)).to.deep.equal(['b', 'd', 'a', 'c']);
    expect(shareCandidates(list, 'Trip', 2)).to.deep.equal(['b', 'd']);
    expect(shareCandidates({ items: list }, 'Trip', 10)).to.deep.equal([]);
    expect(shareCandidates([{ title: 'no id' }, 'x', null], 'x', 10)).to.deep.equal([]);
  });
  it('allows the own chat, and a chat reached by its share id; nothing when the owner is unknown', () => {
    expect(chatAccessAllowed({ need: 'own-chat', chatId: 'c' }, { id: 'c', user_id: 'me' }, 'me')).to.equal(true);
    expect(chatAccessAllowed({ need: 'own-chat', chatId: 'c' }, { id: 'c', user_id: 'bob', share_id: 'c' }, 'me')).to.equal(false);
    expect(chatAccessAllowed({ need: 'share-or-own', id: 's' }, { id: 'c', user_id: 'bob', share_id: 's' }, 'me')).to.equal(true);
    expect(chatAccessAllowed({ need: 'share-or-own', id: 'c' }, { id: 'c', user_id: 'bob', share_id: 's' }, 'me')).to.equal(false);
    expect(chatAccessAllowed({ need: 'share-or-own', id: 'c' }, undefined, 'me')).to.equal(false);
    expect(chatAccessAllowed({ need: 'own-chat', chatId: 'c' }, { id: 'c', user_id: '' }, '')).to.equal(false);
  });
});

for (const upstreamFlag of [true, false]) {
  describe(`admin chat privacy over real sockets (upstream ENABLE_ADMIN_CHAT_ACCESS=${upstreamFlag})`, function () {
    this.timeout(20_000);
    let upstream: OpenWebUIStandIn;
    let gw: RunningGateway;
    let adminKey: string;
    let aliceKey: string;
    let bobKey: string;

    beforeEach(async () => {
      const chats = seedChats();
      const bobs = chats.find((c) => c.id === BOB_CHAT)!;
      bobs.share_id = BOB_SHARE;
      chats.push({ ...structuredClone(bobs), id: BOB_CHAT_FOR_ALICE, share_id: BOB_SHARE_FOR_ALICE });
      upstream = await startOpenWebUI({ users: seedUsers, chats, enableAdminChatAccess: upstreamFlag });
      // Bob shares his chat with Alice and with the admin by grant (the share page's "access"), the other with Alice only.
      upstream.chatGrants.set(BOB_CHAT, [
        { id: 'g1', principal_type: 'user', principal_id: 'u-alice', permission: 'read' },
        { id: 'g2', principal_type: 'user', principal_id: 'u-admin', permission: 'read' },
      ]);
      upstream.chatGrants.set(BOB_CHAT_FOR_ALICE, [{ id: 'g3', principal_type: 'user', principal_id: 'u-alice', permission: 'read' }]);
      gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true' }));
      adminKey = upstream.apiKeyFor('u-admin');
      aliceKey = upstream.apiKeyFor('u-alice');
      bobKey = upstream.apiKeyFor('u-bob');
    });
    afterEach(async () => {
      await gw.close();
      await upstream.close();
    });

    const call = (key: string, method: string, path: string, body?: unknown) =>
      fetch(gw.url + path, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
    /** Forwarded requests of the client (the gateway's own lookups are GETs of /chats/{id} and /chats/share/{id}). */
    const forwarded = (method: string, fragment: string) => upstream.requests.filter((r) => r.method === method && r.url.includes(fragment));

    async function expectRefused(res: Response, what: string) {
      const text = await res.text();
      expect(res.status, `${what}: ${text}`).to.equal(401);
      expect(JSON.parse(text).detail, what).to.equal(ADMIN_CHAT_ACCESS_DISABLED);
      expect(text, what).to.not.include(FOREIGN_MARKER);
    }

    it('reads: another user\u2019s chat by id, by the share route with its chat id, its grants and its stats: 401', async () => {
      await expectRefused(await call(adminKey, 'GET', `/api/v1/chats/${BOB_CHAT}`), 'GET /chats/{id}');
      await expectRefused(await call(adminKey, 'GET', `/api/v1/chats/share/${BOB_CHAT}`), 'GET /chats/share/{chat id}');
      await expectRefused(await call(adminKey, 'GET', `/api/v1/chats/shared/${BOB_CHAT}/access`), 'GET /chats/shared/{id}/access');
      await expectRefused(await call(adminKey, 'GET', `/api/v1/chats/stats/export/${BOB_CHAT}`), 'GET /chats/stats/export/{id}');
      expect((await call(adminKey, 'HEAD', `/api/v1/chats/${BOB_CHAT}`)).status, 'HEAD /chats/{id}').to.equal(401);
    });

    it('writes to another user\u2019s chat never reach the upstream: message overwrite, event, grant update, clone by chat id', async () => {
      await expectRefused(await call(adminKey, 'POST', `/api/v1/chats/${BOB_CHAT}/messages/m1`, { content: 'overwritten by admin' }), 'POST messages');
      await expectRefused(await call(adminKey, 'POST', `/api/v1/chats/${BOB_CHAT}/messages/m1/event`, { type: 'x', data: {} }), 'POST event');
      await expectRefused(
        await call(adminKey, 'POST', `/api/v1/chats/shared/${BOB_CHAT}/access/update`, {
          access_grants: [{ principal_type: 'user', principal_id: 'u-admin', permission: 'write' }],
        }),
        'POST access/update',
      );
      await expectRefused(await call(adminKey, 'POST', `/api/v1/chats/${BOB_CHAT}/clone/shared`), 'POST clone/shared by chat id');
      expect(forwarded('POST', BOB_CHAT), 'a refused write reached the upstream').to.deep.equal([]);
      // nothing changed upstream
      expect(JSON.stringify(upstream.chats.get(BOB_CHAT)!.chat)).to.not.include('overwritten');
      expect(upstream.chatGrants.get(BOB_CHAT)!.map((g) => g.permission)).to.deep.equal(['read', 'read']);
      expect([...upstream.chats.values()].filter((c) => c.user_id === 'u-admin')).to.have.length(1);
    });

    it('the admin\u2019s own chat: read, message update, grants, stats and pin work', async () => {
      const read = await call(adminKey, 'GET', `/api/v1/chats/${ADMIN_CHAT}`);
      expect(read.status).to.equal(200);
      expect((await read.json()).id).to.equal(ADMIN_CHAT);
      const updated = await call(adminKey, 'POST', `/api/v1/chats/${ADMIN_CHAT}/messages/m1`, { content: 'my own edit' });
      expect(updated.status).to.equal(200);
      expect(JSON.stringify(upstream.chats.get(ADMIN_CHAT)!.chat)).to.include('my own edit');
      expect((await call(adminKey, 'GET', `/api/v1/chats/shared/${ADMIN_CHAT}/access`)).status).to.equal(200);
      expect((await call(adminKey, 'POST', `/api/v1/chats/shared/${ADMIN_CHAT}/access/update`, { access_grants: [] })).status).to.equal(200);
      expect((await call(adminKey, 'GET', `/api/v1/chats/stats/export/${ADMIN_CHAT}`)).status).to.equal(200);
      const pinned = await call(adminKey, 'POST', `/api/v1/chats/${ADMIN_CHAT}/pin`);
      expect(pinned.status).to.equal(200);
      expect(await pinned.json()).to.deep.include({ id: ADMIN_CHAT, pinned: true });
      expect(upstream.chats.get(ADMIN_CHAT)!.pinned).to.equal(true);
    });

    it(
      upstreamFlag
        ? 'the admin\u2019s own chat cloned by its chat id: forwarded, and the upstream (its own flag on) makes the copy'
        : 'the admin\u2019s own chat cloned by its chat id: the upstream (its own flag off) knows no share by that id, so the gateway refuses it unasked (401)',
      async () => {
        const clone = await call(adminKey, 'POST', `/api/v1/chats/${ADMIN_CHAT}/clone/shared`);
        if (!upstreamFlag) {
          await expectRefused(clone, 'POST clone/shared by the own chat id');
          expect(forwarded('POST', ADMIN_CHAT), 'the clone reached the upstream').to.deep.equal([]);
          // the upstream itself, asked straight: no chat by that share id, and no clone either
          const straight = (method: string, path: string) => fetch(upstream.url + path, { method, headers: { authorization: `Bearer ${adminKey}` } });
          expect((await straight('GET', `/api/v1/chats/share/${ADMIN_CHAT}`)).status).to.equal(401);
          expect((await straight('POST', `/api/v1/chats/${ADMIN_CHAT}/clone/shared`)).status).to.equal(401);
          expect([...upstream.chats.values()].filter((c) => c.user_id === 'u-admin')).to.have.length(1);
          return;
        }
        expect(clone.status).to.equal(200);
        expect(forwarded('POST', `/api/v1/chats/${ADMIN_CHAT}/clone/shared`), 'forwarded once').to.have.length(1);
        const copy = await clone.json();
        expect(copy).to.include({ user_id: 'u-admin', title: `Clone of ${upstream.chats.get(ADMIN_CHAT)!.title}` });
        expect(copy.id).to.not.equal(ADMIN_CHAT);
        expect(upstream.chats.get(copy.id)?.user_id).to.equal('u-admin');
      },
    );

    it('a chat shared with the admin keeps working by its share id: read and clone (the upstream answers any admin for any share while its flag is true: the gateway reads the share\u2019s grants)', async () => {
      const shared = await call(adminKey, 'GET', `/api/v1/chats/share/${BOB_SHARE}`);
      expect(shared.status).to.equal(200);
      // a snapshot: it carries the share's id
      expect(await shared.json()).to.deep.include({ id: BOB_SHARE, share_id: BOB_SHARE, user_id: 'u-bob' });
      const clone = await call(adminKey, 'POST', `/api/v1/chats/${BOB_SHARE}/clone/shared`);
      expect(clone.status).to.equal(200);
      const copy = await clone.json();
      expect(copy.user_id).to.equal('u-admin');
      expect(upstream.chats.get(copy.id)?.user_id).to.equal('u-admin');
    });

    it('a share open to everyone, or granted to a group of the admin, is served; one granted for writing only, to another group or to nobody is refused', async () => {
      upstream.users.get('u-admin')!.groups.push('ops');
      const share = (grants: Array<{ principal_type: 'user' | 'group' | 'anyone'; principal_id: string; permission: 'read' | 'write' }>, n: number) => {
        const chat = structuredClone(upstream.chats.get(BOB_CHAT)!);
        Object.assign(chat, { id: `c-bob-${n}`, share_id: `share-bob-${n}`, title: `Bob share ${n}` });
        upstream.chats.set(chat.id, chat);
        upstream.chatGrants.set(
          chat.id,
          grants.map((g, i) => ({ id: `g-${n}-${i}`, ...g })),
        );
        return chat.share_id!;
      };
      const open = share([{ principal_type: 'anyone', principal_id: '*', permission: 'read' }], 1);
      const everyUser = share([{ principal_type: 'user', principal_id: '*', permission: 'read' }], 2);
      const ops = share([{ principal_type: 'group', principal_id: 'ops', permission: 'read' }], 3);
      const writeOnly = share([{ principal_type: 'user', principal_id: 'u-admin', permission: 'write' }], 4);
      const otherGroup = share([{ principal_type: 'group', principal_id: 'sales', permission: 'read' }], 5);
      const nobody = share([], 6);
      for (const id of [open, everyUser, ops]) {
        const res = await call(adminKey, 'GET', `/api/v1/chats/share/${id}`);
        expect(res.status, id).to.equal(200);
        expect((await res.json()).share_id).to.equal(id);
      }
      for (const id of [writeOnly, otherGroup, nobody]) await expectRefused(await call(adminKey, 'GET', `/api/v1/chats/share/${id}`), `share ${id}`);
    });

    it('deleting another user\u2019s chat is refused and never reaches the upstream; the admin\u2019s own chat is deleted', async () => {
      await expectRefused(await call(adminKey, 'DELETE', `/api/v1/chats/${BOB_CHAT}`), 'DELETE /chats/{id}');
      await expectRefused(await call(adminKey, 'DELETE', `/api/v1/chats/${BOB_CHAT}/`), 'DELETE /chats/{id}/');
      expect(forwarded('DELETE', BOB_CHAT), 'a refused delete reached the upstream').to.deep.equal([]);
      expect(upstream.chats.has(BOB_CHAT)).to.equal(true);
      expect(
        gw.obs.lines.some(
          (l) => l.event === 'admin-chat-access-denied' && l.method === 'DELETE' && l.path === `/api/v1/chats/${BOB_CHAT}` && l.callerId === 'u-admin',
        ),
        'audited',
      ).to.equal(true);
      const own = await call(adminKey, 'DELETE', `/api/v1/chats/${ADMIN_CHAT}`);
      expect(own.status).to.equal(200);
      expect(upstream.chats.has(ADMIN_CHAT)).to.equal(false);
      // bob deletes his own
      expect((await call(bobKey, 'DELETE', `/api/v1/chats/${BOB_CHAT}`)).status).to.equal(200);
    });

    it('a share id of another user\u2019s chat not shared with the admin: refused for reading and cloning, whatever the upstream lets admins do', async () => {
      // alice, whom it is shared with, reads it by its share id
      expect((await call(aliceKey, 'GET', `/api/v1/chats/share/${BOB_SHARE_FOR_ALICE}`)).status).to.equal(200);
      const before = upstream.chats.size;
      await expectRefused(await call(adminKey, 'GET', `/api/v1/chats/share/${BOB_SHARE_FOR_ALICE}`), 'GET /chats/share/{share id}');
      await expectRefused(await call(adminKey, 'POST', `/api/v1/chats/${BOB_SHARE_FOR_ALICE}/clone/shared`), 'POST clone/shared by share id');
      expect(forwarded('POST', BOB_SHARE_FOR_ALICE)).to.deep.equal([]);
      expect(upstream.chats.size).to.equal(before);
    });

    it('refusals are audited with the caller and the rule', async () => {
      await call(adminKey, 'GET', `/api/v1/chats/${BOB_CHAT}`);
      expect(
        gw.obs.lines.some(
          (l) => l.event === 'admin-chat-access-denied' && l.callerId === 'u-admin' && String(l.rule).includes('ENABLE_ADMIN_CHAT_ACCESS fixed false'),
        ),
      ).to.equal(true);
    });

    it('plain users keep what Open WebUI gives them: own chat, a chat shared by grant, by share id; others refused by the upstream', async () => {
      expect((await call(bobKey, 'GET', `/api/v1/chats/${BOB_CHAT}`)).status).to.equal(200);
      expect((await call(bobKey, 'POST', `/api/v1/chats/${BOB_CHAT}/messages/m1`, { content: 'bob edits' })).status).to.equal(200);
      expect((await call(aliceKey, 'GET', `/api/v1/chats/${BOB_CHAT}`)).status).to.equal(200); // grant
      expect((await call(aliceKey, 'GET', `/api/v1/chats/share/${BOB_SHARE}`)).status).to.equal(200);
      const denied = await call(aliceKey, 'GET', `/api/v1/chats/${ADMIN_CHAT}`);
      expect(denied.status).to.equal(401);
      expect((await call(aliceKey, 'POST', `/api/v1/chats/${ADMIN_CHAT}/messages/m1`, { content: 'x' })).status).to.equal(401);
    });

    it('fails closed: an ownership answer that is not a chat refuses the request', async () => {
      // A chat record without an owner (a broken or foreign answer) proves nothing.
      upstream.chats.get(ADMIN_CHAT)!.user_id = undefined as unknown as string;
      const res = await call(adminKey, 'POST', `/api/v1/chats/${ADMIN_CHAT}/messages/m1`, { content: 'x' });
      expect(res.status).to.equal(401);
      expect(forwarded('POST', `${ADMIN_CHAT}/messages`)).to.deep.equal([]);
    });

    it('fails closed: the upstream unreachable gives 502, never a forwarded request', async () => {
      await upstream.close();
      const res = await call(adminKey, 'POST', `/api/v1/chats/${ADMIN_CHAT}/messages/m1`, { content: 'x' });
      expect(res.status).to.equal(502);
    });
  });
}

describe('a share whose chat is not found among its owner\u2019s first 60 (upstream ENABLE_ADMIN_CHAT_ACCESS drifted true)', function () {
  this.timeout(30_000);
  const LOST_SHARE = 'share-of-bob-lost';
  const LOST_CHAT = 'bob-lost';
  let upstream: OpenWebUIStandIn;
  let adminKey: string;

  beforeEach(async () => {
    const chats = seedChats();
    const bobs = chats.find((c) => c.id === BOB_CHAT)!;
    // shared with every user by grant, then 60 newer chats of the same title: its chat is the 61st either way it is looked for
    chats.push({ ...structuredClone(bobs), id: LOST_CHAT, title: 'Weekly notes', share_id: LOST_SHARE, updated_at: bobs.updated_at - 1000 });
    for (let i = 0; i < 60; i++) chats.push({ ...structuredClone(bobs), id: `bob-newer-${i}`, title: 'Weekly notes', updated_at: bobs.updated_at + i });
    upstream = await startOpenWebUI({ users: seedUsers, chats, enableAdminChatAccess: true });
    upstream.chatGrants.set(LOST_CHAT, [{ id: 'g1', principal_type: 'user', principal_id: '*', permission: 'read' }]);
    adminKey = upstream.apiKeyFor('u-admin');
  });
  afterEach(async () => {
    await upstream.close();
  });

  /** The reads that look for the share's chat: the owner's chat list and their chats by id. */
  const searchReads = (from: number) =>
    upstream.requests.slice(from).filter((r) => r.method === 'GET' && /^\/api\/v1\/chats\/(list\/user\/u-bob|bob-)/.test(r.url)).length;
  /** bob opens the chat and writes in it (at Open WebUI, or through another instance): now his newest */
  const bobTouchesIt = () => (upstream.chats.get(LOST_CHAT)!.updated_at = Math.floor(Date.now() / 1000) + 1000);

  it('through the gateway: refused, and a repeated request reads none of the owner\u2019s chats again; the same refusal', async () => {
    const gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true' }));
    try {
      const read = async () => {
        const from = upstream.requests.length;
        const res = await fetch(`${gw.url}/api/v1/chats/share/${LOST_SHARE}`, { headers: { authorization: `Bearer ${adminKey}` } });
        return { status: res.status, body: await res.text(), reads: searchReads(from) };
      };
      const first = await read();
      expect(first.status, first.body).to.equal(401);
      expect(JSON.parse(first.body).detail).to.equal(ADMIN_CHAT_ACCESS_DISABLED);
      expect(first.reads, 'two list pages and the 60 chats they name').to.equal(62);
      for (let i = 0; i < 3; i++) {
        const again = await read();
        expect(again, `request ${i + 2}`).to.deep.equal({ ...first, reads: 0 });
      }
    } finally {
      await gw.close();
    }
  });

  it('the miss is kept a short while, for its caller only; once it expires the share, its chat now found, is served', async () => {
    let now = 1_000_000;
    const settings = loadSettings(baseEnv(upstream.url), { stageFiles: false });
    const up = new Upstream(settings.upstream, createObservability({ level: 'silent' }));
    const views = new ChatViews(
      up.calls,
      async (userId) => ({ userId, groupIds: new Set() }),
      () => now,
    );
    const share = { need: 'share-or-own', id: LOST_SHARE } as const;
    const as = (key: string) => ({ authorization: `Bearer ${key}` });
    try {
      let from = upstream.requests.length;
      expect(await views.mayAccess(share, 'u-admin', as(adminKey))).to.equal(false);
      expect(searchReads(from)).to.equal(62);
      bobTouchesIt();
      now += SHARE_MISS_TTL_MS - 1;
      from = upstream.requests.length;
      expect(await views.mayAccess(share, 'u-admin', as(adminKey)), 'within the miss').to.equal(false);
      expect(searchReads(from)).to.equal(0);
      // another caller's request is looked for afresh (the owner's chats are read as the caller)
      from = upstream.requests.length;
      expect(await views.mayAccess(share, 'u-other-admin', as(adminKey))).to.equal(true);
      expect(searchReads(from)).to.be.greaterThan(0);
      views.clear();
      upstream.chats.get(LOST_CHAT)!.updated_at = 0;
      expect(await views.mayAccess(share, 'u-admin', as(adminKey)), 'lost again').to.equal(false);
      bobTouchesIt();
      now += SHARE_MISS_TTL_MS + 1;
      from = upstream.requests.length;
      expect(await views.mayAccess(share, 'u-admin', as(adminKey)), 'the miss expired: found, granted').to.equal(true);
      expect(searchReads(from)).to.be.within(1, 62);
    } finally {
      up.close();
    }
  });
});
