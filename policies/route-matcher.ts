// Which row of the route table (policies/open-webui-routes.ts) a request meets: by its first
// segments, then template by template.
import { OPEN_WEBUI_ROUTES, type RouteRow } from './open-webui-routes.js';

interface Compiled extends RouteRow {
  segments: string[];
  /** the template as a case-insensitive regular expression over the path without a trailing slash */
  pattern: RegExp;
  names: string[];
  /** literal segments: the more, the more specific */
  literals: number;
}

const isParam = (s: string) => s.startsWith('{') && s.endsWith('}');
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const compiled: Compiled[] = OPEN_WEBUI_ROUTES.map((r) => {
  const segments = r.path.toLowerCase().split('/').filter(Boolean);
  const names: string[] = [];
  // Starlette's convertors: `{x}` one segment, `{x:path}` anything, slashes included
  const body = r.path
    .split('/')
    .filter(Boolean)
    .map((seg) => {
      if (!isParam(seg)) return escape(seg);
      const [name, conv] = seg.slice(1, -1).split(':');
      names.push(name!);
      return conv === 'path' ? '(.+)' : '([^/]+)';
    })
    .join('/');
  return { ...r, segments, names, pattern: new RegExp(`^/${body}$`, 'i'), literals: segments.filter((s) => !isParam(s)).length };
});

/** Rows by their first three segments ("api/v1/notes"), or fewer for short paths. */
const byPrefix = new Map<string, Compiled[]>();
for (const c of compiled) {
  const key = c.segments
    .slice(0, 3)
    .map((s) => (isParam(s) ? '*' : s))
    .join('/');
  const rows = byPrefix.get(key) ?? [];
  rows.push(c);
  byPrefix.set(key, rows);
}

export interface RouteMatch {
  row: RouteRow;
  /** path parameters as sent (case kept) */
  params: Record<string, string>;
}

function matchRow(c: Compiled, path: string): Record<string, string> | undefined {
  const m = c.pattern.exec(path);
  if (!m) return undefined;
  const params: Record<string, string> = {};
  c.names.forEach((name, i) => (params[name] = m[i + 1]!));
  return params;
}

/**
 * The table's row for a request: `method` effective (HEAD as GET), `path` canonical. Literal rows
 * win over rows with a parameter at the same place (as Open WebUI registers `/notes/search` before
 * `/notes/{id}`). Undefined: not a route of Open WebUI's table release.
 */
export function matchRoute(method: string, path: string): RouteMatch | undefined {
  const raw = path.split('/').filter(Boolean);
  const lower = raw.map((s) => s.toLowerCase());
  const normalized = `/${raw.join('/')}`;
  const m = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase();
  let best: { c: Compiled; params: Record<string, string>; score: number } | undefined;
  const keys = new Set<string>();
  // the prefix key with and without parameters in the first three places
  for (let mask = 0; mask < 8; mask++) {
    const parts = lower.slice(0, 3).map((s, i) => ((mask >> i) & 1 ? '*' : s));
    keys.add(parts.join('/'));
    for (let n = 1; n < Math.min(3, parts.length); n++) keys.add(parts.slice(0, n).join('/'));
  }
  for (const key of keys) {
    for (const c of byPrefix.get(key) ?? []) {
      if (!c.methods.includes(m) && !(m === 'GET' && c.methods.includes('HEAD'))) continue;
      const params = matchRow(c, normalized);
      if (!params) continue;
      // more literal segments, then fewer `:path` parameters, win
      const score = c.literals * 2 + (c.path.includes(':path}') ? 0 : 1);
      if (!best || score > best.score) best = { c, params, score };
    }
  }
  return best && { row: best.c, params: best.params };
}

/** Is a route of Open WebUI (method + template) in the table? For the coverage test. */
export function tableHas(method: string, template: string): boolean {
  const t = template.toLowerCase().split('/').filter(Boolean).join('/');
  return compiled.some((c) => c.segments.join('/') === t && c.methods.includes(method.toUpperCase()));
}
