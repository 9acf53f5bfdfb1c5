// One place for logs, the audit stream and metrics.
//
// Logs are structured JSON (pino). The audit stream is a separate logger (`name: "audit"`),
// optionally written to its own file, for events a security reviewer reads: sign-ins, export
// denials, admin access to files they do not own, tenant lookups. Tokens, cookies and secrets
// are never logged: request headers are not logged at all, and the redact list covers the
// fields that could carry them.
import pino, { type Logger } from 'pino';
import { Counter, Histogram, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

export interface Observability {
  log: Logger;
  audit: Logger;
  /**
   * An audit event an anonymous client can cause (tenant lookups, failed sign-ins): at most
   * ANONYMOUS_AUDIT_PER_MINUTE lines per client a minute, the rest counted and summed up in one
   * line, so that nobody can fill the audit disk from outside. Every event is counted in metrics.
   */
  auditAnonymous(client: string, fields: { event: string } & Record<string, unknown>, msg: string): void;
  metrics: Metrics;
  close(): Promise<void>;
}

/** Audit lines one anonymous client may cause per minute; the rest are counted (docs/operating/operations.md, "Audit events"). */
export const ANONYMOUS_AUDIT_PER_MINUTE = 20;
/** Clients tracked per minute; past it, further clients' events are counted but not written. */
const ANONYMOUS_AUDIT_CLIENTS = 50_000;

/**
 * Per client and minute: which anonymous audit lines are written, and what was held back.
 * Not rate-limiter-flexible (used for the tenant lookup): this one must stay bounded under a flood of
 * distinct spoofed clients, answer synchronously on the request path and report what it held back
 * per client. Measured (200,000 distinct clients in a minute): RateLimiterMemory kept 91 MB of heap
 * (a record and a timer per key) at 2.4 us per event; this class stops tracking at 50,000 clients
 * and costs 0.3 us.
 */
export class AnonymousAuditLimiter {
  private windowStart = 0;
  private readonly counts = new Map<string, number>();
  private overflow = 0;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Count one event of `client`: true when its line is to be written. `rollover` receives the last minute's held-back counts. */
  take(client: string, rollover: (held: Array<{ client: string; suppressed: number }>) => void): boolean {
    const t = this.now();
    if (t - this.windowStart >= 60_000) {
      const held = [...this.counts].filter(([, n]) => n > this.perMinute).map(([c, n]) => ({ client: c, suppressed: n - this.perMinute }));
      if (this.overflow) held.push({ client: '(untracked clients)', suppressed: this.overflow });
      if (held.length) rollover(held);
      this.counts.clear();
      this.overflow = 0;
      this.windowStart = t;
    }
    const n = this.counts.get(client);
    if (n === undefined && this.counts.size >= ANONYMOUS_AUDIT_CLIENTS) {
      this.overflow++;
      return false;
    }
    this.counts.set(client, (n ?? 0) + 1);
    return (n ?? 0) < this.perMinute;
  }
}

export interface Metrics {
  registry: Registry;
  requests: TallyCounter<'route_class' | 'status'>;
  latency: Histogram<'route_class'>;
  policyDecisions: TallyCounter<'action' | 'rule'>;
  driftEvents: Counter<'kind'>;
  upstreamErrors: Counter<'kind'>;
  cache: TallyCounter<'cache' | 'result'>;
  /** checks of an identity's upstream token after Open WebUI answered it 401 (gateway/upstream/accounts.ts), by what they found */
  upstreamTokenChecks: Counter<'result'>;
  /** identities signed in again at Open WebUI before their cached sign-in expired, by why Open WebUI refused its token */
  upstreamSignInRenewals: Counter<'reason'>;
  openWebSockets: Gauge;
  anonymousAudit: Counter<'event' | 'written'>;
  sharedStateUp: Gauge;
  /** when the shared state (Redis) became unreachable, undefined while it is fine: read at scrape time */
  sharedStateDownSince: () => number | undefined;
  sessionChecksUnavailable: Counter;
  /** the realm asked about bearer tokens' sessions (gateway/auth/bearer-introspection.ts), by result: active, ended, unavailable */
  bearerIntrospections: Counter<'result'>;
  /** sessions ended, once each, where the end was decided (gateway/auth/session-end.ts `SESSION_END_REASONS` names the reasons) */
  sessionsEnded: Counter<'reason'>;
  /** ends answered before they were durable in Redis, by why (gateway/state/redis-ends.ts) */
  sessionEndsNotDurable: Counter<'reason'>;
  /** full collections run once the gateway was quiet (QUIET_GC_MS, gateway/http/quiet-gc.ts) */
  quietCollections: Counter;
  /** 1 while the Open WebUI release behind the gateway is one its route table was checked against (gateway/upstream/release.ts) */
  upstreamReleaseSupported: Gauge<'release'>;
  /** 1 for the live settings in force (label version: their hash; source: environment, file or signal) */
  policyInfo: Gauge<'version' | 'source'>;
  /** when the policy in force was applied, in seconds since the epoch */
  policyAppliedAt: Gauge;
  /** POLICY_FILE readings refused (the policy in force stayed) */
  policyRefused: Counter;
}

/**
 * A two-label counter bumped on every request. `tally(a, b)` adds to a plain map (prom-client
 * checks and hashes the label object on every `inc`, a cost the proxy paid several times per
 * request); the tallies are handed to prom-client when the registry is read (/metrics), so a
 * scrape sees every count. `inc` works as usual.
 */
export class TallyCounter<L extends string> extends Counter<L> {
  private readonly pending = new Map<string, { labels: Partial<Record<L, string>>; n: number }>();
  private readonly names: readonly [L, L];

  constructor(config: { name: string; help: string; labelNames: readonly [L, L]; registers: Registry[] }) {
    super({
      ...config,
      collect(this: Counter<L>) {
        (this as TallyCounter<L>).handOver();
      },
    });
    this.names = config.labelNames;
  }

  /** Count one, with the label values in `labelNames` order. */
  tally(first: string, second: string): void {
    const key = first + '\u0000' + second;
    const p = this.pending.get(key);
    if (p) p.n++;
    else this.pending.set(key, { labels: { [this.names[0]]: first, [this.names[1]]: second } as Partial<Record<L, string>>, n: 1 });
  }

  private handOver(): void {
    for (const p of this.pending.values()) {
      if (p.n > 0) this.inc(p.labels, p.n);
      p.n = 0;
    }
  }
}

const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'secret',
  'password',
  '*.token',
  '*.secret',
  '*.password',
  'authorization',
  'cookie',
  'client_secret',
  'clientSecret',
  '*.authorization',
  '*.cookie',
  '*.access_token',
  '*.refresh_token',
  '*.id_token',
  '*.client_secret',
  '*.clientSecret',
  '*.sessionSecrets',
  'res.headers["set-cookie"]',
];

