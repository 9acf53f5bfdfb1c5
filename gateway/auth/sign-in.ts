// Signing in: the authorization code flow with PKCE (S256), state and nonce, through openid-client;
// what the callback needs rides in a sealed, one-use transaction cookie (docs/design/sign-in.md).
import type { Request, Response, Router } from 'express';
import { randomBytes } from 'node:crypto';
import * as oidc from 'openid-client';
import { parseCookie, stringifySetCookie } from 'cookie';
import { decodeJwt, errors as joseErrors } from 'jose';
import type { Settings } from '../../config/settings.js';
import type { Observability } from '../observability/observability.js';
import { isChatAdmin } from '../../policies/admin-scoping.js';
import { activeTenantAtSignIn } from '../../policies/tenancy.js';
import { safeReturnTo } from '../../policies/login-routing.js';
import { isIdSyntax, isLocaleSegment } from '../../policies/syntax.js';
import type { SharedState } from '../state/shared-state.js';
import { noAnswer, type RealmClient } from './realm.js';
import { Sealer } from './sealed.js';
import { epoch, readSessionCookie, type SessionData, type SessionUser } from './session-cookie.js';
import { tokenState } from './token-state.js';
import { type SessionStore } from './session-store.js';
import { UPSTREAM_SESSION_COOKIE } from './sign-out.js';

/** The sign-in transaction's cookie (the name express-openid-connect used: the data plane already strips it). */
export const TRANSACTION_COOKIE = 'auth_verification';
const CALLBACK_PATH = '/auth/callback';
/** Long enough for a password, a second factor and an upstream provider's own sign-in. */
const TRANSACTION_SECONDS = 15 * 60;

/** What the transaction cookie carries from /auth/start to /auth/callback. */
interface Transaction {
  state: string;
  nonce: string;
  code_verifier: string;
  returnTo: string;
  tenant?: string;
  exp: number;
}

