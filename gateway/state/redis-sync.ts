// The mirror of ended sessions kept in step with Redis, and when it may be trusted: a subscription
// on the primary, a lease renewed by heartbeats, a resync after any failure and a probe for failovers
// that close no connection (docs/design/sign-out-everywhere.md, "The mirror").
import type { Cluster, Redis } from 'ioredis';
import type { RedisTarget } from '../../config/redis.js';
import type { EndedMirror } from './ended-mirror.js';
import type { EndWriter } from './redis-ends.js';
import type { RedisHealth } from './redis-health.js';
import { epochNow, within } from './shared-state.js';
import { refusalHint, roleOf, type RedisConnections } from './redis-connections.js';

/** How long an answered heartbeat keeps the mirror trusted, and how often one is sent. */
export const LEASE_MS = 1_000;
const HEARTBEAT_MS = 250;
/** How often the primary holding the ended set is asked whether it is still there, and how long it has to answer. */
const PROBE_EVERY_MS = 1_000;
const PROBE_TIMEOUT_MS = 1_500;
/** how often a caller waiting for trust looks at the connections between resyncs (a reconnect under way) */
const RESYNC_LOOK_MS = 25;
const BATCH = 500;

const TIMED_OUT = Symbol('timed out');

export interface MirrorSyncParts {
  to: RedisTarget;
  conns: RedisConnections;
  endedKey: string;
  ended: EndedMirror;
  ends: EndWriter;
  health: RedisHealth;
  /** where, as logs name it */
  where: string;
  log: (fields: object, msg: string) => void;
}

export class MirrorSync {
  private synced = false;
  private subscribed = false;
  /** resyncs in flight (a newer one may have started, and returned at once, before an older one ends) */
  private resyncing = 0;
  private probing = false;
  private closed = false;
  private generation = 0;
  /** performance.now() when the newest answered heartbeat was sent */
  private heardAt = -Infinity;
  /** the heartbeat asked for by callers that met a lapsed lease, while it is under way */
  private renewing: Promise<boolean> | undefined;
  /** told when a resync makes the mirror synced again */
  private readonly syncedWaiters = new Set<() => void>();
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(private readonly p: MirrorSyncParts) {
    this.listen();
    this.timers.push(
      setInterval(() => this.beat(), HEARTBEAT_MS),
      setInterval(() => void this.probe(), PROBE_EVERY_MS),
    );
    for (const t of this.timers) t.unref();
  }

  /** The mirror may be trusted now: synced, and its lease runs. The check made on every signed-in request. */
  trusted(): boolean {
    return this.synced && performance.now() - this.heardAt < LEASE_MS;
  }

