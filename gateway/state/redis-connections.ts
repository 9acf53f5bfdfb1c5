// The connections the shared state holds to Redis, for each topology (one server, Sentinel,
// Cluster): the client, the subscription to ended sessions, and a connection of its own for WAIT,
// each bounded in how long it waits for a server that does not answer.
import { EventEmitter } from 'node:events';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { RedisClusterSettings, RedisNode, RedisTarget } from '../../config/redis.js';
import { urlWithoutCredentials } from '../../config/redact.js';

/**
 * `redis://user:secret@host:port/db` as it may be logged: `redis://host:port/db`. Everything
 * between `//` and the last '@' goes, however a URL parser would split it (config/redact.ts).
 */
export function redactedRedisUrl(url: string): string {
  return urlWithoutCredentials(url);
}

const nodeList = (nodes: RedisNode[]) => nodes.map((n) => `${n.host.includes(':') ? `[${n.host}]` : n.host}:${n.port}`).join(',');

/** Where the state lives, as logs and /readyz name it: never a credential. */
export function redisWhere(target: string | RedisTarget): string {
  if (typeof target === 'string') return redactedRedisUrl(target);
  if ('url' in target) return redactedRedisUrl(target.url);
  if ('sentinel' in target) return `sentinel ${target.sentinel.name} at ${nodeList(target.sentinel.sentinels)}${target.sentinel.tls ? ' (TLS)' : ''}`;
  return `cluster ${nodeList(target.cluster.nodes)}${target.cluster.tls ? ' (TLS)' : ''}`;
}

/** Redis refused the gateway's sign-in or a command. */
export const REFUSED = /\b(WRONGPASS|NOAUTH|NOPERM)\b/;

/**
 * What to check when Redis refused the gateway's sign-in or a command (WRONGPASS, NOAUTH, NOPERM),
 * by which servers refused it: the sentinels (ioredis says "All sentinels are unreachable") or the
 * data nodes. Empty for any other error.
 */
export function refusalHint(to: RedisTarget, message: string): string {
  const word = REFUSED.exec(message)?.[1];
  if (!word) return '';
  if (word === 'NOPERM') return ': the ACL user lacks a permission the gateway needs (docs/operating/settings.md, ACL users)';
  if ('url' in to) return ': Redis refused the sign-in, check the user and password in REDIS_URL';
  if ('sentinel' in to && /sentinels/i.test(message)) return ': the sentinels refused the sign-in, check REDIS_SENTINEL_USERNAME and REDIS_SENTINEL_PASSWORD';
  return ': the data nodes refused the sign-in, check REDIS_USERNAME and REDIS_PASSWORD';
}

/**
 * A connection waiting for an answer that hears nothing from its server for this long is dropped
 * and made again (ioredis's socketTimeout): a hung server, a partition, a server that accepts and
 * never answers. Every command connection has one; the subscription is pinged four times a second,
 * so it has one too.
 */
export const SOCKET_TIMEOUT_MS = 1_000;
/** How long a sentinel has to say where the primary is before the next one is asked. */
const SENTINEL_TIMEOUT_MS = 1_000;
/** How long a Cluster node has to give its slot map, and how often a Cluster subscription that is down reads it. */
const SLOTS_TIMEOUT_MS = 500;
const FOLLOW_MS = 250;
const CONNECT_TIMEOUT_MS = 2_000;

/** The ended sessions' channel, listened to on the server that holds the ended set. */
export interface Subscription extends EventEmitter {
  readonly status: string;
  subscribe(): Promise<unknown>;
  /**
   * PING on the subscription: true when answered by a connection still subscribed. Redis answers
   * in order, so every message published before the PING reached Redis has arrived by then.
   */
  heartbeat(): Promise<boolean>;
  /** The server it listens on (host:port), compared with `RedisConnections.primary()`. */
  server(): string | undefined;
  /** Drop the connection: it is made again, to whichever server holds the ended set then. */
  drop(): void;
  disconnect(): void;
}
// Its events: 'ready', 'close', 'error' (an Error), 'ended' (a message published on the channel).

/**
 * ioredis 5 leaves the socketTimeout timer of a connection that closed armed, and when it fires it
 * destroys the connection made since (ioredis 6 clears it on close): cleared here when one closes.
 */
