// Spec area B: the anonymous auth-providers API, the login pages and the logged-out guard.
// The rules are in policies/login-routing.ts; this module does the I/O around them:
//
//   provider catalog   gateway/login/catalog.ts: Keycloak's admin API or IDP_PROVIDERS_FILE
//                      behind one cache of IDP_CACHE_SECONDS shared by every lookup (links 4).
//   API                GET /api/v1/auth-providers/, /{alias}, /tenants/{tenant_id}
//   pages              /auth/login, /auth/login/{alias}, both also under /{locale}/ (login-pages.ts)
//   guard              where a logged-out page visit goes (links 6 to 8), in process
//
// The tenant lookup answers alike, in body shape, headers and work done, for unknown, unmapped
// and unusable tenants (links 3): every lookup first makes sure every mapped alias is resolved
// (from the cache, or one fetch per alias per cache period shared by all callers), then reads
// one entry. What a mapping costs therefore does not depend on which tenant is asked. Rule 12
// (tenant ids can be probed) is met by an optional per-client rate limit: see README "Login routing".
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type Request, type Response } from 'express';
import type { Settings } from '../../config/settings.js';
import type { Observability } from '../ops/observability.js';
import { processState, type SharedState } from '../auth/shared-state.js';
import { FileSource, KeycloakAdminSource, NoSource, ProviderCatalog, type CatalogSource } from './catalog.js';
import { sendJson as sendGatewayJson, sendJsonBody as sendGatewayJsonBody } from '../http/respond.js';
import { DIRECT_LOGIN_ALIAS, loggedOutRedirect, splitGuardPath, isUsableForLinks, buttonList, listNeedsCatalog, providerEntry, providerListResponse, safeReturnTo, type IdentityProvider } from '../../policies/login-routing.js';
import { isIdSyntax, isLocaleSegment, plausibleAlias } from '../../policies/syntax.js';
import {
  PAGE_HEADERS,
  speaksLocale,
  loginPath,
  pageLocale,
  renderCatalogDown,
  renderLinkUnavailable,
  renderProviderList,
  renderProviderPage,
  renderWelcome,
  renderSignedIn,
  renderSignInError,
  renderProblem,
  renderTenantNotMember,
  callbackError,
  startHref,
  type PageLocale,
} from './pages.js';

export interface LoginRouting {
  /** /api/v1/auth-providers/..., /auth/login..., /{locale}/auth/login... */
  router: Router;
  /**
   * Runs before the sign-in module: `/auth/start?idp=<alias>` for an alias that names no usable
   * provider gets the per-provider page's "not available" answer instead of reaching the realm.
   */
  startCheck?: Router;
  /** Where a logged-out visit of a page goes (links rules 6 to 8): a Location for a 302. */
  guard(path: string, req: IncomingMessage): Promise<string>;
  /** For /readyz: the provider catalog's state. */
  ready(): { ok: boolean; detail: string };
  /**
   * GET /api/v1/auth-providers/ itself, the same code as its route: the data plane answers it
   * without Express (every login page asks for it). Optional: without it the route answers.
   */
  providerList?(res: ServerResponse): Promise<void>;
  close(): Promise<void>;
}


export interface LoginRoutingOptions {
  /** Clock for the cache, the service-account token and the rate limit (ms). Default Date.now. */
  now?: () => number;
  /** HTTP client for Keycloak. Default: the global fetch. */
  fetch?: typeof globalThis.fetch;
  /** Time limit of one Keycloak request. Default 5000 ms. */
  timeoutMs?: number;
  /** After a failed fetch, how long the last good answer (or the failure) is served before asking again. Default 15000 ms. */
  retryMs?: number;
  /** Fill the cache at start (list unless the welcome page is on, every mapped alias). Default true. */
  warm?: boolean;
  /** Bound on cached keys (per-alias lookups take any alias). Default 10000. */
  maxEntries?: number;
  /** Keycloak requests at once while resolving the mapped aliases. Default 8. */
  concurrency?: number;
  /** Where the rate-limit counters live (Redis with REDIS_URL). Default: this process. */
  shared?: SharedState;
  /** Who is signed in on this request, if anyone: /auth/login then says so instead of offering to sign in. */
  signedIn?: (req: IncomingMessage, res: ServerResponse) => Promise<{ name: string; email: string; tenants?: string[]; activeTenant?: string | null } | undefined>;
}

