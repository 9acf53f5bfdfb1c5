// A realm bearer token whose session's end the realm would not tell the gateway (another client's
// token: policies/tokens.ts `sessionCheckOf`) is confirmed with the realm by token introspection
// (RFC 7662, gateway/auth/realm.ts). The answer is kept per token, under the token's SHA-256 (the
// token itself is never a key nor logged): `active` for BEARER_INTROSPECTION_CACHE_SECONDS, an ended
// session until the token expires. One call per token at a time. No answer (the realm unreachable,
// slower than its timeout, an answer that is none) is RealmUnavailable: a 503, never a pass.
// Why: docs/design/bearer-introspection.md.
import { createHash } from 'node:crypto';
import type { Observability } from '../observability/observability.js';
import { SingleFlight, TtlCache } from '../cache/cache.js';
import { RealmUnavailable } from '../http/respond.js';
import { introspectionKeepMs, introspectionStanding } from '../../policies/tokens.js';

/** What the answer is kept under and what is logged of a token (never the token): its hash, subject, realm session and client. */
export interface TokenFacts {
  /** the token's SHA-256 (tokenKey), worked out once when the token is verified */
  key: string;
  sub: string;
  sid: string | null;
  azp: string | null;
  /** the last second the gateway takes the token (its expiry and the clock tolerance), epoch seconds */
  until: number;
}

export interface BearerIntrospectionParts {
  introspect: (token: string) => Promise<Record<string, unknown>>;
  /** BEARER_INTROSPECTION_CACHE_SECONDS */
  cacheSeconds: number;
  obs: Pick<Observability, 'log' | 'audit' | 'metrics'>;
}

export interface BearerIntrospection {
  /** Does the token's session still stand: at once from a kept answer, else once the realm answered. Rejects with RealmUnavailable. */
  stands(token: string, facts: TokenFacts): boolean | Promise<boolean>;
  clear(): void;
}

/** What a token's answer is kept under: its SHA-256, never the token itself. */
export function tokenKey(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/** The most tokens whose answers are kept (a bound on memory, as the verified-token cache's). */
const MAX_KEPT = 20_000;

export function createBearerIntrospection({ introspect, cacheSeconds, obs }: BearerIntrospectionParts): BearerIntrospection {
  const answers = new TtlCache<string, 'active' | 'ended'>(MAX_KEPT, 0);
  const asking = new SingleFlight<boolean>();

  async function ask(token: string, facts: TokenFacts): Promise<boolean> {
    let standing;
    try {
      const { standing: s, rule } = introspectionStanding(await introspect(token), facts.sub);
      if (s === 'unusable') throw new Error(rule);
      standing = s;
    } catch (err) {
      obs.metrics.bearerIntrospections.inc({ result: 'unavailable' });
      obs.log.warn(
        { err: { message: (err as Error).message }, sub: facts.sub, client: facts.azp },
        'bearer token refused: the realm cannot confirm its session',
      );
      throw new RealmUnavailable((err as Error).message);
    }
    obs.metrics.bearerIntrospections.inc({ result: standing });
    const keepMs = introspectionKeepMs(standing, cacheSeconds, facts.until, Date.now());
    if (keepMs > 0) answers.set(facts.key, standing, keepMs);
    if (standing === 'ended')
      obs.audit.warn(
        { event: 'bearer-session-ended', sub: facts.sub, sid: facts.sid, client: facts.azp },
        'bearer token refused: the identity provider says its session ended',
      );
    return standing === 'active';
  }

  function stands(token: string, facts: TokenFacts): boolean | Promise<boolean> {
    const kept = answers.get(facts.key);
    if (kept) return kept === 'active';
    return asking.run(facts.key, () => ask(token, facts));
  }

  return { stands, clear: () => answers.clear() };
}
