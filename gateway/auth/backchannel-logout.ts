// OIDC Back-Channel Logout 1.0 at POST /auth/backchannel-logout: the logout token is verified
// against the realm's keys (gateway/auth/realm.ts: signature, issuer, audience, events claim, no
// nonce, sid or sub); this adds iat and jti replay and ends the sessions on every instance. Given
// only the settings it reads.
import express, { type Router } from 'express';
import type { JWTPayload } from 'jose';
import type { Observability } from '../observability/observability.js';
import type { SharedState } from '../state/shared-state.js';
import { CLOCK_TOLERANCE_S } from './realm.js';
import { epoch } from './session-cookie.js';
import { tellSessionEnd } from './session-end.js';

export const BACKCHANNEL_LOGOUT_PATH = '/auth/backchannel-logout';
/** A logout token older than this is refused (its jti is remembered as long). */
const LOGOUT_TOKEN_MAX_AGE_S = 600;

/** `absoluteSeconds`: how long an ended session's cookies stay refused (SESSION_ABSOLUTE_SECONDS). */
export function backChannelLogout(
  o: { absoluteSeconds: number },
  shared: Pick<SharedState, 'firstUse' | 'end'>,
  obs: Pick<Observability, 'audit' | 'metrics'>,
): (token: JWTPayload) => Promise<void> {
  /** A verified logout token (realm.ts checked signature, iss, aud, events, nonce, sid/sub). */
  async function endByLogoutToken(token: JWTPayload): Promise<void> {
    const now = epoch();
    if (typeof token.iat !== 'number' || token.iat > now + CLOCK_TOLERANCE_S || token.iat < now - LOGOUT_TOKEN_MAX_AGE_S)
      throw new Error('iat missing or out of range');
    if (typeof token.jti !== 'string' || !token.jti) throw new Error('jti missing');
    if (!(await shared.firstUse(token.jti, now + LOGOUT_TOKEN_MAX_AGE_S))) throw new Error('logout token replayed');
    const until = now + o.absoluteSeconds;
    const sid = typeof token.sid === 'string' && token.sid ? token.sid : undefined;
    // By realm session when named; else every session of the subject begun before the token.
    if (sid) await shared.end({ sid }, until);
    else await shared.end({ sub: String(token.sub), before: token.iat }, until);
    tellSessionEnd(
      obs,
      'backchannel_logout',
      { event: 'backchannel-logout', sub: token.sub ?? null, sid: sid ?? null },
      'sessions ended by the identity provider',
    );
  }

  return endByLogoutToken;
}

/**
 * The route: 204 once the sessions are ended; 400 with an OAuth error otherwise (section 2.8), as
 * express-openid-connect answered before: `invalid_request` for a token that does not verify,
 * `application_error` when it verifies but cannot end anything (stale, replayed, no jti).
 */
export function mountBackChannelLogout(
  router: Router,
  verifyLogoutToken: (token: string) => Promise<JWTPayload>,
  endByLogoutToken: (token: JWTPayload) => Promise<void>,
  obs: Pick<Observability, 'log'>,
): void {
  router.post(BACKCHANNEL_LOGOUT_PATH, express.urlencoded({ extended: false, limit: '16kb' }), async (req, res) => {
    res.set('cache-control', 'no-store');
    const token = (req.body as { logout_token?: unknown } | undefined)?.logout_token;
    if (typeof token !== 'string' || !token) return void res.status(400).json({ error: 'invalid_request', error_description: 'Missing logout_token' });
    let payload: JWTPayload;
    try {
      payload = await verifyLogoutToken(token);
    } catch (err) {
      return void res.status(400).json({ error: 'invalid_request', error_description: (err as Error).message });
    }
    try {
      await endByLogoutToken(payload);
    } catch (err) {
      obs.log.info({ reason: (err as Error).message }, 'logout token refused');
      return void res.status(400).json({ error: 'application_error', error_description: 'The application failed to invalidate the session.' });
    }
    res.status(204).end();
  });
}
