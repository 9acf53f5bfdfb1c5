// The realm's OpenID Provider for tests and the sandbox: the real `oidc-provider` package, run
// in-process and dressed up like a Keycloak realm (issuer, endpoint paths, claims and JWT access
// tokens as Keycloak's), so the gateway's flows are tested against a real OIDC implementation without
// a JVM (docs/development.md, "The stand-ins").
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { SignJWT, jwtVerify } from 'jose';
import type { default as ProviderT, Adapter, AdapterPayload, Configuration, JWK, KoaContextWithOIDC } from 'oidc-provider';
import { demoAccounts, findDemoAccount, type DemoAccount } from './demo-realm.js';
import { loopbackListener } from './listener.js';
import { esc, loginPage, page } from './idp-pages.js';

export interface IdpClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
  post_logout_redirect_uris?: string[];
  /** OIDC Back-Channel Logout: where logout tokens are posted (Keycloak's "Backchannel logout URL") */
  backchannel_logout_uri?: string;
  /** the client its access tokens are meant for (`aud`), as Keycloak's audience mapper names one; default: itself */
  audience?: string;
}

export interface IdpOptions {
  /** 0 (default): any free port. */
  port?: number;
  /** Default: demoAccounts. */
  accounts?: DemoAccount[];
  clients: IdpClient[];
  /** Seconds, default 300 (ID tokens live as long). */
  accessTokenTtl?: number;
  /** Default '/realms/platform', so the issuer looks like Keycloak's. */
  issuerPath?: string;
  /**
   * Keycloak's "Revoke Refresh Token" with "Refresh token max reuse" 0: every refresh answers a
   * new refresh token and the one used is spent (using it again is invalid_grant). Default false:
   * Keycloak's default, a refresh token can be used again.
   */
  rotateRefreshTokens?: boolean;
}

export interface TestIdp {
  /** e.g. http://127.0.0.1:PORT/realms/platform */
  issuer: string;
  /** origin, e.g. http://127.0.0.1:PORT */
  url: string;
  /** The query (or form) parameters of every authorization request received, in order. */
  authorizations: Array<Record<string, string>>;
  /** When true, refresh_token grants fail with invalid_grant (the refresh tokens stay valid for later). */
  failRefresh: boolean;
  /** Stop accepting connections (existing ones are cut); `up()` listens again on the same port. */
  down(): Promise<void>;
  up(): Promise<void>;
  /**
   * Stop answering without closing anything, as a realm under SIGSTOP: connections are taken and
   * requests held. `resume()` then carries out, late, every held request, as the real realm works
   * through its backlog (test/keycloak/realm-hung.kc.ts): answered when its client still waits,
   * carried out all the same when it has gone (a refresh token spent, a code used).
   */
  hang(): void;
  resume(): void;
  /** RS256 JWT signed with a key the issuer never published (same `kid` as the real key). Claims defaults as signJwt. */
  signForeignJwt(claims: object): Promise<string>;
  /**
   * A JWT signed with the issuer's published key. Defaults `iss` (issuer), `iat` (now) and `exp`
   * (now + accessTokenTtl) unless given; a claim given as `undefined` is left out. `alg`: RS256
   * (default), RS384, RS512, PS256..PS512 with the real key; `none` (unsigned); HS256/384/512
   * keyed with the public key's PEM (the classic algorithm-confusion forgery).
   */
  signJwt(claims: object, opts?: { alg?: string }): Promise<string>;
  /** A Keycloak-like realm access token for that account, `aud` and `azp` set to `audience`. */
  accessTokenFor(username: string, audience: string): Promise<string>;
  /** The underlying oidc-provider instance (for unusual tests). */
  provider: ProviderT;
  close(): Promise<void>;
}

const AUTH_PATH = '/protocol/openid-connect/auth';
const TOKEN_PATH = '/protocol/openid-connect/token';
const USERINFO_PATH = '/protocol/openid-connect/userinfo';
const ROUTES = {
  authorization: AUTH_PATH,
  token: TOKEN_PATH,
  jwks: '/protocol/openid-connect/certs',
  userinfo: USERINFO_PATH,
  end_session: '/protocol/openid-connect/logout',
  revocation: '/protocol/openid-connect/revoke',
  introspection: '/protocol/openid-connect/token/introspect',
  pushed_authorization_request: '/protocol/openid-connect/ext/par/request',
};

