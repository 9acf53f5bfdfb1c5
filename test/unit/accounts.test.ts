// gateway/upstream/accounts.ts with a scripted Open WebUI (no sockets) and the clock in hand: a
// refused token is checked once per identity at a time and once per interval at most, and only a
// token a sign-in here gave is ever renewed.
import { expect } from 'chai';
import type { Calls, UpstreamResponse } from '../../gateway/upstream/calls.js';
import { UpstreamAccounts } from '../../gateway/upstream/accounts.js';
import { TOKEN_CHECK_INTERVAL_MS } from '../../policies/sign-in-renewal.js';

const NAMES = { email: 'x-forwarded-email', name: 'x-forwarded-name', role: 'x-forwarded-role', groups: 'x-forwarded-groups', noGroups: 'no-group-x' };
const alice = { email: 'alice@acme.example', name: 'Alice', admin: false, groups: [] };

/** Open WebUI as far as the accounts see it: sign-ins give t1, t2, ...; a token in `refused` is answered 401. */
function scripted() {
  const asked: string[] = [];
  const refused = new Set<string>();
  let issued = 0;
  let release: () => void = () => {};
  let held: Promise<void> | undefined;
  const answer = (status: number, body: unknown): UpstreamResponse => ({ status, headers: {}, body: Buffer.from(JSON.stringify(body)) });
  const calls: Calls = {
    async call(method, path, headers) {
      const token = String(headers.authorization ?? '').replace('Bearer ', '');
      asked.push(`${method} ${path}${token ? ` ${token}` : ''}`);
      if (held) await held;
      if (path === '/api/v1/auths/signin') return answer(200, { token: `t${++issued}`, id: 'u-alice', role: 'user' });
      return refused.has(token) ? answer(401, { detail: 'Invalid token' }) : answer(200, { id: 'u-alice' });
    },
  };
  return {
    calls,
    asked,
    refused,
    /** every answer waits until `go()` */
    hold: () => (held = new Promise<void>((r) => (release = r))),
    go: () => {
      held = undefined;
      release();
    },
  };
}

describe('unit: the cached sign-in, renewed once Open WebUI refused its token', () => {
  let now = 1_000_000;
  const clock = () => now;

  it('concurrent 401s of one identity: one check, one sign-in, every one gets the new token', async () => {
    const up = scripted();
    const accounts = new UpstreamAccounts(up.calls, NAMES, undefined, clock);
    const t1 = (await accounts.signIn(alice)).token!;
    up.refused.add(t1);
    up.hold();
    const all = Array.from({ length: 5 }, () => accounts.renewed(t1));
    up.go();
    expect(await Promise.all(all)).to.deep.equal(['t2', 't2', 't2', 't2', 't2']);
    expect(up.asked).to.deep.equal(['POST /api/v1/auths/signin', 'GET /api/v1/auths/ t1', 'POST /api/v1/auths/signin']);
    expect((await accounts.signIn(alice)).token, 'the cache holds the new sign-in').to.equal('t2');
    // a request that left with t1 later still finds t2, at once
    expect(await accounts.renewed(t1)).to.equal('t2');
    expect(up.asked).to.have.length(3);
  });

  it('a 401 that is the route\u2019s own: one check per interval, and the interval counts from the check\u2019s end', async () => {
    const up = scripted();
    const accounts = new UpstreamAccounts(up.calls, NAMES, undefined, clock);
    const t1 = (await accounts.signIn(alice)).token!;
    for (let i = 0; i < 10; i++) expect(await accounts.renewed(t1)).to.equal(undefined);
    expect(up.asked.filter((a) => a.startsWith('GET'))).to.have.length(1);
    now += TOKEN_CHECK_INTERVAL_MS - 1;
    expect(await accounts.renewed(t1)).to.equal(undefined);
    expect(up.asked.filter((a) => a.startsWith('GET'))).to.have.length(1);
    now += 2;
    // revoked meanwhile: the next check finds it, once the interval is over
    up.refused.add(t1);
    expect(await accounts.renewed(t1)).to.equal('t2');
    expect(up.asked.filter((a) => a.startsWith('GET'))).to.have.length(2);
    // the new token refused at once too (a release that revokes by the second): not again within the interval
    up.refused.add('t2');
    expect(await accounts.renewed('t2')).to.equal(undefined);
    expect(up.asked.filter((a) => a.startsWith('POST'))).to.have.length(2);
    now += TOKEN_CHECK_INTERVAL_MS + 1;
    expect(await accounts.renewed('t2')).to.equal('t3');
  });

  it('a check slower than the interval is still the only one', async () => {
    const up = scripted();
    const accounts = new UpstreamAccounts(up.calls, NAMES, undefined, clock);
    const t1 = (await accounts.signIn(alice)).token!;
    up.hold();
    const first = accounts.renewed(t1);
    now += 3 * TOKEN_CHECK_INTERVAL_MS;
    const second = accounts.renewed(t1);
    up.go();
    expect(await Promise.all([first, second])).to.deep.equal([undefined, undefined]);
    expect(up.asked.filter((a) => a.startsWith('GET'))).to.have.length(1);
  });

  it('a token no sign-in here gave (an API key, a client\u2019s own): undefined at once, nothing asked', async () => {
    const up = scripted();
    const accounts = new UpstreamAccounts(up.calls, NAMES, undefined, clock);
    await accounts.signIn(alice);
    expect(accounts.renewed('sk-0123')).to.equal(undefined);
    expect(accounts.renewed('someone-elses-jwt')).to.equal(undefined);
    expect(up.asked).to.deep.equal(['POST /api/v1/auths/signin']);
  });
});
