// The demo realm: accounts and brokered identity providers of the Keycloak realm `platform`, shared
// by the test stand-ins and the `npm start` sandbox. Fake demo data: the providers' `clientSecret`s are
// deliberately raw, so the admin-API stand-in has something to mask, as Keycloak does.

export interface DemoAccount {
  /** Keycloak user id (a UUID), the `sub` of every token. */
  sub: string;
  username: string;
  password: string;
  email: string;
  name: string;
  /** Realm roles: what the `roles` claim and `realm_access.roles` carry. */
  roles: string[];
  /** Keycloak group names (without the leading `/`), the `groups` claim. */
  groups: string[];
  /** Tenant ids the user is a member of, the `tenants` claim. */
  tenants: string[];
  /** What this account is for, printed by the sandbox next to the demo logins. */
  note: string;
}

/** A Keycloak IdentityProviderRepresentation (the full form, as stored in the realm). */
export interface KeycloakIdentityProvider {
  alias: string;
  displayName?: string;
  providerId: string;
  enabled: boolean;
  linkOnly?: boolean;
  /** Keycloak 26+: top-level hide flag. Before 26: `config.hideOnLoginPage: "true"`. */
  hideOnLogin?: boolean;
  config?: Record<string, string>;
  internalId?: string;
  trustEmail?: boolean;
  storeToken?: boolean;
  [k: string]: unknown;
}

export const demoAccounts: DemoAccount[] = [
  {
    sub: '5f1c2a9e-0b1d-4c3e-9a41-6d2f7e8a0001',
    username: 'sysadmin',
    password: 'sysadmin-pass',
    email: 'sysadmin@platform.example',
    name: 'Sam Sysadmin',
    roles: ['PlatformSysAdmin'],
    groups: [],
    tenants: ['acme'],
    note: 'platform administrator (realm role PlatformSysAdmin): chat admin; tenant acme, in no chat group',
  },
  {
    sub: '5f1c2a9e-0b1d-4c3e-9a41-6d2f7e8a0002',
    username: 'superuser',
    password: 'superuser-pass',
    email: 'superuser@platform.example',
    name: 'Sue Superuser',
    roles: ['PlatformSysAdmin'],
    groups: ['acme', 'globex', 'initech'],
    tenants: ['acme', 'globex', 'initech'],
    note: 'platform superuser: chat admin and member of every tenant group',
  },
  {
    sub: '5f1c2a9e-0b1d-4c3e-9a41-6d2f7e8a0003',
    username: 'alice',
    password: 'alice-pass',
    email: 'alice@acme.example',
    name: 'Alice Acme',
    roles: [],
    groups: ['acme'],
    tenants: ['acme'],
    note: 'plain user of tenant acme',
  },
  {
    sub: '5f1c2a9e-0b1d-4c3e-9a41-6d2f7e8a0004',
    username: 'bob',
    password: 'bob-pass',
    email: 'bob@globex.example',
    name: 'Bob Globex',
    roles: [],
    groups: ['globex'],
    tenants: ['globex'],
    note: 'plain user of tenant globex',
  },
  {
    sub: '5f1c2a9e-0b1d-4c3e-9a41-6d2f7e8a0005',
    username: 'tina',
    password: 'tina-pass',
    email: 'tina@acme.example',
    name: 'Tina Tenantadmin',
    roles: [],
    groups: ['acme'],
    tenants: ['acme'],
    note: 'tenant admin of acme: holds PlatformAdmin in the platform store only, so an ordinary chat user',
  },
  {
    sub: '5f1c2a9e-0b1d-4c3e-9a41-6d2f7e8a0006',
    username: 'carol',
    password: 'carol-pass',
    email: 'carol@acme.example',
    name: 'Carol Consultant',
    roles: [],
    groups: ['acme', 'globex'],
    tenants: ['acme', 'globex'],
    note: 'plain user, member of two tenants (acme and globex)',
  },
];

export function findDemoAccount(username: string, accounts: DemoAccount[] = demoAccounts): DemoAccount | undefined {
  const u = username.toLowerCase();
  return accounts.find((a) => a.username.toLowerCase() === u || a.email.toLowerCase() === u);
}

