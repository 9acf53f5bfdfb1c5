// The login pages of spec area B, rendered on the server: small, accessible, no external assets
// (inline CSS only, no script), English and German. Templates that escape by default (eta), so no
// escaping is placed by hand.
import { Eta } from 'eta';
import type { ProviderEntry } from '../../policies/login-routing.js';
import type { RefusalPage } from '../../policies/admin-scoping.js';
import { TEXTS, type Texts } from './texts.js';
import { oauthErrorKind } from './oauth-errors.js';
import { loginPath, startHref, type PageLocale } from './locale.js';

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Headers of every login page: no framing, no script, no outside resources, not cached. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
});

const STYLE = `
*,*::before,*::after{box-sizing:border-box}
html{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;line-height:1.5;color:#1b1f24;background:#f4f5f7}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;padding:1rem}
main{background:#fff;width:100%;max-width:26rem;padding:2rem;border-radius:.75rem;box-shadow:0 1px 3px rgba(0,0,0,.12)}
h1{font-size:1.5rem;margin:0 0 .75rem}
p{margin:0 0 1rem}
ul{list-style:none;margin:0;padding:0}
li+li{margin-top:.75rem}
a.button{display:block;text-align:center;padding:.75rem 1rem;border-radius:.5rem;background:#1d4ed8;color:#fff;text-decoration:none;font-weight:600}
a.button:hover{background:#1e40af}
a:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
.small{font-size:.875rem;margin-top:1.5rem}
.small a{color:#1d4ed8}
.message{font-family:ui-monospace,monospace;font-size:.875rem;background:#f4f5f7;padding:.75rem;border-radius:.5rem;overflow-wrap:anywhere}
@media (prefers-color-scheme:dark){html{background:#111418;color:#e6e8eb}main{background:#1b1f24}.small a{color:#93c5fd}.message{background:#111418}}
`;

/**
 * The pages are eta templates (https://eta.js.org) that escape every `<%= %>` by default, with
 * escapeHtml above (numeric character references). `<%~ %>` prints without escaping and takes only
 * HTML that a template of this file rendered (a button, a page's body) or the constant STYLE.
 */
const eta = new Eta({ autoEscape: true, escapeFunction: escapeHtml, autoTrim: false, useWith: false, cache: false });
/** Compiled once, at load. */
const template = <T extends object>(text: string) => {
  const compiled = eta.compile(text);
  return (data: T): string => eta.render(compiled, data);
};

const PAGE = template<{ locale: PageLocale; title: string; body: string; pageId: string; style: string }>(`<!DOCTYPE html>
<html lang="<%= it.locale.htmlLang %>">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title><%= it.title %></title>
<style><%~ it.style %></style>
</head>
<body>
<main id="<%= it.pageId %>" aria-labelledby="page-title">
<%~ it.body %>
</main>
</body>
</html>
`);

function page(locale: PageLocale, title: string, body: string, pageId: string): string {
  return PAGE({ locale, title, body, pageId, style: STYLE });
}

const BUTTON = template<{ href: string; label: string; alias: string | undefined }>(
  `<a class="button" href="<%= it.href %>"<% if (it.alias !== undefined) { %> data-alias="<%= it.alias %>"<% } %>><%= it.label %></a>`,
);

function button(href: string, label: string, alias: string | undefined): string {
  return BUTTON({ href, label, alias });
}

export interface LoginPageModel {
  locale: PageLocale;
  /** Where the browser should end up after signing in (already checked by safeReturnTo). */
  returnTo?: string;
}

const PROVIDER_LIST = template<{ t: Texts; buttons: string[]; directLogin: boolean; realmButton: string; directHref: string }>(
  `<h1 id="page-title"><%= it.t.signInTitle %></h1>
<% if (it.buttons.length > 0) { %><p><%= it.t.chooseProvider %></p>
<ul aria-label="<%= it.t.providersLabel %>">
<% it.buttons.forEach((b, i) => { %><% if (i > 0) { %>
<% } %><li><%~ b %></li><% }) %>
</ul><% } else if (it.directLogin) { %><p><%= it.t.noProviders %></p><% } else { %><ul aria-label="<%= it.t.providersLabel %>">
<li><%~ it.realmButton %></li>
</ul><% } %><% if (it.directLogin) { %>
<p class="small"><a id="direct-login" href="<%= it.directHref %>"><%= it.t.adminLogin %></a></p><% } %>`,
);

