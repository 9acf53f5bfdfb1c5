// A session's token refresh at the realm, once among every instance (shared state's single
// flight): new tokens, the user they name (roles, groups, tenants renewed), or the reason the
// session ends. Moved out of authenticator.ts as it was; given only the settings it reads.
import { createHash } from 'node:crypto';
import { errors as joseErrors } from 'jose';
import { ClientError, ResponseBodyError, WWWAuthenticateChallengeError } from 'openid-client';
import type { SharedState } from '../state/shared-state.js';
import { HTTP_TIMEOUT_MS, REFRESH_HOLD_MS, noAnswer, type RealmClient } from './realm.js';
import { epoch, isSessionData, type SessionCodec, type SessionData, type SessionUser } from './session-cookie.js';
import { refreshStateName, tokenState } from './token-state.js';
import { type RefreshResult } from './session-store.js';
import { activeTenantAtRefresh } from '../../policies/tenancy.js';

/** How long a refresh's outcome is shared (as long as SessionStore keeps an old cookie's entry). */
const REFRESH_SHARED_SECONDS = 300;
/** How long a request waits for its session's refresh: as long as for any answer of the realm. */
const REFRESH_WAIT_MS = HTTP_TIMEOUT_MS;
/** How long a refresh may run: discovery and the keys (each HTTP_TIMEOUT_MS at most) and the held grant. */
const REFRESH_RUN_MS = REFRESH_HOLD_MS + 2 * HTTP_TIMEOUT_MS;

export interface RefreshParts {
  /** SESSION_ABSOLUTE_SECONDS: how long a renewed ID token is kept */
  o: { absoluteSeconds: number };
  codec: SessionCodec;
  shared: Pick<SharedState, 'singleFlight' | 'keepIdToken'>;
  realm: Pick<RealmClient, 'configuration' | 'refreshGrant'>;
  /** the user behind freshly issued tokens, both verified */
  userOfTokens(idToken: string | undefined, accessToken: string | undefined): Promise<SessionUser>;
}

