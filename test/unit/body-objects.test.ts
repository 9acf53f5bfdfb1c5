// policies/admin-scoping.ts objectsNamedInBody and the route table's body ids: the objects an
// admin's JSON body names are the objects the gateway checks, as Open WebUI 0.12.4 reads them.
import { expect } from 'chai';
import { decide, type Decision } from '../../policies/admin-scoping.js';
import { isCallersOwnCollection, objectsNamedInBody, MAX_BODY_OBJECTS, type BodyObject } from '../../policies/body-objects.js';
import type { BodyRef } from '../../policies/open-webui-routes.js';

const off = { bypassAdminAccessControl: false, enableAdminExport: false };
const on = { bypassAdminAccessControl: true, enableAdminExport: false };
const admin = { admin: true };
const user = { admin: false };

type Access = Extract<Decision, { action: 'require-access' }>;
const access = (method: string, path: string): Access => {
  const d = decide({ method, path }, off, admin);
  expect(d.action, `${method} ${path}`).to.equal('require-access');
  return d as Access;
};
/** a named object as the tests write it: `read /api/v1/files/f1`, or `own <collection>` for the caller's own collections */
const show = (l: BodyObject) => ('ownCollection' in l ? `own ${l.ownCollection}` : `${l.permission} ${l.lookup}`);
const lookupsOf = (method: string, path: string, body: unknown) => {
  const named = objectsNamedInBody(body, access(method, path).inBody ?? []);
  if (!named.ok) throw new Error(named.why);
  return named.lookups.map(show);
};
const refusal = (method: string, path: string, body: unknown) => {
  const named = objectsNamedInBody(body, access(method, path).inBody ?? []);
  return named.ok ? undefined : named.why;
};

