// Who the caller is at the chat front-end. The file policy filters on the upstream's own user id,
// so the gateway learns it from the upstream itself, never from anything the client sends:
//   - a verified identity is signed in by trusted headers (POST /api/v1/auths/signin); the answer
//     carries the upstream token (supplied when the client brought none) and the user id;
//   - an upstream API key (ALLOW_UPSTREAM_API_KEYS) is asked about through GET /api/v1/auths/.
// Both are cached briefly per identity, one request in flight per key. A cached sign-in whose token
// Open WebUI has since refused (revoked, expired) is renewed once that is known (`renewed`).
import type { Calls, TokenRenewal } from './calls.js';
import { createHash } from 'node:crypto';
import { UpstreamError } from './proxy.js';
import { AccountAnswer, callJson, errorDetail, SignInAnswer } from './json.js';
import type { TrustedHeaderNames, TrustedIdentity } from '../http/request-headers.js';
import { setIdentityHeaders } from '../http/request-headers.js';
import type { Observability } from '../observability/observability.js';
import { TtlCache } from '../cache/cache.js';
import { TOKEN_CHECK_INTERVAL_MS, tokenCheck } from '../../policies/sign-in-renewal.js';

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

/** Whose sign-in gave a token. */
interface Issued {
  key: string;
  identity: TrustedIdentity;
}

export class UpstreamAccounts implements TokenRenewal {
  private readonly entries: TtlCache<string, Pending>;
  /** every token a sign-in here gave, while its sign-in may still be cached: only these are renewed */
  private readonly issued: TtlCache<string, Issued>;
  /** per identity, the last check of its token (and the renewal it led to): one per TOKEN_CHECK_INTERVAL_MS */
  private readonly checks: TtlCache<string, Promise<string | undefined>>;

  constructor(
    private readonly calls: Calls,
    private readonly names: TrustedHeaderNames,
    private readonly obs?: Pick<Observability, 'metrics' | 'log'>,
    now?: () => number,
  ) {
    this.entries = new TtlCache(MAX_ENTRIES, SIGNIN_TTL_MS, now);
    this.issued = new TtlCache(MAX_ENTRIES, SIGNIN_TTL_MS, now);
    this.checks = new TtlCache(MAX_ENTRIES, TOKEN_CHECK_INTERVAL_MS, now);
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
      this.issued.set(body.token, { key, identity });
      return { userId: body.id, role: String(body.role ?? 'user'), token: body.token };
    });
  }

  /**
   * Open WebUI answered 401 to a request that carried `token`. When a sign-in here gave it: the
   * token that replaces it, once GET /api/v1/auths/ says Open WebUI refuses the token itself (the
   * sign-in is then made again); undefined when the 401 was the route's own, when the identity's
   * token was checked within TOKEN_CHECK_INTERVAL_MS, or when the new sign-in failed. Undefined at
   * once for any other token (an API key, a client's own): not the gateway's to renew.
   */
  renewed(token: string): Promise<string | undefined> | undefined {
    const of = this.issued.get(token);
    return of && this.renewal(of, token);
  }

  private async renewal(of: Issued, stale: string): Promise<string | undefined> {
    const current = this.entries.get(of.key);
    const account = await current?.promise.catch(() => undefined);
    // Gone from the cache: the caller's next request signs in as its own identity says.
    if (!current || !account?.token) return undefined;
    // Signed in again since this request left (a renewal, a role told anew): the same account.
    if (account.token !== stale) return account.token;
    // One check at a time per identity, and none again within the interval: a caller whose routes
    // answer 401 on their own (an admin-only one) costs one GET a while, never a sign-in.
    let check = this.checks.get(of.key);
    if (!check) {
      const started = (check = this.checkThenRenew(of, stale, current));
      // the interval counts from the check's end: one that outlasts it is still the only one
      this.checks.set(of.key, started, SIGNIN_TTL_MS);
      void started.then(() => this.checks.get(of.key) === started && this.checks.set(of.key, started));
    }
    const renewed = await check;
    return renewed === stale ? undefined : renewed;
  }

  private async checkThenRenew(of: Issued, stale: string, current: Pending): Promise<string | undefined> {
    const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${stale}` };
    // as every request of this identity carries them: a token that no longer opens this email's account is refused too
    setIdentityHeaders(headers, this.names, of.identity);
    const verdict = await this.calls.call('GET', '/api/v1/auths/', headers).then(
      (res) => tokenCheck(res.status, errorDetail(res.body)),
      () => undefined,
    );
    this.obs?.metrics.upstreamTokenChecks.inc({ result: verdict === undefined ? 'unanswered' : verdict.refused ? 'refused' : 'accepted' });
    if (!verdict?.refused) return undefined;
    if (this.entries.get(of.key) === current) this.entries.delete(of.key);
    try {
      const account = await this.signingIn(of.identity).promise;
      this.obs?.metrics.upstreamSignInRenewals.inc({ reason: verdict.reason });
      this.obs?.log.info(
        { event: 'upstream-sign-in-renewed', reason: verdict.reason, caller: of.identity.email },
        'Open WebUI refused the cached sign-in: signed in again',
      );
      return account.token;
    } catch (err) {
      this.obs?.log.warn(
        { event: 'upstream-sign-in-renewal-failed', reason: verdict.reason, caller: of.identity.email, err: { message: (err as Error).message } },
        'Open WebUI refused the cached sign-in, and signing in again failed',
      );
      return undefined;
    }
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
      this.obs?.metrics.cache.tally('upstream-account', 'hit');
      return hit;
    }
    this.obs?.metrics.cache.tally('upstream-account', 'miss');
    const pending: Pending = { promise: load(), signedInAs };
    this.entries.set(key, pending, ttlMs);
    // A failure is not cached: the next request tries again.
    pending.promise.catch(() => {
      if (this.entries.get(key) === pending) this.entries.delete(key);
    });
    return pending;
  }
}
