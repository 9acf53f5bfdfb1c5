// What operators poll and scrape: /healthz, /readyz (a probe per dependency, shared for a second so a
// probe storm costs one), /metrics (on METRICS_PORT when set) and the policy drift check: Open WebUI
// set differently from what the gateway enforces is a deployment mistake worth a warning, though
// the gateway enforces its own values either way. What each answer says: docs/operating/operations.md.
import type { Calls } from '../upstream/calls.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Settings } from '../../config/settings.js';
import type { PolicyReader, PolicySource } from '../../config/policy.js';
import { describeRelease, releaseKeepsReady, type ReleaseStatus } from '../../policies/upstream-release.js';
import type { Observability } from '../observability/observability.js';
import { callJson, ConfigAnswer } from '../upstream/json.js';
import { LoadingCache } from '../cache/cache.js';

export interface Check {
  ok: boolean;
  detail: string;
}

export interface Readiness {
  ready: boolean;
  checks: { upstream: Check; identityProvider: Check; catalog: Check; policyDrift: Check; sharedState: Check; upstreamRelease: Check };
}

/** The live settings in force on this instance, as /readyz shows them. */
export interface PolicyStatus {
  /** a hash of the values in force: instances showing the same version judge alike */
  version: string;
  appliedAt: string;
  source: PolicySource;
  file?: string;
  /** the file as it is now was refused (it does not parse or validate): the policy above stays in force */
  refused?: { at: string; problems: string[] };
  /** what the last reading said besides (a key the environment also sets, one that needs a restart) */
  warnings?: string[];
}

/**
 * What operations read of the rest of the gateway: a probe per dependency, nothing else. The
 * gateway (gateway/app.ts) hands these over; operations imports nothing from it.
 */
export interface Probes {
  /** The chat front-end: GET /health for readiness, GET /api/config for the drift check. */
  upstream: Calls;
  /** Can the identity provider be reached? (the sign-in module's own check) */
  identityProvider(): Promise<Check>;
  /** The provider catalog's state (login routing). */
  catalog(): Check;
  /** The shared session state (Redis with REDIS_URL). */
  sharedState(): Check;
  /** Read the chat front-end's release now (GET /api/version; never throws). */
  upstreamRelease(): Promise<ReleaseStatus>;
  /** The live settings in force, and what became of POLICY_FILE (gateway/policy-watch.ts). */
  policy(): PolicyStatus;
}

/** The settings operations reads. */
export interface OperationsSettings {
  listen: Pick<Settings['listen'], 'host' | 'metricsPort'>;
  driftCheckSeconds: Settings['driftCheckSeconds'];
}

export interface Operations {
  /** Mount /healthz, /readyz and (without METRICS_PORT) /metrics on the gateway's control app. */
  mount(app: express.Express): void;
  /**
   * The release check (now, awaited, and every RELEASE_CHECK_MS), the drift check (now and every
   * DRIFT_CHECK_SECONDS) and, with METRICS_PORT, its listener.
   */
  start(): Promise<{ metricsUrl?: string }>;
  stop(): Promise<void>;
  readiness(): Promise<Readiness>;
  /** One drift check now (also what the timer runs). */
  checkDrift(): Promise<Check>;
}

const UPSTREAM_PROBE_MS = 3_000;
/** The release is read at every readiness probe, and this often besides (a gateway nobody probes still warns). */
export const RELEASE_CHECK_MS = 60_000;
/** Readiness is anonymous: callers share one probe per second, so it cannot be used to flood the upstream. */
const READINESS_CACHE_MS = 1_000;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

type OperationsPolicy = { readonly current: Pick<PolicyReader['current'], 'upstreamRelease' | 'enableAdminExport'> };
type OperationsObs = Pick<Observability, 'log' | 'metrics'>;

async function upstreamCheck(upstream: Probes['upstream']): Promise<Check> {
  const started = Date.now();
  try {
    const res = await withTimeout(upstream.call('GET', '/health', { accept: 'application/json' }), UPSTREAM_PROBE_MS, 'the chat front-end');
    if (res.status !== 200) return { ok: false, detail: `chat front-end: GET /health answered ${res.status}` };
    return { ok: true, detail: `chat front-end reachable (GET /health ${Date.now() - started} ms)` };
  } catch (err) {
    return { ok: false, detail: `chat front-end not reachable: ${(err as Error).message}` };
  }
}

