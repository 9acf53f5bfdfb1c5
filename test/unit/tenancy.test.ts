// policies/tenancy.ts: the active tenant at sign-in and refresh (links rules 10, 11), the tenant switch.
import { expect } from 'chai';
import { activeTenantAtRefresh, activeTenantAtSignIn, firstTenant, tenantSwitch } from '../../policies/tenancy.js';

describe('unit: tenancy rules', () => {
  it('sign-in through a linked tenant the user is a member of makes it active (links 10)', () => {
    expect(activeTenantAtSignIn(['acme', 'globex'], 'globex')).to.include({ active: 'globex', member: true });
  });
  it('sign-in through another tenant\u2019s link: signed in, first own tenant active, not a member (links 11)', () => {
    expect(activeTenantAtSignIn(['acme'], 'globex')).to.include({ active: 'acme', member: false });
    expect(activeTenantAtSignIn([], 'globex')).to.include({ active: null, member: false });
  });
  it('sign-in without a link: the first tenant, or none', () => {
    expect(activeTenantAtSignIn(['acme', 'globex'], undefined)).to.include({ active: 'acme', member: false });
    expect(activeTenantAtSignIn([], undefined).active).to.equal(null);
    expect(firstTenant([])).to.equal(null);
  });
  it('refresh keeps the active tenant while the renewed tenants hold it, else the first tenant', () => {
    expect(activeTenantAtRefresh(['acme', 'globex'], 'globex').active).to.equal('globex');
    expect(activeTenantAtRefresh(['acme'], 'globex').active).to.equal('acme');
    expect(activeTenantAtRefresh([], 'globex').active).to.equal(null);
    expect(activeTenantAtRefresh(['acme'], null).active).to.equal('acme');
  });
  it('every answer names its rule', () => {
    for (const r of [
      activeTenantAtSignIn(['a'], 'a'),
      activeTenantAtSignIn(['a'], 'b'),
      activeTenantAtSignIn(['a'], undefined),
      activeTenantAtRefresh(['a'], 'a'),
      activeTenantAtRefresh(['a'], 'b'),
    ]) {
      expect(r.rule).to.be.a('string').and.not.equal('');
    }
  });
  it('the tenant switch: a member\u2019s tenant id passes; not a member 403; not a tenant id 400', () => {
    expect(tenantSwitch(['acme', 'globex'], 'globex')).to.deep.include({ allow: true, tenant: 'globex' });
    expect(tenantSwitch(['acme'], 'globex')).to.deep.include({ allow: false, status: 403, detail: 'Not a member of this tenant' });
    for (const bad of [undefined, null, 42, '', 'a b', '-acme', 'x'.repeat(129), ['acme']]) {
      expect(tenantSwitch(['acme'], bad), String(bad)).to.deep.include({ allow: false, status: 400 });
    }
    // membership is exact: no case folding, no prefixes
    expect(tenantSwitch(['acme'], 'ACME').allow).to.equal(false);
    expect(tenantSwitch(['acme-eu'], 'acme').allow).to.equal(false);
  });
});
