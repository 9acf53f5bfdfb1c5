// What the live-settings suites share: who the test callers are, and a policy file's text.

/** The callers of the header authenticator (test/support/gateway-harness.ts): the stand-in's seeded admin and a plain user. */
export const PEOPLE = {
  admin: {
    sub: 'admin-sub',
    email: 'sysadmin@platform.example',
    name: 'Sam Sysadmin',
    roles: ['PlatformSysAdmin'],
    admin: true,
    groups: [],
    tenants: [],
    activeTenant: null,
  },
  user: { sub: 'alice-sub', email: 'alice@acme.example', name: 'Alice Acme', roles: [], admin: false, groups: [], tenants: [], activeTenant: null },
};

/** A policy file's text: the two switches and the login routing's. */
export const policyText = (o: { bypass: boolean; exportOn: boolean; welcome?: boolean }) =>
  `# the platform's live settings\nCHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "${o.bypass}"\nCHATUI_ENABLE_ADMIN_EXPORT: "${o.exportOn}"\n` +
  `IDP_LOGIN_WELCOME_PAGE: ${o.welcome ?? false}\nSHOW_IDP_LOGIN: ${o.welcome ?? false}\n`;
