// The Redis settings: one server's URL with its credentials read as written (or refused), or
// Sentinel or Cluster nodes, one topology at a time.
import { z } from 'zod';
import type { Env } from './env.js';
import { redactUrlList } from './redact.js';

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
  const userinfo = at >= 0 ? rest.slice(0, at) : (rest.split(/[/?#]/)[0] ?? '');
  // only what is written before the last '@' can be the password: a '#' after the host is a fragment
  const chars = ['#', '@', '/', '?'].filter((c) => userinfo.includes(c));
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

/** A Redis server's address, as ioredis takes it. */
export interface RedisNode {
  host: string;
  port: number;
}

/** Sentinel (REDIS_SENTINELS): the sentinels, the primary's name they know, the data nodes' credentials. */
export interface RedisSentinelSettings {
  sentinels: RedisNode[];
  /** REDIS_SENTINEL_NAME */
  name: string;
  /** `rediss://` entries: TLS to the sentinels and to the data nodes */
  tls: boolean;
  username?: string;
  password?: string;
  /** the sentinels' own ACL user, REDIS_SENTINEL_USERNAME (with sentinelPassword) */
  sentinelUsername?: string;
  /** the sentinels' own password (their requirepass, or their ACL user's), REDIS_SENTINEL_PASSWORD */
  sentinelPassword?: string;
}

/** Cluster (REDIS_CLUSTER_NODES): some nodes to discover the cluster from, the data nodes' credentials. */
export interface RedisClusterSettings {
  nodes: RedisNode[];
  tls: boolean;
  username?: string;
  password?: string;
}

/** Where the state every instance shares lives, one topology: a URL, Sentinel or Cluster. */
export type RedisTarget = { url: string } | { sentinel: RedisSentinelSettings } | { cluster: RedisClusterSettings };

/**
 * `host:port,host:port` (an entry may also be written `redis://host:port`, or `rediss://host:port`
 * for TLS, every entry alike). No credentials (they have variables of their own, never echoed),
 * no database (Sentinel and Cluster use database 0).
 */
export const redisNodes = (defaultPort: number, credentialsIn: string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return undefined;
      const entries = v.split(',').map((e) => e.trim());
      const nodes: RedisNode[] = [];
      const schemes = new Set<string>();
      entries.forEach((entry, i) => {
        const where = entries.length > 1 ? `entry ${i + 1} of ${entries.length}` : 'the entry';
        const problem = (why: string) => ctx.addIssue({ code: 'custom', message: `${where} ${why}` });
        if (!entry) return problem('is empty (a stray comma); expected host:port');
        const written = /^[a-z][a-z0-9+.-]*:\/\//i.test(entry) ? entry : `redis://${entry}`;
        const shown = JSON.stringify(redactUrlList(entry));
        let u: URL;
        try {
          u = new URL(written);
        } catch {
          return problem('is not host:port (or redis://host:port, rediss://host:port; not shown: it may hold a password)');
        }
        if (u.username || u.password)
          return problem(`carries credentials (not shown): give the password in ${credentialsIn}, and write the entry as host:port`);
        if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') return problem(`${shown} is not redis:// or rediss://`);
        if (!u.hostname) return problem(`${shown} names no host`);
        if ((u.pathname && u.pathname !== '/') || u.search || u.hash)
          return problem(`${shown} holds more than host:port (Sentinel and Cluster use database 0)`);
        schemes.add(u.protocol);
        nodes.push({ host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: u.port ? Number(u.port) : defaultPort });
      });
      if (schemes.size > 1) ctx.addIssue({ code: 'custom', message: 'mixes redis:// and rediss:// entries: TLS is used for every node or for none' });
      if (nodes.length !== entries.length || schemes.size > 1) return z.NEVER;
      return { nodes, tls: schemes.has('rediss:') };
    });

/** The one Redis topology the settings name, or undefined (state in this process). */
export function redisTarget(s: { redisUrl?: string; redisSentinel?: RedisSentinelSettings; redisCluster?: RedisClusterSettings }): RedisTarget | undefined {
  if (s.redisUrl) return { url: s.redisUrl };
  if (s.redisSentinel) return { sentinel: s.redisSentinel };
  if (s.redisCluster) return { cluster: s.redisCluster };
  return undefined;
}

/**
 * One Redis topology, and only the variables it reads: REDIS_URL (credentials in the URL),
 * REDIS_SENTINELS with REDIS_SENTINEL_NAME (and the sentinels' own REDIS_SENTINEL_USERNAME and
 * REDIS_SENTINEL_PASSWORD), or REDIS_CLUSTER_NODES, the last two with the data nodes'
 * REDIS_USERNAME and REDIS_PASSWORD. Checked on the raw values, never echoing a password.
 */
export function redisProblems(env: Env): string[] {
  const problems: string[] = [];
  const has = (name: string) => (env[name] ?? '').trim() !== '';
  const topologies = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'].filter(has);
  const ONE = 'set one Redis topology: REDIS_URL (one server), REDIS_SENTINELS with REDIS_SENTINEL_NAME (Sentinel) or REDIS_CLUSTER_NODES (Cluster)';
  if (topologies.length > 1) {
    for (const name of topologies) problems.push(`${name}: set together with ${topologies.filter((t) => t !== name).join(' and ')}; ${ONE}`);
  }
  const sentinel = has('REDIS_SENTINELS');
  if (sentinel && !has('REDIS_SENTINEL_NAME'))
    problems.push('REDIS_SENTINEL_NAME: required with REDIS_SENTINELS (the name the sentinels monitor the primary under, e.g. mymaster)');
  if (has('REDIS_SENTINEL_NAME') && /\s/.test(env.REDIS_SENTINEL_NAME!.trim()))
    problems.push('REDIS_SENTINEL_NAME: must be one word (the name in `sentinel monitor <name> ...`)');
  for (const name of ['REDIS_SENTINEL_NAME', 'REDIS_SENTINEL_USERNAME', 'REDIS_SENTINEL_PASSWORD']) {
    if (has(name) && !sentinel) problems.push(`${name}: read only with REDIS_SENTINELS, which is not set`);
  }
  for (const name of ['REDIS_USERNAME', 'REDIS_PASSWORD']) {
    if (!has(name)) continue;
    if (has('REDIS_URL')) problems.push(`${name}: not read with REDIS_URL, whose credentials are in the URL (redis://user:password@host:port/db)`);
    else if (!sentinel && !has('REDIS_CLUSTER_NODES')) problems.push(`${name}: read only with REDIS_SENTINELS or REDIS_CLUSTER_NODES, neither of which is set`);
  }
  if (has('REDIS_USERNAME') && !has('REDIS_PASSWORD')) problems.push('REDIS_USERNAME: needs REDIS_PASSWORD (an ACL user signs in with both)');
  if (has('REDIS_SENTINEL_USERNAME') && !has('REDIS_SENTINEL_PASSWORD'))
    problems.push('REDIS_SENTINEL_USERNAME: needs REDIS_SENTINEL_PASSWORD (an ACL user of the sentinels signs in with both)');
  for (const name of ['REDIS_USERNAME', 'REDIS_SENTINEL_USERNAME'])
    if (has(name) && /\s/.test(env[name]!.trim())) problems.push(`${name}: must be one word (Redis refuses spaces in ACL user names)`);
  return problems;
}
