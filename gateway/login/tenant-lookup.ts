// The tenant lookup (links-2, links-3) with its per-client rate limit (links-12) and audit line; the
// decision is policies/login-routing.ts's. It answers alike, in body, headers and work done, for
// unknown, unmapped and unusable tenants, so what a mapping costs does not tell which tenant exists.
import type { Settings } from '../../config/settings.js';
import type { Policy } from '../../config/policy.js';
import type { Observability } from '../observability/observability.js';
import type { SharedState } from '../state/shared-state.js';
import type { ProviderCatalog } from './catalog.js';
import { tenantOutcome, type IdentityProvider, type TenantOutcome, type TenantResolution } from '../../policies/login-routing.js';

export type { TenantOutcome, TenantResolution };

/** The settings the lookup reads. */
export type TenantLookupSettings = Pick<Settings['login'], 'tenantLookupRateLimit' | 'tenantLookupRateWindowSeconds'>;

/** IDP_TENANT_IDP_ALIASES, live: read once per lookup. */
export type TenantLinks = { readonly current: Pick<Policy, 'tenantAliases'> };

export interface TenantLookup {
  /** The aliases IDP_TENANT_IDP_ALIASES maps to now, sorted (the catalog pins them). */
  mappedAliases(): readonly string[];
  /** Every mapped alias resolved (cached, or fetched once for all callers), failures as Errors. */
  resolveMapped(): Promise<Map<string, IdentityProvider | null | Error>>;
  /** Links 2 and 3: the same work whatever the tenant. */
  resolveTenant(tenant: string): Promise<TenantResolution>;
  /** One request of `client` against the rate limit (always allowed with the limit off). */
  take(client: string): Promise<{ ok: true } | { ok: false; retryAfter: number }>;
  audit(via: 'api' | 'guard', tenant: string, outcome: TenantOutcome | 'rate-limited', client: string): void;
}

export function createTenantLookup(
  login: TenantLookupSettings,
  links: TenantLinks,
  catalog: Pick<ProviderCatalog, 'provider'>,
  shared: SharedState,
  obs: Pick<Observability, 'auditAnonymous'>,
  concurrency: number,
): TenantLookup {
  // recomputed only when another mapping is applied (each policy holds its own map)
  let memo: { of: ReadonlyMap<string, string>; aliases: readonly string[] } | undefined;
  const mappedAliasesOf = (aliases: ReadonlyMap<string, string>): readonly string[] => {
    if (memo?.of !== aliases) memo = { of: aliases, aliases: [...new Set(aliases.values())].sort() };
    return memo.aliases;
  };
  // Fixed window per client key (IPv6 per /64), shared by every instance through REDIS_URL; 0 is off.
  const limit =
    login.tenantLookupRateLimit > 0 ? shared.rateLimit('tenant-lookup', login.tenantLookupRateLimit, login.tenantLookupRateWindowSeconds) : undefined;

  async function resolveMapped(aliases = links.current.tenantAliases): Promise<Map<string, IdentityProvider | null | Error>> {
    const out = new Map<string, IdentityProvider | null | Error>();
    const mappedAliases = mappedAliasesOf(aliases);
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
    await Promise.all(Array.from({ length: Math.min(Math.max(1, concurrency), mappedAliases.length) }, worker));
    return out;
  }

  async function resolveTenant(tenant: string): Promise<TenantResolution> {
    // one mapping from start to end, whatever is applied meanwhile
    const aliases = links.current.tenantAliases;
    const mapped = aliases.get(tenant);
    const resolved = await resolveMapped(aliases);
    return tenantOutcome(mapped, mapped === undefined ? undefined : resolved.get(mapped));
  }

  return {
    mappedAliases: () => mappedAliasesOf(links.current.tenantAliases),
    resolveMapped: () => resolveMapped(),
    resolveTenant,
    take: (client) => (limit ? limit.take(client) : Promise.resolve({ ok: true } as const)),
    audit(via, tenant, outcome, client) {
      obs.auditAnonymous(client, { event: 'tenant-lookup', via, tenant: tenant.slice(0, 128), outcome }, 'tenant login lookup');
    },
  };
}
