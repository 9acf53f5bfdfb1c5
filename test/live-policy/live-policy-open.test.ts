// What is open when a new policy is applied, in front of the Open WebUI stand-in over real sockets:
// an admin's Socket.IO WebSocket let through with the bypass on closes (1008) when it goes off, and
// reconnects under the new policy, while a plain user's stays open; the export streaming when the
// export switch goes off is cut; an admin's completion streaming as server-sent events, judged with
// the bypass on, is cut when it goes off, a plain user's runs to its end. Every cut is audited.
// (test/real-open-webui/live-policy.test.ts does the same against the real Open WebUI.)
import { expect } from 'chai';
import http from 'node:http';
import WebSocket from 'ws';
import { snapshotOf, type LivePolicy } from '../../config/policy.js';
import { loadSettings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import type { StandInChat } from '../../sandbox/open-webui/types.js';
import { baseEnv, capturingObservability, headerAuthenticator, type LogLine } from '../support/gateway-harness.js';
import { seedChats, seedFiles, seedUsers } from '../support/raw-http.js';
import { PEOPLE } from '../support/live-policy.js';
import { sleep } from '../support/wait.js';

/**
 * Chats big enough that their export is still streaming while the test looks (48 MB: more than the
 * kernel's socket buffers on both legs hold, so the gateway is still writing it).
 */
const EXPORT_BYTES = 48_000_000;
const bigChats = (): StandInChat[] =>
  Array.from({ length: EXPORT_BYTES / 400_000 }, (_, i) => ({
    ...seedChats()[1]!,
    id: `c-big-${i}`,
    title: `big ${i}`,
    chat: { messages: [{ role: 'user', content: 'x'.repeat(400_000) }] },
  }));

describe('live settings: what is open follows a new policy', function () {
  this.timeout(30_000);
  let upstream: OpenWebUIStandIn;
  let gateway: Gateway;
  let url: string;
  let lines: LogLine[];
  let policy: LivePolicy;

  before(async () => {
    upstream = await startOpenWebUI({
      users: seedUsers,
      files: seedFiles(),
      chats: [...seedChats(), ...bigChats()],
      bypassAdminAccessControl: true,
      enableAdminExport: true,
    });
    const settings = loadSettings(
      baseEnv(upstream.url, { DRIFT_CHECK_SECONDS: '0', CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'true', CHATUI_ENABLE_ADMIN_EXPORT: 'true' }),
      {
        stageFiles: false,
      },
    );
    const obs = capturingObservability();
    lines = obs.lines;
    gateway = await createGateway(settings, { obs, authenticator: headerAuthenticator(PEOPLE) });
    policy = gateway.policy;
    url = (await gateway.listen(0, '127.0.0.1')).url;
  });
  after(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  /** Apply the policy in force with `change`, as a new POLICY_FILE would. */
  const flip = (change: { bypassAdminAccessControl?: boolean; enableAdminExport?: boolean }) =>
    policy.apply(snapshotOf({ ...policy.current, ...change }, 'file', Date.now()));
  beforeEach(() => flip({ bypassAdminAccessControl: true, enableAdminExport: true }));

  async function socketOf(who: 'admin' | 'user') {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, { headers: { 'x-test-caller': who } });
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    // the stand-in's socket greets with what it was told
    const opened = await new Promise<string>((resolve, reject) => {
      ws.once('message', (d) => resolve(String(d)));
      ws.once('error', reject);
    });
    expect(JSON.parse(opened)).to.have.property('type', 'hello');
    return { ws, closed };
  }
  const within = <T>(p: Promise<T>, ms: number) => Promise.race([p, sleep(ms).then(() => 'still open' as const)]);

  it('bypass on -> off: an admin\u2019s open Socket.IO closes (1008, reconnecting under the new policy); a plain user\u2019s stays open', async () => {
    const admin = await socketOf('admin');
    const user = await socketOf('user');
    flip({ bypassAdminAccessControl: false });
    expect(await within(admin.closed, 3_000)).to.deep.equal({ code: 1008, reason: 'policy changed' });
    expect(user.ws.readyState, 'a plain user\u2019s socket').to.equal(WebSocket.OPEN);
    expect(lines.find((l) => l.event === 'policy-cut' && l.transport === 'websocket')).to.deep.include({
      name: 'audit',
      caller: 'sysadmin@platform.example',
      version: policy.current.version,
    });
    // the client reconnects: let through under the policy now in force (its note events read)
    const again = await socketOf('admin');
    await sleep(200);
    expect(again.ws.readyState).to.equal(WebSocket.OPEN);
    again.ws.close();
    user.ws.close();
  });

  it('bypass off -> on: an admin\u2019s socket, already read more strictly than the new policy asks, stays open', async () => {
    flip({ bypassAdminAccessControl: false });
    const admin = await socketOf('admin');
    flip({ bypassAdminAccessControl: true });
    expect(await within(admin.closed, 500)).to.equal('still open');
    admin.ws.close();
  });

  /** GET `path` as `who`, reading only its first bytes, then holding the rest unread. */
  function held(who: 'admin' | 'user', path: string) {
    return new Promise<{ status: number; ended: Promise<{ complete: boolean; bytes: number }>; resume(): void }>((resolve, reject) => {
      const req = http.get(`${url}${path}`, { headers: { 'x-test-caller': who } }, (res) => {
        let bytes = 0;
        const ended = new Promise<{ complete: boolean; bytes: number }>((done) => {
          res.on('data', (c: Buffer) => (bytes += c.length));
          res.on('end', () => done({ complete: res.complete, bytes }));
          res.on('close', () => done({ complete: res.complete, bytes }));
          res.on('error', () => done({ complete: false, bytes }));
        });
        res.once('data', () => {
          res.pause();
          resolve({ status: res.statusCode!, ended, resume: () => res.resume() });
        });
      });
      req.on('error', reject);
    });
  }

  it('export on -> off: the export streaming is cut before its end; the next one is refused (401)', async () => {
    const exported = await held('admin', '/api/v1/chats/all/db');
    expect(exported.status).to.equal(200);
    flip({ enableAdminExport: false });
    // the client reads on: what was already on its way arrives, then the answer ends short
    exported.resume();
    const end = await within(exported.ended, 5_000);
    expect(end, 'the export was not cut').to.not.equal('still open');
    expect(end).to.deep.include({ complete: false });
    expect((end as { bytes: number }).bytes).to.be.lessThan(EXPORT_BYTES);
    expect(lines.find((l) => l.event === 'policy-cut' && l.path === '/api/v1/chats/all/db')).to.deep.include({ name: 'audit', judged: 'A6: export enabled' });
    const next = await fetch(`${url}/api/v1/chats/all/db`, { headers: { 'x-test-caller': 'admin' } });
    expect(next.status).to.equal(401);
  });

  it('export on -> on (another setting changed): the export streaming goes on to its end', async () => {
    const exported = await held('admin', '/api/v1/chats/all/db');
    flip({ bypassAdminAccessControl: false });
    await sleep(100);
    exported.resume();
    expect(await within(exported.ended, 10_000)).to.deep.include({ complete: true });
  });

  /** POST a streamed completion of `n` chunks (20 ms apart at the stand-in) as `who`; resolves when it ends. */
  function completion(who: 'admin' | 'user', n: number) {
    return new Promise<{ chunks: number; complete: boolean; done: boolean }>((resolve, reject) => {
      const body = JSON.stringify({ model: 'stand-in', stream: true, n, messages: [{ role: 'user', content: 'hi' }] });
      const req = http.request(
        `${url}/api/chat/completions`,
        { method: 'POST', headers: { 'x-test-caller': who, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          const done = () => resolve({ chunks: text.split('data: ').length - 1, complete: res.complete, done: text.includes('[DONE]') });
          res.on('end', done);
          res.on('close', done);
          res.on('error', done);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  it('bypass on -> off: an admin\u2019s completion streaming as events is cut; a plain user\u2019s runs to its end', async () => {
    const adminStream = completion('admin', 100);
    const userStream = completion('user', 100);
    await sleep(400);
    flip({ bypassAdminAccessControl: false });
    const [a, u] = await Promise.all([adminStream, userStream]);
    expect(a.done, 'the admin\u2019s stream was cut').to.equal(false);
    expect(a.chunks).to.be.lessThan(100);
    expect(u).to.deep.include({ done: true, complete: true });
    expect(lines.find((l) => l.event === 'policy-cut' && l.path === '/api/chat/completions')).to.deep.include({
      name: 'audit',
      caller: 'sysadmin@platform.example',
    });
  });
});
