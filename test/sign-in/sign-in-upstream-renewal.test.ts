// The identity's sign-in at Open WebUI is cached (gateway/upstream/accounts.ts); Open WebUI may
// refuse its token before that cache expires (a password set by an admin, the user's sessions
// revoked: a new session_stamp). The gateway then checks the token once, signs the identity in
// again and sends the request once more when its whole body is in hand: the user's requests keep
// working. A caller whose routes answer 401 on their own costs one check a while, never a sign-in.
// Over real sockets, in front of the Open WebUI stand-in, which revokes as 0.12.4 does.
import { expect } from 'chai';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings } from '../../config/settings.js';
import type { Env } from '../../config/env.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { ACCESS_PROHIBITED } from '../../sandbox/open-webui/http.js';
import { TOKEN_CHECK_INTERVAL_MS } from '../../policies/sign-in-renewal.js';
import { baseEnv, capturingObservability, headerAuthenticator, type LogLine } from '../support/gateway-harness.js';
import { seedChats, seedFiles, seedUsers } from '../support/raw-http.js';
import { PEOPLE } from '../support/live-policy.js';

type Who = keyof typeof PEOPLE;

interface World {
  gateway: Gateway;
  url: string;
  lines: LogLine[];
  as(who: Who, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; json: unknown; text: string }>;
  metric(name: string): Promise<string>;
  close(): Promise<void>;
}