function clearStaleSocketTimeout(conn: Redis): void {
  const internals = conn as unknown as { socketTimeoutTimer?: NodeJS.Timeout };
  clearTimeout(internals.socketTimeoutTimer);
  internals.socketTimeoutTimer = undefined;
}

/** A PING answered on a subscribed connection (RESP2: ["pong", ""]); a plain "PONG" means the subscription is gone. */
const subscribedPong = (answer: unknown) => Array.isArray(answer) && String(answer[0]).toLowerCase() === 'pong';

/** host:port of the server a connection is connected to now. */
function remoteOf(conn: Redis): string | undefined {
  const stream = conn.stream as { remoteAddress?: string; remotePort?: number } | undefined;
  return conn.status === 'ready' && stream?.remoteAddress ? `${stream.remoteAddress}:${stream.remotePort}` : undefined;
}

/** One server or Sentinel: SUBSCRIBE on a connection of its own, made (through the sentinels) to the primary. */
class ChannelSubscription extends EventEmitter implements Subscription {
  constructor(
    private readonly conn: Redis,
    private readonly channel: string,
  ) {
    super();
    conn.on('ready', () => this.emit('ready'));
    conn.on('close', () => this.emit('close'));
    conn.on('error', (err: Error) => this.emit('error', err));
    conn.on('message', (ch: string, message: string) => ch === channel && this.emit('ended', message));
  }

  get status(): string {
    return this.conn.status;
  }

  subscribe(): Promise<unknown> {
    return this.conn.subscribe(this.channel);
  }

  heartbeat(): Promise<boolean> {
    return this.conn.ping().then(subscribedPong, () => false);
  }

  server(): string | undefined {
    return remoteOf(this.conn);
  }

  drop(): void {
    this.conn.disconnect(true);
  }

  disconnect(): void {
    this.conn.disconnect();
  }
}

/**
 * A Cluster: SSUBSCRIBE on the primary that holds the ended set's slot, where the transaction that
 * writes an end SPUBLISHes it, so that its message leaves with the transaction's answer and not
 * later over the cluster bus. When that node gives the slot up (Redis then ends the shard
 * channel's subscriptions) or its connection ends, the slot map is read again and the new holder
 * subscribed to, and the state told ('close', then 'ready'), to re-read what it missed.
 * ioredis's own sharded subscriber moves silently, and so cannot say that.
 */
class ShardSubscription extends EventEmitter implements Subscription {
  private conn: Redis | undefined;
  private node: string | undefined;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** while not subscribed: the slot map read again, to leave a node that hangs as soon as another holds the slot */
  private readonly follow = setInterval(() => this.followSlot(), FOLLOW_MS).unref();

  constructor(
    private readonly cluster: Cluster,
    private readonly slot: number,
    private readonly channel: string,
    private readonly open: (node: RedisNode) => Redis,
    private readonly retryMs: (attempt: number) => number,
  ) {
    super();
    if (cluster.status === 'ready') this.connect();
    else cluster.once('ready', () => this.connect());
  }

  get status(): string {
    return this.conn?.status ?? 'connecting';
  }

  private connect(): void {
    const owner = this.cluster.slots[this.slot]?.[0];
    if (this.closed) return;
    if (!owner) return this.retry();
    const colon = owner.lastIndexOf(':');
    const conn = this.open({ host: owner.slice(0, colon), port: Number(owner.slice(colon + 1)) });
    [this.conn, this.node] = [conn, owner];
    conn.on('ready', () => {
      this.attempt = 0;
      this.emit('ready');
    });
    conn.on('smessage', (ch: string, message: string) => ch === this.channel && this.emit('ended', message));
    conn.on('error', (err: Error) => {
      // ioredis reports Redis's SUNSUBSCRIBE (the node no longer holds the slot) as an unexpected reply
      if (/sunsubscribe/i.test(err.message)) {
        this.emit('error', new Error(`cluster node ${owner} no longer holds the ended sessions' slot`));
        return conn.disconnect();
      }
      this.emit('error', err);
    });
    conn.on('close', () => this.conn === conn && this.emit('close'));
    conn.on('end', () => this.conn === conn && this.retry());
  }

