// The data plane's side of sessions: decrypted sessions cached by cookie value, the access token
// refreshed (one refresh per session state at a time) shortly before it expires, ended sessions
// remembered so that a copy of their cookie is refused too.
import { SingleFlight, TtlCache } from '../cache/cache.js';
import { SessionRenewalUnavailable, SharedStateUnavailable } from '../http/respond.js';
import { addSetCookie, epoch, isSessionData, type SessionCodec, type SessionCookies, type SessionData, type SessionHeader } from './session-cookie.js';
import type { SessionEndReason } from './session-end.js';
import { refreshMargin, refreshStateName } from './token-state.js';
import type { EndOutcome } from '../state/shared-state.js';

/**
 * `shared`: the outcome of a refresh made earlier or elsewhere (another instance, another request),
 * not just now by this one. `end`: why the session ends, for a refresh made here (a shared end was
 * told where its refresh was made).
 */
export type RefreshResult =
  | { kind: 'ok'; data: SessionData; shared?: boolean }
  | { kind: 'ended'; reason: string; end?: SessionEndReason; shared?: boolean }
  | { kind: 'unavailable'; reason: string };

export interface SessionEntry {
  value: string;
  header: SessionHeader;
  data: SessionData;
  /** the cookie that replaced this one (refresh, rolling touch, tenant switch), for requests still sending this one */
  next?: SessionEntry;
  /** its rolling touch under way (the new cookie being encrypted) */
  touching?: Promise<SessionEntry>;
}

export interface SessionHooks {
  /** Ask the identity provider for new tokens; the result is the renewed session data. */
  refresh(data: SessionData): Promise<RefreshResult>;
  /** the session ended here (told once: `tellSessionEnd`); `detail` says what happened */
  ended(data: SessionData, reason: SessionEndReason, detail: string): void;
  /** an end decided by another instance's refresh, applied here (told where it was decided) */
  endApplied?(data: SessionData, detail: string): void;
  unavailable(data: SessionData, reason: string): void;
  lookup?(hit: boolean): void;
  /** the session's data changed here (refreshed, tenant switch): told once the new state is in place */
  changed?(data: SessionData): void;
}

/** Where ended sessions are recorded and looked up (gateway/state/shared-state.ts). */
export interface EndedSessions {
  /** settles once every instance refuses it, or waiting longer would not help (SharedState.end): the outcome says which */
  end(by: { id: string }, untilEpoch: number): Promise<EndOutcome>;
  /** undefined: cannot be known now */
  isEnded(session: { id: string; sid?: string | null; sub: string; iat: number }, now?: number): boolean | undefined;
  /** settles once isEnded can answer again, or asking did not help (SharedState.settle) */
  settle(): Promise<void>;
}

export class SessionStore {
  private readonly entries = new TtlCache<string, SessionEntry>(20_000, 5 * 60_000);
  /** one refresh per session state at a time in this process (the shared state makes it one among instances) */
  private readonly refreshing = new SingleFlight<RefreshResult>();
  /** ends told here that requests could meet again (a refresh outcome already expired, a lifetime reached): told once */
  private readonly told = new TtlCache<string, true>(20_000, 5 * 60_000);

  constructor(
    readonly codec: SessionCodec,
    private readonly options: { refreshMarginSeconds: number; rollingSeconds: number; absoluteSeconds: number },
    private readonly hooks: SessionHooks,
    private readonly ended: EndedSessions,
  ) {}

  /** A new cookie for `data`, keeping the login time `iat`. */
  async entryOf(data: SessionData, iat: number, now = epoch()): Promise<SessionEntry> {
    const header = { iat, uat: now, exp: this.codec.expiry(iat, now) };
    return { value: await this.codec.encrypt(data, header), header, data };
  }

  /** This session id is over (logout, refused refresh): its cookie, and every copy, is refused, on every instance. */
  revoke(id: string, seconds = this.options.absoluteSeconds): Promise<EndOutcome> {
    return this.ended.end({ id }, epoch() + Math.max(1, seconds));
  }

