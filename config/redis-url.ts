// REDIS_URL's user and password as written against what is read of them. ioredis reads a redis://
// URL with the WHATWG URL parser (`new URL`), then percent-decodes the user and password. A '#',
// '?' or '/' written raw in the password ends the part of the URL that holds it: the rest of the
// password becomes the host, a path or a fragment, and it is then printed and connected to as
// such (`redis://admin:p@ss#word@redis:6379` is user "admin", password "p", host "ss"). Such a URL
// is refused; one the parser reads as written (a raw '@' or ':' in the password is) is taken.
// Used by the settings, config/lint.ts and the shared state in Redis (gateway/state/redis-state.ts).
const ENCODED: Readonly<Record<string, string>> = { '#': '%23', '@': '%40', '/': '%2F', '?': '%3F', '%': '%25' };

/** The text between `scheme://` and the last '@': what the operator wrote as user and password (undefined: none). */
function writtenUserinfo(value: string): string | undefined {
  const rest = value.trim().replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const at = rest.lastIndexOf('@');
  return at < 0 ? undefined : rest.slice(0, at);
}

/**
 * A password holding `#`, `@`, `/`, `?` or a stray `%` breaks the URL, or may (`#` starts a
 * fragment, a second `@` moves the host): say how to write it, without echoing it.
 */
export function redisPasswordHint(value: string): string {
  const rest = value.trim().replace(/^rediss?:\/\//i, '');
  const at = rest.lastIndexOf('@');
  const userinfo = at >= 0 ? rest.slice(0, at) : (rest.split(/[/?]/)[0] ?? '');
  const chars = ['#', '@', '/', '?'].filter((c) => (c === '#' ? rest.includes('#') : userinfo.includes(c)));
  if (/%(?![0-9a-f]{2})/i.test(userinfo)) chars.push('%');
  if (!chars.length) return '';
  return `; a ${chars.map((c) => `'${c}'`).join(' or ')} in the password must be percent-encoded (${chars.map((c) => `${c} as ${ENCODED[c]}`).join(', ')})`;
}

/**
 * Why a redis:// URL's user and password would not be read as written, or undefined when they
 * would be (or there are none, or the value is no URL at all: that is refused elsewhere). Never
 * names the password.
 */
export function redisCredentialsProblem(value: string): string | undefined {
  const written = writtenUserinfo(value);
  if (written === undefined) return undefined;
  let read: URL;
  try {
    read = new URL(value.trim());
  } catch {
    return undefined;
  }
  const colon = written.indexOf(':');
  const user = colon < 0 ? written : written.slice(0, colon);
  const password = colon < 0 ? '' : written.slice(colon + 1);
  let same: boolean;
  try {
    same = decodeURIComponent(read.username) === decodeURIComponent(user) && decodeURIComponent(read.password) === decodeURIComponent(password);
  } catch {
    same = false; // a stray '%': ioredis itself would throw on it
  }
  if (same) return undefined;
  return `the user and password before the last '@' would not be read as written (a raw '#', '?' or '/' ends them early: the rest of the password would be taken for the host, a path or a fragment, connected to and logged as such)${
    redisPasswordHint(value) || "; percent-encode '#', '?', '/', '@' and '%' in them (%23, %3F, %2F, %40, %25)"
  }`;
}