/** Where to land after sign-in: a local path (policies/login-routing.ts), never back into /auth. */
export function returnToAfterSignIn(value: unknown): string {
  const local = safeReturnTo(value);
  return local && !/^\/auth(\/|\?|#|$)/.test(local) ? local : '/';
}

/** An error the browser (or the realm's answer) caused: a 4xx, said in sign-in-errors.ts's words. */
const refused = (message: string, error: string, status = 400) => Object.assign(new Error(message), { status, error });

/** The realm's session id of an ID token (already verified by the caller), or null. */
function realmSessionId(idToken: string | undefined): string | null {
  if (!idToken) return null;
  try {
    const sid = decodeJwt(idToken).sid;
    return typeof sid === 'string' && sid ? sid : null;
  } catch {
    return null;
  }
}

export interface SignInParts {
  settings: Pick<Settings, 'publicUrl'> & { oidc: Pick<Settings['oidc'], 'scopes' | 'sessionSecrets' | 'absoluteSeconds' | 'adminRoles'> };
  realm: Pick<RealmClient, 'configuration'>;
  store: Pick<SessionStore, 'entryOf' | 'codec'>;
  shared: Pick<SharedState, 'keepIdToken'>;
  obs: Pick<Observability, 'audit'>;
  /** the user behind freshly issued tokens, both verified (gateway/auth/authenticator.ts) */
  userOfTokens(idToken: string | undefined, accessToken: string | undefined): Promise<SessionUser>;
}

export function mountSignIn(router: Router, parts: SignInParts): void {
  const { settings, realm } = parts;
  const redirectUri = new URL(CALLBACK_PATH, settings.publicUrl).href;
  const cookie = transactionCookie(settings);

  router.get('/auth/start', async (req, res, next) => {
    try {
      const config = await realm.configuration();
      const { url, transaction } = await authorizationRequest(req, config, settings.oidc.scopes, redirectUri);
      await cookie.give(res, transaction);
      res.set('cache-control', 'no-store');
      res.redirect(url.href);
    } catch (err) {
      next(err);
    }
  });

  router.get(CALLBACK_PATH, async (req, res, next) => {
    try {
      // The realm out of reach is said first (503), whatever the browser brought.
      const config = await realm.configuration();
      const t = await cookie.take(req, res);
      if (!t) throw refused('no sign-in under way in this browser (transaction cookie missing, expired or not ours)', 'missing_transaction');
      const tokens = await grantCode(config, redirectUri, req.originalUrl, t);
      const user = await verifiedUser(parts, tokens);
      // A new sign-in starts with no chat front-end token of whoever used this browser before.
      res.clearCookie(UPSTREAM_SESSION_COOKIE, { path: '/' });
      const session = startSession(parts, user, tokens, t);
      const entry = await parts.store.entryOf(session.data, epoch());
      const present = readSessionCookie(req.headers.cookie)?.names ?? [];
      res.append('set-cookie', parts.store.codec.setCookieLines(entry.value, entry.header.exp, present));
      res.set('cache-control', 'no-store');
      res.redirect(session.path || '/');
    } catch (err) {
      next(err);
    }
  });
}

/** The transaction cookie: sealed with its own key (not the session's), scoped to the callback, used once. */
function transactionCookie(settings: SignInParts['settings']) {
  const secure = settings.publicUrl.startsWith('https:');
  // The first SESSION_SECRET encrypts, all decrypt.
  const sealer = new Sealer(settings.oidc.sessionSecrets, 'sign-in transaction');
  const cookieLine = (value: string, maxAge: number) =>
    stringifySetCookie({ name: TRANSACTION_COOKIE, value, path: CALLBACK_PATH, maxAge, httpOnly: true, secure, sameSite: 'lax' });
  return {
    async give(res: Response, transaction: Transaction): Promise<void> {
      res.append('set-cookie', cookieLine(await sealer.seal(transaction), TRANSACTION_SECONDS));
    },
    /** The transaction of this callback (its cookie cleared on the way out: one use), or undefined. */
    async take(req: Request, res: Response): Promise<Transaction | undefined> {
      const value = req.headers.cookie ? parseCookie(req.headers.cookie)[TRANSACTION_COOKIE] : undefined;
      if (!value) return undefined;
      res.append('set-cookie', cookieLine('', 0));
      const t = (await sealer.open(value))?.value as Partial<Transaction> | null | undefined;
      if (!t || typeof t !== 'object') return undefined;
      const whole = [t.state, t.nonce, t.code_verifier, t.returnTo].every((x) => typeof x === 'string') && typeof t.exp === 'number';
      return whole && t.exp! > epoch() ? (t as Transaction) : undefined;
    },
  };
}

/** The realm's authorization URL for /auth/start's query, and the transaction the callback will check it against. */
async function authorizationRequest(
  req: Request,
  config: oidc.Configuration,
  scope: string,
  redirectUri: string,
): Promise<{ url: URL; transaction: Transaction }> {
  const idp = isIdSyntax(req.query.idp) ? req.query.idp : undefined;
  const tenant = isIdSyntax(req.query.tenant) ? req.query.tenant : undefined;
  const locale = typeof req.query.locale === 'string' && isLocaleSegment(req.query.locale) ? req.query.locale : undefined;
  const returnTo = returnToAfterSignIn(req.query.returnTo);
  const code_verifier = oidc.randomPKCECodeVerifier();
  const nonce = oidc.randomNonce();
  // The state names where to land, as express-openid-connect's did; the cookie is what counts.
  const state = Buffer.from(JSON.stringify({ returnTo, ...(tenant ? { tenant } : {}), nonce: oidc.randomState() })).toString('base64url');
  const url = oidc.buildAuthorizationUrl(config, {
    response_type: 'code',
    scope,
    redirect_uri: redirectUri,
    code_challenge: await oidc.calculatePKCECodeChallenge(code_verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    ...(idp ? { kc_idp_hint: idp, idp_hint: idp } : {}),
    ...(locale ? { ui_locales: locale } : {}),
  });
  return { url, transaction: { state, nonce, code_verifier, returnTo, ...(tenant ? { tenant } : {}), exp: epoch() + TRANSACTION_SECONDS } };
}

type Tokens = Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;

/** The code grant of this callback: state, nonce and PKCE checked by openid-client. */
async function grantCode(config: oidc.Configuration, redirectUri: string, originalUrl: string, t: Transaction): Promise<Tokens> {
  const currentUrl = new URL(redirectUri);
  currentUrl.search = new URL(originalUrl, 'http://callback.invalid').search;
  try {
    return await oidc.authorizationCodeGrant(config, currentUrl, {
      pkceCodeVerifier: t.code_verifier,
      expectedState: t.state,
      expectedNonce: t.nonce,
      idTokenExpected: true,
    });
  } catch (err) {
    throw codeGrantFailure(err);
  }
}

/** The user behind the granted tokens. A token that does not verify is refused; keys that cannot be fetched are the realm out of reach. */
async function verifiedUser(parts: SignInParts, tokens: Tokens): Promise<SessionUser> {
  try {
    return await parts.userOfTokens(tokens.id_token, tokens.access_token);
  } catch (err) {
    const e = err as Error & { status?: number };
    if (e.status === undefined && e instanceof joseErrors.JOSEError && !(e instanceof joseErrors.JWKSTimeout)) throw refused(e.message, 'invalid_token');
    throw err;
  }
}

/** The new session's data (its ID token kept aside, the sign-in audited), and where the browser lands. */
function startSession(parts: SignInParts, user: SessionUser, tokens: Tokens, t: Transaction): { data: SessionData; path: string } {
  const o = parts.settings.oidc;
  const linked = t.tenant;
  const { active, member } = activeTenantAtSignIn(user.tenants, linked);
  const data: SessionData = {
    v: 1,
    id: randomBytes(16).toString('base64url'),
    user,
    active_tenant: active,
    refresh_token: tokens.refresh_token ?? null,
    ...tokenState(tokens),
    sid: realmSessionId(tokens.id_token),
    facts_at: epoch(),
  };
  // The ID token stays out of the cookie (it would double it) but is kept for id_token_hint:
  // with it, the realm ends its session at logout without asking the user to confirm.
  if (tokens.id_token) parts.shared.keepIdToken(data.id, tokens.id_token, epoch() + o.absoluteSeconds);
  let path = t.returnTo;
  // Through another tenant's link (links-11): say so once, on the way to returnTo.
  if (linked !== undefined && !member) path = `/auth/signed-in?${new URLSearchParams({ link: linked, returnTo: path || '/' })}`;
  const admin = isChatAdmin(user.roles, o.adminRoles);
  parts.obs.audit.info(
    { event: 'sign-in', sub: user.sub, email: user.email, admin, tenantLink: linked ?? null, tenantLinkMember: linked ? member : null },
    'signed in',
  );
  return { data, path };
}

/** A failed code grant: the realm refusing it (or its `?error=`) is a 400; the realm out of reach stays a 503. */
function codeGrantFailure(err: unknown): Error {
  const e = err as Error & { error?: unknown; code?: unknown };
  if (noAnswer(err)) return e;
  const status = err instanceof oidc.ResponseBodyError && err.status >= 500 ? undefined : 400;
  if (status === undefined) return e;
  return refused(e.message, typeof e.error === 'string' ? e.error : typeof e.code === 'string' ? e.code : 'sign_in_failed');
}
