// policies/socket-events.ts socketUpdateNeed, and the decoding the gateway asks for it
// (gateway/enforcement/socketio-guard.ts): an admin's collaborative document update goes on to Open WebUI
// only when it decodes as a Yjs update, as Open WebUI 0.12 itself asks (0.11.4 keeps any bytes, and
// one that does not decode makes the document impossible to join again).
import { expect } from 'chai';
import { socketUpdateNeed } from '../../policies/socket-events.js';
import { decodesAsYjsUpdate, judgePacket } from '../../gateway/enforcement/socketio-guard.js';

/** An update as the editor sends one (yjs loaded as the gateway loads it, once). */
const realUpdate = async () => {
  const Y = await import('yjs');
  const doc = new Y.Doc();
  doc.getXmlFragment('prosemirror').insert(0, [new Y.XmlText('own words')]);
  return Array.from(Y.encodeStateAsUpdate(doc));
};

describe('unit: an admin\u2019s collaborative document update', () => {
  it('a list of bytes is to be decoded; nothing or an empty list is left alone (Open WebUI ignores it); anything else is dropped', async () => {
    const update = await realUpdate();
    expect(socketUpdateNeed('ydoc:document:update', { document_id: 'note:n-1', update })).to.deep.equal({ need: 'yjs-update', bytes: update });
    for (const data of [{ document_id: 'note:n-1' }, { update: null }, { update: [] }, null, 'x'])
      expect(socketUpdateNeed('ydoc:document:update', data), JSON.stringify(data)).to.deep.equal({ need: 'none' });
    for (const update of ['AAA=', { _placeholder: true, num: 0 }, [1, 256], [1.5], [-1], [null]])
      expect(socketUpdateNeed('ydoc:document:update', { update }).need, JSON.stringify(update)).to.equal('drop');
    // only the update event carries one
    expect(socketUpdateNeed('ydoc:awareness:update', { update: [0] })).to.deep.equal({ need: 'none' });
  });

  it('decodes what a Yjs editor sends, and the empty update; not bytes that are no update', async () => {
    expect(await decodesAsYjsUpdate(await realUpdate())).to.equal(true);
    expect(await decodesAsYjsUpdate([0, 0])).to.equal(true);
    for (const bytes of [[0], [1, 2, 3], [255, 255]]) expect(await decodesAsYjsUpdate(bytes), JSON.stringify(bytes)).to.equal(false);
  });

  it('judged with either switch, after the note\u2019s own need', () => {
    const packet = `42${JSON.stringify(['ydoc:document:update', { document_id: 'note:n-1', update: [0] }])}`;
    for (const judgeNotes of [true, false]) expect(judgePacket(packet, judgeNotes).update).to.deep.equal({ need: 'yjs-update', bytes: [0] });
  });
});
