// Which language a page speaks, and where its links lead (the locale prefix kept).
import Negotiator from 'negotiator';
import { TEXTS, type Lang } from './texts.js';

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
