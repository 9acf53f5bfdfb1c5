// The logged-out guard (links-6 to links-8), in process: where a logged-out visit of a page goes.
// The tenant named by the path is looked up like the API does (gateway/login/tenant-lookup.ts); the
// decisions are splitGuardPath(), guardLoginLocale() and loggedOutRedirect() in
// policies/login-routing.ts. A usable link goes to /auth/start with the alias (the sign-in module
// answers with the 302 to the realm carrying kc_idp_hint and idp_hint); redirects only, so the
// tenant page never enters the browser history (links-7). Anything else ends on /auth/login,
// locale kept (links-8).
import type { IncomingMessage } from 'node:http';
import type { TenantLookup } from './tenant-lookup.js';
import { clientKey } from '../http/client-key.js';
import { guardLoginLocale, loggedOutRedirect, splitGuardPath } from '../../policies/login-routing.js';
import { loginPath, pageLocale, speaksLocale, startHref } from '../pages/locale.js';

/** A Location for the 302 of a logged-out page visit. */
export type Guard = (path: string, req: IncomingMessage) => Promise<string>;

export function createGuard(lookup: Pick<TenantLookup, 'take' | 'resolveTenant' | 'audit'>): Guard {
  return async function guard(path, req) {
    const visit = splitGuardPath(path);
    const q = req.url?.indexOf('?') ?? -1;
    const search = q >= 0 && req.url ? req.url.slice(q) : '';
    let alias: string | null = null;
    if (visit.tenant !== undefined) {
      const client = clientKey(req.socket.remoteAddress);
      if ((await lookup.take(client)).ok) {
        const found = await lookup.resolveTenant(visit.tenant);
        lookup.audit('guard', visit.tenant, found.outcome, client);
        alias = found.alias;
      } else lookup.audit('guard', visit.tenant, 'rate-limited', client);
    }
    const to = loggedOutRedirect(visit, path, search, alias, guardLoginLocale(visit, path, speaksLocale));
    if (to.to === 'tenant-provider') return startHref({ idp: to.idp, tenant: to.tenant, returnTo: to.returnTo, locale: to.locale });
    return loginPath(pageLocale(to.locale)) + (to.returnTo ? `?${new URLSearchParams({ returnTo: to.returnTo })}` : '');
  };
}
