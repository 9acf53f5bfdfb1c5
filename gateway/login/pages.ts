// The login pages of spec area B, rendered on the server: small, accessible, no external assets
// (inline CSS only, no script), English and German texts. Everything printed is escaped: the
// pages are templates that escape by default (eta, below).
//
//   /auth/login, /{locale}/auth/login                  one button per provider, or the welcome page
//   /auth/login/{alias}, /{locale}/auth/login/{alias}  one button, or "this link is not available"
//
// A button is a link to [/{locale}]/auth/start?idp=<alias>&returnTo=<path>: the sign-in
// module sends the browser to the realm with kc_idp_hint and idp_hint. The direct-login entry
// links to /auth/start without idp (no hint: the realm's own username and password form).
import { Eta } from 'eta';
import Negotiator from 'negotiator';
import type { ProviderEntry } from '../../policies/login-routing.js';

export type Lang = 'en' | 'de';

interface Texts {
  signInTitle: string;
  chooseProvider: string;
  signInWith: (name: string) => string;
  signIn: string;
  noProviders: string;
  welcomeTitle: string;
  welcomeText: string;
  adminLogin: string;
  linkUnavailableTitle: string;
  linkUnavailableText: string;
  toGenericPage: string;
  catalogDownTitle: string;
  catalogDownText: string;
  sessionCheckDownTitle: string;
  sessionCheckDownText: string;
  tryAgain: string;
  providersLabel: string;
  signedInTitle: string;
  signedInAs: (name: string, email: string) => string;
  continueToChat: string;
  signOut: string;
  signInFailedTitle: string;
  signInFailedText: string;
  signInAgain: string;
  notFoundTitle: string;
  notFoundText: string;
  toSignIn: string;
  /** What the realm's error answer at the callback means for the user (OAuth 2.0 / OIDC error codes). */
  oauthErrors: Record<OAuthErrorKind, { title: string; text: string }>;
  errorCode: (code: string) => string;
  tenantNotMemberTitle: string;
  tenantNotMemberText: (linked: string, active: string | null) => string;
}

/** The error codes of an authorization error answer (RFC 6749 4.1.2.1, OIDC Core 3.1.2.6), grouped by what the user can do. */
export type OAuthErrorKind =
  | 'access_denied'
  | 'login_required'
  | 'interaction_required'
  | 'consent_required'
  | 'account_selection_required'
  | 'temporarily_unavailable'
  | 'server_error'
  | 'misconfigured'
  | 'other';

const OAUTH_ERROR_KINDS: Readonly<Record<string, OAuthErrorKind>> = {
  access_denied: 'access_denied',
  login_required: 'login_required',
  interaction_required: 'interaction_required',
  consent_required: 'consent_required',
  account_selection_required: 'account_selection_required',
  temporarily_unavailable: 'temporarily_unavailable',
  server_error: 'server_error',
  // The request itself was refused: the gateway or the realm's client is set up wrongly.
  invalid_request: 'misconfigured',
  unauthorized_client: 'misconfigured',
  unsupported_response_type: 'misconfigured',
  invalid_scope: 'misconfigured',
  invalid_request_uri: 'misconfigured',
  invalid_request_object: 'misconfigured',
  request_not_supported: 'misconfigured',
  request_uri_not_supported: 'misconfigured',
  registration_not_supported: 'misconfigured',
  invalid_client: 'misconfigured',
};

/** An error code's kind; `other` for one outside the standards. */
function oauthErrorKind(code: string): OAuthErrorKind {
  return Object.hasOwn(OAUTH_ERROR_KINDS, code) ? OAUTH_ERROR_KINDS[code]! : 'other';
}

