// A gateway session for the benchmarks, by a real code-flow login at the sandbox's OpenID provider
// (what a browser does: /auth/start, the provider's login, /auth/callback). One copy for bench/run.ts,
// bench/soak.ts and bench/real-open-webui.ts, so that no benchmark imports the tests' helpers.
import { CookieJar } from '../sandbox/cookie-jar.js';
import { loginThroughIdp } from '../sandbox/idp-browser.js';

/** The Cookie header of a new gateway session of `username` (a demo account's password unless `password` is given). */
export async function gatewaySessionCookie(gatewayUrl: string, username: string, password?: string): Promise<string> {
  const jar = new CookieJar();
  const startUrl = `${gatewayUrl}/auth/start`;
  const start = await fetch(startUrl, { redirect: 'manual' });
  jar.store(start.headers.getSetCookie(), startUrl);
  const location = start.headers.get('location');
  if (start.status !== 302 || !location) throw new Error(`/auth/start answered ${start.status}`);
  const { callbackUrl } = await loginThroughIdp(new URL(location, startUrl).href, username, password);
  const callback = await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: jar.header(callbackUrl) } });
  jar.store(callback.headers.getSetCookie(), callbackUrl);
  if (callback.status !== 302) throw new Error(`/auth/callback answered ${callback.status}`);
  return jar.header(`${gatewayUrl}/`);
}
