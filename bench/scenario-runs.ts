// How each scenario of `npm run bench` loads its peers (bench/README.md says what each measures).
import { httpLoad, transfer, sseLoad, wsLoad, idleLoad } from './load.js';
import { startBare, startNginx, startGateway, type Peer } from './peers.js';
import { statusKb } from './proc.js';
import { startNginxAuthRequest, startOauth2Proxy } from './oauth2-proxy.js';
import { compare, type Bench, type Load, type Run, type Target } from './compare.js';
import type { Setup } from './setup.js';
import type { Scenario } from './scenarios.js';

/** Sizes and durations of the run (bench/run.ts: full, or smoke). */
export interface Sizes {
  rounds: number;
  seconds: number;
  warmup: number;
  firstWarmup: number;
  latencySeconds: number;
  transferBytes: number;
  sseStreams: number;
  sseSeconds: number;
  wsConnections: number;
  wsHold: number;
  wsEchoes: number;
  connections: number;
  idleConnections: number;
}

interface Context {
  b: Bench;
  s: Setup;
  P: Sizes;
  logDir: string;
}

/** The peers every request scenario measures: direct (the upstream's own cost), the floor, nginx, the gateway, its baseline, oauth2-proxy. */
function peersOf({ s }: Context): Target[] {
  const { upstream, peers } = s;
  return [
    { peer: upstream, name: 'direct', url: upstream.url },
    { peer: peers.bare, name: peers.bare.name, url: peers.bare.url },
    ...(peers.nginx ? [{ peer: peers.nginx, name: peers.nginx.name, url: peers.nginx.url }] : []),
    { peer: peers.gateway, name: peers.gateway.name, url: peers.gateway.url },
    ...(s.baselineTarget ? [s.baselineTarget] : []),
    ...s.o2pTargets,
  ];
}

const target = (p: Peer, headers?: Record<string, string>): Target => ({ peer: p, name: p.name, url: p.url, ...(headers ? { headers } : {}) });

/** GET `path` over `connections` connections for `seconds`, after a warm-up (longer the first round). */
function get(c: Context, path: string, connections: number, seconds: number): Load {
  return (t: Target, run: Run) =>
    httpLoad({
      url: `${t.url}${path}`,
      headers: t.headers ?? c.s.auth.headers,
      connections,
      seconds,
      warmupSeconds: run.first ? c.P.firstWarmup : c.P.warmup,
      onMeasuring: run.measuring,
    });
}

async function small(c: Context): Promise<void> {
  const { peers, auth, bearer } = c.s;
  // The other credential a client may bring, when the main one is the session cookie.
  const extra = bearer && bearer !== auth ? [{ ...target(peers.gateway, bearer.headers), name: 'gateway (bearer JWT)' }] : [];
  // What the gateway's features cost at their cheapest (BENCH_BARE_FEATURES).
  if (peers.bareWithFeatures) extra.push(target(peers.bareWithFeatures, auth.headers));
  // What http-proxy-3 itself costs: the same proxy on node:http alone.
  if (peers.nodeHttp) extra.push(target(peers.nodeHttp, auth.headers));
  await compare(c.b, 'small', 'req/s', [...peersOf(c), ...extra], get(c, '/api/v1/bench/small', c.P.connections, c.P.seconds), c.P.rounds);
}

async function smallWorkers(c: Context): Promise<void> {
  const { upstream, peers } = c.s;
  const targets = [
    { peer: upstream, name: 'direct', url: upstream.url },
    ...(peers.nginxMulti ? [target(peers.nginxMulti)] : []),
    ...(peers.gatewayMulti ? [target(peers.gatewayMulti)] : []),
    // one worker under the same load: when GATEWAY_WORKERS=2 helps and when it hurts
    target(peers.gateway),
  ];
  await compare(c.b, 'small-workers', 'req/s', targets, get(c, '/api/v1/bench/small', c.P.connections * 2, c.P.seconds), c.P.rounds);
}

async function filesPage(c: Context): Promise<void> {
  // Last target: the same bytes at a path no policy rewrites, what the rewrite adds over passing through.
  const passThrough = { ...target(c.s.peers.gateway), name: 'gateway (pass-through)' };
  await compare(
    c.b,
    'files-page',
    'req/s',
    [...peersOf(c), passThrough],
    (t, run) => get(c, t.name === passThrough.name ? '/api/v1/bench/files-page' : '/api/v1/files/', 1, c.P.latencySeconds)(t, run),
    c.P.rounds,
  );
}

async function transferred(c: Context, scenario: 'upload' | 'download'): Promise<void> {
  const path = scenario === 'upload' ? '/api/v1/bench/upload' : '/api/v1/bench/download';
  const ms = c.b.smoke ? 20_000 : 120_000;
  await compare(c.b, scenario, 'MB/s', peersOf(c), (t) => transfer(`${t.url}${path}`, t.headers ?? c.s.auth.headers, scenario, c.P.transferBytes, ms), 1);
}

