// The policy table of the contract, row by row, for both switch values (pure decisions).
import { expect } from 'chai';
import { ADMIN_CHAT_ACCESS_DISABLED, ADMIN_SCOPED, decide, EXPORT_DISABLED, type PolicySettings } from '../../policies/admin-scoping.js';
import { objectsNamedInBody } from '../../policies/body-objects.js';
import { keepOwn, pageOf, parseCount, parseFileArray, parseFileList, parsePage } from '../../policies/file-scoping.js';
import { lookupVerdict, mayReach } from '../../policies/resource-access.js';

const off: PolicySettings = { bypassAdminAccessControl: false, enableAdminExport: false };
const on: PolicySettings = { bypassAdminAccessControl: true, enableAdminExport: true };
const admin = { admin: true };
const user = { admin: false };

describe('admin-scoping policy', () => {
  it('A6: the chat export and the raw database answer 401 for everyone while the export switch is off', () => {
    for (const path of ['/api/v1/chats/all/db', '/api/v1/chats/all/db/', '/api/v1/utils/db/download', '/API/V1/Chats/All/DB'])
      for (const method of ['GET', 'HEAD', 'POST', 'get'])
        for (const caller of [admin, user]) {
          const d = decide({ method, path }, off, caller);
          expect(d, `${method} ${path}`).to.include({ action: 'deny', status: 401, detail: EXPORT_DISABLED });
        }
  });

  it('A6: with the export switch on, the export passes as the upstream answers', () => {
    expect(decide({ method: 'GET', path: '/api/v1/chats/all/db' }, on, admin).action).to.equal('pass');
    expect(decide({ method: 'GET', path: '/api/v1/utils/db/download' }, on, admin).action).to.equal('pass');
  });

  it("ENABLE_ADMIN_CHAT_ACCESS is fixed false: browsing another user's chats is 401 with either switch", () => {
    for (const s of [off, on]) expect(decide({ method: 'GET', path: '/api/v1/chats/list/user/u-1' }, s, admin).action).to.equal('deny');
  });

  it('ENABLE_ADMIN_CHAT_ACCESS is fixed false: deleting a chat by id needs it to be the admin\u2019s own, with either switch', () => {
    for (const s of [off, on])
      for (const path of ['/api/v1/chats/c-1', '/api/v1/chats/c-1/', '/API/V1/Chats/c-1'])
        expect(decide({ method: 'DELETE', path }, s, admin), path).to.deep.include({
          action: 'require-own-chat',
          access: { need: 'own-chat', chatId: 'c-1' },
          detail: ADMIN_CHAT_ACCESS_DISABLED,
        });
    expect(decide({ method: 'DELETE', path: '/api/v1/chats/c-1' }, off, user).action).to.equal('pass');
  });

  it("A1: with the bypass off, list, search and count keep only the caller's files, for admins and users, GET and HEAD", () => {
    for (const [path, view] of [
      ['/api/v1/files/', 'list'],
      ['/api/v1/files', 'list'],
      ['/api/v1/files/search', 'search'],
      ['/api/v1/files/count', 'count'],
      ['/api/v1/FILES/Search/', 'search'],
    ] as const)
      for (const method of ['GET', 'HEAD'])
        for (const caller of [admin, user]) expect(decide({ method, path }, off, caller)).to.include({ action: 'filter-own-files', view });
  });

  it('A2: with the bypass on, list, search and count pass as the upstream answers', () => {
    for (const path of ['/api/v1/files/', '/api/v1/files/search', '/api/v1/files/count'])
      expect(decide({ method: 'GET', path }, on, admin).action).to.equal('pass');
  });

  it("A7: reading another user's file by id (record, content variants, status) and deleting it pass with either switch, audited", () => {
    const routes = [
      ['GET', '/api/v1/files/f-1', 'read'],
      ['GET', '/api/v1/files/f-1/content', 'read'],
      ['GET', '/api/v1/files/f-1/content/html', 'read'],
      ['GET', '/api/v1/files/f-1/content/report.pdf', 'read'],
      ['GET', '/api/v1/files/f-1/data/content', 'read'],
      ['GET', '/api/v1/files/f-1/process/status', 'read'],
      ['HEAD', '/api/v1/files/f-1/content', 'read'],
      ['DELETE', '/api/v1/files/f-1', 'delete'],
      ['DELETE', '/api/v1/files/f-1/', 'delete'],
    ] as const;
    for (const s of [off, on])
      for (const [method, path, operation] of routes) {
        expect(decide({ method, path }, s, admin), `${method} ${path}`).to.include({ action: 'audit-file-access', fileId: 'f-1', operation });
        expect(decide({ method, path }, s, user).action).to.equal('pass');
      }
  });

  it("A7 names no other write: with the bypass off an admin's other per-file writes need the file to be their own (asked of the upstream)", () => {
    for (const [method, path] of [
      ['POST', '/api/v1/files/f-1/data/content/update'],
      ['POST', '/api/v1/files/f-1/rename'],
      ['POST', '/API/v1/Files/f-1/Rename/'],
      ['PUT', '/api/v1/files/f-1'],
      ['PATCH', '/api/v1/files/f-1'],
      ['POST', '/api/v1/files/f-1'],
      ['DELETE', '/api/v1/files/f-1/content'],
    ] as const) {
      expect(decide({ method, path }, off, admin), `${method} ${path}`).to.deep.include({
        action: 'require-access',
        lookup: '/api/v1/files/f-1',
        permission: 'owner',
        detail: ADMIN_SCOPED,
      });
      expect(decide({ method, path }, on, admin), `${method} ${path}`).to.include({ action: 'audit-file-access', fileId: 'f-1', operation: 'write' });
      expect(decide({ method, path }, off, user).action).to.equal('pass');
    }
    // the segment as the canonical path holds it: the upstream decodes it to the id it acts on
    expect(decide({ method: 'POST', path: '/api/v1/files/a%20b/rename' }, off, admin)).to.include({ lookup: '/api/v1/files/a%20b' });
    // the same for every by-id lookup: the id decoded once, as Open WebUI decodes the path, then encoded
    expect(decide({ method: 'POST', path: '/api/v1/knowledge/a%20b/update' }, off, admin)).to.deep.include({ lookup: '/api/v1/knowledge/a%20b' });
    expect(decide({ method: 'GET', path: '/api/v1/notes/n%C3%A9' }, off, admin)).to.deep.include({ lookup: '/api/v1/notes/n%C3%A9' });
  });

  it('DELETE /api/v1/files/all (every user\u2019s files) is refused for admins while the bypass is off; with it on the upstream decides, audited', () => {
    for (const path of ['/api/v1/files/all', '/api/v1/files/all/', '/API/V1/FILES/ALL'])
      expect(decide({ method: 'DELETE', path }, off, admin), path).to.include({ action: 'deny', status: 403, detail: ADMIN_SCOPED });
    expect(decide({ method: 'DELETE', path: '/api/v1/files/all' }, on, admin)).to.include({ action: 'audit-file-access', fileId: '*', operation: 'delete' });
    // a plain user is refused by Open WebUI itself (admin only)
    expect(decide({ method: 'DELETE', path: '/api/v1/files/all' }, off, user).action).to.equal('pass');
  });

  it('accounts come from the realm: sign-up and LDAP sign-in are refused for every caller, with either switch', () => {
    for (const path of ['/api/v1/auths/signup', '/api/v1/auths/ldap', '/API/V1/AUTHS/SIGNUP/'])
      for (const settings of [off, on])
        for (const caller of [admin, user])
          expect(decide({ method: 'POST', path }, settings, caller), path).to.include({ action: 'deny', status: 403, rule: 'accounts come from the realm' });
    // Open WebUI's own OAuth sign-in and token exchange too; MCP tool-server OAuth clients and the back-channel logout pass
    for (const [method, path] of [
      ['GET', '/oauth/oidc/login'],
      ['GET', '/oauth/oidc/callback'],
      ['GET', '/oauth/evil/login/callback'],
      ['POST', '/api/v1/auths/oauth/oidc/token/exchange'],
      ['POST', '/api/v1/auths/oauth/a/b/token/exchange'],
    ] as const)
      for (const caller of [admin, user]) expect(decide({ method, path }, on, caller), path).to.include({ action: 'deny', status: 403 });
    expect(decide({ method: 'GET', path: '/oauth/clients/c1/authorize' }, off, user).action).to.equal('pass');
    expect(decide({ method: 'POST', path: '/oauth/backchannel-logout' }, off, user).action).to.equal('pass');
    expect(decide({ method: 'POST', path: '/api/v1/auths/signin' }, off, user).action).to.equal('pass');
  });

  it('A8: everything else passes untouched', () => {
    // (a chat's page, /c/{id}, needs the chat to be the admin's own: below)
    for (const path of ['/api/v1/chats/all', '/ws/socket.io', '/', '/workspace/models'])
      expect(decide({ method: 'GET', path }, off, admin).action, path).to.equal('pass');
    // A3 to A5: lists of workspace objects are the gateway's to filter for admins while the bypass is off
    for (const path of ['/api/v1/models', '/api/v1/knowledge/']) {
      expect(decide({ method: 'GET', path }, off, admin).action, path).to.equal('filter-listing');
      expect(decide({ method: 'GET', path }, on, admin).action, path).to.equal('pass');
      expect(decide({ method: 'GET', path }, off, user).action, path).to.equal('pass');
    }
    // a chat by id: a plain user passes (Open WebUI scopes them); an admin's own chat only (chat-scoping)
    expect(decide({ method: 'GET', path: '/api/v1/chats/abc' }, off, user).action).to.equal('pass');
    expect(decide({ method: 'GET', path: '/api/v1/chats/abc' }, off, admin)).to.include({ action: 'require-own-chat' });
    expect(decide({ method: 'POST', path: '/api/v1/files/' }, off, admin).action).to.equal('pass'); // upload
  });
});

