// Letter case of paths through the whole gateway (policies/routes.ts): the gateway's
// own routes answer in any case, as Express matches them; any casing of an API path needs an
// identity and is judged by the policy; public assets pass without identity only as spelled.
import { expect } from 'chai';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Router } from 'express';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { baseEnv, startGateway, type RunningGateway } from '../support/gateway-harness.js';
import type { Authenticator, Identity } from '../../gateway/auth/identity.js';

const admin: Identity = {
  sub: 'a',
  email: 'sysadmin@platform.example',
  name: 'Sys',
  roles: ['PlatformSysAdmin'],
  groups: [],
  tenants: [],
  admin: true,
  activeTenant: null,
  via: 'bearer',
};

describe('route classes: letter case through the gateway', () => {
  let upstream: OpenWebUIStandIn;
  let anonymous: RunningGateway;
  let signedIn: RunningGateway;
  const who = (identity: Identity | undefined): Authenticator => ({
    router: Router(),
    authenticate: async () => identity,
    ready: async () => ({ ok: true, detail: 'stub' }),
    close: async () => {},
  });

  before(async () => {
    upstream = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: true });
    const dir = mkdtempSync(join(tmpdir(), 'route-case-'));
    writeFileSync(join(dir, 'providers.json'), JSON.stringify(demoIdentityProviders));
    const env = baseEnv(upstream.url, { IDP_PROVIDERS_FILE: join(dir, 'providers.json'), DRIFT_CHECK_SECONDS: '0', LOG_LEVEL: 'silent' });
    anonymous = await startGateway(env, { authenticator: who(undefined) });
    signedIn = await startGateway(env, { authenticator: who(admin) });
  });
  after(async () => {
    await anonymous?.close();
    await signedIn?.close();
    await upstream?.close();
  });

  const get = (gw: RunningGateway, path: string, accept = 'text/html') => fetch(`${gw.url}${path}`, { headers: { accept }, redirect: 'manual' });
  const upstreamSaw = (path: string) => upstream.requests.some((r) => r.url.split('?')[0]!.toLowerCase() === path.toLowerCase());

  it('/AUTH/login and /DE/Auth/Login are the login page, as /auth/login', async () => {
    const lower = await get(anonymous, '/auth/login');
    expect(lower.status).to.equal(200);
    for (const path of ['/AUTH/login', '/DE/Auth/Login', '/Auth/Login/']) {
      const res = await get(signedIn, path);
      expect(res.status, path).to.equal(200);
      expect(res.headers.get('content-type'), path).to.match(/text\/html/);
      expect(upstreamSaw(path), path).to.equal(false);
    }
  });

  it('/API/v1/auth-providers/ and /HEALTHZ are answered by the gateway', async () => {
    const lower = await (await get(anonymous, '/api/v1/auth-providers/', 'application/json')).json();
    const upper = await get(anonymous, '/API/V1/Auth-Providers/', 'application/json');
    expect(upper.status).to.equal(200);
    expect(await upper.json()).to.deep.equal(lower);
    const health = await get(anonymous, '/HEALTHZ', 'application/json');
    expect(health.status).to.equal(200);
    expect(await health.json()).to.deep.equal({ status: 'ok' });
  });

  it('any casing of an API path: 401 without identity, never the guard\u2019s redirect, never the upstream', async () => {
    for (const path of ['/API/v1/chats/all/db', '/Api/V1/Files/', '/WS/socket.io/']) {
      const before = upstream.requests.length;
      const res = await get(anonymous, path, 'application/json');
      expect(res.status, path).to.equal(401);
      expect(upstream.requests.length, path).to.equal(before);
    }
  });

  it('the export stays blocked for any casing when the switch is off', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'route-case-'));
    writeFileSync(join(dir, 'providers.json'), JSON.stringify(demoIdentityProviders));
    const off = await startGateway(baseEnv(upstream.url, { IDP_PROVIDERS_FILE: join(dir, 'providers.json'), DRIFT_CHECK_SECONDS: '0', LOG_LEVEL: 'silent' }), {
      authenticator: who(admin),
    });
    try {
      for (const path of ['/API/v1/chats/all/db', '/api/V1/CHATS/ALL/DB/', '/API/V1/UTILS/DB/DOWNLOAD']) {
        const res = await get(off, path, 'application/json');
        expect(res.status, path).to.equal(401);
        // (the caller's own trusted-header sign-in may reach the upstream; the export never does)
        expect(upstreamSaw(path), path).to.equal(false);
      }
    } finally {
      await off.close();
    }
  });

  it('/STATIC/... is no public asset: without identity it gets the logged-out guard', async () => {
    expect((await get(anonymous, '/static/app.js')).status, 'the public asset').to.equal(200);
    const res = await get(anonymous, '/STATIC/app.js');
    expect(res.status).to.equal(302);
    expect(res.headers.get('location')).to.match(/^\/auth\/login/);
  });
});
