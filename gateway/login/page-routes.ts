// The login pages' routes (spec area B: /auth/login, /auth/login/{alias}, /auth/signed-in, the
// localized callback page, /auth/start's check, Open WebUI's own /auth); the HTML is
// gateway/pages/templates.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type Request, type Response } from 'express';
import type { ProviderCatalog } from './catalog.js';
import {
  DIRECT_LOGIN_ALIAS,
  isUsableForLinks,
  buttonList,
  frontEndSignInReturnTo,
  providerEntry,
  safeReturnTo,
  type IdentityProvider,
  type ListSettings,
} from '../../policies/login-routing.js';
import { isIdSyntax, isLocaleSegment, plausibleAlias } from '../../policies/syntax.js';
import {
  PAGE_HEADERS,
  renderCatalogDown,
  renderLinkUnavailable,
  renderProviderList,
  renderProviderPage,
  renderWelcome,
  renderSignedIn,
  renderSignInError,
  renderProblem,
  renderTenantNotMember,
  renderSignOutPending,
  SIGN_OUT_PENDING_STATE,
} from '../pages/templates.js';
import { loginPath, pageLocale, type PageLocale } from '../pages/locale.js';
import { callbackError } from '../pages/oauth-errors.js';

/** Who is signed in on this request, if anyone: /auth/login then says so instead of offering to sign in. */
export type SignedIn = (
  req: IncomingMessage,
  res: ServerResponse,
) => Promise<{ name: string; email: string; tenants?: string[]; activeTenant?: string | null } | undefined>;

export interface LoginPageRoutes {
  router: Router;
  /** Runs before the sign-in module: `/auth/start?idp=<alias>` for an alias that names no usable provider. */
  startCheck: Router;
}

function sendPage(res: Response, status: number, html: string): void {
  res.status(status).set({ ...PAGE_HEADERS, 'content-length': String(Buffer.byteLength(html)) });
  res.end(res.req.method === 'HEAD' ? undefined : html);
}

function firstQuery(value: unknown): unknown {
  return Array.isArray(value) ? value[0] : value;
}

/** The page's locale from `/:locale/...`, or undefined for a prefix that is no language tag. */
function localeParam(req: Request): PageLocale | undefined {
  const prefix = req.params.locale === undefined ? undefined : String(req.params.locale);
  if (prefix !== undefined && !isLocaleSegment(prefix)) return undefined;
  return pageLocale(prefix, req.headers['accept-language']);
}

const returnToOf = (req: Request) => safeReturnTo(firstQuery(req.query.returnTo));
const selfHref = (req: Request) => req.originalUrl.split('?')[0] + (returnToOf(req) ? `?${new URLSearchParams({ returnTo: returnToOf(req)! })}` : '');

// `/{locale}/auth/callback` is no redirect URI (the realm only knows `$PUBLIC_URL/auth/callback`),
// but a browser that lands there gets a page in its language, not JSON: what
// the realm's error means, or that this is no sign-in answer, and the way back.
function localizedCallback(req: Request, res: Response, next: (err?: unknown) => void): void {
  const locale = localeParam(req);
  if (!locale) return next();
  const code = callbackError(req);
  sendPage(res, 400, code ? renderSignInError({ locale, code }) : renderProblem({ locale, kind: 'sign-in-failed' }));
}

// Open WebUI's own sign-in page (`/auth?redirect=...`, whatever else the query holds): its
// front-end goes there after its own sign-out and when it holds no token. Everyone signs in at
// the gateway, so its login page, with Open WebUI's return address when that is safe.
function frontEndSignIn(req: Request, res: Response, next: (err?: unknown) => void): void {
  const prefix = req.params.locale === undefined ? undefined : String(req.params.locale);
  if (prefix !== undefined && !isLocaleSegment(prefix)) return next();
  const returnTo = frontEndSignInReturnTo(firstQuery(req.query.redirect));
  res.set('cache-control', 'no-store');
  res.redirect(302, loginPath(pageLocale(prefix)) + (returnTo ? `?${new URLSearchParams({ returnTo })}` : ''));
}

