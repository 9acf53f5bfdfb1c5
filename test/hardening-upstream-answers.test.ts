// Hardening: one bad answer from the upstream ends that one exchange, never the process.
// The gateway runs in its own process (gateway/main.ts, as `npm start` runs it), behind an
// upstream written with raw sockets that sends exactly the bytes of each fault: broken framing on
// a streamed route, an invalid status, a socket that dies mid-download or mid-upload. After every
// fault the same process must still answer. Also: CONNECT, the Host header, and a malformed request
// pipelined behind a valid POST.
import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import { baseEnv, gatewayProcess } from './support/gateway-harness.js';
import { rawExchange, parseResponses } from './support/raw-http.js';
import { sleep } from './support/wait.js';

/**
 * A route streamed as the upstream answers, for every caller: the caller here is an admin, for whom
 * lists of workspace objects (/api/v1/models) are rebuilt by the gateway, not streamed.
 */
const STREAMED = '/api/v1/memories/';
const KEY = 'sk-0123456789abcdef';
const AUTH = `Authorization: Bearer ${KEY}`;
/** The idle limit the gateway runs with: every fault must end far sooner than this. */
const IDLE_TIMEOUT_MS = 20_000;

/** The bytes of each broken answer (issue: outside attack corpora and fault injection). */
const BROKEN_ANSWERS: Record<string, string> = {
  'more body bytes than Content-Length': 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhelloGARBAGE-AFTER-BODY',
  'a chunk size that is not hex': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZZ\r\n',
  'a chunk missing its CRLF': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX5\r\nhello\r\n0\r\n\r\n',
  'a chunk size that overflows': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nFFFFFFFFFFFFFFFFFFFF\r\nabc',
  'a malformed trailer': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nbad trailer line\r\n\r\n',
};

type Mode = (socket: net.Socket, head: string, rest: Buffer) => void;

