// The pass-through: streamed bodies, server-sent events, canonical forwarding, bypass shapes,
// and clean 502/504 answers when the upstream fails. Real sockets throughout.
import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import { once } from 'node:events';
import { startOpenWebUI, type OpenWebUIStandIn, type StandInFile } from '../../sandbox/open-webui/stand-in.js';
import { emptyWorkspace } from '../../sandbox/open-webui/workspace.js';

/** A workspace holding one registered model (an admin's completion runs only a model the admin may read). */
function withModel(id: string, owner: string) {
  const ws = emptyWorkspace();
  ws.objects.model.set(id, { id, user_id: '', name: id, info: { user_id: owner, access_grants: [] }, created_at: 0, updated_at: 0 });
  return ws;
}
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';
import { rawExchange } from '../support/raw-http.js';
import { sleep } from '../support/wait.js';

const now = Math.floor(Date.now() / 1000);
const file = (id: string, user_id: string, meta: Record<string, unknown> = {}): StandInFile => ({
  id,
  user_id,
  hash: null,
  filename: `${id}.bin`,
  data: { content: `content of ${id}` },
  meta: { name: `${id}.bin`, content_type: 'application/octet-stream', size: 10, ...meta },
  created_at: now,
  updated_at: now,
});

/** Raw HTTP/1.1 over a socket: exactly the bytes a tester would send. */
const rawRequest = async (port: number, text: string, waitMs = 1500) => (await rawExchange(port, text, waitMs)).text;

const rss = () => process.memoryUsage().rss;

