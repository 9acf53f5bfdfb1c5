// Whether the shared state in Redis can be trusted, as operators are told it: the transitions
// logged once each, gateway_shared_state_up and how long it has been down, a warning while Redis
// stays unreachable (once after the first connection attempt, then every `downLogEveryMs`), and
// /readyz's detail. What decides trust is in redis-sync.ts.
import type { Observability } from '../observability/observability.js';
import { REFUSED } from './redis-connections.js';

export class RedisHealth {
  private up = false;
  private downSince: number | undefined = Date.now();
  private everUp = false;
  private lastError = 'connecting';
  private closed = false;
  private readonly timers: NodeJS.Timeout[];

  constructor(
    private readonly obs: Observability,
    private readonly where: string,
    o: { firstCheckMs: number; downLogEveryMs: number },
    /** how many ended sessions the mirror holds, for the line saying it is in sync */
    private readonly size: () => number,
  ) {
    obs.metrics.sharedStateUp.set(0);
    obs.metrics.sharedStateDownSince = () => this.downSince;
    // A Redis unreachable from the start never makes a transition: said once the first connection
    // attempt has had its time, then again every downLogEveryMs while it lasts.
    this.timers = [setTimeout(() => this.stillDown(), o.firstCheckMs), setInterval(() => this.stillDown(), o.downLogEveryMs)];
    for (const t of this.timers) t.unref();
  }

  /** Trusted or not now; `reason` (why not) is kept for the logs and /readyz. */
  set(up: boolean, reason?: string): void {
    // a refusal (a wrong password, a missing permission) stays the reason until Redis is reached:
    // the closes and lost nodes that follow it are its consequences
    if (reason && !(REFUSED.test(this.lastError) && !REFUSED.test(reason))) this.lastError = reason;
    if (up) this.lastError = 'connecting';
    if (up === this.up) return;
    this.up = up;
    this.obs.metrics.sharedStateUp.set(up ? 1 : 0);
    if (up) {
      const downForMs = this.downSince ? Date.now() - this.downSince : 0;
      this.obs.log.info({ redis: this.where, downForMs, ended: this.size() }, 'shared session state in sync with Redis');
      this.downSince = undefined;
      this.everUp = true;
    } else {
      this.downSince = Date.now();
      if (!this.closed)
        this.obs.log.warn({ redis: this.where, reason: this.lastError }, 'shared session state lost Redis: cookie sessions answer 503 until it is back');
    }
  }

  private stillDown(): void {
    if (this.up || this.closed || this.downSince === undefined) return;
    const seconds = Math.round((Date.now() - this.downSince) / 1000);
    this.obs.log.warn(
      { event: 'shared-state-unreachable', redis: this.where, reason: this.lastError, downForSeconds: seconds, sinceStart: !this.everUp },
      `Redis ${this.where} unreachable ${this.everUp ? `for ${seconds} s` : `since start (${seconds} s)`}: signed-in requests answer 503 and /readyz reports not ready until it is back`,
    );
  }

  ready(): { ok: boolean; detail: string } {
    if (this.up) return { ok: true, detail: `sessions and rate limits shared through Redis ${this.where}` };
    const since = this.downSince ? ` for ${Math.round((Date.now() - this.downSince) / 1000)} s` : '';
    return {
      ok: false,
      detail: `Redis ${this.where} unreachable${since}${this.everUp ? '' : ' (never reached since start)'} (${this.lastError}): signed-in requests (cookie sessions) answer 503, rate limits count per instance`,
    };
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.obs.metrics.sharedStateDownSince = () => undefined;
  }
}