/** The fresh peers of the idle scenario: the floor, nginx, the gateway and oauth2-proxy, started for it alone. */
async function freshPeers(c: Context): Promise<Target[]> {
  const { runner, upstream, nginxBin, o2pBin, ports, idp } = c.s;
  const [bare, nginx, gateway, o2p, authRequest] = await Promise.all([
    startBare(c.logDir, runner, upstream.url, '', 'bare-idle'),
    nginxBin ? startNginx(c.logDir, nginxBin, { ...c.s.nginxOptions, workers: 1, tag: 'nginx-idle' }) : undefined,
    startGateway(c.logDir, runner, { ...c.s.gatewayOptions, port: ports.idleGateway, workers: 1, logName: 'gateway-idle' }),
    o2pBin
      ? startOauth2Proxy(c.logDir, {
          bin: o2pBin,
          port: ports.idleO2p,
          publicUrl: `http://127.0.0.1:${ports.idleO2p}`,
          issuer: idp.issuer,
          upstreamUrl: upstream.url,
          name: 'oauth2-proxy',
          logName: 'oauth2-proxy-idle',
        })
      : undefined,
    o2pBin && nginxBin
      ? startNginxAuthRequest(c.logDir, nginxBin, {
          bin: o2pBin,
          port: ports.idleAuthRequest,
          upstreamPort: c.s.upstreamPort,
          issuer: idp.issuer,
          tag: 'nginx-auth-request-idle',
        })
      : undefined,
  ]);
  const fresh: Target[] = [target(bare), ...(nginx ? [target(nginx)] : []), target(gateway, await c.s.credentialOf(gateway))];
  for (const p of [o2p, authRequest]) if (p) fresh.push(target(p, await c.s.signInO2p(p)));
  return fresh;
}

/**
 * Memory per idle keep-alive connection: RSS after holding N, less RSS before, over N, on fresh
 * processes of each peer, started for this scenario and stopped after it: a peer that already grew
 * and freed memory (5,000 WebSockets, 1 GiB bodies) would reuse it for the new connections and
 * show nothing, and the memory the connections leave behind would raise the peak RSS of the
 * scenarios after it.
 */
async function idle(c: Context): Promise<void> {
  const fresh = await freshPeers(c);
  const idleBytes = new Map<string, number[]>();
  const rssOf = (t: Target) => () => (t.peer ? t.peer.pids().reduce((sum, p) => sum + statusKb(p, 'VmRSS'), 0) * 1024 : 0);
  const load: Load = async (t) => {
    const m = await idleLoad(`${t.url}/api/v1/bench/small`, t.headers ?? c.s.auth.headers, c.P.idleConnections, rssOf(t), c.b.smoke ? 100 : 500);
    idleBytes.set(t.name, [...(idleBytes.get(t.name) ?? []), m.bytesPerConnection]);
    return m;
  };
  await compare(c.b, 'idle', 'conns', fresh, load, c.P.rounds, false);
  // the largest round: the first one, on a fresh process, shows the growth; later rounds
  // reuse what the first one's connections left behind and show less
  for (const r of c.b.rows)
    if (r.scenario === 'idle' && idleBytes.has(r.peer)) r.bytesPerConnection = Math.max(...idleBytes.get(r.peer)!.filter(Number.isFinite));
  for (const t of fresh) await t.peer?.stop();
}

async function authProviders(c: Context): Promise<void> {
  const { nginx, gateway } = c.s.peers;
  const targets = [...(nginx ? [{ ...target(nginx), name: 'nginx (static file)' }] : []), target(gateway, {})];
  const load: Load = (t, run) =>
    httpLoad({
      url: `${t.url}/api/v1/auth-providers/`,
      headers: {},
      connections: c.P.connections,
      seconds: c.P.seconds,
      warmupSeconds: run.first ? c.P.firstWarmup : c.P.warmup,
      onMeasuring: run.measuring,
    });
  await compare(c.b, 'auth-providers', 'req/s', targets, load, c.P.rounds);
}

const RUNS: Record<Scenario, (c: Context) => Promise<void>> = {
  small,
  'small-latency': (c) => compare(c.b, 'small-latency', 'req/s', peersOf(c), get(c, '/api/v1/bench/small', 1, c.P.latencySeconds), c.P.rounds),
  'small-workers': smallWorkers,
  'files-page': filesPage,
  upload: (c) => transferred(c, 'upload'),
  download: (c) => transferred(c, 'download'),
  // Rounds, interleaved like the request scenarios: one 5 s run's p99 (its worst 1 %, 250 events)
  // is as much a measure of what else ran on the machine in those seconds as of the peer (4.7x
  // nginx in one full run, 1.06x in the one before).
  sse: (c) =>
    compare(
      c.b,
      'sse',
      'events/s',
      peersOf(c),
      (t) => sseLoad(`${t.url}/api/v1/bench/sse`, t.headers ?? c.s.auth.headers, c.P.sseStreams, c.P.sseSeconds, 20),
      c.P.rounds,
    ),
  // CPU per echo would count the 5,000 handshakes too: not shown.
  websocket: (c) =>
    compare(
      c.b,
      'websocket',
      'echo/s',
      peersOf(c),
      (t) => wsLoad(`${t.url.replace('http:', 'ws:')}/ws/bench/echo`, t.headers ?? c.s.auth.headers, c.P.wsConnections, c.P.wsHold, c.P.wsEchoes),
      1,
      false,
    ),
  idle,
  'auth-providers': authProviders,
};

/** Measures one scenario against its peers, adding its rows to `b.rows`. */
export function runScenario(scenario: Scenario, b: Bench, s: Setup, P: Sizes, logDir: string): Promise<void> {
  return RUNS[scenario]({ b, s, P, logDir });
}
