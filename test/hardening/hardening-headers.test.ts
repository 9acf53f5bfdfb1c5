// Hardening, headers and framing: what a client writes on the wire, byte for byte, against what the
// Open WebUI stand-in receives. Extends test/sign-in/sign-in-headers.test.ts (trusted-header spellings on
// API, page, 100-continue and WebSocket requests) with: request smuggling shapes, bodies the
// forwarded request would not frame, HTTP/1.0, pipelining, forwarding headers, failed upgrades,
// identity claims that try to inject headers or groups, and the client's `Connection: close`.
//
// The invariant of every smuggling shape: whatever reaches the upstream was judged and answered by
// the gateway (it carries the x-request-id of one of the gateway's answers on that socket), or is
// the gateway's own sign-in call; the hidden inner request never arrives on its own.
import { expect } from 'chai';
import net from 'node:net';
import { once } from 'node:events';
import WebSocket from 'ws';
import { startWorld, signIn, CLIENT_ID, SESSION_SECRET, type World } from '../support/cookie-jar.js';
import { SessionCodec } from '../../gateway/auth/session-cookie.js';
import { CompactEncrypt } from 'jose';
import { sessionKey } from '../support/old-session-cookie.js';
import type { RecordedRequest } from '../../sandbox/open-webui/stand-in.js';
import { parseResponses, rawExchange, rawRequest, STACK_TRACE } from '../support/raw-http.js';
import { sleep } from '../support/wait.js';

/** A route of Open WebUI 0.12.4 open to every method and every caller (the route table refuses unknown routes for admins). */
const PROBE = '/api/v1/terminals/probe/x';

const VICTIM = 'victim@evil.example';
const norm = (h: string) => h.toLowerCase().replace(/_/g, '-');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A request hidden in a body: a trusted-header sign-in as an admin nobody authenticated. */
const inner = (id: string) =>
  `POST /api/v1/auths/signin?smuggled=${id} HTTP/1.1\r\nHost: x\r\nX-Forwarded-Email: ${VICTIM}\r\nX-Forwarded-Role: admin\r\n` +
  `Content-Type: application/json\r\nContent-Length: 28\r\n\r\n{"email":"x","password":"y"}`;
const chunk = (s: string) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;