describe('file scoping', () => {
  const f = (id: string, user_id: string) => ({ id, user_id, filename: `${id}.txt` });

  it("keeps only the caller's files and counts what it removed", () => {
    const { own, removed } = keepOwn([f('1', 'me'), f('2', 'other'), f('3', 'me')], 'me');
    expect(own.map((x) => x.id)).to.deep.equal(['1', '3']);
    expect(removed).to.equal(1);
  });

  it('pages own files 50 at a time with the own total', () => {
    const own = Array.from({ length: 120 }, (_, i) => f(String(i), 'me'));
    expect(pageOf(own, 1).items).to.have.length(50);
    expect(pageOf(own, 3)).to.deep.include({ total: 120 });
    expect(pageOf(own, 3).items).to.have.length(20);
    expect(pageOf(own, 4).items).to.have.length(0);
  });

  it('refuses bodies that are not the expected shape (fail closed)', () => {
    expect(parseFileList({ items: [f('1', 'me')], total: 1 })).to.not.equal(undefined);
    for (const bad of [null, [], { items: [] }, { items: [{ id: '1' }], total: 1 }, { items: [f('1', 'me')], total: '1' }, { items: 'x', total: 0 }])
      expect(parseFileList(bad), JSON.stringify(bad)).to.equal(undefined);
    expect(parseFileArray([f('1', 'me')])).to.have.length(1);
    expect(parseFileArray([{ id: 1, user_id: 'me' }])).to.equal(undefined);
    expect(parseFileArray({})).to.equal(undefined);
    expect(parseCount(3)).to.equal(3);
    for (const bad of [-1, 1.5, '3', null]) expect(parseCount(bad)).to.equal(undefined);
  });

  it('reads page numbers as Open WebUI does', () => {
    expect(parsePage(null)).to.equal(1);
    expect(parsePage('2')).to.equal(2);
    for (const bad of ['0', '-1', 'x', '1.5']) expect(parsePage(bad)).to.equal(undefined);
  });
});

