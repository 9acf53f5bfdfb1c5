// What `npm run bench` starts before it measures: the build (and the baseline's), the realm (the
// real oidc-provider, in this process), the upstream and every peer, and the credential each peer
// is measured with. Everything started is undone by `cleanups` and bench/proc.ts's stopAll.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import http from 'node:http';
import type { TestIdp } from '../sandbox/idp.js';
import { bareFeatures } from './bare-proxy.js';
import {
  startUpstream,
  startBare,
  startNodeHttpProxy,
  startNginx,
  startGateway,
  nginxPath,
  prepareBaseline,
  prepareRunner,
  type GatewayOptions,
  type NginxOptions,
  type Peer,
  type Runner,
} from './peers.js';
import { BENCH_API_KEY } from './upstream.js';
import { freePorts } from './proc.js';
import { gatewaySessionCookie } from './sign-in.js';
import type { Scenario } from './scenarios.js';
import type { Target } from './compare.js';
import { ensureOauth2Proxy, OAUTH2_PROXY_CLIENT, signInOauth2Proxy, startNginxAuthRequest, startOauth2Proxy } from './oauth2-proxy.js';

/** What the command line and the environment chose (bench/run.ts reads them). */
export interface RunChoice {
  smoke: boolean;
  selected: Scenario[];
  workers: number;
  /** --baseline=REV */
  baselineRev: string | undefined;
  /** BENCH_VARIANT_NODE_FLAGS and BENCH_VARIANT_ENV: today's gateway once more with these */
  variant: { label: string; flags: string[]; env: Record<string, string> };
  logDir: string;
  notices: string[];
  cleanups: Array<() => unknown>;
  say(line: string): void;
}

/** Ports the realm must know before the peers listen (their redirect URIs). */
interface Ports {
  gateway: number;
  multi: number;
  baseline: number;
  o2p: number;
  authRequest: number;
  idleGateway: number;
  idleO2p: number;
  idleAuthRequest: number;
}

export interface Peers {
  bare: Peer;
  nginx?: Peer;
  gateway: Peer;
  nginxMulti?: Peer;
  gatewayMulti?: Peer;
  bareWithFeatures?: Peer;
  nodeHttp?: Peer;
  /** the gateway at --baseline, or today's with the variant's flags */
  baseline?: Peer;
  o2p?: Peer;
  authRequest?: Peer;
}

/** A credential the gateway may be measured with, in the bench's order of preference. */
export interface Credential {
  kind: string;
  headers: Record<string, string>;
}

export interface Setup {
  idp: TestIdp;
  runner: Runner;
  upstream: Peer;
  upstreamPort: number;
  nginxBin: string | undefined;
  o2pBin: string | undefined;
  ports: Ports;
  gatewayOptions: Omit<GatewayOptions, 'port' | 'workers'>;
  nginxOptions: Omit<NginxOptions, 'workers'>;
  peers: Peers;
  /** the gateway's credential, and its realm bearer JWT when that is another */
  auth: Credential;
  bearer: Credential | undefined;
  baselineTarget: Target | undefined;
  /** oauth2-proxy and nginx + oauth2-proxy, each signed in by its own flow */
  o2pTargets: Target[];
  /** a gateway's credential of the same kind as `auth` */
  credentialOf(gateway: Peer): Promise<Record<string, string>>;
  /** an oauth2-proxy peer's session, by its own code flow as alice */
  signInO2p(p: Peer): Promise<Record<string, string>>;
}

const CLIENT_ID = 'bench-gateway';
const CLIENT_SECRET = 'bench-gateway-secret';

export function status(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', () => resolve(0));
    req.setTimeout(5_000, () => req.destroy());
  });
}

/** oauth2-proxy's binary, or why its rows are skipped (a smoke run never builds it). */
function oauth2ProxyBinary(c: RunChoice): string | undefined {
  // BENCH_OAUTH2_PROXY=0 skips it. A smoke run (CI) skips it unless BENCH_OAUTH2_PROXY=1, and never
  // builds it: the smoke test stays quick, and CI without Go or the binary gets a notice instead of
  // minutes of compiling.
  const wanted = c.smoke ? process.env.BENCH_OAUTH2_PROXY === '1' : process.env.BENCH_OAUTH2_PROXY !== '0';
  const found = wanted
    ? ensureOauth2Proxy({ build: !c.smoke })
    : {
        why: `${c.smoke ? 'smoke run' : 'BENCH_OAUTH2_PROXY=0'}: the oauth2-proxy rows are skipped${c.smoke ? ' (BENCH_OAUTH2_PROXY=1 includes them when built)' : ''}`,
      };
  if ('why' in found) c.notices.push(found.why);
  return 'bin' in found ? found.bin : undefined;
}

