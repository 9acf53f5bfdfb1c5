// A tiny browser for the gateway's sign-in tests: the cookie jar of sandbox/cookie-jar.ts (as `Jar`)
// and `browse()`, one HTTP exchange over a real socket that never follows redirects.
import { CookieJar as Jar } from '../../sandbox/cookie-jar.js';
import { loginThroughIdp } from '../../sandbox/idp-browser.js';

export { Jar };

export interface Exchange {
  status: number;
  headers: Headers;
  /** absolute */
  location: string | undefined;
  /** the raw Set-Cookie lines of this answer */
  setCookies: string[];
  text: string;
  json<T = unknown>(): T;
}

export async function browse(
  jar: Jar | undefined,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Exchange> {
  const target = new URL(url, jar?.origin);
  const headers: Record<string, string> = { ...init.headers };
  const cookie = jar?.header(target.href);
  if (cookie && headers.cookie === undefined) headers.cookie = cookie;
  const res = await fetch(target, { method: init.method ?? 'GET', headers, body: init.body, redirect: 'manual' });
  const setCookies = res.headers.getSetCookie();
  jar?.store(setCookies, target.href);
  const text = await res.text();
  const location = res.headers.get('location');
  return {
    status: res.status,
    headers: res.headers,
    location: location ? new URL(location, target).href : undefined,
    setCookies,
    text,
    json: <T>() => JSON.parse(text) as T,
  };
}

/**
 * A full code-flow login through the gateway: /auth/start (its query given), the IdP's login form,
 * then the gateway's /auth/callback. Returns the jar holding the session and every exchange.
 */
export async function signIn(gatewayUrl: string, username: string, startQuery = '', jar = new Jar(gatewayUrl)) {
  const start = await browse(jar, `/auth/start${startQuery ? `?${startQuery}` : ''}`);
  if (start.status !== 302 || !start.location) throw new Error(`signIn: /auth/start answered ${start.status}: ${start.text}`);
  const idpJar = new Jar();
  const { callbackUrl } = await loginThroughIdp(start.location, username, undefined, idpJar);
  const callback = await browse(jar, callbackUrl);
  if (callback.status !== 302) throw new Error(`signIn: callback answered ${callback.status}: ${callback.text}`);
  return { jar, start, callback, idpJar, authorizeUrl: new URL(start.location) };
}

// ---- the sign-in test world: the realm, the chat front-end stand-in and the gateway -----------

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoAccounts, demoIdentityProviders, type DemoAccount } from '../../sandbox/demo-realm.js';
import { loadSettings, type Settings } from '../../config/settings.js';
import { type Env } from '../../config/env.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import type { Observability } from '../../gateway/observability/observability.js';
import { capturingObservability, type LogLine } from './gateway-harness.js';
import { startIdp, type IdpClient, type TestIdp } from '../../sandbox/idp.js';
import { startOpenWebUI, type OpenWebUIStandIn, type OpenWebUIOptions } from '../../sandbox/open-webui/stand-in.js';
import { freePort } from './raw-http.js';
import { sleep } from './wait.js';

export const CLIENT_ID = 'chat-gateway';
export const CLIENT_SECRET = 'gateway-client-secret';
/** Another confidential client of the embedded realm (a platform command-line tool), its tokens meant for the gateway. */
export const API_CLIENT = {
  client_id: 'platform-cli',
  client_secret: 'platform-cli-secret',
  redirect_uris: ['http://127.0.0.1:9/cli/callback'],
  audience: CLIENT_ID,
};

/**
 * A confidential client (API_CLIENT by default) signs `username` in at the embedded realm `issuer` (a
 * realm session of its own, in a browser of its own) with the code flow: its access token, and that browser.
 */
export async function apiClientToken(
  issuer: string,
  username: string,
  client: { client_id: string; client_secret: string; redirect_uris: string[] } = API_CLIENT,
): Promise<{ token: string; realmSession: Jar }> {
  const authorize = new URL(`${issuer}/protocol/openid-connect/auth`);
  authorize.search = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: client.redirect_uris[0]!,
    response_type: 'code',
    scope: 'openid',
  }).toString();
  const { callbackUrl, jar } = await loginThroughIdp(authorize.href, username);
  const res = await fetch(`${issuer}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${btoa(`${client.client_id}:${client.client_secret}`)}` },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: new URL(callbackUrl).searchParams.get('code')!,
      redirect_uri: client.redirect_uris[0]!,
    }),
  });
  const body = (await res.json()) as { access_token?: string };
  if (res.status !== 200 || !body.access_token) throw new Error(`the API client's code grant for ${username}: ${res.status} ${JSON.stringify(body)}`);
  return { token: body.access_token, realmSession: jar };
}
export const SESSION_SECRET = 'sign-in-test-session-secret-0123456789abcdef';

