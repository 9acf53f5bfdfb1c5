// Signing out (docs/operating/operations.md, "Signing out"): the gateway's /auth/logout and the chat
// front-end's own sign-out (answered here, never forwarded) end the gateway session on every
// instance before they answer, and send the browser through the realm's logout first, so that no
// realm session outlives the gateway's (docs/design/sign-out-everywhere.md).
import type { Router, Request, Response, NextFunction } from 'express';
import type { Observability } from '../observability/observability.js';
import { loginPath, pageLocale, type PageLocale } from '../pages/locale.js';
import { SIGN_OUT_PENDING_STATE } from '../pages/templates.js';
import type { EndOutcome, SharedState } from '../state/shared-state.js';
import type { RealmClient } from './realm.js';
import { isSessionData, readSessionCookie, type SessionData } from './session-cookie.js';
import { tellSessionEnd } from './session-end.js';
import { type SessionStore } from './session-store.js';
import { SIGNOUT_PATH } from '../../policies/routes.js';
import { signOutRequest } from '../../policies/origins.js';
import { CLEAR_SITE_DATA } from '../http/respond.js';

/** Open WebUI's session cookie (its JWT). */
export const UPSTREAM_SESSION_COOKIE = 'token';
/** Open WebUI's cookies that its own sign-out deletes (auths.py `signout`; `owui-session` is its starlette session). */
const UPSTREAM_SESSION_COOKIES = [UPSTREAM_SESSION_COOKIE, 'owui-session', 'oui-session', 'oauth_id_token', 'oauth_session_id'];

/** How long a browser sent on to the realm's logout has to end the realm session there, before the gateway revokes the refresh token itself. */
export const REALM_LOGOUT_GRACE_MS = 30_000;

export interface SignOutParts {
  settings: { publicUrl: string; allowedOrigins: readonly string[] };
  store: SessionStore;
  shared: Pick<SharedState, 'idToken' | 'isEnded'>;
  obs: Pick<Observability, 'audit' | 'log' | 'metrics'>;
  realm: Pick<RealmClient, 'endSessionUrl' | 'revoke'>;
  /** REALM_LOGOUT_GRACE_MS unless a test shortens it */
  realmLogoutGraceMs?: number;
}

/** What both sign-outs do: end the session behind a request, and say where the realm ends its own. */
function sessionEnder({ settings, store, shared, obs, realm, realmLogoutGraceMs = REALM_LOGOUT_GRACE_MS }: SignOutParts) {
  async function revokeRefreshToken(token: string): Promise<void> {
    try {
      await realm.revoke(token);
    } catch (err) {
      obs.log.info({ reason: (err as Error).message }, 'refresh token revocation failed');
    }
  }

  // Revoking first would race the browser to the realm: Keycloak ends a session whose last token is
  // revoked outright (TokenRevocationEndpoint), without the logout of the provider it was brokered
  // from, and the browser's logout then finds no session to end there.
  const waiting = new Map<NodeJS.Timeout, string>();
  /** Whether the realm has told (back-channel logout) that this realm session ended: nothing left to revoke. */
  const realmSaidEnded = (sid: string | undefined) => sid !== undefined && shared.isEnded({ id: '', sid, sub: '', iat: 0 }) === true;
  function revokeLater(token: string, sid: string | undefined): void {
    const timer = setTimeout(() => {
      waiting.delete(timer);
      if (!realmSaidEnded(sid)) void revokeRefreshToken(token);
    }, realmLogoutGraceMs);
    timer.unref();
    waiting.set(timer, token);
  }

  return {
    /**
     * Retire the ended session's refresh token: at once, or, when the browser goes on to the
     * realm's logout with id_token_hint (the realm ends its session there, with no confirmation
     * page), after the grace, for a browser that never gets there (unless the realm's back-channel
     * logout said that session ended: Keycloak would log the revocation of its token as an error).
     */
    retire(session: { refreshToken?: string; sid?: string }, throughRealm: boolean): void {
      const refreshToken = session.refreshToken;
      if (!refreshToken) return;
      if (throughRealm) revokeLater(refreshToken, session.sid);
      else void revokeRefreshToken(refreshToken);
    },

    /** Revoke now what still waits (the gateway is stopping): at most 2 s. */
    async flush(): Promise<void> {
      for (const timer of waiting.keys()) clearTimeout(timer);
      const tokens = [...waiting.values()];
      waiting.clear();
      await Promise.race([Promise.all(tokens.map(revokeRefreshToken)), new Promise((r) => setTimeout(r, 2_000).unref())]);
    },
    /**
     * End the gateway session behind this request (cookie cleared, every copy refused on every
     * instance) and the chat front-end's (its `token` and `oui-session`
     * cookies: the next user of this browser must not carry them). Returns the ID token kept for
     * it, its refresh token (for `retire`), and how the end stood when answered ('durable' without
     * a session).
     */
    async endSession(req: Request, res: Response, how: string): Promise<{ idToken?: string; refreshToken?: string; sid?: string; end: EndOutcome }> {
      const found = readSessionCookie(req.headers.cookie);
      const data = found ? ((await store.codec.decrypt(found.value))?.data as Partial<SessionData> | undefined) : undefined;
      if (found) for (const name of found.names) res.append('set-cookie', store.codec.clearLine(name));
      let idToken: string | undefined;
      let refreshToken: string | undefined;
      let sid: string | undefined;
      let end: EndOutcome = 'durable';
      if (isSessionData(data)) {
        // ended here at once; answered once every instance refuses it (the next request, wherever
        // it goes), or with the page that says it is still being written
        const ended = store.revoke(data.id);
        idToken = await shared.idToken(data.id);
        end = await ended;
        tellSessionEnd(obs, 'sign_out', { event: 'sign-out', sub: data.user.sub, email: data.user.email, via: how, end }, 'signed out');
        refreshToken = data.refresh_token ?? undefined;
        sid = data.sid ?? undefined;
      }
      for (const name of UPSTREAM_SESSION_COOKIES) res.clearCookie(name, { path: '/' });
      res.set('cache-control', 'no-store');
      res.set('clear-site-data', CLEAR_SITE_DATA); // nothing usable left in this browser
      return { idToken, refreshToken, sid, end };
    },

    /**
     * Where the realm ends its session: with id_token_hint it does so without a confirmation page
     * (`ends`: the browser sent there ends the realm session itself). An end not yet durable passes
     * `state`, which the realm hands back to the login page, to say so.
     */
    async realmLogout(idToken: string | undefined, locale: PageLocale, end: EndOutcome): Promise<{ url: string; ends: boolean }> {
      const back = new URL(loginPath(locale), settings.publicUrl).href;
      const state: Record<string, string> = end === 'durable' ? {} : { state: SIGN_OUT_PENDING_STATE };
      const url = await realm
        .endSessionUrl({ post_logout_redirect_uri: back, ...state, ...(idToken ? { id_token_hint: idToken } : {}) })
        .catch(() => undefined);
      const home = state.state ? `${back}?${new URLSearchParams(state)}` : back;
      return { url: url ?? home, ends: url !== undefined && idToken !== undefined };
    },
  };
}