describe('hardening: headers, framing and smuggling', function () {
  this.timeout(30_000);
  let w: World;
  let port: number;
  let admin: string; // realm access token of a PlatformSysAdmin
  let alice: string;
  let aliceKey: string; // Open WebUI API key of alice

  before(async () => {
    // The upstream as Open WebUI ships: every admin flag on, so only the gateway protects.
    w = await startWorld({
      env: { ALLOW_UPSTREAM_API_KEYS: 'true' },
      upstream: {
        enableAdminExport: true,
        bypassAdminAccessControl: true,
        enableAdminChatAccess: true,
        users: [{ id: 'u-alice', email: 'alice@acme.example', name: 'Alice Acme', role: 'user', groups: [] }],
      },
    });
    port = Number(new URL(w.url).port);
    admin = await w.idp.accessTokenFor('sysadmin', CLIENT_ID);
    alice = await w.idp.accessTokenFor('alice', CLIENT_ID);
    aliceKey = w.upstream.apiKeyFor('u-alice');
  });
  after(async () => {
    await w?.close();
  });

  const victimExists = () => [...w.upstream.users.values()].some((u) => u.email === VICTIM);

  /** Send raw bytes, then check the anti-smuggling invariant on what the upstream received. */
  async function exchange(bytes: string, id: string, waitMs = 1500) {
    const mark = w.upstream.requests.length;
    const { text, closedByServer } = await rawExchange(port, bytes, waitMs);
    await sleep(50);
    const methods = [...bytes.matchAll(/(?:^|\r\n\r\n|\n\n)([A-Z]+) \S+ HTTP\//g)].map((m) => m[1]!);
    const responses = parseResponses(text, methods);
    const finals = responses.filter((r) => r.status >= 200);
    const answered = new Set(responses.map((r) => r.headers['x-request-id']).filter(Boolean));
    const seen = w.upstream.requests.slice(mark);
    for (const r of seen) {
      const own = ['/api/v1/auths/signin', '/api/v1/auths/'].includes(r.url) && r.headers['x-request-id'] === undefined;
      // Judged by the gateway: it carries the request id the gateway set (none of the hidden requests
      // here carries one). Its answer may be lost when the client's connection is closing.
      const judged = answered.has(String(r.headers['x-request-id'])) || UUID.test(String(r.headers['x-request-id']));
      expect(own || judged, `${id}: the upstream received ${r.method} ${r.url}, which the gateway never judged`).to.equal(true);
      expect(r.url, `${id}: the hidden request reached the upstream`).to.not.include('smuggled');
      expect(JSON.stringify(r.headers), `${id}: a client's trusted header reached the upstream`).to.not.include(VICTIM);
    }
    return { finals, closedByServer, seen, text };
  }

  describe('request smuggling shapes: refused, never forwarded half-parsed', () => {
    const A = () => `Authorization: Bearer ${admin}`;
    const post = (headers: string, body: string) => `POST ${PROBE} HTTP/1.1\r\nHost: x\r\n${A()}\r\n${headers}\r\n${body}`;
    const MUST_REFUSE: Array<[string, (id: string) => string]> = [
      ['Content-Length and Transfer-Encoding', (id) => post('Content-Length: 6\r\nTransfer-Encoding: chunked\r\n', `0\r\n\r\n${inner(id)}`)],
      ['Transfer-Encoding and Content-Length', (id) => post('Transfer-Encoding: chunked\r\nContent-Length: 6\r\n', `0\r\n\r\n${inner(id)}`)],
      ['two different Content-Lengths', (id) => post(`Content-Length: 0\r\nContent-Length: ${inner(id).length}\r\n`, inner(id))],
      ['two equal Content-Lengths', (id) => post('Content-Length: 2\r\nContent-Length: 2\r\n', `ab${inner(id)}`)],
      ['a Content-Length list', (id) => post('Content-Length: 2, 2\r\n', `ab${inner(id)}`)],
      ['Content-Length: +2', (id) => post('Content-Length: +2\r\n', `ab${inner(id)}`)],
      ['Content-Length: 0x2', (id) => post('Content-Length: 0x2\r\n', `ab${inner(id)}`)],
      ['Content-Length: -1', (id) => post('Content-Length: -1\r\n', `ab${inner(id)}`)],
      ['Transfer-Encoding: chunked, identity', (id) => post('Transfer-Encoding: chunked, identity\r\n', `0\r\n\r\n${inner(id)}`)],
      ['Transfer-Encoding: xchunked', (id) => post('Transfer-Encoding: xchunked\r\n', `0\r\n\r\n${inner(id)}`)],
      ['Transfer-Encoding twice', (id) => post('Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n', `0\r\n\r\n${inner(id)}`)],
      ['space before the colon', (id) => post('Transfer-Encoding : chunked\r\nContent-Length: 6\r\n', `0\r\n\r\n${inner(id)}`)],
      ['vertical tab before the value', (id) => post('Transfer-Encoding:\x0bchunked\r\n', `0\r\n\r\n${inner(id)}`)],
      ['obs-fold in Transfer-Encoding', (id) => post('Transfer-Encoding: identity\r\n chunked\r\nContent-Length: 6\r\n', `0\r\n\r\n${inner(id)}`)],
      ['obs-fold in Content-Length', (id) => post(`Content-Length: 0\r\n ${inner(id).length}\r\n`, inner(id))],
      ['obs-fold in a trusted header', (id) => `GET /api/v1/auths/?folded=${id} HTTP/1.1\r\nHost: x\r\n${A()}\r\nX-Forwarded-Role: user\r\n admin\r\n\r\n`],
      ['bare LF line endings', (id) => `POST ${PROBE} HTTP/1.1\nHost: x\n${A()}\nContent-Length: 0\n\n${inner(id)}`],
      ['bare LF after the last chunk', (id) => post('Transfer-Encoding: chunked\r\n', `0\n\n${inner(id)}`)],
      ['chunk size overflow', (id) => post('Transfer-Encoding: chunked\r\n', `fffffffffffffffff0\r\n${inner(id)}`)],
      ['negative chunk size', (id) => post('Transfer-Encoding: chunked\r\n', `-1\r\n\r\n${inner(id)}`)],
      ['NUL in a chunk extension', (id) => post('Transfer-Encoding: chunked\r\n', `0;\x00x\r\n\r\n${inner(id)}`)],
      ['NUL in a header value', (id) => `GET /api/v1/auths/?nul=${id} HTTP/1.1\r\nHost: x\r\n${A()}\r\nX-Forwarded-Role: user\x00admin\r\n\r\n`],
      ['absolute-form target', (id) => `GET http://x/api/v1/auths/?abs=${id} HTTP/1.1\r\nHost: x\r\n${A()}\r\n\r\n`],
      ['asterisk-form target', () => `OPTIONS * HTTP/1.1\r\nHost: x\r\n${A()}\r\n\r\n`],
      ['HTTP/1.1 without Host', (id) => `GET /api/v1/auths/?nohost=${id} HTTP/1.1\r\n${A()}\r\n\r\n`],
      ['HTTP/1.2', (id) => `GET /api/v1/auths/?v12=${id} HTTP/1.2\r\nHost: x\r\n${A()}\r\n\r\n`],
      ['HTTP/2 preface', () => 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
    ];
    for (const [name, make] of MUST_REFUSE) {
      it(`${name}: 400, and the hidden request goes nowhere`, async () => {
        const id = name.replace(/\W+/g, '-');
        const { finals, seen } = await exchange(make(id), id);
        expect(finals[0]?.status, `${name}: ${finals.map((f) => f.status)}`).to.equal(400);
        expect(
          seen.filter((r) => r.url !== '/api/v1/auths/signin'),
          `${name}: forwarded`,
        ).to.deep.equal([]);
      });
    }

    // Regression: Node's client sends GET, HEAD, DELETE and OPTIONS without chunked framing, and
    // http-proxy-3 sets `Content-Length: 0` on DELETE and OPTIONS. A chunked body on them went
    // upstream as raw bytes after a bodiless request, where Open WebUI read it as a second request:
    // an anonymous trusted-header sign-in as any user, admin role included, through /static/ or /health.
    for (const method of ['GET', 'HEAD', 'DELETE', 'OPTIONS']) {
      it(`a chunked body on ${method} is refused (anonymous public path, authenticated API path): no unframed bytes upstream`, async () => {
        for (const [path, auth] of [
          ['/static/app.js', ''],
          ['/health', ''],
          ['/api/v1/files/', `${A()}\r\n`],
          ['/api/v1/files/f-1', `${A()}\r\n`],
          ['/c/1', `${A()}\r\n`],
        ] as const) {
          const id = `${method}-${path}`;
          const { finals, seen, closedByServer } = await exchange(
            `${method} ${path} HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: chunked\r\n\r\n${chunk(inner(id))}0\r\n\r\n`,
            id,
          );
          expect(
            finals.map((f) => f.status),
            id,
          ).to.deep.equal([400]);
          expect(closedByServer, `${id}: connection left open`).to.equal(true);
          expect(
            seen.filter((r) => r.url !== '/api/v1/auths/signin'),
            id,
          ).to.deep.equal([]);
        }
        expect(victimExists()).to.equal(false);
      });
    }

    it('a chunked body on POST, PUT and PATCH is re-framed chunked toward the upstream (one request, whole body)', async () => {
      for (const method of ['POST', 'PUT', 'PATCH']) {
        const id = `${method}-framed`;
        const { finals, seen } = await exchange(
          `${method} ${PROBE}?${id} HTTP/1.1\r\nHost: x\r\n${A()}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunk(inner(id))}0\r\n\r\n`,
          id,
        );
        expect(finals).to.have.length(1);
        const forwarded = seen.filter((r) => r.url.includes(id));
        expect(forwarded, id).to.have.length(1);
        expect(forwarded[0]!.headers['transfer-encoding'], id).to.equal('chunked');
        expect(forwarded[0]!.bodyBytes, id).to.equal(Buffer.byteLength(inner(id)));
      }
      expect(victimExists()).to.equal(false);
    });

    it('a denied request\u2019s body is drained, never read as the next request (Content-Length, chunked, Expect: 100-continue)', async () => {
      const bodies = [
        ['Content-Length', (id: string) => `Content-Length: ${inner(id).length}\r\n\r\n${inner(id)}`],
        ['chunked', (id: string) => `Transfer-Encoding: chunked\r\n\r\n${chunk(inner(id))}0\r\n\r\n`],
        ['100-continue', (id: string) => `Expect: 100-continue\r\nContent-Length: ${inner(id).length}\r\n\r\n${inner(id)}`],
      ] as const;
      for (const [name, body] of bodies) {
        const id = `deny-${name}`;
        const tail = `GET /api/v1/auths/?after=${id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nConnection: close\r\n\r\n`;
        const { finals, seen } = await exchange(`POST /api/v1/chats/all/db HTTP/1.1\r\nHost: x\r\n${A()}\r\n${body(id)}${tail}`, id, 3000);
        expect(finals[0]?.status, name).to.equal(401);
        expect(
          seen.some((r) => r.url.includes('/chats/all/db')),
          name,
        ).to.equal(false);
        // the request after the body is served as itself (its own identity), when the connection stayed open
        const after = seen.filter((r) => r.url.includes(`after=${id}`));
        if (finals.length > 1)
          expect(
            after.map((r) => r.headers['x-forwarded-email']),
            name,
          ).to.deep.equal(['alice@acme.example']);
      }
      expect(victimExists()).to.equal(false);
    });
  });

  describe('pipelining and HTTP/1.0', () => {
    it('pipelined requests are judged one by one: no identity, credential or trusted header carries over', async () => {
      const id = 'pipe';
      const spoof = 'X-Forwarded-Email: sysadmin@platform.example\r\nX_Forwarded_Role: admin\r\n';
      const bytes = [
        `GET /api/v1/auths/?${id}=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\n\r\n`,
        `GET /api/v1/auths/?${id}=2 HTTP/1.1\r\nHost: x\r\n${spoof}\r\n`,
        `GET /api/v1/chats/all/db HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\n\r\n`,
        `GET /api/v1/auths/?${id}=4 HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${aliceKey}\r\n${spoof}\r\n`,
        `GET /c/1?${id}=5 HTTP/1.1\r\nHost: x\r\n${spoof}\r\n`,
        `GET /api/v1/auths/?${id}=6 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\nConnection: close\r\n\r\n`,
      ].join('');
      const { finals, seen, closedByServer } = await exchange(bytes, id, 4000);
      expect(finals.map((f) => f.status)).to.deep.equal([200, 401, 401, 200, 302, 200]);
      expect(closedByServer).to.equal(true);
      const at = (n: number) => seen.filter((r) => r.url.includes(`${id}=${n}`));
      expect(at(1).map((r) => [r.headers['x-forwarded-email'], r.headers['x-forwarded-role']])).to.deep.equal([['alice@acme.example', 'user']]);
      expect(at(2)).to.deep.equal([]);
      expect(at(5)).to.deep.equal([]);
      // an API key is the upstream's credential, not a gateway identity: no trusted header at all
      expect(at(4)).to.have.length(1);
      expect(
        Object.keys(at(4)[0]!.headers).filter(
          (h) => norm(h).startsWith('x-forwarded-') && h !== 'x-forwarded-for' && h !== 'x-forwarded-host' && h !== 'x-forwarded-proto',
        ),
      ).to.deep.equal([]);
      expect(at(6).map((r) => [r.headers['x-forwarded-email'], r.headers['x-forwarded-role']])).to.deep.equal([['sysadmin@platform.example', 'admin']]);
      // each forwarded request carries its own identity's upstream credential
      expect(at(1)[0]!.headers.authorization).to.not.equal(at(6)[0]!.headers.authorization);
      expect(seen.some((r) => r.url.includes('/chats/all/db'))).to.equal(false);
    });

    it('HTTP/1.0 (no Host, no keep-alive): spoofs removed, the identity\u2019s own headers set, the policy applied, the connection closed', async () => {
      const spoof =
        'X-Forwarded-Email: sysadmin@platform.example\r\nx_forwarded_role: admin\r\nX-FORWARDED-GROUPS: globex\r\nConnection: X-Forwarded-Name\r\nX-Forwarded-Name: Sam\r\n';
      const ok = await exchange(`GET /api/v1/auths/?http10=1 HTTP/1.0\r\nAuthorization: Bearer ${alice}\r\n${spoof}\r\n`, 'http10');
      expect(ok.finals.map((f) => f.status)).to.deep.equal([200]);
      expect(ok.closedByServer).to.equal(true);
      const r = ok.seen.find((x) => x.url.includes('http10=1'))!;
      const trusted = (x: RecordedRequest) =>
        x.rawHeaders
          .flatMap((h, i) =>
            i % 2 === 0 && ['x-forwarded-email', 'x-forwarded-role', 'x-forwarded-groups', 'x-forwarded-name'].includes(norm(h))
              ? [`${norm(h)}: ${x.rawHeaders[i + 1]}`]
              : [],
          )
          .sort();
      expect(trusted(r)).to.deep.equal([
        'x-forwarded-email: alice@acme.example',
        'x-forwarded-groups: acme',
        'x-forwarded-name: Alice Acme',
        'x-forwarded-role: user',
      ]);
      const denied = await exchange(`GET /api/v1/chats/all/db HTTP/1.0\r\nAuthorization: Bearer ${admin}\r\n\r\n`, 'http10-export');
      expect(denied.finals.map((f) => f.status)).to.deep.equal([401]);
      expect(denied.seen.filter((x) => x.url !== '/api/v1/auths/signin')).to.deep.equal([]);
      const anon = await exchange(`GET /api/v1/auths/?http10=3 HTTP/1.0\r\n${spoof}\r\n`, 'http10-anon');
      expect(anon.finals.map((f) => f.status)).to.deep.equal([401]);
      expect(anon.seen).to.deep.equal([]);
    });

    it('Transfer-Encoding in HTTP/1.0 is faulty framing (RFC 9112 6.1): 400 before anything is forwarded', async () => {
      // Regression: Node parses it; the gateway forwarded the request, then answered the client 400
      // for the bytes after it, so the upstream acted on a request whose client saw a refusal.
      const id = 'http10-te';
      const { finals, seen } = await exchange(
        `POST ${PROBE}?${id} HTTP/1.0\r\nAuthorization: Bearer ${admin}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${inner(id)}`,
        id,
      );
      expect(finals.map((f) => f.status)).to.deep.equal([400]);
      expect(seen.filter((r) => r.url !== '/api/v1/auths/signin')).to.deep.equal([]);
      expect(victimExists()).to.equal(false);
    });
  });

  describe('forwarding and hop-by-hop headers', () => {
    it('client X-Forwarded-*, Forwarded, X-Real-IP, X-Original-URL and X-Rewrite-URL never reach the upstream; the gateway\u2019s own do, once each', async () => {
      const spoofs = [
        'X-Forwarded-For: 10.0.0.1',
        'x_forwarded_for: 10.0.0.2',
        'X-Forwarded-For: 10.0.0.3',
        'X-Forwarded-Host: evil.example',
        'X-FORWARDED-PROTO: https',
        'X-Forwarded-Port: 443',
        'X-Forwarded-Prefix: /api/v1/chats/all/db',
        'Forwarded: for=10.0.0.4;host=evil.example;proto=https',
        'X-Real-IP: 10.0.0.5',
        'X-Original-URL: /api/v1/chats/all/db',
        'X-Rewrite-URL: /api/v1/utils/db/download',
        'X-Request-Id: client-chosen',
      ];
      for (const connection of ['close', 'close, X-Forwarded-For, X-Request-Id, X-Forwarded-Host, X-Forwarded-Proto']) {
        const id = `xfwd-${connection.length}`;
        const { finals, seen } = await exchange(
          `GET /api/v1/auths/?${id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\n${spoofs.join('\r\n')}\r\nConnection: ${connection}\r\n\r\n`,
          id,
        );
        expect(
          finals.map((f) => f.status),
          connection,
        ).to.deep.equal([200]);
        const r = seen.find((x) => x.url.includes(id))!;
        const values = (name: string) => r.rawHeaders.flatMap((h, i) => (i % 2 === 0 && norm(h) === name ? [r.rawHeaders[i + 1]] : []));
        expect(values('x-forwarded-for'), connection).to.deep.equal(['127.0.0.1']);
        expect(values('x-forwarded-host'), connection).to.deep.equal([new URL(w.url).host]);
        expect(values('x-forwarded-proto'), connection).to.deep.equal(['http']);
        expect(values('x-request-id'), connection).to.deep.equal([finals[0]!.headers['x-request-id']]);
        for (const gone of ['x-forwarded-port', 'x-forwarded-prefix', 'forwarded', 'x-real-ip', 'x-original-url', 'x-rewrite-url'])
          expect(values(gone), `${gone} (${connection})`).to.deep.equal([]);
        expect(values('authorization')[0], connection).to.match(/^Bearer ey/); // the gateway's upstream credential
      }
    });

    it('a client\u2019s Connection: close is honoured on proxied answers, and the upstream\u2019s hop-by-hop headers stay behind', async () => {
      // Regression: the gateway removed the client's Connection header before forwarding and
      // http-proxy-3 then answered `Connection: keep-alive`, holding the socket for keepAliveTimeout.
      for (const path of ['/api/v1/auths/', '/static/app.js', '/api/v1/files/count', '/api/v1/chats/all/db']) {
        const started = Date.now();
        const { finals, closedByServer } = await exchange(
          `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nConnection: close\r\n\r\n`,
          `close-${path}`,
          4000,
        );
        expect(closedByServer, path).to.equal(true);
        expect(Date.now() - started, path).to.be.lessThan(1000);
        expect(finals[0]!.headers.connection, path).to.equal('close');
        expect(finals[0]!.headers['keep-alive'], path).to.equal(undefined);
      }
      // and a keep-alive client keeps its connection: answers on one socket, proxied or the gateway's
      // own, carry the gateway's keep-alive hint (not the upstream's)
      const socket = net.connect(port, '127.0.0.1');
      await once(socket, 'connect');
      let text = '';
      socket.on('data', (d) => (text += d.toString('latin1')));
      for (const [i, path] of ['/static/app.js', '/healthz', '/static/app.js'].entries()) {
        socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
        const until = Date.now() + 2000;
        while (parseResponses(text).length < i + 1 && Date.now() < until) await sleep(10);
      }
      socket.destroy();
      expect(parseResponses(text).map((r) => [r.headers.connection, r.headers['keep-alive']])).to.deep.equal(Array(3).fill(['keep-alive', 'timeout=5']));
    });

    it('bytes after a Connection: close request never replace its answer, and the connection closes after it', async () => {
      // Regression: the parse error of the trailing bytes was answered 400 at once, before the
      // forwarded request's own answer: the client read a refusal of a request the upstream executed.
      for (const extra of ['x', 'GET /api/v1/chats/all/db HTTP/1.1\r\nHost: x\r\n\r\n', inner('after-close')]) {
        const body = '{"x":1}';
        const { finals, closedByServer } = await exchange(
          `POST ${PROBE}?after-close HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}${extra}`,
          'after-close',
        );
        expect(
          finals.map((f) => f.status),
          JSON.stringify(extra),
        ).to.deep.equal([404]);
        expect(JSON.parse(finals[0]!.body), JSON.stringify(extra)).to.deep.equal({ detail: 'Not Found' });
        expect(closedByServer).to.equal(true);
      }
    });

    it('a malformed request pipelined behind a streaming answer never writes into that answer', async () => {
      // Regression: the gateway's clientError handler wrote `HTTP/1.1 400` into the middle of the
      // server-sent events of the request before (Node's own handler refuses to do that).
      const body = JSON.stringify({ stream: true, n: 8, model: 'm', messages: [] });
      const socket = net.connect(port, '127.0.0.1');
      await once(socket, 'connect');
      let text = '';
      socket.on('data', (d) => (text += d.toString('latin1')));
      socket.on('error', () => undefined);
      socket.write(
        `POST /api/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      const until = Date.now() + 2000;
      while (!text.includes('data:') && Date.now() < until) await sleep(5);
      socket.write('GARBAGE GARBAGE\r\n\r\n');
      await sleep(400);
      socket.destroy();
      expect(text).to.match(/^HTTP\/1.1 200/);
      expect(text.match(/HTTP\/1\.1 /g)).to.have.length(1);
    });

    it('an unknown Expect is answered 417 by the gateway and never forwarded', async () => {
      const { finals, seen } = await exchange(
        `POST ${PROBE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\nExpect: 200-ok\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab`,
        'expect',
      );
      expect(finals.map((f) => f.status)).to.deep.equal([417]);
      expect(seen.filter((r) => r.url !== '/api/v1/auths/signin')).to.deep.equal([]);
    });
  });

  describe('WebSocket upgrades', () => {
    const upgrade = (path: string, auth: string, extra = '') =>
      `GET ${path} HTTP/1.1\r\nHost: x\r\n${auth}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`;

    /** Write `first`, then (if the socket is still open) `second`; collect what the upstream got. */
    async function twoStep(first: string, second: string) {
      const mark = w.upstream.requests.length;
      const socket = net.connect(port, '127.0.0.1');
      let text = '';
      let closed = false;
      socket.on('data', (d) => (text += d.toString('latin1')));
      socket.on('error', () => undefined);
      socket.on('close', () => (closed = true));
      await once(socket, 'connect');
      socket.write(first);
      await sleep(300);
      if (!closed) socket.write(second);
      await sleep(300);
      socket.destroy();
      return { status: Number(text.split(' ')[1]), closed, seen: w.upstream.requests.slice(mark) };
    }

    it('a refused or failed upgrade leaves no tunnel: bytes after it never reach the upstream as a request', async () => {
      const A = `Authorization: Bearer ${alice}\r\n`;
      const cases: Array<[string, string, number[]]> = [
        ['no identity', upgrade('/ws/socket.io/?EIO=4&transport=websocket', ''), [401]],
        ['spoofed identity only', upgrade('/ws/socket.io/', 'X-Forwarded-Email: sysadmin@platform.example\r\nX-Forwarded-Role: admin\r\n'), [401]],
        ['not under /ws/', upgrade('/api/v1/chats/all/db', A), [404]],
        [
          'not WebSocket (h2c)',
          `GET /ws/socket.io/ HTTP/1.1\r\nHost: x\r\n${A}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`,
          [400],
        ],
        ['the upstream refuses the version', upgrade('/ws/socket.io/?EIO=4&transport=websocket', A, 'Sec-WebSocket-Version: 99\r\n'), [400, 426]],
        ['the upstream has no such socket', upgrade('/ws/other', A, 'Sec-WebSocket-Version: 13\r\n'), [404]],
        [
          'a body on the upgrade',
          upgrade('/ws/other', A, `Sec-WebSocket-Version: 13\r\nContent-Length: ${inner('ws-body').length}\r\n`) + inner('ws-body'),
          [404],
        ],
      ];
      for (const [name, first, statuses] of cases) {
        const r = await twoStep(first + inner(`${name}-head`), inner(`${name}-after`));
        expect(statuses, `${name}: ${r.status}`).to.include(r.status);
        expect(r.closed, `${name}: the socket stayed open`).to.equal(true);
        for (const s of r.seen) {
          expect(s.url, name).to.not.include('smuggled');
          expect(JSON.stringify(s.headers), name).to.not.include(VICTIM);
        }
      }
      expect(victimExists()).to.equal(false);
    });
  });

  describe('identity claims cannot inject headers, roles or groups', () => {
    it('CR, LF, NUL and commas in name, email or groups reach the upstream as one header each, groups split only where the realm split them', async () => {
      const token = await w.idp.signJwt({
        sub: 'inject-1',
        aud: CLIENT_ID,
        azp: CLIENT_ID,
        typ: 'Bearer',
        email: 'mallory@acme.example',
        name: 'Mallory\r\nX-Forwarded-Role: admin\r\nX-Forwarded-Email: sysadmin@platform.example',
        roles: [],
        groups: ['acme,globex', 'initech\r\nX-Forwarded-Role: admin', 'plain\0'],
      });
      const id = 'inject';
      const { finals, seen } = await exchange(
        `GET /api/v1/auths/?${id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
        id,
      );
      expect(finals.map((f) => f.status)).to.deep.equal([200]);
      const r = seen.find((x) => x.url.includes(id))!;
      const values = (name: string) => r.rawHeaders.flatMap((h, i) => (i % 2 === 0 && norm(h) === name ? [r.rawHeaders[i + 1]!] : []));
      expect(values('x-forwarded-role')).to.deep.equal(['user']);
      expect(values('x-forwarded-email')).to.deep.equal(['mallory@acme.example']);
      expect(values('x-forwarded-name')).to.have.length(1);
      expect(values('x-forwarded-name')[0]).to.not.match(/[\r\n]/);
      const groups = values('x-forwarded-groups');
      expect(groups).to.have.length(1);
      const names = groups[0]!.split(',');
      expect(names).to.have.length(3);
      expect(names).to.not.include('globex');
      const user = [...w.upstream.users.values()].find((u) => u.email === 'mallory@acme.example')!;
      expect(user.role).to.equal('user');
      expect(user.groups).to.not.include('globex');
    });
  });
});

describe('hardening: custom trusted header names', function () {
  this.timeout(20_000);
  let w: World;
  before(async () => {
    const names = { email: 'X-User-Email', name: 'X-User-Name', role: 'X-User-Role', groups: 'X-User-Groups' };
    w = await startWorld({
      env: {
        WEBUI_AUTH_TRUSTED_EMAIL_HEADER: names.email,
        WEBUI_AUTH_TRUSTED_NAME_HEADER: names.name,
        WEBUI_AUTH_TRUSTED_ROLE_HEADER: names.role,
        WEBUI_AUTH_TRUSTED_GROUPS_HEADER: names.groups,
      },
      upstream: { trustedHeaders: names },
    });
  });
  after(async () => {
    await w?.close();
  });

  it('client copies of the configured names, in any spelling, are removed; the identity\u2019s are set once', async () => {
    const token = await w.idp.accessTokenFor('alice', CLIENT_ID);
    const spoof = [
      'X-User-Email: sysadmin@platform.example',
      'x_user_role: admin',
      'X_USER_GROUPS: globex',
      'x-user-name: Sam',
      'X-User-Email: other@x.example',
      'Connection: close, X-User-Role',
    ];
    const res = await rawRequest(
      Number(new URL(w.url).port),
      `GET /api/v1/auths/?custom HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n${spoof.join('\r\n')}\r\n\r\n`,
    );
    expect(res.status).to.equal(200);
    const r = w.upstream.requests.find((x) => x.url.includes('custom'))!;
    const pairs = r.rawHeaders.flatMap((h, i) => (i % 2 === 0 && norm(h).startsWith('x-user-') ? [`${norm(h)}: ${r.rawHeaders[i + 1]}`] : [])).sort();
    expect(pairs).to.deep.equal(['x-user-email: alice@acme.example', 'x-user-groups: acme', 'x-user-name: Alice Acme', 'x-user-role: user']);
    expect(JSON.parse(res.body)).to.include({ email: 'alice@acme.example', role: 'user' });
  });
});

describe('hardening: broken session cookies are a logged-out visitor, never an error', function () {
  this.timeout(30_000);
  let w: World;
  let valid: string;
  before(async () => {
    w = await startWorld();
    const { jar } = await signIn(w.url, 'sysadmin');
    valid = jar.get('appSession')!;
  });
  after(async () => {
    await w?.close();
  });

  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const flip = (part: string, at = 5) => part.slice(0, at) + (part[at] === 'A' ? 'B' : 'A') + part.slice(at + 1);

  async function shapes(): Promise<Array<[string, string]>> {
    const now = Math.floor(Date.now() / 1000);
    const parts = valid.split('.');
    const withPart = (i: number, value: string) => parts.map((p, j) => (j === i ? value : p)).join('.');
    const codec = new SessionCodec([SESSION_SECRET], { secure: false, rollingSeconds: 86_400, absoluteSeconds: 7 * 86_400 });
    const other = new SessionCodec(['a-different-secret-of-the-same-length-0123456789'], {
      secure: false,
      rollingSeconds: 86_400,
      absoluteSeconds: 7 * 86_400,
    });
    const user = { sub: 'forged', email: 'sysadmin@platform.example', name: 'Forged', roles: ['PlatformSysAdmin'], groups: [], tenants: [] };
    const data = { v: 1 as const, id: 'forged', user, active_tenant: null, refresh_token: null, expires_at: now + 3600 };
    const header = { iat: now, uat: now, exp: now + 3600 };
    return [
      ['protected header flipped', `appSession=${withPart(0, flip(parts[0]!))}`],
      ['IV flipped', `appSession=${withPart(2, flip(parts[2]!, 2))}`],
      ['ciphertext flipped', `appSession=${withPart(3, flip(parts[3]!))}`],
      ['tag flipped', `appSession=${withPart(4, flip(parts[4]!, 3))}`],
      ['truncated by one character', `appSession=${valid.slice(0, -1)}`],
      ['truncated to half', `appSession=${valid.slice(0, valid.length >> 1)}`],
      ['only the header', `appSession=${parts[0]}`],
      ['empty', 'appSession='],
      ['not base64', 'appSession=%%%.!!.$$$.***.~~~'],
      ['six parts', `appSession=${valid}.AAAA`],
      ['alg none header', `appSession=${withPart(0, b64({ alg: 'none', enc: 'A256GCM', iat: now, uat: now, exp: now + 3600 }))}`],
      ['zip header', `appSession=${withPart(0, b64({ alg: 'dir', enc: 'A256GCM', zip: 'DEF', iat: now, uat: now, exp: now + 3600 }))}`],
      ['header that is not JSON', `appSession=${withPart(0, Buffer.from('{not json').toString('base64url'))}`],
      ['header exp pushed into the future', `appSession=${withPart(0, b64({ alg: 'dir', enc: 'A256GCM', iat: now, uat: now, exp: now + 10 * 365 * 86_400 }))}`],
      ['another secret', `appSession=${await other.encrypt(data, header)}`],
      ['expired (exp)', `appSession=${await codec.encrypt(data, { iat: now - 100, uat: now - 100, exp: now - 1 })}`],
      ['expired (absolute)', `appSession=${await codec.encrypt(data, { iat: now - 8 * 86_400, uat: now, exp: now + 3600 })}`],
      ['right key, wrong shape (no user)', `appSession=${await codec.encrypt({ ...data, user: undefined } as never, header)}`],
      ["right key, express-openid-connect's own shape", `appSession=${await codec.encrypt({ id_token: 'x', access_token: 'y' } as never, header)}`],
      [
        'a format version the gateway does not know (v: 3), right key',
        `appSession=${await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(data))).setProtectedHeader({ alg: 'dir', enc: 'A256GCM', v: 3, ...header }).encrypt(sessionKey(SESSION_SECRET))}`,
      ],
      ['chunks of two sessions', `appSession.0=${valid.slice(0, 40)}; appSession.1=${(await other.encrypt(data, header)).slice(40)}`],
      ['a hundred chunks', Array.from({ length: 100 }, (_, i) => `appSession.${i}=A`).join('; ')],
    ];
  }

  it('every shape: 401 on the API, the login guard on pages, {authenticated:false}, WebSockets refused; no 5xx, no stack, cleared', async () => {
    // where /auth/logout sends a browser with no session: the realm's logout, back to the login page
    const loggedOutAt = (await fetch(`${w.url}/auth/logout`, { redirect: 'manual' })).headers.get('location');
    expect(loggedOutAt).to.match(/\/protocol\/openid-connect\/logout\?.*post_logout_redirect_uri=[^&]*%2Fauth%2Flogin/);
    for (const [name, cookie] of await shapes()) {
      const mark = w.upstream.requests.length;
      const api = await fetch(`${w.url}/api/v1/files/`, { headers: { cookie } });
      const apiBody = await api.text();
      expect(api.status, `${name}: ${apiBody}`).to.equal(401);
      expect(JSON.parse(apiBody), name).to.deep.equal({ detail: 'Not authenticated' });
      const page = await fetch(`${w.url}/c/1`, { headers: { cookie }, redirect: 'manual' });
      expect(page.status, name).to.equal(302);
      expect(page.headers.get('location'), name).to.match(/\/auth\/login/);
      const session = await fetch(`${w.url}/auth/session`, { headers: { cookie } });
      expect(await session.json(), name).to.deep.equal({ authenticated: false });
      const tenant = await fetch(`${w.url}/auth/session/tenant`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json' },
        body: '{"tenant_id":"acme"}',
      });
      expect(tenant.status, name).to.equal(401);
      const logout = await fetch(`${w.url}/auth/logout`, { headers: { cookie }, redirect: 'manual' });
      expect(logout.status, name).to.equal(302);
      expect(logout.headers.get('location'), name).to.equal(loggedOutAt);
      for (const body of [apiBody, await page.text(), await tenant.text(), await logout.text()]) expect(body, name).to.not.match(STACK_TRACE);
      const upgrade = await new Promise<number>((resolve) => {
        const ws = new WebSocket(`${w.url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, { headers: { cookie, origin: w.url } });
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('open', () => {
          ws.close();
          resolve(101);
        });
        ws.once('error', () => resolve(0));
      });
      expect(upgrade, name).to.equal(401);
      // nothing of it reached the chat front-end (the page and API answers never asked it)
      expect(
        w.upstream.requests.slice(mark).filter((r) => !r.url.startsWith('/api/v1/auths/signin')),
        name,
      ).to.deep.equal([]);
    }
  });

  it('a broken cookie is cleared on the answer, and never forwarded on a public path', async () => {
    const cookie = `appSession=${valid.slice(0, -4)}; theme=dark`;
    const api = await fetch(`${w.url}/api/v1/files/`, { headers: { cookie } });
    const cleared = api.headers.getSetCookie().filter((l) => /^appSession=;/.test(l));
    expect(cleared, api.headers.getSetCookie().join(' | ')).to.have.length(1);
    expect(cleared[0]).to.match(/Expires=Thu, 01 Jan 1970/);
    const mark = w.upstream.requests.length;
    expect((await fetch(`${w.url}/static/app.js`, { headers: { cookie } })).status).to.equal(200);
    const forwarded = w.upstream.requests.slice(mark);
    expect(forwarded).to.have.length(1);
    expect(String(forwarded[0]!.headers.cookie)).to.equal('theme=dark');
  });

  it('a cookie header past the header limit is 431, not an error', async () => {
    const res = await rawRequest(
      Number(new URL(w.url).port),
      `GET /api/v1/files/ HTTP/1.1\r\nHost: x\r\nCookie: appSession=${'A'.repeat(20_000)}\r\nConnection: close\r\n\r\n`,
    );
    expect(res.status).to.equal(431);
    expect(res.body).to.not.match(STACK_TRACE);
  });

  it('the valid cookie still works after all that (nothing was poisoned)', async () => {
    const res = await fetch(`${w.url}/api/v1/auths/`, { headers: { cookie: `appSession=${valid}` } });
    expect(res.status).to.equal(200);
    expect(await res.json()).to.include({ email: 'sysadmin@platform.example' });
  });
});