/** The realm: the test IdP with the gateways' and oauth2-proxy's clients, one redirect URI per port. */
async function startRealm(ports: Ports): Promise<TestIdp> {
  const { startIdp } = await import('../sandbox/idp.js');
  const callbacks = (list: number[], path: string) => list.map((p) => `http://127.0.0.1:${p}${path}`);
  return startIdp({
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: callbacks([ports.gateway, ports.multi, ports.baseline, ports.idleGateway], '/auth/callback'),
      },
      { ...OAUTH2_PROXY_CLIENT, redirect_uris: callbacks([ports.o2p, ports.authRequest, ports.idleO2p, ports.idleAuthRequest], '/oauth2/callback') },
    ],
    accessTokenTtl: 3600,
  });
}

/** tsc's build of today's tree (and of the baseline), run while the realm starts; undone at the end. */
async function builds(c: RunChoice, building: Promise<Runner>, buildingBaseline: Promise<Runner & { rev: string }> | undefined) {
  const runner = await building;
  c.cleanups.push(() => runner.dir && rmSync(runner.dir, { recursive: true, force: true }));
  if (runner.warnings) c.notices.push(`tsc reported errors but emitted; the run uses what it emitted:\n${runner.warnings.slice(0, 2000)}`);
  const baseline = await buildingBaseline;
  if (baseline) c.cleanups.push(() => rmSync(baseline.dir!, { recursive: true, force: true }));
  if (baseline?.warnings) c.notices.push(`tsc reported errors in the baseline ${baseline.rev} but emitted:\n${baseline.warnings.slice(0, 2000)}`);
  return { runner, baseline };
}

/** The second gateway beside today's: the baseline's build, or today's with the variant's flags. */
function startSecondGateway(c: RunChoice, s: Pick<Setup, 'runner' | 'gatewayOptions' | 'ports'>, baseline: (Runner & { rev: string }) | undefined) {
  const o = { ...s.gatewayOptions, port: s.ports.baseline, workers: 1 };
  if (baseline) return startGateway(c.logDir, baseline, { ...o, name: `gateway@${baseline.rev}` });
  if (!c.variant.label) return undefined;
  const v = c.variant;
  return startGateway(c.logDir, s.runner, {
    ...o,
    nodeFlags: [...(o.nodeFlags ?? []), ...v.flags],
    env: { ...o.env, ...v.env },
    name: `gateway ${v.label}`,
    logName: 'gateway-variant',
  });
}

/** Every peer the selected scenarios measure, started at once. */
async function startPeers(
  c: RunChoice,
  s: Omit<Setup, 'peers' | 'auth' | 'bearer' | 'baselineTarget' | 'o2pTargets' | 'credentialOf' | 'signInO2p'>,
  baseline: (Runner & { rev: string }) | undefined,
): Promise<Peers> {
  const { runner, upstream, nginxBin, o2pBin, ports } = s;
  const needMulti = c.selected.includes('small-workers');
  // BENCH_BARE_FEATURES: checked here, before anything starts, so a typo is a clear error.
  const bareFeatureList = [...bareFeatures(process.env.BENCH_BARE_FEATURES)].join(',');
  const small = c.selected.includes('small');
  const o2pOptions = {
    bin: o2pBin!,
    port: ports.o2p,
    publicUrl: `http://127.0.0.1:${ports.o2p}`,
    issuer: s.idp.issuer,
    upstreamUrl: upstream.url,
    name: 'oauth2-proxy',
  };
  const [bare, nginx, gateway, nginxMulti, gatewayMulti, bareWithFeatures, nodeHttp, second, o2p, authRequest] = await Promise.all([
    startBare(c.logDir, runner, upstream.url),
    nginxBin ? startNginx(c.logDir, nginxBin, { ...s.nginxOptions, workers: 1 }) : undefined,
    startGateway(c.logDir, runner, { ...s.gatewayOptions, port: ports.gateway, workers: 1 }),
    nginxBin && needMulti ? startNginx(c.logDir, nginxBin, { ...s.nginxOptions, workers: c.workers }) : undefined,
    needMulti ? startGateway(c.logDir, runner, { ...s.gatewayOptions, port: ports.multi, workers: c.workers }) : undefined,
    bareFeatureList && small ? startBare(c.logDir, runner, upstream.url, bareFeatureList) : undefined,
    small ? startNodeHttpProxy(c.logDir, runner, upstream.url) : undefined,
    startSecondGateway(c, s, baseline),
    o2pBin ? startOauth2Proxy(c.logDir, o2pOptions) : undefined,
    o2pBin && nginxBin
      ? startNginxAuthRequest(c.logDir, nginxBin, { bin: o2pBin, port: ports.authRequest, upstreamPort: s.upstreamPort, issuer: s.idp.issuer })
      : undefined,
  ]);
  return { bare, nginx, gateway, nginxMulti, gatewayMulti, bareWithFeatures, nodeHttp, baseline: second, o2p, authRequest };
}

