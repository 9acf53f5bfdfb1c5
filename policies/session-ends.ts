// When a session ends, everything it opened ends with it (docs/operating/operations.md, "Signing out"): an open
// WebSocket keeps the identity it was upgraded with, so it is judged again when its session may
// have changed (a sign-out, back-channel logout or refused refresh here, a refresh, and on a timer
// for what happened on other instances). And when one user holds several sessions whose identity
// facts differ (one from before a demotion, one after), the newest facts the realm gave win: an
// older session is not let tell the chat front-end its older role again. Pure: facts in, a verdict
// with its rule out; gateway/auth/authenticator.ts and gateway/http/websockets.ts carry it out.

/** What an identity tells the chat front-end and the policies, and so what a socket was opened as. */
export interface IdentityFacts {
  email: string;
  name: string;
  admin: boolean;
  groups: readonly string[];
  tenants: readonly string[];
  activeTenant: string | null;
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

/** What the realm says of the user (email in any letter case, name, role, groups, tenants) is the same. */
export function sameRealmFacts(a: IdentityFacts, b: IdentityFacts): boolean {
  if (a === b) return true;
  return (
    a.email.toLowerCase() === b.email.toLowerCase() &&
    a.name === b.name &&
    a.admin === b.admin &&
    sameList(a.groups, b.groups) &&
    sameList(a.tenants, b.tenants)
  );
}

/** The same identity, the active tenant (chosen per session) included. */
export function sameFacts(a: IdentityFacts, b: IdentityFacts): boolean {
  return a.activeTenant === b.activeTenant && sameRealmFacts(a, b);
}

/** What the gateway knows of an open WebSocket's session now. */
export interface SocketSessionState {
  /** the session's end is recorded (sign-out, back-channel logout, refused refresh); undefined: cannot be known now */
  ended: boolean | undefined;
  /** the session cookie is still alive (rolling and absolute lifetime) */
  alive: boolean;
  /** the access token behind it has expired and no renewed state is known here */
  tokenExpired: boolean;
  /** the facts the socket was opened with, and those of the session as it now stands */
  opened: IdentityFacts;
  current: IdentityFacts;
}

/** `unknown`: the session's end could not be known (asking again may settle it). */
export type SocketVerdict = { keep: true } | { keep: false; reason: string; rule: string; unknown?: true };

/** May an open WebSocket stay open? Fail closed: what cannot be checked closes it. */
export function socketVerdict(s: SocketSessionState): SocketVerdict {
  if (s.ended === undefined) return { keep: false, reason: 'sign-in cannot be checked', rule: 'shared state unreachable: fail closed', unknown: true };
  if (s.ended) return { keep: false, reason: 'signed out', rule: 'the session ended' };
  if (!s.alive) return { keep: false, reason: 'session expired', rule: 'the session cookie expired' };
  // The renewal happens on the client's next upgrade (its cookie is renewed on the 101): a socket
  // never spends the refresh token itself, whose successor the browser would never receive.
  if (s.tokenExpired) return { keep: false, reason: 'session needs renewal', rule: 'the access token expired' };
  if (!sameFacts(s.opened, s.current)) return { keep: false, reason: 'identity changed', rule: 'role, groups, name or tenant changed' };
  return { keep: true };
}

/** A socket opened with a realm bearer JWT lives as long as the token. */
export function bearerSocketVerdict(expiresAt: number, now: number): SocketVerdict {
  return expiresAt > now ? { keep: true } : { keep: false, reason: 'token expired', rule: 'the bearer token expired' };
}
/** The newest facts seen of a user (per realm subject): when the realm gave them, and what they were. */
export interface SeenFacts {
  /** epoch seconds: the sign-in or refresh that gave them */
  at: number;
  facts: IdentityFacts;
}

/**
 * An identity whose facts the realm gave at `at`, against the newest seen of the same user:
 * `current` when none newer differs, `stale` when facts given later say something else (it must
 * be renewed before it is believed again).
 */
export function factsStanding(identity: SeenFacts, newest: SeenFacts | undefined): { standing: 'current' | 'stale'; rule: string } {
  if (!newest || newest.at <= identity.at) return { standing: 'current', rule: 'the newest facts of this user' };
  // The active tenant is each session's own choice (a user of two tenants in two browsers).
  if (sameRealmFacts(identity.facts, newest.facts)) return { standing: 'current', rule: 'the same facts as the newest' };
  return { standing: 'stale', rule: 'the realm said otherwise since: renew first' };
}
