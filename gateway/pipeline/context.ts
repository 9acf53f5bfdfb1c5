// One request's context: made by `handle` and `upgrade` (gateway/pipeline/handle.ts)
// once a request leaves steps 1 and 2, read and set by each later step, and applied once:
//   - identity (step 4, gateway/auth/authenticator.ts) consumes the gateway's own credentials
//     from `authorization` and `cookie`, and records renewed or cleared session cookies in
//     `setCookies` / `clearSiteData` (put on the answer by `handle` once the identity is known;
//     merged with the upstream's Set-Cookie by gateway/upstream/proxy.ts for a proxied answer);
//   - the caller (step 5, gateway/pipeline/caller.ts) sets `caller`, the trusted headers `told`
//     and the upstream credential (`authorization` or `apiKey`, and `cookie` without `token`);
//   - the policy (step 6) sets `decision`;
//   - `headers`, what is sent upstream, is assembled from all of it in one place
//     (`upstreamHeaders`, gateway/http/request-headers.ts) before step 7 carries the decision out.
// A class whose constructor sets every field: every context has one V8 shape (no property is
// added later), so the steps that read it stay monomorphic.
import type { IncomingHttpHeaders } from 'node:http';
import type { Decision } from '../../policies/admin-scoping.js';
import type { Identity } from '../auth/identity.js';
import type { AuthScope } from '../auth/session-cookie.js';
import type { OutgoingCredentials } from '../http/request-headers.js';
import type { Caller } from './caller.js';

const NOBODY: ReadonlyArray<readonly [string, string]> = [];

export class RequestContext implements AuthScope, OutgoingCredentials {
  method: string;
  /** the canonical path and query (step 1) */
  path: string;
  search: string;
  /** the client waits for `100 Continue` before sending its body */
  expectContinue: boolean;
  identity: Identity | undefined = undefined;
  /** null: an anonymous request to a public path */
  caller: Caller | null = null;
  decision: Decision | undefined = undefined;
  /** the Authorization header to send upstream (the client's until a step consumes or replaces it) */
  authorization: string | undefined;
  /** the x-api-key header to send upstream */
  apiKey: string | string[] | undefined;
  /** the Cookie header to send upstream */
  cookie: string | undefined;
  /** the trusted identity headers, [name, value] */
  told: ReadonlyArray<readonly [string, string]> = NOBODY;
  /** what is sent upstream, assembled once by `upstreamHeaders` */
  headers: IncomingHttpHeaders | undefined = undefined;
  /** the session cookies renewed or cleared by step 4 */
  setCookies: string[] | undefined = undefined;
  clearSiteData = false;

  /** `client`: the request's headers after hygiene (step 3) */
  constructor(
    readonly requestId: string,
    client: IncomingHttpHeaders,
    method: string,
    path: string,
    search: string,
    expectContinue: boolean,
  ) {
    this.method = method;
    this.path = path;
    this.search = search;
    this.expectContinue = expectContinue;
    this.authorization = client.authorization;
    this.apiKey = client['x-api-key'];
    this.cookie = client.cookie;
  }
}
