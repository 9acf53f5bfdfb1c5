// Which part of the gateway answers a path: its own routes (control), the chat front-end's API,
// its public assets or its pages. One copy, used by the request pipeline, the WebSocket upgrade and
// the error answers; each class's letter-case rule fails closed (docs/design/route-table.md,
// "Letter case").
import { isLocaleSegment } from './syntax.js';

/** The chat front-end's sign-out, which the gateway answers itself (it ends the gateway session too). */
export const SIGNOUT_PATH = '/api/v1/auths/signout';

/** The first path segment when it is a locale prefix (`/de/...`), else undefined. */
export function localeOf(path: string): string | undefined {
  // The first segment read in place: classify() runs on every request, and a split allocated an
  // array of every segment for it (docs/design/hot-path.md, "The route class from the first segment").
  const end = path.indexOf('/', 1);
  const first = end === -1 ? path.slice(1) : path.slice(1, end);
  return isLocaleSegment(first) ? first : undefined;
}

export type RouteClass = 'control' | 'api' | 'public' | 'page';

const API_PREFIXES = ['/api/', '/ws/', '/openai/', '/ollama/', '/oauth/', '/cache/'];
const PUBLIC_PREFIXES = ['/static/', '/_app/', '/favicon/'];
const PUBLIC_EXACT = new Set(['/health', '/manifest.json', '/favicon.png', '/favicon.ico', '/robots.txt']);
const CONTROL_EXACT = new Set(['/healthz', '/readyz', '/metrics', '/auth', '/api/v1/auth-providers', SIGNOUT_PATH]);

/** Which part of the gateway answers a canonical path (letter case: see the top of the file). */
export function classify(path: string): RouteClass {
  const folded = path.toLowerCase();
  if (CONTROL_EXACT.has(folded) || folded.startsWith('/auth/') || folded.startsWith('/api/v1/auth-providers/')) return 'control';
  const locale = localeOf(folded);
  if (locale) {
    const rest = folded.slice(locale.length + 1);
    if (rest === '/auth' || rest.startsWith('/auth/')) return 'control';
  }
  if (API_PREFIXES.some((p) => folded.startsWith(p)) || folded === '/api' || folded === '/ws') return 'api';
  if (PUBLIC_EXACT.has(path) || PUBLIC_PREFIXES.some((p) => path.startsWith(p))) return 'public';
  return 'page';
}
