// Every end of a session is told once, where it was decided: one audit line carrying its
// `reason`, at the level the reason calls for (a user's own sign-out is routine: info; a session
// the gateway or the realm cut short is what an operator looks for: warn), and one count in
// gateway_sessions_ended_total{reason}. An instance that only learns of an end decided elsewhere
// (the ended-session list in Redis, the shared outcome of another instance's refresh) applies it
// without telling it again, so the lines and counts of every instance add up to the ends.
import type { Observability } from '../observability/observability.js';

/** Why a session ended, as logged and counted; the level each is logged at. */
export const SESSION_END_REASONS = {
  /** the user signed out (the gateway's /auth/logout or the chat front-end's sign-out) */
  sign_out: 'info',
  /** the realm's back-channel logout token (the user or an administrator ended the realm session) */
  backchannel_logout: 'info',
  /** the cookie's idle or absolute lifetime had passed when a request brought it */
  lifetime_reached: 'info',
  /** the access token expired and the realm gave no refresh token to renew it */
  no_refresh_token: 'info',
  /** the realm refused the refresh (4xx: the user disabled, the realm session ended or timed out, a spent refresh token) */
  refresh_refused: 'warn',
  /** the realm answered the refresh, but not with tokens the gateway accepts (another subject, a signature or claim that does not hold) */
  refresh_rejected: 'warn',
  /** the refresh gave tokens that had already expired: the request is refused (the session itself is kept) */
  refresh_outcome_expired: 'warn',
} as const;

export type SessionEndReason = keyof typeof SESSION_END_REASONS;

/** One audit line for a session's end (its fields, `reason` added) and one count. */
export function tellSessionEnd(
  obs: Pick<Observability, 'audit' | 'metrics'>,
  reason: SessionEndReason,
  fields: { event: string } & Record<string, unknown>,
  msg: string,
): void {
  obs.metrics.sessionsEnded.inc({ reason });
  obs.audit[SESSION_END_REASONS[reason]]({ ...fields, reason }, msg);
}
