// policies/policy-change.ts: what a new policy means for a request still being answered and for an
// open WebSocket, decided from the decisions of policies/admin-scoping.ts and upstream-release.ts.
import { expect } from 'chai';
import { decide } from '../../policies/admin-scoping.js';
import { judgedAgainUnderWay, requestGoesOn, socketStaysOpen } from '../../policies/policy-change.js';
import { releaseDecision } from '../../policies/upstream-release.js';

const admin = { admin: true };
const on = { bypassAdminAccessControl: true, enableAdminExport: true };
const off = { bypassAdminAccessControl: false, enableAdminExport: false };

describe('policies/policy-change.ts: what is under way, judged again under a new policy', () => {
  it('kept while under way: an admin\u2019s requests and the export, for anyone; a plain user\u2019s others and a refusal are not', () => {
    const files = { method: 'GET', path: '/api/v1/files/' };
    const exported = { method: 'GET', path: '/api/v1/chats/all/db' };
    expect(judgedAgainUnderWay(decide(files, off, admin), admin)).to.equal(true);
    expect(judgedAgainUnderWay(decide(files, off, { admin: false }), { admin: false })).to.equal(false);
    expect(judgedAgainUnderWay(decide(exported, on, { admin: false }), { admin: false })).to.equal(true);
    expect(judgedAgainUnderWay(decide(exported, off, admin), admin), 'refused: nothing under way').to.equal(false);
  });

  it('the export under way is cut when the export switch goes off, for every caller', () => {
    for (const path of ['/api/v1/chats/all/db', '/api/v1/utils/db/download']) {
      const request = { method: 'GET', path };
      expect(requestGoesOn('answer', decide(request, on, admin), decide(request, off, admin)), path).to.equal(false);
      expect(requestGoesOn('answer', decide(request, on, admin), decide(request, { ...off, enableAdminExport: true }, admin)), path).to.equal(true);
    }
  });

  it('an admin\u2019s completion streaming as events, judged with the bypass on, is cut when it goes off: the new policy checks more of its body', () => {
    const request = { method: 'POST', path: '/api/chat/completions' };
    const before = decide(request, on, admin);
    const after = decide(request, off, admin);
    expect(before.action).to.equal(after.action);
    expect(requestGoesOn('event-stream', before, after)).to.equal(false);
    expect(requestGoesOn('event-stream', before, decide(request, on, admin))).to.equal(true);
    // its answer, were it not a stream, finishes under the policy it began with
    expect(requestGoesOn('answer', before, after)).to.equal(true);
  });

  it('an admin\u2019s ordinary answer under way finishes under the policy it began with (judged whole under one)', () => {
    const request = { method: 'GET', path: '/api/v1/files/' };
    expect(requestGoesOn('answer', decide(request, on, admin), decide(request, off, admin))).to.equal(true);
  });

  it('a request the switches do not concern goes on (a plain user\u2019s, an admin\u2019s file read by id)', () => {
    for (const [request, who] of [
      [{ method: 'GET', path: '/api/v1/chats/' }, { admin: false }],
      [{ method: 'GET', path: '/api/v1/files/abc/content' }, admin],
    ] as const) {
      expect(requestGoesOn('event-stream', decide(request, on, who), decide(request, off, who)), request.path).to.equal(true);
    }
  });

  it('an admin\u2019s socket whose note events were not read closes when the bypass goes off; one that was read stays', () => {
    expect(socketStaysOpen({ admin: true, notesGuarded: false }, { bypassAdminAccessControl: false }, undefined)).to.deep.include({
      keep: false,
      reason: 'policy changed',
    });
    expect(socketStaysOpen({ admin: true, notesGuarded: false }, { bypassAdminAccessControl: true }, undefined)).to.deep.equal({ keep: true });
    expect(socketStaysOpen({ admin: true, notesGuarded: true }, { bypassAdminAccessControl: true }, undefined)).to.deep.equal({ keep: true });
    expect(socketStaysOpen({ admin: false, notesGuarded: false }, { bypassAdminAccessControl: false }, undefined)).to.deep.equal({ keep: true });
  });

  it('an admin\u2019s socket closes when UPSTREAM_RELEASE_POLICY now refuses their API requests', () => {
    const refused = releaseDecision({ method: 'GET', path: '/ws/socket.io/' }, 'refuse-admins', admin, { state: 'unsupported', version: '0.13.0' });
    expect(refused?.action).to.equal('deny');
    const verdict = socketStaysOpen({ admin: true, notesGuarded: true }, { bypassAdminAccessControl: false }, refused);
    expect(verdict.keep).to.equal(false);
    expect(verdict.keep === false && verdict.rule).to.include(refused!.rule);
  });
});