const oidcConfig = (base: string, clientId: string, secret: string, guiOrder: string): Record<string, string> => ({
  clientId,
  clientSecret: secret,
  clientAuthMethod: 'client_secret_post',
  issuer: base,
  authorizationUrl: `${base}/oauth2/v1/authorize`,
  tokenUrl: `${base}/oauth2/v1/token`,
  userInfoUrl: `${base}/oauth2/v1/userinfo`,
  jwksUrl: `${base}/oauth2/v1/keys`,
  useJwksUrl: 'true',
  validateSignature: 'true',
  pkceEnabled: 'true',
  pkceMethod: 'S256',
  defaultScope: 'openid profile email',
  syncMode: 'IMPORT',
  guiOrder,
});

const brokerDefaults = {
  updateProfileFirstLoginMode: 'on',
  trustEmail: false,
  storeToken: false,
  addReadTokenRoleOnCreate: false,
  authenticateByDefault: false,
  linkOnly: false,
  firstBrokerLoginFlowAlias: 'first broker login',
};

/**
 * The realm's brokered identity providers in Keycloak's full representation, as a pre-26 realm
 * stores them (the hide flag lives in `config.hideOnLoginPage`). The admin-API stand-in turns
 * that into the top-level `hideOnLogin` when it plays Keycloak 26.
 */
export const demoIdentityProviders: KeycloakIdentityProvider[] = [
  {
    ...brokerDefaults,
    alias: 'acme-entra',
    displayName: 'Acme (Microsoft Entra ID)',
    internalId: '0d6a3c55-1e0f-4f52-8d7c-000000000001',
    providerId: 'oidc',
    enabled: true,
    trustEmail: true,
    config: {
      ...oidcConfig('https://login.microsoftonline.com/00000000-0000-0000-0000-00000000acme/v2.0', 'acme-keycloak-broker', 'not-a-real-secret-acme-entra', '1'),
      authorizationUrl: 'https://login.microsoftonline.com/00000000-0000-0000-0000-00000000acme/oauth2/v2.0/authorize',
      tokenUrl: 'https://login.microsoftonline.com/00000000-0000-0000-0000-00000000acme/oauth2/v2.0/token',
      userInfoUrl: 'https://graph.microsoft.com/oidc/userinfo',
      jwksUrl: 'https://login.microsoftonline.com/00000000-0000-0000-0000-00000000acme/discovery/v2.0/keys',
    },
  },
  {
    ...brokerDefaults,
    alias: 'globex-okta',
    displayName: 'Globex (Okta)',
    internalId: '0d6a3c55-1e0f-4f52-8d7c-000000000002',
    providerId: 'oidc',
    enabled: true,
    config: oidcConfig('https://globex.okta.example', 'globex-keycloak-broker', 'not-a-real-secret-globex-okta', '2'),
  },
  {
    ...brokerDefaults,
    alias: 'hidden-saml',
    displayName: 'Hidden SAML partner',
    internalId: '0d6a3c55-1e0f-4f52-8d7c-000000000003',
    providerId: 'saml',
    enabled: true,
    config: {
      entityId: 'https://keycloak.platform.example/realms/platform',
      idpEntityId: 'https://saml.partner.example/metadata',
      singleSignOnServiceUrl: 'https://saml.partner.example/sso',
      singleLogoutServiceUrl: 'https://saml.partner.example/slo',
      nameIDPolicyFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      principalType: 'SUBJECT',
      postBindingResponse: 'true',
      postBindingAuthnRequest: 'true',
      wantAuthnRequestsSigned: 'false',
      validateSignature: 'false',
      syncMode: 'IMPORT',
      guiOrder: '3',
      hideOnLoginPage: 'true',
    },
  },
  {
    ...brokerDefaults,
    alias: 'partner-linkonly',
    displayName: 'Partner (account linking only)',
    internalId: '0d6a3c55-1e0f-4f52-8d7c-000000000004',
    providerId: 'oidc',
    enabled: true,
    linkOnly: true,
    config: oidcConfig('https://idp.partner.example', 'partner-keycloak-broker', 'not-a-real-secret-partner', '4'),
  },
  {
    ...brokerDefaults,
    alias: 'legacy-disabled',
    displayName: 'Legacy (disabled)',
    internalId: '0d6a3c55-1e0f-4f52-8d7c-000000000005',
    providerId: 'oidc',
    enabled: false,
    config: oidcConfig('https://legacy.example', 'legacy-keycloak-broker', 'not-a-real-secret-legacy', '5'),
  },
];

/** The `IDP_TENANT_IDP_ALIASES` value of the demo realm. */
export const demoTenantAliases = 'acme=acme-entra,globex=globex-okta,initech=partner-linkonly';