  /** Soon, with the slot map read again first: the node that holds the slot may have changed. */
  private retry(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.cluster.refreshSlotsCache(() => this.connect()), this.retryMs(++this.attempt));
  }

  /** Not subscribed (a node that hangs takes a connection and never answers): go to the slot's new holder at once. */
  private followSlot(): void {
    if (this.closed || this.conn?.status === 'ready' || this.cluster.status !== 'ready') return;
    this.cluster.refreshSlotsCache(() => {
      const owner = this.cluster.slots[this.slot]?.[0];
      if (this.closed || !owner || owner === this.node || this.conn?.status === 'ready') return;
      const left = this.conn;
      clearTimeout(this.timer);
      this.connect();
      left?.disconnect();
    });
  }

  subscribe(): Promise<unknown> {
    return this.conn ? this.conn.ssubscribe(this.channel) : Promise.reject(new Error('no cluster node to subscribe on'));
  }

  heartbeat(): Promise<boolean> {
    return this.conn ? this.conn.ping().then(subscribedPong, () => false) : Promise.resolve(false);
  }

  server(): string | undefined {
    return this.conn?.status === 'ready' ? this.node : undefined;
  }

  drop(): void {
    this.conn?.disconnect();
  }

  disconnect(): void {
    this.closed = true;
    clearTimeout(this.timer);
    clearInterval(this.follow);
    this.conn?.disconnect();
  }
}

/** A ROLE answer: whether the node is a primary, and how many replicas it has online. */
export function roleOf(answer: unknown): { primary: boolean; replicas: number } | undefined {
  if (!Array.isArray(answer)) return undefined;
  if (answer[0] === 'master') return { primary: true, replicas: Array.isArray(answer[2]) ? answer[2].length : 0 };
  return { primary: false, replicas: 0 };
}

/** The package as loaded (only when Redis is used). */
export type IoRedis = Pick<typeof import('ioredis'), 'Redis' | 'Cluster' | 'Command'>;

export interface RedisConnections {
  client: Redis | Cluster;
  subscription: Subscription;
  /** a second connection for WAIT, which blocks the connection it is sent on */
  writer: () => Redis | Cluster;
  /** Where commands on the ended set go now (host:port): the subscription must listen there. */
  primary(): string | undefined;
  /** A Cluster's slot map read again (a node lost or not answering); nothing otherwise. */
  refresh(): void;
  /** PUBLISH, or in a Cluster SPUBLISH (a shard channel, delivered by the node holding the slot). */
  publish: 'publish' | 'spublish';
  connectTimeout: number;
  /** Every connection closed for good (the writer's too). */
  close(): void;
}

/** Sentinel and Cluster: retry soon (a promoted replica answers within a second or two); one server: back off to 2 s. */
const retryOf = (to: RedisTarget) => (attempt: number) => ('url' in to ? Math.min(100 * attempt, 2_000) : Math.min(50 * attempt, 250));

/** What every connection to a data node shares. */
const COMMON = {
  connectTimeout: CONNECT_TIMEOUT_MS,
  // a connection let go of (a failover, a silent server) is destroyed if the server does not
  // close its side within this, not after ioredis's 2 s: a hung server never does
  disconnectTimeout: 100,
  autoResubscribe: false,
  // no CLIENT SETINFO on each connection: one round trip and one ACL permission less
  disableClientInfo: true,
} satisfies RedisOptions;

/**
 * The connections to `to` for the ended sessions' `channel` (also the ended set's key); `waitMs`:
 * the longest WAIT. `ioredis` is the loaded package (loaded only when Redis is used).
 */
export function redisConnections(ioredis: IoRedis, to: RedisTarget, o: { channel: string; waitMs: number }): RedisConnections {
  return 'cluster' in to ? clusterConnections(ioredis, to.cluster, o) : serverConnections(ioredis, to, o);
}

