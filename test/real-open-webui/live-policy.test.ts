// The live settings in front of the REAL Open WebUI (0.12.4; 0.11.4 with OWUI_VERSION): its own switches on (read at its start,
// the widest the platform allows), the gateway's POLICY_FILE flipped while users are connected.
// Bypass on -> off: sysadmin's open Socket.IO WebSocket closes (1008 "policy changed") and its
// reconnection is let through under the new policy, while alice's stays open; sysadmin's
// completion streaming as server-sent events is cut. Export on -> off: the export streaming to
// sysadmin is cut before its end, and the next one is refused. Each cut is audited; a flip that
// leaves a stream's decision as it was leaves the stream alone. Real Open WebUI,
// the real oidc-provider, the canned-answers model provider, real sockets.
import { expect } from 'chai';
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { browse, signIn, type Jar } from '../support/cookie-jar.js';
import { OPEN_WEBUI_VERSION, callOpenWebUI, startRealWorld, type RealWorld, openSocketIO } from '../support/open-webui.js';
import { policyText } from '../support/live-policy.js';
import { sleep } from '../support/wait.js';

const within = <T>(p: Promise<T>, ms: number) => Promise.race([p, sleep(ms).then(() => 'still open' as const)]);
/** Alice's chats: an export of all of them is larger than what the sockets on its way buffer. */
const CHATS = 24;
const CHAT_BYTES = 2_000_000;

