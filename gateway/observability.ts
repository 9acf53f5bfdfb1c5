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
  metrics: Metrics;
  close(): Promise<void>;
}

export interface Metrics {
  registry: Registry;
  requests: TallyCounter<'route_class' | 'status'>;
  latency: Histogram<'route_class'>;
  policyDecisions: TallyCounter<'action' | 'rule'>;
  driftEvents: Counter<'kind'>;
  upstreamErrors: Counter<'kind'>;
  cache: TallyCounter<'cache' | 'result'>;
  openWebSockets: Gauge;
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

export function createObservability(options: { level: string; auditFile?: string; destination?: pino.DestinationStream }): Observability {
  const base = { redact: { paths: REDACT, censor: '[redacted]' }, level: options.level };
  const log = options.destination ? pino(base, options.destination) : pino(base);
  const auditDestination = options.auditFile ? pino.destination({ dest: options.auditFile, sync: false, mkdir: true }) : undefined;
  const audit = auditDestination
    ? pino({ ...base, level: 'info', name: 'audit' }, auditDestination)
    : log.child({ name: 'audit' }, { level: 'info' });

  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gateway_' });
  const metrics: Metrics = {
    registry,
    requests: new TallyCounter({ name: 'gateway_requests_total', help: 'Requests by route class and status', labelNames: ['route_class', 'status'], registers: [registry] }),
    latency: new Histogram({
      name: 'gateway_request_duration_seconds',
      help: 'Time to response headers, by route class',
      labelNames: ['route_class'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    }),
    policyDecisions: new TallyCounter({ name: 'gateway_policy_decisions_total', help: 'Policy decisions taken', labelNames: ['action', 'rule'], registers: [registry] }),
    driftEvents: new Counter({ name: 'gateway_policy_drift_total', help: 'Times the upstream was found set differently from the platform policy', labelNames: ['kind'], registers: [registry] }),
    upstreamErrors: new Counter({ name: 'gateway_upstream_errors_total', help: 'Upstream failures by kind', labelNames: ['kind'], registers: [registry] }),
    cache: new TallyCounter({ name: 'gateway_cache_lookups_total', help: 'Cache lookups by cache and result', labelNames: ['cache', 'result'], registers: [registry] }),
    openWebSockets: new Gauge({ name: 'gateway_websockets_open', help: 'WebSockets currently proxied', registers: [registry] }),
  };
  return {
    log,
    audit,
    metrics,
    async close() {
      if (auditDestination) {
        auditDestination.flushSync?.();
        auditDestination.end();
      }
    },
  };
}

/** A silent set for tests and tools that do not want output. */
export function silentObservability(): Observability {
  return createObservability({ level: 'silent' });
}
