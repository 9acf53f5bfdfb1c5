// An in-process stand-in of Open WebUI 0.12.4, written from the installed source, so that the
// `npm start` sandbox stays Python-free and the fast tests and benchmarks need no real peer; the
// real-peer suites hold it to the real one (docs/development.md, "The stand-ins"). This file is the
// server, which records every request and routes it; each area of routes has its own file.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { setMaxListeners } from 'node:events';
import { registerAnalyticsRoutes } from './analytics.js';
import { apiKeyFor, authenticate, issueToken, registerAuthRoutes } from './auth.js';
import { registerChatRoutes } from './chats.js';
import { registerCompletionRoutes } from './completions.js';
import { drain, q, readBody, readJsonObject, send, sendJson, type Ctx } from './context.js';
import { registerFileRoutes } from './files.js';
import { HttpError, splitTarget, unquote } from './http.js';
import { registerMetaRoutes, registerStaticRoutes, sendAppShell } from './pages.js';
import { Router } from './router.js';
import { SocketEndpoint } from './socket.js';
import { StandInState } from './state.js';
import type { OpenWebUIOptions, OpenWebUIStandIn, RecordedRequest } from './types.js';
import type { Kit } from './workspace.js';
import { installContentRoutes } from './workspace-content.js';
import { installModelRoutes } from './workspace-models.js';

export type { OpenWebUIOptions, OpenWebUIStandIn, RecordedRequest, StandInChat, StandInFile, StandInGrant, StandInUser } from './types.js';

/** What the workspace routes are handed: the stand-in's helpers and the maps they read. */
function workspaceKit(router: Router, state: StandInState): Kit<Ctx> {
  return {
    route: router.route,
    authenticate: (ctx, level) => authenticate(state, ctx, level),
    sendJson,
    readJsonObject,
    readText: async (ctx) => (await readBody(ctx)).toString('utf8'),
    sendText: (ctx, status, text) => send(ctx, status, Buffer.from(text), 'text/plain'),
    query: q,
    fail: (status, detail) => new HttpError(status, detail),
    flags: state.flags,
    users: state.users,
    chats: state.chats,
    files: state.files,
  };
}

/** Every route of the stand-in, in the order they are matched. */
function buildRouter(state: StandInState): Router {
  const router = new Router(sendAppShell);
  // workspace objects first: their literal routes before any of the stand-in's own patterns
  const kit = workspaceKit(router, state);
  installContentRoutes(kit, state.workspace);
  installModelRoutes(kit, state.workspace);
  registerMetaRoutes(router, state);
  registerAuthRoutes(router, state);
  registerFileRoutes(router, state);
  registerChatRoutes(router, state);
  registerAnalyticsRoutes(router, state);
  registerCompletionRoutes(router, state);
  registerStaticRoutes(router, state);
  return router;
}

function record(state: StandInState, req: IncomingMessage, upgrade: boolean): RecordedRequest {
  const rec: RecordedRequest = {
    method: req.method ?? 'GET',
    url: req.url ?? '',
    headers: { ...req.headers },
    rawHeaders: [...req.rawHeaders],
    bodyBytes: 0,
    upgrade,
    at: Date.now(),
  };
  state.requests.push(rec);
  return rec;
}

/**
 * One HTTP request: recorded, routed on its decoded path, and answered `{"detail": ...}` when a
 * route throws. Its signal aborts when the client goes away or the stand-in closes.
 */
function serve(state: StandInState, router: Router, lifetime: AbortSignal, req: IncomingMessage, res: ServerResponse): void {
  const rec = record(state, req, false);
  const { rawPath, rawQuery } = splitTarget(req.url ?? '/');
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const onLifetimeAbort = (): void => abort.abort();
  lifetime.addEventListener('abort', onLifetimeAbort, { once: true });
  res.on('close', () => lifetime.removeEventListener('abort', onLifetimeAbort));
  const method = (req.method ?? 'GET').toUpperCase();
  const ctx: Ctx = {
    req,
    res,
    rec,
    method: method === 'HEAD' ? 'GET' : method,
    head: method === 'HEAD',
    path: unquote(rawPath),
    query: new URLSearchParams(rawQuery),
    signal: abort.signal,
    bodyTaken: false,
    compress: state.compress,
  };
  void (async () => {
    try {
      await router.dispatch(ctx);
    } catch (e) {
      if (res.headersSent) {
        res.destroy();
      } else if (e instanceof HttpError) {
        sendJson(ctx, e.status, { detail: e.detail }, e.headers);
      } else {
        sendJson(ctx, 500, { detail: 'Internal Server Error' });
      }
    } finally {
      drain(ctx);
    }
  })();
}

export async function startOpenWebUI(opts: OpenWebUIOptions = {}): Promise<OpenWebUIStandIn> {
  const host = opts.host ?? '127.0.0.1';
  const state = new StandInState(opts);
  const router = buildRouter(state);
  const socketIo = new SocketEndpoint(state);
  const sockets = new Set<Socket | Duplex>();
  const lifetime = new AbortController();
  // One abort listener per request in flight: a thousand concurrent requests are not a leak.
  setMaxListeners(0, lifetime.signal);

  const server = http.createServer();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => serve(state, router, lifetime.signal, req, res));
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    record(state, req, true);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socketIo.upgrade(req, socket, head);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('stand-in: no TCP address');
  const port = address.port;

  let closing: Promise<void> | null = null;

  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    requests: state.requests,
    users: state.users,
    files: state.files,
    chats: state.chats,
    chatGrants: state.chatGrants,
    groups: state.groups,
    workspace: state.workspace,
    flags: state.flags,
    release: state.release,
    async tokenFor(userId: string): Promise<string> {
      if (!state.users.has(userId)) throw new Error(`stand-in: unknown user ${userId}`);
      return (await issueToken(state, userId)).token;
    },
    apiKeyFor(userId: string): string {
      if (!state.users.has(userId)) throw new Error(`stand-in: unknown user ${userId}`);
      return apiKeyFor(state, userId);
    },
    revokeSessions(userId: string): void {
      if (!state.users.has(userId)) throw new Error(`stand-in: unknown user ${userId}`);
      state.revokeSessions(userId);
    },
    openSockets: () => sockets.size,
    close(): Promise<void> {
      closing ??= (async () => {
        lifetime.abort();
        socketIo.close();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // every socket still in the set has not emitted 'close' yet
        const waits = [...sockets].map((s) => new Promise<void>((resolve) => s.once('close', () => resolve())));
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
        await Promise.all([closed, ...waits]);
        sockets.clear();
      })();
      return closing;
    },
  };
}