describe('unit: objects named in an admin\u2019s request body', () => {
  it('POST /folders/ (own): the parent folder must be writable by the admin, attached files, bases and notes readable', () => {
    expect(lookupsOf('POST', '/api/v1/folders/', { name: 'x', parent_id: 'fo-bob' })).to.deep.equal(['write /api/v1/folders/fo-bob']);
    expect(
      lookupsOf('POST', '/api/v1/folders/', {
        name: 'x',
        data: {
          files: [
            { type: 'file', id: 'f1' },
            { type: 'collection', id: 'k1' },
            { type: 'note', id: 'n1' },
          ],
        },
      }),
    ).to.have.members(['read /api/v1/files/f1', 'read /api/v1/knowledge/k1', 'read /api/v1/notes/n1']);
  });

  it('absent, null or empty optional ids name nothing (as Open WebUI treats them); the route passes unchanged otherwise', () => {
    for (const body of [
      { name: 'x' },
      { name: 'x', parent_id: null },
      { name: 'x', parent_id: '' },
      { name: 'x', data: null },
      { name: 'x', data: { files: null } },
      undefined,
    ])
      expect(lookupsOf('POST', '/api/v1/folders/', body), JSON.stringify(body)).to.deep.equal([]);
    // entries of a type that names no stored object are not checked
    expect(lookupsOf('POST', '/api/v1/folders/', { name: 'x', data: { files: [{ type: 'web', url: 'https://x' }] } })).to.deep.equal([]);
    // listing folders is still a plain pass
    expect(decide({ method: 'GET', path: '/api/v1/folders/' }, off, admin)).to.include({ action: 'pass' });
  });

  it('an id that is not a string, or a part of the body of the wrong kind, is refused (fail closed)', () => {
    for (const body of [
      { parent_id: 42 },
      { parent_id: { id: 'x' } },
      { parent_id: ['fo-bob'] },
      { data: 'files' },
      { data: { files: 'f1' } },
      { data: { files: ['f1'] } },
      { data: { files: [{ type: 'file' }] } },
      { data: { files: [{ type: 'file', id: 7 }] } },
      'a string body',
    ])
      expect(refusal('POST', '/api/v1/folders/', body), JSON.stringify(body)).to.be.a('string');
  });

  it('an id that would leave its path segment is refused, never looked up elsewhere', () => {
    for (const id of ['../notes/n-bob', 'a/b', 'a\\b', '..', '.']) expect(refusal('POST', '/api/v1/folders/', { parent_id: id }), id).to.be.a('string');
    // in a query, any string stays one value
    expect(lookupsOf('POST', '/api/v1/models/model/update', { id: 'org/model:latest' })).to.deep.equal(['write /api/v1/models/model?id=org%2Fmodel%3Alatest']);
  });

  it('knowledge file/add: the path base writable and the named file readable; file_id is required', () => {
    const d = access('POST', '/api/v1/knowledge/k-own/file/add');
    expect(d).to.include({ lookup: '/api/v1/knowledge/k-own', permission: 'write' });
    expect(lookupsOf('POST', '/api/v1/knowledge/k-own/file/add', { file_id: 'f-bob' })).to.deep.equal(['read /api/v1/files/f-bob']);
    for (const body of [{}, { file_id: null }, { file_id: '' }, undefined])
      expect(refusal('POST', '/api/v1/knowledge/k-own/file/add', body), JSON.stringify(body)).to.be.a('string');
  });

  it('knowledge files/batch/add: every file of the array body, each required; too many is refused', () => {
    expect(
      lookupsOf('POST', '/api/v1/knowledge/k-own/files/batch/add', [{ file_id: 'f1' }, { file_id: 'f2', directory_id: null }, { file_id: 'f1' }]),
    ).to.deep.equal(['read /api/v1/files/f1', 'read /api/v1/files/f2']);
    for (const body of [{ file_id: 'f1' }, [{ file_id: 'f1' }, {}], ['f1'], []])
      expect(refusal('POST', '/api/v1/knowledge/k-own/files/batch/add', body), JSON.stringify(body)).to.be.a('string');
    const many = Array.from({ length: MAX_BODY_OBJECTS + 1 }, (_, i) => ({ file_id: `f${i}` }));
    expect(refusal('POST', '/api/v1/knowledge/k-own/files/batch/add', many)).to.match(/more than/);
  });

  it('models: the model named by the body, and the knowledge and skills its meta attaches', () => {
    expect(
      lookupsOf('POST', '/api/v1/models/model/update', {
        id: 'm1',
        meta: {
          knowledge: [
            { type: 'collection', id: 'k1' },
            { type: 'file', id: 'f1' },
          ],
          skillIds: ['s1'],
        },
      }),
    ).to.have.members(['write /api/v1/models/model?id=m1', 'read /api/v1/knowledge/k1', 'read /api/v1/files/f1', 'read /api/v1/skills/id/s1']);
    expect(lookupsOf('POST', '/api/v1/models/create', { id: 'new', meta: { knowledge: [{ type: 'note', id: 'n1' }] } })).to.deep.equal([
      'read /api/v1/notes/n1',
    ]);
    expect(refusal('POST', '/api/v1/models/model/update', { meta: {} })).to.be.a('string');
  });

  it('calendars, automations, folder moves and folder updates name their objects too', () => {
    expect(lookupsOf('POST', '/api/v1/calendars/events/create', { calendar_id: 'cal-bob', title: 't', start_at: 1 })).to.deep.equal([
      'write /api/v1/calendars/cal-bob',
    ]);
    expect(refusal('POST', '/api/v1/calendars/events/create', { title: 't' })).to.be.a('string');
    expect(lookupsOf('POST', '/api/v1/calendars/events/e1/update', { calendar_id: 'cal-bob' })).to.deep.equal(['write /api/v1/calendars/cal-bob']);
    expect(lookupsOf('POST', '/api/v1/calendars/events/e1/update', { title: 't' })).to.deep.equal([]);
    expect(lookupsOf('POST', '/api/v1/automations/create', { data: { target: { type: 'channel', channel_id: 'ch-bob' } } })).to.deep.equal([
      'write /api/v1/channels/ch-bob',
    ]);
    expect(lookupsOf('POST', '/api/v1/folders/fo-own/update/parent', { parent_id: 'fo-bob' })).to.deep.equal(['write /api/v1/folders/fo-bob']);
    expect(lookupsOf('POST', '/api/v1/folders/fo-own/update', { data: { files: [{ type: 'file', id: 'f-bob' }] } })).to.deep.equal([
      'read /api/v1/files/f-bob',
    ]);
  });

  it('a calendar\u2019s /update: its sharing in the body is refused, anything else passes on the write grant (0.11.4 takes access_grants there)', () => {
    expect(access('POST', '/api/v1/calendars/cal-bob/update')).to.deep.include({ lookup: '/api/v1/calendars/cal-bob', permission: 'write' });
    expect(lookupsOf('POST', '/api/v1/calendars/cal-bob/update', { name: 'renamed', color: '#000000' })).to.deep.equal([]);
    expect(lookupsOf('POST', '/api/v1/calendars/cal-bob/update', { name: 'renamed', access_grants: null })).to.deep.equal([]);
    for (const grants of [[{ principal_type: 'user', principal_id: '*', permission: 'write' }], []])
      expect(refusal('POST', '/api/v1/calendars/cal-bob/update', { access_grants: grants }), JSON.stringify(grants)).to.match(/^access_grants: /);
  });

  it('a chat completion: what it attaches is checked while the bypass is off, attached chats with either value', () => {
    const completion = (settings: typeof off) => {
      const d = decide({ method: 'POST', path: '/api/chat/completions' }, settings, admin);
      expect(d.action).to.equal('require-own-chat-in-body');
      return (d as Extract<Decision, { action: 'require-own-chat-in-body' }>).inBody ?? [];
    };
    const body = {
      model: 'm',
      folder_id: 'fo-bob',
      files: [
        { type: 'file', id: 'f1' },
        { type: 'collection', id: 'k1' },
        { type: 'note', id: 'n1' },
        { type: 'folder', id: 'fo1' },
        { type: 'chat', id: 'c1' },
        { type: 'web_search', collection_name: 'web-search-x' },
        { type: 'text', content: 'pasted' },
      ],
    };
    const closed = objectsNamedInBody(body, completion(off));
    expect(closed.ok && closed.lookups.map(show)).to.have.members([
      // the model it runs (a workspace model brings its owner's system prompt and knowledge)
      'read /api/v1/models/model?id=m',
      'read /api/v1/files/f1',
      'read /api/v1/knowledge/k1',
      'read /api/v1/notes/n1',
      'read /api/v1/folders/fo1',
      'read /api/v1/chats/c1',
      'own web-search-x',
      'read /api/v1/folders/fo-bob',
    ]);
    const bypassOn = objectsNamedInBody(body, completion(on));
    expect(bypassOn.ok && bypassOn.lookups.map(show)).to.deep.equal(['read /api/v1/chats/c1']);
    expect(decide({ method: 'POST', path: '/api/v1/chat/completions' }, off, admin)).to.have.property('inBody');
    expect(decide({ method: 'POST', path: '/api/chat/completed' }, off, admin)).to.not.have.property('inBody');
  });

  it('a channel message: the files a model in the thread would answer from', () => {
    expect(
      lookupsOf('POST', '/api/v1/channels/ch-own/messages/post', {
        content: '@model what is in it?',
        data: {
          files: [
            { type: 'collection', id: 'k-bob' },
            { type: 'image', url: 'data:' },
          ],
        },
      }),
    ).to.deep.equal(['read /api/v1/knowledge/k-bob']);
    // the message itself, its author only (a member's write on the channel is not authorship)
    expect(access('POST', '/api/v1/channels/ch-own/messages/m1/update')).to.include({ lookup: '/api/v1/channels/ch-own/messages/m1', permission: 'owner' });
    expect(lookupsOf('POST', '/api/v1/channels/ch-own/messages/m1/update', { content: 'x' })).to.deep.equal([]);
  });

  it('a field is read only as the body\u2019s own: an inherited name is no id', () => {
    const refs: BodyRef[] = [{ at: 'constructor', lookup: '/api/v1/folders/{=}', permission: 'read', required: true }];
    expect(objectsNamedInBody({}, refs)).to.deep.equal({ ok: false, why: 'no constructor in the body' });
  });

  it('plain users and admins with the bypass on are not asked (Open WebUI decides)', () => {
    expect(decide({ method: 'POST', path: '/api/v1/folders/' }, off, user)).to.include({ action: 'pass' });
    expect(decide({ method: 'POST', path: '/api/v1/knowledge/k1/file/add' }, on, admin)).to.include({ action: 'pass' });
  });
  it('collection names on any entry: a file, the caller\u2019s own memories and web searches, or a knowledge base; never unchecked', () => {
    const d = decide({ method: 'POST', path: '/api/v1/chat/completions' }, off, admin) as Extract<Decision, { action: 'require-own-chat-in-body' }>;
    const named = (body: unknown) => objectsNamedInBody(body, d.inBody ?? []);
    const lookupsOf = (_m: string, _p: string, body: unknown) => {
      const n = named(body);
      if (!n.ok) throw new Error(n.why);
      return n.lookups.map(show);
    };
    const refusal = (_m: string, _p: string, body: unknown) => {
      const n = named(body);
      return n.ok ? undefined : n.why;
    };
    const path = '/api/v1/chat/completions';
    // no model named: only the collections are looked up here
    const body = (entry: unknown) => ({ messages: [], files: [entry] });
    expect(lookupsOf('POST', path, body({ type: 'text', collection_name: 'file-f1' }))).to.deep.equal(['read /api/v1/files/f1']);
    expect(lookupsOf('POST', path, body({ type: 'web_search', collection_name: 'web-search-u1-abc' }))).to.deep.equal(['own web-search-u1-abc']);
    expect(lookupsOf('POST', path, body({ collection_names: ['user-memory-u1', 'k1'] }))).to.deep.equal(['own user-memory-u1', 'read /api/v1/knowledge/k1']);
    for (const bad of [
      { collection_name: 5 },
      { collection_name: 'file-' },
      { collection_name: 'file-a/b' },
      { collection_names: 'k1' },
      { collection_names: [null] },
    ])
      expect(refusal('POST', path, body(bad)), JSON.stringify(bad)).to.be.a('string');
    expect(isCallersOwnCollection('user-memory-u1', 'u1')).to.equal(true);
    expect(isCallersOwnCollection('web-search-u1-abc', 'u1')).to.equal(true);
    expect(isCallersOwnCollection('user-memory-u2', 'u1')).to.equal(false);
    expect(isCallersOwnCollection('web-search-u2-abc', 'u1')).to.equal(false);
    expect(isCallersOwnCollection('web-search--abc', '')).to.equal(false);
  });
});
