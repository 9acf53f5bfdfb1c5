// The REAL Open WebUI hung (SIGSTOP: its process is there and its port still takes connections,
// but nothing answers), resumed (SIGCONT), then killed, behind the gateway: what a signed-in user
// and an operator see. Every answer is timed against the gateway's own bounds (UPSTREAM_TIMEOUT_MS,
// the readiness probe's), never against the client's. A failing test never leaves it stopped.
// Killed and started again is not here: a boot of Open WebUI costs 15 to 35 s on the shared
// machine, on each of three releases; a dead upstream is also the stand-in's in
// test/hardening/hardening-faults.test.ts.
// A process stopped by SIGSTOP answers nothing, whichever release it runs: what the gateway does
// toward it is the gateway's alone, so the hung and resumed cases run against the table's release
// only (itOnTableRelease); killed runs against every release, and proves that release's own boot,
// sign-in and answers before it is killed.
import { expect } from 'chai';
import WebSocket from 'ws';
import { signIn, type Jar } from '../support/cookie-jar.js';
import { itOnTableRelease, OPEN_WEBUI_VERSION, openSocketIO, startRealWorld, type RealWorld } from '../support/open-webui.js';
import { sleep, until } from '../support/wait.js';
import { groupStates } from '../support/process-tree.js';
import { STACK_TRACE } from '../support/raw-http.js';

const UPSTREAM_TIMEOUT_MS = 2_000;
/** the gateway's pool toward Open WebUI: fewer than the requests of the burst below */
const MAX_SOCKETS = 50;
/** what a loaded machine may add to a bound (two shared cores, other suites running) */
const SLACK_MS = 1_500;
/** the readiness probe's own bound on Open WebUI's /health (gateway/operations/operations.ts) */
const READINESS_PROBE_MS = 3_000;
const TIMED_OUT = { detail: 'The chat front-end did not answer in time' };

interface Timed {
  status: number;
  ms: number;
  text: string;
  contentType: string | null;
  setCookies: string[];
}

