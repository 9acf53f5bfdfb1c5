// Signing out (docs/operating/operations.md, "Signing out"): the gateway's /auth/logout and the chat front-end's own
// sign-out (answered here, never forwarded) end the gateway session on every instance, revoke its
// refresh token, clear the chat front-end's cookies and send the browser through the realm's
// logout. Moved out of authenticator.ts as it was; given only the settings it reads.
import type { Router, Request, Response, NextFunction } from 'express';
import type { Observability } from '../observability/observability.js';
import { loginPath, pageLocale } from '../pages/locale.js';
import type { SharedState } from '../state/shared-state.js';
import type { RealmClient } from './realm.js';
import { isSessionData, readSessionCookie, type SessionData } from './session-cookie.js';
import { tellSessionEnd } from './session-end.js';
import { type SessionStore } from './session-store.js';
import { SIGNOUT_PATH } from '../../policies/routes.js';
import { signOutRequest } from '../../policies/origins.js';
import { CLEAR_SITE_DATA } from '../http/respond.js';

/** Open WebUI's session cookie (its JWT). */
export const UPSTREAM_SESSION_COOKIE = 'token';
/** Open WebUI's cookies that its own sign-out deletes (0.12.4 auths.py `signout`; `owui-session` is its starlette session). */
const UPSTREAM_SESSION_COOKIES = [UPSTREAM_SESSION_COOKIE, 'owui-session', 'oui-session', 'oauth_id_token', 'oauth_session_id'];

export interface SignOutParts {
  settings: { publicUrl: string; allowedOrigins: readonly string[] };
  store: SessionStore;
  shared: Pick<SharedState, 'idToken'>;
  obs: Pick<Observability, 'audit' | 'log' | 'metrics'>;
  realm: Pick<RealmClient, 'endSessionUrl' | 'revoke'>;
}

/** GET /auth/logout, and the chat front-end's sign-out (GET and POST {SIGNOUT_PATH}). */
export function mountSignOut(router: Router, { settings, store, shared, obs, realm }: SignOutParts): void {
  /**
   * End the gateway session behind this request (cookie cleared, every copy refused on every
   * instance, refresh token revoked) and the chat front-end's (its `token` and `oui-session`
   * cookies: the next user of this browser must not carry them). Returns the ID token kept for it.
   */
  async function endSession(req: Request, res: Response, how: string): Promise<string | undefined> {
    const found = readSessionCookie(req.headers.cookie);
    const data = found ? ((await store.codec.decrypt(found.value))?.data as Partial<SessionData> | undefined) : undefined;
    if (found) for (const name of found.names) res.append('set-cookie', store.codec.clearLine(name));
    let idToken: string | undefined;
    if (isSessionData(data)) {
      // ended here at once; answered once every instance can know it (the next request, wherever
      // it goes, is refused)
      const ended = store.revoke(data.id);
      idToken = await shared.idToken(data.id);
      await ended;
      tellSessionEnd(obs, 'sign_out', { event: 'sign-out', sub: data.user.sub, email: data.user.email, via: how }, 'signed out');
      if (data.refresh_token) void revokeRefreshToken(data.refresh_token);
    }
    for (const name of UPSTREAM_SESSION_COOKIES) res.clearCookie(name, { path: '/' });
    res.set('cache-control', 'no-store');
    res.set('clear-site-data', CLEAR_SITE_DATA); // nothing usable left in this browser
    return idToken;
  }

  /** Where the realm ends its session: with id_token_hint it does so without a confirmation page. */
  async function realmLogoutUrl(idToken: string | undefined, loginPage: string): Promise<string> {
    const back = new URL(loginPage, settings.publicUrl).href;
    const url = await realm.endSessionUrl({ post_logout_redirect_uri: back, ...(idToken ? { id_token_hint: idToken } : {}) }).catch(() => undefined);
    return url ?? back;
  }

  router.get('/auth/logout', async (req, res, next) => {
    try {
      const locale = typeof res.locals.locale === 'string' ? res.locals.locale : undefined;
      const idToken = await endSession(req, res, 'gateway');
      res.redirect(await realmLogoutUrl(idToken, loginPath(pageLocale(locale))));
    } catch (err) {
      next(err);
    }
  });

  // The chat front-end's own "Sign out" (Open WebUI auths.py `signout`). Open WebUI 0.10.2 and later
  // (0.12.4 included) POST it, older releases GET it; the front-end then removes its token and sets
  // `location.href` to `redirect_url` (0.12.4 keeps a URL that names a `post_logout_redirect_uri` as
  // it is). Answered here, never forwarded: the gateway session ends with it, then the realm's, and
  // the browser lands on the gateway's login page, signed out.
  const signOut = async (req: Request, res: Response, next: NextFunction) => {
    try {
      // A page elsewhere must not sign the user out (an <img> or a cross-site form pointing here).
      const allowed = signOutRequest(req.method, req.headers['sec-fetch-site'], req.headers.origin, settings.allowedOrigins);
      if (!allowed.allow) return void res.status(allowed.status).json({ detail: allowed.detail });
      const idToken = await endSession(req, res, 'chat front-end');
      res.json({ status: true, redirect_url: await realmLogoutUrl(idToken, loginPath(pageLocale(undefined))) });
    } catch (err) {
      next(err);
    }
  };
  router.get(SIGNOUT_PATH, signOut);
  router.post(SIGNOUT_PATH, signOut);
  router.all(SIGNOUT_PATH, (_req, res) => void res.status(405).set('allow', 'GET, POST').json({ detail: 'Method Not Allowed' }));

  async function revokeRefreshToken(token: string): Promise<void> {
    try {
      await realm.revoke(token);
    } catch (err) {
      obs.log.info({ reason: (err as Error).message }, 'refresh token revocation failed');
    }
  }
}