/** An upstream that reads one request head and then does what the test set; answers the API-key lookup itself. */
async function rawUpstream() {
  let mode: Mode = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
  let bodyBytes = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    let headSeen = false;
    socket.on('data', (d: Buffer) => {
      if (headSeen) {
        bodyBytes += d.length;
        return;
      }
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString('latin1');
      const rest = buf.subarray(end + 4);
      buf = Buffer.alloc(0);
      if (head.startsWith('GET /api/v1/auths/ ')) {
        const body = JSON.stringify({ id: 'u-admin', email: 'admin@platform.test', name: 'Admin', role: 'admin' });
        socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
        return;
      }
      if (head.startsWith('GET /static/healthy')) {
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok');
        return;
      }
      headSeen = true;
      bodyBytes = rest.length;
      mode(socket, head, rest);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    set(m: Mode) {
      mode = m;
    },
    bodyBytes: () => bodyBytes,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

interface Got {
  status: number;
  body: string;
  /** the client saw the whole body (a clean end of the chunked body, or Content-Length reached) */
  complete: boolean;
  bytes: number;
  ms: number;
}

function request(port: number, method: string, path: string, opts: { upload?: (req: http.ClientRequest) => void; ms?: number } = {}): Promise<Got> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const req = http.request(
      { host: '127.0.0.1', port, method, path, headers: { authorization: `Bearer ${KEY}` }, agent: false, timeout: opts.ms ?? IDLE_TIMEOUT_MS * 2 },
      (res) => {
        let body = '';
        let bytes = 0;
        res.on('data', (d: Buffer) => {
          bytes += d.length;
          if (body.length < 1000) body += d.toString('latin1');
        });
        res.on('error', () => undefined);
        res.on('close', () => resolve({ status: res.statusCode ?? 0, body, complete: res.complete, bytes, ms: Date.now() - started }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer in time')));
    req.on('error', (err) => (opts.upload ? resolve({ status: 0, body: err.message, complete: false, bytes: 0, ms: Date.now() - started }) : reject(err)));
    if (opts.upload) opts.upload(req);
    else req.end();
  });
}

describe('hardening: a bad upstream answer ends that exchange only (gateway in its own process)', function () {
  this.timeout(60_000);
  let up: Awaited<ReturnType<typeof rawUpstream>>;
  let gw: Awaited<ReturnType<typeof gatewayProcess>>;

  before(async () => {
    up = await rawUpstream();
    gw = await gatewayProcess({
      ...baseEnv(up.url),
      HOST: '127.0.0.1',
      PORT: '0',
      PUBLIC_URL: 'http://gateway.test:8080',
      ALLOW_UPSTREAM_API_KEYS: 'true',
      UPSTREAM_TIMEOUT_MS: '3000',
      IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
      DRIFT_CHECK_SECONDS: '0',
      // info: the 'gateway listening' line carries the port it took
      LOG_LEVEL: 'info',
    });
  });
  after(async () => {
    gw?.child.kill('SIGKILL');
    await up?.close();
  });

  /** The same process answers a streamed request after the fault. */
  async function expectStillServing(what: string) {
    await sleep(100);
    expect(gw.exited(), `${what}: the gateway process exited\n${gw.output().slice(-2000)}`).to.equal(null);
    const healthy = await request(gw.port, 'GET', '/static/healthy.js');
    expect(healthy.status, `${what}: the gateway stopped serving`).to.equal(200);
    expect(healthy.body).to.equal('ok');
  }

  for (const [name, bytes] of Object.entries(BROKEN_ANSWERS)) {
    it(`broken framing on a streamed route (${name}): a clean 502, and the process keeps serving`, async () => {
      up.set((s) => s.write(bytes));
      const got = await request(gw.port, 'GET', STREAMED);
      // Nothing of the answer had reached the client yet: a 502 of the gateway's own, none of the upstream's headers.
      expect(got.status, name).to.equal(502);
      expect(JSON.parse(got.body).detail).to.equal('The chat front-end sent an invalid answer');
      await expectStillServing(name);
    });
  }

  it('all five broken answers in a row, several times, on keep-alive upstream sockets: the process survives', async () => {
    for (let round = 0; round < 3; round++) {
      for (const bytes of Object.values(BROKEN_ANSWERS)) {
        up.set((s) => s.write(bytes));
        const got = await request(gw.port, 'GET', STREAMED);
        expect([502]).to.include(got.status);
      }
    }
    await expectStillServing('five broken answers, three rounds');
  });

  it('an invalid status (999) is a 502, not relayed', async () => {
    up.set((s) => s.write('HTTP/1.1 999 Weird\r\nContent-Length: 2\r\nX-Upstream: yes\r\n\r\nok'));
    const got = await request(gw.port, 'GET', STREAMED);
    expect(got.status).to.equal(502);
    expect(JSON.parse(got.body).detail).to.equal('The chat front-end sent an invalid answer');
    await expectStillServing('status 999');
  });

  it('broken framing after part of the body was streamed: the client connection is cut, the body visibly incomplete', async () => {
    const part = 'x'.repeat(64 * 1024);
    up.set((s) => {
      s.write(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${part.length.toString(16)}\r\n${part}\r\n`);
      setTimeout(() => s.write('ZZZ\r\n'), 200);
    });
    const got = await request(gw.port, 'GET', STREAMED);
    expect(got.status).to.equal(200);
    expect(got.complete, 'the client must be able to tell the body is incomplete').to.equal(false);
    expect(got.bytes).to.equal(part.length);
    expect(got.ms).to.be.below(5_000);
    await expectStillServing('framing error mid-body');
  });

  for (const framing of ['content-length', 'chunked'] as const) {
    it(`the upstream dies mid-download (${framing}): the client's connection ends at once, the body incomplete`, async () => {
      const declared = 200 * 1024 * 1024;
      up.set((s) => {
        s.write(
          `HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n${framing === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${declared}`}\r\n\r\n`,
        );
        const chunk = Buffer.alloc(1024 * 1024, 0x61);
        let sent = 0;
        const pump = () => {
          if (sent >= 8) return s.destroy(); // killed: 8 MiB of 200 MiB sent
          s.write(framing === 'chunked' ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk, pump);
          sent++;
        };
        pump();
      });
      const got = await request(gw.port, 'GET', '/api/v1/files/f1/content');
      expect(got.status).to.equal(200);
      expect(got.complete).to.equal(false);
      expect(got.bytes).to.be.below(declared);
      expect(got.ms, 'the client waited for the idle timeout').to.be.below(5_000);
      await expectStillServing(`mid-download death (${framing})`);
    });
  }

  it('the upstream dies mid-upload: the client gets a 502 or a closed connection at once, not after the idle timeout', async () => {
    up.set((s) => {
      // reads the head and a little of the body, then dies
      setTimeout(() => s.destroy(), 300);
    });
    const got = await request(gw.port, 'POST', '/api/v1/files/', {
      upload: (req) => {
        req.setHeader('content-type', 'application/octet-stream');
        req.setHeader('content-length', String(200 * 1024 * 1024));
        const chunk = Buffer.alloc(256 * 1024, 0x62);
        let stopped = false;
        req.on('close', () => (stopped = true));
        req.on('error', () => (stopped = true));
        // a client that keeps uploading slowly, as a browser on a slow line would
        const pump = () => {
          if (stopped) return;
          req.write(chunk);
          setTimeout(pump, 50);
        };
        pump();
      },
    });
    expect(got.ms, 'the client waited for the idle timeout').to.be.below(5_000);
    expect([0, 502]).to.include(got.status);
    if (got.status === 502) expect(JSON.parse(got.body).detail).to.equal('The chat front-end is not reachable');
    await expectStillServing('mid-upload death');
  });

  it('CONNECT gets a 405 answer, not a silently closed socket', async () => {
    const { text } = await rawExchange(gw.port, 'CONNECT upstream.test:443 HTTP/1.1\r\nHost: upstream.test:443\r\n\r\n');
    const [res] = parseResponses(text);
    expect(res?.status).to.equal(405);
    expect(JSON.parse(res!.body).detail).to.equal('Method Not Allowed');
    await expectStillServing('CONNECT');
  });

  it('an invalid Host header is refused with 400; a valid one reaches the upstream as the public host', async () => {
    const bad = parseResponses((await rawExchange(gw.port, `GET ${STREAMED} HTTP/1.1\r\nHost: a b\r\n${AUTH}\r\nConnection: close\r\n\r\n`)).text);
    expect(bad[0]?.status).to.equal(400);
    expect(JSON.parse(bad[0]!.body).detail).to.match(/Host/);
    let seenHost = '';
    up.set((s, head) => {
      seenHost = /\r\nhost: ([^\r]*)/i.exec(head)?.[1] ?? '';
      s.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
    });
    const good = parseResponses(
      (await rawExchange(gw.port, `GET ${STREAMED} HTTP/1.1\r\nHost: evil.example:1234\r\n${AUTH}\r\nConnection: close\r\n\r\n`)).text,
    );
    expect(good[0]?.status).to.equal(200);
    expect(seenHost).to.equal('gateway.test:8080');
  });

  it('a malformed request pipelined behind a valid POST: the POST is answered first, then the socket closes', async () => {
    up.set((s) =>
      setTimeout(() => s.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"saved":true}'.replace('13', '14')), 200),
    );
    const post = `POST /api/v1/chats/new HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;
    const { text, closedByServer } = await rawExchange(gw.port, post + 'GARBAGE \x01\r\n\r\n', 5_000);
    const answers = parseResponses(text, ['POST']);
    // Nothing after it: a 400 written while the POST was being answered could land inside its body.
    expect(answers.map((a) => a.status)).to.deep.equal([200]);
    expect(answers[0]!.body).to.equal('{"saved":true}');
    expect(closedByServer).to.equal(true);
    await expectStillServing('pipelined garbage');
  });
});
