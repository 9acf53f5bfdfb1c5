// The newest facts the realm gave of each user, on this instance. Open WebUI keeps one role per
// account, so the newest word of the realm wins: a session or bearer token that describes a user
// as the realm did before (a demotion, a promotion, a group or tenant change) is renewed, or judged
// as the newest facts, before it is believed again (policies/session-ends.ts).
import { isChatAdmin } from '../../policies/admin-scoping.js';
import { factsStanding, type SeenFacts } from '../../policies/session-ends.js';
import { activeTenantAtRefresh } from '../../policies/tenancy.js';
import { TtlCache } from '../cache/cache.js';
import type { SessionData, SessionUser } from './session-cookie.js';
import type { Identity } from './identity.js';

export class UserFacts {
  /** per subject, kept as long as a session can live */
  private readonly newest: TtlCache<string, SeenFacts>;
  /** one Identity per session state, which the data plane keys its own derived values on */
  private readonly sessionIdentities = new WeakMap<SessionData, Identity>();

  constructor(
    private readonly adminRoles: readonly string[],
    keepSeconds: number,
  ) {
    this.newest = new TtlCache<string, SeenFacts>(100_000, keepSeconds * 1000);
  }

  /** The identity these facts make, remembered as the user's newest when they are. */
  identityOf(u: SessionUser, activeTenant: string | null, via: Identity['via'], factsAt?: number): Identity {
    const identity: Identity = { ...u, admin: isChatAdmin(u.roles, this.adminRoles), activeTenant, via, ...(factsAt === undefined ? {} : { factsAt }) };
    const newest = this.newest.get(u.sub);
    if (factsAt !== undefined && (!newest || newest.at < factsAt)) this.newest.set(u.sub, seen(identity));
    return identity;
  }

  /** A session state's identity (one object per state). */
  ofSession(data: SessionData): Identity {
    let identity = this.sessionIdentities.get(data);
    if (!identity) this.sessionIdentities.set(data, (identity = this.identityOf(data.user, data.active_tenant, 'session', data.facts_at)));
    return identity;
  }

  /** Did the realm describe this user otherwise since it gave these facts? */
  stale(identity: Identity): boolean {
    const newest = this.newest.get(identity.sub);
    return !!newest && newest.at > (identity.factsAt ?? 0) && factsStanding(seen(identity), newest).standing === 'stale';
  }

  /** The newest facts of a user whose identity is stale. */
  newestOf(identity: Identity): Identity {
    return this.newest.get(identity.sub)!.facts as Identity;
  }

  /**
   * A bearer token the realm has contradicted since (issued before a promotion or a demotion) is
   * judged, and signed in upstream, as the user's newest facts, never by the token's old role; its
   * tenant as a refresh would keep it.
   */
  asNewest(identity: Identity): Identity {
    const newest = this.newestOf(identity);
    return { ...newest, via: identity.via, activeTenant: activeTenantAtRefresh(newest.tenants, identity.activeTenant).active };
  }
}

const seen = (identity: Identity): SeenFacts => ({ at: identity.factsAt ?? 0, facts: identity });
