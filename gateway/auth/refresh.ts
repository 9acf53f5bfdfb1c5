// A session's token refresh at the realm, once among every instance (shared state's single
// flight): new tokens, the user they name (roles, groups, tenants renewed), or the reason the
// session ends. Moved out of authenticator.ts as it was; given only the settings it reads.
import { createHash } from 'node:crypto';
import { decodeJwt, errors as joseErrors } from 'jose';
import type { SharedState } from './shared-state.js';
import { HTTP_TIMEOUT_MS, type realmClient } from './realm.js';
import { epoch, isSessionData, type RefreshResult, type SessionCodec, type SessionData, type SessionUser } from './session.js';
import { activeTenantAtRefresh } from '../../policies/tenancy.js';
import { z } from 'zod';
import { parseJson } from '../upstream/json.js';

/** The token endpoint's answer to a refresh: what the gateway reads of it. */
const TokenAnswer = z.looseObject({
  access_token: z.string().nullish(),
  id_token: z.string().nullish(),
  refresh_token: z.string().nullish(),
  expires_in: z.unknown().optional(),
  error: z.unknown().optional(),
});

/** How long a refresh's outcome is shared (as long as SessionStore keeps an old cookie's entry). */
const REFRESH_SHARED_SECONDS = 300;

export interface RefreshParts {
  /** SESSION_ABSOLUTE_SECONDS: how long a renewed ID token is kept */
  o: { absoluteSeconds: number };
  codec: SessionCodec;
  shared: Pick<SharedState, 'singleFlight' | 'keepIdToken'>;
  realm: Pick<ReturnType<typeof realmClient>, 'discovery' | 'tokenRequest'>;
  /** the user behind freshly issued tokens, both verified */
  userOfTokens(idToken: string | undefined, accessToken: string | undefined): Promise<SessionUser>;
}

export function createRefresh({ o, codec, shared, realm, userOfTokens }: RefreshParts): (data: SessionData) => Promise<RefreshResult> {
  const { discovery, tokenRequest } = realm;

  /**
   * A session's refresh, once among every instance (shared state's single flight, keyed by the
   * session and its refresh token): with Keycloak's "Revoke Refresh Token" a refresh token can be
   * used once, so two instances (or a request arriving after the refresh with the old cookie)
   * refreshing the same token would end the session. The outcome is shared encrypted with the
   * session key, as long as the cookie cache keeps an old cookie (5 minutes): a renewed session
   * (`ok`) or a refused one (`ended`); an unreachable realm shares nothing.
   */
  async function refresh(data: SessionData): Promise<RefreshResult> {
    if (!data.refresh_token) return { kind: 'ended', reason: 'no refresh token' };
    // The session's state being refreshed: its id, refresh token and access token expiry (an
    // identity provider that does not rotate refresh tokens hands the same one back every time).
    const key = `refresh:${data.id}:${data.expires_at}:${createHash('sha256').update(data.refresh_token).digest('base64url').slice(0, 22)}`;
    let mine: RefreshResult | undefined;
    let outcome: string | undefined;
    try {
      outcome = await shared.singleFlight(key, REFRESH_SHARED_SECONDS, 2 * HTTP_TIMEOUT_MS + 2_000, async () => {
        mine = await refreshAtRealm(data);
        if (mine.kind === 'ok') return `ok:${await codec.encrypt(mine.data, { iat: 0, uat: 0, exp: 0 })}`;
        if (mine.kind === 'ended') return `ended:${mine.reason}`;
        return undefined;
      });
    } catch (err) {
      // Redis failed after this instance refreshed: its outcome stands; else ask again later.
      if (!mine) return { kind: 'unavailable', reason: (err as Error).message };
    }
    if (mine) return mine;
    if (outcome?.startsWith('ok:')) {
      const renewed = (await codec.decrypt(outcome.slice(3)))?.data;
      if (isSessionData(renewed) && renewed.id === data.id && renewed.user.sub === data.user.sub) return { kind: 'ok', data: renewed, shared: true };
    }
    if (outcome?.startsWith('ended:')) return { kind: 'ended', reason: outcome.slice(6) };
    return { kind: 'unavailable', reason: 'the refresh begun by another instance gave no answer' };
  }

  async function refreshAtRealm(data: SessionData): Promise<RefreshResult> {
    let res: globalThis.Response;
    try {
      res = await tokenRequest((await discovery()).token_endpoint, { grant_type: 'refresh_token', refresh_token: data.refresh_token! });
    } catch (err) {
      return { kind: 'unavailable', reason: (err as Error).message };
    }
    // Checked like every peer's JSON (gateway/upstream/json.ts); an answer that is not of this shape
    // has no tokens: a 200 without them ends the session (fail closed), a 5xx stays unavailable.
    const read = parseJson(TokenAnswer, await res.text().catch(() => ''));
    const body: z.infer<typeof TokenAnswer> = read.ok ? read.value : {};
    if (res.status >= 500 || res.status === 429) return { kind: 'unavailable', reason: `token endpoint answered ${res.status}` };
    if (res.status !== 200 || typeof body.access_token !== 'string')
      return { kind: 'ended', reason: `refresh refused: ${res.status} ${typeof body.error === 'string' ? body.error : ''}`.trim() };
    try {
      const user = await userOfTokens(body.id_token ?? undefined, body.access_token);
      if (user.sub !== data.user.sub) return { kind: 'ended', reason: 'refresh named another subject' };
      if (body.id_token) shared.keepIdToken(data.id, body.id_token, epoch() + o.absoluteSeconds);
      const expiresAt = typeof body.expires_in === 'number' ? epoch() + body.expires_in : (decodeJwt(body.access_token).exp ?? epoch());
      const active = activeTenantAtRefresh(user.tenants, data.active_tenant).active;
      return { kind: 'ok', data: { ...data, user, active_tenant: active, refresh_token: body.refresh_token ?? data.refresh_token, expires_at: expiresAt } };
    } catch (err) {
      // The JWKS (new signing key) could not be fetched: ask again later; anything else is final.
      const e = err as Error;
      const transient = e instanceof joseErrors.JWKSTimeout || ['TypeError', 'AbortError', 'TimeoutError'].includes(e.name);
      return { kind: transient ? 'unavailable' : 'ended', reason: e.message };
    }
  }

  return refresh;
}
