/**
 * The realm's OpenID Provider for tests and the sandbox: the real `oidc-provider` package, run
 * in-process and dressed up like a Keycloak realm (issuer `.../realms/platform`, Keycloak's
 * endpoint paths, Keycloak-shaped claims and JWT access tokens).
 *
 * - Endpoints (under the issuer): `/protocol/openid-connect/{auth,token,certs,userinfo,logout,
 *   revoke,token/introspect}` and `/.well-known/openid-configuration`.
 * - Login page: `/interaction/:uid` (origin root), ids like Keycloak's (`kc-form-login`,
 *   `username`, `password`, `kc-login`), plus `#idp-hint` showing the received `kc_idp_hint`.
 *   A correct password finishes login and consent in one go; there is no consent screen.
 * - Access tokens are JWTs: resource indicators are on, every client gets a default resource
 *   `urn:keycloak:client:<client_id>` whose resource server has `audience = client_id` and
 *   `accessTokenFormat: 'jwt'`, and `useGrantedResource` returns true so code and refresh
 *   exchanges without a `resource` parameter still get that JWT. `extraTokenClaims` adds the
 *   Keycloak claims (azp, typ, email, name, roles, groups, tenants, realm_access.roles).
 *   oidc-provider's own userinfo refuses tokens with an audience, so userinfo requests bearing a
 *   JWT are answered here (verified with the issuer key), as Keycloak's userinfo would.
 */
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { SignJWT, jwtVerify, decodeJwt } from 'jose';
import type { default as ProviderT, Adapter, AdapterPayload, Configuration, JWK, KoaContextWithOIDC } from 'oidc-provider';
import { demoAccounts, findDemoAccount, type DemoAccount } from './demo-realm.js';
import { loopbackListener } from './listener.js';

export interface IdpClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
  post_logout_redirect_uris?: string[];
  /** OIDC Back-Channel Logout: where logout tokens are posted (Keycloak's "Backchannel logout URL") */
  backchannel_logout_uri?: string;
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

