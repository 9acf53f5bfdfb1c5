// The identity-provider catalog behind the login pages and the tenant lookup (spec area B, links
// 4): Keycloak's admin API (service-account token, paged full representations) or
// IDP_PROVIDERS_FILE, behind one cache of IDP_CACHE_SECONDS shared by the list, the per-alias
// lookup and, through it, the tenant lookup. One request in flight per key; when the source fails,
// the last good answer is served at once and the source retried in the background (readiness
// says `stale`). gateway/login/api.ts, page-routes.ts and tenant-lookup.ts read it (put together in routes.ts).
import { readFile, stat } from 'node:fs/promises';
import type { Observability } from '../observability/observability.js';
import { LoadingCache } from '../cache/cache.js';
import * as oidc from 'openid-client';
import { noAnswer, tokenUrlFor } from '../auth/realm.js';
import type { IdentityProvider } from '../../policies/login-routing.js';
import { z } from 'zod';
import { parseJson } from '../upstream/json.js';

/** The catalog could not be read and there is no earlier answer. */
class CatalogUnavailableError extends Error {
  override name = 'CatalogUnavailableError';
}

/* ------------------------------------------------------------------------------------------ */
/* Sources                                                                                     */

export interface CatalogSource {
  readonly kind: 'keycloak' | 'file' | 'none';
  /** Every identity provider of the realm, full representations. */
  list(): Promise<IdentityProvider[]>;
  /** One provider by alias; null when absent (404). */
  get(alias: string): Promise<IdentityProvider | null>;
}

// What the gateway reads of Keycloak's answers and of IDP_PROVIDERS_FILE, checked with zod in the
// one way every peer's JSON is (gateway/upstream/json.ts): anything else fails closed (the catalog
// is unavailable; the last good answer is served).
/** An identity provider representation: its alias, and a config that is a map when present. */
const ProviderRepresentation = z.looseObject({ alias: z.string(), config: z.record(z.string(), z.unknown()).optional() });
const ProviderList = z.array(ProviderRepresentation);

/** `text` as JSON of `schema`'s shape, or the catalog is unavailable. */
function read<T>(schema: z.ZodType<T>, text: string, where: string): T {
  const r = parseJson(schema, text);
  if (!r.ok) throw new CatalogUnavailableError(`${where}: answer is ${r.why}`);
  return r.value;
}

/** Why the service-account token could not be had, in the words the catalog's readiness shows. */
function tokenFailure(err: unknown, timeoutMs: number): CatalogUnavailableError {
  const e = err as Error & { code?: unknown };
  const status =
    err instanceof oidc.ResponseBodyError || err instanceof oidc.WWWAuthenticateChallengeError
      ? err.status
      : err instanceof oidc.ClientError && err.cause instanceof Response
        ? err.cause.status
        : undefined;
  if (status !== undefined) return new CatalogUnavailableError(`service-account token refused: HTTP ${status}`);
  const none = noAnswer(err);
  if (none === 'timeout') return new CatalogUnavailableError(`Keycloak request failed: no answer within ${timeoutMs} ms`);
  if (none) return new CatalogUnavailableError(`Keycloak request failed: ${e.message}`);
  return new CatalogUnavailableError(`service-account token: answer is ${e.message}`);
}

/** A listener that keeps a timeout signal alive until it fires (KeycloakAdminSource.signal). */
const keepTimeout = () => undefined;

const PAGE_SIZE = 100;
const MAX_PAGES = 1000;

/**
 * Keycloak's Admin REST API with a service account (view-identity-providers): a client-credentials
 * token (client id and secret in HTTP Basic) reused until 30 s before it expires; the list paged
 * with first/max (recent versions cap an unset max at 100) in the full representation.
 */
export class KeycloakAdminSource implements CatalogSource {
  readonly kind = 'keycloak' as const;
  private token: { value: string; reuseUntil: number } | undefined;
  private tokenInflight: Promise<string> | undefined;
  /** The service account as an openid-client of the realm's token endpoint (client_secret_basic). */
  private readonly tokenClient: oidc.Configuration;

