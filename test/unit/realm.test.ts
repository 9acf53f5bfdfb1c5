// gateway/auth/realm.ts noAnswer: which failures of a request to the realm mean it did not answer
// (asked again later: a refresh ends nothing, a sign-in gets the 503 page) and which are its answer.
import { expect } from 'chai';
import { ClientError, ResponseBodyError } from 'openid-client';
import { noAnswer } from '../../gateway/auth/realm.js';

/** openid-client sets `code` on the errors it throws (its constructor's options type does not name it) */
const coded = <E extends Error>(err: E, code: string): E => Object.assign(err, { code });

describe('the realm did not answer, or answered', () => {
  const timeout = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
  const cases: Array<[string, unknown, ReturnType<typeof noAnswer>]> = [
    ["openid-client's timeout (a realm that hangs)", coded(new ClientError('operation timed out', { cause: timeout }), 'OAUTH_TIMEOUT'), 'timeout'],
    ["openid-client's abort", coded(new ClientError('operation aborted'), 'OAUTH_ABORT'), 'unreachable'],
    ["fetch's own timeout", timeout, 'timeout'],
    ["fetch's refused or reset connection", new TypeError('fetch failed'), 'unreachable'],
    ['an abort', new DOMException('aborted', 'AbortError'), 'unreachable'],
    ["openid-client's refusal of an answer", coded(new ClientError('unexpected response content-type'), 'OAUTH_RESPONSE_IS_NOT_JSON'), undefined],
    [
      "openid-client's refusal of an argument (a TypeError with a code)",
      Object.assign(new TypeError('"server" must be a URL'), { code: 'ERR_INVALID_ARG_TYPE' }),
      undefined,
    ],
    [
      "the token endpoint's error answer",
      new ResponseBodyError('server responded with an error', {
        cause: { error: 'invalid_grant' },
        response: new Response('{"error":"invalid_grant"}', { status: 400 }),
      } as never),
      undefined,
    ],
    ['anything else', new Error('ID token signature does not verify'), undefined],
  ];
  for (const [what, err, expected] of cases) it(`${what}: ${expected ?? 'an answer'}`, () => expect(noAnswer(err)).to.equal(expected));
});