/**
 * stdout in writes of at least 4 KB, or every 250 ms: a write per line (an fs.write handed to
 * libuv's threads) cost a proxied request about 35 us (docs/design/cost-per-request.md). What is
 * left goes out when the process exits (pino's exit hook); audit lines go out at once (below).
 */
const STDOUT_WRITES = { dest: 1, minLength: 4096, periodicFlush: 250 };

export function createObservability(options: {
  level: string;
  auditFile?: string;
  destination?: pino.DestinationStream;
  /** where the lines go without `destination`: stdout (a test gives a file's) */
  fd?: number;
}): Observability {
  const { log, audit, stdout, auditDestination } = createLoggers(options);
  const metrics = createMetrics();
  const anonymous = new AnonymousAuditLimiter(ANONYMOUS_AUDIT_PER_MINUTE);
  const heldBack = (held: Array<{ client: string; suppressed: number }>) => {
    for (const h of held)
      audit.warn(
        { event: 'anonymous-audit-suppressed', client: h.client, suppressed: h.suppressed, windowSeconds: 60 },
        'anonymous audit events held back (rate)',
      );
  };
  return {
    log,
    audit,
    auditAnonymous(client, fields, msg) {
      const written = anonymous.take(client, heldBack);
      metrics.anonymousAudit.inc({ event: fields.event, written: written ? 'yes' : 'no' });
      if (written) audit.info({ ...fields, client }, msg);
    },
    metrics,
    async close() {
      stdout?.flush();
      if (auditDestination) {
        auditDestination.flushSync?.();
        auditDestination.end();
      }
    },
  };
}

