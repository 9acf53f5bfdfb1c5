// The Open WebUI release behind the gateway, read from its public GET /api/version at start, at
// every readiness check and on a timer (gateway/operations/operations.ts asks; gateway/app.ts
// wires it), and kept in one field the pipeline reads on an admin's request: never a request per
// request. What the status means is policies/upstream-release.ts; here it is read, logged (a
// warning at once and every few minutes while the release is not a checked one) and exported as
// gateway_upstream_release_supported{release}.
import type { Calls } from './calls.js';
import type { Observability } from '../observability/observability.js';
import { describeRelease, releaseLabel, releaseStatusOf, type ReleaseStatus, type UpstreamReleasePolicy } from '../../policies/upstream-release.js';
import { CHECKED_VERSIONS } from '../../policies/open-webui-releases.js';
import { parseJson, VersionAnswer } from './json.js';

/** How long GET /api/version may take before the release counts as unreachable. */
export const RELEASE_PROBE_MS = 3_000;
/** While the release is not a checked one, the warning is repeated this often (and at every change). */
export const RELEASE_WARNING_EVERY_MS = 5 * 60_000;

/** Read the release once: GET /api/version, bounded by `timeoutMs`. Never throws. */
export async function readRelease(calls: Calls, timeoutMs = RELEASE_PROBE_MS): Promise<ReleaseStatus> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`GET /api/version did not answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    const res = await Promise.race([calls.call('GET', '/api/version', { accept: 'application/json' }), timeout]);
    if (res.status !== 200) return { state: 'unreadable', why: `GET /api/version answered ${res.status}` };
    const read = parseJson(VersionAnswer, res.body.toString('utf8'));
    if (!read.ok) return { state: 'unreadable', why: `GET /api/version answered a body ${read.why}` };
    return releaseStatusOf(read.value.version);
  } catch (err) {
    return { state: 'unreachable', why: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

export interface UpstreamReleaseOptions {
  /** UPSTREAM_RELEASE_POLICY in force (a live setting) */
  policy: () => UpstreamReleasePolicy;
  timeoutMs?: number;
  warnEveryMs?: number;
  now?: () => number;
}

export class UpstreamRelease {
  /** The latest reading: a field, read by the pipeline on an admin's request; `since` it was first read so. */
  status: ReleaseStatus;
  private inFlight: Promise<ReleaseStatus> | undefined;
  private warnedAt = 0;
  private warnedFor = '';
  private readonly policy: () => UpstreamReleasePolicy;
  private readonly timeoutMs: number;
  private readonly warnEveryMs: number;
  private readonly now: () => number;

  constructor(
    private readonly calls: Calls,
    private readonly obs: Pick<Observability, 'log' | 'metrics'>,
    options: UpstreamReleaseOptions,
  ) {
    this.policy = options.policy;
    this.timeoutMs = options.timeoutMs ?? RELEASE_PROBE_MS;
    this.warnEveryMs = options.warnEveryMs ?? RELEASE_WARNING_EVERY_MS;
    this.now = options.now ?? Date.now;
    this.status = { state: 'not-read', since: this.now() };
  }

  /** Read the release now (callers at the same moment share one request). */
  check(): Promise<ReleaseStatus> {
    this.inFlight ??= readRelease(this.calls, this.timeoutMs)
      .then((status) => {
        this.report(status);
        // the same reading as before keeps the moment it was first seen (what an admin's page says)
        const same = releaseLabel(status) === releaseLabel(this.status);
        this.status = { ...status, since: same ? (this.status.since ?? this.now()) : this.now() };
        return this.status;
      })
      .finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private report(status: ReleaseStatus): void {
    const label = releaseLabel(status);
    const gauge = this.obs.metrics.upstreamReleaseSupported;
    gauge.reset();
    gauge.set({ release: label }, status.state === 'supported' ? 1 : 0);
    const before = this.status;
    const policy = this.policy();
    const fields = { release: label, supported: CHECKED_VERSIONS, policy };
    if (status.state === 'supported') {
      if (before.state !== 'supported' || before.version !== status.version) {
        const again = before.state !== 'not-read';
        this.obs.log.info({ event: 'upstream-release', ...fields }, describeRelease(status, policy) + (again ? ' (again)' : ''));
      }
      this.warnedFor = '';
      return;
    }
    const t = this.now();
    if (label !== this.warnedFor || t - this.warnedAt >= this.warnEveryMs) {
      this.warnedFor = label;
      this.warnedAt = t;
      this.obs.log.warn(
        { event: 'upstream-release-unsupported', ...fields, ...(status.state === 'unreachable' || status.state === 'unreadable' ? { why: status.why } : {}) },
        describeRelease(status, policy),
      );
    }
  }
}