  /**
   * The live session of a request's cookie, refreshed or touched as needed, or undefined.
   * With `jar`, a renewed cookie is recorded in it, and a dead one cleared. A cookie is decrypted
   * once (jose decrypts asynchronously); a known one is looked up.
   */
  async live(found: { value: string; names: string[] }, jar?: SessionCookies): Promise<SessionEntry | undefined> {
    let entry = this.entries.get(found.value);
    this.hooks.lookup?.(entry !== undefined);
    if (!entry) {
      const dec = await this.codec.decrypt(found.value);
      if (!dec || !isSessionData(dec.data)) return this.cleared(found, jar);
      // Another request with the same cookie may have decrypted it meanwhile: one entry per cookie,
      // so that its renewals (`next`) are shared.
      entry = this.entries.get(found.value);
      if (!entry) this.entries.set(found.value, (entry = { value: found.value, header: dec.header, data: dec.data }));
    }
    // the session as it now stands
    const now = epoch();
    for (let i = 0; entry.next && i < 16; i++) entry = entry.next;
    const facts = { id: entry.data.id, sid: entry.data.sid, sub: entry.data.user.sub, iat: entry.header.iat };
    if (!this.codec.alive(entry.header, now)) {
      if (this.ended.isEnded(facts, now) === false) this.tell(entry.data, 'lifetime_reached', 'the session cookie outlived its idle or absolute lifetime');
      return this.cleared(found, jar);
    }
    // Where the check only lapsed, Redis is asked before anyone is refused.
    const ended = this.ended.isEnded(facts, now) ?? (await this.ended.settle(), this.ended.isEnded(facts, epoch()));
    // Fail closed: a session whose end may have been missed is not honoured (and not cleared).
    if (ended === undefined) throw new SharedStateUnavailable('Redis is not reachable');
    if (ended) return this.cleared(found, jar);
    const { data } = entry;
    // Without a refresh token the session lasts as long as its access token.
    if (data.expires_at - now <= refreshMargin(data, this.options.refreshMarginSeconds) && (data.refresh_token || data.expires_at <= now))
      return await this.refreshed(entry, found, now, jar);
    if (now - entry.header.uat > this.options.rollingSeconds / 2) return this.renewed(found, await this.touched(entry, now), jar);
    return this.renewed(found, entry, jar);
  }

  /** A rolling session's new cookie (uat now), made once for every request that carries the old one. */
  private touched(entry: SessionEntry, now: number): Promise<SessionEntry> {
    entry.touching ??= this.entryOf(entry.data, entry.header.iat, now).then(
      (next) => {
        entry.next ??= next;
        this.entries.set(entry.next.value, entry.next);
        return entry.next;
      },
      (err: unknown) => {
        entry.touching = undefined; // the next request tries again
        throw err;
      },
    );
    return entry.touching;
  }

  /** The session as it now stands; a cookie that changed (rolled or refreshed) is recorded in `jar`. */
  private renewed(found: { value: string; names: string[] }, current: SessionEntry, jar?: SessionCookies): SessionEntry {
    if (jar && current.value !== found.value) addSetCookie(jar, this.codec.setCookieLines(current.value, current.header.exp, found.names));
    return current;
  }

  /** The cookie is dead: cleared in `jar` (every copy of it), and no session. */
  private cleared(found: { names: string[] }, jar?: SessionCookies): undefined {
    if (!jar) return undefined;
    addSetCookie(
      jar,
      found.names.map((n) => this.codec.clearLine(n)),
    );
    jar.clearSiteData = true;
    return undefined;
  }

