// Hardening, faults: the upstream down, refusing, resetting mid-body, stalling before its headers or
// inside a stream (every pooled socket held by it, too), answering garbage on a rewritten route; the
// identity provider down or hung; Keycloak failing under load; slow clients (slow headers, stalled
// bodies, clients that stop reading, many half-open connections). Every time: a clean 502/504 (or a
// clear page), streams that end, no socket left open on either side once things settle, and other
// requests served meanwhile.
import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import zlib from 'node:zlib';
import { Router } from 'express';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';
import { startWorld, signIn, browse, Jar, CLIENT_ID, CLIENT_SECRET, SESSION_SECRET, type World } from '../support/cookie-jar.js';
import { loginThroughIdp } from '../../sandbox/idp-browser.js';
import { startKeycloakAdmin, type KeycloakAdmin, type KeycloakFault } from '../support/keycloak-admin.js';
import type { Authenticator } from '../../gateway/auth/identity.js';
import { connectionsOf, deadPort, settleTo, STACK_TRACE } from '../support/raw-http.js';
import { sleep, until } from '../support/wait.js';

const UPSTREAM_TIMEOUT_MS = 500;
/** effective idle limit: IDLE_TIMEOUT_MS, never below UPSTREAM_TIMEOUT_MS + 1 s */
const IDLE_TIMEOUT_MS = 1_500;
/** gateway/auth/realm.ts HTTP_TIMEOUT_MS: each request of the gateway's to the realm */
const REALM_TIMEOUT_MS = 5_000;

type Behaviour = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** An upstream whose behaviour is chosen per test; counts its open sockets and the ones mid-request. */
async function faultyUpstream() {
  const sockets = new Set<net.Socket>();
  let busy = 0;
  let behaviour: Behaviour = ok;
  const server = http.createServer((req, res) => {
    busy++;
    res.once('close', () => busy--);
    // the gateway asks who an API key belongs to: always answered
    if (req.url === '/api/v1/auths/') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ id: 'u-admin', email: 'admin@platform.test', name: 'Admin', role: 'admin' }));
    }
    if (req.url?.startsWith('/static/healthy')) return ok(req, res);
    behaviour(req, res);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    set(b: Behaviour) {
      behaviour = b;
    },
    sockets: () => sockets.size,
    /** requests whose answer is not finished (a stuck one is a leak) */
    busy: () => busy,
    async close() {
      server.closeAllConnections();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function ok(req: http.IncomingMessage, res: http.ServerResponse) {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ items: [{ id: 'f1', user_id: 'u-admin' }], total: 1 }));
  });
}

const KEY = 'sk-0123456789abcdef';
const AUTH = { authorization: `Bearer ${KEY}` };