describe('admin-scoping: the object checked is the object Open WebUI acts on', () => {
  const off = { bypassAdminAccessControl: false, enableAdminExport: false };
  const admin = { admin: true };
  it('a query id given twice is refused: Starlette acts on the last, a first-wins reader would check the other', () => {
    const d = decide({ method: 'POST', path: '/api/v1/models/model/toggle', search: '?id=mine&id=theirs' }, off, admin);
    expect(d).to.include({ action: 'deny', status: 403 });
    expect(decide({ method: 'POST', path: '/api/v1/models/model/toggle', search: '?id=mine' }, off, admin)).to.deep.include({
      action: 'require-access',
      lookup: '/api/v1/models/model?id=mine',
    });
  });
  it('update, access/update and delete of a model name it in the body: the body field is checked, whatever the query says', () => {
    for (const route of ['update', 'access/update', 'delete']) {
      const d = decide({ method: 'POST', path: `/api/v1/models/model/${route}`, search: '?id=mine' }, off, admin);
      expect(d, route).to.deep.include({ action: 'require-access', permission: 'write' });
      expect(d, route).to.not.have.property('lookup');
      const inBody = (d as Extract<typeof d, { action: 'require-access' }>).inBody ?? [];
      expect(inBody[0], route).to.deep.equal({ at: 'id', lookup: '/api/v1/models/model?id={=}', permission: 'write', required: true });
    }
  });
});

