// QUIET_GC_MS (gateway/http/quiet-gc.ts): once no request is in flight for that long after some
// activity, and the old generation grew by 8 MB or more since the last collection, the gateway
// runs one full garbage collection, so that a burst's garbage is not still there when the next
// burst comes (peak RSS). Never while a request is in flight; at most once per quiet period.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { expect } from 'chai';
import { QUIET_GC_MIN_GROWTH_BYTES, QuietWatch, obtainGc, oldGenerationBytes, shouldCollect } from '../gateway/http/quiet-gc.js';
import { loadSettings } from '../config/settings.js';
import { baseEnv, startGateway, type RunningGateway } from './support/gateway-harness.js';
import { sleep } from './support/wait.js';

const MB = 2 ** 20;

describe('unit: when a quiet collection runs', () => {
  const state = { busy: 0, quietForMs: 1_000, grownBytes: QUIET_GC_MIN_GROWTH_BYTES };
  it('nothing in flight, quiet long enough, and the old generation grew by 8 MB: yes', () => {
    expect(shouldCollect(state, 1_000)).to.equal(true);
    expect(shouldCollect({ ...state, quietForMs: 60_000, grownBytes: 100 * MB }, 1_000)).to.equal(true);
  });
  it('a request in flight, not quiet long enough, too little growth, or off (0): no', () => {
    expect(shouldCollect({ ...state, busy: 1 }, 1_000)).to.equal(false);
    expect(shouldCollect({ ...state, quietForMs: 999 }, 1_000)).to.equal(false);
    expect(shouldCollect({ ...state, grownBytes: QUIET_GC_MIN_GROWTH_BYTES - 1 }, 1_000)).to.equal(false);
    expect(shouldCollect({ ...state, quietForMs: 60_000 }, 0)).to.equal(false);
  });
});

describe('unit: the quiet watch, step by step (times in ms, heap sizes in MB)', () => {
  const conn = () => ({ destroyed: false });
  const heap = (mb: number) => () => mb * MB;
  /** The times in `ticks` at which a collection is due, the heap reading `mb` at each. */
  const dueAt = (w: QuietWatch, ticks: number[], mb = 100) => ticks.filter((t) => w.due(t, heap(mb)));

  it('no request since start: never, whatever the heap did', () => {
    expect(dueAt(new QuietWatch(1_000, 0, 0), [1_000, 5_000, 60_000])).to.deep.equal([]);
  });

  it('after a request, once quiet: once, then not again without new activity', () => {
    const w = new QuietWatch(1_000, 0, 0);
    const c = conn();
    w.begin(c);
    w.due(100, heap(100));
    w.end(c);
    expect(dueAt(w, [200, 900, 1_100, 1_200, 5_000])).to.deep.equal([1_200]);
  });

  it('quiet is counted from the end of the last answer, not its start', () => {
    const w = new QuietWatch(1_000, 0, 0);
    const c = conn();
    w.begin(c);
    expect(dueAt(w, [100, 2_000, 4_000])).to.deep.equal([]);
    w.end(c);
    expect(dueAt(w, [4_500, 5_400, 5_600])).to.deep.equal([5_600]);
  });

  it('steady traffic with gaps shorter than the quiet time: never; it stops: once', () => {
    const w = new QuietWatch(1_000, 0, 0);
    const c = conn();
    const due: number[] = [];
    for (let t = 0; t < 10_000; t += 250) {
      if (t % 500 === 0) w.begin(c);
      else w.end(c);
      if (w.due(t, heap(100))) due.push(t);
    }
    expect(due).to.deep.equal([]);
    expect(dueAt(w, [10_500, 11_000, 11_250])).to.deep.equal([11_000]);
  });

  it('a connection with an answer under way holds it off; one destroyed does not (its queued answers never end)', () => {
    const w = new QuietWatch(1_000, 0, 0);
    const open = conn();
    const dropped = { destroyed: false };
    w.begin(open);
    w.begin(dropped);
    expect(dueAt(w, [100, 5_000])).to.deep.equal([]);
    w.end(open);
    expect(dueAt(w, [5_100, 8_000])).to.deep.equal([]);
    dropped.destroyed = true;
    expect(dueAt(w, [8_250])).to.deep.equal([8_250]);
  });

  it('a destroyed connection is dropped at the next tick, even while traffic goes on (nothing it references is kept)', () => {
    const w = new QuietWatch(1_000, 0, 0);
    const dropped = { destroyed: false };
    const c = conn();
    w.begin(dropped);
    dropped.destroyed = true;
    w.begin(c);
    w.due(100, heap(100));
    expect(w.busyConnections).to.equal(1);
    w.end(c);
    w.due(200, heap(100));
    expect(w.busyConnections).to.equal(0);
  });

  it('less than 8 MB grown since the last collection: none, and none asked again until new activity', () => {
    const w = new QuietWatch(1_000, 0, 100 * MB);
    const c = conn();
    w.begin(c);
    w.end(c);
    expect(dueAt(w, [0, 1_000], 107)).to.deep.equal([]);
    expect(dueAt(w, [2_000], 200)).to.deep.equal([]);
    w.begin(c);
    w.end(c);
    expect(dueAt(w, [3_000, 4_000], 108)).to.deep.equal([4_000]);
    w.collected(108 * MB);
    w.begin(c);
    w.end(c);
    expect(dueAt(w, [5_000, 6_000], 115)).to.deep.equal([]);
  });

  it('QUIET_GC_MS: 0 (off) or 100 ms and more; 99 stops startup naming it', () => {
    const env = (v: string) => baseEnv('http://127.0.0.1:9', { QUIET_GC_MS: v });
    expect(loadSettings(env('0'), { stageFiles: false }).server.quietGcMs).to.equal(0);
    expect(loadSettings(env('100'), { stageFiles: false }).server.quietGcMs).to.equal(100);
    expect(loadSettings(env(''), { stageFiles: false }).server.quietGcMs).to.equal(1_000);
    expect(() => loadSettings(env('99'), { stageFiles: false })).to.throw(/QUIET_GC_MS: must be 0 \(off\) or at least 100/);
  });

  it('V8 flags frozen (--freeze-flags-after-init): no collector, rather than an abort', () => {
    expect(obtainGc(['--freeze-flags-after-init'])).to.equal(undefined);
    expect(obtainGc([])).to.be.a('function');
  });
});

