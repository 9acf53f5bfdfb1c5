// OIDC Back-Channel Logout 1.0: express-openid-connect verifies the logout token (signature with
// the realm's keys, issuer, audience, events claim, no nonce, sid or sub); this adds what it leaves
// out (iat, jti replay) and ends the sessions on every instance. Moved out of authenticator.ts as
// it was; given only the settings it reads.
import type { JWTPayload } from 'jose';
import type { Observability } from '../ops/observability.js';
import type { SharedState } from './shared-state.js';
import { CLOCK_TOLERANCE_S } from './realm.js';
import { epoch } from './session.js';

export const BACKCHANNEL_LOGOUT_PATH = '/auth/backchannel-logout';
/** A logout token older than this is refused (its jti is remembered as long). */
const LOGOUT_TOKEN_MAX_AGE_S = 600;

/** `absoluteSeconds`: how long an ended session's cookies stay refused (SESSION_ABSOLUTE_SECONDS). */
export function backChannelLogout(
  o: { absoluteSeconds: number },
  shared: Pick<SharedState, 'firstUse' | 'end'>,
  obs: Pick<Observability, 'audit'>,
): (token: JWTPayload) => Promise<void> {
  /** A verified logout token (express-openid-connect checked signature, iss, aud, events, nonce, sid/sub). */
  async function endByLogoutToken(token: JWTPayload): Promise<void> {
    const now = epoch();
    if (typeof token.iat !== 'number' || token.iat > now + CLOCK_TOLERANCE_S || token.iat < now - LOGOUT_TOKEN_MAX_AGE_S)
      throw new Error('iat missing or out of range');
    if (typeof token.jti !== 'string' || !token.jti) throw new Error('jti missing');
    if (!(await shared.firstUse(token.jti, now + LOGOUT_TOKEN_MAX_AGE_S))) throw new Error('logout token replayed');
    const until = now + o.absoluteSeconds;
    const sid = typeof token.sid === 'string' && token.sid ? token.sid : undefined;
    // By realm session when named; else every session of the subject begun before the token.
    if (sid) shared.end({ sid }, until);
    else shared.end({ sub: String(token.sub), before: token.iat }, until);
    obs.audit.info({ event: 'backchannel-logout', sub: token.sub ?? null, sid: sid ?? null }, 'sessions ended by the identity provider');
  }

  return endByLogoutToken;
}