function esc(s: unknown): string {
  return String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
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

/** Looks like a plain realm login page (Keycloak's layout, no theme): a card on a grey page. */
const REALM_STYLE = `
*,*::before,*::after{box-sizing:border-box}
html{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;line-height:1.5;color:#1b1f24;background:#eef0f3}
body{margin:0;min-height:100vh;display:flex;flex-direction:column;align-items:center;padding:3rem 1rem}
#kc-header{font-size:1.1rem;letter-spacing:.2em;text-transform:uppercase;color:#4a5568;margin-bottom:1.5rem}
#kc-content{background:#fff;width:100%;max-width:24rem;padding:2rem;border-top:4px solid #0066cc;border-radius:.25rem;box-shadow:0 1px 4px rgba(0,0,0,.15)}
h1{font-size:1.4rem;font-weight:500;text-align:center;margin:0 0 1.5rem}
label{display:block;font-size:.9rem;margin:0 0 .25rem}
input[type=text],input[type=password]{display:block;width:100%;padding:.5rem .6rem;margin:0 0 1rem;border:1px solid #b8bec7;border-radius:.2rem;font-size:1rem}
input:focus{outline:2px solid #0066cc;outline-offset:0;border-color:#0066cc}
button{display:block;width:100%;padding:.6rem;border:0;border-radius:.2rem;background:#0066cc;color:#fff;font-size:1rem;cursor:pointer}
button:hover{background:#004f9e}
button.secondary{background:none;color:#0066cc;margin-top:.5rem}
.alert-error{background:#fdecea;border-left:4px solid #c9190b;padding:.5rem .75rem;margin:0 0 1rem;font-size:.9rem}
.note{font-size:.8rem;color:#4a5568;background:#f5f7fa;border-radius:.2rem;padding:.5rem .75rem;margin:0 0 1rem}
`;

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>${REALM_STYLE}</style></head>
<body><div id="kc-header">Platform</div><div id="kc-content">${body}</div></body></html>`;
}

function loginPage(uid: string, params: Record<string, unknown>, opts: { error?: string; username?: string } = {}): string {
  const hint = typeof params.kc_idp_hint === 'string' ? params.kc_idp_hint : '';
  // The brokered providers do not exist in the sandbox: a small note names the one the hint asked
  // for (Keycloak would have gone straight there); the realm's own form stands in for it.
  const note = hint
    ? `<p class="note" id="hint-note">Provider <strong><span id="idp-hint" data-hint="${esc(hint)}">${esc(hint)}</span></strong> was asked for. It does not exist in this sandbox: sign in here with a demo login instead.</p>`
    : `<span id="idp-hint" data-hint="" hidden></span>`;
  return page(
    'Sign in to platform',
    `<h1 id="kc-page-title">Sign in to your account</h1>
${note}
${opts.error ? `<div id="input-error" class="alert-error" role="alert">${esc(opts.error)}</div>` : ''}
<form id="kc-form-login" action="/interaction/${esc(uid)}/login" method="post">
  <label for="username">Username or email</label>
  <input id="username" name="username" type="text" autocomplete="username" value="${esc(opts.username ?? '')}" autofocus>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password">
  <button id="kc-login" name="login" type="submit">Sign In</button>
</form>
<form id="kc-form-cancel" action="/interaction/${esc(uid)}/abort" method="post"><button id="kc-cancel" class="secondary" type="submit">Cancel</button></form>`,
  );
}

export async function startIdp(opts: IdpOptions): Promise<TestIdp> {
  const { default: Provider, errors } = await loadOidcProvider();
  const accounts = opts.accounts ?? demoAccounts;
  const ttl = opts.accessTokenTtl ?? 300;
  const issuerPath = (opts.issuerPath ?? '/realms/platform').replace(/\/+$/, '');
  const clientIds = new Set(opts.clients.map((c) => c.client_id));

  // Signing key: our own RS256 key, so tests can sign with the published key.
  const kid = crypto.randomUUID();
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const foreign = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privateJwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };

  let handler: http.RequestListener = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const server = http.createServer((req, res) => handler(req, res));
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  const issuer = `${origin}${issuerPath}`;

  const state = { failRefresh: false };
  const authorizations: Array<Record<string, string>> = [];

  const byId = (sub: string) => accounts.find((a) => a.sub === sub);
  const byUsername = (username: string) => findDemoAccount(username, accounts);

  const configuration: Configuration = {
    adapter: memoryAdapter(state),
    clients: opts.clients.map((c) => ({
      client_id: c.client_id,
      client_secret: c.client_secret,
      redirect_uris: c.redirect_uris,
      post_logout_redirect_uris: c.post_logout_redirect_uris ?? [],
      // Keycloak puts `sid` in every ID token and in logout tokens ("Backchannel logout session required").
      ...(c.backchannel_logout_uri ? { backchannel_logout_uri: c.backchannel_logout_uri, backchannel_logout_session_required: true } : {}),
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    jwks: { keys: [privateJwk as JWK] },
    cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
    routes: ROUTES,
    claims: {
      // Mapped to `openid` so the ID token of the code flow carries them (conformIdTokenClaims).
      openid: ['sub', 'email', 'email_verified', 'name', 'preferred_username', 'roles', 'groups', 'tenants'],
      profile: ['name', 'preferred_username', 'given_name', 'family_name'],
      email: ['email', 'email_verified'],
    },
    scopes: ['openid', 'profile', 'email', 'offline_access', 'roles'],
    extraParams: ['kc_idp_hint', 'idp_hint'],
    pkce: { required: () => false },
    async findAccount(_ctx, sub) {
      const a = byId(sub);
      if (!a) return undefined;
      return {
        accountId: a.sub,
        claims: () => stripUndefined({ sub: a.sub, ...keycloakUserClaims(a) }) as { sub: string },
      };
    },
    // oidc-provider refuses to post to special-use addresses (SSRF guard); this realm posts its
    // back-channel logout tokens to a gateway on 127.0.0.1, as Keycloak posts to an internal address.
    fetch: (url, options) => globalThis.fetch(url, { ...options, dispatcher: undefined } as RequestInit),
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true, allowedPolicy: () => true },
      introspection: { enabled: true },
      backchannelLogout: { enabled: true },
      rpInitiatedLogout: {
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
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, client, oneOf) => oneOf ?? resourceFor(client.clientId),
        useGrantedResource: () => true,
        getResourceServerInfo(_ctx, resource, client) {
          if (resource !== resourceFor(client.clientId)) throw new errors.InvalidTarget();
          return {
            scope: 'openid profile email offline_access roles',
            audience: client.clientId,
            accessTokenTTL: ttl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    async extraTokenClaims(_ctx, token) {
      const a = 'accountId' in token && token.accountId ? byId(token.accountId) : undefined;
      if (!a) return { azp: token.clientId, typ: 'Bearer' };
      return stripUndefined({ azp: token.clientId, typ: 'Bearer', ...keycloakUserClaims(a), ...realmAccess(a) });
    },
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: opts.rotateRefreshTokens === true, // Keycloak's default: a refresh token can be used again
    clientBasedCORS: () => true,
    ttl: {
      AccessToken: ttl,
      IdToken: ttl,
      AuthorizationCode: 60,
      RefreshToken: 1800,
      Interaction: 600,
      Session: 10 * 3600,
      Grant: 14 * 24 * 3600,
      ClientCredentials: ttl,
    },
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

  const provider = new Provider(issuer, configuration);

  // Record every authorization request, before oidc-provider validates it.
  provider.use(async (ctx, next) => {
    if (ctx.path === AUTH_PATH && ctx.method === 'GET') {
      authorizations.push(Object.fromEntries(new URLSearchParams(ctx.querystring)));
    }
    await next();
    if (ctx.path === AUTH_PATH && ctx.method === 'POST') {
      const body = ((ctx as KoaContextWithOIDC).oidc?.body ?? {}) as Record<string, unknown>;
      authorizations.push(Object.fromEntries(Object.entries(body).map(([k, v]) => [k, Array.isArray(v) ? String(v[0]) : String(v)])));
    }
  });

  const app = express();
  app.disable('x-powered-by');

  // Userinfo for JWT access tokens (oidc-provider's own userinfo rejects tokens with an audience).
  app.all(`${issuerPath}${USERINFO_PATH}`, async (req, res, next) => {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!m || m[1]!.split('.').length !== 3) return next();
    res.set('Cache-Control', 'no-store');
    try {
      const { payload } = await jwtVerify(m[1]!, publicKey, { issuer });
      const auds = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
      const a = payload.sub ? byId(payload.sub) : undefined;
      if (!a || !auds.some((x) => x !== undefined && clientIds.has(x))) throw new Error('unknown subject or audience');
      res.json(stripUndefined({ sub: a.sub, ...keycloakUserClaims(a) }));
    } catch {
      res
        .status(401)
        .set('WWW-Authenticate', 'Bearer realm="platform", error="invalid_token", error_description="Token verification failed"')
        .json({ error: 'invalid_token', error_description: 'Token verification failed' });
    }
  });

  /** The interaction behind this request, or undefined after answering an expired one. */
  const interaction = async (req: express.Request, res: express.Response) => {
    try {
      return await provider.interactionDetails(req, res);
    } catch (err) {
      res
        .status(400)
        .type('html')
        .send(page('Error', `<h1 id="kc-page-title">Login session expired</h1><p>${esc((err as Error).message)}</p>`));
      return undefined;
    }
  };

  app.get('/interaction/:uid', async (req, res) => {
    const details = await interaction(req, res);
    if (!details) return;
    if (details.uid !== req.params.uid) {
      res.status(400).type('html').send(page('Error', '<h1 id="kc-page-title">Invalid interaction</h1>'));
      return;
    }
    if (details.prompt.name === 'login') {
      res.type('html').send(loginPage(details.uid, details.params));
      return;
    }
    if (details.prompt.name === 'consent') {
      // An existing session asks for more: grant it silently (no consent screen, like Keycloak).
      const accountId = details.session?.accountId;
      const clientId = String(details.params.client_id);
      let grant = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
      if (!grant || grant.accountId !== accountId) grant = new provider.Grant({ accountId, clientId });
      const d = details.prompt.details as {
        missingOIDCScope?: string[];
        missingOIDCClaims?: string[];
        missingResourceScopes?: Record<string, string[]>;
      };
      if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
      if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
      for (const [r, s] of Object.entries(d.missingResourceScopes ?? {})) grant.addResourceScope(r, s.join(' '));
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      return;
    }
    await provider.interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: `unsupported prompt ${details.prompt.name}` },
      { mergeWithLastSubmission: false },
    );
  });

  // Cancel on the login form: the realm answers the client with error=access_denied, as Keycloak
  // does when a user backs out of a brokered provider.
  app.post('/interaction/:uid/abort', async (req, res) => {
    const details = await interaction(req, res);
    if (!details) return;
    await provider.interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: 'The user cancelled the sign-in' },
      { mergeWithLastSubmission: false },
    );
  });

  app.post('/interaction/:uid/login', express.urlencoded({ extended: false }), async (req, res) => {
    const details = await interaction(req, res);
    if (!details) return;
    const body = (req.body ?? {}) as Record<string, string>;
    const username = String(body.username ?? '');
    const a = byUsername(username);
    if (!a || a.password !== String(body.password ?? '')) {
      res
        .status(200)
        .type('html')
        .send(loginPage(details.uid, details.params, { error: 'Invalid username or password.', username }));
      return;
    }
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
  });

  app.use(issuerPath, provider.callback() as unknown as express.RequestHandler);
  app.use((_req, res) => {
    res.status(404).json({ error: 'Unable to find matching target resource method' });
  });
  handler = app as unknown as http.RequestListener;

  const listener = loopbackListener(server);
  const listen = () => listener.listen(port);
  const stop = listener.stop;

  const withDefaults = (claims: object): Record<string, unknown> => {
    const now = nowSec();
    return stripUndefined({ iss: issuer, iat: now, exp: now + ttl, ...(claims as Record<string, unknown>) });
  };
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

  const idp: TestIdp = {
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
    down: stop,
    up: listen,
    async signForeignJwt(claims) {
      return new SignJWT(withDefaults(claims)).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(foreign.privateKey);
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
      const a = byUsername(username);
      if (!a) throw new Error(`accessTokenFor: unknown account ${username}`);
      const now = nowSec();
      const payload = stripUndefined({
        exp: now + ttl,
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
    async close() {
      await stop();
    },
  };
  return idp;
}

/* ------------------------------------------------------------------------------------------ */
/* A tiny browser for driving the IdP over real HTTP.                                          */

interface StoredCookie {
  name: string;
  value: string;
  path: string;
  expires: number | undefined;
}

/** A minimal cookie jar (host-only cookies, path matching, expiry). */
export class CookieJar {
  private readonly byHost = new Map<string, Map<string, StoredCookie>>();

  store(url: string, setCookies: string[]): void {
    const u = new URL(url);
    let jar = this.byHost.get(u.host);
    if (!jar) this.byHost.set(u.host, (jar = new Map()));
    for (const line of setCookies) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      if (eq <= 0) continue;
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      let path = u.pathname.replace(/\/[^/]*$/, '') || '/';
      let expires: number | undefined;
      for (const attr of attrs) {
        const [k, ...v] = attr.split('=');
        const key = k!.trim().toLowerCase();
        const val = v.join('=').trim();
        if (key === 'path' && val.startsWith('/')) path = val;
        else if (key === 'max-age') expires = Date.now() + Number(val) * 1000;
        else if (key === 'expires' && expires === undefined) expires = Date.parse(val);
      }
      const id = `${name};${path}`;
      if (expires !== undefined && expires <= Date.now()) jar.delete(id);
      else jar.set(id, { name, value, path, expires });
    }
  }

  header(url: string): string {
    const u = new URL(url);
    const jar = this.byHost.get(u.host);
    if (!jar) return '';
    const out: string[] = [];
    for (const [id, c] of jar) {
      if (c.expires !== undefined && c.expires <= Date.now()) {
        jar.delete(id);
        continue;
      }
      const p = c.path.endsWith('/') ? c.path : `${c.path}/`;
      if (u.pathname === c.path || u.pathname.startsWith(p)) out.push(`${c.name}=${c.value}`);
    }
    return out.join('; ');
  }
}

async function hop(jar: CookieJar, url: string, init: { method?: string; form?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { accept: 'text/html,application/json' };
  const cookie = jar.header(url);
  if (cookie) headers.cookie = cookie;
  let body: string | undefined;
  if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(init.form).toString();
  }
  const res = await fetch(url, { method: init.method ?? 'GET', headers, body, redirect: 'manual' });
  jar.store(url, res.headers.getSetCookie());
  const location = res.headers.get('location');
  const text = await res.text();
  return { status: res.status, location: location ? new URL(location, url).href : undefined, text };
}

function findForm(html: string): { action: string; fields: Record<string, string> } | undefined {
  const m = /<form\b[^>]*>/i.exec(html);
  if (!m) return undefined;
  const action = /\baction="([^"]*)"/i.exec(m[0])?.[1];
  const end = html.indexOf('</form>', m.index);
  const inner = html.slice(m.index, end < 0 ? undefined : end);
  const fields: Record<string, string> = {};
  for (const input of inner.match(/<input\b[^>]*>/gi) ?? []) {
    const name = /\bname="([^"]*)"/i.exec(input)?.[1];
    if (name) fields[name] = unescapeHtml(/\bvalue="([^"]*)"/i.exec(input)?.[1] ?? '');
  }
  return action === undefined ? undefined : { action: unescapeHtml(action), fields };
}

function unescapeHtml(s: string): string {
  return s
    .replace(/&#(\d+);/g, (_, d) => String.fromCharCode(Number(d)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function pageText(html: string): string {
  return html
    .replace(/<script[\s\S]*?<\/script>/gi, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300);
}

/**
 * Drive the IdP like a browser with its own cookie jar: follow its redirects from `authorizeUrl`
 * (the authorization endpoint with all parameters), submit the login form, and return the final
 * redirect back to the client's redirect_uri (code and state, or an error) without requesting it.
 * `password` defaults to the demo account's. Pass a `jar` to keep the IdP session (for logout or SSO).
 */
export async function loginThroughIdp(
  authorizeUrl: string,
  username: string,
  password?: string,
  jar: CookieJar = new CookieJar(),
): Promise<{ callbackUrl: string; jar: CookieJar }> {
  const start = new URL(authorizeUrl);
  const redirectUri = start.searchParams.get('redirect_uri');
  const pw = password ?? findDemoAccount(username)?.password;
  if (pw === undefined) throw new Error(`loginThroughIdp: no password for ${username}`);
  const isCallback = (loc: string) => {
    const u = new URL(loc);
    if (redirectUri) {
      const r = new URL(redirectUri);
      if (u.origin === r.origin && u.pathname === r.pathname) return true;
    }
    return u.origin !== start.origin;
  };

  let url = authorizeUrl;
  let submitted = false;
  let res = await hop(jar, url);
  for (let i = 0; i < 20; i++) {
    if (res.status >= 300 && res.status < 400 && res.location) {
      if (isCallback(res.location)) return { callbackUrl: res.location, jar };
      url = res.location;
      res = await hop(jar, url);
      continue;
    }
    const form = res.status === 200 ? findForm(res.text) : undefined;
    if (form && 'username' in form.fields && 'password' in form.fields) {
      if (submitted) {
        const error = /id="input-error"[^>]*>([^<]*)</.exec(res.text)?.[1];
        throw new Error(`loginThroughIdp: login failed for ${username}: ${error ? unescapeHtml(error) : pageText(res.text)}`);
      }
      submitted = true;
      const action = new URL(form.action, url).href;
      res = await hop(jar, action, { method: 'POST', form: { ...form.fields, username, password: pw } });
      url = action;
      continue;
    }
    throw new Error(`loginThroughIdp: unexpected ${res.status} at ${url}: ${pageText(res.text)}`);
  }
  throw new Error('loginThroughIdp: too many redirects');
}

/**
 * Drive the IdP's end-session endpoint like a browser: confirm the logout form and return where
 * the IdP finally redirects (the post_logout_redirect_uri with state, when one was accepted).
 * Pass the jar returned by `loginThroughIdp` to end that IdP session.
 */
export async function logoutThroughIdp(endSessionUrl: string, jar: CookieJar = new CookieJar()): Promise<{ redirectUrl: string | undefined; jar: CookieJar }> {
  let url = endSessionUrl;
  let res = await hop(jar, url);
  for (let i = 0; i < 10; i++) {
    if (res.status >= 300 && res.status < 400 && res.location) {
      if (new URL(res.location).origin !== new URL(endSessionUrl).origin) return { redirectUrl: res.location, jar };
      url = res.location;
      res = await hop(jar, url);
      continue;
    }
    const form = res.status === 200 ? findForm(res.text) : undefined;
    if (form && 'xsrf' in form.fields) {
      const action = new URL(form.action, url).href;
      res = await hop(jar, action, { method: 'POST', form: { ...form.fields, logout: 'yes' } });
      url = action;
      continue;
    }
    if (res.status === 200) return { redirectUrl: undefined, jar };
    throw new Error(`logoutThroughIdp: unexpected ${res.status} at ${url}: ${pageText(res.text)}`);
  }
  throw new Error('logoutThroughIdp: too many redirects');
}

/** Decode a JWT's payload without verifying it (test convenience). */
export function peekJwt(token: string): Record<string, unknown> {
  return decodeJwt(token) as Record<string, unknown>;
}
