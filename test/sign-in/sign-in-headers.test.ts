// Sign-in, toward the chat front-end: every forwarded request of a verified identity
// carries the trusted headers built from that identity alone; client copies (any case, `_` for
// `-`, repeated, listed in Connection:) are removed on every request, `Expect: 100-continue` and
// WebSocket upgrades included; a request without a verified identity never carries them.
// Requests are written byte for byte on raw sockets; the stand-in's rawHeaders are the proof.
import { expect } from 'chai';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { demoAccounts } from '../../sandbox/demo-realm.js';
import { browse, signIn, startWorld, CLIENT_ID, type World } from '../support/cookie-jar.js';
import type { RecordedRequest } from '../../sandbox/open-webui/stand-in.js';

const alice = demoAccounts.find((a) => a.username === 'alice')!;
const TRUSTED = ['x-forwarded-email', 'x-forwarded-name', 'x-forwarded-role', 'x-forwarded-groups'];
const norm = (h: string) => h.toLowerCase().replace(/_/g, '-');

/** One HTTP/1.1 exchange on a raw socket: exactly these header lines, then the body. */
function raw(url: string, method: string, target: string, lines: string[], body = ''): Promise<{ statuses: number[]; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname);
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', reject);
    socket.on('close', () => resolve({ statuses: [...text.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1])), text }));
    const hasConnection = lines.some((l) => /^connection:/i.test(l));
    const head = [`${method} ${target} HTTP/1.1`, `Host: ${u.host}`, ...lines, ...(hasConnection ? [] : ['Connection: close'])];
    if (body) head.push(`Content-Length: ${Buffer.byteLength(body)}`);
    socket.write(`${head.join('\r\n')}\r\n\r\n${body}`);
    setTimeout(() => socket.end(), 1500).unref();
  });
}

/** The trusted headers, as [name, value] pairs in the order the upstream received them. */
const trustedOf = (r: RecordedRequest): Array<[string, string]> => {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < r.rawHeaders.length; i += 2) if (TRUSTED.includes(norm(r.rawHeaders[i]!))) out.push([norm(r.rawHeaders[i]!), r.rawHeaders[i + 1]!]);
  return out.sort();
};

const SPOOFS: Array<[string, string[]]> = [
  [
    'canonical names',
    ['X-Forwarded-Email: sysadmin@platform.example', 'X-Forwarded-Name: Sam Sysadmin', 'X-Forwarded-Role: admin', 'X-Forwarded-Groups: globex,initech'],
  ],
  ['lower case', ['x-forwarded-email: sysadmin@platform.example', 'x-forwarded-role: admin']],
  ['upper case', ['X-FORWARDED-EMAIL: sysadmin@platform.example', 'X-FORWARDED-ROLE: admin', 'X-FORWARDED-GROUPS: globex']],
  ['underscores', ['X_Forwarded_Email: sysadmin@platform.example', 'x_forwarded_role: admin', 'X_FORWARDED_NAME: Sam', 'X_Forwarded_Groups: globex']],
  ['mixed _ and -', ['X-Forwarded_Email: sysadmin@platform.example', 'X_Forwarded-Role: admin']],
  [
    'repeated',
    ['X-Forwarded-Email: sysadmin@platform.example', 'X-Forwarded-Email: someone@else.example', 'X-Forwarded-Role: admin', 'x-forwarded-role: admin'],
  ],
  [
    'listed in Connection:',
    [
      'Connection: close, X-Forwarded-Email, X-Forwarded-Role, X-Forwarded-Name, X-Forwarded-Groups',
      'X-Forwarded-Email: sysadmin@platform.example',
      'X-Forwarded-Role: admin',
    ],
  ],
  ['empty values', ['X-Forwarded-Email:', 'X-Forwarded-Role: ']],
];

