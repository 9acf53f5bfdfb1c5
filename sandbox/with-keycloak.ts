// `npm run sandbox:keycloak`: the sandbox of `npm start` (the Open WebUI stand-in with its demo
// users, files and chats, the gateway), signing in against the real Keycloak instead of the
// embedded OpenID provider: the realm of deploy/keycloak/realm-platform.json (the demo logins are
// its users), the provider catalog from its Admin REST API, and Acme's tenant link brokered to
// the realm acme-idp of the same server (dana / dana-pass). Needs Java; the first run installs
// Keycloak (scripts/keycloak.sh install). Keycloak stops with the sandbox (Ctrl-C).
import { randomBytes } from 'node:crypto';
import { sandboxSettingsOrExit, startSandbox } from './main.js';
import { ACME_IDP_REALM_FILE, KC_ADMIN, pointRealmAt, startKeycloak } from './keycloak.js';

const base = sandboxSettingsOrExit('sandbox:keycloak');
const clientSecret = randomBytes(24).toString('base64url');
process.stdout.write('Starting Keycloak with deploy/keycloak/realm-platform.json (a fresh realm: a minute or two)...\n');
const kc = await startKeycloak({ realms: [ACME_IDP_REALM_FILE], env: { OIDC_CLIENT_SECRET: clientSecret } });
process.stdout.write(
  `Keycloak ready in ${(kc.startMs / 1000).toFixed(1)} s at ${kc.url} (admin console ${kc.url}/admin/: ${KC_ADMIN.username} / ${KC_ADMIN.password})\n`,
);
await startSandbox(base, {
  command: 'npm run sandbox:keycloak',
  realm: {
    issuer: kc.issuer('platform'),
    clientSecret,
    onAddress: (publicUrl) =>
      pointRealmAt(kc, { gatewayUrls: [publicUrl], backchannelUrl: `${publicUrl.replace('localhost', '127.0.0.1')}/auth/backchannel-logout` }),
    close: () => kc.stop(),
  },
});
