// Every end of a session is told once, with its reason, at a level an operator sees (a sign-out
// is info, a session cut short is warn), and counted in gateway_sessions_ended_total{reason}: the
// audit line and the metric an operator reads when a user says "I was signed out". The realm is
// the oidc-provider stand-in issuing 3-second access tokens (refresh margin: 1 s, half of them at
// most), its token answers altered where a case needs a realm that misbehaves.
import { expect } from 'chai';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { logoutThroughIdp } from '../sandbox/idp-browser.js';
import type { Gateway } from '../gateway/app.js';
import { SessionCodec, type SessionData } from '../gateway/auth/session-cookie.js';
import { capturingObservability, type LogLine } from './support/gateway-harness.js';
import { startRedis, type TestRedis } from './support/redis.js';
import { browse, signIn, startSecondInstance, startWorld, CLIENT_ID, SESSION_SECRET, type Jar, type World } from './support/cookie-jar.js';
import { sleep } from './support/wait.js';

const TTL = 3;
const MARGIN = Math.floor(TTL / 2);
const INFO = 30;
const WARN = 40;

/** gateway_sessions_ended_total by reason, as /metrics says. */
async function endsCounted(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^gateway_sessions_ended_total\{reason="([^"]+)"\} (\d+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/** What one token endpoint answer is changed to, while `during` runs. */
async function withTokenAnswers(w: World, change: (grantType: string, body: Record<string, unknown>) => void, during: () => Promise<void>): Promise<void> {
  const alter = (ctx: KoaContextWithOIDC) => change(String(ctx.oidc?.params?.grant_type), ctx.body as Record<string, unknown>);
  w.idp.provider.on('grant.success', alter);
  try {
    await during();
  } finally {
    w.idp.provider.off('grant.success', alter);
  }
}

