// policies/routes.ts classify(): the letter-case rule of each route class (see the top of that file).
import { expect } from 'chai';
import { classify } from '../../policies/routes.js';
import { decide } from '../../policies/admin-scoping.js';

describe('unit: route classes and letter case', () => {
  it('the gateway\u2019s own routes match in any case, as Express (the control app) matches them', () => {
    for (const p of [
      '/AUTH/login',
      '/Auth/Login/acme',
      '/DE/auth/login',
      '/de/AUTH/login',
      '/API/v1/auth-providers',
      '/Api/V1/Auth-Providers/tenants/acme',
      '/API/v1/AUTHS/signout',
      '/HEALTHZ',
      '/Readyz',
      '/METRICS',
      '/AUTH',
    ]) {
      expect(classify(p), p).to.equal('control');
    }
  });
  it('any casing of an API prefix is the API: identity required, 401 without', () => {
    for (const p of [
      '/API/v1/chats/all/db',
      '/Api/V1/Files/',
      '/WS/socket.io/',
      '/OpenAI/models',
      '/OLLAMA/api/tags',
      '/API',
      '/Ws',
      '/API/auth/login',
      '/WS/auth/logout',
    ]) {
      expect(classify(p), p).to.equal('api');
    }
  });
  it('... and the policy judges it as it judges the lower-case path (fail closed)', () => {
    const off = { bypassAdminAccessControl: false, enableAdminExport: false };
    for (const p of ['/API/v1/chats/all/db', '/api/V1/CHATS/all/DB/', '/API/V1/UTILS/DB/DOWNLOAD']) {
      expect(decide({ method: 'GET', path: p }, off, { admin: true }), p).to.deep.include({ action: 'deny', status: 401 });
    }
    expect(decide({ method: 'GET', path: '/API/V1/FILES/' }, off, { admin: true }).action).to.equal('filter-own-files');
  });
  it('public assets pass without identity only as spelled: another casing is a page (identity required)', () => {
    for (const p of ['/static/app.js', '/_app/x.js', '/favicon.png', '/health', '/manifest.json']) expect(classify(p), p).to.equal('public');
    for (const p of ['/STATIC/app.js', '/_APP/x.js', '/Favicon.png', '/HEALTH', '/Manifest.json']) expect(classify(p), p).to.equal('page');
  });
  it('pages stay pages, whatever their case', () => {
    for (const p of ['/', '/acme', '/ACME/c/1', '/de/acme', '/Authx', '/auth-info']) expect(classify(p), p).to.equal('page');
  });
});