/** One request on its own connection (`agent: false`); never hangs past `ms`. A truncated body is 'aborted'. */
function get(
  url: string,
  headers: Record<string, string> = AUTH,
  ms = 5_000,
): Promise<{ status: number; body: string; ended: 'complete' | 'aborted'; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const req = http.get(url, { headers, agent: false, timeout: ms }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('error', () => undefined);
      res.on('close', () => resolve({ status: res.statusCode ?? 0, body, ended: res.complete ? 'complete' : 'aborted', ms: Date.now() - started }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${ms} ms`)));
    req.on('error', reject);
  });
}

/** The faulty upstream behind a gateway with the suite's short timeouts (and `extra`). */
async function faultyWorld(extra: Record<string, string> = {}) {
  const up = await faultyUpstream();
  const gw = await startGateway(
    baseEnv(up.url, {
      ALLOW_UPSTREAM_API_KEYS: 'true',
      UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
      IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
      LOG_LEVEL: 'error',
      ...extra,
    }),
  );
  return { up, gw };
}

describe('hardening: upstream faults', function () {
  this.timeout(30_000);
  let up: Awaited<ReturnType<typeof faultyUpstream>>;
  let gw: RunningGateway;

  before(async () => {
    ({ up, gw } = await faultyWorld());
  });
  after(async () => {
    await gw?.close();
    await up?.close();
  });

  let upstreamBaseline = 0;
  beforeEach(async () => {
    up.set(ok);
    expect((await get(`${gw.url}/static/healthy.js`)).status).to.equal(200);
    upstreamBaseline = up.sockets();
  });

  /** After a fault: the gateway serves again, and no socket is left open on either side. */
  async function expectRecovered(what: string) {
    up.set(ok);
    const healthy = await get(`${gw.url}/static/healthy.js`);
    expect(healthy.status, `${what}: the gateway stopped serving`).to.equal(200);
    expect(await settleTo(() => connectionsOf(gw.gateway.server), 0), `${what}: client connections left open`).to.equal(0);
    // none stuck mid-request; the keep-alive pool may keep a few idle ones (parallel rewrite fetches)
    expect(await settleTo(() => up.busy(), 0), `${what}: upstream requests left hanging`).to.equal(0);
    expect(await settleTo(() => up.sockets(), upstreamBaseline + 3), `${what}: upstream sockets left open`).to.be.at.most(upstreamBaseline + 3);
  }

  const ROUTES = {
    streamed: '/api/v1/files/f1/content', // forwarded as a stream
    rewritten: '/api/v1/files/', // fetched, checked and rewritten by the gateway
    public: '/static/app.js', // forwarded without identity
  } as const;

  it('refusing (connection reset before any answer): 502 with a JSON detail on every route', async () => {
    up.set((req) => req.socket.destroy());
    for (const [kind, path] of Object.entries(ROUTES)) {
      const r = await get(gw.url + path);
      expect(r.status, kind).to.equal(502);
      expect(JSON.parse(r.body), kind).to.have.property('detail');
      expect(r.body, kind).to.not.match(STACK_TRACE);
    }
    await expectRecovered('refusing');
  });

  it('answering something that is not HTTP: 502', async () => {
    up.set((req) => req.socket.end('SSH-2.0-OpenSSH_9.6\r\n\r\n'));
    for (const [kind, path] of Object.entries(ROUTES)) expect((await get(gw.url + path)).status, kind).to.equal(502);
    await expectRecovered('not HTTP');
  });

  it('resetting mid-body: a streamed answer ends (aborted, never hanging); a rewritten one is 502', async () => {
    up.set((req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '100000' });
      res.write(Buffer.alloc(1000, 1));
      setTimeout(() => req.socket.destroy(), 50);
    });
    const streamed = await get(gw.url + ROUTES.streamed);
    expect(streamed.status).to.equal(200);
    expect(streamed.ended).to.equal('aborted');
    expect(streamed.ms).to.be.lessThan(2_000);
    expect((await get(gw.url + ROUTES.rewritten)).status).to.equal(502);
    await expectRecovered('reset mid-body');
  });

  it('stalling before its headers: 504 after UPSTREAM_TIMEOUT_MS, and other requests are served meanwhile', async () => {
    up.set(() => undefined);
    const stalled = Promise.all(Object.values(ROUTES).map((p) => get(gw.url + p)));
    await sleep(50);
    const meanwhile = await get(`${gw.url}/static/healthy.js`);
    expect(meanwhile.status).to.equal(200);
    expect(meanwhile.ms).to.be.lessThan(UPSTREAM_TIMEOUT_MS);
    for (const r of await stalled) {
      expect(r.status).to.equal(504);
      expect(r.ms).to.be.within(UPSTREAM_TIMEOUT_MS - 50, UPSTREAM_TIMEOUT_MS + 1_500);
      expect(JSON.parse(r.body)).to.have.property('detail');
    }
    await expectRecovered('stalled headers');
  });

  it('stalling inside a stream: cut after IDLE_TIMEOUT_MS of silence (regression: it hung for five minutes); a rewritten route is 504', async () => {
    up.set((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
    });
    const sse = await get(gw.url + ROUTES.streamed);
    expect(sse.status).to.equal(200);
    expect(sse.ended).to.equal('aborted');
    expect(sse.ms).to.be.within(IDLE_TIMEOUT_MS - 100, IDLE_TIMEOUT_MS + 2_000);
    const rewritten = await get(gw.url + ROUTES.rewritten);
    expect(rewritten.status).to.equal(504);
    await expectRecovered('stalled stream');
  });

  it('a slow but live stream is not cut: events further apart than nothing, closer than IDLE_TIMEOUT_MS', async () => {
    up.set((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      let n = 0;
      const timer = setInterval(() => {
        res.write(`data: ${n}\n\n`);
        if (++n === 5) {
          clearInterval(timer);
          res.end();
        }
      }, IDLE_TIMEOUT_MS / 2);
      res.on('close', () => clearInterval(timer));
    });
    const r = await get(gw.url + ROUTES.streamed, AUTH, 10_000);
    expect(r.ended).to.equal('complete');
    expect(r.body.match(/data:/g)).to.have.length(5);
    await expectRecovered('slow stream');
  });

  describe('garbage on a rewritten route fails closed (502), never passes through', () => {
    const cases: Array<[string, Behaviour]> = [
      [
        'truncated chunked encoding',
        (_q, res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write('{"items":[{"id":"f2","user_id":"u-other"}');
          setTimeout(() => res.socket?.destroy(), 20);
        },
      ],
      [
        'Content-Length longer than the body',
        (_q, res) => {
          const socket = res.socket;
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
          res.end('{"items":[{"id":"f2","user_id":"u-other"}],"total":1}');
          setTimeout(() => socket?.destroy(), 20);
        },
      ],
      ['an item without user_id', (_q, res) => res.end(JSON.stringify({ items: [{ id: 'f2' }], total: 1 }))],
      ['a user_id that is not a string', (_q, res) => res.end(JSON.stringify({ items: [{ id: 'f2', user_id: ['u-admin'] }], total: 1 }))],
      ['items that are not objects', (_q, res) => res.end(JSON.stringify({ items: ['u-other'], total: 1 }))],
      ['a total that is not a number', (_q, res) => res.end(JSON.stringify({ items: [], total: 'u-other' }))],
      [
        'gzip that is not gzip',
        (_q, res) => {
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          res.end('{"items":[{"id":"f2","user_id":"u-other"}],"total":1}');
        },
      ],
      [
        'a gzip bomb past REWRITE_MAX_BYTES',
        (_q, res) => {
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          res.end(
            zlib.gzipSync(
              Buffer.concat([
                Buffer.from('{"items":[{"id":"f2","user_id":"u-other","pad":"'),
                Buffer.alloc(8 * 1024 * 1024, 'a'),
                Buffer.from('"}],"total":1}'),
              ]),
            ),
          );
        },
      ],
      [
        'HTML with status 200',
        (_q, res) => {
          res.writeHead(200, { 'content-type': 'text/html' });
          res.end('<html>u-other</html>');
        },
      ],
    ];
    let small: RunningGateway;
    before(async () => {
      small = await startGateway(
        baseEnv(up.url, { ALLOW_UPSTREAM_API_KEYS: 'true', REWRITE_MAX_BYTES: String(1024 * 1024), UPSTREAM_TIMEOUT_MS: '1000', LOG_LEVEL: 'silent' }),
      );
    });
    after(async () => {
      await small?.close();
    });
    for (const [name, behaviour] of cases) {
      it(name, async () => {
        up.set(behaviour);
        for (const path of ['/api/v1/files/', '/api/v1/files/search?filename=*', '/api/v1/files/count']) {
          const r = await get(small.url + path);
          expect(r.status, `${path}: ${r.body}`).to.equal(502);
          expect(r.body, path).to.not.include('u-other');
          expect(r.body, path).to.not.match(STACK_TRACE);
        }
        await expectRecovered(name);
      });
    }
  });

  it('down (nothing listening): 502 for the API and public routes, the gateway\u2019s own routes still answer', async () => {
    const down = await startGateway(baseEnv(`http://127.0.0.1:${await deadPort()}`, { ALLOW_UPSTREAM_API_KEYS: 'true', LOG_LEVEL: 'silent' }));
    try {
      for (const path of [...Object.values(ROUTES), '/api/v1/chats/', '/c/1']) {
        const r = await get(down.url + path);
        expect(r.status, path).to.equal(502);
        expect(r.body, path).to.not.match(STACK_TRACE);
      }
      // the gateway's own routes do not need the upstream
      expect((await get(`${down.url}/auth/session`, {})).status).to.equal(200);
      expect(await settleTo(() => connectionsOf(down.gateway.server), 0)).to.equal(0);
    } finally {
      await down.close();
    }
  });
});

