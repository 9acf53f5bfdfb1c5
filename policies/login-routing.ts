// Spec area B, the rules without I/O: which identity providers a visitor is offered, what the
// provider list answers, and which tenant a logged-out page visit names.
//
// "B<n>" below is "Rules: provider list and welcome page", rule n; "links <n>" is "Rules:
// per-provider and per-tenant login links", rule n (docs/policies.md, "Rule ids").
// The I/O (Keycloak, cache, HTTP, pages) lives in gateway/login/ (routes.ts puts it together); the grammar of tenant
// ids, aliases and locale prefixes in policies/syntax.ts.
import { isIdSyntax, isLocaleSegment } from './syntax.js';
import { classify } from './routes.js';

/** The parts of a Keycloak IdentityProviderRepresentation (full form) the rules read. */
export interface IdentityProvider {
  alias: string;
  displayName?: string;
  enabled?: boolean;
  linkOnly?: boolean;
  /** Keycloak 26+: the hide flag, top level. */
  hideOnLogin?: boolean;
  /** Before 26 the hide flag was `config.hideOnLoginPage: "true"`. */
  config?: Record<string, string>;
  [k: string]: unknown;
}

/** What the API hands out about a provider: the contract's `{"alias", "display_name"}`. */
export interface ProviderEntry {
  alias: string;
  display_name: string;
}

export interface ProviderListResponse {
  welcome_page: boolean;
  providers: ProviderEntry[];
}

export interface ListSettings {
  /** IDP_LOGIN_WELCOME_PAGE */
  welcomePage: boolean;
  /** SHOW_IDP_LOGIN */
  showIdpLogin: boolean;
}

/** SHOW_IDP_LOGIN's synthetic entry: sign in at the realm itself (username and password). */
export const DIRECT_LOGIN_ALIAS = 'direct-login';
const DIRECT_LOGIN_ENTRY: ProviderEntry = Object.freeze({ alias: DIRECT_LOGIN_ALIAS, display_name: 'Administrator login' });

/**
 * Usable for login links (per-alias lookup, B4; tenant lookup, links-3): enabled and not
 * link-only. A link-only alias in `kc_idp_hint` ends on a Keycloak error page, a disabled one on
 * the generic login page, so neither may be offered. The hide flag does not matter here (list-5).
 */
export function isUsableForLinks(p: IdentityProvider | null | undefined): p is IdentityProvider {
  return !!p && p.enabled === true && p.linkOnly !== true;
}

/**
 * Hidden on the login page (list-5): the pre-26 key `config.hideOnLoginPage` as the spec says, and
 * Keycloak 26's top-level `hideOnLogin` (26.0.0 moves the key there and deletes the config
 * key), so a hidden provider stays hidden whichever version the realm runs.
 */
export function isHiddenOnLoginPage(p: IdentityProvider): boolean {
  return p.hideOnLogin === true || p.config?.hideOnLoginPage === 'true';
}

/** The entry the API prints; the display name falls back to the alias, as Keycloak's page does. */
export function providerEntry(p: IdentityProvider): ProviderEntry {
  const name = typeof p.displayName === 'string' ? p.displayName.trim() : '';
  return { alias: p.alias, display_name: name || p.alias };
}

function guiOrder(p: IdentityProvider): number {
  const n = Number(p.config?.guiOrder);
  return p.config?.guiOrder !== undefined && p.config.guiOrder.trim() !== '' && Number.isFinite(n) ? n : Number.POSITIVE_INFINITY;
}

/**
 * The button list of the generic login page (list-1): enabled, not link-only, not hidden (list-5).
 * Ordered like Keycloak's own login page: by `config.guiOrder`, then as the realm lists them.
 * The synthetic direct-login alias is reserved: a realm provider of that name is left out.
 */
export function buttonList(providers: readonly IdentityProvider[]): ProviderEntry[] {
  return providers
    .map((p, i) => ({ p, i }))
    .filter(({ p }) => isUsableForLinks(p) && !isHiddenOnLoginPage(p) && p.alias !== DIRECT_LOGIN_ALIAS)
    .sort((a, b) => guiOrder(a.p) - guiOrder(b.p) || a.i - b.i)
    .map(({ p }) => providerEntry(p));
}

/**
 * GET /api/v1/auth-providers/ (versioning 2: an object, no longer a bare list).
 * - Switch off (list-1): welcome_page false and the button list. `providers` is needed.
 * - Switch on (list-2): welcome_page true; providers holds at most the direct-login entry. The
 *   identity provider server is not queried: call this without `providers`.
 * SHOW_IDP_LOGIN adds the synthetic direct-login entry in both cases (contract: "add the
 * synthetic direct-login entry"); with the switch on it is the only possible entry.
 */
export function providerListResponse(settings: ListSettings, providers?: readonly IdentityProvider[]): ProviderListResponse {
  const direct = settings.showIdpLogin ? [{ ...DIRECT_LOGIN_ENTRY }] : [];
  if (settings.welcomePage) return { welcome_page: true, providers: direct };
  if (!providers) throw new Error('providerListResponse: the provider list is needed while the welcome page is off');
  return { welcome_page: false, providers: [...buttonList(providers), ...direct] };
}

/** Does the list need the identity provider server? Not with the welcome switch on (list-2). */
export function listNeedsCatalog(settings: ListSettings): boolean {
  return !settings.welcomePage;
}

/** How a logged-out page visit reads: optional locale, then the tenant candidate, then the rest. */
export interface GuardPath {
  /** A language tag in front of more segments: `/de/acme` gives `de`. */
  locale?: string;
  /** The tenant the path names, if its first segment (after the locale) can be a tenant id. */
  tenant?: string;
  /** What follows the tenant segment, as a path (`/acme/c/1` gives `/c/1`; nothing gives `/`). */
  rest: string;
}

