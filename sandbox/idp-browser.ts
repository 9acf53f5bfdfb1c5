// A scripted browser at the realm's OpenID provider (the sandbox's, or the real Keycloak): it follows
// the provider's redirects, fills in its login or logout form, and stops at the redirect back to
// the client, which it never requests.
import { decodeJwt } from 'jose';
import { CookieJar } from './cookie-jar.js';
import { findDemoAccount } from './demo-realm.js';

/** One request, as a browser makes it: the jar's cookies sent, the answer's kept, no redirect followed. */
async function hop(jar: CookieJar, url: string, init: { method?: string; form?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { accept: 'text/html,application/json' };
  const cookie = jar.header(url);
  if (cookie) headers.cookie = cookie;
  let body: string | undefined;
  if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(init.form).toString();
  }
  const res = await fetch(url, { method: init.method ?? 'GET', headers, body, redirect: 'manual' });
  jar.store(res.headers.getSetCookie(), url);
  const location = res.headers.get('location');
  const text = await res.text();
  return { status: res.status, location: location ? new URL(location, url).href : undefined, text };
}

function findForm(html: string): { action: string; fields: Record<string, string> } | undefined {
  const m = /<form\b[^>]*>/i.exec(html);
  if (!m) return undefined;
  const action = /\baction="([^"]*)"/i.exec(m[0])?.[1];
  const end = html.indexOf('</form>', m.index);
  const inner = html.slice(m.index, end < 0 ? undefined : end);
  const fields: Record<string, string> = {};
  for (const input of inner.match(/<input\b[^>]*>/gi) ?? []) {
    const name = /\bname="([^"]*)"/i.exec(input)?.[1];
    if (name) fields[name] = unescapeHtml(/\bvalue="([^"]*)"/i.exec(input)?.[1] ?? '');
  }
  return action === undefined ? undefined : { action: unescapeHtml(action), fields };
}

function unescapeHtml(s: string): string {
  return s
    .replace(/&#(\d+);/g, (_, d) => String.fromCharCode(Number(d)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function pageText(html: string): string {
  return html
    .replace(/<script[\s\S]*?<\/script>/gi, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300);
}

/**
 * Drive the IdP like a browser with its own cookie jar: follow its redirects from `authorizeUrl`
 * (the authorization endpoint with all parameters), submit the login form, and return the final
 * redirect back to the client's redirect_uri (code and state, or an error) without requesting it.
 * `password` defaults to the demo account's. Pass a `jar` to keep the IdP session (for logout or SSO).
 */
export async function loginThroughIdp(
  authorizeUrl: string,
  username: string,
  password?: string,
  jar: CookieJar = new CookieJar(),
): Promise<{ callbackUrl: string; jar: CookieJar }> {
  const start = new URL(authorizeUrl);
  const redirectUri = start.searchParams.get('redirect_uri');
  const pw = password ?? findDemoAccount(username)?.password;
  if (pw === undefined) throw new Error(`loginThroughIdp: no password for ${username}`);
  const isCallback = (loc: string) => {
    const u = new URL(loc);
    if (redirectUri) {
      const r = new URL(redirectUri);
      if (u.origin === r.origin && u.pathname === r.pathname) return true;
    }
    return u.origin !== start.origin;
  };

  let url = authorizeUrl;
  let submitted = false;
  let res = await hop(jar, url);
  for (let i = 0; i < 20; i++) {
    if (res.status >= 300 && res.status < 400 && res.location) {
      if (isCallback(res.location)) return { callbackUrl: res.location, jar };
      url = res.location;
      res = await hop(jar, url);
      continue;
    }
    const form = res.status === 200 ? findForm(res.text) : undefined;
    if (form && 'username' in form.fields && 'password' in form.fields) {
      if (submitted) {
        const error = /id="input-error"[^>]*>([^<]*)</.exec(res.text)?.[1];
        throw new Error(`loginThroughIdp: login failed for ${username}: ${error ? unescapeHtml(error) : pageText(res.text)}`);
      }
      submitted = true;
      const action = new URL(form.action, url).href;
      res = await hop(jar, action, { method: 'POST', form: { ...form.fields, username, password: pw } });
      url = action;
      continue;
    }
    throw new Error(`loginThroughIdp: unexpected ${res.status} at ${url}: ${pageText(res.text)}`);
  }
  throw new Error('loginThroughIdp: too many redirects');
}

/**
 * Drive the IdP's end-session endpoint like a browser: confirm the logout form and return where
 * the IdP finally redirects (the post_logout_redirect_uri with state, when one was accepted).
 * Pass the jar returned by `loginThroughIdp` to end that IdP session.
 */
export async function logoutThroughIdp(endSessionUrl: string, jar: CookieJar = new CookieJar()): Promise<{ redirectUrl: string | undefined; jar: CookieJar }> {
  let url = endSessionUrl;
  let res = await hop(jar, url);
  for (let i = 0; i < 10; i++) {
    if (res.status >= 300 && res.status < 400 && res.location) {
      if (new URL(res.location).origin !== new URL(endSessionUrl).origin) return { redirectUrl: res.location, jar };
      url = res.location;
      res = await hop(jar, url);
      continue;
    }
    const form = res.status === 200 ? findForm(res.text) : undefined;
    if (form && 'xsrf' in form.fields) {
      const action = new URL(form.action, url).href;
      res = await hop(jar, action, { method: 'POST', form: { ...form.fields, logout: 'yes' } });
      url = action;
      continue;
    }
    if (res.status === 200) return { redirectUrl: undefined, jar };
    throw new Error(`logoutThroughIdp: unexpected ${res.status} at ${url}: ${pageText(res.text)}`);
  }
  throw new Error('logoutThroughIdp: too many redirects');
}

/** Decode a JWT's payload without verifying it (test convenience). */
export function peekJwt(token: string): Record<string, unknown> {
  return decodeJwt(token) as Record<string, unknown>;
}