/**
 * Old-generation growth the test holds: objects kept through young collections. Held, V8 cannot
 * collect it on its own before the gateway looks (which made these tests flaky); a test lets go
 * of it when it wants it to be garbage.
 */
async function ballast(mb: number): Promise<{ kept?: object[][] }> {
  const before = oldGenerationBytes();
  const kept: object[][] = [];
  for (let round = 0; round < 40 && oldGenerationBytes() - before < mb * MB; round++) {
    kept.push(Array.from({ length: 20_000 }, (_, i) => ({ i, s: `record ${i} of round ${round}` })));
    // short-lived allocations, so that young collections run and promote what is kept
    for (let j = 0; j < 50; j++) void Array.from({ length: 2_000 }, () => ({ junk: true }));
    await sleep(0);
  }
  expect(oldGenerationBytes() - before, 'the test could not grow the old generation').to.be.at.least(mb * MB);
  return { kept };
}

describe('QUIET_GC_MS: a full collection once the gateway is quiet after a burst (a real gateway and heap)', function () {
  this.timeout(30_000);
  let upstream: http.Server;
  let upstreamUrl: string;
  const held: http.ServerResponse[] = [];
  const realmHeld: http.ServerResponse[] = [];
  let gw: RunningGateway | undefined;
  // The other tests of this process leave garbage too: collected before each gateway starts, so
  // that V8 collecting it later cannot hide the growth these tests make.
  const collectNow = obtainGc()!;

  before(async () => {
    upstream = http.createServer((req, res) => {
      if (req.url === '/static/hold') return void held.push(res);
      if (req.url?.startsWith('/realms/')) return void realmHeld.push(res);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    for (const res of [...held.splice(0), ...realmHeld.splice(0)]) res.end();
    await gw?.close();
    gw = undefined;
  });
  after(async () => {
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  const start = async (quietMs: string) => {
    collectNow();
    gw = await startGateway(baseEnv(upstreamUrl, { QUIET_GC_MS: quietMs }));
  };
  const collections = async () => (await gw!.obs.metrics.quietCollections.get()).values[0]?.value ?? 0;
  /** A raw connection that sends these GETs at once (pipelined); resolves once the upstream holds /static/hold. */
  const pipelined = async (...paths: string[]) => {
    const s = net.connect(Number(new URL(gw!.url).port), '127.0.0.1');
    s.on('error', () => {});
    s.resume();
    await new Promise((r) => s.once('connect', r));
    s.write(paths.map((p) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''));
    while (held.length === 0) await sleep(10);
    return s;
  };
  const get = (path: string) => fetch(`${gw!.url}${path}`).then(async (r) => ({ status: r.status, text: await r.text() }));

  it('after a request, once quiet: one collection, the garbage freed, counted in /metrics; none again without new activity', async () => {
    await start('200');
    const held16 = await ballast(16);
    // garbage only now: marked live by any collection V8 had under way, so only a new one frees it
    held16.kept = undefined;
    const grown = oldGenerationBytes();
    expect((await get('/static/app.js')).status).to.equal(200);
    await sleep(700);
    expect(await collections()).to.equal(1);
    expect(grown - oldGenerationBytes(), 'old generation bytes freed').to.be.at.least(8 * MB);
    const more = await ballast(16);
    await sleep(700);
    expect(more.kept).to.have.length.above(0);
    expect(await collections(), 'no request since the last one: no new collection').to.equal(1);
    expect((await get('/metrics')).text).to.match(/^gateway_quiet_gc_total 1$/m);
  });

  it('never while a request is in flight; once it ends and the gateway is quiet, one', async () => {
    await start('200');
    const heap = await ballast(16);
    // activity first, then a request held in flight well past the quiet time
    expect((await get('/static/app.js')).status).to.equal(200);
    const answer = get('/static/hold');
    while (held.length === 0) await sleep(10);
    await sleep(1_000);
    expect(await collections(), 'a request was in flight').to.equal(0);
    held.shift()!.end('late');
    expect((await answer).text).to.equal('late');
    await sleep(700);
    expect(await collections()).to.equal(1);
    expect(heap.kept, 'held to the end').to.have.length.above(0);
  });

  it('pipelined requests queued behind an unfinished answer, then the client leaves: its connection holds nothing off', async () => {
    await start('200');
    const heap = await ballast(16);
    const s = await pipelined('/static/hold', '/static/a.js', '/static/b.js');
    await sleep(500);
    expect(await collections(), 'in flight').to.equal(0);
    // Node never ends the two queued answers: counted per request, they would stay in flight for good
    s.destroy();
    await sleep(700);
    expect(await collections(), 'the answers of a closed connection are not in flight').to.equal(1);
    expect(heap.kept, 'held to the end').to.have.length.above(0);
  });

  it('an answer pipelined behind a finished one is still in flight: no collection while it is held', async () => {
    await start('200');
    const heap = await ballast(16);
    const s = await pipelined('/static/app.js', '/static/hold');
    await sleep(1_000);
    expect(await collections(), 'the second answer was in flight').to.equal(0);
    held.shift()!.end('late');
    await sleep(700);
    s.destroy();
    expect(await collections()).to.equal(1);
    expect(heap.kept, 'held to the end').to.have.length.above(0);
  });

  it('a WebSocket handshake being judged (the realm slow to answer) is in flight: no collection until it is', async () => {
    collectNow();
    gw = await startGateway(baseEnv(upstreamUrl, { QUIET_GC_MS: '200', OIDC_ISSUER_URL: `${upstreamUrl}/realms/platform` }));
    const heap = await ballast(16);
    expect((await get('/static/app.js')).status).to.equal(200);
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const token = `${b64({ alg: 'RS256', kid: 'k' })}.${b64({ iss: `${upstreamUrl}/realms/platform`, aud: 'chat-gateway', exp: Math.floor(Date.now() / 1000) + 600, typ: 'Bearer', sub: 'u' })}.c2ln`;
    const s = net.connect(Number(new URL(gw!.url).port), '127.0.0.1');
    s.on('error', () => {});
    let answer = '';
    s.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    await new Promise((r) => s.once('connect', r));
    s.write(
      `GET /ws/socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    );
    // the gateway asks the realm (discovery), which this upstream holds
    while (realmHeld.length === 0) await sleep(10);
    await sleep(1_000);
    expect(await collections(), 'the handshake was being judged').to.equal(0);
    for (const res of realmHeld.splice(0)) res.writeHead(503).end();
    while (!answer.includes('\r\n\r\n')) await sleep(10);
    s.destroy();
    await sleep(700);
    expect(await collections()).to.equal(1);
    expect(heap.kept, 'held to the end').to.have.length.above(0);
  });

  it('QUIET_GC_MS=0: never', async () => {
    await start('0');
    const heap = await ballast(16);
    expect((await get('/static/app.js')).status).to.equal(200);
    await sleep(1_200);
    expect(await collections()).to.equal(0);
    expect(heap.kept, 'held to the end').to.have.length.above(0);
  });
});