/**
 * GET /auth/logout, and the chat front-end's sign-out (GET and POST {SIGNOUT_PATH}). Returns what
 * the gateway calls when stopping: the refresh tokens still waiting are revoked then.
 */
export function mountSignOut(router: Router, parts: SignOutParts): () => Promise<void> {
  const { endSession, realmLogout, retire, flush } = sessionEnder(parts);
  const localeOf = (req: Request, res: Response) =>
    pageLocale(typeof res.locals.locale === 'string' ? res.locals.locale : undefined, req.headers['accept-language']);

  router.get('/auth/logout', async (req, res, next) => {
    try {
      const { idToken, end, ...session } = await endSession(req, res, 'gateway');
      const realmEnd = await realmLogout(idToken, localeOf(req, res), end);
      retire(session, realmEnd.ends);
      res.redirect(realmEnd.url);
    } catch (err) {
      next(err);
    }
  });

  // The chat front-end's own "Sign out" (Open WebUI auths.py `signout`). Open WebUI 0.10.2 and later
  // (every checked release) POST it, older releases GET it; the front-end then removes its token and sets
  // `location.href` to `redirect_url` (the table release keeps a URL that names a `post_logout_redirect_uri` as
  // it is). Answered here, never forwarded: the gateway session ends with it, then the realm's, and
  // the browser lands on the gateway's login page, signed out.
  const signOut = async (req: Request, res: Response, next: NextFunction) => {
    try {
      // A page elsewhere must not sign the user out (an <img> or a cross-site form pointing here).
      const allowed = signOutRequest(req.method, req.headers['sec-fetch-site'], req.headers.origin, parts.settings.allowedOrigins);
      if (!allowed.allow) return void res.status(allowed.status).json({ detail: allowed.detail });
      const { idToken, end, ...session } = await endSession(req, res, 'chat front-end');
      const realmEnd = await realmLogout(idToken, pageLocale(undefined), end);
      retire(session, realmEnd.ends);
      res.json({ status: true, redirect_url: realmEnd.url });
    } catch (err) {
      next(err);
    }
  };
  router.get(SIGNOUT_PATH, signOut);
  router.post(SIGNOUT_PATH, signOut);
  router.all(SIGNOUT_PATH, (_req, res) => void res.status(405).set('allow', 'GET, POST').json({ detail: 'Method Not Allowed' }));
  return flush;
}
