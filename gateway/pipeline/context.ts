// One request's context, made by `handle` and `upgrade` (the steps are listed atop
// gateway/pipeline/handle.ts) and filled in by each step: the identity, with the session cookies it
// renews or clears; the caller and what Open WebUI is told; the decision; and the headers sent
// upstream, assembled once (gateway/http/request-headers.ts). Every field is set by the
// constructor, so every context has one V8 shape and the steps that read it stay monomorphic.
import type { IncomingHttpHeaders } from 'node:http';
import type { Decision } from '../../policies/admin-scoping.js';
import type { Identity } from '../auth/identity.js';
import type { AuthScope } from '../auth/session-cookie.js';
import type { OutgoingCredentials } from '../http/request-headers.js';
import type { EnforcedRequest } from '../enforcement/enforced-request.js';
import type { Caller } from './caller.js';

const NOBODY: ReadonlyArray<readonly [string, string]> = [];

export class RequestContext implements AuthScope, OutgoingCredentials, EnforcedRequest {
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
  trustedHeaders: ReadonlyArray<readonly [string, string]> = NOBODY;
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
