// The gateway's parts wired together once: what `npm start` runs (gateway/main.ts), in production
// and in the sandbox. A request goes gateway/http/server.ts -> gateway/pipeline/handle.ts (its steps
// are listed there) -> gateway/upstream/proxy.ts. The live settings are one LivePolicy every part
// reads once per request; a new one is swapped in whole, audited, and what is open judged again.
import type http from 'node:http';
import express from 'express';
import { KNOWN_VARIABLES, type Settings } from '../config/settings.js';
import { LivePolicy, policyChanges, policyVariables, snapshotOf, type PolicySnapshot } from '../config/policy.js';
import { watchPolicyFile, type PolicyWatch } from './policy-watch.js';
import type { PolicyStatus } from './operations/operations.js';
import { redisTarget } from '../config/redis.js';
import { localeOf } from '../policies/routes.js';
import { Upstream } from './upstream/proxy.js';
import { UpstreamRelease } from './upstream/release.js';
import { createAuthenticator } from './auth/authenticator.js';
import type { Authenticator } from './auth/identity.js';
import { createLoginRouting, type LoginRouting, type LoginRoutingOptions } from './login/routes.js';
import { createObservability, type Observability } from './observability/observability.js';
import { createOperations, type Operations } from './operations/operations.js';
import { WebSocketTracker } from './http/websockets.js';
import { createHttpServer } from './http/server.js';
import { answerFailure } from './http/respond.js';
import type { SharedState } from './state/shared-state.js';
import { processState } from './state/process-state.js';
import { redisState } from './state/redis-state.js';
import { authenticateAnswer } from './auth/session-cookie.js';
import { PAGE_HEADERS, renderProblem } from './pages/templates.js';
import { pageLocale } from './pages/locale.js';
import { RequestSteps } from './pipeline/handle.js';

/** The live switches Open WebUI also holds, under its own names, read once at its start. */
const UPSTREAM_CEILING: Record<string, string> = {
  CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'BYPASS_ADMIN_ACCESS_CONTROL',
  CHATUI_ENABLE_ADMIN_EXPORT: 'ENABLE_ADMIN_EXPORT',
};

export interface GatewayOptions {
  obs?: Observability;
  authenticator?: Authenticator;
  loginRouting?: LoginRouting;
  /** where ended sessions and rate limits live; default from REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES */
  sharedState?: SharedState;
  /** the login routing's clock and Keycloak client settings (tests move the catalog cache's clock) */
  loginRoutingOptions?: Pick<LoginRoutingOptions, 'now' | 'fetch' | 'timeoutMs' | 'retryMs'>;
  /** the live policy; default: settings.policy, followed in POLICY_FILE */
  policy?: LivePolicy;
}

export interface GatewayParts {
  settings: Settings;
  /** the live settings in force: `policy.current` */
  policy: LivePolicy;
  obs: Observability;
  upstream: Upstream;
  authenticator: Authenticator;
  loginRouting: LoginRouting;
  sharedState: SharedState;
}

export interface Gateway extends GatewayParts {
  server: http.Server;
  control: express.Express;
  /** /healthz, /readyz, /metrics (mounted on the control app unless METRICS_PORT) and the drift check. */
  ops: Operations;
  listen(port?: number, host?: string): Promise<{ port: number; url: string }>;
  /** Listen, then read the upstream's release and start the drift check and the metrics listener. */
  start(port?: number, host?: string): Promise<{ port: number; url: string; metricsUrl?: string }>;
  /** Proxied WebSockets (and upgrades under way) still open. */
  openWebSockets(): number;
  /** Read POLICY_FILE now (SIGHUP); without one, say there is nothing to read. */
  reloadPolicy(): void;
  /** The policy in force and what became of POLICY_FILE, as /readyz shows it. */
  policyStatus(): PolicyStatus;
  close(): Promise<void>;
}

function warnWorkersWithoutRedis(settings: Settings, obs: Observability): void {
  obs.log.warn(
    { workers: settings.server.workers },
    'GATEWAY_WORKERS > 1 without REDIS_URL: a session logged out in one worker stays usable in the others until its next refresh; set REDIS_URL',
  );
}