  /** `live` for a session whose access token is (nearly) expired: refreshed once, on every request that waits for it. */
  private async refreshed(
    entry: SessionEntry,
    found: { value: string; names: string[] },
    now: number,
    jar?: SessionCookies,
  ): Promise<SessionEntry | undefined> {
    let current = entry;
    // An outcome another instance (or an earlier request) refreshed may itself be due by now: this
    // instance's copy of the session was a refresh behind. Follow on, at most three links, so every
    // instance serves the latest roles at once.
    for (let link = 0; link < 3; link++) {
      const { data } = current;
      const r = await this.refreshOnce(data);
      if (r.kind === 'ok') {
        // Every request waiting on this refresh takes the one new cookie.
        if (!current.next) {
          const next = await this.entryOf(r.data, current.header.iat);
          current.next ??= next;
        }
        current = current.next!;
        this.entries.set(current.value, current);
        this.hooks.changed?.(current.data);
        if (!r.shared || current.data.expires_at - epoch() > refreshMargin(current.data, this.options.refreshMarginSeconds)) break;
      } else if (r.kind === 'ended') {
        if (!this.ended.isEnded({ id: data.id, sub: data.user.sub, iat: entry.header.iat }, now)) {
          // taken here at once; the other instances learn it as Redis publishes it (this request's
          // answer does not wait: it is the one clearing the cookie)
          void this.revoke(data.id, entry.header.exp - now);
          if (r.shared) this.hooks.endApplied?.(data, r.reason);
          else this.hooks.ended(data, r.end ?? 'refresh_refused', r.reason);
        }
        this.entries.delete(found.value);
        return this.cleared(found, jar);
      } else {
        // The identity provider cannot be asked: the session stays, but an expired token is not
        // honoured (503, never the 401 of a signed-out browser).
        this.hooks.unavailable(data, r.reason);
        if (data.expires_at <= now) throw new SessionRenewalUnavailable(r.reason);
        break;
      }
    }
    // Never an expired access token, whatever was shared. The session is not ended for it (a
    // newer cookie of it may be live), but the user is refused: told once.
    if (current !== entry && current.data.expires_at <= epoch()) {
      this.tell(
        current.data,
        'refresh_outcome_expired',
        `the refreshed access token expired at ${current.data.expires_at}, ${epoch() - current.data.expires_at} s ago`,
      );
      return undefined;
    }
    return this.renewed(found, current, jar);
  }

  /** An end that requests could meet again, told once (per session and reason, for as long as the cookie cache keeps an entry). */
  private tell(data: SessionData, reason: SessionEndReason, detail: string): void {
    const key = `${data.id}\u0000${reason}`;
    if (this.told.get(key)) return;
    this.told.set(key, true);
    this.hooks.ended(data, reason, detail);
  }

  /**
   * The latest state this instance knows of a session seen as `entry` (refreshed, rolled or
   * switched since, here), neither touched nor refreshed: what an open WebSocket is judged by.
   */
  latest(entry: SessionEntry): SessionEntry {
    let e = entry;
    for (let i = 0; i < 64; i++) {
      // The cache may hold a newer object for the same cookie (read again after `e` was evicted).
      const cached = e.next ? undefined : this.entries.get(e.value);
      const next = e.next ?? (cached !== e ? cached : undefined);
      if (!next) break;
      e = next;
    }
    return e;
  }

  /**
   * `live` for a session the realm has since described otherwise (another session of the same
   * user saw a demotion): refreshed now, whatever its token's expiry, so it is not believed on
   * its older facts; undefined when that cannot be done (refused until it is).
   */
  async renewNow(entry: SessionEntry, found: { value: string; names: string[] }, jar?: SessionCookies): Promise<SessionEntry | undefined> {
    const renewed = await this.refreshed(entry, found, epoch(), jar);
    return renewed && renewed !== entry && renewed.data !== entry.data ? renewed : undefined;
  }

  /** Replace a live session's data (tenant switch) and set the new cookie. */
  async replace(entry: SessionEntry, data: SessionData, names: string[], jar: SessionCookies): Promise<SessionEntry> {
    const next = await this.entryOf(data, entry.header.iat);
    entry.next = next;
    this.entries.set(next.value, next);
    addSetCookie(jar, this.codec.setCookieLines(next.value, next.header.exp, names));
    this.hooks.changed?.(data);
    return next;
  }

  private refreshOnce(data: SessionData): Promise<RefreshResult> {
    return this.refreshing.run(refreshStateName(data), () => this.hooks.refresh(data));
  }

  clear(): void {
    this.entries.clear();
  }
}
