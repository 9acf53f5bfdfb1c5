// The connections the shared state holds to Redis, for each topology (one server, Sentinel,
// Cluster): the client, the subscription to ended sessions, and a connection of its own for WAIT.
import { EventEmitter } from 'node:events';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { RedisNode, RedisTarget } from '../../config/redis.js';
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

/** What the state needs of its subscription: one Redis connection, or one to some node of a Cluster. */
export interface Subscription extends EventEmitter {
  readonly status: string;
  subscribe(channel: string): Promise<unknown>;
  ping(): Promise<unknown>;
  disconnect(): void;
}

/**
 * A Cluster's subscription, on one node at a time (any node hears every PUBLISH in Redis 7): when
 * that connection ends, the next node is tried. Unlike ioredis's own cluster subscriber, it says
 * so ('close', then 'ready' on the next node), so the state knows to re-read what it missed.
 */
class NodeSubscription extends EventEmitter implements Subscription {
  private conn: Redis | undefined;
  private next = 0;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly seeds: RedisNode[],
    private readonly open: (node: RedisNode) => Redis,
    private readonly retryMs: (attempt: number) => number,
  ) {
    super();
    this.connect();
  }

  get status(): string {
    return this.conn?.status ?? 'connecting';
  }

  private connect(): void {
    const known = this.cluster.nodes('all').map((n) => ({ host: String(n.options.host), port: Number(n.options.port) }));
    const candidates = known.length ? known : this.seeds;
    const node = candidates[this.next++ % candidates.length]!;
    const conn = this.open(node);
    this.conn = conn;
    conn.on('ready', () => {
      this.attempt = 0;
      this.emit('ready');
    });
    conn.on('message', (channel: string, message: string) => this.emit('message', channel, message));
    conn.on('error', (err: Error) => this.emit('error', err));
    conn.on('close', () => this.conn === conn && this.emit('close'));
    conn.on('end', () => {
      if (this.conn !== conn || this.closed) return;
      this.timer = setTimeout(() => this.connect(), this.retryMs(++this.attempt));
    });
  }

  subscribe(channel: string): Promise<unknown> {
    return this.conn ? this.conn.subscribe(channel) : Promise.reject(new Error('no node to subscribe on'));
  }

  ping(): Promise<unknown> {
    return this.conn ? this.conn.ping() : Promise.reject(new Error('no node to subscribe on'));
  }

  disconnect(): void {
    this.closed = true;
    clearTimeout(this.timer);
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
export type IoRedis = Pick<typeof import('ioredis'), 'Redis' | 'Cluster'>;

export interface RedisConnections {
  client: Redis | Cluster;
  subscriber: Subscription;
  /** a second connection for WAIT, which blocks the connection it is sent on */
  writer: () => Redis | Cluster;
  connectTimeout: number;
}

/** The connections to `to`; `ioredis` is the loaded package (loaded only when Redis is used). */
export function redisConnections(ioredis: IoRedis, to: RedisTarget): RedisConnections {
  // Sentinel and Cluster: retry soon (a promoted replica answers within a second or two).
  const retryMs = (attempt: number) => Math.min(100 * attempt, 'url' in to ? 2_000 : 500);
  const connection = {
    // Fail fast while disconnected (the callers fail closed or fall back) instead of queueing.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: retryMs,
    autoResubscribe: false,
    // no CLIENT SETINFO on each connection: one round trip and one ACL permission less
    disableClientInfo: true,
  } satisfies RedisOptions;

  let client: Redis | Cluster;
  let subscriber: Subscription;
  let writer: () => Redis | Cluster;
  if ('cluster' in to) {
    const { nodes, tls, username, password } = to.cluster;
    const nodeOptions = {
      username,
      password,
      tls: tls ? {} : undefined,
      connectTimeout: connection.connectTimeout,
      autoResubscribe: false,
      disableClientInfo: true,
    };
    const clusterOptions = {
      enableOfflineQueue: false,
      clusterRetryStrategy: retryMs,
      // a node that died without closing its connections is noticed here, not after TCP's timeouts
      slotsRefreshInterval: 5_000,
      redisOptions: { ...nodeOptions, maxRetriesPerRequest: 1, commandTimeout: 5_000 },
    };
    const cluster = new ioredis.Cluster(nodes, clusterOptions);
    client = cluster;
    subscriber = new NodeSubscription(
      cluster,
      nodes,
      (node) => new ioredis.Redis({ ...node, ...nodeOptions, retryStrategy: () => null, enableOfflineQueue: false }),
      retryMs,
    );
    // Queued until connected: a WAIT is bounded by the sign-out's 2 s anyway.
    writer = () => new ioredis.Cluster(nodes, { ...clusterOptions, enableOfflineQueue: true });
  } else {
    const open = (offlineQueue = false) =>
      'url' in to
        ? new ioredis.Redis(to.url, { ...connection, enableOfflineQueue: offlineQueue })
        : new ioredis.Redis({
            ...connection,
            enableOfflineQueue: offlineQueue,
            sentinels: to.sentinel.sentinels,
            name: to.sentinel.name,
            username: to.sentinel.username,
            password: to.sentinel.password,
            sentinelUsername: to.sentinel.sentinelUsername,
            sentinelPassword: to.sentinel.sentinelPassword,
            ...(to.sentinel.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
            sentinelRetryStrategy: retryMs,
          });
    client = open();
    subscriber = open() as Redis & Subscription;
    // Queued until connected: a WAIT is bounded by the sign-out's 2 s anyway.
    writer = () => open(true);
  }
  return { client, subscriber, writer, connectTimeout: connection.connectTimeout };
}
