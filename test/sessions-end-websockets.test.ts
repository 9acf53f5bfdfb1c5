// A session that ends, or an identity that changes, is out at once on its open WebSockets too
// (docs/operating/operations.md, "Signing out"): a socket keeps the identity it was upgraded with, so the gateway closes
// it (Close frame 1008 with the reason) when its session ends here (the chat front-end's sign-out,
// /auth/logout, a refused refresh, a demotion seen at refresh), within WEBSOCKET_SESSION_CHECK_SECONDS
// when it ends on another instance (back-channel logout received there, through a real Redis), and
// when its access token expires with no renewal known here; the reconnecting upgrade renews the
// cookie on its 101. Sockets of live sessions stay open. Real sockets, the real oidc-provider, the
// stand-in of Open WebUI (which echoes every frame).
import { expect } from 'chai';
import WebSocket from 'ws';
import {
  changeableDemoAccounts,
  browse,
  signIn,
  startSecondInstance,
  startWorld,
  CLIENT_ID,
  SESSION_SECRET,
  type Jar,
  type World,
} from './support/cookie-jar.js';
import type { Gateway } from '../gateway/app.js';
import { startRedis, type TestRedis } from './support/redis.js';
import { SessionCodec, type SessionData } from '../gateway/auth/session-cookie.js';
import { sleep } from './support/wait.js';

const SIGNOUT = '/api/v1/auths/signout';
const LOGOUT_EVENT = { 'http://schemas.openid.net/event/backchannel-logout': {} };

interface Client {
  ws: WebSocket;
  /** the 101 answer's Set-Cookie lines */
  setCookies: string[];
  closed: Promise<{ code: number; reason: string; afterMs: number }>;
  /** sends a frame and waits for the stand-in's echo of it */
  echo(text: string): Promise<boolean>;
}

/** A browser's Socket.IO WebSocket: its cookies, its own Origin. */
function openSocket(url: string, jar: Jar, origin: string): Promise<Client> {
  return openSocketWith(url, { cookie: jar.header('/ws/socket.io/'), origin });
}

/** A Socket.IO WebSocket with these request headers, open. */
async function openSocketWith(url: string, headers: Record<string, string>): Promise<Client> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, { headers });
  const received: string[] = [];
  ws.on('message', (data) => received.push(String(data)));
  let setCookies: string[] = [];
  ws.once('upgrade', (res) => {
    const raw = res.headers['set-cookie'];
    setCookies = raw ?? [];
  });
  const opened = Date.now();
  const closed = new Promise<{ code: number; reason: string; afterMs: number }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString(), afterMs: Date.now() - opened })),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_q, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
  });
  return {
    ws,
    get setCookies() {
      return setCookies;
    },
    closed,
    async echo(text) {
      if (ws.readyState !== ws.OPEN) return false;
      ws.send(text);
      const deadline = Date.now() + 2_000;
      while (Date.now() < deadline) {
        if (received.includes(text)) return true;
        await sleep(10);
      }
      return false;
    },
  };
}

/** Resolves with the close, or 'open' when the socket is still open after `ms`. */
async function closedWithin(c: Client, ms: number): Promise<{ code: number; reason: string } | 'open'> {
  return Promise.race([c.closed, sleep(ms).then(() => 'open' as const)]);
}