/** Import oidc-provider once, dropping only its "Unsupported runtime" warning (printed on Node 20). */
let loading: Promise<typeof import('oidc-provider')> | undefined;
function loadOidcProvider(): Promise<typeof import('oidc-provider')> {
  loading ??= (async () => {
    const original = console.warn;
    console.warn = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].includes('oidc-provider WARNING: Unsupported runtime')) return;
      original.apply(console, args);
    };
    try {
      return await import('oidc-provider');
    } finally {
      console.warn = original;
    }
  })();
  return loading;
}

export function resourceFor(clientId: string): string {
  return `urn:keycloak:client:${encodeURIComponent(clientId)}`;
}

/** The claims Keycloak's default mappers (plus `roles`, `groups`, `tenants` mappers) emit for an account. */
export function keycloakUserClaims(a: DemoAccount): Record<string, unknown> {
  const [given, ...rest] = a.name.split(' ');
  return {
    email_verified: true,
    name: a.name,
    preferred_username: a.username,
    given_name: given,
    family_name: rest.join(' ') || undefined,
    email: a.email,
    roles: [...a.roles],
    groups: [...a.groups],
    tenants: [...a.tenants],
  };
}

function realmAccess(a: DemoAccount) {
  return { realm_access: { roles: [...a.roles] } };
}

const nowSec = () => Math.floor(Date.now() / 1000);

function stripUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** A small in-memory adapter (the built-in one prints a warning on every start). */
function memoryAdapter(state: { failRefresh: boolean }): (name: string) => Adapter {
  const store = new Map<string, { payload: AdapterPayload; exp: number | undefined }>();
  const sessionUids = new Map<string, string>();
  const userCodes = new Map<string, string>();
  const grants = new Map<string, Set<string>>();
  const get = (key: string): AdapterPayload | undefined => {
    const e = store.get(key);
    if (!e) return undefined;
    if (e.exp !== undefined && e.exp <= Date.now()) {
      store.delete(key);
      return undefined;
    }
    return e.payload;
  };
  return (name: string): Adapter => {
    const k = (id: string) => `${name}:${id}`;
    return {
      async upsert(id, payload, expiresIn) {
        store.set(k(id), { payload, exp: typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : undefined });
        if (name === 'Session' && payload.uid) sessionUids.set(payload.uid, id);
        if (payload.userCode) userCodes.set(payload.userCode, id);
        if (payload.grantId && name !== 'Grant') {
          let set = grants.get(payload.grantId);
          if (!set) grants.set(payload.grantId, (set = new Set()));
          set.add(k(id));
        }
      },
      async find(id) {
        if (name === 'RefreshToken' && state.failRefresh) return undefined;
        return get(k(id));
      },
      async findByUid(uid) {
        const id = sessionUids.get(uid);
        return id === undefined ? undefined : get(`Session:${id}`);
      },
      async findByUserCode(userCode) {
        const id = userCodes.get(userCode);
        return id === undefined ? undefined : get(k(id));
      },
      async consume(id) {
        const p = get(k(id));
        if (p) p.consumed = nowSec();
      },
      async destroy(id) {
        store.delete(k(id));
      },
      async revokeByGrantId(grantId) {
        for (const key of grants.get(grantId) ?? []) store.delete(key);
        grants.delete(grantId);
      },
    };
  };
}

/** The realm a provider plays: its accounts, token lifetime, issuer path and clients. */
interface Realm {
  ttl: number;
  issuerPath: string;
  clientIds: Set<string>;
  /** the audience of a client's access tokens */
  audienceOf(clientId: string): string;
  byId(sub: string): DemoAccount | undefined;
  byUsername(username: string): DemoAccount | undefined;
}

function realmOf(opts: IdpOptions): Realm {
  const accounts = opts.accounts ?? demoAccounts;
  return {
    ttl: opts.accessTokenTtl ?? 300,
    issuerPath: (opts.issuerPath ?? '/realms/platform').replace(/\/+$/, ''),
    clientIds: new Set(opts.clients.map((c) => c.client_id)),
    audienceOf: (clientId) => opts.clients.find((c) => c.client_id === clientId)?.audience ?? clientId,
    byId: (sub) => accounts.find((a) => a.sub === sub),
    byUsername: (username) => findDemoAccount(username, accounts),
  };
}