/** The log and the audit stream, and the destinations that must be flushed on close. */
function createLoggers(options: { level: string; auditFile?: string; destination?: pino.DestinationStream; fd?: number }) {
  const base = { redact: { paths: REDACT, censor: '[redacted]' }, level: options.level };
  // Silent (tests): pino's own destination, without a flush timer per instance.
  const stdout = options.destination || options.level === 'silent' ? undefined : pino.destination({ ...STDOUT_WRITES, dest: options.fd ?? 1 });
  const log = options.destination ? pino(base, options.destination) : stdout ? pino(base, stdout) : pino(base);
  const auditDestination = options.auditFile ? pino.destination({ dest: options.auditFile, sync: false, mkdir: true }) : undefined;
  const audit = auditDestination
    ? pino({ ...base, level: 'info', name: 'audit' }, auditDestination)
    : stdout
      ? pino({ ...base, level: 'info', name: 'audit' }, { write: (line: string) => (stdout.write(line), stdout.flush()) })
      : log.child({ name: 'audit' }, { level: 'info' });
  return { log, audit, stdout, auditDestination };
}

/** Every metric the gateway exports, registered in the order /metrics lists them. */
function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gateway_' });
  const metrics: Metrics = {
    registry,
    ...trafficMetrics(registry),
    ...sessionStateMetrics(registry),
    ...processMetrics(registry),
  };
  new Gauge({
    name: 'gateway_shared_state_unreachable_seconds',
    help: 'How long the shared session state (Redis) has been unreachable, 0 while it is reachable (or not used)',
    registers: [registry],
    collect(this: Gauge) {
      const since = metrics.sharedStateDownSince();
      this.set(since === undefined ? 0 : (Date.now() - since) / 1000);
    },
  });
  return metrics;
}

/** Requests, the decisions taken on them, the upstream's failures, caches, WebSockets, anonymous audit events. */
function trafficMetrics(
  registry: Registry,
): Pick<
  Metrics,
  | 'requests'
  | 'latency'
  | 'policyDecisions'
  | 'driftEvents'
  | 'upstreamErrors'
  | 'cache'
  | 'upstreamTokenChecks'
  | 'upstreamSignInRenewals'
  | 'openWebSockets'
  | 'anonymousAudit'