  constructor(
    private readonly adminUrl: string,
    private readonly clientId: string,
    private readonly clientSecret: string,
    private readonly http: typeof globalThis.fetch,
    private readonly timeoutMs: number,
    private readonly now: () => number,
    private readonly closing: AbortSignal,
  ) {
    this.adminUrl = adminUrl.replace(/\/+$/, '');
    const tokenUrl = tokenUrlFor(this.adminUrl);
    // No discovery: the token endpoint is all it needs, and Keycloak's layout names it.
    this.tokenClient = new oidc.Configuration(
      { issuer: tokenUrl.replace(/\/protocol\/openid-connect\/token$/, ''), token_endpoint: tokenUrl },
      clientId,
      undefined,
      oidc.ClientSecretBasic(clientSecret),
    );
    if (tokenUrl.startsWith('http:')) oidc.allowInsecureRequests(this.tokenClient);
    // Through this source's own fetch, timeout and shutdown signal, like its admin API requests.
    this.tokenClient[oidc.customFetch] = (url, options) => this.http(url, { ...(options as RequestInit), redirect: 'error', signal: this.signal() });
  }

  /**
   * Its timeout or the shutdown. The timeout gets a listener of its own: Node 20 keeps a timeout
   * signal alive only while something listens to it, AbortSignal.any listens weakly, and a GC
   * during the wait lost the timeout: a hung Keycloak held the request for ever.
   */
  private signal(): AbortSignal {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    timeout.addEventListener('abort', keepTimeout, { once: true });
    return AbortSignal.any([timeout, this.closing]);
  }

  private async request(url: string, init: RequestInit): Promise<globalThis.Response> {
    try {
      return await this.http(url, { ...init, redirect: 'error', signal: this.signal() });
    } catch (err) {
      const e = err as Error;
      const why = e.name === 'TimeoutError' ? `no answer within ${this.timeoutMs} ms` : e.message;
      throw new CatalogUnavailableError(`Keycloak request failed: ${why}`);
    }
  }