const TEXTS: Record<Lang, Texts> = {
  en: {
    signInTitle: 'Sign in',
    chooseProvider: 'Choose how you want to sign in.',
    signInWith: (name) => `Sign in with ${name}`,
    signIn: 'Sign in',
    noProviders: 'No sign-in provider is offered here.',
    welcomeTitle: 'Welcome',
    welcomeText: 'Please sign in through the login link your organisation gave you.',
    adminLogin: 'Administrator login',
    linkUnavailableTitle: 'This sign-in link is not available',
    linkUnavailableText: 'The link may be mistyped, or its sign-in provider has been switched off. Ask your organisation for the current link.',
    toGenericPage: 'Go to the sign-in page',
    catalogDownTitle: 'Sign-in is temporarily unavailable',
    catalogDownText: 'The list of sign-in providers cannot be loaded right now. Please try again in a few minutes.',
    sessionCheckDownTitle: 'Your sign-in cannot be checked right now',
    sessionCheckDownText: 'The gateway cannot reach its session store. Nothing is lost: please try again in a few seconds.',
    tryAgain: 'Try again',
    providersLabel: 'Sign-in providers',
    signedInTitle: 'You are signed in',
    signedInAs: (name, email) => `Signed in as ${name} (${email}).`,
    continueToChat: 'Continue to the chat',
    signOut: 'Sign out',
    signInFailedTitle: 'Sign-in did not complete',
    signInFailedText: 'This sign-in answer was already used, has expired or was not meant for this browser. Nothing was changed: please sign in again.',
    signInAgain: 'Sign in again',
    notFoundTitle: 'Page not found',
    notFoundText: 'There is no page at this address.',
    toSignIn: 'Go to the sign-in page',
    oauthErrors: {
      access_denied: {
        title: 'Sign-in was cancelled',
        text: 'The sign-in was cancelled, or your sign-in service refused it (your account may not have access to this service). Nothing was changed.',
      },
      login_required: { title: 'Please sign in', text: 'Your sign-in service needs you to sign in again before you can continue.' },
      interaction_required: {
        title: 'Your sign-in service needs something from you',
        text: 'Your sign-in service needs you to do something first, for example accept its terms or finish setting up your account. Sign in again to do it.',
      },
      consent_required: {
        title: 'Consent needed',
        text: 'Your sign-in service needs your consent before it shares your name and email with this service. Sign in again and allow it.',
      },
      account_selection_required: {
        title: 'Choose an account',
        text: 'Your sign-in service needs you to choose which account to use. Sign in again and choose one.',
      },
      temporarily_unavailable: {
        title: 'Sign-in is temporarily unavailable',
        text: 'Your sign-in service is busy or down for maintenance. Please try again in a few minutes.',
      },
      server_error: {
        title: 'Your sign-in service had a problem',
        text: 'Your sign-in service ran into an error of its own. Please try again; if it keeps happening, tell your administrator.',
      },
      misconfigured: {
        title: 'Sign-in is not set up correctly',
        text: 'Your sign-in service refused the sign-in request of this service: it is set up wrongly. Please tell your administrator; signing in again will not help.',
      },
      other: {
        title: 'Sign-in did not complete',
        text: 'Your sign-in service reported an error. Please sign in again; if it keeps happening, tell your administrator.',
      },
    },
    errorCode: (code) => `Error code (for your administrator): ${code}`,
    tenantNotMemberTitle: 'Signed in, but not to the organisation of your link',
    tenantNotMemberText: (linked, active) =>
      `You signed in through the sign-in link of "${linked}", but your account is not a member of it.${active ? ` You are working in "${active}", your own organisation.` : ' You are working without an organisation.'}`,
  },
  de: {
    signInTitle: 'Anmelden',
    chooseProvider: 'Wählen Sie, wie Sie sich anmelden möchten.',
    signInWith: (name) => `Anmelden mit ${name}`,
    signIn: 'Anmelden',
    noProviders: 'Hier wird kein Anmeldeanbieter angeboten.',
    welcomeTitle: 'Willkommen',
    welcomeText: 'Bitte melden Sie sich über den Anmeldelink an, den Sie von Ihrer Organisation erhalten haben.',
    adminLogin: 'Anmeldung für Administratoren',
    linkUnavailableTitle: 'Dieser Anmeldelink ist nicht verfügbar',
    linkUnavailableText:
      'Der Link ist vielleicht falsch geschrieben, oder sein Anmeldeanbieter wurde abgeschaltet. Fragen Sie Ihre Organisation nach dem aktuellen Link.',
    toGenericPage: 'Zur Anmeldeseite',
    catalogDownTitle: 'Die Anmeldung ist vorübergehend nicht möglich',
    catalogDownText: 'Die Liste der Anmeldeanbieter kann gerade nicht geladen werden. Bitte versuchen Sie es in einigen Minuten erneut.',
    sessionCheckDownTitle: 'Ihre Anmeldung kann gerade nicht geprüft werden',
    sessionCheckDownText: 'Das Gateway erreicht seinen Sitzungsspeicher nicht. Es geht nichts verloren: bitte versuchen Sie es in einigen Sekunden erneut.',
    tryAgain: 'Erneut versuchen',
    providersLabel: 'Anmeldeanbieter',
    signedInTitle: 'Sie sind angemeldet',
    signedInAs: (name, email) => `Angemeldet als ${name} (${email}).`,
    continueToChat: 'Weiter zum Chat',
    signOut: 'Abmelden',
    signInFailedTitle: 'Die Anmeldung wurde nicht abgeschlossen',
    signInFailedText:
      'Diese Anmeldeantwort wurde bereits verwendet, ist abgelaufen oder war nicht für diesen Browser bestimmt. Es wurde nichts geändert: bitte melden Sie sich erneut an.',
    signInAgain: 'Erneut anmelden',
    notFoundTitle: 'Seite nicht gefunden',
    notFoundText: 'Unter dieser Adresse gibt es keine Seite.',
    toSignIn: 'Zur Anmeldeseite',
    oauthErrors: {
      access_denied: {
        title: 'Die Anmeldung wurde abgebrochen',
        text: 'Die Anmeldung wurde abgebrochen oder von Ihrem Anmeldedienst abgelehnt (Ihr Konto hat vielleicht keinen Zugang zu diesem Dienst). Es wurde nichts geändert.',
      },
      login_required: { title: 'Bitte melden Sie sich an', text: 'Ihr Anmeldedienst verlangt, dass Sie sich erneut anmelden, bevor es weitergeht.' },
      interaction_required: {
        title: 'Ihr Anmeldedienst braucht etwas von Ihnen',
        text: 'Ihr Anmeldedienst verlangt zuerst einen Schritt von Ihnen, zum Beispiel seine Bedingungen zu akzeptieren oder Ihr Konto fertig einzurichten. Melden Sie sich erneut an, um ihn zu erledigen.',
      },
      consent_required: {
        title: 'Zustimmung nötig',
        text: 'Ihr Anmeldedienst braucht Ihre Zustimmung, bevor er Ihren Namen und Ihre E-Mail-Adresse an diesen Dienst weitergibt. Melden Sie sich erneut an und stimmen Sie zu.',
      },
      account_selection_required: {
        title: 'Wählen Sie ein Konto',
        text: 'Ihr Anmeldedienst verlangt, dass Sie das Konto wählen. Melden Sie sich erneut an und wählen Sie eines.',
      },
      temporarily_unavailable: {
        title: 'Die Anmeldung ist vorübergehend nicht möglich',
        text: 'Ihr Anmeldedienst ist ausgelastet oder wird gewartet. Bitte versuchen Sie es in einigen Minuten erneut.',
      },
      server_error: {
        title: 'Ihr Anmeldedienst hatte ein Problem',
        text: 'Bei Ihrem Anmeldedienst ist ein eigener Fehler aufgetreten. Bitte versuchen Sie es erneut; wenn es wieder passiert, wenden Sie sich an Ihre Administration.',
      },
      misconfigured: {
        title: 'Die Anmeldung ist falsch eingerichtet',
        text: 'Ihr Anmeldedienst hat die Anmeldeanfrage dieses Dienstes abgelehnt: er ist falsch eingerichtet. Bitte wenden Sie sich an Ihre Administration; eine erneute Anmeldung hilft nicht.',
      },
      other: {
        title: 'Die Anmeldung wurde nicht abgeschlossen',
        text: 'Ihr Anmeldedienst hat einen Fehler gemeldet. Bitte melden Sie sich erneut an; wenn es wieder passiert, wenden Sie sich an Ihre Administration.',
      },
    },
    errorCode: (code) => `Fehlercode (für Ihre Administration): ${code}`,
    tenantNotMemberTitle: 'Angemeldet, aber nicht bei der Organisation Ihres Links',
    tenantNotMemberText: (linked, active) =>
      `Sie haben sich über den Anmeldelink von „${linked}“ angemeldet, Ihr Konto gehört aber nicht dazu.${active ? ` Sie arbeiten in „${active}“, Ihrer eigenen Organisation.` : ' Sie arbeiten ohne Organisation.'}`,
  },
};