export interface World {
  idp: TestIdp;
  upstream: OpenWebUIStandIn;
  gateway: Gateway;
  settings: Settings;
  /** log and audit lines of the gateway */
  obs: Observability & { lines: LogLine[] };
  /** the gateway, also its PUBLIC_URL */
  url: string;
  close(): Promise<void>;
}

/**
 * The settings of a gateway in front of the stand-in and the test realm, as the sign-in tests
 * run it (in process here, or as gateway/main.ts in a child process): switches off, two tenant links.
 */
export function worldEnv(o: { upstreamUrl: string; publicUrl: string; issuer: string; providersFile: string }): Record<string, string> {
  return {
    IDP_PROVIDERS_FILE: o.providersFile,
    NODE_ENV: 'test',
    UPSTREAM_URL: o.upstreamUrl,
    PUBLIC_URL: o.publicUrl,
    OIDC_ISSUER_URL: o.issuer,
    OIDC_CLIENT_ID: CLIENT_ID,
    OIDC_CLIENT_SECRET: CLIENT_SECRET,
    SESSION_SECRET,
    CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
    CHATUI_ENABLE_ADMIN_EXPORT: 'false',
    IDP_TENANT_IDP_ALIASES: 'acme=acme-entra,globex=globex-okta',
    LOG_LEVEL: 'info',
  };
}

/** The gateway's confidential client at the test realm, for a gateway at `url`. */
export function gatewayClient(url: string) {
  return {
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
    redirect_uris: [`${url}/auth/callback`],
    post_logout_redirect_uris: [`${url}/auth/login`, `${url}/de/auth/login`],
    backchannel_logout_uri: `${url}/auth/backchannel-logout`,
  };
}

/** `clients`: the realm's other clients, beside the gateway's. */
export async function startWorld(
  options: { env?: Env; accessTokenTtl?: number; upstream?: OpenWebUIOptions; accounts?: DemoAccount[]; clients?: IdpClient[] } = {},
): Promise<World> {
  const upstream = await startOpenWebUI({
    bypassAdminAccessControl: false,
    enableAdminExport: false,
    groups: ['acme', 'globex', 'initech'],
    ...options.upstream,
  });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const idp = await startIdp({
    clients: [gatewayClient(url), ...(options.clients ?? [])],
    accessTokenTtl: options.accessTokenTtl ?? 300,
    accounts: options.accounts,
  });
  const providersFile = join(mkdtempSync(join(tmpdir(), 'sign-in-')), 'providers.json');
  writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
  const settings = loadSettings(
    { ...worldEnv({ upstreamUrl: upstream.url, publicUrl: url, issuer: idp.issuer, providersFile }), ...options.env },
    { stageFiles: false },
  );
  const obs = capturingObservability();
  const gateway = await createGateway(settings, { obs });
  await gateway.listen(port, '127.0.0.1');
  return {
    idp,
    upstream,
    gateway,
    settings,
    obs,
    url,
    async close() {
      await gateway.close();
      await Promise.all([idp.close(), upstream.close()]);
    },
  };
}

/**
 * A second instance of the world's gateway, sharing its settings (and so its Redis): as a load
 * balancer's second backend would run, its own process state. Resolves once both instances are in
 * sync with Redis.
 */
export async function startSecondInstance(w: World, obs: Observability = capturingObservability()): Promise<{ gateway: Gateway; url: string }> {
  const gateway = await createGateway(w.settings, { obs });
  const url = (await gateway.listen(0, '127.0.0.1')).url;
  const deadline = Date.now() + 10_000;
  while (!(gateway.sharedState.ready().ok && w.gateway.sharedState.ready().ok)) {
    if (Date.now() > deadline) throw new Error('instances not in sync with Redis');
    await sleep(50);
  }
  return { gateway, url };
}

/** The demo realm's accounts as copies a test may change (roles, groups, tenants) while its world runs. */
export function changeableDemoAccounts(): DemoAccount[] {
  return demoAccounts.map((a) => ({ ...a, roles: [...a.roles], groups: [...a.groups], tenants: [...a.tenants] }));
}