> {
  return {
    requests: new TallyCounter({
      name: 'gateway_requests_total',
      help: 'Requests by route class and status',
      labelNames: ['route_class', 'status'],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'gateway_request_duration_seconds',
      help: 'Time to response headers, by route class',
      labelNames: ['route_class'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    }),
    policyDecisions: new TallyCounter({
      name: 'gateway_policy_decisions_total',
      help: 'Policy decisions taken',
      labelNames: ['action', 'rule'],
      registers: [registry],
    }),
    driftEvents: new Counter({
      name: 'gateway_policy_drift_total',
      help: 'Times the upstream was found set differently from the platform policy',
      labelNames: ['kind'],
      registers: [registry],
    }),
    upstreamErrors: new Counter({ name: 'gateway_upstream_errors_total', help: 'Upstream failures by kind', labelNames: ['kind'], registers: [registry] }),
    cache: new TallyCounter({
      name: 'gateway_cache_lookups_total',
      help: 'Cache lookups by cache and result',
      labelNames: ['cache', 'result'],
      registers: [registry],
    }),
    upstreamTokenChecks: new Counter({
      name: 'gateway_upstream_token_checks_total',
      help: 'Checks of the upstream token the gateway supplied, after Open WebUI answered 401 to it: refused (renewed), accepted (the 401 was the route\u2019s own), unanswered',
      labelNames: ['result'],
      registers: [registry],
    }),
    upstreamSignInRenewals: new Counter({
      name: 'gateway_upstream_signin_renewals_total',
      help: 'Identities signed in again at Open WebUI before their cached sign-in expired, by why Open WebUI refused its token (revoked, expired, account-gone, email-changed, refused)',
      labelNames: ['reason'],
      registers: [registry],
    }),
    openWebSockets: new Gauge({ name: 'gateway_websockets_open', help: 'WebSockets currently proxied', registers: [registry] }),
    anonymousAudit: new Counter({
      name: 'gateway_anonymous_audit_events_total',
      help: 'Audit events anonymous clients caused, written or held back',
      labelNames: ['event', 'written'],
      registers: [registry],
    }),
  };
}

/** The shared session state (Redis), the sessions it ends, the realm asked about bearer tokens' sessions. */
function sessionStateMetrics(
  registry: Registry,
): Pick<Metrics, 'sharedStateUp' | 'sharedStateDownSince' | 'sessionChecksUnavailable' | 'bearerIntrospections' | 'sessionsEnded' | 'sessionEndsNotDurable'> {
  return {
    sharedStateUp: new Gauge({
      name: 'gateway_shared_state_up',
      help: '1 when the shared session state (Redis, or this process without REDIS_URL) can be trusted, else 0',
      registers: [registry],
    }),
    sharedStateDownSince: () => undefined,
    sessionChecksUnavailable: new Counter({
      name: 'gateway_session_checks_unavailable_total',
      help: 'Cookie-session requests answered 503 because the shared session state could not be checked',
      registers: [registry],
    }),
    bearerIntrospections: new Counter({
      name: 'gateway_bearer_introspections_total',
      help: "The realm asked whether a bearer token's session still stands (another client's token), by result: active, ended, unavailable (answered 503)",
      labelNames: ['result'],
      registers: [registry],
    }),
    sessionsEnded: new Counter({
      name: 'gateway_sessions_ended_total',
      help: 'Sessions ended, by reason (sign-out, back-channel logout, a refused refresh, ...), counted once where the end was decided',
      labelNames: ['reason'],
      registers: [registry],
    }),
    sessionEndsNotDurable: new Counter({
      name: 'gateway_session_ends_not_durable_total',
      help: 'Session ends answered before Redis had them on two servers: replica_unconfirmed (the primary only), redis_unreachable (not written yet)',
      labelNames: ['reason'],
      registers: [registry],
    }),
  };
}

/** The process and its settings: quiet collections, the Open WebUI release behind it, the live policy. */
function processMetrics(
  registry: Registry,
): Pick<Metrics, 'quietCollections' | 'upstreamReleaseSupported' | 'policyInfo' | 'policyAppliedAt' | 'policyRefused'> {
  return {
    quietCollections: new Counter({
      name: 'gateway_quiet_gc_total',
      help: 'Full garbage collections run after a burst, once nothing was in flight for QUIET_GC_MS',
      registers: [registry],
    }),
    upstreamReleaseSupported: new Gauge({
      name: 'gateway_upstream_release_supported',
      help: '1 when the Open WebUI release behind the gateway (label release: its version, or unreachable or unreadable) is one the route table was checked against, else 0',
      labelNames: ['release'],
      registers: [registry],
    }),
    policyInfo: new Gauge({
      name: 'gateway_policy_info',
      help: '1 for the live settings in force: version is a hash of their values (instances with the same version judge alike), source where they came from',
      labelNames: ['version', 'source'],
      registers: [registry],
    }),
    policyAppliedAt: new Gauge({
      name: 'gateway_policy_applied_timestamp_seconds',
      help: 'When the live settings in force were applied on this instance, in seconds since the epoch',
      registers: [registry],
    }),
    policyRefused: new Counter({
      name: 'gateway_policy_refused_total',
      help: 'Readings of POLICY_FILE refused because they did not parse or validate (the policy in force stayed)',
      registers: [registry],
    }),
  };
}
