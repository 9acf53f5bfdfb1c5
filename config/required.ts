// What must be set, and what must not be used, given the stage: checked on the raw values so that
// every problem is listed at once.
import { existsSync } from 'node:fs';
import { SECRETS, type Env } from './env.js';

/** config/dev.env's secrets are public (they are in the repository): their values start so. */
const PUBLIC_DEV_SECRET = /^dev-only-/;

/** localhost, 127.0.0.0/8 or [::1]: an address only this machine reaches. */
function isLoopbackUrl(value: string | undefined): boolean {
  try {
    const host = new URL((value ?? '').trim()).hostname;
    return host === 'localhost' || /^127(?:\.\d{1,3}){3}$/.test(host) || host === '[::1]';
  } catch {
    return false;
  }
}

/** What must be present given the stage; checked on the raw values so that every problem is listed at once. */
export function requiredProblems(env: Env): string[] {
  const problems: string[] = [];
  const has = (name: string) => (env[name] ?? '').trim() !== '';
  const production = env.NODE_ENV === 'production';
  const sandbox = !production && !has('UPSTREAM_URL');
  const need = (name: string, why: string) => {
    if (!has(name)) problems.push(`${name}: required ${why}`);
  };
  if (!sandbox) {
    need('UPSTREAM_URL', 'in production (the chat front-end, e.g. http://open-webui:8080)');
    need('OIDC_ISSUER_URL', '(the realm, e.g. https://kc.example/realms/platform)');
    need('OIDC_CLIENT_ID', "(the gateway's confidential client)");
    need('OIDC_CLIENT_SECRET', "(the gateway's confidential client)");
    need('SESSION_SECRET', '(at least 32 characters)');
    if (production) need('PUBLIC_URL', 'in production (the address browsers use)');
  }
  // Anyone can forge an admin session with a public secret: only the sandbox (which makes its own)
  // and a development gateway that only this machine reaches (docker compose with the dev stage
  // file, PUBLIC_URL on localhost) may run on one.
  const publicUrl = has('PUBLIC_URL') ? env.PUBLIC_URL : `http://localhost:${env.PORT ?? 8080}`;
  if (production || !isLoopbackUrl(publicUrl)) {
    for (const name of SECRETS) {
      if ((env[name] ?? '').split(',').some((v) => PUBLIC_DEV_SECRET.test(v.trim()))) {
        problems.push(
          `${name}: the public dev-only value of config/dev.env is refused ${production ? 'in production' : `with PUBLIC_URL ${publicUrl} (not loopback)`}: set a secret of your own`,
        );
      }
    }
  }
  // A realm reached over plain http can be impersonated on the way: production wants https.
  if (
    production &&
    has('OIDC_ISSUER_URL') &&
    /^http:/i.test(env.OIDC_ISSUER_URL!.trim()) &&
    !isLoopbackUrl(env.OIDC_ISSUER_URL) &&
    !/^(true|1|yes)$/i.test((env.ALLOW_INSECURE_ISSUER ?? '').trim())
  ) {
    problems.push(
      `OIDC_ISSUER_URL: an http: issuer is refused in production unless it is a loopback address or ALLOW_INSECURE_ISSUER=true (got ${JSON.stringify(env.OIDC_ISSUER_URL)})`,
    );
  }
  const secrets = (env.SESSION_SECRET ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  secrets.forEach((secret, i) => {
    if (secret.length < 32) problems.push(`SESSION_SECRET: key ${i + 1} has ${secret.length} characters, at least 32 are required`);
  });
  const file = (env.IDP_PROVIDERS_FILE ?? '').trim();
  if (file && !existsSync(file)) problems.push(`IDP_PROVIDERS_FILE: no such file ${JSON.stringify(file)}`);
  if (env.OAUTH_ADMIN_ROLES !== undefined && env.OAUTH_ADMIN_ROLES.split(',').every((r) => !r.trim()) && env.OAUTH_ADMIN_ROLES.trim() !== '') {
    problems.push('OAUTH_ADMIN_ROLES: at least one role is required');
  }
  return problems;
}