/** /auth/login: one button per provider (list-1), or the welcome page (list-3). */
function loginPageHandler(login: { readonly current: ListSettings }, catalog: Pick<ProviderCatalog, 'list' | 'provider'>, signedIn: SignedIn | undefined) {
  return async (req: Request, res: Response, next: (err?: unknown) => void) => {
    const locale = localeParam(req);
    if (!locale) return next();
    const returnTo = returnToOf(req);
    // Signed in already: who, and a way on or out (a session that cannot be checked shows the page).
    const signedInUser = signedIn ? await signedIn(req, res).catch(() => undefined) : undefined;
    if (signedInUser) return sendPage(res, 200, renderSignedIn({ locale, returnTo, name: signedInUser.name, email: signedInUser.email }));
    // back from the realm's logout after a sign-out not yet durable: say so (the state is only this notice)
    if (req.query.state === SIGN_OUT_PENDING_STATE) return sendPage(res, 200, renderSignOutPending({ locale }));
    const list = login.current;
    if (list.welcomePage) return sendPage(res, 200, renderWelcome({ locale, returnTo, directLogin: list.showIdpLogin }));
    let providers: IdentityProvider[];
    try {
      providers = await catalog.list();
    } catch {
      return sendPage(res, 503, renderCatalogDown({ locale, returnTo, retryHref: selfHref(req) }));
    }
    sendPage(res, 200, renderProviderList({ locale, returnTo, providers: buttonList(providers), directLogin: list.showIdpLogin }));
  };
}

/** `login`: the live settings, read once per request. */
export function createLoginPageRoutes(
  login: { readonly current: ListSettings },
  catalog: Pick<ProviderCatalog, 'list' | 'provider'>,
  signedIn: SignedIn | undefined,
): LoginPageRoutes {
  const router = Router();

  const loginPage = loginPageHandler(login, catalog, signedIn);

  // /auth/login/{alias}: one button, found through the per-alias lookup (links-1).
  const providerPage = async (req: Request, res: Response, next: (err?: unknown) => void) => {
    const locale = localeParam(req);
    if (!locale) return next();
    const returnTo = returnToOf(req);
    const alias = String(req.params.alias);
    let provider: IdentityProvider | null = null;
    if (plausibleAlias(alias) && alias !== DIRECT_LOGIN_ALIAS) {
      try {
        provider = await catalog.provider(alias);
      } catch {
        return sendPage(res, 503, renderCatalogDown({ locale, returnTo, retryHref: selfHref(req) }));
      }
    }
    if (!isUsableForLinks(provider)) return sendPage(res, 404, renderLinkUnavailable({ locale, returnTo }));
    sendPage(res, 200, renderProviderPage({ locale, returnTo, provider: providerEntry(provider) }));
  };

  // An unknown, disabled or link-only `idp` never goes to the realm as a hint: the same
  // answer as its per-provider page. Without `idp` (direct login) nothing is checked.
  const startCheck = Router();
  const checkStart = async (req: Request, res: Response, next: (err?: unknown) => void) => {
    const locale = localeParam(req);
    const idp = firstQuery(req.query.idp);
    if (!locale || idp === undefined || idp === '') return next();
    const alias = String(idp);
    let provider: IdentityProvider | null = null;
    if (plausibleAlias(alias) && alias !== DIRECT_LOGIN_ALIAS) {
      try {
        provider = await catalog.provider(alias);
      } catch {
        return sendPage(res, 503, renderCatalogDown({ locale, returnTo: returnToOf(req), retryHref: req.originalUrl }));
      }
    }
    if (!isUsableForLinks(provider)) return sendPage(res, 404, renderLinkUnavailable({ locale, returnTo: returnToOf(req) }));
    next();
  };
  startCheck.get('/auth/start', checkStart);
  startCheck.get('/:locale/auth/start', checkStart);

  router.get('/:locale/auth/callback', localizedCallback);

  // Said once after signing in through a tenant's link the user is not a member of (links rules
  // 10 and 11): the sign-in lands here instead of on `returnTo` (gateway/auth/authenticator.ts).
  const tenantNotice = async (req: Request, res: Response, next: (err?: unknown) => void) => {
    const locale = localeParam(req);
    if (!locale) return next();
    const returnTo = returnToOf(req) ?? '/';
    const linked = firstQuery(req.query.link);
    const signedInUser = signedIn ? await signedIn(req, res).catch(() => undefined) : undefined;
    if (!signedInUser || typeof linked !== 'string' || !isIdSyntax(linked) || signedInUser.tenants?.includes(linked)) {
      res.set('cache-control', 'no-store');
      return void res.redirect(302, returnTo);
    }
    sendPage(res, 200, renderTenantNotMember({ locale, linked, active: signedInUser.activeTenant ?? null, continueHref: returnTo }));
  };
  router.get('/auth/signed-in', tenantNotice);
  router.get('/:locale/auth/signed-in', tenantNotice);

  router.get('/auth', frontEndSignIn);
  router.get('/:locale/auth', frontEndSignIn);

  router.get('/auth/login', loginPage);
  router.get('/:locale/auth/login', loginPage);
  router.get('/auth/login/:alias', providerPage);
  router.get('/:locale/auth/login/:alias', providerPage);

  return { router, startCheck };
}