describe(`the real Open WebUI ${OPEN_WEBUI_VERSION}: live settings flipped with users connected`, function () {
  this.timeout(120_000);
  let w: RealWorld;
  let dir: string;
  let admin: Jar;
  let alice: Jar;

  /** Write POLICY_FILE and wait until the gateway applies it (nothing to wait for when it is the policy in force). */
  async function flip(o: { bypass: boolean; exportOn: boolean }) {
    const { current } = w.gateway.policy;
    if (current.bypassAdminAccessControl === o.bypass && current.enableAdminExport === o.exportOn) return;
    writeFileSync(join(dir, 'policy.yaml'), policyText(o));
    for (let i = 0; i < 500 && w.gateway.policy.current.version === current.version; i++) await sleep(10);
    expect(w.gateway.policy.current.version, 'applied').to.not.equal(current.version);
  }

  before(async function () {
    this.timeout(300_000);
    dir = mkdtempSync(join(tmpdir(), 'live-policy-real-'));
    writeFileSync(join(dir, 'policy.yaml'), policyText({ bypass: true, exportOn: true }));
    w = await startRealWorld({
      flags: { BYPASS_ADMIN_ACCESS_CONTROL: true, ENABLE_ADMIN_EXPORT: true, ENABLE_ADMIN_CHAT_ACCESS: false },
      model: true,
      env: { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: undefined, CHATUI_ENABLE_ADMIN_EXPORT: undefined, POLICY_FILE: join(dir, 'policy.yaml') },
    });
    admin = (await signIn(w.url, 'sysadmin')).jar;
    alice = (await signIn(w.url, 'alice')).jar;
    for (const jar of [admin, alice]) expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
    expect(w.gateway.policy.current).to.include({ bypassAdminAccessControl: true, enableAdminExport: true, source: 'file' });
  });
  after(async () => {
    await w?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => flip({ bypass: true, exportOn: true }));

  /** Open WebUI's Engine.IO handshake over the WebSocket transport, through the gateway. */
  async function socketOf(jar: Jar) {
    const socket = await openSocketIO(w.url, jar);
    expect(socket.opened.startsWith('0{'), socket.opened).to.equal(true);
    return socket;
  }

  it('bypass on -> off: sysadmin\u2019s open Socket.IO closes (1008) and reconnects under the new policy; alice\u2019s stays open', async () => {
    const mine = await socketOf(admin);
    const theirs = await socketOf(alice);
    await flip({ bypass: false, exportOn: true });
    expect(await within(mine.closed, 3_000)).to.deep.equal({ code: 1008, reason: 'policy changed' });
    await sleep(300);
    expect(theirs.ws.readyState, 'alice\u2019s socket').to.equal(WebSocket.OPEN);
    expect(w.obs.lines.find((l) => l.event === 'policy-cut' && l.transport === 'websocket')).to.deep.include({
      name: 'audit',
      caller: 'sysadmin@platform.example',
      version: w.gateway.policy.current.version,
    });
    const again = await socketOf(admin);
    await sleep(300);
    expect(again.ws.readyState, 'reconnected').to.equal(WebSocket.OPEN);
    again.ws.close();
    theirs.ws.close();
  });

  /** A request through the gateway as `jar`, its answer read as it comes; `hold`: stop reading after the first bytes. */
  function open(jar: Jar, method: string, path: string, body?: unknown, hold = false) {
    return new Promise<{ status: number; resume(): void; ended: Promise<{ complete: boolean; bytes: number; text: string }> }>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(
        `${w.url}${path}`,
        {
          method,
          headers: {
            cookie: jar.header(path),
            ...(payload ? { origin: w.url, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}),
          },
        },
        (res) => {
          let bytes = 0;
          let text = '';
          const ended = new Promise<{ complete: boolean; bytes: number; text: string }>((done) => {
            const end = () => done({ complete: res.complete, bytes, text });
            res.on('data', (c: Buffer) => {
              bytes += c.length;
              if (text.length < 100_000) text += c.toString('utf8');
            });
            res.on('end', end);
            res.on('close', end);
            res.on('error', end);
          });
          if (!hold) return resolve({ status: res.statusCode!, resume: () => undefined, ended });
          res.once('data', () => {
            res.pause();
            resolve({ status: res.statusCode!, resume: () => res.resume(), ended });
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  it('bypass on -> off: sysadmin\u2019s completion streaming as server-sent events is cut', async () => {
    const body = { model: w.model!.model, stream: true, messages: [{ role: 'user', content: 'Say something.' }] };
    const streaming = await open(admin, 'POST', '/api/chat/completions', body);
    expect(streaming.status).to.equal(200);
    await sleep(300);
    await flip({ bypass: false, exportOn: true });
    const end = await within(streaming.ended, 10_000);
    expect(end).to.not.equal('still open');
    expect((end as { text: string }).text, 'the stream ended before its last event').to.not.include('[DONE]');
    expect((end as { text: string }).text, 'the stream had begun').to.match(/^data: /);
    expect(w.obs.lines.find((l) => l.event === 'policy-cut' && l.path === '/api/chat/completions')).to.deep.include({ name: 'audit' });
  });

  it('a flip that leaves the bypass on: sysadmin\u2019s completion streams to its end', async () => {
    const body = { model: w.model!.model, stream: true, messages: [{ role: 'user', content: 'Say something.' }] };
    const streaming = await open(admin, 'POST', '/api/chat/completions', body);
    await sleep(300);
    await flip({ bypass: true, exportOn: false });
    expect((await streaming.ended).text).to.include('[DONE]');
  });

  it('bypass on: what reaches a user\u2019s chat outside /api/v1/chats stays closed to admins (its messages, its folder, its rating), as Open WebUI alone does not', async () => {
    const send = (jar: Jar, method: string, path: string, body: unknown) =>
      browse(jar, path, { method, headers: { origin: w.url, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const SECRET = 'ALICE-CHAT-BEHIND-THE-BYPASS';
    const folder = JSON.parse((await send(alice, 'POST', '/api/v1/folders/', { name: 'Alice private folder' })).text).id as string;
    const message = { id: 'm1', role: 'user', content: SECRET };
    const made = await send(alice, 'POST', '/api/v1/chats/new', {
      chat: { title: SECRET, models: [], messages: [message], history: { messages: { m1: message }, currentId: 'm1' } },
      folder_id: folder,
    });
    expect(made.status, made.text).to.equal(200);
    const chat = JSON.parse(made.text).id as string;
    const rated = await send(alice, 'POST', '/api/v1/evaluations/feedback', {
      type: 'rating',
      data: { rating: 1, model_id: w.model!.model },
      meta: { chat_id: chat },
      snapshot: { chat: { id: chat, chat: { title: SECRET, messages: [message] } } },
    });
    expect(rated.status, rated.text).to.equal(200);
    const feedback = JSON.parse(rated.text).id as string;
    const doors = [`/api/v1/analytics/messages?chat_id=${chat}`, `/api/v1/folders/${folder}/shared/chats`, `/api/v1/evaluations/feedback/${feedback}`];

    // the doors, straight at Open WebUI as the admin (its own bypass on, its chat access off)
    const signedIn = await fetch(`${w.owui.url}/api/v1/auths/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-email': 'sysadmin@platform.example', 'x-forwarded-role': 'admin' },
      body: JSON.stringify({ email: '', password: '' }),
    });
    const token = ((await signedIn.json()) as { token: string }).token;
    for (const door of doors) expect((await callOpenWebUI(w.owui.url, token, 'GET', door)).text, `${door} without the gateway`).to.include(SECRET);

    for (const door of doors) {
      const r = await browse(admin, door);
      expect(r.status, `${door}: ${r.text}`).to.equal(403);
      expect(r.text).to.not.include(SECRET);
    }
    const grant = await send(admin, 'POST', `/api/v1/folders/${folder}/access/update`, {
      access_grants: [{ principal_type: 'user', principal_id: JSON.parse((await browse(admin, '/api/v1/auths/')).text).id, permission: 'read' }],
    });
    expect(grant.status, grant.text).to.equal(403);
    const exported = await browse(admin, '/api/v1/evaluations/feedbacks/all/export');
    expect(exported.status).to.equal(200);
    expect(exported.text).to.not.include(SECRET);
    // alice herself still reads all of it
    expect((await browse(alice, `/api/v1/folders/${folder}/shared/chats`)).text).to.include(SECRET);
    expect((await browse(alice, `/api/v1/evaluations/feedback/${feedback}`)).text).to.include(SECRET);
  });

  it('export on -> off: the export streaming to sysadmin is cut before its end; the next one is refused (401)', async () => {
    // alice's chats, large enough that their export is still on its way when the switch goes off
    for (let i = 0; i < CHATS; i++) {
      const made = await browse(alice, '/api/v1/chats/new', {
        method: 'POST',
        headers: { origin: w.url, 'content-type': 'application/json' },
        body: JSON.stringify({ chat: { title: `big ${i}`, messages: [{ role: 'user', content: `${i} `.padEnd(CHAT_BYTES, 'x') }] } }),
      });
      expect(made.status, made.text.slice(0, 200)).to.equal(200);
    }
    const exported = await open(admin, 'GET', '/api/v1/chats/all/db', undefined, true);
    expect(exported.status).to.equal(200);
    await flip({ bypass: true, exportOn: false });
    exported.resume();
    const end = await within(exported.ended, 30_000);
    expect(end, 'the export was not cut').to.not.equal('still open');
    expect(end).to.deep.include({ complete: false });
    expect((end as { bytes: number }).bytes).to.be.lessThan(CHATS * CHAT_BYTES);
    expect(w.obs.lines.find((l) => l.event === 'policy-cut' && l.path === '/api/v1/chats/all/db')).to.deep.include({
      name: 'audit',
      judged: 'A6: export enabled',
    });
    expect((await browse(admin, '/api/v1/chats/all/db')).status).to.equal(401);
  });
});