/** The realm's RS256 key (its own, so tests can sign with the published key) and a foreign one with the same `kid`. */
interface SigningKeys {
  kid: string;
  privateKey: crypto.KeyObject;
  publicKey: crypto.KeyObject;
  foreignKey: crypto.KeyObject;
  privateJwk: JWK;
}

/**
 * One RSA pair (and one foreign key) per process, made and exported once: every realm of a process
 * signs with it under a `kid` of its own. Node 20 can deadlock exporting a freshly generated key
 * while a collection finalizes its generation job (seen with eight realms started at once).
 */
type ProcessKeys = Omit<SigningKeys, 'kid' | 'privateJwk'> & { jwk: JWK };
let processKeys: ProcessKeys | undefined;

function signingKeys(): SigningKeys {
  processKeys ??= generatedKeys();
  const kid = crypto.randomUUID();
  const { jwk, ...keys } = processKeys;
  return { kid, ...keys, privateJwk: { ...jwk, kid, alg: 'RS256', use: 'sig' } as JWK };
}

function generatedKeys(): ProcessKeys {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const foreignKey = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  return { privateKey, publicKey, foreignKey, jwk: privateKey.export({ format: 'jwk' }) as JWK };
}

/**
 * A server listening on 127.0.0.1 before its app exists (the issuer names its port): 503 until
 * `serve`. While `held` is set, requests wait there unanswered (TestIdp.hang).
 */
async function listening(port: number | undefined): Promise<{
  server: http.Server;
  port: number;
  origin: string;
  serve(app: http.RequestListener): void;
  hang(): void;
  resume(): void;
}> {
  let handler: http.RequestListener = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  let held: Array<() => void> | undefined;
  const hold = (queue: Array<() => void>, req: http.IncomingMessage, res: http.ServerResponse) => {
    const body: Buffer[] = [];
    req.on('data', (chunk: Buffer) => body.push(chunk));
    queue.push(() => carryOut(bound, req, Buffer.concat(body), res));
  };
  const server = http.createServer((req, res) => (held ? hold(held, req, res) : handler(req, res)));
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    server,
    port: bound,
    origin: `http://127.0.0.1:${bound}`,
    serve: (app) => void (handler = app),
    hang: () => void (held ??= []),
    resume: () => {
      const late = held ?? [];
      held = undefined;
      for (const handle of late) handle();
    },
  };
}

/**
 * A held request, carried out late: sent again to this server, now answering, and its answer
 * relayed to the client if it still waits, else dropped (the realm's work done all the same).
 */
function carryOut(port: number, req: http.IncomingMessage, body: Buffer, res: http.ServerResponse): void {
  const again = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
    if (res.destroyed) return void answer.resume();
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  again.on('error', () => res.destroy());
  again.end(body);
}

/** The clients as Keycloak registers a confidential client (`sid` in ID and logout tokens). */
function clientsOf(clients: IdpClient[]): Configuration['clients'] {
  return clients.map((c) => ({
    client_id: c.client_id,
    client_secret: c.client_secret,
    redirect_uris: c.redirect_uris,
    post_logout_redirect_uris: c.post_logout_redirect_uris ?? [],
    // Keycloak puts `sid` in every ID token and in logout tokens ("Backchannel logout session required").
    ...(c.backchannel_logout_uri ? { backchannel_logout_uri: c.backchannel_logout_uri, backchannel_logout_session_required: true } : {}),
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }));
}