describe('proxy pass-through', function () {
  this.timeout(60_000);
  let upstream: OpenWebUIStandIn;
  let gw: RunningGateway;
  let adminKey: string;
  let port: number;

  before(async () => {
    upstream = await startOpenWebUI({
      users: [
        { id: 'u-admin', email: 'admin@platform.test', name: 'Admin', role: 'admin', groups: [] },
        { id: 'u-bob', email: 'bob@globex.test', name: 'Bob', role: 'user', groups: [] },
      ],
      files: [file('f-admin', 'u-admin'), file('f-bob', 'u-bob'), file('f-huge', 'u-admin', { synthetic_size: 512 * 1024 * 1024 })],
      chats: [],
      workspace: withModel('m', 'u-admin'),
    });
    adminKey = upstream.apiKeyFor('u-admin');
    gw = await startGateway(baseEnv(upstream.url, { ALLOW_UPSTREAM_API_KEYS: 'true' }));
    port = Number(new URL(gw.url).port);
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  const auth = () => ({ authorization: `Bearer ${adminKey}` });

  it('forwards the canonical path, exactly as judged', async () => {
    const mark = upstream.requests.length;
    const res = await fetch(`${gw.url}//api/v1/./files/x/../f-admin?content=true`, { headers: auth() });
    expect(res.status).to.equal(200);
    const sent = upstream.requests.slice(mark).map((r) => r.url);
    expect(sent).to.include('/api/v1/files/f-admin?content=true');
    expect(sent.every((u) => !u.includes('..') && !u.includes('//') && !u.includes('/./'))).to.equal(true);
  });

  it('every spelling of the export path is refused, and the upstream never sees the export', async () => {
    const shapes = [
      '/api/v1/chats/all/db',
      '/api/v1/chats/all/db/',
      '//api/v1/chats/all/db',
      '/api//v1/chats/all/db',
      '/api/v1/x/../chats/all/db',
      '/api/v1/x/%2e%2e/chats/all/db',
      '/api/v1/x/%2E%2E/chats/all/db',
      '/api/v1/x/.%2e/chats/all/db',
      '/api/v1/chats/all/./db',
      '/api/v1/chats%2fall%2fdb',
      '/api/v1/chats%2Fall/db',
      '/api/v1/chats/all%5cdb',
      '/api/v1\\chats\\all\\db',
      '/api/v1/chats/all;x=1/db',
      '/api/v1/chats/all/db;.css',
      '/api/v1/chats/%61ll/db',
      '/%61%70%69/v1/chats/all/db',
      '/API/V1/CHATS/ALL/DB',
      '/api/v1/chats/all/db%00',
      '/api/v1/chats/all/db%23',
      '/api/v1/chats/all/db#frag',
      '/api/v1/chats/all/db?x=1',
      '/api/v1/%c0%ae%c0%ae/v1/chats/all/db',
      '/api/v1/utils/db/download',
      '/api/v1/utils/x/../db/download',
      '/api/v1/chats/list/user/u-bob',
      '/api/v1/chats/list/user/./u-bob',
    ];
    const mark = upstream.requests.length;
    for (const shape of shapes) {
      for (const method of ['GET', 'HEAD']) {
        const reply = await rawRequest(port, `${method} ${shape} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${adminKey}\r\nConnection: close\r\n\r\n`);
        const status = Number(reply.split(' ')[1]);
        // 403: a path Open WebUI 0.12.4 does not have, refused for admins (the route table)
        expect([400, 401, 403, 404], `${method} ${shape} answered ${status}`).to.include(status);
      }
    }
    // What Starlette would route: the percent-decoded path, without the query.
    const routed = (url: string) => decodeURIComponent(url.split('?')[0]!).replace(/\/+$/, '').toLowerCase();
    const leaked = upstream.requests
      .slice(mark)
      .filter((r) => ['/api/v1/chats/all/db', '/api/v1/utils/db/download'].includes(routed(r.url)) || routed(r.url).startsWith('/api/v1/chats/list/user/'));
    expect(leaked.map((r) => r.url)).to.deep.equal([]);
  });

  it('refuses method override headers and TRACE', async () => {
    for (const h of ['X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override']) {
      const res = await fetch(`${gw.url}/api/v1/files/f-admin`, { method: 'POST', headers: { ...auth(), [h]: 'DELETE' } });
      expect(res.status, h).to.equal(400);
    }
    expect(upstream.files.has('f-admin')).to.equal(true);
    const trace = await rawRequest(port, `TRACE /api/v1/files/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(trace).to.match(/^HTTP\/1.1 405/);
  });

  it('streams server-sent events as the upstream writes them', async () => {
    const res = await fetch(`${gw.url}/api/chat/completions`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ stream: true, n: 6, model: 'm', messages: [] }),
    });
    expect(res.headers.get('content-type')).to.match(/text\/event-stream/);
    const arrivals: number[] = [];
    const start = Date.now();
    const decoder = new TextDecoder();
    let text = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      arrivals.push(Date.now() - start);
    }
    expect(text).to.match(/data: \[DONE\]/);
    // Six events ~20 ms apart: they must arrive spread out, not in one buffered lump at the end.
    expect(arrivals.length).to.be.greaterThan(3);
    expect(arrivals[arrivals.length - 1]! - arrivals[0]!).to.be.greaterThan(60);
  });

  it('streams a 256 MiB upload without buffering it', async () => {
    const size = 256 * 1024 * 1024;
    const before = rss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 20);
    const boundary = 'gatewayboundary';
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${gw.url}/api/v1/files/`, {
        method: 'POST',
        headers: { ...auth(), 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + size + tail.length },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      let sent = 0;
      req.write(head);
      const pump = () => {
        while (sent < size) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        req.end(tail);
      };
      pump();
    });
    clearInterval(sampler);
    expect(status).to.equal(200);
    const stored = [...upstream.files.values()].find((f) => f.filename === 'big.bin');
    expect(stored?.meta.size).to.equal(size);
    // Gateway, stand-in and client share this process: a buffered body would add >= 256 MiB.
    expect(peak - before).to.be.lessThan(128 * 1024 * 1024);
  });

  it('streams a 512 MiB download without buffering it', async () => {
    const before = rss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 20);
    const res = await fetch(`${gw.url}/api/v1/files/f-huge/content`, { headers: auth() });
    expect(res.status).to.equal(200);
    let bytes = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
    clearInterval(sampler);
    expect(bytes).to.equal(512 * 1024 * 1024);
    expect(peak - before).to.be.lessThan(128 * 1024 * 1024);
  });

  it('an aborted download closes the upstream connection too', async () => {
    const baseline = upstream.openSockets();
    const req = http.get(`${gw.url}/api/v1/files/f-huge/content`, { headers: auth(), agent: false });
    const [res] = (await once(req, 'response')) as [http.IncomingMessage];
    await once(res, 'data');
    const during = upstream.openSockets();
    req.destroy();
    await sleep(300);
    expect(during).to.be.greaterThan(0);
    expect(upstream.openSockets()).to.be.at.most(baseline);
  });

  it('a refused request never gets 100 Continue, so its body is never sent', async () => {
    const reply = await rawRequest(
      port,
      `POST /api/v1/chats/all/db HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${adminKey}\r\nExpect: 100-continue\r\nContent-Length: 5\r\nConnection: close\r\n\r\n`,
    );
    expect(reply).to.not.match(/100 Continue/);
    expect(reply).to.match(/^HTTP\/1.1 401/);
  });

  it('an accepted upload gets 100 Continue and reaches the upstream', async () => {
    const body = JSON.stringify({ name: 'renamed.bin' });
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(
      `POST /api/v1/files/f-admin/rename HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${adminKey}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    );
    const [first] = (await once(socket, 'data')) as [Buffer];
    expect(first.toString()).to.match(/^HTTP\/1.1 100 Continue/);
    socket.write(body);
    let reply = first.toString();
    while (!/HTTP\/1.1 200/.test(reply)) reply += ((await once(socket, 'data')) as [Buffer])[0].toString();
    socket.destroy();
    expect(upstream.files.get('f-admin')?.filename).to.equal('renamed.bin');
  });

  it('refuses requests with both Content-Length and Transfer-Encoding', async () => {
    const mark = upstream.requests.length;
    const reply = await rawRequest(
      port,
      `POST /api/v1/files/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /api/v1/chats/all/db HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    expect(reply).to.match(/^HTTP\/1.1 400/);
    expect(upstream.requests.slice(mark)).to.have.length(0);
  });
});

describe('upstream failures', function () {
  this.timeout(20_000);

  it('upstream down: 502 with a JSON detail, and the gateway keeps serving', async () => {
    const dead = net.createServer().listen(0, '127.0.0.1');
    await once(dead, 'listening');
    const deadPort = (dead.address() as net.AddressInfo).port;
    dead.close();
    const gw = await startGateway(baseEnv(`http://127.0.0.1:${deadPort}`));
    try {
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${gw.url}/static/app.js`);
        expect(res.status).to.equal(502);
        expect(await res.json()).to.have.property('detail');
      }
      expect((await fetch(`${gw.url}/api/v1/files/`)).status).to.equal(401);
    } finally {
      await gw.close();
    }
  });

  it('upstream slower than UPSTREAM_TIMEOUT_MS: 504 with a JSON detail', async () => {
    const slow = http.createServer(() => {
      /* never answers */
    });
    slow.listen(0, '127.0.0.1');
    await once(slow, 'listening');
    const gw = await startGateway(baseEnv(`http://127.0.0.1:${(slow.address() as net.AddressInfo).port}`, { UPSTREAM_TIMEOUT_MS: '300' }));
    try {
      const started = Date.now();
      const res = await fetch(`${gw.url}/static/app.js`);
      expect(res.status).to.equal(504);
      expect(await res.json()).to.have.property('detail');
      expect(Date.now() - started).to.be.within(250, 3000);
    } finally {
      await gw.close();
      slow.closeAllConnections();
      slow.close();
    }
  });

  describe('a rewritten route whose upstream answer cannot be checked fails closed', () => {
    let server: http.Server;
    let gw: RunningGateway;
    let answer: (res: http.ServerResponse, path: string) => void = () => {};
    before(async () => {
      server = http.createServer((req, res) => {
        if (req.url?.startsWith('/api/v1/auths/')) {
          res.setHeader('content-type', 'application/json');
          return res.end(JSON.stringify({ id: 'u-admin', role: 'admin', email: 'a@x', name: 'A' }));
        }
        answer(res, (req.url ?? '').split('?')[0]!);
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      gw = await startGateway(baseEnv(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, { ALLOW_UPSTREAM_API_KEYS: 'true' }));
    });
    after(async () => {
      await gw.close();
      server.closeAllConnections();
      server.close();
    });
    const list = () => fetch(`${gw.url}/api/v1/files/`, { headers: { authorization: 'Bearer sk-abc123' } });
    const foreign = {
      items: [
        { id: 'f1', user_id: 'u-admin' },
        { id: 'f2', user_id: 'u-other' },
      ],
      total: 2,
    };

    it('not JSON: 502', async () => {
      answer = (res) => res.end('<html>oops</html>');
      const res = await list();
      expect(res.status).to.equal(502);
      expect(await res.text()).to.not.match(/oops/);
    });

    it('JSON of the wrong shape: 502, nothing passed through', async () => {
      answer = (res) => res.end(JSON.stringify([{ id: 'f2', user_id: 'u-other' }]));
      const res = await list();
      expect(res.status).to.equal(502);
      expect(await res.text()).to.not.match(/u-other/);
    });

    it('gzip or brotli even though identity was asked for: decoded and filtered', async () => {
      for (const [enc, fn] of [
        ['gzip', zlib.gzipSync],
        ['br', zlib.brotliCompressSync],
        ['deflate', zlib.deflateSync],
      ] as const) {
        // every user's page (Open WebUI's own bypass on), then the admin's own files it is rebuilt from
        answer = (res, path) => {
          res.setHeader('content-encoding', enc);
          res.setHeader('etag', '"upstream"');
          const own = path === '/api/v1/files/user/search' ? [foreign.items[0]] : path === '/api/v1/files/user/count' ? 1 : foreign;
          res.end(fn(Buffer.from(JSON.stringify(own))));
        };
        const res = await list();
        expect(res.status, enc).to.equal(200);
        expect(res.headers.get('content-encoding')).to.equal(null);
        expect(res.headers.get('etag')).to.equal(null);
        const body = (await res.json()) as { items: { id: string }[] };
        expect(body.items.map((f) => f.id)).to.deep.equal(['f1']);
      }
    });

    it('an encoding it cannot decode: 502', async () => {
      answer = (res) => {
        res.setHeader('content-encoding', 'zstd');
        res.end(Buffer.from('garbage'));
      };
      expect((await list()).status).to.equal(502);
    });

    it('the upstream resets mid-body: 502', async () => {
      answer = (res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"items": [');
        setTimeout(() => res.destroy(), 20);
      };
      expect((await list()).status).to.equal(502);
    });
  });
});
