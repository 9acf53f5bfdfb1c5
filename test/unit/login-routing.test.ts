// policies/login-routing.ts: the tenant lookup's outcomes (links 2, 3) and the guard's locale rule.
import { expect } from 'chai';
import { guardLoginLocale, splitGuardPath, tenantOutcome, type IdentityProvider } from '../../policies/login-routing.js';

describe('unit: tenant lookup outcomes', () => {
  it('a mapped tenant with a usable provider is linked to its alias', () => {
    const p: IdentityProvider = { alias: 'acme-entra', enabled: true, linkOnly: false, hideOnLogin: true };
    expect(tenantOutcome('acme-entra', p)).to.deep.equal({ alias: 'acme-entra', outcome: 'linked' });
  });
  it('unmapped, unusable (absent, disabled, link-only) and unavailable all answer alias null', () => {
    expect(tenantOutcome(undefined, undefined)).to.deep.equal({ alias: null, outcome: 'unmapped' });
    expect(tenantOutcome('x', null)).to.deep.equal({ alias: null, outcome: 'unusable' });
    expect(tenantOutcome('x', { alias: 'x', enabled: false, linkOnly: false })).to.deep.equal({ alias: null, outcome: 'unusable' });
    expect(tenantOutcome('x', { alias: 'x', enabled: true, linkOnly: true })).to.deep.equal({ alias: null, outcome: 'unusable' });
    expect(tenantOutcome('x', new Error('catalog down'))).to.deep.equal({ alias: null, outcome: 'unavailable' });
  });
});

describe('unit: the guard\u2019s login-page locale', () => {
  const speaks = (tag: string) => /^(en|de)(-|$)/i.test(tag);
  const of = (path: string) => guardLoginLocale(splitGuardPath(path), path, speaks);
  it('a locale in front of more segments is kept, spoken or not', () => {
    expect(of('/de/acme')).to.equal('de');
    expect(of('/fr/acme/c/1')).to.equal('fr');
  });
  it('a lone segment is a locale only when the pages speak it; otherwise it is a tenant candidate', () => {
    expect(of('/de')).to.equal('de');
    expect(of('/de-CH')).to.equal('de-CH');
    expect(of('/zzz')).to.equal(undefined);
    expect(of('/acme')).to.equal(undefined);
  });
  it('no locale for the root or reserved segments', () => {
    expect(of('/')).to.equal(undefined);
    expect(of('/api')).to.equal(undefined);
  });
});