describe('sessions: every end told once, with its reason, and counted', function () {
  this.timeout(30_000);
  let w: World;
  let codec: SessionCodec;
  const sessionOf = async (jar: Jar) => (await codec.decrypt(jar.get('appSession')!))!.data as SessionData;
  const untilRefreshDue = async (jar: Jar) => sleep(Math.max(0, ((await sessionOf(jar)).expires_at - MARGIN) * 1000 + 50 - Date.now()));
  let mark = 0;
  /** The ends told since this test began. */
  const told = () => w.obs.lines.slice(mark).filter((l) => l.event === 'session-ended' || l.event === 'sign-out' || l.event === 'backchannel-logout');
  const endLines = () => told().map((l) => ({ level: l.level, event: l.event, reason: l.reason }));

  before(async () => {
    w = await startWorld({ accessTokenTtl: TTL });
    codec = new SessionCodec([SESSION_SECRET], {
      secure: false,
      rollingSeconds: w.settings.oidc.rollingSeconds,
      absoluteSeconds: w.settings.oidc.absoluteSeconds,
    });
  });
  beforeEach(() => {
    mark = w.obs.lines.length;
  });
  after(async () => w?.close());

  it('a sign-out: info, reason sign_out', async () => {
    const { jar } = await signIn(w.url, 'alice');
    const counted = (await endsCounted(w.url)).sign_out ?? 0;
    expect((await browse(jar, '/auth/logout')).status).to.equal(302);
    expect(endLines()).to.deep.equal([{ level: INFO, event: 'sign-out', reason: 'sign_out' }]);
    expect((await endsCounted(w.url)).sign_out).to.equal(counted + 1);
  });

  it('a back-channel logout from the realm: info, reason backchannel_logout', async () => {
    const { jar, idpJar } = await signIn(w.url, 'tina');
    const counted = (await endsCounted(w.url)).backchannel_logout ?? 0;
    await logoutThroughIdp(`${w.idp.issuer}/protocol/openid-connect/logout?client_id=${CLIENT_ID}`, idpJar);
    expect((await browse(jar, '/api/v1/auths/')).status).to.equal(401);
    expect(endLines()).to.deep.equal([{ level: INFO, event: 'backchannel-logout', reason: 'backchannel_logout' }]);
    expect((await endsCounted(w.url)).backchannel_logout).to.equal(counted + 1);
  });

  it('a refresh the realm refuses: warn, reason refresh_refused, told once however many requests bring the cookie', async () => {
    const { jar } = await signIn(w.url, 'bob');
    const copies = [jar.clone(), jar.clone()];
    w.idp.failRefresh = true;
    try {
      await untilRefreshDue(jar);
      expect((await browse(jar, '/api/v1/auths/')).status).to.equal(401);
      for (const copy of copies) expect((await browse(copy, '/api/v1/auths/')).status).to.equal(401);
    } finally {
      w.idp.failRefresh = false;
    }
    expect(endLines()).to.deep.equal([{ level: WARN, event: 'session-ended', reason: 'refresh_refused' }]);
    expect(told()[0]!.detail).to.match(/invalid_grant/);
    expect((await endsCounted(w.url)).refresh_refused).to.equal(1);
  });

  it('a refresh whose ID token does not verify: warn, reason refresh_rejected', async () => {
    const { jar } = await signIn(w.url, 'carol');
    await withTokenAnswers(
      w,
      (grant, body) => {
        if (grant !== 'refresh_token' || typeof body.id_token !== 'string') return;
        const [h, p, s] = body.id_token.split('.');
        body.id_token = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), roles: ['PlatformSysAdmin'] })).toString('base64url')}.${s}`;
      },
      async () => {
        await untilRefreshDue(jar);
        expect((await browse(jar, '/api/v1/auths/')).status).to.equal(401);
      },
    );
    expect(endLines()).to.deep.equal([{ level: WARN, event: 'session-ended', reason: 'refresh_rejected' }]);
    expect((await endsCounted(w.url)).refresh_rejected).to.equal(1);
  });

  it('a refresh whose tokens have already expired: warn, reason refresh_outcome_expired, told once; the session itself is kept', async () => {
    const { jar } = await signIn(w.url, 'sysadmin');
    await withTokenAnswers(
      w,
      (grant, body) => {
        if (grant === 'refresh_token') body.expires_in = 0;
      },
      async () => {
        await untilRefreshDue(jar);
        expect((await browse(jar, '/api/v1/auths/')).status).to.equal(401);
        expect((await browse(jar, '/api/v1/auths/')).status).to.equal(401);
      },
    );
    expect(endLines()).to.deep.equal([{ level: WARN, event: 'session-ended', reason: 'refresh_outcome_expired' }]);
    expect((await endsCounted(w.url)).refresh_outcome_expired).to.equal(1);
    // The realm's answers are right again: the same cookie is signed in.
    expect((await browse(jar, '/api/v1/auths/')).status).to.equal(200);
  });

  it('an access token that expires without a refresh token: info, reason no_refresh_token', async () => {
    let jar: Jar | undefined;
    await withTokenAnswers(
      w,
      (grant, body) => {
        if (grant === 'authorization_code') delete body.refresh_token;
      },
      async () => {
        jar = (await signIn(w.url, 'superuser')).jar;
      },
    );
    expect((await sessionOf(jar!)).refresh_token).to.equal(null);
    await sleep(Math.max(0, ((await sessionOf(jar!)).expires_at + 1) * 1000 + 50 - Date.now()));
    expect((await browse(jar!, '/api/v1/auths/')).status).to.equal(401);
    expect(endLines()).to.deep.equal([{ level: INFO, event: 'session-ended', reason: 'no_refresh_token' }]);
    expect((await endsCounted(w.url)).no_refresh_token).to.equal(1);
  });

  it('a cookie brought after its idle or absolute lifetime: info, reason lifetime_reached, told once', async () => {
    const { jar } = await signIn(w.url, 'alice');
    const data = await sessionOf(jar);
    const past = Math.floor(Date.now() / 1000) - 10;
    const outlived = await codec.encrypt(data, { iat: past - 100, uat: past - 100, exp: past });
    for (let i = 0; i < 2; i++) {
      const r = await fetch(`${w.url}/api/v1/auths/`, { headers: { cookie: `appSession=${outlived}` } });
      expect(r.status).to.equal(401);
    }
    expect(endLines()).to.deep.equal([{ level: INFO, event: 'session-ended', reason: 'lifetime_reached' }]);
    expect((await endsCounted(w.url)).lifetime_reached).to.equal(1);
  });
});

describe('sessions: an end decided at one instance is told there only', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  let w: World;
  let b: Gateway;
  let bUrl: string;
  let bLines: LogLine[];

  before(async () => {
    redis = await startRedis();
    w = await startWorld({ accessTokenTtl: TTL, env: { REDIS_URL: redis.url, DRIFT_CHECK_SECONDS: '0' } });
    const obs = capturingObservability();
    bLines = obs.lines;
    ({ gateway: b, url: bUrl } = await startSecondInstance(w, obs));
  });
  after(async () => {
    await b?.close();
    await w?.close();
    await redis?.stop();
  });

  it('a refused refresh met by requests at both instances at once: both refused, one line and one count between them', async () => {
    const codec = new SessionCodec([SESSION_SECRET], {
      secure: false,
      rollingSeconds: w.settings.oidc.rollingSeconds,
      absoluteSeconds: w.settings.oidc.absoluteSeconds,
    });
    const { jar } = await signIn(w.url, 'alice');
    const { expires_at } = (await codec.decrypt(jar.get('appSession')!))!.data as SessionData;
    w.idp.failRefresh = true;
    try {
      await sleep(Math.max(0, (expires_at - MARGIN) * 1000 + 50 - Date.now()));
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => browse(jar.clone(), `${i % 2 ? bUrl : w.url}/api/v1/auths/`)));
      expect(answers.map((r) => r.status)).to.deep.equal(Array(6).fill(401));
    } finally {
      w.idp.failRefresh = false;
    }
    const told = [...w.obs.lines, ...bLines].filter((l) => l.event === 'session-ended');
    expect(told.map((l) => ({ level: l.level, reason: l.reason }))).to.deep.equal([{ level: WARN, reason: 'refresh_refused' }]);
    const counts = [(await endsCounted(w.url)).refresh_refused ?? 0, (await endsCounted(bUrl)).refresh_refused ?? 0];
    expect(counts[0]! + counts[1]!).to.equal(1);
  });
});
