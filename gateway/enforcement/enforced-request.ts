// What enforcement reads of a request and of its caller (gateway/pipeline/context.ts and
// gateway/pipeline/caller.ts make them), and what each rule is handed, worked out once per request:
// the caller as the upstream knows them (their upstream user id, the headers of the gateway's own
// requests as them, their groups when a rule needs them) and, where a rule must see it, the body.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../../policies/resource-access.js';
import { sendJson } from '../http/respond.js';

export type Headers = Record<string, string | string[] | undefined>;

/** The caller, as enforcement reads them. */
export interface EnforcedCaller {
  /** the verified gateway identity; absent for an upstream API key */
  readonly identity?: { readonly email: string };
  readonly admin: boolean;
  /** for the audit: the email, or `api-key:<upstream user id>` */
  readonly label: string;
  readonly upstreamUserId: () => Promise<string>;
}

/** A request whose decision is carried out, as enforcement reads it. */
export interface EnforcedRequest {
  /** the canonical path and query */
  readonly path: string;
  readonly search: string;
  /** the client waits for `100 Continue` before sending its body */
  readonly expectContinue: boolean;
  /** null: an anonymous request to a public path */
  readonly caller: EnforcedCaller | null;
  /** what is sent upstream, assembled before enforcement */
  readonly headers: IncomingHttpHeaders | undefined;
  /** the session cookies of the answer */
  readonly setCookies: readonly string[] | undefined;
}

/** The caller as the upstream knows them: made once per request, handed to the rule that carries the decision out. */
export class UpstreamCaller {
  private principalOnce: Promise<Principal> | undefined;

  constructor(
    readonly caller: EnforcedCaller,
    /** their upstream user id */
    readonly id: string,
    /** the headers of the gateway's own requests as them (gateway/http/request-headers.ts lookupHeaders) */
    readonly headers: Headers,
    private readonly principalOf: (id: string, headers: Headers) => Promise<Principal>,
  ) {}

  /** Their id and upstream groups, as a principal of grants: asked once, when a rule first needs them. */
  principal(): Promise<Principal> {
    return (this.principalOnce ??= this.principalOf(this.id, this.headers));
  }
}

/**
 * The body a rule must see, read once (bounded), after `100 Continue` when the client waits for it;
 * undefined when it was refused, and answered so.
 */
export async function bodyToJudge<B extends { ok: true } | { ok: false; status: number; detail: string }>(
  request: EnforcedRequest,
  req: IncomingMessage,
  res: ServerResponse,
  read: (req: IncomingMessage) => Promise<B>,
): Promise<Extract<B, { ok: true }> | undefined> {
  if (request.expectContinue) res.writeContinue();
  const body = await read(req);
  if (body.ok) return body as Extract<B, { ok: true }>;
  const refused = body as Extract<B, { ok: false }>;
  sendJson(res, refused.status, { detail: refused.detail });
  return undefined;
}