/** Switch off (list-1): one button per provider. The direct-login entry, when present, is the small link. */
export function renderProviderList(model: LoginPageModel & { providers: ProviderEntry[]; directLogin: boolean }): string {
  const t = TEXTS[model.locale.lang];
  const locale = model.locale.prefix;
  // No provider and no direct-login entry: the realm's own page is the only way in (realmButton).
  const body = PROVIDER_LIST({
    t,
    buttons: model.providers.map((p) => button(startHref({ idp: p.alias, returnTo: model.returnTo, locale }), t.signInWith(p.display_name), p.alias)),
    directLogin: model.directLogin,
    realmButton: button(startHref({ returnTo: model.returnTo, locale }), t.signIn, undefined),
    directHref: startHref({ returnTo: model.returnTo, locale }),
  });
  return page(model.locale, t.signInTitle, body, 'login-page');
}

const WELCOME = template<{ t: Texts; directLogin: boolean; directHref: string }>(
  `<h1 id="page-title"><%= it.t.welcomeTitle %></h1>
<p id="welcome-text"><%= it.t.welcomeText %></p><% if (it.directLogin) { %>
<p class="small"><a id="direct-login" href="<%= it.directHref %>"><%= it.t.adminLogin %></a></p><% } %>`,
);

/** Switch on (list-3): the welcome message, and the small administrator link with the direct-login entry. */
export function renderWelcome(model: LoginPageModel & { directLogin: boolean }): string {
  const t = TEXTS[model.locale.lang];
  const body = WELCOME({ t, directLogin: model.directLogin, directHref: startHref({ returnTo: model.returnTo, locale: model.locale.prefix }) });
  return page(model.locale, t.welcomeTitle, body, 'welcome-page');
}

const PROVIDER_PAGE = template<{ t: Texts; button: string }>(
  `<h1 id="page-title"><%= it.t.signInTitle %></h1>
<ul aria-label="<%= it.t.providersLabel %>">
<li><%~ it.button %></li>
</ul>`,
);

/** Links 1: the per-provider page, one button. */
export function renderProviderPage(model: LoginPageModel & { provider: ProviderEntry }): string {
  const t = TEXTS[model.locale.lang];
  const p = model.provider;
  const href = startHref({ idp: p.alias, returnTo: model.returnTo, locale: model.locale.prefix });
  return page(model.locale, t.signInWith(p.display_name), PROVIDER_PAGE({ t, button: button(href, t.signInWith(p.display_name), p.alias) }), 'provider-page');
}

const LINK_UNAVAILABLE = template<{ t: Texts; generic: string }>(
  `<h1 id="page-title"><%= it.t.linkUnavailableTitle %></h1>
<p><%= it.t.linkUnavailableText %></p>
<p><a id="generic-login" class="button" href="<%= it.generic %>"><%= it.t.toGenericPage %></a></p>`,
);

/** Links 1, an alias that is absent, disabled or link-only: say so, and offer the generic page. */
export function renderLinkUnavailable(model: LoginPageModel): string {
  const t = TEXTS[model.locale.lang];
  const generic = loginPath(model.locale) + (model.returnTo ? `?${new URLSearchParams({ returnTo: model.returnTo })}` : '');
  return page(model.locale, t.linkUnavailableTitle, LINK_UNAVAILABLE({ t, generic }), 'link-unavailable');
}

const TRY_AGAIN = template<{ title: string; text: string; retryHref: string; label: string }>(
  `<h1 id="page-title"><%= it.title %></h1>
<p role="alert"><%= it.text %></p>
<p><a class="button" href="<%= it.retryHref %>"><%= it.label %></a></p>`,
);

/** A page that says something is down for now, with a way to try again. */
function renderTryAgain(model: LoginPageModel & { retryHref: string }, title: string, text: string, id: string): string {
  const t = TEXTS[model.locale.lang];
  return page(model.locale, title, TRY_AGAIN({ title, text, retryHref: model.retryHref, label: t.tryAgain }), id);
}

/** The provider catalog could not be read and there is no earlier answer to serve. */
export function renderCatalogDown(model: LoginPageModel & { retryHref: string }): string {
  const t = TEXTS[model.locale.lang];
  return renderTryAgain(model, t.catalogDownTitle, t.catalogDownText, 'catalog-down');
}