/** The page's locale: the path prefix as given (`de-CH`), the texts of its language, English otherwise. */
export interface PageLocale {
  /** The prefix of the page's path, kept in every link the page prints. */
  prefix?: string;
  lang: Lang;
  /** `<html lang>`: the prefix when its texts are shown, else `en`. */
  htmlLang: string;
}

/** Does a language tag name a language the pages are written in (`de`, `de-CH`, `en-GB`)? */
export function speaksLocale(tag: string): boolean {
  return Object.hasOwn(TEXTS, tag.split('-')[0]?.toLowerCase() ?? '');
}

/**
 * The page's locale. The path prefix decides; without one, the browser's Accept-Language picks
 * among the languages the pages speak (links stay unprefixed), English when none matches.
 */
export function pageLocale(prefix: string | undefined, acceptLanguage?: string): PageLocale {
  if (prefix === undefined) {
    const lang = preferredLang(acceptLanguage);
    return { prefix, lang, htmlLang: lang };
  }
  const base = prefix.split('-')[0]?.toLowerCase();
  const lang: Lang = base === 'de' ? 'de' : 'en';
  return { prefix, lang, htmlLang: lang === 'de' ? prefix : 'en' };
}

/**
 * RFC 9110 12.5.4, read by `negotiator` (the parser Express itself uses): the spoken language
 * with the highest q, the first among equals (a region counts for its language: `de-CH` is
 * German); `en` otherwise. The header is bounded first: at most 512 characters are read.
 */