/**
 * Open WebSockets follow their sessions: judged again when one changes here, and on a timer for
 * what happened on other instances and for expiry (gateway/http/websockets.ts).
 */
function trackWebSockets(settings: Settings, policy: LivePolicy, sharedState: GatewayParts['sharedState'], obs: Observability): WebSocketTracker {
  return new WebSocketTracker({
    checkEveryMs: settings.oidc.socketCheckSeconds * 1000,
    settle: () => sharedState.settle(),
    closedForSession: (caller, reason) => obs.log.info({ event: 'websocket-closed', caller, reason }, 'WebSocket closed: its session ended or changed'),
    closedForPolicy: (caller, reason, rule) =>
      obs.audit.warn({ event: 'policy-cut', rule, caller, transport: 'websocket', version: policy.current.version }, `WebSocket closed: ${reason}`),
  });
}

/** The gateway's own routes: sign-in, login routing, operations; an unknown /auth/ address a page. */
function controlApp(parts: GatewayParts, ops: Operations): express.Express {
  const { authenticator, loginRouting, obs } = parts;
  const control = express();
  control.disable('x-powered-by');
  control.set('trust proxy', false);
  control.set('etag', false);
  if (loginRouting.startCheck) control.use(loginRouting.startCheck);
  control.use(authenticator.router);
  control.use(loginRouting.router);
  ops.mount(control);
  control.use((req, res) => {
    // A browser at an unknown /auth/... address gets a page with the way to sign in; API clients JSON.
    if (req.method === 'GET' && req.accepts(['json', 'html']) === 'html' && /^(\/[^/]+)?\/auth(\/|$)/.test(req.path)) {
      const locale = pageLocale(localeOf(req.path), req.headers['accept-language']);
      return void res
        .status(404)
        .set(PAGE_HEADERS)
        .send(renderProblem({ locale, kind: 'not-found' }));
    }
    res.status(404).json({ detail: 'Not Found' });
  });
  control.use((err: Error, req: express.Request, res: express.Response, _next: express.NextFunction) => answerFailure(res, err, obs, { route: req.path }));
  return control;
}

/** Operations' probes, one per dependency. */
function operationsOf(parts: GatewayParts, release: UpstreamRelease, policyStatus: () => PolicyStatus): Operations {
  const { settings, policy, obs, upstream, authenticator, loginRouting, sharedState } = parts;
  return createOperations(
    settings,
    policy,
    {
      upstream: upstream.calls,
      identityProvider: () => authenticator.ready(),
      catalog: () => loginRouting.ready(),
      sharedState: () => sharedState.ready(),
      upstreamRelease: () => release.check(),
      policy: policyStatus,
    },
    obs,
  );
}

/** A policy applied: shown in the metrics, audited, and the requests and WebSockets under way judged again. */
function followPolicy(policy: LivePolicy, obs: Observability, pipeline: RequestSteps): void {
  const shown = (p: PolicySnapshot) => {
    obs.metrics.policyInfo.reset();
    obs.metrics.policyInfo.set({ version: p.version, source: p.source }, 1);
    obs.metrics.policyAppliedAt.set(p.appliedAt / 1000);
  };
  shown(policy.current);
  policy.onChange((next, previous) => {
    shown(next);
    const changes = policyChanges(previous, next);
    const fields = { event: 'policy-applied', version: next.version, previousVersion: previous.version, source: next.source, changes };
    obs.audit.info(fields, 'live settings applied');
    // Open WebUI reads its own switches at its start: the gateway narrows at once, never widens past them
    for (const c of changes.filter((c) => UPSTREAM_CEILING[c.setting] && c.to === 'true'))
      obs.log.warn(
        { event: 'policy-widened', setting: c.setting, version: next.version },
        `${c.setting}=true takes effect where Open WebUI's own ${UPSTREAM_CEILING[c.setting]} is true as well (Open WebUI reads it at its start)`,
      );
    if (next.logLevel !== previous.logLevel) obs.log.level = next.logLevel;
    // a request under way, an open WebSocket: judged again under the new policy
    pipeline.policyChanged(next);
  });
}