/** A signed-in browser while ended sessions cannot be checked (REDIS_URL unreachable): 503. */
export function renderSessionCheckDown(model: LoginPageModel & { retryHref: string }): string {
  const t = TEXTS[model.locale.lang];
  return renderTryAgain(model, t.sessionCheckDownTitle, t.sessionCheckDownText, 'session-check-down');
}

/** A signed-in browser whose sign-in is due for renewal while the realm does not answer: 503. */
export function renderSessionRenewalDown(model: LoginPageModel & { retryHref: string }): string {
  const t = TEXTS[model.locale.lang];
  return renderTryAgain(model, t.sessionRenewalDownTitle, t.sessionRenewalDownText, 'session-renewal-down');
}

/** A signed-in browser's page whose answer Open WebUI did not give (down, hung, broken): 502 or 504. */
export function renderChatDown(model: LoginPageModel & { retryHref: string }, timedOut: boolean): string {
  const t = TEXTS[model.locale.lang];
  return timedOut
    ? renderTryAgain(model, t.chatSlowTitle, t.chatSlowText, 'chat-timeout')
    : renderTryAgain(model, t.chatDownTitle, t.chatDownText, 'chat-down');
}

const SIGN_OUT_PENDING = template<{ t: Texts; continueHref: string }>(
  `<h1 id="page-title"><%= it.t.signOutPendingTitle %></h1>
<p role="status" id="sign-out-pending"><%= it.t.signOutPendingText %></p>
<p><a id="sign-in-again" class="button" href="<%= it.continueHref %>"><%= it.t.signInAgain %></a></p>`,
);

/** The `state` a sign-out not yet durable gives the realm's logout, which hands it back to the login page. */
export const SIGN_OUT_PENDING_STATE = 'sign-out-pending';

/**
 * After a sign-out whose end Redis did not confirm in time (gateway/auth/sign-out.ts), back from the
 * realm's logout: signed out in this browser and at the realm, the truth about the other servers.
 */
export function renderSignOutPending(model: { locale: PageLocale }): string {
  const t = TEXTS[model.locale.lang];
  return page(model.locale, t.signOutPendingTitle, SIGN_OUT_PENDING({ t, continueHref: loginPath(model.locale) }), 'sign-out-pending');
}

const SIGNED_IN = template<{ t: Texts; signedInAs: string; continueHref: string; logout: string }>(
  `<h1 id="page-title"><%= it.t.signedInTitle %></h1>
<p id="signed-in-as"><%= it.signedInAs %></p>
<p><a id="continue" class="button" href="<%= it.continueHref %>"><%= it.t.continueToChat %></a></p>
<p><a id="sign-out" href="<%= it.logout %>"><%= it.t.signOut %></a></p>`,
);

/** /auth/login for a browser that is signed in already: who, and a way on or out. */
export function renderSignedIn(model: LoginPageModel & { name: string; email: string }): string {
  const t = TEXTS[model.locale.lang];
  const logout = model.locale.prefix ? `/${model.locale.prefix}/auth/logout` : '/auth/logout';
  return page(
    model.locale,
    t.signedInTitle,
    SIGNED_IN({ t, signedInAs: t.signedInAs(model.name, model.email), continueHref: model.returnTo ?? '/', logout }),
    'signed-in',
  );
}

const PROBLEM = template<{ title: string; text: string; href: string; link: string }>(
  `<h1 id="page-title"><%= it.title %></h1>
<p role="alert"><%= it.text %></p>
<p><a id="back-to-login" class="button" href="<%= it.href %>"><%= it.link %></a></p>`,
);

/** A gateway error a browser navigated to: said in words, with the way back to signing in. */
export function renderProblem(model: LoginPageModel & { kind: 'sign-in-failed' | 'not-found' }): string {
  const t = TEXTS[model.locale.lang];
  const [title, text, link] =
    model.kind === 'sign-in-failed' ? [t.signInFailedTitle, t.signInFailedText, t.signInAgain] : [t.notFoundTitle, t.notFoundText, t.toSignIn];
  return page(model.locale, title, PROBLEM({ title, text, href: loginPath(model.locale), link }), model.kind);
}

const CHAT_NOT_YOURS = template<{ t: Texts }>(
  `<h1 id="page-title"><%= it.t.chatNotYoursTitle %></h1>
<p role="alert" id="why-not"><%= it.t.chatNotYoursText %></p>
<p><a id="to-your-chats" class="button" href="/"><%= it.t.toYourChats %></a></p>`,
);

