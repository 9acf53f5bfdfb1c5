// The state every gateway instance must agree on, in one place: ended sessions, kept ID tokens, used
// logout tokens, single flights, the tenant-lookup rate limit. Two stores keep it (this process,
// Redis), held to one contract suite; fail closed: "unknown" while a store cannot say.

/** What a session is ended by: its own id, the realm session (`sid`), or its subject before a time. */
export type EndedBy = { id: string } | { sid: string } | { sub: string; before: number };

/** What a session's check needs to know about it. */
export interface SessionFacts {
  id: string;
  sid?: string | null;
  sub: string;
  /** login time, epoch seconds */
  iat: number;
}

export interface RateLimit {
  /** Count one event for `key`; over the limit, how many seconds until it may come back. */
  take(key: string): Promise<{ ok: true } | { ok: false; retryAfter: number }>;
}

/**
 * How an end stood when `end` settled. 'durable': every instance refuses the session from then on,
 * and losing any one Redis server loses nothing (a replica confirmed it, or the primary had none
 * online; or there is no Redis, and this process is the truth). 'primary only': every instance
 * reached through the primary refuses it, but no replica confirmed it in time. 'not written':
 * Redis could not take it in time; this instance refuses it, the others once it is written (it
 * is, as soon as this instance reaches Redis).
 */
export type EndOutcome = 'durable' | 'primary only' | 'not written';

export interface SharedState {
  /**
   * Take effect here at once and, with Redis, on every instance. The promise settles once every
   * instance refuses the session (written to the primary and heard by every instance listening
   * there, or their mirrors no longer trusted) and a replica confirmed it, or when waiting longer
   * would not help: the outcome says which. Redis unreachable: queued, written when it is back.
   */
  end(by: EndedBy, untilEpoch: number): Promise<EndOutcome>;
  /** true: ended; false: live; undefined: cannot be known now (fail closed). */
  isEnded(session: SessionFacts, now?: number): boolean | undefined;
  /**
   * Settles once `isEnded` can answer again, or once asking did not help within a bound: called
   * after an undefined, so that a check that only lapsed (a stalled event loop) is asked, not refused.
   */
  settle(): Promise<void>;
  keepIdToken(sessionId: string, idToken: string, untilEpoch: number): void;
  idToken(sessionId: string): Promise<string | undefined>;
  /** false when this logout token id was seen before (replay). */
  firstUse(jti: string, untilEpoch: number): Promise<boolean>;
  rateLimit(name: string, points: number, windowSeconds: number): RateLimit;
  /**
   * Run `work` once for `key` among every instance and share its answer for `keepSeconds`: the
   * first caller runs it, the others (here or on other instances) wait for its answer. `work`
   * answering undefined shares nothing (the others then get undefined too, and may try again).
   * Without Redis, once in this process. With Redis: a lock `<prefix>sf-lock:<key>` (SET NX PX)
   * and the answer `<prefix>sf:<key>`; a waiter gives up (undefined) when the holder's lock goes
   * without an answer or after `waitMs`. Redis unreachable: throws SharedStateUnavailable.
   * `holdMs` (more than `waitMs`): work that may take longer than anyone waits (a request the peer
   * may carry out late, whose answer must not be lost). Every caller, the one running it too, gets
   * undefined after `waitMs`; the work goes on, its lock kept while it runs (renewed, so it lapses
   * soon after the instance holding it dies), and its answer is shared when it comes.
   */
  singleFlight(key: string, keepSeconds: number, waitMs: number, work: () => Promise<string | undefined>, holdMs?: number): Promise<string | undefined>;
  ready(): { ok: boolean; detail: string };
  close(): Promise<void>;
}

/** `p`'s value, or `fallback` once `ms` have passed first. */
export async function within<T, F = T>(p: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<F>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Seconds since the epoch. */
export const epochNow = () => Math.floor(Date.now() / 1000);
