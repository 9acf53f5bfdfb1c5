// policies/sign-in-renewal.ts: whether Open WebUI refused the token itself, and whether a request
// answered 401 may be sent again.
import { expect } from 'chai';
import { mayResend, tokenCheck } from '../../policies/sign-in-renewal.js';

describe('unit: renewing a cached sign-in Open WebUI refused', () => {
  it('only a 401 of GET /api/v1/auths/ refuses the token; its detail names why (get_current_user\u2019s words, 0.11.4 to 0.12.4)', () => {
    for (const status of [200, 403, 404, 500, 502, 503]) expect(tokenCheck(status, 'Invalid token'), String(status)).to.deep.equal({ refused: false });
    const reasons = [
      ['Invalid token', 'revoked'],
      ['401 Unauthorized', 'expired'],
      ['Invalid authentication request.', 'account-gone'],
      ['Your session has expired or the token is invalid. Please sign in again.', 'account-gone'],
      ['User mismatch. Please sign in again.', 'email-changed'],
      ['Not authenticated', 'refused'],
      ['something new', 'refused'],
      [undefined, 'refused'],
      [['a', 'list'], 'refused'],
    ] as const;
    for (const [detail, reason] of reasons) expect(tokenCheck(401, detail), String(detail)).to.deep.equal({ refused: true, reason });
  });

  it('sent again only with its whole body in hand: none, or one the gateway read', () => {
    const none = { heldBody: false, contentLength: undefined, transferEncoding: undefined };
    expect(mayResend(none)).to.equal(true);
    expect(mayResend({ ...none, contentLength: '0' })).to.equal(true);
    expect(mayResend({ ...none, contentLength: ' 0 ' })).to.equal(true);
    expect(mayResend({ ...none, contentLength: '12' }), 'a streamed body').to.equal(false);
    expect(mayResend({ ...none, transferEncoding: 'chunked' }), 'a streamed body').to.equal(false);
    expect(mayResend({ heldBody: true, contentLength: '12', transferEncoding: undefined })).to.equal(true);
    expect(mayResend({ heldBody: true, contentLength: undefined, transferEncoding: 'chunked' })).to.equal(true);
  });
});