describe('admin-scoping: what a body names that opens other users\u2019 content', () => {
  const off = { bypassAdminAccessControl: false, enableAdminExport: false };
  const on = { bypassAdminAccessControl: true, enableAdminExport: true };
  const admin = { admin: true };
  const user = { admin: false };
  const MODEL_USED = { at: 'model', lookup: '/api/v1/models/model?id={=}', permission: 'read' };
  const inBodyOf = (d: ReturnType<typeof decide>) => (d as Extract<typeof d, { action: 'require-access' }>).inBody ?? [];

  it('every generation checks the model it runs: the chat and task completions, OpenAI\u2019s and Ollama\u2019s own APIs', () => {
    for (const path of [
      '/api/chat/completions',
      '/api/v1/chat/completions',
      '/api/v1/tasks/title/completions',
      '/api/v1/tasks/moa/completions',
      '/openai/chat/completions',
      '/openai/responses',
      '/ollama/api/chat',
      '/ollama/api/generate/0',
      '/ollama/v1/chat/completions',
      '/ollama/v1/completions/1',
    ]) {
      const d = decide({ method: 'POST', path }, off, admin);
      expect(inBodyOf(d), path).to.deep.include(MODEL_USED);
      // plain users: Open WebUI checks their model access itself; the gateway's bypass on: as Open WebUI answers
      expect(decide({ method: 'POST', path }, off, user).action, path).to.equal('pass');
      if (!path.startsWith('/api/') || path.includes('/tasks/')) expect(decide({ method: 'POST', path }, on, admin).action, path).to.equal('pass');
    }
    // embeddings and model management are not generations
    expect(decide({ method: 'POST', path: '/ollama/api/embed' }, off, admin).action).to.equal('pass');
  });

  it('the model is looked up as the admin, by the id Open WebUI reads (an arena model or one it has no entry for answers 404: refused)', () => {
    const named = objectsNamedInBody({ model: 'alice secret/1', messages: [] }, [MODEL_USED as never]);
    expect(named).to.deep.equal({ ok: true, lookups: [{ lookup: '/api/v1/models/model?id=alice%20secret%2F1', permission: 'read' }] });
    expect(objectsNamedInBody({ model: ['a'] }, [MODEL_USED as never]).ok).to.equal(false);
    expect(objectsNamedInBody({ messages: [] }, [MODEL_USED as never])).to.deep.equal({ ok: true, lookups: [] });
  });

  it('the other ways a model is run: Anthropic\u2019s messages API, an automation\u2019s model, a model mentioned in a channel message; refused where the gateway cannot see it', () => {
    for (const path of ['/api/message', '/api/v1/messages']) expect(inBodyOf(decide({ method: 'POST', path }, off, admin)), path).to.deep.include(MODEL_USED);
    const automation = inBodyOf(decide({ method: 'POST', path: '/api/v1/automations/create' }, off, admin));
    expect(objectsNamedInBody({ data: { model_id: 'm1', target: { channel_id: null } } }, automation)).to.deep.equal({
      ok: true,
      lookups: [{ lookup: '/api/v1/models/model?id=m1', permission: 'read' }],
    });
    const message = inBodyOf(decide({ method: 'POST', path: '/api/v1/channels/ch1/messages/post' }, off, admin));
    expect(objectsNamedInBody({ content: 'hi <@M:their-model|Helper> and <@U:u1|Bob> <@M:m2>' }, message)).to.deep.equal({
      ok: true,
      lookups: [
        { lookup: '/api/v1/models/model?id=their-model', permission: 'read' },
        { lookup: '/api/v1/models/model?id=m2', permission: 'read' },
      ],
    });
    expect(objectsNamedInBody({ content: 42 }, message).ok).to.equal(false);
    for (const path of ['/api/v1/chats/c1/compact', '/api/v1/chats/c1/messages/m1/resolve']) {
      expect(decide({ method: 'POST', path }, off, admin), path).to.include({ action: 'deny', status: 403 });
      // with the bypass on, still the admin's own chat only (ENABLE_ADMIN_CHAT_ACCESS fixed false)
      expect(decide({ method: 'POST', path }, on, admin).action, path).to.equal('require-own-chat');
      expect(decide({ method: 'POST', path }, off, user).action, path).to.equal('pass');
    }
  });

  it('a group made under another group (its members inherit the parent\u2019s shares) is refused; a group of its own is created', () => {
    const d = decide({ method: 'POST', path: '/api/v1/groups/create' }, off, admin);
    expect(d.action).to.equal('require-access');
    const refs = inBodyOf(d);
    for (const parent of ['acme-id', 7, {}]) expect(objectsNamedInBody({ name: 'ops', parent_group_id: parent }, refs).ok, String(parent)).to.equal(false);
    for (const none of [undefined, null, '']) expect(objectsNamedInBody({ name: 'ops', parent_group_id: none }, refs)).to.deep.equal({ ok: true, lookups: [] });
    expect(decide({ method: 'POST', path: '/api/v1/groups/create' }, on, admin).action).to.equal('pass');
  });

  it('retrieval writes into the collection the body names: the caller\u2019s own memory, a file or knowledge base they may write; none named is a new one', () => {
    for (const kind of ['text', 'url', 'web', 'youtube']) {
      const refs = inBodyOf(decide({ method: 'POST', path: `/api/v1/retrieval/process/${kind}` }, off, admin));
      expect(objectsNamedInBody({ url: 'https://example.test', collection_name: 'user-memory-alice' }, refs), kind).to.deep.equal({
        ok: true,
        lookups: [{ ownCollection: 'user-memory-alice' }],
      });
      expect(objectsNamedInBody({ collection_name: 'file-f1' }, refs)).to.deep.equal({
        ok: true,
        lookups: [{ lookup: '/api/v1/files/f1', permission: 'write' }],
      });
      expect(objectsNamedInBody({ collection_name: 'kb1' }, refs)).to.deep.equal({
        ok: true,
        lookups: [{ lookup: '/api/v1/knowledge/kb1', permission: 'write' }],
      });
      for (const none of [undefined, null, '']) expect(objectsNamedInBody({ url: 'u', collection_name: none }, refs)).to.deep.equal({ ok: true, lookups: [] });
      expect(objectsNamedInBody({ collection_name: 3 }, refs).ok).to.equal(false);
    }
  });

  it('Admin Settings read the outbound event webhooks (configuration); aiming one stays refused for admins', () => {
    expect(decide({ method: 'GET', path: '/api/events/webhooks' }, off, admin).action).to.equal('pass');
    expect(decide({ method: 'POST', path: '/api/events/webhooks' }, off, admin)).to.include({ action: 'deny', status: 403 });
    expect(decide({ method: 'PUT', path: '/api/events/webhooks/w1' }, off, admin)).to.include({ action: 'deny', status: 403 });
    expect(decide({ method: 'DELETE', path: '/api/events/webhooks/w1' }, off, admin).action).to.equal('pass');
  });

  it('an admin\u2019s visit of a chat\u2019s page (/c/{id}) needs the chat to be their own, with either switch; a page refused says why', () => {
    for (const s of [off, on]) {
      for (const method of ['GET', 'HEAD'])
        expect(decide({ method, path: '/c/C-1' }, s, admin)).to.deep.include({
          action: 'require-own-chat',
          access: { need: 'own-chat', chatId: 'C-1' },
          page: true,
        });
      expect(decide({ method: 'GET', path: '/c/c-1' }, s, user).action).to.equal('pass');
    }
    for (const path of ['/c', '/c/', '/c/c-1/x', '/chat/c-1']) expect(decide({ method: 'GET', path }, off, admin).action, path).to.equal('pass');
  });

  it('by-id lookups: a 404 names no object (answered 404, not refused); anything else but a reachable object is refused', () => {
    const who = { userId: 'u-admin', groupIds: new Set<string>() };
    expect(lookupVerdict(404, undefined, who, 'read')).to.equal('absent');
    expect(lookupVerdict(200, { user_id: 'u-admin' }, who, 'read')).to.equal('allow');
    expect(lookupVerdict(200, { user_id: 'u-bob' }, who, 'read')).to.equal('deny');
    for (const status of [0, 401, 403, 500, 502]) expect(lookupVerdict(status, undefined, who, 'read'), String(status)).to.equal('deny');
  });

  it('refused for admins: the list of every user\u2019s running generations, and the context compaction settings; the group preview loses what others shared', () => {
    expect(decide({ method: 'GET', path: '/api/tasks' }, off, admin)).to.include({ action: 'deny', status: 403 });
    expect(decide({ method: 'POST', path: '/api/v1/chats/config' }, off, admin)).to.include({ action: 'deny', status: 403 });
    // a skill import's multipart decisions may replace any user's skill (Open WebUI's own bypass on)
    expect(decide({ method: 'POST', path: '/api/v1/skills/import' }, off, admin)).to.include({ action: 'deny', status: 403 });
    expect(decide({ method: 'POST', path: '/api/v1/skills/import' }, off, user).action).to.equal('pass');
    expect(decide({ method: 'GET', path: '/api/v1/chats/config' }, off, admin).action).to.equal('pass');
    // route words of routers/chats.py, not chat ids: the admin's own chats marked read
    expect(decide({ method: 'POST', path: '/api/v1/chats/read' }, off, admin).action).to.equal('pass');
    expect(decide({ method: 'GET', path: '/api/v1/groups/id/g1/preview' }, off, admin)).to.deep.include({
      action: 'redact-fields',
      fields: [],
      emptied: ['models', 'knowledge', 'tools'],
    });
  });
});