export function createRefresh({ o, codec, shared, realm, userOfTokens }: RefreshParts): (data: SessionData) => Promise<RefreshResult> {
  /**
   * A session's refresh, once among every instance (shared state's single flight, keyed by the
   * state it replaces: gateway/auth/token-state.ts `refreshStateName`): with Keycloak's "Revoke Refresh
   * Token" a refresh token can be used once, so two instances (or a request arriving after the
   * refresh with the old cookie) refreshing the same token would end the session. The outcome is
   * shared encrypted with the session key, as long as the cookie cache keeps an old cookie (5
   * minutes): a renewed session (`ok`) or a refused one (`ended`); an unreachable realm shares
   * nothing. A shared outcome is taken only when it is newer than the state it replaces.
   */
  async function refresh(data: SessionData): Promise<RefreshResult> {
    if (!data.refresh_token) return { kind: 'ended', reason: 'the access token expired and the session has no refresh token', end: 'no_refresh_token' };
    const key = `refresh:${refreshStateName(data)}`;
    const first = await once(key, data);
    if (first.kind !== 'behind') return first;
    // What was shared under this name is not newer than the session (a state named the same as an
    // earlier one, as a cookie written before the access token's hash was kept may be): not taken.
    // Refreshed anew, under a name made of that outcome, so that every instance meeting it still
    // makes one refresh between them.
    const second = await once(`${key}:over:${first.digest}`, data);
    if (second.kind !== 'behind') return second;
    return { kind: 'unavailable', reason: 'the refresh outcome shared for this session is not newer than the session' };
  }

  /**
   * One refresh of `data` under `key`, or the outcome another made: `behind` when that outcome is
   * not newer than `data`. A request waits REFRESH_WAIT_MS for it; a refresh the realm has not
   * answered by then goes on (its answer shared when it comes, the next request takes it), never
   * sent twice meanwhile: the realm may still carry out the first.
   */
  async function once(key: string, data: SessionData): Promise<RefreshResult | { kind: 'behind'; digest: string }> {
    let began = false;
    let mine: RefreshResult | undefined;
    let outcome: string | undefined;
    const work = async () => {
      began = true;
      const result = await refreshAtRealm(data);
      mine = result;
      if (result.kind === 'ok') return `ok:${await codec.encrypt(result.data, { iat: 0, uat: 0, exp: 0 })}`;
      if (result.kind === 'ended') return `ended:${result.reason}`;
      return undefined;
    };
    try {
      outcome = await shared.singleFlight(key, REFRESH_SHARED_SECONDS, REFRESH_WAIT_MS, work, REFRESH_RUN_MS);
    } catch (err) {
      // Redis failed after this instance refreshed: its outcome stands; else ask again later.
      if (!mine) return { kind: 'unavailable', reason: (err as Error).message };
    }
    if (mine) return mine;
    if (began && outcome === undefined)
      return { kind: 'unavailable', reason: `the realm has not answered the refresh within ${REFRESH_WAIT_MS} ms (still awaited)` };
    if (outcome?.startsWith('ok:')) {
      const renewed = (await codec.decrypt(outcome.slice(3)))?.data;
      if (isSessionData(renewed) && renewed.id === data.id && renewed.user.sub === data.user.sub) {
        if (newer(renewed, data)) return { kind: 'ok', data: renewed, shared: true };
        return { kind: 'behind', digest: createHash('sha256').update(outcome).digest('base64url').slice(0, 22) };
      }
    }
    if (outcome?.startsWith('ended:')) return { kind: 'ended', reason: outcome.slice(6), shared: true };
    return { kind: 'unavailable', reason: 'the refresh begun by another instance gave no answer' };
  }

  async function refreshAtRealm(data: SessionData): Promise<RefreshResult> {
    try {
      await realm.configuration();
    } catch (err) {
      return { kind: 'unavailable', reason: (err as Error).message };
    }
    let tokens: Awaited<ReturnType<RealmClient['refreshGrant']>>;
    try {
      tokens = await realm.refreshGrant(data.refresh_token!);
    } catch (err) {
      return refused(err);
    }
    try {
      const user = await userOfTokens(tokens.id_token, tokens.access_token);
      if (user.sub !== data.user.sub) return { kind: 'ended', reason: 'refresh named another subject', end: 'refresh_rejected' };
      if (tokens.id_token) shared.keepIdToken(data.id, tokens.id_token, epoch() + o.absoluteSeconds);
      const active = activeTenantAtRefresh(user.tenants, data.active_tenant).active;
      const { token_lifetime: _, ...before } = data;
      return {
        kind: 'ok',
        data: { ...before, user, active_tenant: active, refresh_token: tokens.refresh_token ?? data.refresh_token, ...tokenState(tokens), facts_at: epoch() },
      };
    } catch (err) {
      // The JWKS (new signing key) could not be fetched: ask again later; anything else is final.
      const e = err as Error;
      const transient = e instanceof joseErrors.JWKSTimeout || ['TypeError', 'AbortError', 'TimeoutError'].includes(e.name);
      return transient ? { kind: 'unavailable', reason: e.message } : { kind: 'ended', reason: e.message, end: 'refresh_rejected' };
    }
  }

  return refresh;
}

/**
 * Is a shared outcome newer than the state it would replace? Its access token expires later; or in
 * the same second, being another access token: the refresh of this very state (its name carries
 * the access token's hash) made within the second that state was given.
 */
function newer(renewed: SessionData, current: SessionData): boolean {
  if (renewed.expires_at !== current.expires_at) return renewed.expires_at > current.expires_at;
  return renewed.at_hash !== undefined && current.at_hash !== undefined && renewed.at_hash !== current.at_hash;
}

/** HTTP status of the token endpoint's answer carried by an openid-client error, if any. */
function answerStatus(err: unknown): number | undefined {
  if (err instanceof ResponseBodyError || err instanceof WWWAuthenticateChallengeError) return err.status;
  if (err instanceof ClientError && err.cause instanceof Response) return err.cause.status;
  return undefined;
}

/**
 * What a failed refresh grant means for the session: the realm busy or out of reach (5xx, 429, no
 * answer) leaves it for a later try; any other refusal (4xx, an answer without tokens or with an
 * ID token whose claims do not hold) ends it: fail closed.
 */
function refused(err: unknown): RefreshResult {
  const status = answerStatus(err);
  if (status !== undefined && (status >= 500 || status === 429)) return { kind: 'unavailable', reason: `token endpoint answered ${status}` };
  if (status !== undefined) {
    const error = err instanceof ResponseBodyError ? err.error : '';
    return { kind: 'ended', reason: `refresh refused: ${status} ${error}`.trim(), end: 'refresh_refused' };
  }
  const e = err as Error;
  // No answer (refused, reset, a realm that hangs): asked again later. Otherwise an answer that is
  // not a token response (no tokens, an ID token whose claims do not hold).
  return noAnswer(err) ? { kind: 'unavailable', reason: e.message } : { kind: 'ended', reason: e.message, end: 'refresh_rejected' };
}
