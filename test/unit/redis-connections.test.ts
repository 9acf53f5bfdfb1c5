// What an operator is told when Redis refuses the gateway: which servers, and which variables to check.
import { expect } from 'chai';
import { refusalHint } from '../../gateway/state/redis-connections.js';
import type { RedisTarget } from '../../config/redis.js';

const url: RedisTarget = { url: 'redis://redis:6379/0' };
const sentinel: RedisTarget = { sentinel: { sentinels: [{ host: 's', port: 26379 }], name: 'mymaster', tls: false } };
const cluster: RedisTarget = { cluster: { nodes: [{ host: 'n', port: 6379 }], tls: false } };
const WRONGPASS = 'WRONGPASS invalid username-password pair or user is disabled.';

describe('redis-connections: refusalHint', () => {
  it('names the variables of the servers that refused the sign-in', () => {
    expect(refusalHint(url, WRONGPASS)).to.include('REDIS_URL');
    expect(refusalHint(cluster, 'NOAUTH Authentication required.')).to.include('REDIS_USERNAME and REDIS_PASSWORD');
    expect(refusalHint(sentinel, WRONGPASS), 'a data node').to.include('REDIS_USERNAME and REDIS_PASSWORD');
    expect(refusalHint(sentinel, `All sentinels are unreachable. Retrying from scratch after 500ms. Last error: ${WRONGPASS}`)).to.include(
      'REDIS_SENTINEL_USERNAME and REDIS_SENTINEL_PASSWORD',
    );
  });

  it('points a missing permission at the ACL users the gateway needs, and says nothing of other errors', () => {
    expect(refusalHint(cluster, "NOPERM this user has no permissions to run the 'subscribe' command")).to.include('ACL users');
    for (const message of ['connect ECONNREFUSED 127.0.0.1:6379', 'Connection is closed.', 'wrongpassword-free text'])
      expect(refusalHint(sentinel, message), message).to.equal('');
  });
});
