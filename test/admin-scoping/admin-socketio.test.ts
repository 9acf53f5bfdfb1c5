// Socket.IO: Open WebUI lets any admin join and edit any note live (socket/main.py
// `join-note`, `ydoc:document:*`). While CHATUI_BYPASS_ADMIN_ACCESS_CONTROL is false the gateway
// reads an admin's traffic on both transports and drops the events on notes the admin may not
// reach; plain users' sockets stay a byte pipe. Real sockets: a realm-signed bearer JWT, the
// gateway, the stand-in (which answers a note join with the note's state, as 0.12.4 does).
import { expect } from 'chai';
import WebSocket from 'ws';
import { clientFrame, rawWebSocket } from '../support/websocket-wire.js';
import { startWorld, CLIENT_ID, type World } from '../support/cookie-jar.js';
import { emptyWorkspace, grant } from '../../sandbox/open-webui/workspace.js';
import { demoAccounts } from '../../sandbox/demo-realm.js';
import { until } from '../support/wait.js';

const SECRET = 'GLOBEX-NOTE-SECRET';
const account = (username: string) => demoAccounts.find((a) => a.username === username)!;

function workspace() {
  const ws = emptyWorkspace();
  const now = Math.floor(Date.now() / 1000);
  const note = (id: string, user_id: string, md: string, access_grants = [] as ReturnType<typeof grant>[]) =>
    ws.objects.note.set(id, { id, user_id, title: id, data: { content: { md } }, access_grants, created_at: now, updated_at: now });
  note('n-bob', 'u-bob', SECRET);
  note('n-admin', 'u-sysadmin', 'own words');
  note('n-shared', 'u-bob', 'shared words', [grant('note', 'n-shared', 'user:u-sysadmin')]);
  return ws;
}

interface Client {
  received: string[];
  send(data: string | Buffer): void;
  close(): void;
}

