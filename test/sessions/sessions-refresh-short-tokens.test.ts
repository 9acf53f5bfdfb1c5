// Access tokens shorter than TOKEN_REFRESH_MARGIN_SECONDS (30 by default): a user makes requests
// right after signing in, waits past the token's expiry, and is still signed in. The realm is the
// real oidc-provider (sandbox/idp.ts) issuing access tokens of 5, 15 and 29 seconds, its refresh
// tokens rotated or handed back unchanged (its default, and Keycloak's); one gateway instance, or
// two sharing a real redis-server. The refresh margin is at most half the token's lifetime, so the
// requests right after sign-in refresh nothing; past expiry, one refresh serves every request of
// the session at every instance.
//
// Every case runs at once (one realm and one or two gateways each): the suite waits as long as
// its longest token lives (29 s plus a second), not the sum of them.
import { expect } from 'chai';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { startRedis, type TestRedis } from '../support/redis.js';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { loadSettings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { SessionCodec, type SessionData } from '../../gateway/auth/session-cookie.js';
import { capturingObservability, type LogLine } from '../support/gateway-harness.js';
import { freePort } from '../support/raw-http.js';
import { browse, gatewayClient, signIn, worldEnv, SESSION_SECRET, type Jar } from '../support/cookie-jar.js';
import { sleep } from '../support/wait.js';

const LIFETIMES = [5, 15, 29];

interface Case {
  lifetime: number;
  rotated: boolean;
  instances: 1 | 2;
}

const nameOf = (c: Case) =>
  `${c.lifetime} s access tokens, refresh tokens ${c.rotated ? 'rotated' : 'handed back unchanged'}, ${c.instances === 1 ? 'one instance' : 'two instances sharing Redis'}`;

/** What the user saw, and what the realm and the gateways recorded. */
interface Seen {
  /** statuses of the requests made right after sign-in, and when they were done */
  early: number[];
  earlyDoneAt: number;
  /** refresh grants the realm had answered by then */
  refreshesEarly: string[];
  /** statuses of the requests past the access token's expiry: at once (every instance), then one by one */
  late: number[];
  lateInARow: number[];
  /** /auth/session at every instance, afterwards */
  signedIn: boolean[];
  refreshes: string[];
  before: SessionData;
  after: SessionData;
  lines: LogLine[];
}

describe('sessions: access tokens shorter than the refresh margin', function () {
  this.timeout(120_000);
  let redis: TestRedis;
  let upstream: OpenWebUIStandIn;
  const idps: TestIdp[] = [];
  const gateways: Gateway[] = [];
  const cases: Case[] = LIFETIMES.flatMap((lifetime) =>
    [false, true].flatMap((rotated) => ([1, 2] as const).map((instances) => ({ lifetime, rotated, instances }))),
  );
  const runs = new Map<Case, Promise<Seen>>();
  let codec: SessionCodec;

  async function startCase(c: Case, providersFile: string) {
    const ports = await Promise.all(Array.from({ length: c.instances }, () => freePort()));
    const urls = ports.map((p) => `http://127.0.0.1:${p}`);
    const idp = await startIdp({
      clients: [{ ...gatewayClient(urls[0]!), redirect_uris: urls.map((u) => `${u}/auth/callback`) }],
      accessTokenTtl: c.lifetime,
      rotateRefreshTokens: c.rotated,
    });
    idps.push(idp);
    const refreshes: string[] = [];
    const grant = (outcome: string) => (ctx: KoaContextWithOIDC) => {
      if (ctx.oidc.params?.grant_type === 'refresh_token') refreshes.push(outcome);
    };
    idp.provider.on('grant.success', grant('ok'));
    idp.provider.on('grant.error', grant('error'));
    const obs = urls.map(() => capturingObservability());
    for (const [i, url] of urls.entries()) {
      const env = {
        ...worldEnv({ upstreamUrl: upstream.url, publicUrl: url, issuer: idp.issuer, providersFile }),
        DRIFT_CHECK_SECONDS: '0',
        ...(c.instances === 2 ? { REDIS_URL: redis.url } : {}),
      };
      const gateway = await createGateway(loadSettings(env, { stageFiles: false }), { obs: obs[i] });
      gateways.push(gateway);
      await gateway.listen(ports[i]!, '127.0.0.1');
      const deadline = Date.now() + 10_000;
      while (!gateway.sharedState.ready().ok) {
        if (Date.now() > deadline) throw new Error('the instance is not in sync with Redis');
        await sleep(50);
      }
    }
    return { urls, refreshes, lines: () => obs.flatMap((o) => o.lines) };
  }

  const sessionOf = async (jar: Jar) => (await codec.decrypt(jar.get('appSession')!))!.data as SessionData;

  /** Sign in, a page's worth of requests at once and in a row at every instance, then the same past the token's expiry. */
  async function run(c: Case, providersFile: string): Promise<Seen> {
    const { urls, refreshes, lines } = await startCase(c, providersFile);
    const api = (i: number) => `${urls[i % urls.length]}/api/v1/auths/`;
    const { jar } = await signIn(urls[0]!, 'alice');
    const before = await sessionOf(jar);
    const early: number[] = [];
    for (let i = 0; i < 3; i++) early.push((await browse(jar, api(i))).status);
    early.push(...(await Promise.all([0, 1, 2, 3].map((i) => browse(jar.clone(), api(i))))).map((r) => r.status));
    const earlyDoneAt = Date.now();
    const refreshesEarly = [...refreshes];
    // Past the expiry: the first whole second after it.
    await sleep(Math.max(0, (before.expires_at + 1) * 1000 + 50 - Date.now()));
    const burst = await Promise.all([0, 1, 2, 3].map((i) => browse(jar.clone(), api(i))));
    jar.store(burst[0]!.setCookies);
    const lateInARow: number[] = [];
    for (let i = 0; i < 3; i++) lateInARow.push((await browse(jar, api(i))).status);
    const signedIn = await Promise.all(urls.map(async (u) => (await browse(jar, `${u}/auth/session`)).json<{ authenticated: boolean }>().authenticated));
    return {
      early,
      earlyDoneAt,
      refreshesEarly,
      late: burst.map((r) => r.status),
      lateInARow,
      signedIn,
      refreshes: [...refreshes],
      before,
      after: await sessionOf(jar),
      lines: lines(),
    };
  }

  before(async function () {
    this.timeout(60_000);
    redis = await startRedis();
    upstream = await startOpenWebUI({ bypassAdminAccessControl: false, enableAdminExport: false, groups: ['acme', 'globex', 'initech'] });
    const providersFile = join(mkdtempSync(join(tmpdir(), 'short-tokens-')), 'providers.json');
    writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
    codec = new SessionCodec([SESSION_SECRET], { secure: false, rollingSeconds: 86_400, absoluteSeconds: 604_800 });
    for (const c of cases) {
      const p = run(c, providersFile);
      p.catch(() => undefined); // reported by the case's own test
      runs.set(c, p);
    }
  });
  after(async () => {
    await Promise.allSettled([...runs.values()]);
    for (const g of gateways) await g.close();
    await Promise.all(idps.map((i) => i.close()));
    await upstream?.close();
    await redis?.stop();
  });

  for (const c of cases) {
    it(`${nameOf(c)}: still signed in past the token's expiry, refreshed once`, async () => {
      const seen = await runs.get(c)!;
      expect(seen.late, 'requests at once past the expiry').to.deep.equal([200, 200, 200, 200]);
      expect(seen.lateInARow, 'requests in a row past the expiry').to.deep.equal([200, 200, 200]);
      expect(seen.signedIn, '/auth/session at every instance').to.deep.equal(Array(c.instances).fill(true));
      expect(seen.after.id, 'the same session').to.equal(seen.before.id);
      expect(seen.after.expires_at).to.be.greaterThan(seen.before.expires_at);
      expect(seen.early).to.deep.equal([200, 200, 200, 200, 200, 200, 200]);
      // The requests right after sign-in were done inside the first half of the token's life.
      expect(seen.earlyDoneAt, 'the requests right after sign-in took too long to prove anything').to.be.below(
        (seen.before.expires_at - Math.floor(c.lifetime / 2)) * 1000,
      );
      expect(seen.refreshesEarly, 'refreshes for the requests right after sign-in').to.deep.equal([]);
      expect(seen.refreshes, 'refreshes for the whole session').to.deep.equal(['ok']);
      expect(seen.lines.filter((l) => l.event === 'session-ended' || l.event === 'sign-out')).to.deep.equal([]);
    });
  }
});
