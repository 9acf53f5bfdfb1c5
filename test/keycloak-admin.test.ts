import { expect } from 'chai';
import { startKeycloakAdmin, type KeycloakAdmin, type KeycloakIdentityProvider } from './support/keycloak-admin.js';
import { demoIdentityProviders } from '../sandbox/demo-realm.js';
import { sleep } from './support/wait.js';

const ID = 'gateway-admin';
const SECRET = 'gateway-admin-secret';
const basic = (id = ID, secret = SECRET) => 'Basic ' + Buffer.from(`${id}:${secret}`).toString('base64');

async function getToken(kc: KeycloakAdmin, auth = basic()) {
  const res = await fetch(kc.tokenUrl, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

async function admin(kc: KeycloakAdmin, path: string, token?: string) {
  const res = await fetch(`${kc.adminUrl}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

function manyProviders(n: number): KeycloakIdentityProvider[] {
  return Array.from({ length: n }, (_, i) => ({
    alias: `idp-${String(i).padStart(3, '0')}`,
    displayName: `IdP ${i}`,
    providerId: 'oidc',
    enabled: true,
    config: { clientId: `c${i}`, clientSecret: 's3cret' },
  }));
}

describe('Keycloak admin API stand-in (identity providers)', function () {
  this.timeout(10_000);

  describe('with the demo realm, version 26', () => {
    let kc: KeycloakAdmin;
    let token: string;
    before(async () => {
      kc = await startKeycloakAdmin({ clientId: ID, clientSecret: SECRET });
      token = (await getToken(kc)).json.access_token;
    });
    after(async () => {
      await kc?.close();
    });

    it('exposes Keycloak-shaped addresses', () => {
      expect(kc.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(kc.adminUrl).to.equal(`${kc.url}/admin/realms/platform`);
      expect(kc.tokenUrl).to.equal(`${kc.url}/realms/platform/protocol/openid-connect/token`);
    });

    it('issues a service-account token for client_credentials with HTTP Basic only', async () => {
      const ok = await getToken(kc);
      expect(ok.status).to.equal(200);
      expect(ok.json).to.include({ token_type: 'Bearer', expires_in: 300 });
      expect(ok.json.access_token).to.be.a('string');

      const wrong = await getToken(kc, basic(ID, 'nope'));
      expect(wrong.status).to.equal(401);
      expect(wrong.json.error).to.equal('unauthorized_client');

      const post = await fetch(kc.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: ID, client_secret: SECRET }),
      });
      expect(post.status).to.equal(401);
      expect(((await post.json()) as any).error).to.equal('unauthorized_client');

      const grant = await fetch(kc.tokenUrl, {
        method: 'POST',
        headers: { authorization: basic(), 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=password&username=x&password=y',
      });
      expect(grant.status).to.equal(400);
    });

    it('requires a valid bearer on admin routes', async () => {
      expect((await admin(kc, '/identity-provider/instances')).status).to.equal(401);
      expect((await admin(kc, '/identity-provider/instances', 'made-up')).status).to.equal(401);
      expect((await admin(kc, '/identity-provider/instances/acme-entra')).status).to.equal(401);
      const r = await admin(kc, '/identity-provider/instances', token);
      expect(r.status).to.equal(200);
    });

    it('lists the full form by default, sorted by alias, secrets stripped, hideOnLogin top-level', async () => {
      const r = await admin(kc, '/identity-provider/instances', token);
      expect(r.json.map((p: any) => p.alias)).to.deep.equal([...demoIdentityProviders.map((p) => p.alias)].sort());
      const hidden = r.json.find((p: any) => p.alias === 'hidden-saml');
      expect(hidden.hideOnLogin).to.equal(true);
      expect(hidden.config).to.not.have.property('hideOnLoginPage');
      const acme = r.json.find((p: any) => p.alias === 'acme-entra');
      expect(acme).to.include({ hideOnLogin: false, linkOnly: false, enabled: true, providerId: 'oidc' });
      expect(acme.config.clientSecret).to.equal('**********');
      expect(acme.config.clientId).to.equal('acme-keycloak-broker');
      expect(r.json.find((p: any) => p.alias === 'partner-linkonly').linkOnly).to.equal(true);
      expect(r.json.find((p: any) => p.alias === 'legacy-disabled').enabled).to.equal(false);
      // the seed itself is untouched
      expect(kc.providers.find((p) => p.alias === 'hidden-saml')!.config!.hideOnLoginPage).to.equal('true');
    });

    it('answers the brief form with only alias, displayName, providerId, enabled, internalId', async () => {
      const r = await admin(kc, '/identity-provider/instances?briefRepresentation=true', token);
      expect(r.json).to.have.length(demoIdentityProviders.length);
      for (const p of r.json) {
        expect(Object.keys(p).sort()).to.deep.equal(['alias', 'displayName', 'enabled', 'internalId', 'providerId']);
      }
    });

    it('searches by prefix by default, infix with *x*, exact with quotes', async () => {
      const aliases = async (s: string) =>
        (await admin(kc, `/identity-provider/instances?search=${encodeURIComponent(s)}&briefRepresentation=true`, token)).json.map((p: any) => p.alias);
      expect(await aliases('acme')).to.deep.equal(['acme-entra']);
      expect(await aliases('entra')).to.deep.equal([]);
      expect(await aliases('*entra*')).to.deep.equal(['acme-entra']);
      expect(await aliases('*-*')).to.have.length(5);
      expect(await aliases('"globex-okta"')).to.deep.equal(['globex-okta']);
      expect(await aliases('"globex"')).to.deep.equal([]);
    });

    it('gets one provider in full form, or 404', async () => {
      const r = await admin(kc, '/identity-provider/instances/partner-linkonly', token);
      expect(r.status).to.equal(200);
      expect(r.json).to.include({ alias: 'partner-linkonly', linkOnly: true, hideOnLogin: false });
      expect(r.json.config.clientSecret).to.equal('**********');
      const missing = await admin(kc, '/identity-provider/instances/nope', token);
      expect(missing.status).to.equal(404);
    });

    it('counts real calls', async () => {
      const before = { ...kc.calls };
      await getToken(kc);
      await admin(kc, '/identity-provider/instances', token);
      await admin(kc, '/identity-provider/instances/acme-entra', token);
      await admin(kc, '/identity-provider/instances/acme-entra', token);
      expect(kc.calls).to.deep.equal({ token: before.token + 1, list: before.list + 1, get: before.get + 2 });
    });

    it('sees run-time changes to providers and version', async () => {
      kc.providers.push({ alias: 'zeta-new', providerId: 'oidc', enabled: true, hideOnLogin: true });
      kc.version = 25;
      try {
        const r = await admin(kc, '/identity-provider/instances/zeta-new', token);
        expect(r.json.config).to.deep.equal({ hideOnLoginPage: 'true' });
        expect(r.json).to.not.have.property('hideOnLogin');
        expect(r.json.internalId).to.be.a('string');
      } finally {
        kc.providers.pop();
        kc.version = 26;
      }
    });
  });

  describe('version 25', () => {
    let kc: KeycloakAdmin;
    before(async () => {
      kc = await startKeycloakAdmin({ clientId: ID, clientSecret: SECRET, version: 25 });
    });
    after(async () => {
      await kc?.close();
    });

    it('keeps the hide flag in config.hideOnLoginPage and has no hideOnLogin', async () => {
      const token = (await getToken(kc)).json.access_token;
      const r = await admin(kc, '/identity-provider/instances', token);
      const hidden = r.json.find((p: any) => p.alias === 'hidden-saml');
      expect(hidden.config.hideOnLoginPage).to.equal('true');
      expect(hidden).to.not.have.property('hideOnLogin');
      for (const p of r.json) expect(p).to.not.have.property('hideOnLogin');
      expect(r.json.find((p: any) => p.alias === 'acme-entra').config).to.not.have.property('hideOnLoginPage');
    });
  });

  describe('paging', () => {
    let kc: KeycloakAdmin;
    let token: string;
    before(async () => {
      kc = await startKeycloakAdmin({ clientId: ID, clientSecret: SECRET, providers: manyProviders(250) });
      token = (await getToken(kc)).json.access_token;
    });
    after(async () => {
      await kc?.close();
    });

    it('caps an unset max at 100', async () => {
      const r = await admin(kc, '/identity-provider/instances?briefRepresentation=true', token);
      expect(r.json).to.have.length(100);
      expect(r.json[0].alias).to.equal('idp-000');
      expect(r.json[99].alias).to.equal('idp-099');
    });

    it('pages with first and max', async () => {
      const seen: string[] = [];
      for (let first = 0; ; first += 60) {
        const r = await admin(kc, `/identity-provider/instances?first=${first}&max=60`, token);
        seen.push(...r.json.map((p: any) => p.alias));
        if (r.json.length < 60) break;
      }
      expect(seen).to.have.length(250);
      expect(new Set(seen).size).to.equal(250);
      const last = await admin(kc, '/identity-provider/instances?first=240&max=60', token);
      expect(last.json.map((p: any) => p.alias)).to.deep.equal(Array.from({ length: 10 }, (_, i) => `idp-${240 + i}`));
      expect((await admin(kc, '/identity-provider/instances?first=300&max=10', token)).json).to.deep.equal([]);
      expect((await admin(kc, '/identity-provider/instances?max=250', token)).json).to.have.length(250);
    });

    it('honours a custom maxDefault', async () => {
      const small = await startKeycloakAdmin({ clientId: ID, clientSecret: SECRET, providers: manyProviders(12), maxDefault: 5 });
      try {
        const t = (await getToken(small)).json.access_token;
        expect((await admin(small, '/identity-provider/instances', t)).json).to.have.length(5);
        expect((await admin(small, '/identity-provider/instances?first=10', t)).json).to.have.length(2);
      } finally {
        await small.close();
      }
    });
  });

  describe('tokens and faults', () => {
    let kc: KeycloakAdmin;
    let token: string;
    before(async () => {
      kc = await startKeycloakAdmin({ clientId: ID, clientSecret: SECRET, tokenTtl: 1 });
      token = (await getToken(kc)).json.access_token;
    });
    afterEach(async () => {
      await kc.setFault(null);
      token = (await getToken(kc)).json.access_token;
    });
    after(async () => {
      await kc?.close();
    });

    it('rejects an expired token with 401', async () => {
      const r1 = await admin(kc, '/identity-provider/instances', token);
      expect(r1.status).to.equal(200);
      kc.expireTokens();
      expect((await admin(kc, '/identity-provider/instances', token)).status).to.equal(401);
      const t2 = (await getToken(kc)).json.access_token;
      expect((await getToken(kc)).json.expires_in).to.equal(1);
      await sleep(1100);
      expect((await admin(kc, '/identity-provider/instances', t2)).status).to.equal(401);
    });

    it("'down' refuses connections and comes back on the same port", async () => {
      await kc.setFault('down');
      let err: Error | undefined;
      await fetch(`${kc.adminUrl}/identity-provider/instances`).catch((e: Error) => (err = e));
      expect((err?.cause as { code?: string } | undefined)?.code).to.equal('ECONNREFUSED');
      kc.fault = null; // the plain setter works too
      await kc.setFault(null);
      const r = await admin(kc, '/identity-provider/instances', token);
      expect(r.status).to.equal(200);
    });

    it("'slow' delays answers by slowMs", async () => {
      kc.slowMs = 400;
      kc.fault = 'slow';
      const t0 = Date.now();
      const r = await admin(kc, '/identity-provider/instances', token);
      expect(r.status).to.equal(200);
      expect(Date.now() - t0).to.be.at.least(380);
      const t1 = Date.now();
      expect((await getToken(kc)).status).to.equal(200);
      expect(Date.now() - t1).to.be.at.least(380);
      // a client that gives up early does not break the server
      await fetch(`${kc.adminUrl}/identity-provider/instances`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(50) }).catch(
        () => {},
      );
    });

    it("'500' fails admin routes but not the token endpoint", async () => {
      kc.fault = '500';
      const before = kc.calls.list;
      expect((await admin(kc, '/identity-provider/instances', token)).status).to.equal(500);
      expect((await admin(kc, '/identity-provider/instances/acme-entra', token)).status).to.equal(500);
      expect(kc.calls.list).to.equal(before + 1);
      expect((await getToken(kc)).status).to.equal(200);
    });

    it("'invalid-json' answers 200 with a broken body", async () => {
      kc.fault = 'invalid-json';
      const r = await admin(kc, '/identity-provider/instances', token);
      expect(r.status).to.equal(200);
      expect(r.json).to.equal(undefined);
      expect(() => JSON.parse(r.text)).to.throw(SyntaxError);
    });

    it("'token-fail' fails the token endpoint while issued tokens still work", async () => {
      kc.fault = 'token-fail';
      const t = await getToken(kc);
      expect(t.status).to.equal(500);
      expect((await admin(kc, '/identity-provider/instances', token)).status).to.equal(200);
    });
  });
});