/**
 * Links 6: the first path segment after an optional locale names the tenant. `/acme/chat` and
 * `/de/acme` give `acme`. A lone segment is the tenant even when it looks like a language tag
 * (`/ibm`): nothing follows it that could be. Paths under /auth/ name none ("outside /auth/"),
 * nor does a segment that cannot be a tenant id (ID_SYNTAX).
 */
export function splitGuardPath(path: string): GuardPath {
  const segments = path.split('/').filter((s) => s !== '');
  const trailing = path.length > 1 && path.endsWith('/');
  let i = 0;
  let locale: string | undefined;
  if (segments.length > 1 && isLocaleSegment(segments[0]!)) {
    locale = segments[0]!;
    i = 1;
  }
  const candidate = segments[i];
  const restSegments = segments.slice(i + 1);
  const rest = restSegments.length ? `/${restSegments.join('/')}${trailing ? '/' : ''}` : '/';
  if (candidate === undefined || candidate === 'auth' || segments[0] === 'auth') return { locale, rest };
  let tenant: string;
  try {
    tenant = decodeURIComponent(candidate);
  } catch {
    return { locale, rest };
  }
  return isIdSyntax(tenant) ? { locale, tenant, rest } : { locale, rest };
}

/** What the tenant lookup found (links-2 and links-3); the API answers all but `linked` alike. */
export type TenantOutcome = 'linked' | 'unmapped' | 'unusable' | 'unavailable';
export interface TenantResolution {
  alias: string | null;
  outcome: TenantOutcome;
}

/**
 * Links 2 and 3, the decision: `mapped` is the tenant's alias in IDP_TENANT_IDP_ALIASES (undefined:
 * not mapped), `provider` what the catalog said of it (an Error: it could not be asked). The alias
 * only while its provider is usable for links; never the realm's idea of which tenants exist.
 */
export function tenantOutcome(mapped: string | undefined, provider: IdentityProvider | null | Error | undefined): TenantResolution {
  if (mapped === undefined) return { alias: null, outcome: 'unmapped' };
  if (provider instanceof Error) return { alias: null, outcome: 'unavailable' };
  return isUsableForLinks(provider) ? { alias: mapped, outcome: 'linked' } : { alias: null, outcome: 'unusable' };
}

/**
 * The login page's locale for a logged-out visit: a tag in front of more segments
 * (`visit.locale`), or a lone segment that is a language the pages speak (`/de`); a lone `/zzz`
 * is a tenant candidate, not a locale. `speaks` says which tags the pages have text for.
 */
export function guardLoginLocale(visit: GuardPath, path: string, speaks: (tag: string) => boolean): string | undefined {
  if (visit.locale !== undefined) return visit.locale;
  const lone = path.split('/').filter(Boolean);
  return lone.length === 1 && isLocaleSegment(lone[0]!) && speaks(lone[0]!) ? lone[0] : undefined;
}

/** Where a logged-out page visit goes (links-6 to links-8). */
export type LoggedOutRedirect =
  { to: 'login'; locale?: string; returnTo?: string } | { to: 'tenant-provider'; idp: string; tenant: string; locale?: string; returnTo: string };

/**
 * Links 6 to 8, the decision. A visit that names a tenant whose provider is usable for links goes
 * straight to that provider's sign-in, and comes back to what follows the tenant segment (the
 * chat follows the active tenant, not the URL: links-10). Anything else goes to the login page,
 * in `loginLocale`, with the visited page to come back to (links-8). `alias` is the tenant's
 * provider as the lookup found it: null when there is none usable, the lookup failed or was
 * refused (rate limit), or the visit names no tenant.
 */
export function loggedOutRedirect(visit: GuardPath, path: string, search: string, alias: string | null, loginLocale: string | undefined): LoggedOutRedirect {
  if (visit.tenant === undefined || alias === null) {
    const returnTo = path === '/' ? undefined : safeReturnTo(path + search);
    return { to: 'login', ...(loginLocale ? { locale: loginLocale } : {}), ...(returnTo ? { returnTo } : {}) };
  }
  return {
    to: 'tenant-provider',
    idp: alias,
    tenant: visit.tenant,
    ...(visit.locale ? { locale: visit.locale } : {}),
    returnTo: safeReturnTo(visit.rest + search) ?? '/',
  };
}

/**
 * A `returnTo` that stays on this site: a path starting with one `/`, no backslash, no control
 * characters, bounded. Anything else is dropped (open-redirect guard).
 */
export function safeReturnTo(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) return undefined;
  if (value[0] !== '/' || value[1] === '/' || value[1] === '\\') return undefined;
  // eslint-disable-next-line no-control-regex
  if (/[\\\u0000-\u0020\u007f]/.test(value)) return undefined;
  // What a URL parser makes of it must stay on this origin and not turn into `//host`.
  const base = 'http://gateway.invalid';
  const u = new URL(value, base);
  const local = u.pathname + u.search + u.hash;
  return u.origin === base && !local.startsWith('//') ? local : undefined;
}

/**
 * Open WebUI's own sign-in page, `/auth?redirect=<path>` (its front-end goes there after its own
 * sign-out, or when it holds no token, and Back leads there), is the gateway's to answer: everyone
 * signs in at the gateway. Where that sign-in should return: Open WebUI's `redirect` when it is a
 * safe address on this site (safeReturnTo) other than the home page and other than one of the
 * gateway's own routes (a sign-in page returning to a sign-in page would go round).
 */
export function frontEndSignInReturnTo(redirect: unknown): string | undefined {
  const to = safeReturnTo(redirect);
  if (to === undefined || to === '/') return undefined;
  return classify(new URL(to, 'http://gateway.invalid').pathname) === 'control' ? undefined : to;
}
