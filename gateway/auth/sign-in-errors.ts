// What a failed sign-in answers (the sign-in routes' Express error handler): the realm's error
// answer at the callback said in words, an unreachable realm as a page that says
// so (503, not 500), a replayed callback of a signed-in browser sent home, JSON for API clients.
// Mounted last on gateway/auth/authenticator.ts's router; it receives only what it reads.
import type { Request, Response, NextFunction } from 'express';
import type { Observability } from '../observability/observability.js';
import type { Authenticator } from './identity.js';
import { PAGE_HEADERS, renderCatalogDown, renderProblem, renderSignInError } from '../pages/templates.js';
import { pageLocale } from '../pages/locale.js';
import { callbackError } from '../pages/oauth-errors.js';
import { clientKey } from '../http/client-key.js';

/** The sign-in module's own routes (the rest of /auth/ is login routing's). */
export const LOCAL_ROUTES = /^\/auth\/(start|callback|logout|session)(\/|$)/;

export function signInErrors({ obs, authenticate }: { obs: Pick<Observability, 'log' | 'auditAnonymous'>; authenticate: Authenticator['authenticate'] }) {
  return async (err: Error & { status?: number; error?: string }, req: Request, res: Response, next: NextFunction) => {
    // The realm answered with an error (`?error=access_denied&state=...`): say what it means,
    // whatever else went wrong with that answer.
    const realmError = req.path.startsWith('/auth/callback') && !res.headersSent ? callbackError(req) : undefined;
    if (realmError) {
      obs.auditAnonymous(clientKey(req.socket.remoteAddress), { event: 'sign-in-failed', reason: realmError, status: 400 }, 'sign-in failed');
      if (req.accepts(['json', 'html']) !== 'html')
        return void res.status(400).set('cache-control', 'no-store').json({ detail: 'Sign-in failed', error: realmError });
      const locale = pageLocale(typeof res.locals.locale === 'string' ? res.locals.locale : undefined, req.headers['accept-language']);
      return void res
        .status(400)
        .set(PAGE_HEADERS)
        .send(renderSignInError({ locale, code: realmError }));
    }
    const status = typeof err.status === 'number' && err.status >= 400 && err.status < 500 ? err.status : 0;
    if (!status && !res.headersSent && /^\/auth\/(start|callback|logout)\/?$/.test(req.path)) {
      // The realm cannot be reached (discovery, token endpoint): a page that says so, not a 500.
      obs.log.warn({ err: { message: err.message }, path: req.path }, 'sign-in unavailable: the identity provider cannot be reached');
      const retryHref = req.path.startsWith('/auth/start') ? req.originalUrl : '/auth/login';
      return void res
        .status(503)
        .set(PAGE_HEADERS)
        .set('retry-after', '30')
        .send(renderCatalogDown({ locale: pageLocale(undefined), retryHref }));
    }
    if (!status || res.headersSent || !LOCAL_ROUTES.test(req.path)) return next(err);
    obs.log.warn({ err: { message: err.message, error: err.error }, path: req.path }, 'sign-in failed');
    if (req.path.startsWith('/auth/callback'))
      obs.auditAnonymous(clientKey(req.socket.remoteAddress), { event: 'sign-in-failed', reason: err.error ?? err.message, status }, 'sign-in failed');
    // A callback replayed (Back button) by a browser that is signed in: nothing to do.
    if (
      req.path.startsWith('/auth/callback') &&
      (await Promise.resolve()
        .then(() => authenticate(req))
        .catch(() => undefined))
    )
      return void res.redirect('/');
    const detail = req.path.startsWith('/auth/session') ? 'Invalid request body' : status === 403 ? err.message : 'Sign-in failed, please start again';
    // A browser that lands here (a replayed or bare callback) gets a page with the way back; API clients keep JSON.
    if (req.path.startsWith('/auth/callback') && req.accepts(['json', 'html']) === 'html') {
      const locale = pageLocale(typeof res.locals.locale === 'string' ? res.locals.locale : undefined, req.headers['accept-language']);
      return void res
        .status(status)
        .set(PAGE_HEADERS)
        .send(renderProblem({ locale, kind: 'sign-in-failed' }));
    }
    res.status(status).json({ detail, error: err.error });
  };
}
