// The Socket.IO packets of an admin as the guard reads them (gateway/enforcement/socketio-guard.ts, with
// socket.io-parser and engine.io-parser): every form Open WebUI's client writes is read, anything
// python-socketio could read otherwise than the gateway is dropped, and a dropped binary event's
// attachments go with it however they come.
import { expect } from 'chai';
import { guardPollingBody, judgePacket, WebSocketGuard, type SocketJudge } from '../../gateway/enforcement/socketio-guard.js';

const join = (chatId: string) => ['events:chat', { chat_id: chatId, data: { type: 'join' } }];
const bobs = JSON.stringify(join('c-bob'));
const onlyOwn: SocketJudge = async (need) => need.need === 'own-chat' && need.chatId === 'c-own';

/** A client's masked WebSocket frame (mask 1 2 3 4), short payloads only. */
function maskedFrame(opcode: number, payload: Buffer): Buffer {
  const mask = [1, 2, 3, 4];
  return Buffer.from([0x80 | opcode, 0x80 | payload.length, ...mask, ...payload.map((b, i) => b ^ mask[i & 3]!)]);
}

describe('unit: the Socket.IO guard reads packets with socket.io-parser and engine.io-parser', () => {
  it('reads an event in every form the client writes: namespace, ack id, binary with attachments', () => {
    for (const [text, attachments] of [
      [`42${bobs}`, 0],
      [`42/,${bobs}`, 0],
      [`4217${bobs}`, 0],
      [`42/other,17${bobs}`, 0],
      [`451-${bobs}`, 1],
      [`4512-/other,3${bobs}`, 12],
    ] as const) {
      const j = judgePacket(text, true);
      expect(j.need, text).to.deep.equal({ need: 'own-chat', chatId: 'c-bob' });
      expect([j.event, j.attachments], text).to.deep.equal(['events:chat', attachments]);
    }
  });

  it('drops what it cannot read the way python-socketio would: no event name, not JSON, a reserved name, a loose attachment count', () => {
    for (const text of [
      '42',
      '42{}',
      '42[]',
      '42[7,{}]',
      '42["connect",{}]',
      `42${bobs.slice(0, -1)}`,
      '42/other',
      `42NaN${bobs}`,
      // python-socketio reads `1-` as an attachment count here; the gateway reads no event
      `421-${bobs}`,
      `45-${bobs}`,
      `451e0-${bobs}`,
      `45 1-${bobs}`,
      `45${bobs}`,
    ])
      expect(judgePacket(text, true).need, text).to.deep.equal({ need: 'drop', why: 'unreadable Socket.IO packet' });
  });

  it('a CONNECT: its token is judged; auth that is not an object is dropped', () => {
    expect(judgePacket('40', true).need).to.deep.equal({ need: 'none' });
    expect(judgePacket('40{"token":"x"}', true).token).to.deep.equal({ need: 'drop', why: 'a token that is not a JWT' });
    expect(judgePacket('40/other,{"token":"x"}', true).token).to.deep.equal({ need: 'drop', why: 'a token that is not a JWT' });
    for (const text of ['40"x"', '40[{"token":"x"}]', '40{'])
      expect(judgePacket(text, true).need, text).to.deep.equal({ need: 'drop', why: 'unreadable Socket.IO CONNECT' });
  });

  it('Engine.IO packets other than messages pass; a `b` message is an attachment', () => {
    for (const text of ['2', '3probe', '5', '6', '', '4', 'x']) expect(judgePacket(text, true).need, JSON.stringify(text)).to.deep.equal({ need: 'none' });
    expect(judgePacket('bAQI=', true).attachment).to.equal(true);
  });

  it('long-polling: a dropped binary event leaves with its attachments; the rest is sent as written', async () => {
    const dropped: string[] = [];
    const body = [`452-${bobs}`, 'bAQ==', 'bAg==', `42${JSON.stringify(join('c-own'))}`, 'bAw==', '3'].join('\x1e');
    const kept = await guardPollingBody(body, onlyOwn, (event) => dropped.push(String(event)), true);
    expect(kept).to.equal([`42${JSON.stringify(join('c-own'))}`, 'bAw==', '3'].join('\x1e'));
    expect(dropped).to.deep.equal(['events:chat']);
  });

  it('WebSocket: an attachment sent as a `b` text message goes with its dropped event, as a binary one does', async () => {
    const sent: Buffer[] = [];
    const guard = new WebSocketGuard(
      onlyOwn,
      () => {},
      (b) => sent.push(b),
      () => {},
      true,
    );
    const own = maskedFrame(1, Buffer.from(`42${JSON.stringify(join('c-own'))}`));
    guard.write(maskedFrame(1, Buffer.from(`452-${bobs}`)));
    guard.write(maskedFrame(1, Buffer.from('bAQ==')));
    guard.write(maskedFrame(2, Buffer.from([2])));
    guard.write(own);
    await new Promise<void>((r) => guard.end(r));
    expect(sent).to.deep.equal([own]);
  });
});
