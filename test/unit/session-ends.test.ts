// policies/session-ends.ts: when an open WebSocket may stay open, and whose identity facts are newest.
import { expect } from 'chai';
import { bearerSocketVerdict, factsStanding, sameFacts, socketVerdict, type IdentityFacts } from '../../policies/session-ends.js';

const alice: IdentityFacts = { email: 'alice@acme.example', name: 'Alice', admin: false, groups: ['acme', 'staff'], tenants: ['acme'], activeTenant: 'acme' };
const live = { ended: false, alive: true, tokenExpired: false, opened: alice, current: alice } as const;

describe('unit: open WebSockets follow their session', () => {
  it('keeps a socket whose session is live and unchanged (groups in any order, email in any case)', () => {
    expect(socketVerdict(live)).to.deep.equal({ keep: true });
    expect(socketVerdict({ ...live, current: { ...alice, email: 'Alice@ACME.example', groups: ['staff', 'acme'] } })).to.deep.equal({ keep: true });
  });

  it('closes on every kind of end, failing closed when the end cannot be known', () => {
    const reason = (s: Partial<Parameters<typeof socketVerdict>[0]>) => {
      const v = socketVerdict({ ...live, ...s });
      return v.keep ? 'keep' : v.reason;
    };
    expect(reason({ ended: true })).to.equal('signed out');
    expect(reason({ ended: undefined })).to.equal('sign-in cannot be checked');
    expect(reason({ alive: false })).to.equal('session expired');
    expect(reason({ tokenExpired: true })).to.equal('session needs renewal');
    expect(reason({ current: { ...alice, admin: true } })).to.equal('identity changed');
    expect(reason({ current: { ...alice, groups: ['acme'] } })).to.equal('identity changed');
    expect(reason({ current: { ...alice, activeTenant: 'globex', tenants: ['acme', 'globex'] } })).to.equal('identity changed');
    // an end outranks the rest
    expect(reason({ ended: true, alive: false, current: { ...alice, admin: true } })).to.equal('signed out');
  });

  it('a bearer token’s socket lives as long as the token', () => {
    expect(bearerSocketVerdict(1_000, 999)).to.deep.equal({ keep: true });
    expect(bearerSocketVerdict(1_000, 1_000).keep).to.equal(false);
  });
});

describe('unit: the newest facts of a user win', () => {
  const admin = { ...alice, admin: true };
  it('an identity older than the newest, with other facts, is stale; with the same facts, or newer, it is current', () => {
    expect(factsStanding({ at: 10, facts: admin }, { at: 20, facts: alice }).standing).to.equal('stale');
    expect(factsStanding({ at: 10, facts: alice }, { at: 20, facts: alice }).standing).to.equal('current');
    expect(factsStanding({ at: 20, facts: admin }, { at: 10, facts: alice }).standing).to.equal('current');
    expect(factsStanding({ at: 10, facts: admin }, undefined).standing).to.equal('current');
  });

  it('the active tenant is each session’s own choice: not a contradiction', () => {
    const both = { ...alice, tenants: ['acme', 'globex'] };
    expect(factsStanding({ at: 10, facts: { ...both, activeTenant: 'acme' } }, { at: 20, facts: { ...both, activeTenant: 'globex' } }).standing).to.equal(
      'current',
    );
    expect(sameFacts({ ...both, activeTenant: 'acme' }, { ...both, activeTenant: 'globex' })).to.equal(false);
  });
});