/**
 * An admin opened the page of a chat that is not theirs (ENABLE_ADMIN_CHAT_ACCESS is fixed false):
 * why it does not open, naming nothing of the chat, and the way to their own chats.
 */
export function renderChatNotYours(model: { locale: PageLocale }): string {
  const t = TEXTS[model.locale.lang];
  return page(model.locale, t.chatNotYoursTitle, CHAT_NOT_YOURS({ t }), 'chat-not-yours');
}

const RELEASE_NOT_CHECKED = template<{ t: Texts; why: string; since: string; message: string; logout: string }>(
  `<h1 id="page-title"><%= it.t.releaseNotCheckedTitle %></h1>
<p role="alert" id="why-refused"><%= it.why %></p>
<% if (it.since) { %><p id="refused-since"><%= it.since %></p>
<% } %><p><%= it.t.releaseNotCheckedUsers %></p>
<p><%= it.t.releaseNotCheckedTell %></p>
<p class="message" id="tell-operator"><%= it.message %></p>
<p><a id="sign-out" class="button" href="<%= it.logout %>"><%= it.t.signOut %></a></p>`,
);

/** `2026-11-28 23:10 UTC`: when the gateway first saw the release, the same for every reader. */
const utcMinute = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/**
 * An administrator opened a page of the chat front-end while the gateway refuses administrators
 * (UPSTREAM_RELEASE_POLICY=refuse-admins, the release not a checked one): why, since when, and what
 * to tell the operator. The message for the operator is in English, as the operator's tools speak.
 */
export function renderReleaseNotChecked(model: { locale: PageLocale; page: RefusalPage }): string {
  const t = TEXTS[model.locale.lang];
  const { release, unread, since, checked } = model.page;
  return page(
    model.locale,
    t.releaseNotCheckedTitle,
    RELEASE_NOT_CHECKED({
      t,
      why: t.releaseNotCheckedWhy(release, unread),
      since: since === undefined ? '' : t.releaseNotCheckedSince(utcMinute(since)),
      message: t.releaseNotCheckedMessage(release, unread, checked.join(', ')),
      logout: '/auth/logout',
    }),
    'release-not-checked',
  );
}

const SIGN_IN_ERROR = template<{ t: Texts; title: string; text: string; kind: string; again: string; code: string }>(
  `<h1 id="page-title"><%= it.title %></h1>
<p role="alert" id="sign-in-error" data-error="<%= it.kind %>"><%= it.text %></p>
<p><a id="back-to-login" class="button" href="<%= it.again %>"><%= it.t.signInAgain %></a></p>
<p class="small" id="error-code"><%= it.t.errorCode(it.code) %></p>`,
);

/**
 * The realm answered the sign-in with an error (`/auth/callback?error=...`): what happened, in the
 * user's words, and the way back. `code` is printed (escaped, bounded) for the administrator.
 */
export function renderSignInError(model: LoginPageModel & { code: string }): string {
  const t = TEXTS[model.locale.lang];
  const kind = oauthErrorKind(model.code);
  const { title, text } = t.oauthErrors[kind];
  const again = loginPath(model.locale) + (model.returnTo ? `?${new URLSearchParams({ returnTo: model.returnTo })}` : '');
  return page(model.locale, title, SIGN_IN_ERROR({ t, title, text, kind, again, code: model.code.slice(0, 64) }), 'sign-in-error');
}

const TENANT_NOT_MEMBER = template<{ t: Texts; notice: string; continueHref: string }>(
  `<h1 id="page-title"><%= it.t.tenantNotMemberTitle %></h1>
<p role="status" id="tenant-notice"><%= it.notice %></p>
<p><a id="continue" class="button" href="<%= it.continueHref %>"><%= it.t.continueToChat %></a></p>`,
);

/**
 * Said once after signing in through another tenant's link (spec links-10 and links-11): the user
 * is signed in, in their own tenant (or none), not in the one of the link.
 */
export function renderTenantNotMember(model: LoginPageModel & { linked: string; active: string | null; continueHref: string }): string {
  const t = TEXTS[model.locale.lang];
  return page(
    model.locale,
    t.tenantNotMemberTitle,
    TENANT_NOT_MEMBER({ t, notice: t.tenantNotMemberText(model.linked, model.active), continueHref: model.continueHref }),
    'tenant-not-member',
  );
}
