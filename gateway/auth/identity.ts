// What the rest of the gateway knows of who a request comes from: the verified identity and the
// authenticator that finds it. The seam between auth/ and the data plane (gateway/pipeline/).
import type { IncomingMessage } from 'node:http';
import type { Router } from 'express';
import type { SocketVerdict } from '../../policies/session-ends.js';
import type { AuthScope, SessionUser } from './session-cookie.js';

/** A verified identity: the user as signed in (or as a realm JWT says) and what follows from it. */
export interface Identity extends SessionUser {
  /** one of OAUTH_ADMIN_ROLES is among the realm roles (OAUTH_ROLES_CLAIM) */
  admin: boolean;
  activeTenant: string | null;
  /** how it was verified; a cookie session is an ambient credential (CSRF, WebSocket Origin) */
  via: 'session' | 'bearer';
  /** when the realm gave these facts (sign-in, refresh, a bearer token's `iat`), epoch seconds; absent: unknown, the oldest */
  factsAt?: number;
}

export interface Authenticator {
  /** /auth/start, /auth/callback, /auth/logout, /auth/session, /auth/session/tenant */
  router: Router;
  /**
   * The verified identity of a request, or undefined. May refresh the session's tokens and then
   * records the renewed cookie in `scope` (the request's context, gateway/pipeline/context.ts,
   * which applies it once); without a scope, one is made of the request's headers and dropped.
   * The gateway's own credentials are consumed here: a realm-issued bearer JWT and the session
   * cookies are removed from what `scope` sends upstream, so they never reach the chat front-end
   * (which could not use them, and would take a realm JWT in `Authorization` for its own credential).
   */
  authenticate(req: IncomingMessage, scope?: AuthScope): Promise<Identity | undefined>;
  /**
   * `authenticate` for a WebSocket upgrade, with what the open socket is judged by afterwards
   * (gateway/http/websockets.ts): its session's id and whether it may stay open as things now stand.
   */
  authenticateSocket?(req: IncomingMessage, scope: AuthScope): Promise<SocketIdentity | undefined>;
  /** `listener` hears of every session that changed here: ended (sign-out, back-channel logout, refused refresh) or refreshed. */
  onSessionChange?(listener: (sessionId: string | undefined) => void): void;
  /** For /readyz: can the identity provider be reached? */
  ready(): Promise<{ ok: boolean; detail: string }>;
  close(): Promise<void>;
}

/** An upgraded socket's identity, and what it is judged by while it stays open. */
export interface SocketIdentity {
  identity: Identity;
  /** the gateway session id (absent for a bearer token) */
  key?: string;
  verdict(): SocketVerdict;
}