/** The logout confirmation and the logged-out page, as Keycloak shows them. */
function logoutPages(): NonNullable<NonNullable<Configuration['features']>['rpInitiatedLogout']> {
  return {
    enabled: true,
    logoutSource(ctx, form) {
      // Keycloak logs out without asking when given an id_token_hint; browsers auto-submit here.
      const auto = ctx.oidc.params?.id_token_hint
        ? // form.submit() sends no button value: add the "yes" the Logout button would have sent.
          `<script id="auto-logout">const f = document.getElementById('op.logoutForm'); const yes = document.createElement('input'); yes.type = 'hidden'; yes.name = 'logout'; yes.value = 'yes'; f.appendChild(yes); f.submit();</script>`
        : '';
      ctx.type = 'html';
      ctx.body = page(
        'Logging out',
        `<h1>Do you want to log out?</h1>${form}
<button id="kc-logout" type="submit" form="op.logoutForm" name="logout" value="yes">Logout</button>${auto}`,
      );
    },
    postLogoutSuccessSource(ctx) {
      ctx.type = 'html';
      ctx.body = page('Logged out', '<h1 id="kc-logged-out">You are logged out</h1>');
    },
  };
}

type ProviderErrors = (typeof import('oidc-provider'))['errors'];

/** JWT access tokens for every client: its default resource, audience the client id or the one its audience mapper names (as Keycloak's). */
function jwtAccessTokens(realm: Realm, errors: ProviderErrors): NonNullable<NonNullable<Configuration['features']>['resourceIndicators']> {
  return {
    enabled: true,
    defaultResource: (_ctx, client, oneOf) => oneOf ?? resourceFor(client.clientId),
    useGrantedResource: () => true,
    getResourceServerInfo(_ctx, resource, client) {
      if (resource !== resourceFor(client.clientId)) throw new errors.InvalidTarget();
      return {
        scope: 'openid profile email offline_access roles',
        audience: realm.audienceOf(client.clientId),
        accessTokenTTL: realm.ttl,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      };
    },
  };
}

function lifetimes(ttl: number): Configuration['ttl'] {
  return {
    AccessToken: ttl,
    IdToken: ttl,
    AuthorizationCode: 60,
    RefreshToken: 1800,
    Interaction: 600,
    Session: 10 * 3600,
    Grant: 14 * 24 * 3600,
    ClientCredentials: ttl,
  };
}

/** Where oidc-provider asks the realm about an account: its claims, as Keycloak's mappers emit them. */
function accountClaims(realm: Realm): Pick<Configuration, 'findAccount' | 'extraTokenClaims' | 'claims'> {
  return {
    claims: {
      // Mapped to `openid` so the ID token of the code flow carries them (conformIdTokenClaims).
      openid: ['sub', 'email', 'email_verified', 'name', 'preferred_username', 'roles', 'groups', 'tenants'],
      profile: ['name', 'preferred_username', 'given_name', 'family_name'],
      email: ['email', 'email_verified'],
    },
    async findAccount(_ctx, sub) {
      const a = realm.byId(sub);
      if (!a) return undefined;
      return { accountId: a.sub, claims: () => stripUndefined({ sub: a.sub, ...keycloakUserClaims(a) }) as { sub: string } };
    },
    async extraTokenClaims(_ctx, token) {
      const a = 'accountId' in token && token.accountId ? realm.byId(token.accountId) : undefined;
      if (!a) return { azp: token.clientId, typ: 'Bearer' };
      return stripUndefined({ azp: token.clientId, typ: 'Bearer', ...keycloakUserClaims(a), ...realmAccess(a) });
    },
  };
}

function providerConfiguration(opts: IdpOptions, realm: Realm, keys: SigningKeys, state: { failRefresh: boolean }, errors: ProviderErrors): Configuration {
  return {
    adapter: memoryAdapter(state),
    clients: clientsOf(opts.clients),
    jwks: { keys: [keys.privateJwk] },
    cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
    routes: ROUTES,
    ...accountClaims(realm),
    scopes: ['openid', 'profile', 'email', 'offline_access', 'roles'],
    extraParams: ['kc_idp_hint', 'idp_hint'],
    pkce: { required: () => false },
    // oidc-provider refuses to post to special-use addresses (SSRF guard); this realm posts its
    // back-channel logout tokens to a gateway on 127.0.0.1, as Keycloak posts to an internal address.
    fetch: (url, options) => globalThis.fetch(url, { ...options, dispatcher: undefined } as RequestInit),
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true, allowedPolicy: () => true },
      introspection: { enabled: true },
      backchannelLogout: { enabled: true },
      rpInitiatedLogout: logoutPages(),
      resourceIndicators: jwtAccessTokens(realm, errors),
    },
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: opts.rotateRefreshTokens === true, // Keycloak's default: a refresh token can be used again
    clientBasedCORS: () => true,
    ttl: lifetimes(realm.ttl),
    async renderError(ctx, out) {
      ctx.type = 'html';
      ctx.body = page(
        'Error',
        `<h1 id="kc-page-title">We are sorry...</h1>${Object.entries(out)
          .map(([k, v]) => `<p class="${esc(k)}"><strong>${esc(k)}</strong>: ${esc(v)}</p>`)
          .join('')}`,
      );
    },
  };
}