describe('hardening: every pooled socket to the upstream taken (UPSTREAM_MAX_SOCKETS=2)', function () {
  this.timeout(30_000);
  const POOL = 2;
  let up: Awaited<ReturnType<typeof faultyUpstream>>;
  let gw: RunningGateway;

  before(async () => {
    ({ up, gw } = await faultyWorld({ UPSTREAM_MAX_SOCKETS: String(POOL) }));
    // the API key's owner is asked once (and kept), before the upstream stalls
    up.set(ok);
    expect((await get(`${gw.url}/api/v1/files/f1/content`)).status).to.equal(200);
  });
  after(async () => {
    await gw?.close();
    await up?.close();
  });

  it('ten requests at once, a pool of two: each gets its 504 after UPSTREAM_TIMEOUT_MS, the gateway’s own requests too (regression: one timeout more for every socket freed before it)', async () => {
    up.set(() => undefined);
    let most = 0;
    const sampling = setInterval(() => (most = Math.max(most, up.busy())), 20);
    try {
      const streamed = Array.from({ length: 8 }, () => get(`${gw.url}/api/v1/files/f1/content`));
      await sleep(50);
      // a rewritten route: the gateway's own request for the list waits in the same pool
      const rewritten = Array.from({ length: 2 }, () => get(`${gw.url}/api/v1/files/`));
      for (const r of await Promise.all([...streamed, ...rewritten])) {
        expect(r.status, r.body).to.equal(504);
        expect(r.ms).to.be.within(UPSTREAM_TIMEOUT_MS - 50, UPSTREAM_TIMEOUT_MS + 1_000);
        expect(JSON.parse(r.body)).to.have.property('detail');
      }
    } finally {
      clearInterval(sampling);
    }
    expect(most, 'requests the upstream held at once').to.be.within(1, POOL);
    up.set(ok);
    expect((await get(`${gw.url}/api/v1/files/f1/content`)).status).to.equal(200);
    expect(await settleTo(() => connectionsOf(gw.gateway.server), 0)).to.equal(0);
    expect(await settleTo(() => up.busy(), 0)).to.equal(0);
  });

  it('both pooled sockets held by live streams: a request waiting for one gets its 504 after UPSTREAM_TIMEOUT_MS, the gateway’s own request too; the streams go on (regression: it waited until a stream ended)', async () => {
    const streams: http.ServerResponse[] = [];
    up.set((req, res) => {
      if (!req.url?.includes('live')) return; // stalls
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const beat = setInterval(() => res.write('data: beat\n\n'), 100);
      res.once('close', () => clearInterval(beat));
      streams.push(res);
    });
    const live = Array.from({ length: POOL }, () => {
      const controller = new AbortController();
      const events = fetch(`${gw.url}/static/live-events`, { signal: controller.signal }).then(async (res) => {
        let beats = 0;
        try {
          for await (const chunk of res.body!) beats += String(Buffer.from(chunk)).split('beat').length - 1;
        } catch {
          // aborted below
        }
        return beats;
      });
      return { controller, events };
    });
    await until('both streams under way', () => streams.length === POOL);
    const waiting = await Promise.all([get(`${gw.url}/api/v1/files/f1/content`), get(`${gw.url}/api/v1/files/`)]);
    for (const r of waiting) {
      expect(r.status, r.body).to.equal(504);
      expect(r.ms).to.be.within(UPSTREAM_TIMEOUT_MS - 50, UPSTREAM_TIMEOUT_MS + 1_000);
    }
    expect(
      streams.every((res) => !res.destroyed),
      'the streams go on',
    ).to.equal(true);
    for (const l of live) l.controller.abort();
    for (const l of live) expect(await l.events).to.be.greaterThan(3);
    up.set(ok);
    expect((await get(`${gw.url}/api/v1/files/f1/content`)).status).to.equal(200);
    expect(await settleTo(() => connectionsOf(gw.gateway.server), 0)).to.equal(0);
    expect(await settleTo(() => up.busy(), 0)).to.equal(0);
  });
});

