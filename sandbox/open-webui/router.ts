// The stand-in's route table, matched as Starlette matches: in the order routes were added, on
// the decoded path; a path known under another method is a 405; an unknown API path a 404; any
// other GET is the single-page app's shell.
import type { Ctx } from './context.js';
import { HttpError } from './http.js';

/** `p` holds the path's `{name}` and `*` parts, in order. */
export type Handler = (ctx: Ctx, p: string[]) => Promise<void> | void;

const API_PREFIXES = ['/api/', '/ws/', '/openai/', '/ollama/', '/oauth/', '/cache/'];

export class Router {
  private readonly routes: Array<{ method: string; re: RegExp; h: Handler }> = [];

  /** @param appShell answers a GET of any path that is no API route */
  constructor(private readonly appShell: (ctx: Ctx) => void) {}

  /** `{name}` matches one path segment, `*` the rest of the path (at least one character). A property, so it can be taken off the router. */
  readonly route = (method: string, pattern: string, h: Handler): void => {
    const source = pattern
      .split(/(\{[a-z_]+\}|\*)/)
      .map((tok) => (tok === '*' ? '(.+)' : /^\{[a-z_]+\}$/.test(tok) ? '([^/]+)' : tok.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('');
    const re = new RegExp(`^${source}$`);
    this.routes.push({ method, re, h });
  };

  async dispatch(ctx: Ctx): Promise<void> {
    let pathMatched = false;
    for (const r of this.routes) {
      const m = r.re.exec(ctx.path);
      if (!m) continue;
      pathMatched = true;
      if (r.method !== ctx.method) continue;
      await r.h(ctx, m.slice(1));
      return;
    }
    if (pathMatched) throw new HttpError(405, 'Method Not Allowed');
    const api = API_PREFIXES.some((p) => ctx.path.startsWith(p)) || ctx.path === '/api' || ctx.path === '/ws';
    if (api) throw new HttpError(404, 'Not Found');
    if (ctx.method === 'GET') return this.appShell(ctx);
    throw new HttpError(405, 'Method Not Allowed');
  }
}
