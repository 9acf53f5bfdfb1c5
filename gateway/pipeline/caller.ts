// Who is calling, from the verified identity to what the chat front-end is told (step 5 of
// gateway/pipeline/handle.ts): one `Caller` for every step after authentication, worked out once per
// identity, never per request.
import type { Identity } from '../auth/identity.js';
import { identityHeaders, setUpstreamCredential, upstreamApiKey, type OutgoingCredentials, type TrustedHeaderNames } from '../http/request-headers.js';
import type { Upstream } from '../upstream/proxy.js';
import { UpstreamAccounts, type UpstreamAccount } from '../upstream/accounts.js';
import type { TokenRenewal } from '../upstream/calls.js';
import type { Observability } from '../observability/observability.js';

/**
 * The caller, for every step after authentication:
 *   - a gateway identity (session cookie or realm bearer JWT, gateway/auth/authenticator.ts): the
 *     trusted headers say who it is, and the credential sent upstream is the one of that identity's
 *     own trusted-header sign-in (gateway/upstream/accounts.ts), never one the client brought along:
 *     the gateway checked the identity, not the client's token;
 *   - an upstream API key (ALLOW_UPSTREAM_API_KEYS): not an identity of the gateway, so the upstream
 *     says whose it is, and exactly that key is forwarded.
 */
export interface Caller {
  /** the verified gateway identity (its realm email is the account's); absent for an upstream API key */
  identity?: Identity;
  admin: boolean;
  /** for the audit: the email, or `api-key:<upstream user id>` */
  label: string;
  /** upstream user id, resolved lazily (only the file and chat policies need it) */
  upstreamUserId: () => Promise<string>;
}

/** The identity's own upstream token, in place of any credential the client sent. */
function credentialed(out: OutgoingCredentials, account: UpstreamAccount, caller: Caller): Caller {
  setUpstreamCredential(out, { authorization: `Bearer ${account.token}` });
  return caller;
}

export type Callers = ReturnType<typeof createCallers>;

export function createCallers(names: TrustedHeaderNames, upstream: Upstream, obs: Pick<Observability, 'metrics' | 'log'>) {
  const accounts = new UpstreamAccounts(upstream.calls, names, obs);
  // Built once per Identity object (the authenticator hands out one per session state or bearer
  // token), never per request: the headers and the account lookup key are worked out once.
  const byIdentity = new WeakMap<Identity, { caller: Caller; headers: Array<[string, string]> }>();

  return {
    /** Renews the token of an identity's sign-in once Open WebUI refused it (what step 7 sends goes through it). */
    renewal: accounts as TokenRenewal,

    /**
     * Step 5 for a gateway identity: its trusted headers and its own upstream credential, set in
     * the request's context (`out`). The identity's upstream sign-in is made once and then reused.
     */
    async forIdentity(out: OutgoingCredentials, identity: Identity): Promise<Caller> {
      let known = byIdentity.get(identity);
      if (!known) {
        known = {
          caller: { identity, admin: identity.admin, label: identity.email, upstreamUserId: async () => (await accounts.signIn(identity)).userId },
          headers: identityHeaders(names, identity),
        };
        byIdentity.set(identity, known);
      }
      out.trustedHeaders = known.headers;
      return credentialed(out, await accounts.signIn(identity), known.caller);
    },

    /** Step 5 for an upstream API key: undefined when the upstream does not know it. */
    async forApiKey(out: OutgoingCredentials, apiKey: string): Promise<Caller | undefined> {
      const credential: { authorization: string } | { 'x-api-key': string } =
        upstreamApiKey({ authorization: out.authorization }) === apiKey ? { authorization: `Bearer ${apiKey}` } : { 'x-api-key': apiKey };
      const account = await accounts.whoAmI(credential);
      if (!account) return undefined;
      // exactly the key that was looked up, nothing else the client sent
      setUpstreamCredential(out, credential);
      return { admin: account.role === 'admin', upstreamUserId: async () => account.userId, label: `api-key:${account.userId}` };
    },
  };
}
