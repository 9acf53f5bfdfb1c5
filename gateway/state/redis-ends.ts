// Ended sessions written to Redis, answered once every instance refuses them and a replica has them
// (docs/design/durable-ends.md, "When an end is answered"); queued while Redis cannot take them.
import type { Cluster, Redis } from 'ioredis';
import type { Observability } from '../observability/observability.js';
import type { EndOutcome } from './shared-state.js';
import { roleOf } from './redis-connections.js';

/** How long an end waits for a replica to confirm it before it is answered as on the primary only. */
export const REPLICA_WAIT_MS = 2_000;
/** Ended entries written while Redis was down, kept for the reconnection. */
const MAX_PENDING = 100_000;
const BATCH = 500;

type Written = { at: number; replicas: number } | undefined;

/** An end waiting to be written; `settle` tells its waiter when (performance.now()) and how many replicas the primary had, or that it gave up. */
interface Pending {
  member: string;
  until: number;
  queuedAt: number;
  /** answered as not written: its write, when it comes, is logged as late */
  late: boolean;
  settle(written: Written): void;
}

export interface EndWriterParts {
  client: Redis | Cluster;
  /** opens the connection WAIT is sent on */
  writer: () => Redis | Cluster;
  publish: 'publish' | 'spublish';
  endedKey: string;
  /** written just before WAIT, in the ended set's slot */
  durableKey: string;
  obs: Pick<Observability, 'log' | 'metrics'>;
  where: string;
  leaseMs: number;
  endWaitMs: number;
  /** a write failed: the mirror is not trusted until the instance has synced again */
  lost(reason: string): void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

export class EndWriter {
  private readonly pending: Pending[] = [];
  private durableWriter: Redis | Cluster | undefined;
  private waiting: Promise<number> | undefined;
  private waitingNext: Promise<number> | undefined;

  constructor(private readonly p: EndWriterParts) {}

  /** Write and publish ended entries in one transaction; how many replicas the primary has online then. */
  async publish(entries: Array<[string, number]>): Promise<number> {
    const { client, endedKey } = this.p;
    const tx = client.multi().zadd(endedKey, 'GT', ...entries.flatMap(([member, until]) => [until, member]));
    for (const [member, until] of entries) tx[this.p.publish](endedKey, `${until} ${member}`);
    const r = await tx.role().exec();
    const failed = r?.find(([err]) => err);
    if (!r || failed) throw failed?.[0] ?? new Error('transaction aborted');
    return roleOf(r.at(-1)?.[1])?.replicas ?? 0;
  }

  /** The connection WAIT is sent on, opened once a replica is seen (never, for a Redis without replicas). */
  replicaSeen(): Redis | Cluster {
    if (!this.durableWriter) {
      this.durableWriter = this.p.writer();
      this.durableWriter.on('error', () => undefined);
    }
    return this.durableWriter;
  }

  // WAIT blocks the connection it is sent on until a replica confirms (or its time runs out), so it
  // is sent on a connection of its own, after a write of that connection's (WAIT counts what the
  // connection itself wrote, and that write follows the ended entries in the replication stream).
  // One WAIT at a time: those asked for meanwhile share the next one, so a replica that stops
  // confirming delays ends by REPLICA_WAIT_MS at most, never by a queue of WAITs.
  private confirmed(deadline: number): Promise<number> {
    if (!this.waiting) {
      const ms = Math.max(1, Math.ceil(deadline - performance.now()));
      this.waiting = this.replicaSeen()
        .pipeline()
        .set(this.p.durableKey, String(Date.now()), 'PX', 60_000)
        .wait(1, ms)
        .exec()
        .then((r) => {
          const failed = r?.find(([err]) => err);
          if (!r || failed) throw failed?.[0] ?? new Error('WAIT not answered');
          return Number(r[1]![1]);
        })
        .finally(() => (this.waiting = undefined));
      return this.waiting;
    }
    this.waitingNext ??= this.waiting
      .catch(() => 0)
      .then(() => {
        this.waitingNext = undefined;
        return this.confirmed(deadline);
      });
    return this.waitingNext;
  }