/** One server or Sentinel: the client, the subscription and the WAIT connection, each found through the sentinels. */
function serverConnections(ioredis: IoRedis, to: Exclude<RedisTarget, { cluster: unknown }>, o: { channel: string; waitMs: number }): RedisConnections {
  const retryMs = retryOf(to);
  const options = {
    ...COMMON,
    // Fail fast while disconnected (the callers fail closed or fall back) instead of queueing.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: retryMs,
    socketTimeout: SOCKET_TIMEOUT_MS,
  } satisfies RedisOptions;
  const opened: Redis[] = [];
  let closed = false;
  const open = (extra: RedisOptions = {}) => {
    const conn =
      'url' in to
        ? new ioredis.Redis(to.url, { ...options, ...extra })
        : new ioredis.Redis({
            ...options,
            sentinels: to.sentinel.sentinels,
            name: to.sentinel.name,
            username: to.sentinel.username,
            password: to.sentinel.password,
            sentinelUsername: to.sentinel.sentinelUsername,
            sentinelPassword: to.sentinel.sentinelPassword,
            ...(to.sentinel.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
            sentinelRetryStrategy: retryMs,
            sentinelCommandTimeout: SENTINEL_TIMEOUT_MS,
            // Each connection hears the sentinels' +switch-master and moves to the new primary at once,
            // even from one that hangs rather than closing its connections.
            failoverDetector: true,
            ...extra,
          });
    // ioredis gives a connection up for good ('end') when its failover detector closes it while it
    // is still asking the sentinels where the primary is: it is started again.
    conn.on('end', () => setTimeout(() => !closed && conn.status === 'end' && conn.connect().catch(() => undefined), retryMs(1)).unref());
    conn.on('close', () => clearStaleSocketTimeout(conn));
    opened.push(conn);
    return conn;
  };
  const client = open();
  return {
    client,
    subscription: new ChannelSubscription(open(), o.channel),
    // Queued until connected: a WAIT is bounded by the sign-out's wait anyway.
    writer: () => open({ enableOfflineQueue: true, socketTimeout: o.waitMs + SOCKET_TIMEOUT_MS }),
    primary: () => remoteOf(client),
    refresh: () => undefined,
    publish: 'publish',
    connectTimeout: CONNECT_TIMEOUT_MS,
    close() {
      closed = true;
      for (const conn of opened) conn.disconnect();
    },
  };
}

/** A Cluster: the client, the shard subscription on the ended set's node, and a second client for WAIT. */
function clusterConnections(ioredis: IoRedis, to: RedisClusterSettings, o: { channel: string; waitMs: number }): RedisConnections {
  const retryMs = retryOf({ cluster: to });
  const { nodes, tls, username, password } = to;
  const nodeOptions = { ...COMMON, username, password, tls: tls ? {} : undefined };
  const clusterOptions = (socketTimeout: number, enableOfflineQueue: boolean) => ({
    enableOfflineQueue,
    clusterRetryStrategy: retryMs,
    // a node that died without closing its connections is noticed here at the latest; the state
    // asks for the map at once whenever a node stops answering
    slotsRefreshInterval: 5_000,
    slotsRefreshTimeout: SLOTS_TIMEOUT_MS,
    redisOptions: { ...nodeOptions, maxRetriesPerRequest: 1, socketTimeout },
  });
  const client = new ioredis.Cluster(nodes, clusterOptions(SOCKET_TIMEOUT_MS, false));
  const slot = new ioredis.Command('exists', [o.channel]).getSlot() ?? 0;
  const open = (node: RedisNode) =>
    new ioredis.Redis({ ...node, ...nodeOptions, retryStrategy: () => null, enableOfflineQueue: false, socketTimeout: SOCKET_TIMEOUT_MS });
  const subscription = new ShardSubscription(client, slot, o.channel, open, retryMs);
  const writers: Cluster[] = [];
  return {
    client,
    subscription,
    // Queued until connected: a WAIT is bounded by the sign-out's wait anyway.
    writer: () => {
      const writer = new ioredis.Cluster(nodes, clusterOptions(o.waitMs + SOCKET_TIMEOUT_MS, true));
      writers.push(writer);
      return writer;
    },
    primary: () => client.slots[slot]?.[0],
    refresh: () => client.refreshSlotsCache(),
    publish: 'spublish',
    connectTimeout: CONNECT_TIMEOUT_MS,
    close() {
      subscription.disconnect();
      for (const conn of [client, ...writers]) conn.disconnect();
    },
  };
}