async function identityCheck(probes: Probes): Promise<Check> {
  try {
    return await withTimeout(probes.identityProvider(), UPSTREAM_PROBE_MS, 'the identity provider');
  } catch (err) {
    return { ok: false, detail: (err as Error).message };
  }
}

function catalogCheck(probes: Probes): Check {
  try {
    return probes.catalog();
  } catch (err) {
    return { ok: false, detail: `provider catalog: ${(err as Error).message}` };
  }
}

/** Every dependency asked once; `drift` is the last drift check's answer (it runs on its own timer). */
async function probeReadiness(probes: Probes, policy: OperationsPolicy, drift: Check): Promise<Readiness> {
  const [up, idp, release] = await Promise.all([upstreamCheck(probes.upstream), identityCheck(probes), probes.upstreamRelease()]);
  const catalog = catalogCheck(probes);
  // Shared state (REDIS_URL) unreachable: not ready. Such an instance answers every signed-in
  // request 503, so a load balancer should send users elsewhere (an instance cut off from Redis
  // while others reach it); the body says why. When every instance has lost
  // the one Redis, all leave together: what they still serve (login pages, bearer tokens) does
  // not make them useful to the signed-in users who are the traffic.
  const shared = probes.sharedState();
  const releasePolicy = policy.current.upstreamRelease;
  const upstreamRelease = { ok: release.state === 'supported', detail: describeRelease(release, releasePolicy) };
  return {
    ready: up.ok && idp.ok && catalog.ok && shared.ok && releaseKeepsReady(releasePolicy, release),
    checks: { upstream: up, identityProvider: idp, catalog, policyDrift: drift, sharedState: shared, upstreamRelease },
  };
}

/** What the chat front-end's reported flags differ in from what the gateway enforces; undefined: it reports none. */
function driftDifferences(features: Record<string, unknown>, enforced: Record<string, boolean>): string[] | undefined {
  // Open WebUI 0.12 reports its admin flags to signed-in callers only: to this anonymous check
  // they are absent, and an absent flag must not read as "matches".
  if (!Object.keys(enforced).some((kind) => typeof features[kind] === 'boolean')) return undefined;
  const differences: string[] = [];
  for (const [kind, want] of Object.entries(enforced)) {
    const have = features[kind];
    if (typeof have === 'boolean' && have !== want) differences.push(kind);
  }
  return differences;
}

/** The drift check: its last answer, and one check now (logged and counted when it changes). */
function driftCheck(settings: OperationsSettings, policy: OperationsPolicy, upstream: Probes['upstream'], obs: OperationsObs) {
  let drift: Check = {
    ok: true,
    detail: settings.driftCheckSeconds > 0 ? 'not checked yet' : 'drift check off (DRIFT_CHECK_SECONDS=0)',
  };
  function judged(features: Record<string, unknown>): Check {
    const enforced = { enable_admin_export: policy.current.enableAdminExport, enable_admin_chat_access: false };
    const differing = driftDifferences(features, enforced);
    if (differing === undefined)
      return {
        ok: true,
        detail:
          'not checked: the chat front-end does not report ENABLE_ADMIN_EXPORT or ENABLE_ADMIN_CHAT_ACCESS to anonymous callers (Open WebUI 0.12); the gateway enforces its own values',
      };
    const differences = differing.map(
      (kind) => `${kind.toUpperCase()} is ${String(features[kind])} upstream, the gateway enforces ${enforced[kind as keyof typeof enforced]}`,
    );
    for (const kind of differing) obs.metrics.driftEvents.inc({ kind });
    if (differences.length) {
      const detail = `policy drift: ${differences.join('; ')}`;
      obs.log.warn({ event: 'policy-drift', differences }, `${detail}. The gateway keeps enforcing its own values; set the chat front-end to match.`);
      return { ok: false, detail };
    }
    if (!drift.ok) obs.log.info({ event: 'policy-drift-cleared' }, 'policy drift cleared: the chat front-end matches the gateway');
    return { ok: true, detail: `chat front-end matches: ENABLE_ADMIN_EXPORT=${enforced.enable_admin_export}, ENABLE_ADMIN_CHAT_ACCESS=false` };
  }
  async function check(): Promise<Check> {
    try {
      const res = await callJson(upstream, ConfigAnswer, 'GET', '/api/config', { accept: 'application/json' });
      if (res.json === undefined) throw new Error(`GET /api/config answered ${res.status}`);
      drift = judged(res.json.features ?? {});
    } catch (err) {
      const message = (err as Error).message;
      obs.log.warn({ event: 'policy-drift-check-failed', reason: message }, 'could not read the chat front-end settings for the drift check');
      drift = { ok: false, detail: `drift check failed: ${message}` };
    }
    return drift;
  }
  return { current: () => drift, check };
}

