// policies/tokens.ts: which verified realm JWTs are access tokens (the only ones a bearer may be),
// which of them the realm is asked about, and what its answer means.
import { expect } from 'chai';
import { introspectionKeepMs, introspectionStanding, isAccessToken, sessionCheckOf } from '../../policies/tokens.js';

describe('policies: which token is an access token', () => {
  const base = { sub: 'u1', exp: 2_000_000_000 };
  const cases: [string, Record<string, unknown>, string | undefined, boolean][] = [
    ["Keycloak's access token (typ Bearer)", { ...base, typ: 'Bearer', scope: 'openid' }, 'JWT', true],
    ['typ in another letter case', { ...base, typ: 'bearer' }, 'JWT', true],
    ['RFC 9068 (header typ at+jwt), no typ claim', { ...base }, 'at+jwt', true],
    ['RFC 9068, the long media type', { ...base }, 'application/at+jwt', true],
    ['no typ anywhere, a scope (Auth0, oidc-provider)', { ...base, scope: 'openid email' }, 'JWT', true],
    ['no typ anywhere, scp as a string (Entra ID)', { ...base, scp: 'User.Read' }, 'JWT', true],
    ['no typ anywhere, scp as a list (Okta)', { ...base, scp: ['openid'] }, undefined, true],
    ["Keycloak's ID token (typ ID)", { ...base, typ: 'ID', scope: 'openid' }, 'JWT', false],
    ["Keycloak's refresh token (typ Refresh)", { ...base, typ: 'Refresh', scope: 'openid' }, 'JWT', false],
    ["Keycloak's logout token (typ Logout)", { ...base, typ: 'Logout' }, 'JWT', false],
    ['an ID token with at_hash', { ...base, at_hash: 'x' }, 'JWT', false],
    ['an ID token with c_hash, even claiming Bearer', { ...base, typ: 'Bearer', c_hash: 'x' }, 'JWT', false],
    ['an ID token with a nonce and no typ, even with a header at+jwt', { ...base, nonce: 'n' }, 'at+jwt', false],
    ['a logout token (events), even with a scope', { ...base, events: {}, scope: 'openid' }, 'logout+jwt', false],
    ['an ID token without nonce or hashes: nothing says access token', { ...base, email: 'a@b' }, 'JWT', false],
    ['no header typ at all and nothing else', { ...base }, undefined, false],
    ['a scope that is not a string', { ...base, scope: ['openid'] }, 'JWT', false],
  ];
  for (const [name, claims, headerTyp, expected] of cases) {
    it(`${name}: ${expected ? 'an access token' : 'not an access token'}`, () => {
      expect(isAccessToken(claims, headerTyp)).to.equal(expected);
    });
  }
});

describe('policies: which bearer tokens the realm is asked about', () => {
  const gateway = 'chat-gateway';
  it("another client's token (its azp) is asked about: the realm tells the gateway nothing of that session's end", () => {
    expect(sessionCheckOf({ azp: 'platform-cli', aud: gateway }, gateway, true).ask).to.equal(true);
  });
  it('a token that names no azp is asked about (nothing says the gateway took part in its session)', () => {
    expect(sessionCheckOf({ aud: gateway }, gateway, true).ask).to.equal(true);
  });
  it("the gateway's own client's token is not: back-channel logout tells its session's end", () => {
    expect(sessionCheckOf({ azp: gateway, aud: 'account' }, gateway, true).ask).to.equal(false);
  });
  it('with BEARER_INTROSPECTION off, none is', () => {
    expect(sessionCheckOf({ azp: 'platform-cli' }, gateway, false)).to.deep.include({ ask: false });
  });
});

describe("policies: what the realm's introspection answer means", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['active, the same subject', { active: true, sub: 'u1', client_id: 'cli' }, 'active'],
    ['active, no subject named', { active: true }, 'active'],
    ['not active (RFC 7662 says nothing more)', { active: false }, 'ended'],
    ['not active, whatever else it says', { active: false, sub: 'u2' }, 'ended'],
    ['active about another subject', { active: true, sub: 'u2' }, 'unusable'],
    ['active as a string', { active: 'true', sub: 'u1' }, 'unusable'],
    ['no active at all', { sub: 'u1' }, 'unusable'],
  ];
  for (const [name, answer, standing] of cases)
    it(`${name}: ${standing}`, () => {
      expect(introspectionStanding(answer, 'u1').standing).to.equal(standing);
    });
});

describe('policies: how long an introspection answer is kept', () => {
  const now = 1_000_000_000_000;
  const until = now / 1000 + 60;
  it('active: the cache time, but never past the last second the token is taken', () => {
    expect(introspectionKeepMs('active', 5, until, now)).to.equal(5_000);
    expect(introspectionKeepMs('active', 300, until, now)).to.equal(60_000);
  });
  it('active with a cache time of 0: not kept (asked on every request)', () => {
    expect(introspectionKeepMs('active', 0, until, now)).to.equal(0);
  });
  it('ended: until the token is no longer taken, whatever the cache time (never asked again)', () => {
    expect(introspectionKeepMs('ended', 0, until, now)).to.equal(60_000);
    expect(introspectionKeepMs('ended', 5, until, now)).to.equal(60_000);
  });
  it('a token past its time: nothing kept', () => {
    expect(introspectionKeepMs('ended', 5, now / 1000 - 1, now)).to.equal(0);
  });
});
