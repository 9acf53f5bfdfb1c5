// Who a request comes from, as the gateway verified it. The sign-in module fills this in:
// OIDC sessions (express-openid-connect cookies) and realm bearer JWTs.
// This file defines the seam the data plane depends on.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router } from 'express';
import type { Settings } from '../config/settings.js';
import type { Observability } from './observability.js';

export interface Identity {
  sub: string;
  email: string;
  name: string;
  /** realm roles from OAUTH_ROLES_CLAIM (ID token, userinfo or access token) */
  roles: string[];
  /** one of OAUTH_ADMIN_ROLES is among the roles */
  admin: boolean;
  groups: string[];
  tenants: string[];
  activeTenant: string | null;
  /** how it was verified; a cookie session is an ambient credential (CSRF, WebSocket Origin) */
  via: 'session' | 'bearer';
}

export interface Authenticator {
  /** /auth/start, /auth/callback, /auth/logout, /auth/session, /auth/session/tenant */
  router: Router;
  /**
   * The verified identity of a request, or undefined. May refresh the session's tokens and then
   * sets the renewed cookie on `res`; `res` is absent for WebSocket upgrades.
   */
  authenticate(req: IncomingMessage, res?: ServerResponse): Promise<Identity | undefined>;
  /** For /readyz: can the identity provider be reached? */
  ready(): Promise<{ ok: boolean; detail: string }>;
  close(): Promise<void>;
}

/** Placeholder until sign-in lands: nobody is authenticated. */
export async function createAuthenticator(_settings: Settings, _obs: Observability): Promise<Authenticator> {
  return {
    router: Router(),
    authenticate: async () => undefined,
    ready: async () => ({ ok: true, detail: 'sign-in not configured' }),
    close: async () => {},
  };
}