describe('hardening: slow clients', function () {
  this.timeout(30_000);
  let up: Awaited<ReturnType<typeof faultyUpstream>>;
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    up = await faultyUpstream();
    gw = await startGateway(
      baseEnv(up.url, {
        ALLOW_UPSTREAM_API_KEYS: 'true',
        HEADERS_TIMEOUT_MS: '1000',
        IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
        UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
        REQUEST_TIMEOUT_MS: '2000',
        LOG_LEVEL: 'silent',
      }),
    );
    port = Number(new URL(gw.url).port);
  });
  after(async () => {
    await gw?.close();
    await up?.close();
  });

  /** Open a socket, run `drive` on it, and report when and how the server ended it. */
  async function howItEnds(drive: (s: net.Socket) => void, ms = 10_000) {
    const s = net.connect(port, '127.0.0.1');
    await once(s, 'connect');
    let text = '';
    s.on('data', (d) => (text += d.toString('latin1')));
    s.on('error', () => undefined);
    const started = Date.now();
    drive(s);
    await Promise.race([once(s, 'close'), sleep(ms)]);
    const closed = s.destroyed || s.readableEnded;
    s.destroy();
    return { ms: Date.now() - started, closed, status: Number(text.split(' ')[1]) || 0 };
  }

  it('slow headers (one header line every 300 ms) are cut with 408 soon after HEADERS_TIMEOUT_MS (regression: 30 s late)', async () => {
    let timer: NodeJS.Timeout | undefined;
    const r = await howItEnds((s) => {
      s.write('GET /static/app.js HTTP/1.1\r\nHost: x\r\n');
      timer = setInterval(() => s.writable && s.write('X-Slow: 1\r\n'), 300);
    });
    clearInterval(timer);
    expect(r.closed).to.equal(true);
    expect(r.status).to.equal(408);
    expect(r.ms).to.be.within(900, 2_600);
  });

  it('a body that stops arriving is cut after IDLE_TIMEOUT_MS (regression: held for ever with REQUEST_TIMEOUT_MS off), and its upstream request too', async () => {
    const relaxed = await startGateway(
      baseEnv(up.url, {
        ALLOW_UPSTREAM_API_KEYS: 'true',
        IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
        UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
        LOG_LEVEL: 'silent',
      }),
    );
    try {
      up.set(ok); // reads the whole body before answering
      const s = net.connect(Number(new URL(relaxed.url).port), '127.0.0.1');
      await once(s, 'connect');
      s.on('error', () => undefined);
      const started = Date.now();
      s.write(
        `POST /api/v1/files/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"content": "`,
      );
      await sleep(200);
      expect(up.sockets(), 'the upload reached the upstream').to.be.greaterThan(0);
      await Promise.race([once(s, 'close'), sleep(8_000)]);
      expect(s.destroyed || s.readableEnded, 'connection still open').to.equal(true);
      expect(Date.now() - started).to.be.within(IDLE_TIMEOUT_MS - 100, IDLE_TIMEOUT_MS + 2_000);
      s.destroy();
      expect(await settleTo(() => connectionsOf(relaxed.gateway.server), 0)).to.equal(0);
      expect(await settleTo(() => up.busy(), 0), 'the upstream upload was not aborted').to.equal(0);
    } finally {
      await relaxed.close();
    }
  });

  it('an upload slower than UPSTREAM_TIMEOUT_MS but never idle reaches the upstream whole (regression: 504 mid-upload)', async () => {
    up.set((req, res) => {
      let n = 0;
      req.on('data', (d: Buffer) => (n += d.length));
      req.on('end', () => res.end(JSON.stringify({ received: n })));
    });
    const s = net.connect(port, '127.0.0.1');
    await once(s, 'connect');
    let text = '';
    s.on('data', (d) => (text += d.toString('latin1')));
    s.on('error', () => undefined);
    s.write(`POST /api/v1/files/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Length: 12\r\nConnection: close\r\n\r\n`);
    for (let i = 0; i < 12; i++) {
      await sleep(100); // 1.2 s in all: more than UPSTREAM_TIMEOUT_MS, never idle
      if (!s.destroyed) s.write('x');
    }
    await Promise.race([once(s, 'close'), sleep(3_000)]);
    s.destroy();
    expect(text.split('\r\n')[0]).to.equal('HTTP/1.1 200 OK');
    expect(text).to.include('{"received":12}');
  });

  it('a body trickling in (a byte every 200 ms, never idle) is cut at REQUEST_TIMEOUT_MS with 408', async () => {
    let timer: NodeJS.Timeout | undefined;
    up.set(ok);
    const r = await howItEnds((s) => {
      s.write(`POST /api/v1/files/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`);
      timer = setInterval(() => s.writable && s.write('x'), 200);
    });
    clearInterval(timer);
    expect(r.closed).to.equal(true);
    expect(r.status).to.equal(408);
    expect(r.ms).to.be.within(1_900, 4_500);
  });

  it('a client that stops reading a large download is cut after IDLE_TIMEOUT_MS; the upstream connection is released', async () => {
    up.set((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const block = Buffer.alloc(64 * 1024, 7);
      const pump = () => {
        while (res.write(block));
      };
      res.on('drain', pump);
      pump();
    });
    const s = net.connect(port, '127.0.0.1');
    await once(s, 'connect');
    s.on('error', () => undefined);
    s.pause(); // never reads
    const started = Date.now();
    s.write(`GET /api/v1/files/f1/content HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\n\r\n`);
    const until = Date.now() + 8_000;
    while (!s.destroyed && Date.now() < until) {
      await sleep(100);
      if ((await connectionsOf(gw.gateway.server)) === 0) break;
    }
    expect(await connectionsOf(gw.gateway.server), 'the gateway still holds the client').to.equal(0);
    expect(Date.now() - started).to.be.lessThan(IDLE_TIMEOUT_MS + 3_000);
    s.destroy();
    up.set(ok);
    expect(await settleTo(() => up.busy(), 0, 3_000), 'the upstream download was not aborted').to.equal(0);
  });

  it('200 half-open connections (partial headers) do not starve others, and are all closed after HEADERS_TIMEOUT_MS', async () => {
    up.set(ok);
    const idle = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const s = net.connect(port, '127.0.0.1');
        s.on('error', () => undefined);
        await once(s, 'connect');
        s.write('GET /api/v1/files/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bear');
        // Read what the server sends: its end of the connection (FIN) shows as readableEnded. Not
        // reading, the client only noticed a close that came with a reset.
        s.resume();
        return s;
      }),
    );
    const until = Date.now() + 2_000;
    while ((await connectionsOf(gw.gateway.server)) < 200 && Date.now() < until) await sleep(10);
    expect(await connectionsOf(gw.gateway.server)).to.be.at.least(200);
    const timings: number[] = [];
    for (let i = 0; i < 10; i++) {
      const started = Date.now();
      const res = await fetch(`${gw.url}/static/healthy.js`, { headers: { connection: 'close' } });
      await res.text();
      expect(res.status).to.equal(200);
      timings.push(Date.now() - started);
    }
    expect(Math.max(...timings), `served in ${timings.join(', ')} ms`).to.be.lessThan(300);
    const closed = await settleTo(() => connectionsOf(gw.gateway.server), 0, 4_000);
    expect(closed, 'half-open connections left').to.equal(0);
    const until2 = Date.now() + 2_000;
    while (!idle.every((s) => s.destroyed || s.readableEnded) && Date.now() < until2) await sleep(20);
    expect(idle.every((s) => s.destroyed || s.readableEnded)).to.equal(true);
    for (const s of idle) s.destroy();
  });
});