/**
 * A gateway's credentials, in order of preference: a session cookie from a real code-flow login
 * (what browsers send), a realm bearer JWT, an upstream API key (ALLOW_UPSTREAM_API_KEYS).
 */
function credentialsFor(idp: TestIdp, gateway: Peer): Array<{ kind: string; headers: () => Promise<Record<string, string>> }> {
  return [
    {
      kind: 'session cookie (code-flow login of alice at the test IdP)',
      // Origin: a cookie-borne WebSocket must come from the gateway's own origin.
      headers: async () => ({ cookie: await gatewaySessionCookie(gateway.url, 'alice'), origin: gateway.url }),
    },
    {
      kind: 'realm bearer JWT (alice, verified against the IdP JWKS)',
      headers: async () => ({ authorization: `Bearer ${await idp.accessTokenFor('alice', CLIENT_ID)}` }),
    },
    { kind: 'upstream API key (ALLOW_UPSTREAM_API_KEYS=true)', headers: async () => ({ authorization: `Bearer ${BENCH_API_KEY}` }) },
  ];
}

/** The credentials the gateway accepts, best first (BENCH_AUTH forces one kind). */
async function usableCredentials(c: RunChoice, idp: TestIdp, gateway: Peer): Promise<Credential[]> {
  const forced = process.env.BENCH_AUTH; // session | bearer | api-key
  const usable: Credential[] = [];
  for (const cred of credentialsFor(idp, gateway)) {
    if (forced && !cred.kind.toLowerCase().includes(forced.replace('api-key', 'api key'))) continue;
    try {
      const headers = await cred.headers();
      const got = await status(`${gateway.url}/api/v1/bench/small`, headers);
      if (got === 200) usable.push({ kind: cred.kind, headers });
      else c.notices.push(`the gateway refused the ${cred.kind} (${got})`);
    } catch (e) {
      c.notices.push(`no ${cred.kind}: ${(e as Error).message}`);
    }
  }
  return usable;
}

/** The second gateway signs in the same way as today's, as its own session (or the same kind of token). */
async function secondTarget(peer: Peer | undefined, auth: Credential, credentialOf: Setup['credentialOf']): Promise<Target | undefined> {
  if (!peer) return undefined;
  const target = { peer, name: peer.name, url: peer.url, headers: await credentialOf(peer) };
  const got = await status(`${peer.url}/api/v1/bench/small`, target.headers);
  if (got !== 200) throw new Error(`the baseline gateway refused the ${auth.kind} (${got})`);
  return target;
}

/** oauth2-proxy's sessions: its own sign-in flow at the same IdP, as the same user. */
async function o2pTargetsOf(c: RunChoice, peers: Peers, signInO2p: Setup['signInO2p']): Promise<Target[]> {
  const targets: Target[] = [];
  for (const p of [peers.o2p, peers.authRequest]) {
    if (!p) continue;
    const headers = await signInO2p(p);
    const got = await status(`${p.url}/api/v1/bench/small`, headers);
    if (got !== 200) throw new Error(`${p.name} refused its own session cookie (${got})`);
    targets.push({ peer: p, name: p.name, url: p.url, headers });
  }
  if (targets.length) c.say(`bench: ${targets.map((t) => t.name).join(', ')} signed in (session cookie, code flow of alice)`);
  return targets;
}