interface OperationsRoutes {
  healthz: express.RequestHandler;
  readyz: express.RequestHandler;
  metrics: express.RequestHandler;
}

function operationsRoutes(readiness: () => Promise<Readiness>, probes: Probes, obs: OperationsObs): OperationsRoutes {
  return {
    healthz: (_req, res) => {
      res.set('cache-control', 'no-store').json({ status: 'ok' });
    },
    readyz: (_req, res, next) => {
      readiness().then(
        (r) =>
          res
            .status(r.ready ? 200 : 503)
            .set('cache-control', 'no-store')
            // the policy as it is at this moment, not as the shared probe found it up to a second ago
            .json({ ...r, policy: probes.policy() }),
        next,
      );
    },
    metrics: (_req, res, next) => {
      obs.metrics.registry
        .metrics()
        .then((text) => res.set('content-type', obs.metrics.registry.contentType).set('cache-control', 'no-store').send(text), next);
    },
  };
}

/** METRICS_PORT's own listener: health, readiness and metrics, nothing else. */
async function listenMetrics(settings: OperationsSettings, routes: OperationsRoutes, obs: OperationsObs): Promise<{ server: http.Server; metricsUrl: string }> {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.get('/healthz', routes.healthz);
  app.get('/readyz', routes.readyz);
  app.get('/metrics', routes.metrics);
  app.use((_req, res) => void res.status(404).json({ detail: 'Not Found' }));
  const server = http.createServer(app);
  const host = settings.listen.host;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.listen.metricsPort, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const metricsUrl = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  obs.log.info({ metricsUrl }, 'metrics and health listening on their own port');
  return { server, metricsUrl };
}

function closeServer(server: http.Server | undefined): Promise<void> {
  if (!server) return Promise.resolve();
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** `policy`: the live settings (UPSTREAM_RELEASE_POLICY, CHATUI_ENABLE_ADMIN_EXPORT), read at each check. */
export function createOperations(settings: OperationsSettings, policy: OperationsPolicy, probes: Probes, obs: OperationsObs): Operations {
  const separateMetrics = settings.listen.metricsPort > 0;
  const drift = driftCheck(settings, policy, probes.upstream, obs);
  const timers: NodeJS.Timeout[] = [];
  let metricsServer: http.Server | undefined;
  // A probe storm (every load balancer asking at once) costs one probe a second: one in flight,
  // its answer shared for READINESS_CACHE_MS. The probe itself never fails (each check catches).
  const readinessMemo = new LoadingCache<Readiness>({
    ttlMs: READINESS_CACHE_MS,
    retryMs: READINESS_CACHE_MS,
    maxEntries: 1,
    now: Date.now,
    pinned: () => true,
  });
  const readiness = () => readinessMemo.get('readiness', () => probeReadiness(probes, policy, drift.current()));
  const routes = operationsRoutes(readiness, probes, obs);
  const every = (ms: number, run: () => unknown) => timers.push(setInterval(run, ms).unref());

  return {
    mount(app) {
      app.get('/healthz', routes.healthz);
      app.get('/readyz', routes.readyz);
      if (!separateMetrics) app.get('/metrics', routes.metrics);
    },
    async start() {
      await probes.upstreamRelease();
      every(RELEASE_CHECK_MS, () => void probes.upstreamRelease());
      if (settings.driftCheckSeconds > 0) {
        void drift.check();
        every(settings.driftCheckSeconds * 1000, () => void drift.check());
      }
      if (!separateMetrics) return {};
      const listening = await listenMetrics(settings, routes, obs);
      metricsServer = listening.server;
      return { metricsUrl: listening.metricsUrl };
    },
    async stop() {
      for (const timer of timers.splice(0)) clearInterval(timer);
      const server = metricsServer;
      metricsServer = undefined;
      await closeServer(server);
    },
    readiness,
    checkDrift: drift.check,
  };
}