/** A gateway in front of `upstreamUrl`, its callers named by `x-test-caller` (PEOPLE). */
async function gatewayBefore(upstreamUrl: string, env: Env = {}): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'renewal-'));
  const providers = join(dir, 'providers.json');
  writeFileSync(providers, JSON.stringify(demoIdentityProviders));
  const settings = loadSettings(baseEnv(upstreamUrl, { DRIFT_CHECK_SECONDS: '0', IDP_PROVIDERS_FILE: providers, ...env }), { stageFiles: false });
  const obs = capturingObservability();
  const gateway = await createGateway(settings, { obs, authenticator: headerAuthenticator(PEOPLE) });
  const { url } = await gateway.listen(0, '127.0.0.1');
  return {
    gateway,
    url,
    lines: obs.lines,
    async as(who, method, path, body, headers = {}) {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { 'x-test-caller': who, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, json, text };
    },
    metric: (name) => obs.metrics.registry.getSingleMetricAsString(name),
    async close() {
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('a cached sign-in Open WebUI refused is renewed (the stand-in revokes as 0.12.4 does)', function () {
  this.timeout(20_000);
  let upstream: OpenWebUIStandIn;
  let w: World;
  beforeEach(async () => {
    upstream = await startOpenWebUI({ users: seedUsers.map((u) => ({ ...u })), files: seedFiles(), chats: seedChats(), enableAdminChatAccess: true });
    w = await gatewayBefore(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true' });
  });
  afterEach(async () => {
    await w?.close();
    await upstream?.close();
  });

  /** What reached Open WebUI from `from` on, as `METHOD path` with the token it carried named t0 (first seen), t1, ... */
  const seen = (from: number) => {
    const names = new Map<string, string>();
    return upstream.requests.slice(from).map((r) => {
      const token = /^Bearer (.+)$/.exec(String(r.headers.authorization ?? ''))?.[1];
      if (token && !names.has(token)) names.set(token, `t${names.size}`);
      return `${r.method} ${r.url.split('?')[0]}${token ? ` ${names.get(token)}` : ''}`;
    });
  };

  it('a user whose Open WebUI sessions were revoked: their next GET answers 200 with their own data, after one check and one sign-in; counted and logged once, no token in the log', async () => {
    expect((await w.as('user', 'GET', '/api/v1/auths/')).json).to.include({ id: 'u-alice' });
    const mark = upstream.requests.length;
    upstream.revokeSessions('u-alice'); // as an admin's "revoke sessions" or a password set does
    const again = await w.as('user', 'GET', '/api/v1/auths/');
    expect(again.status, again.text).to.equal(200);
    expect(again.json).to.include({ id: 'u-alice', email: 'alice@acme.example' });
    // refused, checked with that token, signed in, sent again with the new one
    expect(seen(mark)).to.deep.equal(['GET /api/v1/auths/ t0', 'GET /api/v1/auths/ t0', 'POST /api/v1/auths/signin', 'GET /api/v1/auths/ t1']);
    const newToken = (again.json as { token: string }).token;
    // and it stays renewed
    const mark2 = upstream.requests.length;
    expect((await w.as('user', 'GET', '/api/v1/chats/')).status).to.equal(200);
    expect(seen(mark2)).to.deep.equal(['GET /api/v1/chats/ t0']);
    expect(await w.metric('gateway_upstream_signin_renewals_total')).to.include('gateway_upstream_signin_renewals_total{reason="revoked"} 1');
    expect(await w.metric('gateway_upstream_token_checks_total')).to.include('gateway_upstream_token_checks_total{result="refused"} 1');
    const logged = w.lines.filter((l) => l.event === 'upstream-sign-in-renewed');
    expect(logged.map((l) => [l.level, l.reason, l.caller])).to.deep.equal([[30, 'revoked', 'alice@acme.example']]);
    const tokens = upstream.requests.map((r) => /^Bearer (.+)$/.exec(String(r.headers.authorization ?? ''))?.[1]).filter((t) => t !== undefined);
    expect(tokens).to.include(newToken);
    for (const t of tokens) expect(JSON.stringify(w.lines), 'no token in the log').to.not.include(t);
  });

  it('a streamed body is never sent twice: that request gets Open WebUI\u2019s 401, the next one works', async () => {
    expect((await w.as('user', 'GET', '/api/v1/auths/')).status).to.equal(200);
    upstream.revokeSessions('u-alice');
    const mark = upstream.requests.length;
    const path = '/api/v1/chats/c-u-alice/messages/m-1';
    const first = await w.as('user', 'POST', path, { content: 'first words' });
    expect([first.status, first.json]).to.deep.equal([401, { detail: 'Invalid token' }]);
    expect(seen(mark)).to.deep.equal([`POST ${path} t0`, 'GET /api/v1/auths/ t0', 'POST /api/v1/auths/signin']);
    const second = await w.as('user', 'POST', path, { content: 'second words' });
    expect(second.status, second.text).to.equal(200);
    expect(JSON.stringify(upstream.chats.get('c-u-alice')!.chat)).to.include('second words');
  });

  it('a body the gateway read to judge it is sent again: an admin\u2019s update of their own account', async () => {
    expect((await w.as('admin', 'GET', '/api/v1/auths/')).json).to.include({ id: 'u-admin' });
    upstream.revokeSessions('u-admin');
    const mark = upstream.requests.length;
    const path = '/api/v1/users/u-admin/update';
    const r = await w.as('admin', 'POST', path, { name: 'Sam S. Sysadmin', email: 'sysadmin@platform.example' }, { origin: w.url });
    expect(r.status, r.text).to.equal(200);
    expect(upstream.users.get('u-admin')!.name).to.equal('Sam S. Sysadmin');
    // the email lookup (a read of the gateway's own) renewed the sign-in; the forward then found the newer token at once
    expect(seen(mark)).to.deep.equal([
      'GET /api/v1/auths/ t0',
      'GET /api/v1/auths/ t0',
      'POST /api/v1/auths/signin',
      'GET /api/v1/auths/ t1',
      `POST ${path} t0`,
      `POST ${path} t1`,
    ]);
  });

  it('the views the gateway answers from its own reads (an admin\u2019s files) read again with the renewed token, not a 502', async () => {
    const ids = (json: unknown) => (json as { items: Array<{ id: string }> }).items.map((f) => f.id);
    const own = ids((await w.as('admin', 'GET', '/api/v1/files/')).json);
    expect(own).to.include('f-admin-0');
    upstream.revokeSessions('u-admin');
    const r = await w.as('admin', 'GET', '/api/v1/files/');
    expect(r.status, r.text).to.equal(200);
    expect(ids(r.json)).to.deep.equal(own);
    expect(await w.metric('gateway_upstream_signin_renewals_total')).to.include('{reason="revoked"} 1');
  });

  it('an admin revoking their own sessions through the gateway: the next request works', async () => {
    const revoke = await w.as('admin', 'POST', '/api/v1/users/u-admin/sessions/revoke', {}, { origin: w.url });
    expect([revoke.status, revoke.json]).to.deep.equal([200, true]);
    const r = await w.as('admin', 'GET', '/api/v1/auths/');
    expect(r.status, r.text).to.equal(200);
    expect(r.json).to.include({ id: 'u-admin' });
  });

  it('a deleted account: renewed with reason account-gone (Open WebUI makes the account anew, as at a first sign-in)', async () => {
    expect((await w.as('user', 'GET', '/api/v1/auths/')).status).to.equal(200);
    upstream.users.delete('u-alice');
    const r = await w.as('user', 'GET', '/api/v1/auths/');
    expect(r.status, r.text).to.equal(200);
    expect(r.json).to.include({ email: 'alice@acme.example' });
    expect(await w.metric('gateway_upstream_signin_renewals_total')).to.include('{reason="account-gone"} 1');
  });

  it('a user hammering an admin-only route (401 of its own): at most one check per interval, no sign-in, Open WebUI\u2019s 401 every time', async () => {
    expect((await w.as('user', 'GET', '/api/v1/auths/')).status).to.equal(200);
    const mark = upstream.requests.length;
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 10 }, () => w.as('user', 'GET', '/api/v1/analytics/daily')));
    for (let i = 0; i < 20; i++) answers.push(await w.as('user', 'GET', '/api/v1/analytics/daily'));
    const elapsed = Date.now() - started;
    for (const a of answers) expect([a.status, a.json]).to.deep.equal([401, { detail: ACCESS_PROHIBITED }]);
    const asked = seen(mark);
    expect(
      asked.filter((a) => a.startsWith('POST /api/v1/auths/signin')),
      'no sign-in',
    ).to.deep.equal([]);
    const checks = asked.filter((a) => a.startsWith('GET /api/v1/auths/')).length;
    expect(checks, `checks in ${elapsed} ms`).to.be.within(1, 1 + Math.floor(elapsed / TOKEN_CHECK_INTERVAL_MS));
    expect(
      asked.filter((a) => a.startsWith('GET /api/v1/analytics/daily')),
      'none sent twice',
    ).to.have.length(30);
    expect(await w.metric('gateway_upstream_token_checks_total')).to.include(`{result="accepted"} ${checks}`);
    expect(await w.metric('gateway_upstream_signin_renewals_total')).to.not.match(/renewals_total\{/);
  });

  it('two instances in front of one Open WebUI: each renews its own sign-in once, and neither renewal refuses the other\u2019s token', async () => {
    const second = await gatewayBefore(upstream.url);
    try {
      for (const g of [w, second]) expect((await g.as('user', 'GET', '/api/v1/auths/')).status).to.equal(200);
      upstream.revokeSessions('u-alice');
      for (let round = 0; round < 2; round++)
        for (const g of [w, second]) {
          const r = await g.as('user', 'GET', '/api/v1/chats/');
          expect(r.status, r.text).to.equal(200);
        }
      for (const g of [w, second]) expect(await g.metric('gateway_upstream_signin_renewals_total')).to.include('{reason="revoked"} 1');
    } finally {
      await second.close();
    }
  });

  it('a caller\u2019s own API key is not the gateway\u2019s to renew: its 401s are never checked', async () => {
    const key = upstream.apiKeyFor('u-alice');
    const mark = upstream.requests.length;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${w.url}/api/v1/analytics/daily`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).to.equal(401);
    }
    // the one lookup of whose key it is, then the three requests; nothing else
    expect(seen(mark).filter((a) => !a.startsWith('GET /api/v1/analytics/daily'))).to.deep.equal(['GET /api/v1/auths/ t0']);
    expect(await w.metric('gateway_upstream_token_checks_total')).to.not.match(/checks_total\{/);
  });
});

describe('a scripted Open WebUI: a renewal that fails, a client that leaves while its 401 waits', function () {
  this.timeout(20_000);
  // sign-ins give token-1, token-2, ... (or fail); a token in `refused` is answered 401 Invalid token
  const o = { signInFails: false, checkDelayMs: 0 };
  let issued = 0;
  const refused = new Set<string>();
  const seen: string[] = [];
  const upstream = createServer((req: IncomingMessage, res: ServerResponse) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    req.resume();
    if (req.url === '/api/version') return answer(200, { version: '0.12.4' });
    const token = String(req.headers.authorization ?? '').replace('Bearer ', '');
    seen.push(`${req.method} ${req.url}${token ? ` ${token}` : ''}`);
    if (req.url === '/api/v1/auths/signin')
      return o.signInFails ? answer(500, { detail: 'down' }) : answer(200, { token: `token-${++issued}`, id: 'u-alice', role: 'user' });
    const reply = () =>
      refused.has(token) ? answer(401, { detail: 'Invalid token' }) : answer(200, { id: 'u-alice', email: 'alice@acme.example', role: 'user' });
    if (req.url === '/api/v1/auths/' && o.checkDelayMs) setTimeout(reply, o.checkDelayMs);
    else reply();
  });
  let w: World;
  before(async () => {
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
    w = await gatewayBefore(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`);
  });
  after(async () => {
    await w?.close();
    await new Promise((r) => upstream.close(r));
  });

  it('the new sign-in fails: Open WebUI\u2019s 401 as it came, nothing sent without the token, the failure logged', async () => {
    expect((await w.as('user', 'GET', '/api/v1/chats/')).status).to.equal(200);
    refused.add('token-1');
    o.signInFails = true;
    seen.length = 0;
    try {
      const r = await w.as('user', 'GET', '/api/v1/chats/');
      expect([r.status, r.json]).to.deep.equal([401, { detail: 'Invalid token' }]);
      expect(seen).to.deep.equal(['GET /api/v1/chats/ token-1', 'GET /api/v1/auths/ token-1', 'POST /api/v1/auths/signin']);
      expect(w.lines.filter((l) => l.event === 'upstream-sign-in-renewal-failed').map((l) => [l.level, l.reason])).to.deep.equal([[40, 'revoked']]);
    } finally {
      o.signInFails = false;
    }
  });

  it('the client leaves while its 401 waits on the check: nothing sent again, the next request works', async () => {
    // the admin: the user's token was checked by the test before, and is not again within the interval
    const before = await w.as('admin', 'GET', '/api/v1/chats/');
    expect(before.status, before.text).to.equal(200);
    const current = `token-${issued}`;
    refused.add(current);
    o.checkDelayMs = 300;
    seen.length = 0;
    try {
      const gone = await fetch(`${w.url}/api/v1/chats/`, { headers: { 'x-test-caller': 'admin' }, signal: AbortSignal.timeout(100) }).catch((e: Error) => e);
      expect(gone).to.be.instanceOf(Error);
      await new Promise((r) => setTimeout(r, 600));
      expect(seen).to.deep.equal([`GET /api/v1/chats/ ${current}`, `GET /api/v1/auths/ ${current}`, 'POST /api/v1/auths/signin']);
      const next = await w.as('admin', 'GET', '/api/v1/chats/');
      expect(next.status, next.text).to.equal(200);
      expect(seen.at(-1)).to.equal(`GET /api/v1/chats/ token-${issued}`);
    } finally {
      o.checkDelayMs = 0;
    }
  });
});