describe('hardening: identity provider down', function () {
  this.timeout(30_000);
  let w: World;
  before(async () => {
    w = await startWorld({ accessTokenTtl: 3600 });
  });
  after(async () => {
    await w?.idp.up().catch(() => undefined);
    await w?.close();
  });

  it('new logins get a clear 503 page (regression: 500 "Internal error"); existing sessions and known bearer tokens keep working; pages render', async () => {
    const { jar } = await signIn(w.url, 'alice');
    const bearer = await w.idp.accessTokenFor('sysadmin', CLIENT_ID);
    expect((await browse(undefined, `${w.url}/api/v1/auths/`, { headers: { authorization: `Bearer ${bearer}` } })).status).to.equal(200);
    await w.idp.down();
    try {
      // a cold start of the sign-in client (discovery not cached) is the worst case: a second gateway
      const cold = await startGateway(
        baseEnv(w.upstream.url, {
          OIDC_ISSUER_URL: w.idp.issuer,
          OIDC_CLIENT_ID: CLIENT_ID,
          OIDC_CLIENT_SECRET: CLIENT_SECRET,
          SESSION_SECRET,
          IDP_PROVIDERS_FILE: w.settings.catalog.providersFile,
          LOG_LEVEL: 'silent',
        }),
      );
      try {
        for (const path of ['/auth/start', '/auth/start?idp=acme-entra&returnTo=%2Fc%2F1', '/auth/callback?code=x&state=y']) {
          const page = await browse(undefined, `${cold.url}${path}`, { headers: { accept: 'text/html' } });
          expect(page.status, path).to.equal(503);
          expect(page.headers.get('content-type'), path).to.match(/^text\/html/);
          expect(page.headers.get('retry-after'), path).to.equal('30');
          expect(page.text, path).to.match(/temporarily/i);
          expect(page.text, path).to.not.match(STACK_TRACE);
        }
        const login = await browse(undefined, `${cold.url}/auth/login`);
        expect(login.status).to.equal(200);
        expect(login.text).to.contain('acme-entra');
      } finally {
        await cold.close();
      }
      // the running gateway: the session and the bearer token it has seen keep working
      expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
      expect((await browse(jar, '/auth/session')).json()).to.include({ authenticated: true });
      expect((await browse(undefined, `${w.url}/api/v1/auths/`, { headers: { authorization: `Bearer ${bearer}` } })).status).to.equal(200);
      expect((await browse(undefined, `${w.url}/auth/login`)).status).to.equal(200);
    } finally {
      await w.idp.up();
    }
  });

  it('a realm that hangs (it takes connections, answers nothing): a sign-in whose code comes back gets the 503 page within the realm timeout, nothing signed in (regression: 400 "sign-in failed")', async () => {
    const jar = new Jar(w.url);
    const start = await browse(jar, '/auth/start');
    const { callbackUrl } = await loginThroughIdp(start.location!, 'alice');
    w.idp.hang();
    try {
      const started = Date.now();
      const page = await browse(jar, callbackUrl, { headers: { accept: 'text/html' } });
      expect(page.status).to.equal(503);
      expect(page.headers.get('retry-after')).to.equal('30');
      expect(page.text).to.match(/temporarily/i);
      expect(Date.now() - started).to.be.within(REALM_TIMEOUT_MS - 100, REALM_TIMEOUT_MS + 1_500);
      expect(page.setCookies.filter((c) => c.startsWith('appSession='))).to.deep.equal([]);
    } finally {
      w.idp.resume();
    }
  });
});

