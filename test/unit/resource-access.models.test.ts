// Usage answers name models by id, every user's private ones included: an admin (bypass off) sees
// the entries of the models they may see only (pure).
import { expect } from 'chai';
import { decide, type PolicySettings } from '../../policies/admin-scoping.js';
import { keepModelIds, visibleModelIds } from '../../policies/resource-access.js';

const off: PolicySettings = { bypassAdminAccessControl: false, enableAdminExport: false };
const on: PolicySettings = { bypassAdminAccessControl: true, enableAdminExport: false };
const me = { userId: 'u-admin', groupIds: new Set(['g-acme']) };

describe('model ids in usage answers (pure)', () => {
  it('the routes that name models by id are scoped for admins while the bypass is off, and only then', () => {
    for (const [path, modelIds] of [
      ['/api/v1/analytics/models', 'models'],
      ['/api/v1/analytics/tokens', 'models'],
      ['/api/v1/analytics/daily', 'daily'],
      ['/api/v1/evaluations/feedbacks/models', 'ids'],
      ['/api/v1/evaluations/leaderboard', 'entries'],
      ['/api/usage', 'usage'],
    ] as const) {
      expect(decide({ method: 'GET', path }, off, { admin: true }), path).to.include({ action: 'scope-names', modelIds });
      expect(decide({ method: 'GET', path }, on, { admin: true }).action, path).to.equal('pass');
      expect(decide({ method: 'GET', path }, off, { admin: false }).action, path).to.equal('pass');
    }
    // counts only: passed
    expect(decide({ method: 'GET', path: '/api/v1/analytics/summary' }, off, { admin: true }).action).to.equal('pass');
  });

  it('the models an admin may see: a connection\u2019s, and stored ones they own or hold a grant on', () => {
    const base = { data: [{ id: 'gpt-4o' }, { id: 'llama3:latest' }] };
    const stored = [
      { id: 'own', user_id: 'u-admin', access_grants: [] },
      { id: 'bob-divorce-helper', user_id: 'u-bob', access_grants: [] },
      { id: 'acme', user_id: 'u-bob', access_grants: [{ principal_type: 'group', principal_id: 'g-acme', permission: 'read' }] },
    ];
    expect([...visibleModelIds(base, stored, me)!].sort()).to.deep.equal(['acme', 'gpt-4o', 'llama3:latest', 'own']);
    expect(visibleModelIds([], stored, me)).to.equal(undefined);
    expect(visibleModelIds(base, { items: stored }, me)).to.equal(undefined);
    expect(visibleModelIds({ data: [{ name: 'x' }] }, stored, me)).to.equal(undefined);
  });

  it('every shape keeps the entries of visible ids and drops the rest, counting what it dropped; other shapes fail closed', () => {
    const visible = new Set(['gpt-4o', 'own']);
    expect(
      keepModelIds(
        {
          models: [
            { model_id: 'gpt-4o', count: 3 },
            { model_id: 'bob-private', count: 9 },
          ],
        },
        'models',
        visible,
      ),
    ).to.deep.equal({
      body: { models: [{ model_id: 'gpt-4o', count: 3 }] },
      removed: 1,
    });
    expect(keepModelIds({ entries: [{ model_id: 'x' }, { model_id: 'own', top_tags: [] }] }, 'entries', visible)).to.deep.equal({
      body: { entries: [{ model_id: 'own', top_tags: [] }] },
      removed: 1,
    });
    expect(
      keepModelIds(
        {
          data: [
            { date: 'd', models: { 'gpt-4o': 1, 'bob-private': 2 }, previous: { models: { 'bob-private': 1 }, start: 's' } },
            { date: 'e', models: {} },
          ],
        },
        'daily',
        visible,
      ),
    ).to.deep.equal({
      body: {
        data: [
          { date: 'd', models: { 'gpt-4o': 1 }, previous: { models: {}, start: 's' } },
          { date: 'e', models: {} },
        ],
      },
      removed: 2,
    });
    expect(keepModelIds(['gpt-4o', 'bob-private'], 'ids', visible)).to.deep.equal({ body: ['gpt-4o'], removed: 1 });
    expect(keepModelIds({ model_ids: ['bob-private'], user_count: 4 }, 'usage', visible)).to.deep.equal({ body: { model_ids: [], user_count: 4 }, removed: 1 });
    for (const [body, shape] of [
      [{ models: [{ id: 'x' }] }, 'models'],
      [{ data: [{ models: [] }] }, 'daily'],
      [[1], 'ids'],
      [{ model_ids: 'x' }, 'usage'],
      [[], 'entries'],
    ] as const)
      expect(keepModelIds(body, shape, visible), shape).to.equal(undefined);
  });
});
