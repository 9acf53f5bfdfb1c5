// `npm run bench`: the gateway against no proxy (direct), a bare http-proxy-3 proxy (the floor of
// our stack) and nginx (the peer users would otherwise pick), in one run, on one machine, so
// the ratios are fair even when absolute numbers are noisy. See bench/README.md.
//
//   npm run bench                    full run (about 10 minutes): prints the tables, writes bench/results.json
//   npm run bench -- --smoke         a few seconds (BENCH_SMOKE=1 too): proves the harness, not speed
//   npm run bench -- --only=small    one scenario (comma-separated list), e.g. while profiling
//   npm run bench -- --peers=gateway only the targets whose name starts so (comma-separated)
//   npm run bench -- --baseline=REV  also the gateway as it was at git revision REV (`gateway@REV`),
//                                    built and measured the same way in the same run: before/after
//   BENCH_GATEWAY_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run bench -- --only=small
//   BENCH_BARE_NODE_FLAGS="--cpu-prof ..."  the same for the bare http-proxy-3 peer
//   BENCH_LOADGEN=autocannon         use autocannon even where wrk is installed
//   BENCH_AUTH=api-key|bearer        force the gateway's credential (default: bearer when it works)
//   BENCH_OUT=path                   where the JSON goes (default bench/results.json)
//   BENCH_KEEP_LOGS=1                keep the peers' logs (printed folder) after a successful run
//   BENCH_TSX=1                      run the node peers from sources through tsx (no tsc build)
//   BENCH_ROUNDS=N                   rounds per request scenario (default 3)
//   BENCH_VARIANT_NODE_FLAGS="--x"   also today's gateway with these node flags added, beside it
//   BENCH_VARIANT_ENV="K=v"          ... or with this environment (both: both)
//   BENCH_MEMORY_DIR=DIR             node peers log their peak RSS each second, taken apart (bench/memory-sample.ts)
//   BENCH_BARE_FEATURES=headers,log  `small` also measures the bare floor plus the cheapest form of
//                                    those gateway features (headers, log, metrics, hooks, or all)
import { cpus, totalmem, tmpdir } from 'node:os';
import { mkdtempSync, mkdirSync, chmodSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import http from 'node:http';
import { httpLoad, transfer, sseLoad, wsLoad, idleLoad, loadGenerator, type Measured } from './load.js';
import { bareFeatures } from './bare-proxy.js';
import {
  startUpstream,
  startBare,
  startNodeHttpProxy,
  startNginx,
  startGateway,
  nginxPath,
  nginxVersion,
  prepareBaseline,
  prepareRunner,
  type Peer,
} from './peers.js';
import { BENCH_API_KEY } from './upstream.js';
import { watchRss, stopAll as stopChildren, killAllSync, sleep, freePorts, cpuTimes, statusKb } from './proc.js';
import { gatewaySessionCookie } from './sign-in.js';
import { evaluateTargets, printTable, type Row, type Results } from './report.js';
import { SCENARIOS, type Scenario } from './scenarios.js';
import { markCompacts } from './gc-count.js';
import {
  ensureOauth2Proxy,
  goVersion,
  OAUTH2_PROXY_CLIENT,
  OAUTH2_PROXY_VERSION,
  signInOauth2Proxy,
  startNginxAuthRequest,
  startOauth2Proxy,
} from './oauth2-proxy.js';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
// --help, or an option this file does not know: the usage (the comment at the top) instead of a
// nine-minute full run started by a typo.
const known = ['--smoke', '--only=', '--peers=', '--baseline='];
if (args.some((a) => !known.some((k) => (k.endsWith('=') ? a.startsWith(k) : a === k)))) {
  const usage = readFileSync(fileURLToPath(import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('//'))
    .map((l) => l.slice(3));
  const bad = args.filter((a) => a !== '--help' && !known.some((k) => (k.endsWith('=') ? a.startsWith(k) : a === k)));
  console.log(
    `${bad.length ? `unknown option ${bad.join(' ')}\n\n` : ''}${usage.slice(0, usage.findIndex((l) => l.startsWith('  BENCH_BARE_FEATURES')) + 2).join('\n')}`,
  );
  console.log(`scenarios: ${SCENARIOS.join(', ')}`);
  process.exit(bad.length ? 2 : 0);
}
const smoke = args.includes('--smoke') || process.env.BENCH_SMOKE === '1';
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',')
  .filter(Boolean);
/** --peers=gateway,bare: measure only the targets whose name starts with one of these (profiling) */
const peerFilter = args
  .find((a) => a.startsWith('--peers='))
  ?.slice('--peers='.length)
  .split(',')
  .filter(Boolean);
/** --baseline=REV: the gateway at that git revision runs beside today's (before/after in one run) */
const baselineRev = args.find((a) => a.startsWith('--baseline='))?.slice('--baseline='.length);
/**
 * BENCH_VARIANT_NODE_FLAGS="--flag ...": today's gateway once more, with these node flags after
 * `npm start`'s (the last of a flag wins), measured beside it in the same run, as `gateway <flags>`:
 * a node setting weighed in every scenario at once (RSS against full GCs). It takes
 * --baseline's place, so not both.
 */
const variantFlags = (process.env.BENCH_VARIANT_NODE_FLAGS ?? '').split(' ').filter(Boolean);
/** BENCH_VARIANT_ENV="NAME=value ...": environment for that variant (e.g. glibc's MALLOC_ARENA_MAX) */
const variantEnv = Object.fromEntries(
  (process.env.BENCH_VARIANT_ENV ?? '')
    .split(' ')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const variant = [...Object.entries(variantEnv).map(([k, v]) => `${k}=${v}`), ...variantFlags].join(' ');
if (variant && baselineRev) throw new Error('BENCH_VARIANT_NODE_FLAGS or BENCH_VARIANT_ENV, and --baseline: one or the other');
const outFile = resolve(process.env.BENCH_OUT ?? join(here, 'results.json'));
const WORKERS = Math.max(2, cpus().length);

/** BENCH_ROUNDS: rounds per request scenario in a full run (default 3; more rounds, steadier medians). */
function roundsSetting(): number {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`BENCH_ROUNDS must be a whole number of at least 1, not "${process.env.BENCH_ROUNDS}"`);
  return rounds;
}

/** Sizes and durations: full run for people, smoke for CI. */
const P = smoke
  ? {
      rounds: 1,
      seconds: 0.3,
      warmup: 0.1,
      firstWarmup: 0.1,
      latencySeconds: 0.3,
      transferBytes: 16 << 20,
      sseStreams: 5,
      sseSeconds: 0.5,
      wsConnections: 50,
      wsHold: 0.2,
      wsEchoes: 100,
      connections: 16,
      idleConnections: 50,
    }
  : {
      rounds: roundsSetting(),
      seconds: 3,
      warmup: 1,
      firstWarmup: 3,
      latencySeconds: 2,
      transferBytes: 1 << 30,
      sseStreams: 100,
      sseSeconds: 5,
      wsConnections: 5000,
      wsHold: 2,
      wsEchoes: 2000,
      connections: 32,
      idleConnections: 2000,
    };

/** Things to undo at the end besides the child processes (the IdP, the build folder). */
const cleanups: Array<() => unknown> = [];
async function stopAll(): Promise<void> {
  await stopChildren();
  for (const c of cleanups.splice(0)) await Promise.resolve(c()).catch(() => {});
}

async function main(): Promise<void> {
  const started = Date.now();
  const selected = SCENARIOS.filter((s) => !only || only.includes(s));
  if (only)
    for (const s of only) if (!(SCENARIOS as readonly string[]).includes(s)) throw new Error(`--only: no scenario ${s} (have: ${SCENARIOS.join(', ')})`);
  if (smoke && process.env.BENCH_LOADGEN !== 'wrk') process.env.BENCH_LOADGEN = 'autocannon'; // wrk cannot run for less than 1 s
  const logDir = mkdtempSync(join(tmpdir(), 'bench-'));
  chmodSync(logDir, 0o755);
  // Every node peer counts its mark-compacts here (bench/gc-count.ts), per pid.
  const gcDir = join(logDir, 'gc');
  mkdirSync(gcDir);
  process.env.BENCH_GC_DIR = gcDir;
  const say = (line: string) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s] ${line}\n`);
  say(`bench: ${smoke ? 'smoke' : 'full'} run, scenarios ${selected.join(', ')}; load from ${loadGenerator()}; logs in ${logDir}`);
  const notices: string[] = [];
  const building = prepareRunner(); // tsc runs while the realm starts
  // oauth2-proxy (bench/oauth2-proxy.ts): built with Go when absent. BENCH_OAUTH2_PROXY=0 skips it.
  // A smoke run (CI) skips it unless BENCH_OAUTH2_PROXY=1, and never builds it: the smoke test
  // stays quick, and CI without Go or the binary gets a notice instead of minutes of compiling.
  const o2pWanted = smoke ? process.env.BENCH_OAUTH2_PROXY === '1' : process.env.BENCH_OAUTH2_PROXY !== '0';
  const o2pBinary = o2pWanted
    ? ensureOauth2Proxy({ build: !smoke })
    : {
        why: `${smoke ? 'smoke run' : 'BENCH_OAUTH2_PROXY=0'}: the oauth2-proxy rows are skipped${smoke ? ' (BENCH_OAUTH2_PROXY=1 includes them when built)' : ''}`,
      };
  const o2pBin = 'bin' in o2pBinary ? o2pBinary.bin : undefined;
  if ('why' in o2pBinary) notices.push(o2pBinary.why);
  const buildingBaseline = baselineRev ? prepareBaseline(baselineRev) : undefined;

  // The realm: the test IdP (the real oidc-provider) in this process. The gateways fetch its
  // discovery document and JWKS once; a session costs one code-flow login per gateway.
  const needMulti = selected.includes('small-workers');
  const [gatewayPort, multiPort, baselinePort, o2pPort, authRequestPort, idleGatewayPort, idleO2pPort, idleAuthRequestPort] = (await freePorts(8)) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const clientId = 'bench-gateway';
  const clientSecret = 'bench-gateway-secret';
  const { startIdp } = await import('../sandbox/idp.js');
  const { loginThroughIdp } = await import('../sandbox/idp-browser.js');
  const idp = await startIdp({
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [gatewayPort, multiPort, baselinePort, idleGatewayPort].map((p) => `http://127.0.0.1:${p}/auth/callback`),
      },
      {
        ...OAUTH2_PROXY_CLIENT,
        redirect_uris: [o2pPort, authRequestPort, idleO2pPort, idleAuthRequestPort].map((p) => `http://127.0.0.1:${p}/oauth2/callback`),
      },
    ],
    accessTokenTtl: 3600,
  });
  cleanups.push(() => idp.close());
  const runner = await building;
  cleanups.push(() => runner.dir && rmSync(runner.dir, { recursive: true, force: true }));
  if (runner.warnings) notices.push(`tsc reported errors but emitted; the run uses what it emitted:\n${runner.warnings.slice(0, 2000)}`);
  const baselineRunner = await buildingBaseline;
  if (baselineRunner) cleanups.push(() => rmSync(baselineRunner.dir!, { recursive: true, force: true }));
  if (baselineRunner?.warnings)
    notices.push(`tsc reported errors in the baseline ${baselineRunner.rev} but emitted:\n${baselineRunner.warnings.slice(0, 2000)}`);
  const { demoIdentityProviders } = await import('../sandbox/demo-realm.js');
  const providersFile = join(logDir, 'providers.json');
  writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));

  say('bench: built; realm up');
  const upstream = await startUpstream(logDir, runner);
  const nginxBin = nginxPath();
  if (!nginxBin) notices.push('nginx is not on PATH: the nginx rows are skipped (Debian: apt-get install nginx)');
  const upstreamPort = Number(new URL(upstream.url).port);
  const gatewayOptions = {
    upstreamUrl: upstream.url,
    issuer: idp.issuer,
    clientId,
    clientSecret,
    nodeFlags: (process.env.BENCH_GATEWAY_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    env: { IDP_PROVIDERS_FILE: providersFile, SHOW_IDP_LOGIN: 'true' },
  };
  const nginxOptions = { upstreamPort, staticAuthProviders: '{}' };
  // BENCH_BARE_FEATURES: checked here, before anything starts, so a typo is a clear error.
  const bareFeatureList = [...bareFeatures(process.env.BENCH_BARE_FEATURES)].join(',');
  const [bare, nginx, gateway, nginxMulti, gatewayMulti, bareWithFeatures, nodeHttp, baseline, o2p, authRequest] = await Promise.all([
    startBare(logDir, runner, upstream.url),
    nginxBin ? startNginx(logDir, nginxBin, { ...nginxOptions, workers: 1 }) : undefined,
    startGateway(logDir, runner, { ...gatewayOptions, port: gatewayPort, workers: 1 }),
    nginxBin && needMulti ? startNginx(logDir, nginxBin, { ...nginxOptions, workers: WORKERS }) : undefined,
    needMulti ? startGateway(logDir, runner, { ...gatewayOptions, port: multiPort, workers: WORKERS }) : undefined,
    bareFeatureList && selected.includes('small') ? startBare(logDir, runner, upstream.url, bareFeatureList) : undefined,
    selected.includes('small') ? startNodeHttpProxy(logDir, runner, upstream.url) : undefined,
    baselineRunner
      ? startGateway(logDir, baselineRunner, { ...gatewayOptions, port: baselinePort, workers: 1, name: `gateway@${baselineRunner.rev}` })
      : variant
        ? startGateway(logDir, runner, {
            ...gatewayOptions,
            nodeFlags: [...gatewayOptions.nodeFlags, ...variantFlags],
            env: { ...gatewayOptions.env, ...variantEnv },
            port: baselinePort,
            workers: 1,
            name: `gateway ${variant}`,
            logName: 'gateway-variant',
          })
        : undefined,
    o2pBin
      ? startOauth2Proxy(logDir, {
          bin: o2pBin,
          port: o2pPort,
          publicUrl: `http://127.0.0.1:${o2pPort}`,
          issuer: idp.issuer,
          upstreamUrl: upstream.url,
          name: 'oauth2-proxy',
        })
      : undefined,
    o2pBin && nginxBin ? startNginxAuthRequest(logDir, nginxBin, { bin: o2pBin, port: authRequestPort, upstreamPort, issuer: idp.issuer }) : undefined,
  ]);
  // nginx serves, as a static file, exactly what the gateway answers from its cache.
  say('bench: peers up');
  const providersAnswer = await fetch(`${gateway.url}/api/v1/auth-providers/`).then((r) => r.text());
  for (const n of [nginx, nginxMulti])
    if (n) writeFileSync(join(logDir, `nginx-${n === nginx ? 1 : WORKERS}w/static/auth-providers.json`), providersAnswer, { mode: 0o644 });

  // The gateway's credential, in order of preference: a session cookie from a real code-flow
  // login (what browsers send), a realm bearer JWT, an upstream API key (ALLOW_UPSTREAM_API_KEYS).
  const credentialsFor = (gateway: Peer): Array<{ kind: string; headers: () => Promise<Record<string, string>> }> => [
    {
      kind: 'session cookie (code-flow login of alice at the test IdP)',
      // Origin: a cookie-borne WebSocket must come from the gateway's own origin.
      headers: async () => ({ cookie: await gatewaySessionCookie(gateway.url, 'alice'), origin: gateway.url }),
    },
    {
      kind: 'realm bearer JWT (alice, verified against the IdP JWKS)',
      headers: async () => ({ authorization: `Bearer ${await idp.accessTokenFor('alice', clientId)}` }),
    },
    { kind: 'upstream API key (ALLOW_UPSTREAM_API_KEYS=true)', headers: async () => ({ authorization: `Bearer ${BENCH_API_KEY}` }) },
  ];
  const credentials = credentialsFor(gateway);
  const forced = process.env.BENCH_AUTH; // session | bearer | api-key
  const usable: Array<{ kind: string; headers: Record<string, string> }> = [];
  for (const c of credentials) {
    if (forced && !c.kind.toLowerCase().includes(forced.replace('api-key', 'api key'))) continue;
    try {
      const headers = await c.headers();
      const got = await status(`${gateway.url}/api/v1/bench/small`, headers);
      if (got === 200) usable.push({ kind: c.kind, headers });
      else notices.push(`the gateway refused the ${c.kind} (${got})`);
    } catch (e) {
      notices.push(`no ${c.kind}: ${(e as Error).message}`);
    }
  }
  const auth = usable[0];
  if (!auth) throw new Error(`the gateway accepts none of the bench's credentials: ${notices.join('; ')}`);
  const bearer = usable.find((u) => u.kind.startsWith('realm bearer'));
  say(`bench: gateway credential: ${auth.kind}`);
  // The baseline signs in the same way, as its own session (or the same kind of token).
  const baselineTarget = baseline
    ? {
        peer: baseline,
        name: baseline.name,
        url: baseline.url,
        headers: await credentialsFor(baseline)
          .find((c) => c.kind === auth.kind)!
          .headers(),
      }
    : undefined;
  if (baselineTarget) {
    const got = await status(`${baseline!.url}/api/v1/bench/small`, baselineTarget.headers);
    if (got !== 200) throw new Error(`the baseline gateway refused the ${auth.kind} (${got})`);
  }

  // oauth2-proxy's session: its own sign-in flow at the same IdP, as the same user.
  const o2pTargets: Array<{ peer: Peer; name: string; url: string; headers: Record<string, string> }> = [];
  for (const p of [o2p, authRequest]) {
    if (!p) continue;
    const headers = await signInOauth2Proxy(p.url, (authorizeUrl) => loginThroughIdp(authorizeUrl, 'alice'));
    const got = await status(`${p.url}/api/v1/bench/small`, headers);
    if (got !== 200) throw new Error(`${p.name} refused its own session cookie (${got})`);
    o2pTargets.push({ peer: p, name: p.name, url: p.url, headers });
  }
  if (o2pTargets.length) say(`bench: ${o2pTargets.map((t) => t.name).join(', ')} signed in (session cookie, code flow of alice)`);

  const rows: Row[] = [];
  interface Target {
    name: string;
    peer: Peer | undefined;
    url: string;
    headers?: Record<string, string>;
  }
  const peersOf = (): Target[] => [
    // direct: the upstream's own RSS and CPU, the cost of a node:http server answering
    { peer: upstream, name: 'direct', url: upstream.url },
    { peer: bare, name: bare.name, url: bare.url },
    ...(nginx ? [{ peer: nginx, name: nginx.name, url: nginx.url }] : []),
    { peer: gateway, name: gateway.name, url: gateway.url },
    ...(baselineTarget ? [baselineTarget] : []),
    ...o2pTargets,
  ];

  /**
   * Measure every target `rounds` times, interleaved (A B C, B C A, C A B...), so that a burst of
   * load from elsewhere on the machine hits all of them alike; each target's row is the median
   * round (rate, p50 and p99 each), its peak RSS the largest, its CPU the peer's own user+system
   * time per unit of work. A load with a warm-up calls `measuring` when the measured run starts:
   * the CPU counts from there, so a peer's JIT compiling its hot path during warm-up (the gateway has
   * more code to compile than the bare proxy) is not counted as the cost of its requests. The first
   * round of each target warms up longer (`first`).
   */
  async function compare(
    scenario: Scenario,
    unit: Row['unit'],
    all: Target[],
    fn: (t: Target, run: { first: boolean; measuring: () => void }) => Promise<Measured>,
    rounds: number,
    cpuPerUnit = true,
  ) {
    const targets = peerFilter ? all.filter((t) => peerFilter.some((f) => t.name.startsWith(f))) : all;
    const samples = new Map<Target, Array<Measured & { rss: number | null; cpu: number | null; user: number | null; markCompacts: number | null }>>();
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < targets.length; i++) {
        const t = targets[(i + r) % targets.length]!;
        const rss = t.peer ? watchRss(() => t.peer!.pids()) : undefined;
        let cpu0 = t.peer ? cpuTimes(t.peer.pids()) : { user: 0, system: 0 };
        let gc0 = t.peer ? markCompacts(gcDir, t.peer.pids()) : 0;
        const measuring = () => {
          if (!t.peer) return;
          cpu0 = cpuTimes(t.peer.pids());
          gc0 = markCompacts(gcDir, t.peer.pids());
        };
        let m: Measured;
        try {
          m = await fn(t, { first: r === 0, measuring });
        } catch (e) {
          m = { rate: 0, p50: NaN, p99: NaN, errors: 1, count: 0, units: 0, note: (e as Error).message };
        }
        if (m.count === 0 && m.errors === 0) m = { ...m, errors: 1, note: m.note ?? 'no successful response' };
        const cpu1 = t.peer ? cpuTimes(t.peer.pids()) : undefined;
        const sample = {
          ...m,
          rss: rss ? rss.stop() : null,
          cpu: cpu1 ? cpu1.user + cpu1.system - cpu0.user - cpu0.system : null,
          user: cpu1 ? cpu1.user - cpu0.user : null,
          markCompacts: t.peer?.countsGc ? markCompacts(gcDir, t.peer.pids()) - gc0 : null,
        };
        samples.set(t, [...(samples.get(t) ?? []), sample]);
        say(
          `  ${scenario.padEnd(15)} ${t.name.padEnd(24)} ${m.rate.toFixed(1).padStart(9)} ${unit}  p50 ${fmt(m.p50)}  p99 ${fmt(m.p99)}  rss ${sample.rss?.toFixed(0) ?? '-'} MB  cpu ${sample.cpu === null ? '-' : `${((sample.cpu * 1000) / Math.max(1, m.units)).toFixed(0)} us/unit (user ${((sample.user! * 1000) / Math.max(1, m.units)).toFixed(0)})`}${sample.markCompacts === null ? '' : `  full GCs ${sample.markCompacts}`}${m.errors ? `  errors ${m.errors}` : ''}${m.note ? `  (${m.note})` : ''}`,
        );
        await sleep(smoke ? 50 : 300); // let the previous peer's sockets settle
      }
    }
    for (const t of targets) {
      const list = samples.get(t) ?? [];
      const units = list.reduce((a, x) => a + x.units, 0);
      const cpu = list.every((x) => x.cpu !== null) ? list.reduce((a, x) => a + x.cpu!, 0) : null;
      const user = list.every((x) => x.user !== null) ? list.reduce((a, x) => a + x.user!, 0) : null;
      const notes = [...new Set(list.map((x) => x.note).filter(Boolean))];
      rows.push({
        scenario,
        peer: t.name,
        unit,
        rate: median(list.map((x) => x.rate)),
        p50Ms: median(list.map((x) => x.p50)),
        p99Ms: median(list.map((x) => x.p99)),
        peakRssMB: list.some((x) => x.rss !== null) ? Math.max(...list.map((x) => x.rss ?? 0)) : null,
        cpuUsPerUnit: cpu !== null && cpuPerUnit && units > 0 ? (cpu * 1000) / units : null,
        userUsPerUnit: user !== null && cpuPerUnit && units > 0 ? (user * 1000) / units : null,
        markCompacts: list.every((x) => x.markCompacts !== null) ? list.reduce((a, x) => a + x.markCompacts!, 0) : null,
        errors: list.reduce((a, x) => a + x.errors, 0),
        count: list.reduce((a, x) => a + x.count, 0),
        rounds: list.length,
        ...(notes.length ? { note: notes.join('; ') } : {}),
      });
    }
  }

  const h = auth.headers;
  const idleBytes = new Map<string, number[]>();
  const warmup = (run: { first: boolean }) => (run.first ? P.firstWarmup : P.warmup);
  const get = (path: string, connections: number, seconds: number) => (t: Target, run: { first: boolean; measuring: () => void }) =>
    httpLoad({ url: `${t.url}${path}`, headers: t.headers ?? h, connections, seconds, warmupSeconds: warmup(run), onMeasuring: run.measuring });
  for (const scenario of selected) {
    say(`bench: ${scenario}`);
    switch (scenario) {
      case 'small': {
        // The other credential a client may bring, when the main one is the session cookie.
        const extra = bearer && bearer !== auth ? [{ peer: gateway, name: 'gateway (bearer JWT)', url: gateway.url, headers: bearer.headers }] : [];
        // What the gateway's features cost at their cheapest (BENCH_BARE_FEATURES).
        if (bareWithFeatures) extra.push({ peer: bareWithFeatures, name: bareWithFeatures.name, url: bareWithFeatures.url, headers: h });
        // What http-proxy-3 itself costs: the same proxy on node:http alone.
        if (nodeHttp) extra.push({ peer: nodeHttp, name: nodeHttp.name, url: nodeHttp.url, headers: h });
        await compare(scenario, 'req/s', [...peersOf(), ...extra], get('/api/v1/bench/small', P.connections, P.seconds), P.rounds);
        break;
      }
      case 'small-latency':
        await compare(scenario, 'req/s', peersOf(), get('/api/v1/bench/small', 1, P.latencySeconds), P.rounds);
        break;
      case 'small-workers': {
        const targets = [
          { peer: upstream, name: 'direct', url: upstream.url },
          ...(nginxMulti ? [{ peer: nginxMulti, name: nginxMulti.name, url: nginxMulti.url }] : []),
          ...(gatewayMulti ? [{ peer: gatewayMulti, name: gatewayMulti.name, url: gatewayMulti.url }] : []),
          // one worker under the same load: when GATEWAY_WORKERS=2 helps and when it hurts
          { peer: gateway, name: gateway.name, url: gateway.url },
        ];
        await compare(scenario, 'req/s', targets, get('/api/v1/bench/small', P.connections * 2, P.seconds), P.rounds);
        break;
      }
      case 'files-page':
        // Last target: the same bytes at a path no policy rewrites, what the rewrite adds over passing through.
        await compare(
          scenario,
          'req/s',
          [...peersOf(), { peer: gateway, name: 'gateway (pass-through)', url: gateway.url }],
          (t, run) => get(t.name === 'gateway (pass-through)' ? '/api/v1/bench/files-page' : '/api/v1/files/', 1, P.latencySeconds)(t, run),
          P.rounds,
        );
        break;
      case 'upload':
      case 'download': {
        const path = scenario === 'upload' ? '/api/v1/bench/upload' : '/api/v1/bench/download';
        await compare(scenario, 'MB/s', peersOf(), (t) => transfer(`${t.url}${path}`, t.headers ?? h, scenario, P.transferBytes, smoke ? 20_000 : 120_000), 1);
        break;
      }
      case 'sse':
        // Rounds, interleaved like the request scenarios: one 5 s run's p99 (its worst 1 %, 250
        // events) is as much a measure of what else ran on the machine in those seconds as of the
        // peer (4.7x nginx in one full run, 1.06x in the one before).
        await compare(scenario, 'events/s', peersOf(), (t) => sseLoad(`${t.url}/api/v1/bench/sse`, t.headers ?? h, P.sseStreams, P.sseSeconds, 20), P.rounds);
        break;
      case 'websocket':
        // CPU per echo would count the 5,000 handshakes too: not shown.
        await compare(
          scenario,
          'echo/s',
          peersOf(),
          (t) => wsLoad(`${t.url.replace('http:', 'ws:')}/ws/bench/echo`, t.headers ?? h, P.wsConnections, P.wsHold, P.wsEchoes),
          1,
          false,
        );
        break;
      case 'idle': {
        // Memory per idle keep-alive connection: RSS after holding N, less RSS before,
        // over N, on fresh processes of each peer, started for this scenario and stopped after it:
        // a peer that already grew and freed memory (5,000 WebSockets, 1 GiB bodies) would reuse
        // it for the new connections and show nothing, and the memory the connections leave behind
        // would raise the peak RSS of the scenarios after it.
        const [freshBare, freshNginx, freshGateway, freshO2p, freshAuthRequest] = await Promise.all([
          startBare(logDir, runner, upstream.url, '', 'bare-idle'),
          nginxBin ? startNginx(logDir, nginxBin, { ...nginxOptions, workers: 1, tag: 'nginx-idle' }) : undefined,
          startGateway(logDir, runner, { ...gatewayOptions, port: idleGatewayPort, workers: 1, logName: 'gateway-idle' }),
          o2pBin
            ? startOauth2Proxy(logDir, {
                bin: o2pBin,
                port: idleO2pPort,
                publicUrl: `http://127.0.0.1:${idleO2pPort}`,
                issuer: idp.issuer,
                upstreamUrl: upstream.url,
                name: 'oauth2-proxy',
                logName: 'oauth2-proxy-idle',
              })
            : undefined,
          o2pBin && nginxBin
            ? startNginxAuthRequest(logDir, nginxBin, {
                bin: o2pBin,
                port: idleAuthRequestPort,
                upstreamPort,
                issuer: idp.issuer,
                tag: 'nginx-auth-request-idle',
              })
            : undefined,
        ]);
        const fresh: Target[] = [
          { peer: freshBare, name: freshBare.name, url: freshBare.url },
          ...(freshNginx ? [{ peer: freshNginx, name: freshNginx.name, url: freshNginx.url }] : []),
          {
            peer: freshGateway,
            name: freshGateway.name,
            url: freshGateway.url,
            headers: await credentialsFor(freshGateway)
              .find((c) => c.kind === auth.kind)!
              .headers(),
          },
        ];
        for (const p of [freshO2p, freshAuthRequest])
          if (p)
            fresh.push({
              peer: p,
              name: p.name,
              url: p.url,
              headers: await signInOauth2Proxy(p.url, (authorizeUrl) => loginThroughIdp(authorizeUrl, 'alice')),
            });
        await compare(
          scenario,
          'conns',
          fresh,
          async (t) => {
            const m = await idleLoad(
              `${t.url}/api/v1/bench/small`,
              t.headers ?? h,
              P.idleConnections,
              () => (t.peer ? t.peer.pids().reduce((s, p) => s + statusKb(p, 'VmRSS'), 0) * 1024 : 0),
              smoke ? 100 : 500,
            );
            idleBytes.set(t.name, [...(idleBytes.get(t.name) ?? []), m.bytesPerConnection]);
            return m;
          },
          P.rounds,
          false,
        );
        // the largest round: the first one, on a fresh process, shows the growth; later rounds
        // reuse what the first one's connections left behind and show less
        for (const r of rows)
          if (r.scenario === 'idle' && idleBytes.has(r.peer)) r.bytesPerConnection = Math.max(...idleBytes.get(r.peer)!.filter(Number.isFinite));
        for (const t of fresh) await t.peer?.stop();
        break;
      }
      case 'auth-providers': {
        const targets = [
          ...(nginx ? [{ peer: nginx, name: 'nginx (static file)', url: nginx.url }] : []),
          { peer: gateway, name: gateway.name, url: gateway.url, headers: {} },
        ];
        await compare(
          scenario,
          'req/s',
          targets,
          (t, run) =>
            httpLoad({
              url: `${t.url}/api/v1/auth-providers/`,
              headers: {},
              connections: P.connections,
              seconds: P.seconds,
              warmupSeconds: warmup(run),
              onMeasuring: run.measuring,
            }),
          P.rounds,
        );
        break;
      }
    }
  }

  const targets = evaluateTargets(rows, { wsConnections: P.wsConnections, smoke });
  const results: Results = {
    date: new Date().toISOString(),
    mode: smoke ? 'smoke' : 'full',
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      nginx: nginxBin ? nginxVersion(nginxBin) : null,
      oauth2Proxy: o2pBin ? `${OAUTH2_PROXY_VERSION} (${goVersion() ?? 'go'})` : null,
      loadGenerator: process.env.BENCH_LOADGEN === 'autocannon' ? 'autocannon' : loadGenerator(),
    },
    gatewayCredential: auth.kind,
    peersRunAs: runner.kind,
    parameters: { ...P, workers: WORKERS },
    notices,
    rows,
    targets,
    seconds: Math.round((Date.now() - started) / 1000),
  };
  say('bench: stopping the peers');
  await stopAll();
  say('bench: stopped');
  printTable(results);
  writeFileSync(outFile, JSON.stringify(results, null, 2) + '\n');
  say(`bench: wrote ${outFile} (${results.seconds} s)`);
  if (process.env.BENCH_KEEP_LOGS === '1') say(`bench: logs kept in ${logDir}`);
  else rmSync(logDir, { recursive: true, force: true });
}

function median(values: number[]): number {
  const finite = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (finite.length === 0) return NaN;
  const mid = finite.length >> 1;
  return finite.length % 2 ? finite[mid]! : (finite[mid - 1]! + finite[mid]!) / 2;
}

function status(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', () => resolve(0));
    req.setTimeout(5_000, () => req.destroy());
  });
}

const fmt = (ms: number) => (Number.isFinite(ms) ? `${ms.toFixed(2)} ms` : '-');

process.once('exit', killAllSync);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    process.stderr.write(`bench: ${signal}, stopping the peers\n`);
    stopAll().finally(() => process.exit(130));
  });

main().then(
  () => process.exit(0),
  async (err: Error) => {
    process.stderr.write(`bench failed: ${err.stack ?? err.message}\n`);
    await stopAll();
    process.exit(1);
  },
);
