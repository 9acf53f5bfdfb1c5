// The Socket.IO endpoint (/ws/socket.io) over WebSocket: every frame echoed, except a note join
// (socket/main.py `join-note`, `ydoc:document:join`), answered with the note's state when the
// user may read it. Upgrades to any other path are a 404, as uvicorn answers them.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { findToken, userOfToken } from './auth.js';
import { splitTarget, unquote } from './http.js';
import type { StandInState } from './state.js';

/** The note a Socket.IO `join-note` or `ydoc:document:join` text packet names, if any. */
function noteJoined(text: string): string | undefined {
  if (!text.startsWith('42')) return undefined;
  try {
    const [event, body] = JSON.parse(text.slice(2).replace(/^\/[^,]*,/, '')) as [string, Record<string, unknown>];
    if (event === 'join-note' && typeof body?.note_id === 'string') return body.note_id;
    if (event === 'ydoc:document:join' && typeof body?.document_id === 'string') return body.document_id.replace(/^note[:_]/, '');
  } catch {
    /* not an event */
  }
  return undefined;
}

export class SocketEndpoint {
  // Open WebUI 0.12.4 runs uvicorn with ws_per_message_deflate on (env.py UVICORN_WS_PER_MESSAGE_DEFLATE,
  // default True): a client that offers permessage-deflate gets it.
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: true });

  constructor(private readonly state: StandInState) {}

  /** An upgrade request, already recorded and its socket tracked by the server. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => undefined);
    const path = unquote(splitTarget(req.url ?? '/').rawPath);
    if (path !== '/ws/socket.io' && path !== '/ws/socket.io/') {
      const body = JSON.stringify({ detail: 'Not Found' });
      socket.end(`HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
      return;
    }
    const token = findToken(req);
    const sender = token ? userOfToken(this.state, token).catch(() => undefined) : Promise.resolve(undefined);
    this.wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      ws.on('error', () => undefined);
      ws.send(JSON.stringify({ type: 'hello', headers: req.headers }));
      ws.on('message', (data, isBinary) => {
        if (ws.readyState !== ws.OPEN) return;
        // socket/main.py `join-note` / `ydoc:document:join` (0.12.4): an admin joins any note and
        // is sent its state; others only their own or a shared one. Everything else is echoed.
        const note = isBinary ? undefined : noteJoined(String(data));
        if (!note) return ws.send(data, { binary: isBinary });
        void sender.then((user) => {
          const n = this.state.workspace.objects.note.get(note);
          if (!n || !user || ws.readyState !== ws.OPEN) return;
          const shared = (n.access_grants ?? []).some(
            (g) =>
              g.permission === 'read' &&
              ((g.principal_type === 'user' && (g.principal_id === user.id || g.principal_id === '*')) ||
                (g.principal_type === 'group' && user.groups.includes(g.principal_id))),
          );
          if (user.role !== 'admin' && n.user_id !== user.id && !shared) return;
          ws.send(`42${JSON.stringify(['ydoc:document:state', { document_id: `note:${n.id}`, state: n.data ?? null, title: n.title }])}`);
        });
      });
    });
  }

  /** Ends every open WebSocket at once (no close handshake). */
  close(): void {
    for (const ws of this.wss.clients) ws.terminate();
    this.wss.close();
  }
}