export interface LoginRoutingImpl extends LoginRouting {
  catalog: ProviderCatalog;
  /** Settles when the start-up fill is done (tests wait for it before counting calls). */
  warmed: Promise<void>;
  /** The tenant lookup (links 2 and 3), as the API and the guard use it. */
  resolveTenant(tenant: string): Promise<TenantResolution>;
}

export type TenantOutcome = 'linked' | 'unmapped' | 'unusable' | 'unavailable';
export interface TenantResolution {
  alias: string | null;
  outcome: TenantOutcome;
}

/* ------------------------------------------------------------------------------------------ */
/* Rate limit (links 12)                                                                       */

/** The rate-limit key of a connection: the IPv4 address, or the /64 of an IPv6 address. */
export function clientKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t] : h;
  return `${groups
    .slice(0, 4)
    .map((g) => (g || '0').toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/* ------------------------------------------------------------------------------------------ */
/* The module                                                                                  */

const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
});

const CATALOG_DOWN = 'The identity provider catalog is not reachable';

/** Plain node:http (the provider list is also answered outside Express), with this module's headers. */
const sendJson = (res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}) => sendGatewayJson(res, status, body, { ...JSON_HEADERS, ...extra });
const sendJsonBody = (res: ServerResponse, status: number, json: Buffer) => sendGatewayJsonBody(res, status, json, JSON_HEADERS);

function sendPage(res: Response, status: number, html: string): void {
  res.status(status).set({ ...PAGE_HEADERS, 'content-length': String(Buffer.byteLength(html)) });
  res.end(res.req.method === 'HEAD' ? undefined : html);
}

function firstQuery(value: unknown): unknown {
  return Array.isArray(value) ? value[0] : value;
}

export async function createLoginRouting(settings: Settings, obs: Observability, options: LoginRoutingOptions = {}): Promise<LoginRoutingImpl> {
  const now = options.now ?? Date.now;
  const closing = new AbortController();
  const login = settings.login;
  const mappedAliases = [...new Set(login.tenantAliases.values())].sort();
  const pinnedAliases = new Set(mappedAliases);
  const concurrency = Math.max(1, options.concurrency ?? 8);

  let source: CatalogSource;
  if (settings.catalog.providersFile) source = new FileSource(settings.catalog.providersFile);
  else if (settings.catalog.adminUrl) {
    source = new KeycloakAdminSource(
      settings.catalog.adminUrl,
      settings.catalog.clientId,
      settings.catalog.clientSecret,
      options.fetch ?? globalThis.fetch,
      options.timeoutMs ?? 5_000,
      now,
      closing.signal,
    );
  } else source = new NoSource();

  const catalog = new ProviderCatalog(
    source,
    { ttlMs: login.cacheSeconds * 1000, retryMs: options.retryMs ?? 15_000, maxEntries: options.maxEntries ?? 10_000, now, pinnedAliases },
    obs,
  );
  const retryAfter = String(Math.max(1, Math.ceil((options.retryMs ?? 15_000) / 1000)));
  // Fixed window per client key (IPv6 per /64), shared by every instance through REDIS_URL; 0 is off.
  const limit = login.tenantLookupRateLimit > 0 ? (options.shared ?? processState(obs)).rateLimit('tenant-lookup', login.tenantLookupRateLimit, login.tenantLookupRateWindowSeconds) : undefined;
  const take = (client: string) => (limit ? limit.take(client) : Promise.resolve({ ok: true } as const));

  /** Every mapped alias resolved (cached, or fetched once for all callers), failures as Errors. */
  async function resolveMapped(): Promise<Map<string, IdentityProvider | null | Error>> {
    const out = new Map<string, IdentityProvider | null | Error>();
    let next = 0;
    const worker = async () => {
      while (next < mappedAliases.length) {
        const alias = mappedAliases[next++]!;
        try {
          out.set(alias, await catalog.provider(alias));
        } catch (err) {
          out.set(alias, err as Error);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, mappedAliases.length) }, worker));
    return out;
  }

  /**
   * Links 2 and 3: the mapping only, never the realm's idea of tenants; the alias only while its
   * provider is usable. The same work is done whatever the tenant (see the top of the file).
   */
  async function resolveTenant(tenant: string): Promise<TenantResolution> {
    const mapped = login.tenantAliases.get(tenant);
    const resolved = await resolveMapped();
    if (mapped === undefined) return { alias: null, outcome: 'unmapped' };
    const provider = resolved.get(mapped);
    if (provider instanceof Error) return { alias: null, outcome: 'unavailable' };
    return isUsableForLinks(provider) ? { alias: mapped, outcome: 'linked' } : { alias: null, outcome: 'unusable' };
  }

  function auditLookup(via: 'api' | 'guard', tenant: string, outcome: TenantOutcome | 'rate-limited', client: string): void {
    obs.auditAnonymous(client, { event: 'tenant-lookup', via, tenant: tenant.slice(0, 128), outcome }, 'tenant login lookup');
  }

  async function warm(): Promise<void> {
    const jobs: Promise<unknown>[] = [resolveMapped()];
    if (listNeedsCatalog(login)) jobs.push(catalog.list().catch(() => undefined));
    await Promise.all(jobs);
  }

  const router = Router();

  // GET /api/v1/auth-providers/ (B1, B2; versioning 2). With the welcome switch on, the realm is not asked.
  // Every login page asks for the list: it is rendered once per catalog answer (the cache hands out
  // the same array until it refreshes), not on every request.
  let rendered: { providers: readonly IdentityProvider[] | undefined; body: Buffer } | undefined;
  const listBody = (providers?: readonly IdentityProvider[]): Buffer => {
    if (!rendered || rendered.providers !== providers) rendered = { providers, body: Buffer.from(JSON.stringify(providerListResponse(login, providers))) };
    return rendered.body;
  };
  async function providerList(res: ServerResponse): Promise<void> {
    if (!listNeedsCatalog(login)) return sendJsonBody(res, 200, listBody());
    let providers: IdentityProvider[];
    try {
      providers = await catalog.list();
    } catch {
      return sendJson(res, 503, { detail: CATALOG_DOWN }, { 'retry-after': retryAfter });
    }
    sendJsonBody(res, 200, listBody(providers));
  }
  router.get('/api/v1/auth-providers', (_req, res) => providerList(res));

  // GET /api/v1/auth-providers/tenants/{tenant_id} (links 2, 3): always 200, one body shape,
  // the same headers whatever the outcome. Over the rate limit: 429, whatever the tenant.
  router.get('/api/v1/auth-providers/tenants/:tenant', async (req, res) => {
    const tenant = String(req.params.tenant);
    const client = clientKey(req.socket.remoteAddress);
    const allowed = await take(client);
    if (!allowed.ok) {
      auditLookup('api', tenant, 'rate-limited', client);
      return sendJson(res, 429, { detail: 'Too many requests' }, { 'retry-after': String(allowed.retryAfter) });
    }
    const { alias, outcome } = await resolveTenant(tenant);
    auditLookup('api', tenant, outcome, client);
    sendJson(res, 200, { alias });
  });

  // GET /api/v1/auth-providers/{alias} (B4): the provider while enabled and not link-only, hidden or not.
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

  /** The page's locale from `/:locale/...`, or undefined for a prefix that is no language tag. */
  const localeParam = (req: Request): PageLocale | undefined => {
    const prefix = req.params.locale === undefined ? undefined : String(req.params.locale);
    if (prefix !== undefined && !isLocaleSegment(prefix)) return undefined;
    return pageLocale(prefix, req.headers['accept-language']);
  };
  const returnToOf = (req: Request) => safeReturnTo(firstQuery(req.query.returnTo));
  const selfHref = (req: Request) => req.originalUrl.split('?')[0] + (returnToOf(req) ? `?${new URLSearchParams({ returnTo: returnToOf(req)! })}` : '');

  // /auth/login: one button per provider (B1), or the welcome page (B3).
  const loginPage = async (req: Request, res: Response, next: (err?: unknown) => void) => {
    const locale = localeParam(req);
    if (!locale) return next();
    const returnTo = returnToOf(req);
    // Signed in already: who, and a way on or out (a session that cannot be checked shows the page).
    const who = options.signedIn ? await options.signedIn(req, res).catch(() => undefined) : undefined;
    if (who) return sendPage(res, 200, renderSignedIn({ locale, returnTo, name: who.name, email: who.email }));
    if (login.welcomePage) return sendPage(res, 200, renderWelcome({ locale, returnTo, directLogin: login.showIdpLogin }));
    let providers: IdentityProvider[];
    try {
      providers = await catalog.list();
    } catch {
      return sendPage(res, 503, renderCatalogDown({ locale, returnTo, retryHref: selfHref(req) }));
    }
    sendPage(res, 200, renderProviderList({ locale, returnTo, providers: buttonList(providers), directLogin: login.showIdpLogin }));
  };

  // /auth/login/{alias}: one button, found through the per-alias lookup (links 1).
  const providerPage = async (req: Request, res: Response, next: (err?: unknown) => void) => {
    const locale = localeParam(req);
    if (!locale) return next();
    const returnTo = returnToOf(req);
    const alias = String(req.params.alias);
    let provider: IdentityProvider | null = null;
    if (plausibleAlias(alias) && alias !== DIRECT_LOGIN_ALIAS) {
      try {
        provider = await catalog.provider(alias);
      } catch {
        return sendPage(res, 503, renderCatalogDown({ locale, returnTo, retryHref: selfHref(req) }));
      }
    }
    if (!isUsableForLinks(provider)) return sendPage(res, 404, renderLinkUnavailable({ locale, returnTo }));
    sendPage(res, 200, renderProviderPage({ locale, returnTo, provider: providerEntry(provider) }));
  };

  // An unknown, disabled or link-only `idp` never goes to the realm as a hint (issue 15): the same
  // answer as its per-provider page. Without `idp` (direct login) nothing is checked.
  const startCheck = Router();
  const checkStart = async (req: Request, res: Response, next: (err?: unknown) => void) => {
    const locale = localeParam(req);
    const idp = firstQuery(req.query.idp);
    if (!locale || idp === undefined || idp === '') return next();
    const alias = String(idp);
    let provider: IdentityProvider | null = null;
    if (plausibleAlias(alias) && alias !== DIRECT_LOGIN_ALIAS) {
      try {
        provider = await catalog.provider(alias);
      } catch {
        return sendPage(res, 503, renderCatalogDown({ locale, returnTo: returnToOf(req), retryHref: req.originalUrl }));
      }
    }
    if (!isUsableForLinks(provider)) return sendPage(res, 404, renderLinkUnavailable({ locale, returnTo: returnToOf(req) }));
    next();
  };
  startCheck.get('/auth/start', checkStart);
  startCheck.get('/:locale/auth/start', checkStart);

  // `/{locale}/auth/callback` is no redirect URI (the realm only knows `$PUBLIC_URL/auth/callback`),
  // but a browser that lands there gets a page in its language, not JSON (issue 28 item 5): what
  // the realm's error means, or that this is no sign-in answer, and the way back.
  const localizedCallback = (req: Request, res: Response, next: (err?: unknown) => void) => {
    const locale = localeParam(req);
    if (!locale) return next();
    const code = callbackError(req);
    sendPage(res, 400, code ? renderSignInError({ locale, code }) : renderProblem({ locale, kind: 'sign-in-failed' }));
  };
  router.get('/:locale/auth/callback', localizedCallback);

  // Said once after signing in through a tenant's link the user is not a member of (links rules
  // 10 and 11): the sign-in lands here instead of on `returnTo` (gateway/auth/authenticator.ts).
  const tenantNotice = async (req: Request, res: Response, next: (err?: unknown) => void) => {
    const locale = localeParam(req);
    if (!locale) return next();
    const returnTo = returnToOf(req) ?? '/';
    const linked = firstQuery(req.query.link);
    const who = options.signedIn ? await options.signedIn(req, res).catch(() => undefined) : undefined;
    if (!who || typeof linked !== 'string' || !isIdSyntax(linked) || who.tenants?.includes(linked)) {
      res.set('cache-control', 'no-store');
      return void res.redirect(302, returnTo);
    }
    sendPage(res, 200, renderTenantNotMember({ locale, linked, active: who.activeTenant ?? null, continueHref: returnTo }));
  };
  router.get('/auth/signed-in', tenantNotice);
  router.get('/:locale/auth/signed-in', tenantNotice);

  router.get('/auth/login', loginPage);
  router.get('/:locale/auth/login', loginPage);
  router.get('/auth/login/:alias', providerPage);
  router.get('/:locale/auth/login/:alias', providerPage);

  /**
   * Links 6 to 8, in process: the tenant named by the path, looked up like the API does. A
   * usable link goes to /auth/start with the alias (the sign-in module answers with the 302 to
   * the realm carrying kc_idp_hint and idp_hint); redirects only, so the tenant page never
   * enters the browser history (links 7). Anything else ends on /auth/login, locale kept (links 8).
   */
  async function guard(path: string, req: IncomingMessage): Promise<string> {
    const visit = splitGuardPath(path);
    const q = req.url?.indexOf('?') ?? -1;
    const search = q >= 0 && req.url ? req.url.slice(q) : '';
    let alias: string | null = null;
    if (visit.tenant !== undefined) {
      const client = clientKey(req.socket.remoteAddress);
      if ((await take(client)).ok) {
        const found = await resolveTenant(visit.tenant);
        auditLookup('guard', visit.tenant, found.outcome, client);
        alias = found.alias;
      } else auditLookup('guard', visit.tenant, 'rate-limited', client);
    }
    // The login page's locale: a tag in front of more segments, or a lone segment that is a
    // language the pages speak (`/de`); a lone `/zzz` is a tenant candidate, not a locale.
    const lone = path.split('/').filter(Boolean);
    const loginLocale = visit.locale ?? (lone.length === 1 && isLocaleSegment(lone[0]!) && speaksLocale(lone[0]!) ? lone[0] : undefined);
    const to = loggedOutRedirect(visit, path, search, alias, loginLocale);
    if (to.to === 'tenant-provider') return startHref({ idp: to.idp, tenant: to.tenant, returnTo: to.returnTo, locale: to.locale });
    return loginPath(pageLocale(to.locale)) + (to.returnTo ? `?${new URLSearchParams({ returnTo: to.returnTo })}` : '');
  }


  const warmed = options.warm === false ? Promise.resolve() : warm().catch(() => undefined);

  function ready(): { ok: boolean; detail: string } {
    const state = catalog.health.state();
    const from = source.kind === 'keycloak' ? 'Keycloak admin API' : source.kind === 'file' ? 'IDP_PROVIDERS_FILE' : 'no source configured';
    // Asked while unhealthy: try again in the background (the cache keeps this to one fetch per retry period).
    if (state === 'stale' || state === 'unavailable') void warm().catch(() => undefined);
    switch (state) {
      case 'unknown':
        return { ok: true, detail: `identity provider catalog (${from}): not read yet` };
      case 'fresh':
        return { ok: true, detail: `identity provider catalog (${from}): fresh` };
      case 'stale': {
        const since = catalog.health.staleSince ?? catalog.health.lastFailureAt;
        return {
          ok: true,
          detail: `identity provider catalog (${from}): stale, serving the last good answer${since ? ` since ${new Date(since).toISOString()}` : ''} (${catalog.health.lastError})`,
        };
      }
      case 'unavailable':
        return { ok: false, detail: `identity provider catalog (${from}): unavailable (${catalog.health.lastError})` };
    }
  }

  return {
    router,
    startCheck,
    guard,
    ready,
    providerList,
    catalog,
    warmed,
    resolveTenant,
    async close() {
      closing.abort();
    },
  };
}
