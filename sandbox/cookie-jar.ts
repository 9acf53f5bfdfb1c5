// The cookie jar of every scripted browser here (the sandbox's seeding, the benchmarks' sign-ins, the
// tests): Set-Cookie lines read by the `cookie` package, kept per host name (not per port, as
// browsers keep them) and path, and sent back to the paths they match until they expire (RFC 6265
// 5.1.4, 5.3). Host-only: Domain, Secure and SameSite are not applied, since everything here talks
// to 127.0.0.1 over plain HTTP. Values are kept as sent, never decoded.
import { parseSetCookie } from 'cookie';

interface Kept {
  name: string;
  value: string;
  path: string;
  /** epoch ms; undefined: until the jar is dropped */
  expires: number | undefined;
}

const AS_SENT = { decode: (v: string) => v };

/** RFC 6265 5.1.4: the folder of the request's path, for a cookie set without a Path. */
function defaultPath(pathname: string): string {
  const last = pathname.lastIndexOf('/');
  return last <= 0 ? '/' : pathname.slice(0, last);
}

/** RFC 6265 5.1.4: does a request's path fall under the cookie's path? */
function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true;
  return requestPath.startsWith(cookiePath) && (cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/');
}

/** When a Set-Cookie line's cookie expires: Max-Age first, then Expires (RFC 6265 5.3 step 3). */
function expiryOf(c: { maxAge?: number; expires?: Date }, now: number): number | undefined {
  if (c.maxAge !== undefined && Number.isFinite(c.maxAge)) return now + c.maxAge * 1000;
  if (c.expires !== undefined && !Number.isNaN(c.expires.getTime())) return c.expires.getTime();
  return undefined;
}

export class CookieJar {
  private readonly byHost = new Map<string, Map<string, Kept>>();

  /** `origin`: what a path alone (`/api/...`) is resolved against, in `store`, `header`, `get` and `names`. */
  constructor(readonly origin?: string) {}

  /** Keeps the cookies of an answer's Set-Cookie lines; `from` is the URL that answered (default: the origin). */
  store(setCookies: readonly string[], from: string = '/'): void {
    const url = this.url(from);
    const kept = this.hostJar(url.hostname, true)!;
    const now = Date.now();
    for (const line of setCookies) {
      const c = parseSetCookie(line, AS_SENT);
      if (!c.name || c.value === undefined) continue;
      const path = c.path?.startsWith('/') ? c.path : defaultPath(url.pathname);
      const expires = expiryOf(c, now);
      const key = `${c.name};${path}`;
      if (expires !== undefined && expires <= now) kept.delete(key);
      else kept.set(key, { name: c.name, value: c.value, path, expires });
    }
  }

  /** The Cookie header a browser would send to `to` (a URL, or a path of the origin); '' for none. */
  header(to: string = '/'): string {
    return this.matching(to)
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }

  /** The value of the cookie `name` this jar holds for the host of `at` (any path). */
  get(name: string, at: string = '/'): string | undefined {
    return this.live(at).find((c) => c.name === name)?.value;
  }

  /** The names of the cookies this jar holds for the host of `at` (any path). */
  names(at: string = '/'): string[] {
    return this.live(at).map((c) => c.name);
  }

  /** A copy (to replay an old cookie later, or to send from two places at once). */
  clone(): CookieJar {
    const copy = new CookieJar(this.origin);
    for (const [host, kept] of this.byHost) copy.byHost.set(host, new Map([...kept].map(([k, c]) => [k, { ...c }])));
    return copy;
  }

  /** The cookies sent to `to`: its host's, on its path, longer paths first (RFC 6265 5.4). */
  private matching(to: string): Kept[] {
    const { pathname } = this.url(to);
    return this.live(to)
      .filter((c) => pathMatches(pathname, c.path))
      .sort((a, b) => b.path.length - a.path.length);
  }

  /** The unexpired cookies of the host of `at`, expired ones dropped. */
  private live(at: string): Kept[] {
    const kept = this.hostJar(this.url(at).hostname, false);
    if (!kept) return [];
    const now = Date.now();
    const out: Kept[] = [];
    for (const [key, c] of kept) {
      if (c.expires !== undefined && c.expires <= now) kept.delete(key);
      else out.push(c);
    }
    return out;
  }

  private hostJar(host: string, create: boolean): Map<string, Kept> | undefined {
    let kept = this.byHost.get(host);
    if (!kept && create) this.byHost.set(host, (kept = new Map()));
    return kept;
  }

  private url(to: string): URL {
    if (this.origin === undefined && to.startsWith('/')) throw new Error(`CookieJar: ${to} is a path, and this jar has no origin`);
    return new URL(to, this.origin);
  }
}