/** Records every authorization request's parameters, before oidc-provider validates them. */
function recordAuthorizations(authorizations: Array<Record<string, string>>): Parameters<ProviderT['use']>[0] {
  return async (ctx, next) => {
    if (ctx.path === AUTH_PATH && ctx.method === 'GET') {
      authorizations.push(Object.fromEntries(new URLSearchParams(ctx.querystring)));
    }
    await next();
    if (ctx.path === AUTH_PATH && ctx.method === 'POST') {
      const body = ((ctx as KoaContextWithOIDC).oidc?.body ?? {}) as Record<string, unknown>;
      authorizations.push(Object.fromEntries(Object.entries(body).map(([k, v]) => [k, Array.isArray(v) ? String(v[0]) : String(v)])));
    }
  };
}

/**
 * Introspection of the realm's JWT access tokens, as Keycloak answers it (oidc-provider refuses
 * structured tokens at its introspection endpoint, `unsupported_token_type`). oidc-provider has
 * authenticated the calling client by then; a JWT it refused as structured is active while it
 * verifies and the grant it was issued under lives (a logout at the realm, a revoked refresh token
 * end it), with the token's claims, `client_id` and `username` as Keycloak adds them. A token the
 * realm never issued (a test's own) is not active: Keycloak finds no session for it either.
 */
function introspectJwtAccessTokens(provider: ProviderT, issuer: string, publicKey: crypto.KeyObject): Parameters<ProviderT['use']>[0] {
  const grantOf = new Map<string, { grantId: string; exp: number }>();
  provider.on('access_token.issued', (token: { jti?: string; grantId?: string; exp?: number }) => {
    if (grantOf.size > 1_000) for (const [jti, g] of grantOf) if (g.exp < nowSec()) grantOf.delete(jti);
    if (token.jti && token.grantId) grantOf.set(token.jti, { grantId: token.grantId, exp: token.exp ?? 0 });
  });
  async function answer(token: string): Promise<Record<string, unknown>> {
    try {
      const { payload } = await jwtVerify(token, publicKey, { issuer });
      const issued = typeof payload.jti === 'string' ? grantOf.get(payload.jti) : undefined;
      const grant = issued && (await provider.Grant.find(issued.grantId));
      if (!grant || grant.isExpired) return { active: false };
      return { ...payload, client_id: payload.azp, username: payload.preferred_username, token_type: 'Bearer', active: true };
    } catch {
      return { active: false };
    }
  }
  return async (ctx, next) => {
    await next();
    const { oidc } = ctx as KoaContextWithOIDC;
    if (oidc?.route !== 'introspection' || ctx.status !== 400 || (ctx.body as { error?: string } | undefined)?.error !== 'unsupported_token_type') return;
    if (!oidc.client) return;
    ctx.status = 200;
    ctx.body = await answer(String(oidc.params?.token ?? ''));
  };
}

/** Userinfo for JWT access tokens, as Keycloak answers it (oidc-provider's own refuses tokens with an audience). */
function mountJwtUserinfo(app: express.Express, realm: Realm, issuer: string, publicKey: crypto.KeyObject): void {
  app.all(`${realm.issuerPath}${USERINFO_PATH}`, async (req, res, next) => {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!m || m[1]!.split('.').length !== 3) return next();
    res.set('Cache-Control', 'no-store');
    try {
      const { payload } = await jwtVerify(m[1]!, publicKey, { issuer });
      const auds = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
      const a = payload.sub ? realm.byId(payload.sub) : undefined;
      if (!a || !auds.some((x) => x !== undefined && realm.clientIds.has(x))) throw new Error('unknown subject or audience');
      res.json(stripUndefined({ sub: a.sub, ...keycloakUserClaims(a) }));
    } catch {
      res
        .status(401)
        .set('WWW-Authenticate', 'Bearer realm="platform", error="invalid_token", error_description="Token verification failed"')
        .json({ error: 'invalid_token', error_description: 'Token verification failed' });
    }
  });
}

