// Two gateway processes (gateway/main.ts, A and B) sharing their state through the Redis of
// `redisEnv`, in front of the chat front-end stand-in, signing in at the real oidc-provider; A's
// address is the one the users and the realm know (a load balancer's, in production). And session
// cookies minted from a signed-in one, each its own session, for trials that need many.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { browse, Jar, signIn, worldEnv, CLIENT_ID, CLIENT_SECRET, SESSION_SECRET } from './cookie-jar.js';
import { gatewayProcess } from './gateway-harness.js';
import { freePort } from './raw-http.js';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { SessionCodec, isSessionData, readSessionCookie } from '../../gateway/auth/session-cookie.js';
import { sleep } from './wait.js';

export interface TwoGateways {
  urls: { A: string; B: string };
  /** what each process wrote (its log lines) */
  output: { A: () => string; B: () => string };
  close(): Promise<void>;
}

/** Both processes started and in sync with Redis. */
export async function startTwoGateways(redisEnv: Record<string, string>): Promise<TwoGateways> {
  const upstream: OpenWebUIStandIn = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: false, groups: ['acme', 'globex', 'initech'] });
  const [portA, portB] = [await freePort(), await freePort()];
  const urls = { A: `http://127.0.0.1:${portA}`, B: `http://127.0.0.1:${portB}` };
  const idp: TestIdp = await startIdp({
    clients: [
      { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${urls.A}/auth/callback`], post_logout_redirect_uris: [`${urls.A}/auth/login`] },
    ],
    accessTokenTtl: 300,
  });
  const dir = mkdtempSync(join(tmpdir(), 'two-gateways-'));
  const providersFile = join(dir, 'providers.json');
  writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
  const children: ChildProcess[] = [];
  const close = async () => {
    for (const c of children) c.kill('SIGKILL');
    await Promise.all([idp.close(), upstream.close()]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const env = {
      ...worldEnv({ upstreamUrl: upstream.url, publicUrl: urls.A, issuer: idp.issuer, providersFile }),
      HOST: '127.0.0.1',
      DRIFT_CHECK_SECONDS: '0',
      ...redisEnv,
    };
    const [a, b] = [await gatewayProcess({ ...env, PORT: String(portA) }), await gatewayProcess({ ...env, PORT: String(portB) })];
    children.push(a.child, b.child);
    for (const url of Object.values(urls)) {
      const deadline = Date.now() + 20_000;
      while (
        (await fetch(`${url}/readyz`).then(
          (r) => r.status,
          () => 0,
        )) !== 200
      ) {
        if (Date.now() > deadline) throw new Error(`${url} not in sync with Redis`);
        await sleep(100);
      }
    }
    return { urls, output: { A: a.output, B: b.output }, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * A minter of sessions from one signed in at `url` as `user`: each jar it gives holds a session of
 * its own (a new id, no refresh token), what a trial needs of many sessions without as many sign-ins.
 */
export async function sessionMinter(url: string, user: string): Promise<() => Promise<Jar>> {
  const { jar } = await signIn(url, user);
  const codec = new SessionCodec([SESSION_SECRET], { secure: false, rollingSeconds: 86_400, absoluteSeconds: 7 * 86_400 });
  const found = readSessionCookie(jar.header('/'));
  const session = found && (await codec.decrypt(found.value));
  if (!session || !isSessionData(session.data)) throw new Error('sessionMinter: no session to mint from');
  const { data, header } = session;
  return async () => {
    const value = await codec.encrypt({ ...data, id: randomUUID(), refresh_token: null }, header);
    const minted = new Jar(url);
    minted.store(codec.setCookieLines(value, header.exp, []));
    return minted;
  };
}

/** The status of the jar's session at `url` (a signed-in API route), the jar itself left as it is. */
export const sessionStatus = (jar: Jar, url: string) => browse(jar.clone(), `${url}/api/v1/auths/`).then((r) => r.status);
