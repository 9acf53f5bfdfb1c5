// Open WebUI's Socket.IO client events, and what an admin's event needs before it reaches Open
// WebUI (gateway/enforcement/socketio-guard.ts reads the frames and asks here).

/**
 * Socket.IO client events of the table release (socket/main.py, socket/encryption.py) for an admin: 'note'
 * events (bypass off) are dropped unless the note is the admin's own or shared with them; a 'chat'
 * join (either bypass value) unless the chat is the admin's own; the rest act on the sender's own
 * session or the channels they belong to (Open WebUI checks those itself, by the sender's id).
 */
export const OPEN_WEBUI_SOCKET_EVENTS: Readonly<Record<string, 'own' | 'note' | 'chat'>> = {
  connect: 'own',
  disconnect: 'own',
  usage: 'own',
  'user-join': 'own',
  heartbeat: 'own',
  'join-channels': 'own',
  'join-note': 'note',
  'events:channel': 'own',
  // {chat_id, data: {type: 'join'}} enters the chat's room (its live tokens) for any chat an admin
  // may open upstream: with ENABLE_ADMIN_CHAT_ACCESS fixed false, only the admin's own chats
  'events:chat': 'chat',
  'ydoc:document:join': 'note',
  'ydoc:document:state': 'note',
  'ydoc:document:update': 'note',
  'ydoc:document:leave': 'own',
  'ydoc:awareness:update': 'note',
  'encryption:bind': 'own',
  'encryption:join': 'own',
  'encryption:leave': 'own',
  'encryption:packet': 'own',
  'encryption:ping': 'own',
  'encryption:start': 'own',
  'encryption:status': 'own',
  '*': 'own',
};

/** What an admin's Socket.IO event needs before it reaches Open WebUI (bypass off). */
export type SocketEventNeed =
  | { need: 'none' }
  | { need: 'note'; noteId: string; permission: 'read' | 'write' }
  | { need: 'own-chat'; chatId: string }
  /** the Open WebUI account a token in the packet opens must be the admin's own */
  | { need: 'own-account'; userId: string }
  /** the bytes of a collaborative document's update must decode as a Yjs update */
  | { need: 'yjs-update'; bytes: readonly number[] }
  | { need: 'drop'; why: string };

/** Note ids as Open WebUI makes them; anything else could steer the gateway's lookup elsewhere. */
const NOTE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * A token in an admin's Socket.IO packet (socket/main.py: `connect` reads the CONNECT packet's
 * `auth.token`, `user-join`, `join-note` and the channel events read `auth.token` of their data) opens
 * that token's account on the socket: its rooms, its live events. HTTP requests always carry the
 * admin's own upstream credential (pipeline/caller.ts), but a socket carries what the client puts in
 * it, so the token must claim the admin's own account (its `id`; Open WebUI checks the signature).
 * A token Open WebUI could not read as a JWT is dropped too (fail closed).
 */
export function socketTokenNeed(token: unknown): SocketEventNeed {
  if (token === undefined) return { need: 'none' };
  const parts = typeof token === 'string' ? token.split('.') : [];
  if (parts.length !== 3) return { need: 'drop', why: 'a token that is not a JWT' };
  try {
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { id?: unknown };
    if (typeof claims.id === 'string' && claims.id !== '') return { need: 'own-account', userId: claims.id };
  } catch {
    /* not JSON */
  }
  return { need: 'drop', why: 'a token that names no account' };
}

/** The token of an event's data (`{auth: {token}}`), or undefined. */
export function socketDataToken(data: unknown): unknown {
  const auth = typeof data === 'object' && data !== null ? (data as { auth?: unknown }).auth : undefined;
  return typeof auth === 'object' && auth !== null && 'token' in auth ? (auth as { token: unknown }).token : undefined;
}

/**
 * The note an event joins or edits (socket/main.py): `join-note` names `note_id`; the ydoc events
 * name `document_id`, `note:<id>` or `note_<id>` (normalize_document_id). A ydoc document that is
 * not a note, or a note event whose id cannot be read, is dropped (fail closed).
 */
export function socketEventNeed(event: string, data: unknown, judgeNotes: boolean): SocketEventNeed {
  const kind = Object.prototype.hasOwnProperty.call(OPEN_WEBUI_SOCKET_EVENTS, event) ? OPEN_WEBUI_SOCKET_EVENTS[event] : 'own';
  const d = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  if (kind === 'chat') {
    const type = typeof d.data === 'object' && d.data !== null ? (d.data as Record<string, unknown>).type : undefined;
    if (type !== 'join') return { need: 'none' };
    const chatId = d.chat_id;
    // Open WebUI ignores a join without a saved chat id (temporary:, local:, channel: ones)
    if (typeof chatId !== 'string' || chatId === '' || /^(temporary|local|channel):/.test(chatId)) return { need: 'none' };
    return NOTE_ID.test(chatId) ? { need: 'own-chat', chatId } : { need: 'drop', why: 'no readable chat id' };
  }
  if (kind !== 'note' || !judgeNotes) return { need: 'none' };
  let noteId: unknown;
  if (event === 'join-note') noteId = d.note_id;
  else if (typeof d.document_id === 'string') {
    const doc = d.document_id;
    if (doc.startsWith('note:')) noteId = doc.slice(5);
    else if (doc.startsWith('note_')) noteId = doc.slice(5);
    else return { need: 'drop', why: 'a collaborative document that is not a note' };
  }
  if (typeof noteId !== 'string' || !NOTE_ID.test(noteId)) return { need: 'drop', why: 'no readable note id' };
  return { need: 'note', noteId, permission: event === 'ydoc:document:update' ? 'write' : 'read' };
}

/**
 * The update an admin's `ydoc:document:update` carries (socket/main.py): Open WebUI 0.12 decodes it
 * before keeping it (YdocManager.append_to_updates); 0.11.4 keeps whatever bytes come, and one that
 * does not decode makes every later join of that document fail ("Failed to join document"), for
 * everyone, the owner included. So an admin's update is sent on only when it is what Open WebUI's
 * front-end sends, a list of bytes, and decodes (asked of the gateway, `yjs-update`); an empty or
 * absent one Open WebUI ignores. Anything else (a binary attachment, a string) is dropped.
 */
export function socketUpdateNeed(event: string, data: unknown): SocketEventNeed {
  if (event !== 'ydoc:document:update' || typeof data !== 'object' || data === null) return { need: 'none' };
  const update = (data as { update?: unknown }).update;
  if (update === undefined || update === null || (Array.isArray(update) && update.length === 0)) return { need: 'none' };
  if (!Array.isArray(update) || !update.every((b) => Number.isInteger(b) && b >= 0 && b <= 255))
    return { need: 'drop', why: 'a collaborative document update that is not a list of bytes' };
  return { need: 'yjs-update', bytes: update as number[] };
}