type Interaction = Awaited<ReturnType<ProviderT['interactionDetails']>>;

/** The interaction behind this request, or undefined after answering an expired one. */
async function interactionOf(provider: ProviderT, req: express.Request, res: express.Response): Promise<Interaction | undefined> {
  try {
    return await provider.interactionDetails(req, res);
  } catch (err) {
    res
      .status(400)
      .type('html')
      .send(page('Error', `<h1 id="kc-page-title">Login session expired</h1><p>${esc((err as Error).message)}</p>`));
    return undefined;
  }
}

/** An existing session asks for more: grant it silently (no consent screen, like Keycloak). */
async function consentSilently(provider: ProviderT, details: Interaction, req: express.Request, res: express.Response): Promise<void> {
  const accountId = details.session?.accountId;
  const clientId = String(details.params.client_id);
  let grant = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
  if (!grant || grant.accountId !== accountId) grant = new provider.Grant({ accountId, clientId });
  const d = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };
  if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
  if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
  for (const [r, scope] of Object.entries(d.missingResourceScopes ?? {})) grant.addResourceScope(r, scope.join(' '));
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

/** A correct password: login and consent in one go, for what the authorization request asked. */
async function signInAs(provider: ProviderT, a: DemoAccount, details: Interaction, req: express.Request, res: express.Response): Promise<void> {
  const params = details.params as Record<string, unknown>;
  const clientId = String(params.client_id);
  const scope = typeof params.scope === 'string' ? params.scope : 'openid';
  let grant = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
  if (!grant || grant.accountId !== a.sub) grant = new provider.Grant({ accountId: a.sub, clientId });
  grant.addOIDCScope(scope);
  if (typeof params.claims === 'string') {
    try {
      const claims = JSON.parse(params.claims) as { id_token?: object; userinfo?: object };
      grant.addOIDCClaims([...Object.keys(claims.id_token ?? {}), ...Object.keys(claims.userinfo ?? {})]);
    } catch {
      /* oidc-provider has validated it already */
    }
  }
  const resources = params.resource === undefined ? [resourceFor(clientId)] : ([] as unknown[]).concat(params.resource);
  for (const r of resources) grant.addResourceScope(String(r), scope);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { login: { accountId: a.sub, amr: ['pwd'] }, consent: { grantId } }, { mergeWithLastSubmission: false });
}

/** The realm's own pages between the authorization request and the redirect back: login, consent, cancel. */
function mountInteractions(app: express.Express, provider: ProviderT, realm: Realm): void {
  const refuse = (req: express.Request, res: express.Response, description: string) =>
    provider.interactionFinished(req, res, { error: 'access_denied', error_description: description }, { mergeWithLastSubmission: false });

  app.get('/interaction/:uid', async (req, res) => {
    const details = await interactionOf(provider, req, res);
    if (!details) return;
    if (details.uid !== req.params.uid) return void res.status(400).type('html').send(page('Error', '<h1 id="kc-page-title">Invalid interaction</h1>'));
    if (details.prompt.name === 'login') return void res.type('html').send(loginPage(details.uid, details.params));
    if (details.prompt.name === 'consent') return consentSilently(provider, details, req, res);
    await refuse(req, res, `unsupported prompt ${details.prompt.name}`);
  });

  // Cancel on the login form: the realm answers the client with error=access_denied, as Keycloak
  // does when a user backs out of a brokered provider.
  app.post('/interaction/:uid/abort', async (req, res) => {
    if (await interactionOf(provider, req, res)) await refuse(req, res, 'The user cancelled the sign-in');
  });

  app.post('/interaction/:uid/login', express.urlencoded({ extended: false }), async (req, res) => {
    const details = await interactionOf(provider, req, res);
    if (!details) return;
    const body = (req.body ?? {}) as Record<string, string>;
    const username = String(body.username ?? '');
    const a = realm.byUsername(username);
    if (a && a.password === String(body.password ?? '')) return signInAs(provider, a, details, req, res);
    res
      .status(200)
      .type('html')
      .send(loginPage(details.uid, details.params, { error: 'Invalid username or password.', username }));
  });
}

