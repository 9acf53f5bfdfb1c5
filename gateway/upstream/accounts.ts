// Who the caller is at the chat front-end. The file policy filters on the upstream's own user id,
// so the gateway learns it from the upstream itself, never from anything the client sends:
//   - a verified identity is signed in by trusted headers (POST /api/v1/auths/signin); the answer
//     carries the upstream token (supplied when the client brought none) and the user id;
//   - an upstream API key (ALLOW_UPSTREAM_API_KEYS) is asked about through GET /api/v1/auths/.
// Both are cached briefly per identity, one request in flight per key.
import type { Calls } from './calls.js';
import { createHash } from 'node:crypto';
import { UpstreamError } from './proxy.js';
import { AccountAnswer, callJson, SignInAnswer } from './json.js';
import type { TrustedHeaderNames, TrustedIdentity } from '../http/request-headers.js';
import { setIdentityHeaders } from '../http/request-headers.js';
import type { Metrics } from '../observability/observability.js';
import { TtlCache } from '../cache/cache.js';

export interface UpstreamAccount {
  userId: string;
  role: string;
  /** upstream session token (trusted-header sign-in only) */
  token?: string;
}

const SIGNIN_TTL_MS = 10 * 60_000;
const WHOAMI_TTL_MS = 30_000;
const MAX_ENTRIES = 50_000;
/** SESSION_ABSOLUTE_SECONDS' default: no session described before lives longer */

/** A sign-in or lookup, under way or done. */
interface Pending {
  promise: Promise<UpstreamAccount>;
  /** what the upstream was told at this sign-in (role, groups, name) */
  signedInAs?: string;
}

export class UpstreamAccounts {
  private readonly entries: TtlCache<string, Pending>;

  constructor(
    private readonly calls: Calls,
    private readonly names: TrustedHeaderNames,
    private readonly metrics?: Metrics,
    now?: () => number,
  ) {
    this.entries = new TtlCache(MAX_ENTRIES, SIGNIN_TTL_MS, now);
  }

  /** Sign a verified identity in at the upstream (or reuse the cached sign-in). */
  signIn(identity: TrustedIdentity): Promise<UpstreamAccount> {
    return this.signingIn(identity).promise;
  }

  // Two live sessions of one user from either side of a role change are never both told here: the
  // authenticator judges an identity the realm has contradicted since by the newest facts (a
  // session is renewed first, a bearer token taken as the newest; policies/session-ends.ts).
  private signingIn(identity: TrustedIdentity): Pending {
    const { key, signedInAs } = this.keyOf(identity);
    // One entry per email: the upstream keeps ONE role per user, the one of its latest sign-in. A
    // sign-in told something else since (a promotion, then a demotion back to what an older entry
    // held) must be told again, or the upstream keeps the other role (found on the real Open WebUI).
    const hit = this.entries.get(key);
    if (hit && hit.signedInAs !== signedInAs) this.entries.delete(key);
    return this.cached(key, SIGNIN_TTL_MS, signedInAs, async () => {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
      setIdentityHeaders(headers, this.names, identity);
      const res = await callJson(this.calls, SignInAnswer, 'POST', '/api/v1/auths/signin', headers, JSON.stringify({ email: identity.email, password: '' }));
      const body = res.json;
      if (!body) throw new UpstreamError('bad-body', `trusted-header sign-in failed with status ${res.status}`);
      return { userId: body.id, role: String(body.role ?? 'user'), token: body.token };
    });
  }

  /** The upstream account behind an API key (or other upstream credential headers). */
  whoAmI(credential: Record<string, string>): Promise<UpstreamAccount | undefined> {
    const key = 'cred:' + createHash('sha256').update(JSON.stringify(credential)).digest('base64url');
    return this.cached(key, WHOAMI_TTL_MS, undefined, async () => {
      const res = await callJson(this.calls, AccountAnswer, 'GET', '/api/v1/auths/', { ...credential, accept: 'application/json' });
      if (res.status === 401 || res.status === 403) return { userId: '', role: 'none' };
      const body = res.json;
      if (!body) throw new UpstreamError('bad-body', `GET /api/v1/auths/ answered ${res.status}`);
      return { userId: body.id, role: String(body.role ?? 'user') };
    }).promise.then((a) => (a.userId ? a : undefined));
  }

  // Keyed by email; role, groups and name are what was told: a change re-signs in, which updates
  // them upstream. The data plane hands in one object per identity, so both are worked out once per object.
  private readonly keys = new WeakMap<TrustedIdentity, { key: string; signedInAs: string }>();
  private keyOf(identity: TrustedIdentity): { key: string; signedInAs: string } {
    let k = this.keys.get(identity);
    if (!k)
      this.keys.set(
        identity,
        (k = { key: 'id:' + identity.email.toLowerCase(), signedInAs: JSON.stringify([identity.admin, identity.groups, identity.name]) }),
      );
    return k;
  }

  private cached(key: string, ttlMs: number, signedInAs: string | undefined, load: () => Promise<UpstreamAccount>): Pending {
    const hit = this.entries.get(key);
    if (hit) {
      this.metrics?.cache.tally('upstream-account', 'hit');
      return hit;
    }
    this.metrics?.cache.tally('upstream-account', 'miss');
    const pending: Pending = { promise: load(), signedInAs };
    this.entries.set(key, pending, ttlMs);
    // A failure is not cached: the next request tries again.
    pending.promise.catch(() => {
      if (this.entries.get(key) === pending) this.entries.delete(key);
    });
    return pending;
  }
}
