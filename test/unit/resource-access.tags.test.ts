// Tag names of other users' chats and objects never reach an admin while the bypass is off (pure).
import { expect } from 'chai';
import { decide, type PolicySettings } from '../../policies/admin-scoping.js';
import {
  keepTags,
  leaderboardWithTags,
  modelTagNames,
  OwnChatTags,
  OwnFeedbackTags,
  overviewWithTags,
  promptTagNames,
} from '../../policies/resource-access.js';

const off: PolicySettings = { bypassAdminAccessControl: false, enableAdminExport: false };
const on: PolicySettings = { bypassAdminAccessControl: true, enableAdminExport: false };
const me = { userId: 'u-admin', groupIds: new Set(['g-acme']) };
const grant = (principal_type: string, principal_id: string, permission = 'read') => ({ principal_type, principal_id, permission });

describe('tag scoping (pure)', () => {
  it('the routes that name tags are scoped for admins while the bypass is off, and only then', () => {
    expect(decide({ method: 'GET', path: '/api/v1/models/tags' }, off, { admin: true })).to.include({ action: 'scope-names', tags: 'models' });
    expect(decide({ method: 'HEAD', path: '/API/v1/prompts/tags/' }, off, { admin: true })).to.include({ action: 'scope-names', tags: 'prompts' });
    expect(decide({ method: 'GET', path: '/api/v1/analytics/models/gpt-4o/overview', search: '?days=7' }, off, { admin: true })).to.deep.include({
      action: 'scope-names',
      tags: 'chats-of-model',
      modelId: 'gpt-4o',
    });
    // the id as Open WebUI reads it: a path parameter, percent-decoded, slashes kept
    expect(decide({ method: 'GET', path: '/api/v1/analytics/models/openai/gpt%204/overview' }, off, { admin: true })).to.include({
      modelId: 'openai/gpt 4',
    });
    expect(decide({ method: 'GET', path: '/api/v1/evaluations/leaderboard' }, off, { admin: true })).to.include({
      action: 'scope-names',
      tags: 'feedbacks',
      modelIds: 'entries',
    });
    // the leaderboard's query weighs every user's ratings by their tags: refused, however given
    for (const search of ['?query=divorce', '?query=&query=divorce', '?query=%20x'])
      expect(decide({ method: 'GET', path: '/api/v1/evaluations/leaderboard', search }, off, { admin: true }), search).to.include({
        action: 'deny',
        status: 403,
      });
    expect(decide({ method: 'GET', path: '/api/v1/evaluations/leaderboard', search: '?query=' }, off, { admin: true }).action).to.equal('scope-names');
    // a model's history of wins and losses: no names, but answered only for a model the admin may see
    expect(
      decide({ method: 'GET', path: '/api/v1/evaluations/leaderboard/openai%2Fgpt-4o/history', search: '?days=30' }, off, { admin: true }),
    ).to.deep.include({
      action: 'scope-names',
      modelId: 'openai/gpt-4o',
    });
    expect(decide({ method: 'GET', path: '/api/v1/evaluations/leaderboard/%E0%A4%A/history' }, off, { admin: true })).to.include({
      action: 'deny',
      status: 403,
    });
    // the ratings list: of one model when the query names it (its `total` counts every user's), once
    const ratings = (search: string) => decide({ method: 'GET', path: '/api/v1/evaluations/feedbacks/list', search }, off, { admin: true });
    expect(ratings('?page=2&model_id=openai%2Fgpt-4o')).to.deep.include({ action: 'filter-listing', modelId: 'openai/gpt-4o' });
    expect(ratings('?page=2')).to.include({ action: 'filter-listing' }).and.not.have.property('modelId');
    expect(ratings('?model_id=')).to.not.have.property('modelId');
    expect(ratings('?model_id=a&model_id=b')).to.include({ action: 'deny', status: 403 });
    expect(decide({ method: 'GET', path: '/api/v1/evaluations/feedbacks/list', search: '?model_id=a&model_id=b' }, on, { admin: true }).action).to.equal(
      'pass',
    );
    for (const path of [
      '/api/v1/models/tags',
      '/api/v1/prompts/tags',
      '/api/v1/analytics/models/m/overview',
      '/api/v1/evaluations/leaderboard',
      '/api/v1/evaluations/leaderboard/m/history',
    ]) {
      expect(decide({ method: 'GET', path }, on, { admin: true }).action, path).to.equal('pass');
      expect(decide({ method: 'GET', path }, off, { admin: false }).action, path).to.equal('pass');
    }
  });

  it('models: the tags of workspace models the admin owns or holds a grant on', () => {
    const models = [
      { id: 'a', user_id: 'u-admin', base_model_id: 'gpt', meta: { tags: [{ name: 'own' }, 'plain'] }, access_grants: [] },
      { id: 'b', user_id: 'u-bob', base_model_id: 'gpt', meta: { tags: [{ name: 'bob-private' }] }, access_grants: [] },
      { id: 'c', user_id: 'u-bob', base_model_id: 'gpt', meta: { tags: [{ name: 'shared-by-group' }] }, access_grants: [grant('group', 'g-acme')] },
      { id: 'd', user_id: 'u-bob', base_model_id: 'gpt', meta: { tags: [{ name: 'public' }] }, access_grants: [grant('user', '*')] },
      // a base model entry: its tags are /models/base/tags', not these
      { id: 'gpt', user_id: 'u-admin', base_model_id: null, meta: { tags: [{ name: 'base' }] }, access_grants: [] },
      { id: 'e', user_id: 'u-admin', base_model_id: 'gpt', meta: { tags: [{ name: '' }, null, { other: 1 }] }, access_grants: [] },
    ];
    expect([...modelTagNames(models, me)!].sort()).to.deep.equal(['own', 'plain', 'public', 'shared-by-group']);
    expect(modelTagNames({ items: models }, me)).to.equal(undefined);
    expect(modelTagNames([null], me)).to.equal(undefined);
  });

  it('prompts: the tags of active prompts the admin owns or holds a grant on', () => {
    const prompts = [
      { id: 'p1', user_id: 'u-admin', tags: ['own'], is_active: true, access_grants: [] },
      { id: 'p2', user_id: 'u-bob', tags: ['bob-private'], is_active: true, access_grants: [] },
      { id: 'p3', user_id: 'u-bob', tags: ['for-admin'], access_grants: [grant('user', 'u-admin')] },
      { id: 'p4', user_id: 'u-admin', tags: ['inactive'], is_active: false, access_grants: [] },
    ];
    expect([...promptTagNames(prompts, me)!].sort()).to.deep.equal(['for-admin', 'own']);
    expect(promptTagNames('x', me)).to.equal(undefined);
  });

  it('a tag list keeps the names allowed, in its order; anything but a list of names fails closed', () => {
    expect(keepTags(['a', 'bob', 'c'], new Set(['c', 'a', 'z']))).to.deep.equal({ tags: ['a', 'c'], removed: 1 });
    expect(keepTags([{ name: 'a' }], new Set(['a']))).to.equal(undefined);
    expect(keepTags({ tags: [] }, new Set())).to.equal(undefined);
  });

  it('the overview\u2019s tags are counted over the admin\u2019s own chats that used the model; its history is kept', () => {
    const own = new OwnChatTags('u-admin', 'm1');
    const chat = (user_id: string, tags: unknown[], model: string, where: 'history' | 'list' = 'history') => ({
      id: Math.random().toString(36),
      user_id,
      meta: { tags },
      chat:
        where === 'history'
          ? { history: { messages: { a: { role: 'user', content: 'hi' }, b: { role: 'assistant', model } } } }
          : { messages: [{ role: 'assistant', model_id: model }] },
    });
    own.add(chat('u-admin', ['work', 'tax'], 'm1'));
    own.add(chat('u-admin', ['work'], 'm1', 'list'));
    own.add(chat('u-admin', ['other-model'], 'm2'));
    own.add(chat('u-bob', ['divorce', 'work'], 'm1')); // not the admin's: counts nothing
    own.add('not a chat');
    expect(own.top()).to.deep.equal([
      { tag: 'work', count: 2 },
      { tag: 'tax', count: 1 },
    ]);
    const many = new OwnChatTags('u-admin', 'm1');
    for (let i = 0; i < 12; i++) many.add(chat('u-admin', [`t${i}`], 'm1'));
    expect(many.top()).to.have.length(10);

    const upstream = {
      history: [{ date: '2026-01-01', won: 3, lost: 1 }],
      tags: [
        { tag: 'divorce', count: 5 },
        { tag: 'work', count: 7 },
      ],
    };
    expect(overviewWithTags(upstream, own.top())).to.deep.equal({
      body: { history: [{ date: '2026-01-01', won: 3, lost: 1 }], tags: own.top() },
      removed: 1,
    });
    expect(overviewWithTags({ history: [] }, [])).to.equal(undefined);
    expect(overviewWithTags([], [])).to.equal(undefined);
  });

  it('the leaderboard\u2019s top tags are counted over the admin\u2019s own ratings; its ratings and counts are kept', () => {
    const own = new OwnFeedbackTags('u-admin');
    const rating = (user_id: string, model_id: string, tags: unknown) => ({ id: 'x', user_id, data: { rating: 1, model_id, tags } });
    expect(own.add(rating('u-admin', 'm1', ['work', 'tax']))).to.equal(true);
    own.add(rating('u-admin', 'm1', ['work']));
    own.add(rating('u-admin', 'm2', ['other']));
    own.add(rating('u-bob', 'm1', ['divorce', 'work']));
    own.add(rating('u-admin', 'm1', 'not a list'));
    expect(own.add('not a record')).to.equal(false);
    expect(own.top('m1')).to.deep.equal([
      { tag: 'work', count: 2 },
      { tag: 'tax', count: 1 },
    ]);
    const board = {
      entries: [
        {
          model_id: 'm1',
          rating: 1016,
          won: 3,
          lost: 0,
          count: 3,
          top_tags: [
            { tag: 'divorce', count: 9 },
            { tag: 'work', count: 3 },
          ],
        },
        { model_id: 'm3', rating: 984, won: 0, lost: 3, count: 3, top_tags: [{ tag: 'divorce', count: 3 }] },
      ],
    };
    const out = leaderboardWithTags(board, (m) => own.top(m))!;
    expect(out.removed).to.equal(2);
    expect(out.body.entries).to.deep.equal([
      { model_id: 'm1', rating: 1016, won: 3, lost: 0, count: 3, top_tags: own.top('m1') },
      { model_id: 'm3', rating: 984, won: 0, lost: 3, count: 3, top_tags: [] },
    ]);
    expect(leaderboardWithTags({ entries: [{ rating: 1 }] }, () => [])).to.equal(undefined);
    expect(leaderboardWithTags([], () => [])).to.equal(undefined);
  });
});