/** One request, timed; the client's own limit (30 s) is far past every bound asserted. */
async function timed(url: string, init: { jar?: Jar; method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Timed> {
  const started = Date.now();
  const headers: Record<string, string> = { ...init.headers };
  if (init.jar) headers.cookie = init.jar.header(url);
  const res = await fetch(url, { method: init.method ?? 'GET', headers, body: init.body, redirect: 'manual', signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  return { status: res.status, ms: Date.now() - started, text, contentType: res.headers.get('content-type'), setCookies: res.headers.getSetCookie() };
}

/** A metric's value in the gateway's /metrics text (0 when absent). */
function metric(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe(`the real Open WebUI ${OPEN_WEBUI_VERSION} hung (SIGSTOP), resumed (SIGCONT), then killed, behind the gateway`, function () {
  this.timeout(120_000);
  let w: RealWorld;
  let alice: Jar;
  let aliceChat: string;
  let stopped = false;

  /** SIGSTOP to every process of Open WebUI's group; resolves once each one is stopped. */
  const hang = async () => {
    stopped = true;
    process.kill(-w.owui.pid, 'SIGSTOP');
    await until('every process of Open WebUI stopped', () => groupStates(w.owui.pid).every((s) => s === 'T'), { ms: 5_000, everyMs: 10 });
  };
  const resume = () => {
    if (!stopped) return;
    stopped = false;
    try {
      process.kill(-w.owui.pid, 'SIGCONT');
    } catch {
      // killed meanwhile
    }
  };
  /** Open WebUI has worked through what waited in its listen backlog: alice is answered again, twice in a row. */
  const caughtUp = () =>
    until('Open WebUI caught up', async () => (await chatsOfAlice()).status === 200 && (await chatsOfAlice()).status === 200, { ms: 30_000, everyMs: 200 });
  const chatsOfAlice = () => timed(`${w.url}/api/v1/chats/`, { jar: alice });
  /** The gateway's connections to Open WebUI: its pool's, busy and idle (this process holds others of its own). */
  const gatewaySockets = () => {
    const { sockets, freeSockets } = w.gateway.upstream.agent;
    return [...Object.values(sockets), ...Object.values(freeSockets)].reduce((n, list) => n + (list?.length ?? 0), 0);
  };

  before(async function () {
    this.timeout(240_000);
    w = await startRealWorld({
      flags: { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false },
      env: { UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS), UPSTREAM_MAX_SOCKETS: String(MAX_SOCKETS), DRIFT_CHECK_SECONDS: '0', LOG_LEVEL: 'warn' },
    });
    alice = (await signIn(w.url, 'alice')).jar;
    const chat = await timed(`${w.url}/api/v1/chats/new`, {
      jar: alice,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chat: { title: 'Alice before the hang', models: [], messages: [], history: { messages: {}, currentId: null } } }),
    });
    expect(chat.status, chat.text).to.equal(200);
    aliceChat = (JSON.parse(chat.text) as { id: string }).id;
  });
  // Whatever a test came to, Open WebUI runs again (and has caught up) before the next one.
  afterEach(async function () {
    this.timeout(60_000);
    if (!stopped) return;
    resume();
    await caughtUp();
  });
  after(async () => {
    resume();
    await w?.close();
  });

  itOnTableRelease(
    'while it is hung: the user’s API requests (JSON) and pages (a try-again page) are answered 504 within UPSTREAM_TIMEOUT_MS; the gateway’s own routes at once; /healthz 200, /readyz 503 naming the chat front-end within its probe’s bound',
    async () => {
      expect((await chatsOfAlice()).status).to.equal(200);
      const errorsBefore = metric(await (await fetch(`${w.url}/metrics`)).text(), 'gateway_upstream_errors_total{kind="timeout"}');
      await hang();
      const upstreamBound = Promise.all([
        chatsOfAlice(),
        timed(`${w.url}/api/v1/files/`, { jar: alice }),
        timed(`${w.url}/c/${aliceChat}`, { jar: alice, headers: { accept: 'text/html' } }),
      ]);
      const readyz = timed(`${w.url}/readyz`);
      // asked while those wait on Open WebUI: the gateway's own routes need nothing of it
      await sleep(100);
      for (const path of ['/healthz', '/auth/login', '/api/v1/auth-providers/', '/auth/session']) {
        const own = await timed(`${w.url}${path}`, { jar: alice });
        expect(own.status, path).to.equal(200);
        expect(own.ms, path).to.be.below(1_000);
      }
      expect(JSON.parse((await timed(`${w.url}/auth/session`, { jar: alice })).text)).to.include({ authenticated: true });
      const [chats, files, page] = await upstreamBound;
      for (const answer of [chats!, files!]) {
        expect(answer.status, answer.text).to.equal(504);
        expect(answer.contentType).to.match(/^application\/json/);
        expect(JSON.parse(answer.text)).to.deep.equal(TIMED_OUT);
      }
      // the browser opening a page gets a page of the gateway's own, with a way to try again
      expect(page!.status, page!.text).to.equal(504);
      expect(page!.contentType).to.match(/^text\/html/);
      expect(page!.text).to.contain('id="chat-timeout"').and.to.contain(`href="/c/${aliceChat}"`);
      for (const answer of [chats!, files!, page!]) {
        expect(answer.ms).to.be.within(UPSTREAM_TIMEOUT_MS - 50, UPSTREAM_TIMEOUT_MS + SLACK_MS);
        expect(answer.text).to.not.match(STACK_TRACE);
        // nothing of the session is cleared: the user is not signed out
        expect(answer.setCookies.filter((c) => c.startsWith('appSession'))).to.deep.equal([]);
      }
      const ready = await readyz;
      expect(ready.status).to.equal(503);
      expect(ready.ms).to.be.below(READINESS_PROBE_MS + SLACK_MS);
      const checks = (JSON.parse(ready.text) as { checks: Record<string, { ok: boolean; detail: string }> }).checks;
      expect(checks.upstream!.ok).to.equal(false);
      expect(checks.upstream!.detail).to.match(/did not answer/);
      expect(checks.identityProvider!.ok, 'the realm is fine').to.equal(true);
      const errorsAfter = metric(await (await fetch(`${w.url}/metrics`)).text(), 'gateway_upstream_errors_total{kind="timeout"}');
      expect(errorsAfter - errorsBefore, 'timeouts counted').to.be.at.least(3);
    },
  );

  itOnTableRelease(
    `200 requests at once while it is hung: each answered 504 within UPSTREAM_TIMEOUT_MS, never more than UPSTREAM_MAX_SOCKETS (${MAX_SOCKETS}) connections to it; the same again`,
    async () => {
      await hang();
      for (const round of [1, 2]) {
        let most = 0;
        const sampling = setInterval(() => (most = Math.max(most, gatewaySockets())), 20);
        const started = Date.now();
        let answers: Timed[];
        try {
          answers = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? chatsOfAlice() : timed(`${w.url}/api/v1/auths/`, { jar: alice }))));
        } finally {
          clearInterval(sampling);
        }
        const took = Date.now() - started;
        expect(new Set(answers.map((a) => a.status)), `round ${round}`).to.deep.equal(new Set([504]));
        const slowest = Math.max(...answers.map((a) => a.ms));
        expect(slowest, `round ${round}: the slowest answer`).to.be.below(UPSTREAM_TIMEOUT_MS + SLACK_MS);
        expect(most, `round ${round}: the gateway's connections to Open WebUI at once`).to.be.within(1, MAX_SOCKETS);
        console.log(
          `      (round ${round}: 200 answered 504 in ${took} ms, the slowest ${slowest} ms; at most ${most} connections of the gateway's to Open WebUI)`,
        );
      }
    },
  );

  itOnTableRelease(
    'an open Socket.IO WebSocket is kept while it is hung (the gateway neither closes nor waits on it) and carries frames again once resumed; a new one’s upgrade is answered 504 within the bound',
    async () => {
      const kept = await openSocketIO(w.url, alice);
      expect(kept.opened.startsWith('0{'), kept.opened).to.equal(true);
      const replies: string[] = [];
      kept.ws.on('message', (d) => replies.push(String(d)));
      await hang();
      // Socket.IO's connect packet: Open WebUI, stopped, cannot answer it
      kept.ws.send('40');
      const started = Date.now();
      const refused = await openSocketIO(w.url, alice).then(
        (s) => (s.ws.terminate(), 'opened'),
        (err: Error) => err.message,
      );
      expect(refused).to.equal('upgrade answered 504');
      expect(Date.now() - started).to.be.within(UPSTREAM_TIMEOUT_MS - 50, UPSTREAM_TIMEOUT_MS + SLACK_MS);
      expect(replies, 'nothing answered while stopped').to.deep.equal([]);
      expect(kept.ws.readyState, 'the open socket is kept').to.equal(WebSocket.OPEN);
      // the refused upgrade's socket is closed once its client is gone, or after the gateway's linger (2 s)
      await until('the refused upgrade closed', () => w.gateway.openWebSockets() === 1, { ms: 2_000 + SLACK_MS });
      resume();
      const connected = await until('the connect packet answered after SIGCONT', () => replies.find((r) => r.startsWith('40')), { ms: 15_000 });
      expect(connected).to.match(/^40\{"sid":/);
      expect(kept.ws.readyState).to.equal(WebSocket.OPEN);
      kept.ws.close();
      await kept.closed;
      expect(await until('no WebSocket left open', () => w.gateway.openWebSockets() === 0)).to.equal(true);
    },
  );

  itOnTableRelease('once resumed: the same user’s requests are 200 again with their data, on the same cookie (no new sign-in); /readyz 200', async () => {
    await hang();
    expect((await chatsOfAlice()).status).to.equal(504);
    resume();
    const resumedAt = Date.now();
    const seen = new Set<number>();
    const back = await until(
      'alice served again',
      async () => {
        const r = await chatsOfAlice();
        seen.add(r.status);
        expect(
          r.setCookies.filter((c) => c.startsWith('appSession')),
          'the session is not cleared',
        ).to.deep.equal([]);
        return r.status === 200 && r;
      },
      { ms: 20_000, everyMs: 100 },
    );
    const recovered = Date.now() - resumedAt;
    // until Open WebUI has worked through the requests that waited in its listen backlog, a request may still time out
    expect(
      [...seen].every((s) => s === 200 || s === 504),
      `statuses after SIGCONT: ${[...seen]}`,
    ).to.equal(true);
    expect((JSON.parse(back.text) as Array<{ id: string }>).map((c) => c.id)).to.include(aliceChat);
    await until('/readyz 200 again', async () => (await timed(`${w.url}/readyz`)).status === 200, { ms: 10_000, everyMs: 250 });
    console.log(`      (alice served again ${recovered} ms after SIGCONT; answers meanwhile: ${[...seen].join(', ')})`);
  });

  it('killed (SIGKILL): the same request is answered 502 at once, not after UPSTREAM_TIMEOUT_MS; /readyz 503; the gateway’s own routes still answer', async () => {
    expect((await chatsOfAlice()).status).to.equal(200);
    process.kill(-w.owui.pid, 'SIGKILL');
    const killedAt = Date.now();
    await until('Open WebUI gone', () => groupStates(w.owui.pid).length === 0, { ms: 10_000 });
    const answer = await chatsOfAlice();
    expect(answer.status, answer.text).to.equal(502);
    expect(JSON.parse(answer.text)).to.deep.equal({ detail: 'The chat front-end is not reachable' });
    expect(answer.ms).to.be.below(1_000);
    // readiness answers are shared for a second
    const notReady = await until('/readyz 503', async () => ((await timed(`${w.url}/readyz`)).status === 503 ? Date.now() : false), { ms: 1_000 + SLACK_MS });
    expect(notReady - killedAt).to.be.below(1_000 + SLACK_MS);
    expect((await timed(`${w.url}/auth/login`)).status).to.equal(200);
    expect(JSON.parse((await timed(`${w.url}/auth/session`, { jar: alice })).text)).to.include({ authenticated: true });
  });
});
