// policies/tokens.ts: which verified realm JWTs are access tokens (the only ones a bearer may be).
import { expect } from 'chai';
import { isAccessToken } from '../../policies/tokens.js';

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