async function connect(w: World, token: string): Promise<Client> {
  const ws = new WebSocket(`${w.url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, { headers: { authorization: `Bearer ${token}` } });
  const received: string[] = [];
  ws.on('message', (data, isBinary) => received.push(isBinary ? `<binary ${(data as Buffer).toString('hex')}>` : String(data)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_q, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
  });
  return { received, send: (d) => ws.send(d), close: () => ws.close() };
}

/** An admin's socket spoken byte by byte, as a bearer-token client. */
async function rawAdmin(w: World, token: string) {
  const s = await rawWebSocket(w.url, { Authorization: `Bearer ${token}` });
  expect(s.head).to.match(/^HTTP\/1\.1 101 /);
  return s;
}

const event = (name: string, data: unknown) => `42${JSON.stringify([name, data])}`;
/** The Open WebUI token the front-end of a realm user holds (its sign-in through the gateway). */
async function upstreamToken(w: World, username: string): Promise<string> {
  const res = await fetch(`${w.url}/api/v1/auths/`, { headers: { authorization: `Bearer ${await w.idp.accessTokenFor(username, CLIENT_ID)}` } });
  return ((await res.json()) as { token: string }).token;
}
const chat = (id: string, user_id: string) => ({
  id,
  user_id,
  title: id,
  chat: { messages: [] },
  created_at: 0,
  updated_at: 0,
  share_id: null,
  archived: false,
  pinned: false,
  meta: {},
  folder_id: null,
});

/** How long a frame may take to be answered through the gateway and the stand-in. */
const WAIT = { ms: 2_000, everyMs: 10 };

for (const bypass of [false, true]) {
  describe(`Socket.IO note events of admins, CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=${bypass}`, function () {
    this.timeout(20_000);
    let w: World;
    const upstreamUsers = [
      { id: 'u-sysadmin', email: account('sysadmin').email, name: 'Sys Admin', role: 'admin' as const, groups: [] },
      { id: 'u-alice', email: account('alice').email, name: 'Alice', role: 'user' as const, groups: [] },
      { id: 'u-bob', email: account('bob').email, name: 'Bob', role: 'user' as const, groups: [] },
    ];

    before(async () => {
      w = await startWorld({
        env: { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: String(bypass) },
        // Open WebUI as it ships: its own admin flags on
        upstream: {
          bypassAdminAccessControl: true,
          enableAdminChatAccess: true,
          users: upstreamUsers,
          workspace: workspace(),
          chats: [chat('c-bob', 'u-bob'), chat('c-sys', 'u-sysadmin')],
        },
      });
    });
    after(() => w?.close());

    const states = (c: Client) => c.received.filter((m) => m.startsWith('42["ydoc:document:state"'));

    it(
      bypass
        ? 'WebSocket: an admin joins any note, as Open WebUI allows'
        : 'WebSocket: joining or editing another user\u2019s note is dropped; own and shared notes work, in order',
      async () => {
        const admin = await connect(w, await w.idp.accessTokenFor('sysadmin', CLIENT_ID));
        const own = await upstreamToken(w, 'sysadmin');
        await until('the stand-in\u2019s hello', () => admin.received.length > 0, WAIT);
        admin.send(event('join-note', { note_id: 'n-bob', auth: { token: own } }));
        admin.send(event('ydoc:document:join', { document_id: 'note_n-bob', user_id: 'u-sysadmin' }));
        // a binary event with one attachment, on another user's note: both parts dropped
        admin.send(`451-${JSON.stringify(['ydoc:document:update', { document_id: 'note:n-bob', update: { _placeholder: true, num: 0 } }])}`);
        admin.send(Buffer.from([1, 2, 3]));
        admin.send(event('join-note', { note_id: 'n-admin', auth: { token: own } }));
        admin.send(event('join-note', { note_id: 'n-shared', auth: { token: own } }));
        admin.send(event('heartbeat', {}));
        await until('the heartbeat echoed', () => admin.received.some((m) => m.includes('heartbeat')), WAIT);
        await until('the joined notes\u2019 states', () => states(admin).length >= (bypass ? 4 : 2), WAIT);
        const joined = states(admin).map((m) => JSON.parse(m.slice(2))[1].document_id);
        if (bypass) {
          expect(joined).to.include('note:n-bob');
          expect(admin.received.join('\n')).to.include(SECRET);
        } else {
          expect(joined).to.have.members(['note:n-admin', 'note:n-shared']);
          expect(admin.received.join('\n')).to.not.include(SECRET);
          // the attachment of the dropped update never reached Open WebUI (it would have been echoed)
          expect(admin.received.filter((m) => m.startsWith('<binary'))).to.deep.equal([]);
          const dropped = w.obs.lines.filter((l) => l.event === 'admin-socket-event-dropped');
          expect(dropped.map((l) => l.socketEvent)).to.include.members(['join-note', 'ydoc:document:join', 'ydoc:document:update']);
          expect(dropped.every((l) => l.rule === 'route table: Socket.IO note events' && l.transport === 'websocket')).to.equal(true);
        }
        admin.close();
      },
    );

    it('both transports: joining another user\u2019s chat room is dropped with either switch (ENABLE_ADMIN_CHAT_ACCESS fixed false); the admin\u2019s own chat works', async () => {
      const token = await w.idp.accessTokenFor('sysadmin', CLIENT_ID);
      const admin = await connect(w, token);
      await until('the stand-in\u2019s hello', () => admin.received.length > 0, WAIT);
      const foreign = event('events:chat', { chat_id: 'c-bob', data: { type: 'join' } });
      const own = event('events:chat', { chat_id: 'c-sys', data: { type: 'join' } });
      admin.send(foreign);
      admin.send(own);
      // the stand-in echoes what reaches it
      await until('the own note\u2019s answer', () => admin.received.includes(own), WAIT);
      expect(admin.received).to.not.include(foreign);
      admin.close();
      const before = w.upstream.workspace.polled.length;
      const res = await fetch(`${w.url}/ws/socket.io/?EIO=4&transport=polling&sid=s2`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: [foreign, own].join('\x1e'),
      });
      expect(res.status).to.equal(200);
      expect(w.upstream.workspace.polled.slice(before)).to.deep.equal([own]);
      expect(w.obs.lines.some((l) => l.event === 'admin-socket-event-dropped' && l.socketEvent === 'events:chat')).to.equal(true);
    });

    it('WebSocket: a token of another account in the CONNECT packet or an event is dropped with either switch; the admin\u2019s own passes', async () => {
      const admin = await connect(w, await w.idp.accessTokenFor('sysadmin', CLIENT_ID));
      await until('the stand-in\u2019s hello', () => admin.received.length > 0, WAIT);
      const [own, alices] = [await upstreamToken(w, 'sysadmin'), await upstreamToken(w, 'alice')];
      const sent = {
        foreignConnect: `40${JSON.stringify({ token: alices })}`,
        foreignJoin: event('user-join', { auth: { token: alices } }),
        notAToken: event('user-join', { auth: { token: 'x' } }),
        ownConnect: `40${JSON.stringify({ token: own })}`,
        ownJoin: event('user-join', { auth: { token: own } }),
      };
      for (const m of Object.values(sent)) admin.send(m);
      // the stand-in echoes what reaches it
      await until('the own join echoed', () => admin.received.includes(sent.ownJoin), WAIT);
      expect(admin.received).to.include(sent.ownConnect);
      for (const m of [sent.foreignConnect, sent.foreignJoin, sent.notAToken]) expect(admin.received, m).to.not.include(m);
      const dropped = w.obs.lines.filter((l) => l.event === 'admin-socket-event-dropped' && /token/.test(String(l.rule)));
      expect(dropped.map((l) => l.socketEvent)).to.have.members(['connect', 'user-join', 'user-join']);
      admin.close();
    });

    it('WebSocket, with either switch: an update of the admin\u2019s own note that does not decode as Yjs is dropped and audited (Open WebUI 0.11.4 would keep it and the note could no longer be joined); one that does goes on', async () => {
      const admin = await connect(w, await w.idp.accessTokenFor('sysadmin', CLIENT_ID));
      await until('the stand-in\u2019s hello', () => admin.received.length > 0, WAIT);
      const Y = await import('yjs');
      const doc = new Y.Doc();
      doc.getText('t').insert(0, 'own words, edited');
      const sent = {
        malformed: event('ydoc:document:update', { document_id: 'note:n-admin', update: [1, 2, 3] }),
        notBytes: event('ydoc:document:update', { document_id: 'note:n-admin', update: 'AQID' }),
        valid: event('ydoc:document:update', { document_id: 'note:n-admin', update: Array.from(Y.encodeStateAsUpdate(doc)) }),
      };
      const before = w.obs.lines.length;
      for (const m of Object.values(sent)) admin.send(m);
      // the stand-in echoes what reaches it
      await until('the valid update echoed', () => admin.received.includes(sent.valid), WAIT);
      for (const m of [sent.malformed, sent.notBytes]) expect(admin.received, m).to.not.include(m);
      const dropped = w.obs.lines.slice(before).filter((l) => l.event === 'admin-socket-event-dropped');
      expect(dropped.map((l) => [l.socketEvent, l.rule])).to.deep.equal([
        ['ydoc:document:update', 'route table: Socket.IO document update (one Open WebUI can decode)'],
        ['ydoc:document:update', 'route table: Socket.IO document update (one Open WebUI can decode)'],
      ]);
      admin.close();
    });

    it('WebSocket: an admin\u2019s socket is never compressed (Open WebUI would negotiate permessage-deflate), so every frame can be read; a plain user\u2019s is', async () => {
      const offer = { 'Sec-WebSocket-Extensions': 'permessage-deflate; client_max_window_bits' };
      const straight = await rawWebSocket(w.upstream.url, offer);
      expect(straight.head).to.match(/^sec-websocket-extensions: permessage-deflate/im);
      straight.destroy();
      const admin = await rawWebSocket(w.url, { ...offer, Authorization: `Bearer ${await w.idp.accessTokenFor('sysadmin', CLIENT_ID)}` });
      expect(admin.head).to.match(/^HTTP\/1\.1 101 /);
      expect(admin.head).to.not.match(/sec-websocket-extensions/i);
      // the stand-in's hello names the headers it got: no offer reached it
      await until('the stand-in\u2019s hello', () => admin.received.length > 0, WAIT);
      expect(admin.received[0]).to.not.match(/sec-websocket-extensions/i);
      admin.destroy();
      const alice = await rawWebSocket(w.url, { ...offer, Authorization: `Bearer ${await w.idp.accessTokenFor('alice', CLIENT_ID)}` });
      expect(alice.head).to.match(/^sec-websocket-extensions: permessage-deflate/im);
      alice.destroy();
    });

    describe('WebSocket: a frame RFC 6455 forbids closes the admin\u2019s socket with 1002, audited; nothing after it reaches Open WebUI', () => {
      const text = (t: string) => Buffer.from(t);
      const forbidden: Array<[string, Buffer]> = [
        ['a reserved data opcode (3)', clientFrame(3, text(event('heartbeat', {})))],
        ['a reserved control opcode (0xB)', clientFrame(0xb, Buffer.alloc(0))],
        ['an unmasked frame', clientFrame(1, text(event('heartbeat', {})), { masked: false })],
        ['a ping of 126 bytes', clientFrame(9, Buffer.alloc(126, 1))],
        ['a fragmented ping', clientFrame(9, text('hi'), { fin: false })],
        ['RSV1 set, permessage-deflate not negotiated', clientFrame(1, text(event('heartbeat', {})), { rsv: 4 })],
        ['RSV2 set', clientFrame(1, text(event('heartbeat', {})), { rsv: 2 })],
      ];
      for (const [what, bad] of forbidden) {
        it(what, async () => {
          const admin = await rawAdmin(w, await w.idp.accessTokenFor('sysadmin', CLIENT_ID));
          await until('the stand-in\u2019s hello', () => admin.received.length > 0, WAIT);
          const first = event('user-list', { n: 1 });
          admin.send(clientFrame(1, text(first)));
          // the stand-in echoes what reaches it
          await until('the first message echoed', () => admin.received.includes(first), WAIT);
          const after = event('user-list', { n: 2 });
          admin.send(Buffer.concat([bad, clientFrame(1, text(after))]));
          await until('the connection closed', () => admin.state.ended, WAIT);
          expect(admin.state.close, `${admin.state.error ?? ''} ${admin.received.join(' | ')}`).to.equal(1002);
          expect(admin.received).to.not.include(after);
          const audit = w.obs.lines.filter((l) => l.event === 'admin-socket-closed');
          expect(audit.at(-1)).to.include({ code: 1002, transport: 'websocket', caller: account('sysadmin').email });
          admin.destroy();
        });
      }

      it('a binary event dropped, then a reserved-opcode frame, then a binary message: that message is not taken for the dropped event\u2019s attachment and sent on', async () => {
        const admin = await rawAdmin(w, await w.idp.accessTokenFor('sysadmin', CLIENT_ID));
        await until('the stand-in\u2019s hello', () => admin.received.length > 0, WAIT);
        const own = await upstreamToken(w, 'sysadmin');
        // dropped with either switch: a chat join of bob's, with one attachment
        const join = `451-${JSON.stringify(['events:chat', { chat_id: 'c-bob', data: { type: 'join' } }, { auth: { token: own } }])}`;
        admin.send(clientFrame(1, text(join)));
        admin.send(clientFrame(3, Buffer.from([1])));
        admin.send(clientFrame(2, Buffer.from([0xab, 0xcd])));
        await until('the connection closed', () => admin.state.ended, WAIT);
        // Open WebUI echoes a binary message that reaches it
        expect(admin.received.filter((m) => m.startsWith('<binary'))).to.deep.equal([]);
        expect(admin.state.close).to.equal(1002);
        admin.destroy();
      });
    });

    it('WebSocket: a plain user\u2019s socket is a byte pipe (Open WebUI keeps them to their own notes)', async () => {
      const alice = await connect(w, await w.idp.accessTokenFor('alice', CLIENT_ID));
      await until('the stand-in\u2019s hello', () => alice.received.length > 0, WAIT);
      alice.send(event('join-note', { note_id: 'n-bob', auth: { token: 'x' } }));
      alice.send(Buffer.from([9, 9]));
      await until('the binary message echoed', () => alice.received.some((m) => m.startsWith('<binary')), WAIT);
      expect(alice.received.join('\n')).to.not.include(SECRET);
      alice.close();
    });

    it(
      bypass
        ? 'long-polling: packets pass as sent'
        : 'long-polling: another user\u2019s note events are removed from the POST body; the rest reaches Open WebUI',
      async () => {
        const token = await w.idp.accessTokenFor('sysadmin', CLIENT_ID);
        const post = (body: string) =>
          fetch(`${w.url}/ws/socket.io/?EIO=4&transport=polling&sid=s1`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain;charset=UTF-8' },
            body,
          });
        const before = w.upstream.workspace.polled.length;
        const mixed = [event('join-note', { note_id: 'n-bob' }), event('heartbeat', {}), event('join-note', { note_id: 'n-admin' })].join('\x1e');
        const res = await post(mixed);
        expect(res.status).to.equal(200);
        expect(await res.text()).to.equal('OK');
        const got = w.upstream.workspace.polled.slice(before);
        if (bypass) return expect(got).to.deep.equal([mixed]);
        expect(got).to.deep.equal([[event('heartbeat', {}), event('join-note', { note_id: 'n-admin' })].join('\x1e')]);
        // nothing left: answered as Engine.IO does, Open WebUI not called
        const only = await post(event('ydoc:document:join', { document_id: 'note:n-bob' }));
        expect([only.status, await only.text()]).to.deep.equal([200, 'OK']);
        expect(w.upstream.workspace.polled.length).to.equal(before + 1);
        expect(w.obs.lines.some((l) => l.event === 'admin-socket-event-dropped' && l.transport === 'polling')).to.equal(true);
      },
    );
  });
}