  /**
   * Trust asked for now, when it only lapsed (a stalled event loop: a late heartbeat, or a
   * connection its silence timer dropped): the resync under way awaited, then one heartbeat on
   * the subscription; shared by every caller meanwhile, within LEASE_MS in all. True when the
   * mirror may be trusted again.
   */
  renew(): Promise<boolean> {
    if (this.trusted()) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    this.renewing ??= this.trustedWithin(performance.now() + LEASE_MS).finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  // A stall longer than a connection's silence timer also drops the connections that had a command
  // in flight, maybe only after the heartbeat was answered: so until the deadline, not only once.
  private async trustedWithin(deadline: number): Promise<boolean> {
    while (!this.closed && performance.now() < deadline) {
      if (!this.synced || this.p.conns.subscription.status !== 'ready') {
        await this.resyncSeen(deadline);
        continue;
      }
      if (this.trusted()) return true;
      const sentAt = performance.now();
      const answered = this.p.conns.subscription.heartbeat().catch(() => false);
      if (await within(answered, Math.max(0, deadline - sentAt), false)) this.heardAt = Math.max(this.heardAt, sentAt);
      this.report();
      if (this.trusted()) return true;
    }
    return this.trusted();
  }

  /** Back when a resync made the mirror synced again, or after a short look. */
  private resyncSeen(deadline: number): Promise<void> {
    // a look that ends unanswered leaves the set: a long outage must not pile up its waiters
    return new Promise<void>((resolve) => {
      const told = () => {
        clearTimeout(timer);
        this.syncedWaiters.delete(told);
        resolve();
      };
      const timer = setTimeout(told, Math.max(0, Math.min(RESYNC_LOOK_MS, deadline - performance.now())));
      this.syncedWaiters.add(told);
    });
  }

  private connected(): boolean {
    return this.p.conns.client.status === 'ready' && this.p.conns.subscription.status === 'ready';
  }

  /** Not trusted until the next resync; `reason` (undefined: keep the last one) is what operators are told. */
  lose(reason: string | undefined): void {
    this.synced = false;
    this.p.health.set(false, reason);
  }

  /** The health told whether the mirror is trusted now (a lease that ran out is a loss too). */
  private report(): void {
    const trusted = this.trusted();
    this.p.health.set(trusted, trusted || !this.synced ? undefined : `the subscription did not answer a heartbeat within ${LEASE_MS} ms`);
  }

  private listen(): void {
    const { client, subscription } = this.p.conns;
    for (const conn of [client, subscription]) {
      // a close that follows an error keeps the error as the reason (a refused sign-in says WRONGPASS)
      let failed = false;
      conn.on('ready', () => {
        failed = false;
        void this.resync();
      });
      conn.on('error', (err: Error & { lastNodeError?: Error }) => {
        failed = true;
        // a Cluster's "Failed to refresh slots cache." carries what the nodes said in lastNodeError
        const message = err.lastNodeError ? `${err.message} (${err.lastNodeError.message})` : err.message;
        this.lose(message + refusalHint(this.p.to, message));
      });
      conn.on('close', () => {
        if (conn === subscription) this.subscribed = false;
        this.lose(failed ? undefined : 'connection closed');
      });
    }
    subscription.on('ended', (message: string) => {
      const space = message.indexOf(' ');
      const until = Number(message.slice(0, space));
      if (space > 0 && Number.isFinite(until)) this.p.ended.add(message.slice(space + 1), until);
    });
    // A Cluster primary's connection ended: the cluster refuses every slot once it is marked failing
    // (with cluster-require-full-coverage, the default), so the state is not trusted from now until
    // a probe answers again.
    if ('cluster' in this.p.to) {
      (client as Cluster).on('-node', (node: Redis) => {
        if (!node.options.readOnly && !this.closed) this.lose(`cluster primary ${node.options.host}:${node.options.port} lost`);
      });
    }
  }

  /** One heartbeat: its answer renews the lease; an answer that is not a subscribed one drops the subscription. */
  private beat(): void {
    const { subscription } = this.p.conns;
    if (!this.closed && subscription.status === 'ready') {
      const sentAt = performance.now();
      const expected = this.subscribed;
      void subscription.heartbeat().then((ok) => {
        if (ok) this.heardAt = Math.max(this.heardAt, sentAt);
        else if (expected && this.subscribed && !this.closed) {
          this.lose('the subscription to ended sessions was ended by Redis');
          subscription.drop();
        }
        this.report();
      });
    }
    this.report();
  }

  /** Subscribe, and renew the lease from there. */
  private async subscribe(): Promise<void> {
    const { subscription } = this.p.conns;
    await subscription.subscribe();
    this.subscribed = true;
    const sentAt = performance.now();
    if (!(await subscription.heartbeat())) throw new Error('the subscription to ended sessions did not answer');
    this.heardAt = Math.max(this.heardAt, sentAt);
  }

  private async resync(): Promise<void> {
    const mine = ++this.generation;
    if (!this.connected()) return;
    this.resyncing++;
    try {
      await this.subscribe();
      await this.p.ends.flush();
      await this.writeBack(await this.reread());
      // Ends made meanwhile (this instance was not yet trusted) are written before it is: nothing
      // is awaited between the last of them and the switch.
      await this.p.ends.flush();
      this.checkPlacement();
      if (mine === this.generation && this.connected()) {
        this.synced = true;
        this.report();
        for (const told of [...this.syncedWaiters]) told();
      }
    } catch (err) {
      this.lose((err as Error).message);
    } finally {
      this.resyncing--;
    }
  }

  /** The whole ended set read into the mirror; what the mirror holds and Redis lacks. */
  private async reread(): Promise<Array<[string, number]>> {
    const { client } = this.p.conns;
    const { endedKey, ended } = this.p;
    const now = epochNow();
    await client.zremrangebyscore(endedKey, '-inf', now);
    const all = await client.zrangebyscore(endedKey, now + 1, '+inf', 'WITHSCORES');
    const held = new Map<string, number>();
    for (let i = 0; i + 1 < all.length; i += 2) {
      ended.add(all[i]!, Number(all[i + 1]));
      held.set(all[i]!, Number(all[i + 1]));
    }
    ended.sweep(now);
    return [...ended.entries()].filter(([member, until]) => (held.get(member) ?? 0) < until);
  }

  /**
   * What this instance knows and Redis lacks (a replica promoted before it had them, a Redis
   * restarted empty) goes back, published: an instance that re-read before it came back learns it now.
   */
  private async writeBack(missing: Array<[string, number]>): Promise<void> {
    for (let i = 0; i < missing.length; i += BATCH) await this.p.ends.publish(missing.slice(i, i + BATCH));
    if (missing.length) this.p.log({ redis: this.p.where, written: missing.length }, 'ended sessions Redis lacked written back');
  }

  /** The subscription listens where the client writes; if not, it is made again (and this throws). */
  private checkPlacement(): void {
    const { subscription, primary } = this.p.conns;
    const listening = subscription.server();
    const writing = primary();
    if (listening && writing && listening === writing) return;
    subscription.drop();
    throw new Error(`the subscription listens on ${listening ?? 'no server'}, the ended sessions are written to ${writing ?? 'no server'}`);
  }

  /** Whether the server holding the ended set answers and is a primary; its replicas, when it says. */
  private async askPrimary(): Promise<{ primary: boolean; replicas: number } | undefined> {
    const { client } = this.p.conns;
    // A Cluster follows the slot by itself (MOVED); one server or Sentinel's primary says its role.
    if ('cluster' in this.p.to) {
      await client.exists(this.p.endedKey);
      return undefined;
    }
    const r = await client.pipeline().exists(this.p.endedKey).role().exec();
    const [exists, role] = r ?? [];
    if (exists?.[0]) throw exists[0];
    // ROLE refused (a managed Redis may rename it): not a reason to distrust the state.
    return role?.[0] ? undefined : roleOf(role?.[1]);
  }

  private async probe(): Promise<void> {
    // Not connected: the connections' own events say so, and their 'ready' starts the resync.
    if (this.closed || this.probing || this.resyncing || !this.connected()) return;
    this.probing = true;
    try {
      const found = await within(this.askPrimary(), PROBE_TIMEOUT_MS, TIMED_OUT);
      if (found === TIMED_OUT) throw new Error(`Redis did not answer within ${PROBE_TIMEOUT_MS} ms`);
      if (found?.primary === false) {
        // A Sentinel's connection finds the primary again through the sentinels.
        if ('sentinel' in this.p.to) (this.p.conns.client as Redis).disconnect(true);
        throw new Error('the Redis answering is a replica now, not the primary');
      }
      if (found?.replicas) this.p.ends.replicaSeen();
      this.checkPlacement();
      if (!this.synced && !this.resyncing) void this.resync();
    } catch (err) {
      this.lose((err as Error).message);
      this.p.conns.refresh();
    } finally {
      this.probing = false;
    }
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
  }
}