describe('sessions that end close their open WebSockets', function () {
  this.timeout(40_000);

  describe('ends on this instance: at once (the re-check timer is 300 s here)', () => {
    let w: World;
    const accounts = changeableDemoAccounts();
    before(async () => {
      w = await startWorld({ accounts, accessTokenTtl: 4, env: { TOKEN_REFRESH_MARGIN_SECONDS: '2', WEBSOCKET_SESSION_CHECK_SECONDS: '300' } });
    });
    after(() => w?.close());

    it("the chat front-end's sign-out closes that session's sockets (1008) and no other", async () => {
      const alice = await signIn(w.url, 'alice');
      const bob = await signIn(w.url, 'bob');
      const mine = await openSocket(w.url, alice.jar, w.url);
      const theirs = await openSocket(w.url, bob.jar, w.url);
      expect(await mine.echo('2probe')).to.equal(true);
      const signOutAt = Date.now();
      const out = await browse(alice.jar, SIGNOUT, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: w.url, 'sec-fetch-site': 'same-origin' },
      });
      expect(out.status).to.equal(200);
      const closed = await closedWithin(mine, 1_500);
      expect(closed).to.deep.include({ code: 1008, reason: 'signed out' });
      console.log(`      sign-out to Close frame, same instance: ${Date.now() - signOutAt} ms (sign-out answer included)`);
      expect(await closedWithin(theirs, 200), 'another user’s socket').to.equal('open');
      expect(await theirs.echo('still here')).to.equal(true);
      expect(w.obs.lines.some((l) => l.event === 'websocket-closed' && l.caller === 'alice@acme.example' && l.reason === 'signed out')).to.equal(true);
      theirs.ws.close();
    });

    it('/auth/logout closes the sockets of that session', async () => {
      const carol = await signIn(w.url, 'carol');
      const socket = await openSocket(w.url, carol.jar, w.url);
      expect((await browse(carol.jar, '/auth/logout')).status).to.equal(302);
      expect(await closedWithin(socket, 1_500)).to.deep.include({ code: 1008, reason: 'signed out' });
    });

    it('a refused refresh (seen by an HTTP request here) closes the socket at once', async () => {
      const bob = await signIn(w.url, 'bob');
      const socket = await openSocket(w.url, bob.jar, w.url);
      w.idp.failRefresh = true;
      try {
        await sleep(2_200); // inside the refresh margin: the next request refreshes
        expect((await browse(bob.jar, '/api/v1/auths/')).status).to.equal(401);
        expect(await closedWithin(socket, 1_500)).to.deep.include({ code: 1008, reason: 'signed out' });
      } finally {
        w.idp.failRefresh = false;
      }
    });

    it('a tenant switch closes the sockets opened in the other tenant at once', async () => {
      const { jar } = await signIn(w.url, 'carol'); // member of acme and globex
      const socket = await openSocket(w.url, jar, w.url);
      const before = (await browse(jar, '/auth/session')).json<{ active_tenant: string }>().active_tenant;
      const other = before === 'acme' ? 'globex' : 'acme';
      const switched = await browse(jar, '/auth/session/tenant', {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: w.url },
        body: JSON.stringify({ tenant_id: other }),
      });
      expect(switched.status).to.equal(200);
      expect(await closedWithin(socket, 1_500)).to.deep.include({ code: 1008, reason: 'identity changed' });
      const again = await openSocket(w.url, jar, w.url);
      expect(await again.echo('in the new tenant')).to.equal(true);
      again.ws.close();
    });

    it('a demotion seen at refresh closes an admin socket at once; a refresh that changes nothing keeps it', async () => {
      const sysadmin = accounts.find((a) => a.username === 'sysadmin')!;
      const { jar } = await signIn(w.url, 'sysadmin');
      const socket = await openSocket(w.url, jar, w.url);
      // First refresh: nothing changed, the socket stays and still carries frames.
      await sleep(2_200);
      expect((await browse(jar, '/api/v1/auths/')).json<{ role: string }>().role).to.equal('admin');
      expect(await closedWithin(socket, 300)).to.equal('open');
      expect(await socket.echo('after a refresh')).to.equal(true);
      // Second refresh: the realm no longer names the admin role.
      const roles = sysadmin.roles;
      sysadmin.roles = [];
      try {
        await sleep(2_200);
        expect((await browse(jar, '/api/v1/auths/')).json<{ role: string }>().role).to.equal('user');
        expect(await closedWithin(socket, 1_500)).to.deep.include({ code: 1008, reason: 'identity changed' });
      } finally {
        sysadmin.roles = roles;
      }
    });
  });

  describe('the re-check timer (WEBSOCKET_SESSION_CHECK_SECONDS=1)', () => {
    let w: World;
    let codec: SessionCodec;
    before(async () => {
      w = await startWorld({ accessTokenTtl: 4, env: { TOKEN_REFRESH_MARGIN_SECONDS: '2', WEBSOCKET_SESSION_CHECK_SECONDS: '1' } });
      codec = new SessionCodec([SESSION_SECRET], {
        secure: false,
        rollingSeconds: w.settings.oidc.rollingSeconds,
        absoluteSeconds: w.settings.oidc.absoluteSeconds,
      });
    });
    after(() => w?.close());

    it('a socket of a live session, renewed by its browser meanwhile, stays open across many re-checks', async () => {
      const { jar } = await signIn(w.url, 'alice');
      const socket = await openSocket(w.url, jar, w.url);
      // Over two access-token lifetimes the browser keeps using the app: its session is refreshed here.
      for (let i = 0; i < 9; i++) {
        await sleep(1_000);
        expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
      }
      expect(await closedWithin(socket, 10)).to.equal('open');
      expect(await socket.echo('9 re-checks later')).to.equal(true);
      socket.ws.close();
    });

    it('at the access token’s expiry with no renewal known here, the socket closes; the reconnection renews the cookie on its 101', async () => {
      const { jar } = await signIn(w.url, 'bob');
      const before = ((await codec.decrypt(jar.get('appSession')!))!.data as SessionData).expires_at;
      const socket = await openSocket(w.url, jar, w.url);
      const closed = await closedWithin(socket, 7_000);
      expect(closed).to.deep.include({ code: 1008, reason: 'session needs renewal' });
      // Socket.IO reconnects: the upgrade refreshes the session and the browser gets the new cookie.
      const again = await openSocket(w.url, jar, w.url);
      const renewed = again.setCookies.find((c) => c.startsWith('appSession='));
      expect(renewed, 'the renewed session cookie on the 101').to.be.a('string');
      jar.store(again.setCookies);
      expect(((await codec.decrypt(jar.get('appSession')!))!.data as SessionData).expires_at).to.be.greaterThan(before);
      expect(await again.echo('renewed')).to.equal(true);
      expect((await browse(jar, '/api/v1/auths/')).status, 'the renewed cookie works').to.equal(200);
      again.ws.close();
    });

    it('an upgrade that renews the session but that Open WebUI refuses (404) still hands the renewed cookie over', async () => {
      const { jar } = await signIn(w.url, 'carol');
      await sleep(3_000); // the access token is now within TOKEN_REFRESH_MARGIN_SECONDS of its expiry
      const ws = new WebSocket(`${w.url.replace('http', 'ws')}/ws/not-socket-io/?EIO=4&transport=websocket`, {
        headers: { cookie: jar.header('/ws/not-socket-io/'), origin: w.url },
      });
      ws.on('error', () => {});
      const answer = await new Promise<{ status: number; setCookies: string[] }>((resolve) =>
        ws.once('unexpected-response', (_q, res) => resolve({ status: res.statusCode ?? 0, setCookies: res.headers['set-cookie'] ?? [] })),
      );
      expect(answer.status).to.equal(404);
      expect(
        answer.setCookies.some((c) => c.startsWith('appSession=')),
        'the renewed session cookie on the refusal',
      ).to.equal(true);
    });
  });

  describe('a bearer token’s socket (WEBSOCKET_SESSION_CHECK_SECONDS=1)', () => {
    let w: World;
    before(async () => {
      w = await startWorld({ accessTokenTtl: 2, env: { WEBSOCKET_SESSION_CHECK_SECONDS: '1' } });
    });
    after(() => w?.close());

    it('lives as long as a request would take its token (expiry plus the clock tolerance), then closes', async () => {
      const token = await w.idp.accessTokenFor('alice', CLIENT_ID);
      const { closed } = await openSocketWith(w.url, { authorization: `Bearer ${token}` });
      const c = await Promise.race([closed, sleep(10_000).then(() => 'open' as const)]);
      expect(c).to.deep.include({ code: 1008, reason: 'token expired' });
      const { afterMs } = c as { afterMs: number };
      expect(afterMs, 'not before the token (2 s) and its tolerance (5 s) ran out').to.be.within(5_000, 9_000);
      const refused = await fetch(`${w.url}/api/v1/auths/`, { headers: { authorization: `Bearer ${token}` } });
      expect(refused.status, 'a request with the token is refused too').to.equal(401);
    });
  });

  describe('ends on another instance, through a real Redis', () => {
    let redis: TestRedis;
    let w: World;
    let b: Gateway;
    let bUrl: string;
    before(async () => {
      redis = await startRedis();
      w = await startWorld({ env: { REDIS_URL: redis.url, WEBSOCKET_SESSION_CHECK_SECONDS: '1' } });
      // Instance B: the same settings (PUBLIC_URL is A's, the load balancer's address), its own process state.
      ({ gateway: b, url: bUrl } = await startSecondInstance(w));
    });
    after(async () => {
      await b?.close();
      await w?.close();
      await redis?.stop();
    });

    it('back-channel logout received by instance A closes the socket open on instance B within the re-check time', async () => {
      const alice = await signIn(w.url, 'alice');
      const bob = await signIn(w.url, 'bob');
      const onB = await openSocket(bUrl, alice.jar, w.url);
      const othersOnB = await openSocket(bUrl, bob.jar, w.url);
      expect(await onB.echo('on B')).to.equal(true);
      const sub = (await browse(alice.jar, '/auth/session')).json<{ user: { sub: string } }>().user.sub;
      await sleep(1_100); // a session begun in the token's own second counts as before it
      const token = await w.idp.signJwt({ aud: CLIENT_ID, sub, jti: 'ws-sub-1', events: LOGOUT_EVENT, exp: undefined });
      const postedAt = Date.now();
      const posted = await fetch(`${w.url}/auth/backchannel-logout`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ logout_token: token }),
      });
      expect(posted.status).to.equal(204);
      const closed = await closedWithin(onB, 3_000);
      expect(closed).to.deep.include({ code: 1008, reason: 'signed out' });
      console.log(`      back-channel logout at A to Close frame on B (re-check every 1 s): ${Date.now() - postedAt} ms`);
      expect(await closedWithin(othersOnB, 10), 'another user’s socket on B').to.equal('open');
      expect(await othersOnB.echo('still here')).to.equal(true);
      othersOnB.ws.close();
    });

    it("the chat front-end's sign-out at instance A closes the session's socket on instance B within the re-check time", async () => {
      const carol = await signIn(w.url, 'carol');
      const onB = await openSocket(bUrl, carol.jar, w.url);
      expect(await onB.echo('on B')).to.equal(true);
      const out = await browse(carol.jar, SIGNOUT, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: w.url, 'sec-fetch-site': 'same-origin' },
      });
      expect(out.status).to.equal(200);
      const closed = await closedWithin(onB, 3_000);
      expect(closed).to.deep.include({ code: 1008, reason: 'signed out' });
    });
  });
});
