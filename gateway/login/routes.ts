// Spec area B, put together: the anonymous auth-providers API, the login pages and the logged-out
// guard, over one provider catalog. The rules are in policies/login-routing.ts; each concern is its
// own module and receives only the settings it reads.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router } from 'express';
import type { Settings } from '../../config/settings.js';
import type { Policy } from '../../config/policy.js';
import type { Observability } from '../observability/observability.js';
import type { SharedState } from '../state/shared-state.js';
import { processState } from '../state/process-state.js';
import { FileSource, KeycloakAdminSource, NoSource, ProviderCatalog, type CatalogSource } from './catalog.js';
import { listNeedsCatalog } from '../../policies/login-routing.js';
import { createTenantLookup, type TenantResolution } from './tenant-lookup.js';
import { createProvidersApi } from './api.js';
import { createLoginPageRoutes, type SignedIn } from './page-routes.js';
import { createGuard } from './guard.js';

export interface LoginRouting {
  /** /api/v1/auth-providers/..., /auth/login..., /{locale}/auth/login... */
  router: Router;
  /**
   * Runs before the sign-in module: `/auth/start?idp=<alias>` for an alias that names no usable
   * provider gets the per-provider page's "not available" answer instead of reaching the realm.
   */
  startCheck?: Router;
  /** Where a logged-out visit of a page goes (links-6 to links-8): a Location for a 302. */
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
  signedIn?: SignedIn;
}

export interface LoginRoutingImpl extends LoginRouting {
  catalog: ProviderCatalog;
  /** Settles when the start-up fill is done (tests wait for it before counting calls). */
  warmed: Promise<void>;
  /** The tenant lookup (links-2 and links-3), as the API and the guard use it. */
  resolveTenant(tenant: string): Promise<TenantResolution>;
}

/** Where the provider catalog reads from: IDP_PROVIDERS_FILE, else Keycloak's admin API, else nothing. */
function catalogSource(catalog: Settings['catalog'], options: LoginRoutingOptions, now: () => number, signal: AbortSignal): CatalogSource {
  if (catalog.providersFile) return new FileSource(catalog.providersFile);
  if (catalog.adminUrl)
    return new KeycloakAdminSource(
      catalog.adminUrl,
      catalog.clientId,
      catalog.clientSecret,
      options.fetch ?? globalThis.fetch,
      options.timeoutMs ?? 5_000,
      now,
      signal,
    );
  return new NoSource();
}

/** The live settings login routing reads: once per request, the policy in force when it began. */
export type LoginPolicy = { readonly current: Pick<Policy, 'welcomePage' | 'showIdpLogin' | 'tenantAliases'> };

export async function createLoginRouting(
  settings: Pick<Settings, 'login' | 'catalog'>,
  policy: LoginPolicy,
  obs: Observability,
  options: LoginRoutingOptions = {},
): Promise<LoginRoutingImpl> {
  const now = options.now ?? Date.now;
  const closing = new AbortController();
  const login = settings.login;
  const source = catalogSource(settings.catalog, options, now, closing.signal);
  // the aliases of the tenant links in force are kept in the cache whatever its bound
  const pinnedAliases = { has: (alias: string) => lookup.mappedAliases().includes(alias) };
  const catalog = new ProviderCatalog(
    source,
    { ttlMs: login.cacheSeconds * 1000, retryMs: options.retryMs ?? 15_000, maxEntries: options.maxEntries ?? 10_000, now, pinnedAliases },
    obs,
  );
  const retryAfter = String(Math.max(1, Math.ceil((options.retryMs ?? 15_000) / 1000)));
  const lookup = createTenantLookup(login, policy, catalog, options.shared ?? processState(obs), obs, options.concurrency ?? 8);
  const api = createProvidersApi(policy, catalog, lookup, retryAfter);
  const pages = createLoginPageRoutes(policy, catalog, options.signedIn);

  const router = Router();
  router.use(api.router);
  router.use(pages.router);

  async function warm(): Promise<void> {
    const jobs: Promise<unknown>[] = [lookup.resolveMapped()];
    if (listNeedsCatalog(policy.current)) jobs.push(catalog.list().catch(() => undefined));
    await Promise.all(jobs);
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
    startCheck: pages.startCheck,
    guard: createGuard(lookup),
    ready,
    providerList: api.providerList,
    catalog,
    warmed,
    resolveTenant: lookup.resolveTenant,
    async close() {
      closing.abort();
    },
  };
}