describe('sign-in: trusted headers toward the chat front-end', function () {
  this.timeout(20_000);
  let w: World;
  let cookie: string;
  let bearer: string;
  const expected = (): Array<[string, string]> => [
    ['x-forwarded-email', alice.email],
    ['x-forwarded-groups', 'acme'],
    ['x-forwarded-name', alice.name],
    ['x-forwarded-role', 'user'],
  ];

  before(async () => {
    w = await startWorld();
    const { jar } = await signIn(w.url, 'alice');
    cookie = jar.header('/');
    bearer = await w.idp.accessTokenFor('alice', CLIENT_ID);
  });
  after(async () => {
    await w?.close();
  });

  /** Send, then find what the upstream received for this probe. */
  async function probe(method: string, path: string, lines: string[], body = '') {
    const id = randomUUID();
    const target = `${path}${path.includes('?') ? '&' : '?'}probe=${id}`;
    const res = await raw(w.url, method, target, lines, body);
    const seen = w.upstream.requests.filter((r) => r.url.includes(id));
    return { ...res, seen };
  }

  for (const [name, spoof] of SPOOFS) {
    describe(`client copies: ${name}`, () => {
      it("with a session: an API call carries the identity's headers only, once each", async () => {
        const r = await probe('GET', '/api/v1/auths/', [`Cookie: ${cookie}`, ...spoof]);
        expect(r.statuses.pop()).to.equal(200);
        expect(r.seen).to.have.length(1);
        expect(trustedOf(r.seen[0]!)).to.deep.equal(expected());
      });

      it('with a session: a page, and a POST with Expect: 100-continue', async () => {
        const page = await probe('GET', '/c/1', [`Cookie: ${cookie}`, ...spoof]);
        expect(page.statuses.pop()).to.equal(200);
        expect(trustedOf(page.seen[0]!)).to.deep.equal(expected());
        const post = await probe('POST', '/api/v1/probe', [`Cookie: ${cookie}`, 'Content-Type: application/json', 'Expect: 100-continue', ...spoof], '{"x":1}');
        expect(post.statuses[0]).to.equal(100);
        expect(post.seen).to.have.length(1);
        expect(trustedOf(post.seen[0]!)).to.deep.equal(expected());
        expect(post.seen[0]!.bodyBytes).to.equal(7);
      });

      it("with a realm bearer JWT: the token's identity only", async () => {
        const r = await probe('GET', '/api/v1/auths/', [`Authorization: Bearer ${bearer}`, ...spoof]);
        expect(r.statuses.pop()).to.equal(200);
        expect(trustedOf(r.seen[0]!)).to.deep.equal(expected());
      });

      it('without an identity: none reaches the chat front-end (public paths), or nothing at all (API, pages)', async () => {
        for (const path of ['/static/app.js', '/health']) {
          const r = await probe('GET', path, spoof);
          expect(r.seen, path).to.have.length(1);
          expect(trustedOf(r.seen[0]!), path).to.deep.equal([]);
        }
        const api = await probe('GET', '/api/v1/auths/', spoof);
        expect(api.statuses.pop()).to.equal(401);
        expect(api.seen).to.have.length(0);
        const page = await probe('GET', '/c/1', spoof);
        expect(page.statuses.pop()).to.equal(302);
        expect(page.seen).to.have.length(0);
        const upload = await probe('POST', '/api/v1/probe', ['Content-Type: application/json', 'Expect: 100-continue', ...spoof], '{"x":1}');
        expect(upload.statuses).to.deep.equal([401]);
        expect(upload.seen).to.have.length(0);
      });
    });
  }

  describe('WebSocket upgrades (authenticated on the server, Origin checked)', () => {
    /** Open /ws/socket.io through the gateway; resolves with the upstream's hello or the refusal status. */
    function open(headers: Record<string, string>): Promise<{ status: number; hello?: { headers: Record<string, string> } }> {
      return new Promise((resolve, reject) => {
        const ws = new WebSocket(`${w.url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, { headers });
        ws.once('unexpected-response', (_req, res) => {
          resolve({ status: res.statusCode ?? 0 });
          res.resume();
          ws.terminate();
        });
        ws.once('message', (data) => {
          const hello = JSON.parse(String(data)) as { headers: Record<string, string> };
          ws.send('ping');
          ws.once('message', (echo) => {
            expect(String(echo)).to.equal('ping');
            ws.close();
            resolve({ status: 101, hello });
          });
        });
        ws.once('error', (err) => reject(err));
      });
    }
    const upgrades = () => w.upstream.requests.filter((r) => r.upgrade);

    it("with a session and our Origin: through, carrying the identity's headers and an upstream token, spoofs removed", async () => {
      const n = upgrades().length;
      const r = await open({
        cookie,
        origin: w.url,
        X_Forwarded_Email: 'sysadmin@platform.example',
        'X-Forwarded-Role': 'admin',
        'x-forwarded-groups': 'globex',
      });
      expect(r.status).to.equal(101);
      expect(r.hello!.headers).to.include({ 'x-forwarded-email': alice.email, 'x-forwarded-role': 'user', 'x-forwarded-groups': 'acme' });
      expect(r.hello!.headers.authorization).to.match(/^Bearer ey/);
      expect(String(r.hello!.headers.cookie ?? '')).to.not.include('appSession');
      const seen = upgrades().slice(n);
      expect(seen).to.have.length(1);
      expect(trustedOf(seen[0]!)).to.deep.equal(expected());
    });

    it('with a realm bearer JWT and no Origin (not a browser): through', async () => {
      const r = await open({ authorization: `Bearer ${bearer}` });
      expect(r.status).to.equal(101);
      expect(r.hello!.headers).to.include({ 'x-forwarded-email': alice.email });
      expect(r.hello!.headers.authorization).to.not.include(bearer);
    });

    it('refused before the upstream: no session (401), a forged bearer (401), a foreign or missing Origin with a cookie session (403)', async () => {
      const n = upgrades().length;
      expect((await open({ origin: w.url })).status).to.equal(401);
      expect((await open({ origin: w.url, 'X-Forwarded-Email': alice.email, 'X-Forwarded-Role': 'admin' })).status).to.equal(401);
      expect((await open({ authorization: `Bearer ${await w.idp.signForeignJwt({ sub: alice.sub, aud: CLIENT_ID, email: alice.email })}` })).status).to.equal(
        401,
      );
      expect((await open({ cookie, origin: 'https://evil.example' })).status).to.equal(403);
      expect((await open({ cookie })).status).to.equal(403);
      expect(upgrades().length, 'no refused upgrade reached the chat front-end').to.equal(n);
    });

    it('after logout the same cookie opens no socket', async () => {
      const { jar } = await signIn(w.url, 'alice');
      const c = jar.header('/');
      expect((await open({ cookie: c, origin: w.url })).status).to.equal(101);
      await browse(jar, '/auth/logout');
      expect((await open({ cookie: c, origin: w.url })).status).to.equal(401);
    });
  });

  describe('only the credential the gateway checked is forwarded', () => {
    it('with a session, a client\u2019s own Authorization, x-api-key and token cookie (another user\u2019s) never reach the upstream', async () => {
      // Bob signs in once, so that the chat front-end knows him and has a token and a key of his.
      const bobJar = (await signIn(w.url, 'bob')).jar;
      expect((await fetch(`${w.url}/api/v1/auths/`, { headers: { cookie: bobJar.header('/') } })).status).to.equal(200);
      const bobEmail = demoAccounts.find((a) => a.username === 'bob')!.email;
      const bobId = [...w.upstream.users.values()].find((u) => u.email === bobEmail)!.id;
      const bobToken = await w.upstream.tokenFor(bobId);
      const bobKey = w.upstream.apiKeyFor(bobId);
      const id = randomUUID();
      const { statuses, text } = await raw(w.url, 'GET', `/api/v1/auths/?cred=${id}`, [
        `Cookie: ${cookie}; token=${bobToken}; theme=dark`,
        `Authorization: Bearer ${bobToken}`,
        `X-Api-Key: ${bobKey}`,
      ]);
      expect(statuses).to.deep.equal([200]);
      expect(text).to.include(alice.email);
      expect(text).to.not.include(bobEmail);
      const seen = w.upstream.requests.filter((r) => r.url.includes(id));
      expect(seen).to.have.length(1);
      const r = seen[0]!;
      expect(r.headers.authorization).to.be.a('string').and.not.include(bobToken);
      expect(r.headers['x-api-key']).to.equal(undefined);
      expect(String(r.headers.cookie ?? '')).to.not.include('token=');
      expect(String(r.headers.cookie ?? '')).to.include('theme=dark');
    });

    it('with a realm bearer JWT, an x-api-key or token cookie alongside is dropped', async () => {
      // runs after the test above, which made Bob known upstream
      const other = w.upstream.apiKeyFor([...w.upstream.users.values()].find((u) => u.email !== alice.email)!.id);
      const id = randomUUID();
      const { statuses, text } = await raw(w.url, 'GET', `/api/v1/auths/?cred=${id}`, [
        `Authorization: Bearer ${bearer}`,
        `X-Api-Key: ${other}`,
        'Cookie: token=forged',
      ]);
      expect(statuses).to.deep.equal([200]);
      expect(text).to.include(alice.email);
      const r = w.upstream.requests.find((x) => x.url.includes(id))!;
      expect(r.headers['x-api-key']).to.equal(undefined);
      expect(r.headers.cookie).to.equal(undefined);
    });
  });
});