export async function createGateway(settings: Settings, options: GatewayOptions = {}): Promise<Gateway> {
  const obs = options.obs ?? createObservability({ level: settings.policy.logLevel, auditFile: settings.log.auditFile });
  const policy = options.policy ?? new LivePolicy(snapshotOf(settings.policy, settings.policySources.file ? 'file' : 'environment', Date.now()));
  // IDLE_TIMEOUT_MS also bounds silence inside an upstream answer: a stream that stalls is cut.
  // Never below UPSTREAM_TIMEOUT_MS: waiting for the upstream's headers is silence on both sockets,
  // and a slow answer (a long non-streamed completion) must get its 504 only when that limit says so.
  const idleTimeoutMs = Math.max(settings.server.idleTimeoutMs, settings.upstream.timeoutMs + 1_000);
  const upstream = new Upstream({ ...settings.upstream, idleTimeoutMs }, obs);
  const redis = redisTarget(settings);
  const sharedState = options.sharedState ?? (redis ? await redisState(redis, obs) : processState(obs));
  if (!redis && settings.server.workers > 1) warnWorkersWithoutRedis(settings, obs);
  const authenticator = options.authenticator ?? (await createAuthenticator(settings, obs, sharedState));
  const loginRouting =
    options.loginRouting ??
    (await createLoginRouting(settings, policy, obs, {
      ...options.loginRoutingOptions,
      shared: sharedState,
      signedIn: async (req, res) => authenticateAnswer((r, scope) => authenticator.authenticate(r, scope), req, res),
    }));
  const parts: GatewayParts = { settings, policy, obs, upstream, authenticator, loginRouting, sharedState };
  // the Open WebUI release behind the gateway: read by operations, its status read by the pipeline
  const release = new UpstreamRelease(upstream.calls, obs, { policy: () => policy.current.upstreamRelease });
  let watch: PolicyWatch | undefined;
  const policyStatus = (): PolicyStatus => {
    if (watch) return watch.status();
    const now = policy.current;
    return { version: now.version, appliedAt: new Date(now.appliedAt).toISOString(), source: now.source };
  };
  const ops = operationsOf(parts, release, policyStatus);

  const control = controlApp(parts, ops);

  const websockets = trackWebSockets(settings, policy, sharedState, obs);
  authenticator.onSessionChange?.((sessionId) => websockets.recheck(sessionId));
  const pipeline = new RequestSteps({ settings, policy, obs, upstream, release, authenticator, loginRouting, control, websockets });
  followPolicy(policy, obs, pipeline);
  const front = createHttpServer({ server: settings.server, obs, pipeline, websockets, idleTimeoutMs });

  let opened = false;
  const listen = (port = settings.listen.port, host = settings.listen.host) => {
    if (!opened) {
      opened = true;
      const file = settings.policySources.file;
      const now = policy.current;
      obs.audit.info(
        { event: 'policy-applied', version: now.version, source: now.source, ...(file ? { file } : {}), values: policyVariables(now) },
        'live settings in force at start',
      );
      if (file)
        watch = watchPolicyFile({ live: policy, sources: { ...settings.policySources, file }, known: KNOWN_VARIABLES, warnings: settings.policyWarnings, obs });
    }
    return front.listen(port, host);
  };
  return {
    ...parts,
    server: front.server,
    control,
    ops,
    listen,
    async start(port?: number, host?: string) {
      const listening = await listen(port, host);
      const { metricsUrl } = await ops.start();
      return { ...listening, ...(metricsUrl ? { metricsUrl } : {}) };
    },
    openWebSockets: () => websockets.size,
    reloadPolicy() {
      if (watch) return watch.reload('signal');
      obs.log.info(
        { event: 'policy-unchanged', source: 'signal', version: policy.current.version },
        'SIGHUP: no POLICY_FILE to read; the live settings come from the environment',
      );
    },
    policyStatus,
    async close() {
      watch?.close();
      await ops.stop();
      void sharedState.close();
      await front.close(settings.server.shutdownGraceMs);
      upstream.close();
      pipeline.clear();
      await authenticator.close();
      await loginRouting.close();
    },
  };
}
