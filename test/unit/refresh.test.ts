// gateway/auth/refresh.ts: a refresh's single flight names the one state it replaces, and a shared
// outcome is taken only when it is newer than that state. The realm here hands the same refresh
// token back (not rotated) and tokens that all expire at one instant, as Keycloak does once its
// "SSO Session Max" caps them, or as two refreshes within one second give: the expiry and the
// refresh token alone no longer tell two states apart.
import { expect } from 'chai';
import { createRefresh } from '../../gateway/auth/refresh.js';
import { epoch, SessionCodec, type SessionData } from '../../gateway/auth/session-cookie.js';
import { type RefreshResult } from '../../gateway/auth/session-store.js';
import { processState } from '../../gateway/state/process-state.js';
import { createObservability } from '../../gateway/observability/observability.js';
import type { RealmClient } from '../../gateway/auth/realm.js';

const user = { sub: 'u-1', email: 'alice@acme.example', name: 'Alice', roles: [], groups: ['acme'], tenants: ['acme'] };

describe('token refresh: one refresh per session state, never an older outcome', () => {
  let grants: number;
  let refresh: (data: SessionData) => Promise<RefreshResult>;
  let endsAt: number;

  beforeEach(() => {
    grants = 0;
    endsAt = epoch() + 5;
    const codec = new SessionCodec(['unit-test-session-secret-0123456789abcdef'], { secure: false, rollingSeconds: 3600, absoluteSeconds: 7200 });
    const realm = {
      configuration: async () => ({}),
      refreshGrant: async (refreshToken: string) => {
        grants++;
        return { access_token: `opaque-access-token-${grants}`, token_type: 'bearer', expires_in: endsAt - epoch(), refresh_token: refreshToken };
      },
    } as unknown as Pick<RealmClient, 'configuration' | 'refreshGrant'>;
    refresh = createRefresh({
      o: { absoluteSeconds: 7200 },
      codec,
      shared: processState(createObservability({ level: 'silent' })),
      realm,
      userOfTokens: async () => user,
    });
  });

  const signedIn = (): SessionData => ({ v: 1, id: 'session-1', user, active_tenant: 'acme', refresh_token: 'the-refresh-token', expires_at: endsAt });
  const renewed = (r: RefreshResult): SessionData => {
    expect(r.kind).to.equal('ok');
    return (r as { data: SessionData }).data;
  };

  it('the state a refresh gave is refreshed at the realm again, not answered with its own outcome', async () => {
    const first = renewed(await refresh(signedIn()));
    expect(first.expires_at).to.equal(endsAt);
    const second = await refresh(first);
    expect(grants, 'each refresh reached the realm').to.equal(2);
    expect((second as { shared?: boolean }).shared, 'the second refresh was served the first one’s outcome').to.not.equal(true);
    expect(renewed(second)).to.not.deep.equal(first);
  });

  it('the same state refreshed twice (another request, another instance): one refresh at the realm, its outcome taken', async () => {
    const state = renewed(await refresh(signedIn()));
    const [a, b] = await Promise.all([refresh(state), refresh(state)]);
    const later = await refresh(state);
    expect(grants).to.equal(2);
    expect(renewed(a)).to.deep.equal(renewed(b));
    expect(renewed(later)).to.deep.equal(renewed(a));
  });

  it('a cookie written before the access token was kept, named like the state before it: that state’s outcome is not taken, the realm is asked', async () => {
    const earlier = signedIn();
    const outcome = renewed(await refresh(earlier));
    // What a gateway that did not keep the access token's hash wrote for that refresh: the same
    // expiry and refresh token as the state before it.
    const { at_hash: _hash, token_lifetime: _lifetime, ...unhashed } = outcome as SessionData & { at_hash?: string; token_lifetime?: number };
    const next = await refresh(unhashed);
    expect(grants, 'the realm was asked for the unhashed state').to.equal(2);
    expect((next as { shared?: boolean }).shared).to.not.equal(true);
    expect(renewed(next).expires_at).to.equal(endsAt);
  });
});
