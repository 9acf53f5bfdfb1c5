// The real Keycloak for tests: the launcher lives in sandbox/keycloak.ts (the sandbox runs against
// it too, and the sandbox never imports test code); tests import it from here or from there.
export * from '../../sandbox/keycloak.js';
