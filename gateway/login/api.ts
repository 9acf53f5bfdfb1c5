// The anonymous auth-providers API (spec area B):
//
//   GET /api/v1/auth-providers/                      the list (B1, B2; versioning 2)
//   GET /api/v1/auth-providers/tenants/{tenant_id}   the tenant lookup (links-2, links-3, links-12)
//   GET /api/v1/auth-providers/{alias}               one provider (list-4)
//
// JSON on plain node:http: the provider list is also answered outside Express, by the data plane.
import type { ServerResponse } from 'node:http';
import { Router } from 'express';
import type { ProviderCatalog } from './catalog.js';
import type { TenantLookup } from './tenant-lookup.js';
import { clientKey } from '../http/client-key.js';
import { sendJson as sendGatewayJson, sendJsonBody as sendGatewayJsonBody } from '../http/respond.js';
import {
  DIRECT_LOGIN_ALIAS,
  isUsableForLinks,
  listNeedsCatalog,
  providerEntry,
  providerListResponse,
  type IdentityProvider,
  type ListSettings,
} from '../../policies/login-routing.js';
import { plausibleAlias } from '../../policies/syntax.js';

const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
});

const CATALOG_DOWN = 'The identity provider catalog is not reachable';

/** Plain node:http (the provider list is also answered outside Express), with this module's headers. */
const sendJson = (res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}) =>
  sendGatewayJson(res, status, body, { ...JSON_HEADERS, ...extra });
const sendJsonBody = (res: ServerResponse, status: number, json: Buffer) => sendGatewayJsonBody(res, status, json, JSON_HEADERS);

export interface ProvidersApi {
  router: Router;
  /** GET /api/v1/auth-providers/ itself, the same code as its route (the data plane answers it without Express). */
  providerList(res: ServerResponse): Promise<void>;
}

/** `retryAfter`: seconds a 503 for an unreachable catalog asks the client to wait. */
/** `login`: the live settings, read once per request. */
export function createProvidersApi(
  login: { readonly current: ListSettings },
  catalog: Pick<ProviderCatalog, 'list' | 'provider'>,
  lookup: Pick<TenantLookup, 'take' | 'resolveTenant' | 'audit'>,
  retryAfter: string,
): ProvidersApi {
  const router = Router();

  // GET /api/v1/auth-providers/ (B1, B2; versioning 2). With the welcome switch on, the realm is not asked.
  // Every login page asks for the list: it is rendered once per catalog answer (the cache hands out
  // the same array until it refreshes), not on every request.
  // (and once per applied policy)
  let rendered: { providers: readonly IdentityProvider[] | undefined; list: ListSettings; body: Buffer } | undefined;
  const listBody = (list: ListSettings, providers?: readonly IdentityProvider[]): Buffer => {
    if (!rendered || rendered.providers !== providers || rendered.list !== list)
      rendered = { providers, list, body: Buffer.from(JSON.stringify(providerListResponse(list, providers))) };
    return rendered.body;
  };
  async function providerList(res: ServerResponse): Promise<void> {
    const list = login.current;
    if (!listNeedsCatalog(list)) return sendJsonBody(res, 200, listBody(list));
    let providers: IdentityProvider[];
    try {
      providers = await catalog.list();
    } catch {
      return sendJson(res, 503, { detail: CATALOG_DOWN }, { 'retry-after': retryAfter });
    }
    sendJsonBody(res, 200, listBody(list, providers));
  }
  router.get('/api/v1/auth-providers', (_req, res) => providerList(res));

  // GET /api/v1/auth-providers/tenants/{tenant_id} (links-2, links-3): always 200, one body shape,
  // the same headers whatever the outcome. Over the rate limit: 429, whatever the tenant.
  router.get('/api/v1/auth-providers/tenants/:tenant', async (req, res) => {
    const tenant = String(req.params.tenant);
    const client = clientKey(req.socket.remoteAddress);
    const allowed = await lookup.take(client);
    if (!allowed.ok) {
      lookup.audit('api', tenant, 'rate-limited', client);
      return sendJson(res, 429, { detail: 'Too many requests' }, { 'retry-after': String(allowed.retryAfter) });
    }
    const { alias, outcome } = await lookup.resolveTenant(tenant);
    lookup.audit('api', tenant, outcome, client);
    sendJson(res, 200, { alias });
  });

  // GET /api/v1/auth-providers/{alias} (list-4): the provider while enabled and not link-only, hidden or not.
  router.get('/api/v1/auth-providers/:alias', async (req, res) => {
    const alias = String(req.params.alias);
    // `direct-login` is SHOW_IDP_LOGIN's synthetic entry, not a realm provider: nothing to link to.
    if (!plausibleAlias(alias) || alias === DIRECT_LOGIN_ALIAS) return sendJson(res, 200, null);
    let provider: IdentityProvider | null;
    try {
      provider = await catalog.provider(alias);
    } catch {
      return sendJson(res, 503, { detail: CATALOG_DOWN }, { 'retry-after': retryAfter });
    }
    sendJson(res, 200, isUsableForLinks(provider) ? providerEntry(provider) : null);
  });

  return { router, providerList };
}
