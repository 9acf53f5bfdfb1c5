// The world of the real-Keycloak suite: one Keycloak boot for the whole suite (the
// platform realm from deploy/keycloak/realm-platform.json, plus sandbox/realm-acme-idp.json
// playing Acme's own identity provider), a real redis-server, the chat front-end stand-in
// (it records every request it receives, trusted headers included) and two gateway instances
// sharing SESSION_SECRET and REDIS_URL. A is the address users and Keycloak know.
//
// Test-only changes to the platform realm (sandbox/keycloak.ts pointRealmAt), made through the Admin REST API as an operator would:
// the gateway client's addresses (the realm file names http://localhost:8080; the test gateways
// listen on free ports) and the acme-entra provider's endpoints (the realm file points at
// Microsoft; here they point at the acme-idp realm of the same server).
import { freePort } from '../support/raw-http.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { ACME_IDP_REALM_FILE, pointRealmAt, startKeycloak, type RunningKeycloak } from '../../sandbox/keycloak.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { loadSettings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { capturingObservability, type LogLine } from '../support/gateway-harness.js';
import type { Observability } from '../../gateway/observability/observability.js';

export const CLIENT_ID = 'chat-gateway';
export const CLIENT_SECRET = 'kc-suite-gateway-secret';
export const SESSION_SECRET = 'kc-suite-session-secret-0123456789abcdef';
export const REALM = 'platform';
/** how long the gateways keep Keycloak's answer that another client's bearer token stands */
export const INTROSPECTION_CACHE_SECONDS = 2;

export interface GatewayInstance {
  gateway: Gateway;
  url: string;
  obs: Observability & { lines: LogLine[] };
}

export interface KcWorld {
  kc: RunningKeycloak;
  redis: TestRedis;
  upstream: OpenWebUIStandIn;
  a: GatewayInstance;
  b: GatewayInstance;
  /** the catalog cache's clock of both gateways: tests move it forward */
  clock: { offsetMs: number; now(): number };
  /** Keycloak's internal id of a user of the platform realm */
  userId(username: string): Promise<string>;
  close(): Promise<void>;
}

let world: Promise<KcWorld> | undefined;

/** The suite's world, started once (one Keycloak boot per suite) and stopped after the last test. */
export function kcWorld(): Promise<KcWorld> {
  world ??= startWorld();
  return world;
}

after(async function () {
  this.timeout(60_000);
  if (world) await (await world.catch(() => undefined))?.close();
});

async function startWorld(): Promise<KcWorld> {
  const t0 = Date.now();
  const kc = await startKeycloak({ realms: [ACME_IDP_REALM_FILE], env: { OIDC_CLIENT_SECRET: CLIENT_SECRET } });
  console.log(`      (Keycloak started in ${(kc.startMs / 1000).toFixed(1)} s, realms imported)`);
  const closers: Array<() => Promise<unknown>> = [() => kc.stop()];
  try {
    const redis = await startRedis();
    closers.push(() => redis.stop());
    const upstream = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: false, groups: ['acme', 'globex', 'initech'] });
    closers.push(() => upstream.close());
    const [portA, portB] = [await freePort(), await freePort()];
    const [urlA, urlB] = [`http://127.0.0.1:${portA}`, `http://127.0.0.1:${portB}`];

    await pointRealmAt(kc, { gatewayUrls: [urlA, urlB], backchannelUrl: `${urlA}/auth/backchannel-logout` });

    const clock = {
      offsetMs: 0,
      now() {
        return Date.now() + this.offsetMs;
      },
    };
    const env = {
      NODE_ENV: 'test',
      UPSTREAM_URL: upstream.url,
      PUBLIC_URL: urlA,
      OIDC_ISSUER_URL: kc.issuer(REALM),
      OIDC_CLIENT_ID: CLIENT_ID,
      OIDC_CLIENT_SECRET: CLIENT_SECRET,
      SESSION_SECRET,
      CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
      CHATUI_ENABLE_ADMIN_EXPORT: 'false',
      IDP_TENANT_IDP_ALIASES: 'acme=acme-entra,globex=globex-okta,partner=partner-linkonly,legacy=legacy-disabled,hidden=hidden-saml',
      OAUTH_ROLES_CLAIM: 'roles',
      REDIS_URL: redis.url,
      DRIFT_CHECK_SECONDS: '0',
      // The refresh tests shorten the realm's access tokens to 15 s: refresh 5 s before expiry.
      TOKEN_REFRESH_MARGIN_SECONDS: '5',
      // Another client's bearer token: Keycloak's word on its session kept 2 s (the default is 5).
      BEARER_INTROSPECTION_CACHE_SECONDS: String(INTROSPECTION_CACHE_SECONDS),
      LOG_LEVEL: 'info',
    };
    const instance = async (port: number, url: string): Promise<GatewayInstance> => {
      const settings = loadSettings({ ...env, PUBLIC_URL: url }, { stageFiles: false });
      const obs = capturingObservability();
      const gateway = await createGateway(settings, { obs, loginRoutingOptions: { now: () => clock.now() } });
      await gateway.listen(port, '127.0.0.1');
      closers.push(() => gateway.close());
      return { gateway, url, obs };
    };
    const a = await instance(portA, urlA);
    const b = await instance(portB, urlB);
    console.log(`      (world ready in ${((Date.now() - t0) / 1000).toFixed(1)} s)`);

    const ids = new Map<string, string>();
    return {
      kc,
      redis,
      upstream,
      a,
      b,
      clock,
      async userId(username) {
        if (!ids.has(username)) {
          const users = await kc.admin<Array<{ id: string }>>('GET', `/admin/realms/${REALM}/users?exact=true&username=${encodeURIComponent(username)}`);
          ids.set(username, users.body[0]!.id);
        }
        return ids.get(username)!;
      },
      async close() {
        for (const c of closers.reverse()) await c().catch(() => {});
      },
    };
  } catch (err) {
    for (const c of closers.reverse()) await c().catch(() => {});
    throw err;
  }
}

/**
 * A public client of the realm that may use the password grant, its access tokens meant for the
 * gateway (audience): a platform API client. `tokenFor` is a user's access token from it.
 */
export async function apiClient(
  w: KcWorld,
  clientId: string,
): Promise<{ tokenFor(username: string, password: string): Promise<string>; remove(): Promise<void> }> {
  await w.kc.admin('POST', `/admin/realms/${REALM}/clients`, {
    clientId,
    publicClient: true,
    directAccessGrantsEnabled: true,
    standardFlowEnabled: false,
    protocolMappers: [
      {
        name: 'audience',
        protocol: 'openid-connect',
        protocolMapper: 'oidc-audience-mapper',
        config: { 'included.client.audience': CLIENT_ID, 'access.token.claim': 'true', 'id.token.claim': 'false' },
      },
    ],
  });
  return {
    async tokenFor(username, password) {
      const res = await fetch(`${w.kc.issuer(REALM)}/protocol/openid-connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'password', client_id: clientId, username, password, scope: 'openid' }).toString(),
      });
      const body = (await res.json()) as { access_token?: string };
      if (res.status !== 200 || !body.access_token) throw new Error(`password grant for ${username}: ${res.status} ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async remove() {
      const clients = await w.kc.admin<Array<{ id: string }>>('GET', `/admin/realms/${REALM}/clients?clientId=${clientId}`);
      for (const c of clients.body) await w.kc.admin('DELETE', `/admin/realms/${REALM}/clients/${c.id}`);
    },
  };
}
