// Which part of the gateway answers a path: the gateway's own routes (control), the chat
// front-end's API (identity required, 401 without), its public assets (no identity needed), or its
// pages (identity required, the logged-out guard without). One copy, used by the request pipeline,
// the WebSocket upgrade and the error answers.
import { isLocaleSegment } from './syntax.js';

/** The chat front-end's sign-out, which the gateway answers itself (it ends the gateway session too). */
export const SIGNOUT_PATH = '/api/v1/auths/signout';

/** The first path segment when it is a locale prefix (`/de/...`), else undefined. */
export function localeOf(path: string): string | undefined {
  // The first segment read in place: classify() runs on every request, and a split allocated an
  // array of every segment for it (bench/README.md, "Sixth pass").
  const end = path.indexOf('/', 1);
  const first = end === -1 ? path.slice(1) : path.slice(1, end);
  return isLocaleSegment(first) ? first : undefined;
}

export type RouteClass = 'control' | 'api' | 'public' | 'page';

const API_PREFIXES = ['/api/', '/ws/', '/openai/', '/ollama/', '/oauth/', '/cache/'];
const PUBLIC_PREFIXES = ['/static/', '/_app/', '/favicon/'];
const PUBLIC_EXACT = new Set(['/health', '/manifest.json', '/favicon.png', '/favicon.ico', '/robots.txt']);
const CONTROL_EXACT = new Set(['/healthz', '/readyz', '/metrics', '/auth', '/api/v1/auth-providers', SIGNOUT_PATH]);

/** Which part of the gateway answers a canonical path. */
export function classify(path: string): RouteClass {
  if (CONTROL_EXACT.has(path) || path.startsWith('/auth/') || path.startsWith('/api/v1/auth-providers/')) return 'control';
  const locale = localeOf(path);
  if (locale) {
    const rest = path.slice(locale.length + 1);
    if (rest === '/auth' || rest.startsWith('/auth/')) return 'control';
  }
  if (API_PREFIXES.some((p) => path.startsWith(p)) || path === '/api' || path === '/ws') return 'api';
  if (PUBLIC_EXACT.has(path) || PUBLIC_PREFIXES.some((p) => path.startsWith(p))) return 'public';
  return 'page';
}