function preferredLang(header: string | undefined): Lang {
  if (!header) return 'en';
  for (const tag of new Negotiator({ headers: { 'accept-language': header.slice(0, 512) } }).languages()) {
    const base = tag.split('-')[0]!.toLowerCase();
    if (Object.hasOwn(TEXTS, base)) return base as Lang;
  }
  return 'en';
}

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

/** Where a page's links lead, the locale prefix kept. */
export function loginPath(locale: PageLocale, alias?: string): string {
  const base = locale.prefix ? `/${locale.prefix}/auth/login` : '/auth/login';
  return alias === undefined ? base : `${base}/${encodeURIComponent(alias)}`;
}

/**
 * `/auth/start?idp=&tenant=&returnTo=`, under `/{locale}` when the page has one (the sign-in
 * module serves `/{locale}/auth/start` as the same route). No `idp` for direct login: no hint.
 */
export function startHref(opts: { idp?: string; returnTo?: string; tenant?: string; locale?: string }): string {
  const q = new URLSearchParams();
  if (opts.idp !== undefined) q.set('idp', opts.idp);
  if (opts.tenant !== undefined) q.set('tenant', opts.tenant);
  if (opts.returnTo !== undefined) q.set('returnTo', opts.returnTo);
  const s = q.toString();
  const path = opts.locale ? `/${opts.locale}/auth/start` : '/auth/start';
  return s ? `${path}?${s}` : path;
}

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
@media (prefers-color-scheme:dark){html{background:#111418;color:#e6e8eb}main{background:#1b1f24}.small a{color:#93c5fd}}
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

/** Switch off (B1): one button per provider. The direct-login entry, when present, is the small link. */
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

/** Switch on (B3): the welcome message, and the small administrator link with the direct-login entry. */
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
 * Said once after signing in through another tenant's link (spec links rules 10 and 11): the user
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

/** The error code of a callback the realm answered with an error (query or form body), if it is one. */
export function callbackError(req: { query?: unknown; body?: unknown }): string | undefined {
  for (const source of [req.query, req.body]) {
    const e = source && typeof source === 'object' ? (source as Record<string, unknown>).error : undefined;
    if (typeof e === 'string' && /^[\x20-\x7e]{1,128}$/.test(e)) return e;
  }
  return undefined;
}