describe('admin-scoping: what Open WebUI leaves to an object\u2019s owner', () => {
  const off = { bypassAdminAccessControl: false, enableAdminExport: false };
  const admin = { admin: true };
  const who = { userId: 'u-admin', groupIds: new Set(['g1']) };
  const permissionOf = (method: string, path: string, search = '') =>
    (decide({ method, path, search }, off, admin) as Extract<ReturnType<typeof decide>, { action: 'require-access' }>).permission;

  it('an owner-only action needs the owner: a write grant or a channel\u2019s membership is not enough', () => {
    const granted = { user_id: 'u-alice', access_grants: [{ principal_type: 'user', principal_id: 'u-admin', permission: 'write' }] };
    const memberOf = { user_id: 'u-alice', type: 'group', user_ids: ['u-alice', 'u-admin'] };
    expect(mayReach(granted, who, 'write')).to.equal(true);
    expect(mayReach(granted, who, 'owner')).to.equal(false);
    expect(mayReach(memberOf, who, 'write')).to.equal(true);
    expect(mayReach(memberOf, who, 'owner')).to.equal(false);
    expect(mayReach({ user_id: 'u-admin' }, who, 'owner')).to.equal(true);
    for (const [method, path] of [
      ['DELETE', '/api/v1/folders/f1'],
      ['POST', '/api/v1/folders/f1/access/update'],
      ['POST', '/api/v1/channels/c1/update'],
      ['POST', '/api/v1/channels/c1/update/members/add'],
      ['POST', '/api/v1/channels/c1/access/update'],
      ['DELETE', '/api/v1/channels/c1/delete'],
      ['GET', '/api/v1/channels/c1/webhooks'],
      ['POST', '/api/v1/calendars/cal1/access/update'],
      ['DELETE', '/api/v1/calendars/cal1/delete'],
    ] as const)
      expect(permissionOf(method, path), `${method} ${path}`).to.equal('owner');
  });

  it('another member\u2019s channel message is edited or deleted by its author only: the message is what is looked up', () => {
    for (const [method, path] of [
      ['POST', '/api/v1/channels/c1/messages/m1/update'],
      ['DELETE', '/api/v1/channels/c1/messages/m1/delete'],
    ] as const)
      expect(decide({ method, path }, off, admin), path).to.deep.include({
        action: 'require-access',
        lookup: '/api/v1/channels/c1/messages/m1',
        permission: 'owner',
      });
  });

  it('a tool\u2019s valves (its secrets) and the history of tools and models (a model\u2019s system prompt) need write, as Open WebUI asks of users', () => {
    expect(permissionOf('GET', '/api/v1/tools/id/t1/valves')).to.equal('write');
    expect(permissionOf('GET', '/api/v1/tools/id/t1/valves/spec')).to.equal('read');
    for (const path of ['/api/v1/tools/id/t1/history', '/api/v1/tools/id/t1/history/diff', '/api/v1/tools/id/t1/history/h1'])
      expect(permissionOf('GET', path), path).to.equal('write');
    expect(permissionOf('GET', '/api/v1/models/model/history', '?id=m1')).to.equal('write');
    expect(permissionOf('GET', '/api/v1/models/model/history/h1', '?id=m1')).to.equal('write');
  });
});