describe('hardening: Keycloak admin API failing under load', function () {
  this.timeout(30_000);
  let kc: KeycloakAdmin;
  let gw: RunningGateway;
  const nobody: Authenticator = {
    router: Router(),
    authenticate: async () => undefined,
    ready: async () => ({ ok: true, detail: 'stub' }),
    close: async () => {},
  };

  before(async () => {
    kc = await startKeycloakAdmin({ clientId: 'gw-admin', clientSecret: 'gw-admin-secret' });
    gw = await startGateway(
      baseEnv('http://127.0.0.1:9', {
        IDP_ADMIN_URL: kc.adminUrl,
        IDP_ADMIN_CLIENT_ID: 'gw-admin',
        IDP_ADMIN_CLIENT_SECRET: 'gw-admin-secret',
        IDP_TENANT_IDP_ALIASES: 'acme=acme-entra,globex=globex-okta',
        IDP_CACHE_SECONDS: '1',
        LOG_LEVEL: 'silent',
      }),
      {
        authenticator: nobody,
      },
    );
  });
  after(async () => {
    await gw?.close();
    await kc?.close();
  });

  for (const fault of ['down', 'slow', '500', 'invalid-json', 'token-fail'] as KeycloakFault[]) {
    it(`${fault}: 150 concurrent login pages and provider lookups answer from the last good catalog, fast; readiness says stale`, async () => {
      await kc.setFault(null);
      const list = await (await fetch(`${gw.url}/api/v1/auth-providers/`)).json();
      await fetch(`${gw.url}/api/v1/auth-providers/tenants/acme`);
      kc.slowMs = 10_000;
      await kc.setFault(fault);
      await sleep(1_100); // the cache period passes
      // each as it answers with a fresh catalog: pages and lookups 200, a tenant's link 302 to its provider
      const expected: Record<string, number> = {
        '/auth/login': 200,
        '/de/auth/login': 200,
        '/auth/login/acme-entra': 200,
        '/api/v1/auth-providers/': 200,
        '/api/v1/auth-providers/acme-entra': 200,
        '/api/v1/auth-providers/tenants/acme': 200,
        '/acme': 302,
      };
      const paths = Object.keys(expected);
      const started = Date.now();
      const answers = await Promise.all(
        Array.from({ length: 150 }, async (_, i) => {
          const res = await fetch(gw.url + paths[i % paths.length]!, { redirect: 'manual', signal: AbortSignal.timeout(8_000) });
          return { path: paths[i % paths.length]!, status: res.status, body: await res.text() };
        }),
      );
      const elapsed = Date.now() - started;
      for (const a of answers) {
        expect(a.status, `${a.path}: ${a.body.slice(0, 100)}`).to.equal(expected[a.path]);
        expect(a.body, a.path).to.not.match(STACK_TRACE);
      }
      expect(JSON.parse(answers.find((a) => a.path === '/api/v1/auth-providers/')!.body)).to.deep.equal(list);
      expect(answers.filter((a) => a.path === '/auth/login').every((a) => a.body.includes('acme-entra'))).to.equal(true);
      expect(elapsed, 'pages waited for Keycloak').to.be.lessThan(3_000);
      const ready = await fetch(`${gw.url}/readyz`);
      const text = await ready.text();
      expect(text).to.match(/stale/);
      await kc.setFault(null);
    });
  }
});