/** The provider's HTTP: the JWT userinfo, the interactions, then oidc-provider under the issuer path. */
function idpApp(provider: ProviderT, realm: Realm, issuer: string, publicKey: crypto.KeyObject): http.RequestListener {
  const app = express();
  app.disable('x-powered-by');
  mountJwtUserinfo(app, realm, issuer, publicKey);
  mountInteractions(app, provider, realm);
  app.use(realm.issuerPath, provider.callback() as unknown as express.RequestHandler);
  app.use((_req, res) => {
    res.status(404).json({ error: 'Unable to find matching target resource method' });
  });
  return app as unknown as http.RequestListener;
}

/** Tokens a test signs itself: with the realm's key (any algorithm a forger might try), or a foreign one. */
function tokenSigner(realm: Realm, issuer: string, keys: SigningKeys): Pick<TestIdp, 'signForeignJwt' | 'signJwt' | 'accessTokenFor'> {
  const { kid, privateKey, publicKey, foreignKey } = keys;
  const withDefaults = (claims: object): Record<string, unknown> => {
    const now = nowSec();
    return stripUndefined({ iss: issuer, iat: now, exp: now + realm.ttl, ...(claims as Record<string, unknown>) });
  };
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return {
    async signForeignJwt(claims) {
      return new SignJWT(withDefaults(claims)).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(foreignKey);
    },
    async signJwt(claims, o = {}) {
      const alg = o.alg ?? 'RS256';
      const payload = withDefaults(claims);
      if (alg === 'none') return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(payload)}.`;
      if (/^HS(256|384|512)$/.test(alg)) {
        const secret = publicKey.export({ type: 'spki', format: 'pem' });
        return new SignJWT(payload).setProtectedHeader({ alg, kid, typ: 'JWT' }).sign(new TextEncoder().encode(String(secret)));
      }
      if (!/^(RS|PS)(256|384|512)$/.test(alg)) throw new Error(`signJwt: unsupported alg ${alg}`);
      return new SignJWT(payload).setProtectedHeader({ alg, kid, typ: 'JWT' }).sign(privateKey);
    },
    async accessTokenFor(username, audience) {
      const a = realm.byUsername(username);
      if (!a) throw new Error(`accessTokenFor: unknown account ${username}`);
      const now = nowSec();
      const payload = stripUndefined({
        exp: now + realm.ttl,
        iat: now,
        auth_time: now,
        jti: crypto.randomUUID(),
        iss: issuer,
        aud: audience,
        sub: a.sub,
        typ: 'Bearer',
        azp: audience,
        sid: crypto.randomUUID(),
        scope: 'openid profile email',
        ...keycloakUserClaims(a),
        ...realmAccess(a),
      });
      return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(privateKey);
    },
  };
}

export async function startIdp(opts: IdpOptions): Promise<TestIdp> {
  const { default: Provider, errors } = await loadOidcProvider();
  const realm = realmOf(opts);
  const keys = signingKeys();
  const { server, port, origin, serve, hang, resume } = await listening(opts.port);
  const issuer = `${origin}${realm.issuerPath}`;
  const state = { failRefresh: false };
  const authorizations: Array<Record<string, string>> = [];
  const provider = new Provider(issuer, providerConfiguration(opts, realm, keys, state, errors));
  provider.use(recordAuthorizations(authorizations));
  provider.use(introspectJwtAccessTokens(provider, issuer, keys.publicKey));
  serve(idpApp(provider, realm, issuer, keys.publicKey));
  const listener = loopbackListener(server);
  return {
    issuer,
    url: origin,
    authorizations,
    get failRefresh() {
      return state.failRefresh;
    },
    set failRefresh(v: boolean) {
      state.failRefresh = v;
    },
    provider,
    down: listener.stop,
    up: () => listener.listen(port),
    hang,
    resume,
    ...tokenSigner(realm, issuer, keys),
    close: () => listener.stop(),
  };
}