  /** The end written and published (queued first when Redis cannot take it), answered as the top of this file says. */
  async end(member: string, until: number): Promise<EndOutcome> {
    const written = await this.write(member, until, performance.now() + this.p.endWaitMs);
    if (!written) return this.told('not written');
    const { at, replicas } = written;
    // bounded here too: a Cluster that is not ready queues the WAIT until it is back, however long
    const confirming = replicas
      ? Promise.race([this.confirmed(at + REPLICA_WAIT_MS).catch(() => 0), sleep(at + REPLICA_WAIT_MS - performance.now()).then(() => 0)])
      : Promise.resolve(1);
    const [acks] = await Promise.all([confirming, sleep(at + this.p.leaseMs - performance.now())]);
    return this.told(acks > 0 ? 'durable' : 'primary only');
  }

  /** When the primary took the entry and how many replicas it had then; undefined when Redis did not by `deadline`. */
  private async write(member: string, until: number, deadline: number): Promise<Written> {
    if (this.p.client.status === 'ready') {
      try {
        const replicas = await this.publish([[member, until]]);
        return { at: performance.now(), replicas };
      } catch (err) {
        this.p.lost((err as Error).message);
      }
    }
    return this.queued(member, until, deadline);
  }

  /** Queued for the resync (redis-sync.ts flushes it), waited for until `deadline` at most. */
  private queued(member: string, until: number, deadline: number): Promise<Written> {
    if (this.pending.length >= MAX_PENDING) this.pending.shift()?.settle(undefined);
    return new Promise((resolve) => {
      const entry: Pending = { member, until, queuedAt: performance.now(), late: false, settle: () => undefined };
      const timer = setTimeout(() => entry.settle(undefined), deadline - performance.now());
      entry.settle = (written) => {
        clearTimeout(timer);
        if (!written) entry.late = true;
        entry.settle = () => undefined;
        resolve(written);
      };
      this.pending.push(entry);
    });
  }

  /** Write what was ended while Redis could not take it; the ends waiting for that go on. */
  async flush(): Promise<void> {
    while (this.pending.length) {
      const batch = this.pending.slice(0, BATCH);
      const replicas = await this.publish(batch.map((e) => [e.member, e.until]));
      const at = performance.now();
      this.pending.splice(0, batch.length);
      const late = batch.filter((e) => e.late);
      for (const e of batch) e.settle({ at, replicas });
      if (late.length) {
        const afterMs = Math.round(at - Math.min(...late.map((e) => e.queuedAt)));
        this.p.obs.log.info({ redis: this.p.where, written: late.length, afterMs }, 'ended sessions answered as not yet written are written to Redis now');
      }
    }
  }

  /** An outcome that is not durable is logged, with why, and counted. */
  private told(outcome: EndOutcome): EndOutcome {
    const { obs, where } = this.p;
    if (outcome === 'primary only') {
      obs.metrics.sessionEndsNotDurable.inc({ reason: 'replica_unconfirmed' });
      obs.log.warn(
        { event: 'session-end-not-durable', reason: 'replica_unconfirmed', redis: where },
        `ended session not confirmed by a replica within ${REPLICA_WAIT_MS} ms: after a failover it is written back by the instances that know it`,
      );
    } else if (outcome === 'not written') {
      obs.metrics.sessionEndsNotDurable.inc({ reason: 'redis_unreachable' });
      obs.log.warn(
        { event: 'session-end-not-durable', reason: 'redis_unreachable', redis: where },
        `ended session not written to Redis within ${this.p.endWaitMs} ms: answered as still being written; it is written as soon as this instance reaches Redis, and only this instance refuses it until then`,
      );
    }
    return outcome;
  }

  /** Ends still waiting are answered as not written (the instance is stopping; its connections are closed with the others). */
  close(): void {
    for (const e of this.pending) e.settle(undefined);
  }
}
