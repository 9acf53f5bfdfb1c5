// The session API of the gateway (contract "Routes the gateway answers itself"):
//
//   GET  /auth/session          who is signed in: {"authenticated", "user", "tenants", "active_tenant"}
//   POST /auth/session/tenant   {"tenant_id"}: make it the active tenant (policies/origins.ts for
//                               the Origin, policies/tenancy.ts for the membership)
//
// Mounted by gateway/auth/authenticator.ts on its router; it receives only what it reads.
import express, { type Router } from 'express';
import type { Settings } from '../../config/settings.js';
import type { Observability } from '../observability/observability.js';
import { applySessionCookies, authenticateAnswer, readSessionCookie, type SessionCookies, type SessionUser } from './session-cookie.js';
import { type SessionStore } from './session-store.js';
import type { Authenticator, Identity } from './identity.js';
import { tenantSwitch } from '../../policies/tenancy.js';
import { stateChangeOrigin } from '../../policies/origins.js';
import { NOT_AUTHENTICATED } from '../http/respond.js';

export interface SessionApiParts {
  settings: Pick<Settings, 'allowedOrigins'>;
  store: Pick<SessionStore, 'live' | 'replace'>;
  obs: Pick<Observability, 'audit'>;
  authenticate: Authenticator['authenticate'];
  identityOf: (u: SessionUser, activeTenant: string | null, via: Identity['via']) => Identity;
}

export function mountSessionApi(router: Router, { settings, store, obs, authenticate, identityOf }: SessionApiParts): void {
  const sessionBody = (id: Identity | undefined) =>
    id
      ? {
          authenticated: true,
          user: { sub: id.sub, email: id.email, name: id.name, roles: id.roles, admin: id.admin },
          tenants: id.tenants,
          active_tenant: id.activeTenant,
        }
      : { authenticated: false };

  router.get('/auth/session', async (req, res) => {
    res.set('cache-control', 'private, no-store');
    res.json(sessionBody(await authenticateAnswer(authenticate, req, res)));
  });

  router.post('/auth/session/tenant', express.json({ limit: '4kb' }), async (req, res) => {
    res.set('cache-control', 'private, no-store');
    const origin = stateChangeOrigin(req.headers.origin, settings.allowedOrigins);
    if (!origin.allow) return void res.status(origin.status).json({ detail: origin.detail });
    if (!req.is('application/json')) return void res.status(415).json({ detail: 'Send JSON: {"tenant_id": "..."}' });
    const found = readSessionCookie(req.headers.cookie);
    const jar: SessionCookies = { setCookies: undefined, clearSiteData: false };
    const entry = found ? await store.live(found, jar) : undefined;
    applySessionCookies(res, jar);
    if (!found || !entry) return void res.status(401).json({ detail: NOT_AUTHENTICATED });
    const requested = (req.body as { tenant_id?: unknown } | undefined)?.tenant_id;
    const decision = tenantSwitch(entry.data.user.tenants, requested);
    if (!decision.allow) {
      if (decision.status === 403) obs.audit.info({ event: 'tenant-switch-denied', sub: entry.data.user.sub, tenant: requested }, 'not a member of the tenant');
      return void res.status(decision.status).json({ detail: decision.detail });
    }
    const next = await store.replace(entry, { ...entry.data, active_tenant: decision.tenant }, found.names, jar);
    if (jar.setCookies) res.setHeader('set-cookie', jar.setCookies);
    res.json(sessionBody(identityOf(next.data.user, decision.tenant, 'session')));
  });
}