/** Everything a run measures, started and signed in. */
export async function setUp(c: RunChoice): Promise<Setup> {
  const building = prepareRunner(); // tsc runs while the realm starts
  const o2pBin = oauth2ProxyBinary(c);
  const buildingBaseline = c.baselineRev ? prepareBaseline(c.baselineRev) : undefined;
  const [gateway, multi, baseline, o2p, authRequest, idleGateway, idleO2p, idleAuthRequest] = (await freePorts(8)) as number[];
  const ports = { gateway, multi, baseline, o2p, authRequest, idleGateway, idleO2p, idleAuthRequest } as Ports;
  const idp = await startRealm(ports);
  c.cleanups.push(() => idp.close());
  const built = await builds(c, building, buildingBaseline);
  const { demoIdentityProviders } = await import('../sandbox/demo-realm.js');
  const providersFile = join(c.logDir, 'providers.json');
  writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
  c.say('bench: built; realm up');
  const upstream = await startUpstream(c.logDir, built.runner);
  const nginxBin = nginxPath();
  if (!nginxBin) c.notices.push('nginx is not on PATH: the nginx rows are skipped (Debian: apt-get install nginx)');
  const upstreamPort = Number(new URL(upstream.url).port);
  const base = {
    idp,
    runner: built.runner,
    upstream,
    upstreamPort,
    nginxBin,
    o2pBin,
    ports,
    gatewayOptions: {
      upstreamUrl: upstream.url,
      issuer: idp.issuer,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      nodeFlags: (process.env.BENCH_GATEWAY_NODE_FLAGS ?? '').split(' ').filter(Boolean),
      env: { IDP_PROVIDERS_FILE: providersFile, SHOW_IDP_LOGIN: 'true' },
    },
    nginxOptions: { upstreamPort, staticAuthProviders: '{}' },
  };
  const peers = await startPeers(c, base, built.baseline);
  c.say('bench: peers up');
  await servedStatically(c, peers);
  return signedIn(c, base, peers);
}

/** nginx serves, as a static file, exactly what the gateway answers from its cache. */
async function servedStatically(c: RunChoice, peers: Peers): Promise<void> {
  const providersAnswer = await fetch(`${peers.gateway.url}/api/v1/auth-providers/`).then((r) => r.text());
  for (const n of [peers.nginx, peers.nginxMulti])
    if (n) writeFileSync(join(c.logDir, `nginx-${n === peers.nginx ? 1 : c.workers}w/static/auth-providers.json`), providersAnswer, { mode: 0o644 });
}

/** The peers' credentials: the gateway's best, the second gateway's of the same kind, oauth2-proxy's own. */
async function signedIn(
  c: RunChoice,
  base: Omit<Setup, 'peers' | 'auth' | 'bearer' | 'baselineTarget' | 'o2pTargets' | 'credentialOf' | 'signInO2p'>,
  peers: Peers,
): Promise<Setup> {
  const usable = await usableCredentials(c, base.idp, peers.gateway);
  const auth = usable[0];
  if (!auth) throw new Error(`the gateway accepts none of the bench's credentials: ${c.notices.join('; ')}`);
  c.say(`bench: gateway credential: ${auth.kind}`);
  const credentialOf = (gateway: Peer) =>
    credentialsFor(base.idp, gateway)
      .find((cred) => cred.kind === auth.kind)!
      .headers();
  const { loginThroughIdp } = await import('../sandbox/idp-browser.js');
  const signInO2p = (p: Peer) => signInOauth2Proxy(p.url, (authorizeUrl) => loginThroughIdp(authorizeUrl, 'alice'));
  return {
    ...base,
    peers,
    auth,
    bearer: usable.find((u) => u.kind.startsWith('realm bearer')),
    baselineTarget: await secondTarget(peers.baseline, auth, credentialOf),
    o2pTargets: await o2pTargetsOf(c, peers, signInO2p),
    credentialOf,
    signInO2p,
  };
}