  private async json<T>(res: globalThis.Response, what: string, schema: z.ZodType<T>): Promise<T> {
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw new CatalogUnavailableError(`${what}: body not read (${(err as Error).message})`);
    }
    return read(schema, text, what);
  }

  private async fetchToken(): Promise<string> {
    const started = this.now();
    // openid-client checks the answer (a 200 with an access_token and its token_type).
    let body: { access_token: string; expires_in?: number };
    try {
      body = await oidc.clientCredentialsGrant(this.tokenClient);
    } catch (err) {
      throw tokenFailure(err, this.timeoutMs);
    }
    const lifetime = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in * 1000 : 60_000;
    // Reuse until 30 s before expiry (or half the lifetime of a very short token).
    this.token = { value: body.access_token, reuseUntil: started + lifetime - Math.min(30_000, lifetime / 2) };
    return body.access_token;
  }

  private accessToken(): Promise<string> {
    if (this.token && this.now() < this.token.reuseUntil) return Promise.resolve(this.token.value);
    this.tokenInflight ??= this.fetchToken().finally(() => {
      this.tokenInflight = undefined;
    });
    return this.tokenInflight;
  }

  /** GET under the admin URL; a 401 (token revoked or expired early) gets one new token and one retry. */
  private async adminGet(path: string): Promise<globalThis.Response> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.accessToken();
      const res = await this.request(`${this.adminUrl}${path}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
      if (res.status === 401 && attempt === 0) {
        await res.body?.cancel().catch(() => {});
        if (this.token?.value === token) this.token = undefined;
        continue;
      }
      return res;
    }
  }

  async list(): Promise<IdentityProvider[]> {
    const all: IdentityProvider[] = [];
    for (let page = 0; page < MAX_PAGES; page++) {
      const first = page * PAGE_SIZE;
      const res = await this.adminGet(`/identity-provider/instances?first=${first}&max=${PAGE_SIZE}&briefRepresentation=false`);
      if (!res.ok) {
        await res.body?.cancel().catch(() => {});
        throw new CatalogUnavailableError(`identity provider list: HTTP ${res.status}`);
      }
      const batch = (await this.json(res, 'identity provider list', ProviderList)) as IdentityProvider[];
      all.push(...batch);
      if (batch.length < PAGE_SIZE) return all;
    }
    throw new CatalogUnavailableError(`identity provider list: more than ${MAX_PAGES * PAGE_SIZE} providers`);
  }

  async get(alias: string): Promise<IdentityProvider | null> {
    const res = await this.adminGet(`/identity-provider/instances/${encodeURIComponent(alias)}`);
    if (res.status === 404) {
      await res.body?.cancel().catch(() => {});
      return null;
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      throw new CatalogUnavailableError(`identity provider ${JSON.stringify(alias)}: HTTP ${res.status}`);
    }
    const p = (await this.json(res, `identity provider ${JSON.stringify(alias)}`, ProviderRepresentation)) as IdentityProvider;
    return p.alias === alias ? p : null;
  }
}

/** IDP_PROVIDERS_FILE: a JSON array of the same representations, re-read when it changes. */
export class FileSource implements CatalogSource {
  readonly kind = 'file' as const;
  private loaded: { stamp: string; providers: IdentityProvider[] } | undefined;

  constructor(private readonly path: string) {}

  private async load(): Promise<IdentityProvider[]> {
    let stamp: string;
    try {
      const s = await stat(this.path);
      stamp = `${s.mtimeMs}:${s.size}:${s.ino}`;
    } catch (err) {
      throw new CatalogUnavailableError(`IDP_PROVIDERS_FILE: ${(err as Error).message}`);
    }
    if (this.loaded?.stamp === stamp) return this.loaded.providers;
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      throw new CatalogUnavailableError(`IDP_PROVIDERS_FILE: ${(err as Error).message}`);
    }
    const providers = read(ProviderList, text, 'IDP_PROVIDERS_FILE') as IdentityProvider[];
    this.loaded = { stamp, providers };
    return providers;
  }

  list(): Promise<IdentityProvider[]> {
    return this.load();
  }

  async get(alias: string): Promise<IdentityProvider | null> {
    return (await this.load()).find((p) => p.alias === alias) ?? null;
  }
}

/** Neither IDP_PROVIDERS_FILE nor an admin URL: an empty realm. */
export class NoSource implements CatalogSource {
  readonly kind = 'none' as const;
  async list(): Promise<IdentityProvider[]> {
    return [];
  }
  async get(): Promise<IdentityProvider | null> {
    return null;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* The cache                                                                                   */

type CatalogState = 'unknown' | 'fresh' | 'stale' | 'unavailable';

/** What readiness reports: has the source answered, and is an old answer being served? */
class CatalogHealth {
  lastSuccessAt: number | undefined;
  lastFailureAt: number | undefined;
  lastError: string | undefined;
  private readonly staleKeys = new Set<string>();
  staleSince: number | undefined;

  constructor(private readonly now: () => number) {}

  success(key: string): void {
    this.lastSuccessAt = this.now();
    this.staleKeys.delete(key);
    if (this.staleKeys.size === 0) this.staleSince = undefined;
  }

  failure(key: string, err: Error, servingStale: boolean): void {
    this.lastFailureAt = this.now();
    this.lastError = err.message;
    if (servingStale) {
      this.staleKeys.add(key);
      this.staleSince ??= this.now();
    }
  }

  state(): CatalogState {
    if (this.lastSuccessAt === undefined) return this.lastFailureAt === undefined ? 'unknown' : 'unavailable';
    if (this.staleKeys.size > 0 || (this.lastFailureAt !== undefined && this.lastFailureAt >= this.lastSuccessAt)) return 'stale';
    return 'fresh';
  }
}

const LIST_KEY = 'list';
const aliasKey = (alias: string) => `alias:${alias}`;

/** The identity provider catalog behind the one cache. */
export class ProviderCatalog {
  readonly health: CatalogHealth;
  private readonly cache: LoadingCache<IdentityProvider[] | IdentityProvider | null>;

  constructor(
    readonly source: CatalogSource,
    o: { ttlMs: number; retryMs: number; maxEntries: number; now: () => number; pinnedAliases: Pick<ReadonlySet<string>, 'has'> },
    obs: Observability,
  ) {
    this.health = new CatalogHealth(o.now);
    const health = this.health;
    this.cache = new LoadingCache({
      ...o,
      onLookup: (key, result) => obs.metrics.cache.tally(key === LIST_KEY ? 'idp-list' : 'idp-alias', result),
      onLoaded: (key) => health.success(key),
      onFailed: (key, err, servingStale) => {
        health.failure(key, err, servingStale);
        obs.log.warn(
          { source: source.kind, key, err: { message: err.message }, serving: servingStale ? 'last good answer' : 'nothing' },
          'identity provider catalog could not be read',
        );
      },
      pinned: (key) => key === LIST_KEY || (key.startsWith('alias:') && o.pinnedAliases.has(key.slice(6))),
    });
  }

  /** Every provider of the realm (the button list filters them, B1 and B5). */
  list(): Promise<IdentityProvider[]> {
    return this.cache.get(LIST_KEY, () => this.source.list()) as Promise<IdentityProvider[]>;
  }

  /** One provider by alias, hidden or not (list-4); null when the realm has no such alias. */
  provider(alias: string): Promise<IdentityProvider | null> {
    return this.cache.get(aliasKey(alias), () => this.source.get(alias)) as Promise<IdentityProvider | null>;
  }

  /** No request to the source in flight. */
  idle(): boolean {
    return this.cache.idle();
  }
}
