// Real redis-servers (Debian's package) for tests, on free loopback ports, without persistence:
//   - startRedis: one plain server, stopped (and started again on the same port) by the test;
//   - startSentinelRedis: a primary, its replicas and sentinels (`redis-server <conf> --sentinel`)
//     watching it, failing over within about a second of losing it;
//   - startRedisCluster: primaries with a replica each, joined by `redis-cli --cluster create`;
//   - cutOffProxy: one client cut off or partitioned from a server; silentServer: one that never answers.
// Every process is started again on its own port (and its own files) after a kill, as a server
// restarted by its supervisor would be.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './raw-http.js';
import { freePorts } from '../../sandbox/ports.js';
import { sleep, until } from './wait.js';

export interface TestRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Start again on the same port, empty (as a Redis without persistence comes back). */
  start(): Promise<void>;
}

async function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** Settings every test server shares: loopback, no persistence, a replica's sync at once and never through a file. */
const EPHEMERAL = [
  '--bind',
  '127.0.0.1',
  '--save',
  '',
  '--appendonly',
  'no',
  '--protected-mode',
  'yes',
  '--repl-diskless-sync-delay',
  '0',
  '--repl-diskless-load',
  'on-empty-db',
];

/** A server of a topology: also whether it runs, and frozen (SIGSTOP) or thawed, as a stalled host would be. */
export interface TopologyRedis extends TestRedis {
  alive(): boolean;
  freeze(): void;
  thaw(): void;
}

/** One redis-server process (`args` after the port), killed with SIGKILL by stop(). */
function redisProcess(port: number, args: () => string[], what = 'redis-server'): TopologyRedis {
  let child: ChildProcess | undefined;
  const start = async () => {
    let output = '';
    child = spawn('redis-server', args(), { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', (err) => (output += String(err)));
    const deadline = Date.now() + 10_000;
    while (!(await reachable(port))) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${what} did not start (is the redis-server package installed?):\n${output}`);
      await sleep(50);
    }
  };
  const stop = async () => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  };
  const alive = () => !!child && child.exitCode === null && child.signalCode === null;
  return {
    url: `redis://127.0.0.1:${port}/0`,
    port,
    start,
    stop,
    alive,
    freeze: () => void (alive() && child!.kill('SIGSTOP')),
    thaw: () => void (alive() && child!.kill('SIGCONT')),
  };
}

/** One server; with `auth`, its URL carries the credentials, percent-encoded as REDIS_URL wants them. */
export async function startRedis(o: { auth?: Pick<RedisAuth, 'username' | 'password' | 'rules'> } = {}): Promise<TestRedis> {
  const port = await freePort();
  const server = redisProcess(port, () => ['--port', String(port), ...EPHEMERAL, ...dataNodeAuth(o.auth)]);
  const userinfo = o.auth ? `${encodeURIComponent(o.auth.username ?? '')}:${encodeURIComponent(o.auth.password)}@` : '';
  const start = async () => {
    cliSignIn.set(port, signIn(dataAdmin(o.auth)));
    await server.start();
  };
  const stop = async () => {
    await server.stop();
    cliSignIn.delete(port);
  };
  await start();
  return { url: `redis://${userinfo}127.0.0.1:${port}/0`, port, stop, start };
}

/** `host:port,host:port` (REDIS_SENTINELS, REDIS_CLUSTER_NODES) as the settings hold it. */
export function asNodes(setting: string): Array<{ host: string; port: number }> {
  return setting.split(',').map((entry) => {
    const colon = entry.lastIndexOf(':');
    return { host: entry.slice(0, colon), port: Number(entry.slice(colon + 1)) };
  });
}

/**
 * What a topology's servers ask for. The data nodes: an ACL user with its rules (every key, channel
 * and command unless told) and the default user off; or the default user's password alone. The
 * sentinels the same, with their own. Replication, the sentinels' watch and the helpers' redis-cli
 * sign in as an administrator of their own (with an ACL user), so that the users under test may be
 * as narrow as an operator makes them.
 */
export interface RedisAuth {
  username?: string;
  password: string;
  /** the ACL rules of `username` (`~pattern`, `&channel`, `+command`, ...) */
  rules?: readonly string[];
  sentinelUsername?: string;
  sentinelPassword?: string;
  sentinelRules?: readonly string[];
}

const EVERYTHING = ['~*', '&*', '+@all'];
const TOPOLOGY_ADMIN = { username: 'topology-admin', password: 'topology-admin-password' };

/** redis-cli's sign-in for each port of a topology that asks for one. */
const cliSignIn = new Map<number, string[]>();
const signIn = (who: SignIn) => (who ? [...(who.username ? ['--user', who.username] : []), '--pass', who.password, '--no-auth-warning'] : []);
/** Who replicates, watches and administers data nodes: the administrator beside an ACL user, else the default user. */
type SignIn = { username?: string; password: string } | undefined;
const dataAdmin = (auth: RedisAuth | undefined): SignIn => (!auth ? undefined : auth.username ? TOPOLOGY_ADMIN : { password: auth.password });
const sentinelAdmin = (auth: RedisAuth | undefined): SignIn =>
  auth?.sentinelPassword === undefined ? undefined : auth.sentinelUsername ? TOPOLOGY_ADMIN : { password: auth.sentinelPassword };

/** A user's definition as the `user` directive's arguments. */
const userLine = (username: string, password: string, rules: readonly string[]) => [username, 'on', `>${password}`, ...rules];

/** A data node's users (config lines as arguments) and a replica's sign-in at its primary. */
function dataNodeAuth(auth: RedisAuth | undefined): string[] {
  if (!auth) return [];
  if (!auth.username) return ['--requirepass', auth.password, '--masterauth', auth.password];
  const admin = TOPOLOGY_ADMIN;
  return [
    ...['--user', ...userLine(auth.username, auth.password, auth.rules ?? EVERYTHING)],
    ...['--user', ...userLine(admin.username, admin.password, EVERYTHING)],
    ...['--user', 'default', 'off'],
    ...['--masteruser', admin.username, '--masterauth', admin.password],
  ];
}

/** A config file's quoted argument (sdssplitargs): the value as written, whatever it holds. */
const quoted = (v: string) => JSON.stringify(v);

/** `redis-cli -p port args...`, its output trimmed (throws when it fails). */
export function redisCli(port: number, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...(cliSignIn.get(port) ?? []), ...args], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`redis-cli -p ${port} ${args.join(' ')}: ${r.stderr || r.stdout}`);
  return r.stdout.trim();
}

/** As `until`, a check that throws counting as not yet (a node still starting refuses redis-cli). */
const settledWhen = (what: string, check: () => boolean, ms: number) =>
  until(
    what,
    () => {
      try {
        return check();
      } catch {
        return false;
      }
    },
    { ms, everyMs: 100 },
  );

/** `role:master` or `role:slave`, and the replicas a primary has online, from INFO replication. */
function replication(port: number): { role: string; online: number } {
  const info = redisCli(port, 'info', 'replication');
  const role = /^role:(\w+)/m.exec(info)?.[1] ?? '';
  const online = [...info.matchAll(/^slave\d+:.*state=online/gm)].length;
  return { role, online };
}

export interface SentinelRedis {
  /** the primary's name the sentinels know (REDIS_SENTINEL_NAME) */
  name: string;
  /** REDIS_SENTINELS */
  sentinels: string;
  /** every data node, the first the primary at start */
  nodes: TopologyRedis[];
  sentinelProcesses: TopologyRedis[];
  /** the data node the sentinels name the primary now */
  primary(): TopologyRedis;
  /** Settled: the sentinels agree on a primary that has every live data node as an online replica. */
  settled(ms?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A primary, `replicas` replicas and `sentinels` sentinels (quorum: a majority), a replica promoted
 * within about `downAfterMs` + 1 s of the primary's loss.
 */
export async function startSentinelRedis(
  o: { replicas?: number; sentinels?: number; downAfterMs?: number; name?: string; auth?: RedisAuth } = {},
): Promise<SentinelRedis> {
  const name = o.name ?? 'chat-primary';
  const replicaCount = o.replicas ?? 1;
  const sentinelCount = o.sentinels ?? 3;
  const downAfter = o.downAfterMs ?? 1_000;
  const dir = mkdtempSync(join(tmpdir(), 'redis-sentinel-'));
  const ports = await freePorts(1 + replicaCount + sentinelCount);
  const dataPorts = ports.slice(0, 1 + replicaCount);
  const sentinelPorts = ports.slice(1 + replicaCount);
  let primaryPort = dataPorts[0]!;
  let running = false;
  // A node started again follows whoever the sentinels name the primary then (as the sentinels
  // would make it do anyway, seconds later).
  const nodes = dataPorts.map((port) =>
    redisProcess(port, () => {
      const primary = running ? askedPrimary() : dataPorts[0]!;
      return [
        '--port',
        String(port),
        ...EPHEMERAL,
        ...dataNodeAuth(o.auth),
        '--dir',
        dir,
        ...(primary === port ? [] : ['--replicaof', '127.0.0.1', String(primary)]),
      ];
    }),
  );
  // the sentinels sign in at the data nodes, at each other, and ask their clients to sign in
  const a = o.auth;
  const watcher = dataAdmin(a);
  const peer = sentinelAdmin(a);
  const sentinelAuth = [
    ...(watcher?.username ? [`sentinel auth-user ${name} ${watcher.username}`] : []),
    ...(watcher ? [`sentinel auth-pass ${name} ${quoted(watcher.password)}`] : []),
    ...(a?.sentinelPassword === undefined
      ? []
      : a.sentinelUsername
        ? [
            `user ${userLine(a.sentinelUsername, a.sentinelPassword, a.sentinelRules ?? EVERYTHING)
              .map(quoted)
              .join(' ')}`,
            `user ${userLine(TOPOLOGY_ADMIN.username, TOPOLOGY_ADMIN.password, EVERYTHING).map(quoted).join(' ')}`,
            'user default off',
          ]
        : [`requirepass ${quoted(a.sentinelPassword)}`]),
    ...(peer?.username ? [`sentinel sentinel-user ${peer.username}`] : []),
    ...(peer ? [`sentinel sentinel-pass ${quoted(peer.password)}`] : []),
  ];
  for (const port of dataPorts) cliSignIn.set(port, signIn(watcher));
  for (const port of sentinelPorts) cliSignIn.set(port, signIn(peer));
  const sentinelProcesses = sentinelPorts.map((port) => {
    const conf = join(dir, `sentinel-${port}.conf`);
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${dataPorts[0]} ${Math.floor(sentinelCount / 2) + 1}`,
        `sentinel down-after-milliseconds ${name} ${downAfter}`,
        // a vote that elects no leader is tried again after this (Redis's 10 s would stretch a
        // failover test's window by as much), and a sentinel that led a failover may lead the next
        // one after twice this
        `sentinel failover-timeout ${name} 3000`,
        `sentinel parallel-syncs ${name} 1`,
        ...sentinelAuth,
        '',
      ].join('\n'),
    );
    // The file is the sentinel's state too (it rewrites it): started again, it remembers.
    return redisProcess(port, () => [conf, '--sentinel'], 'redis-server --sentinel');
  });
  const askedPrimary = () => {
    for (const s of sentinelProcesses) {
      if (!s.alive()) continue;
      try {
        const [, port] = redisCli(s.port, 'sentinel', 'get-master-addr-by-name', name).split('\n');
        if (port) return Number(port);
      } catch {
        // ask the next one
      }
    }
    return primaryPort;
  };
  const topology: SentinelRedis = {
    name,
    sentinels: sentinelPorts.map((p) => `127.0.0.1:${p}`).join(','),
    nodes,
    sentinelProcesses,
    primary() {
      primaryPort = askedPrimary();
      return nodes.find((n) => n.port === primaryPort)!;
    },
    async settled(ms = 20_000) {
      await settledWhen(
        'the sentinels to agree on a primary with every live node its online replica, and to know each other',
        () => {
          const live = sentinelProcesses.filter((s) => s.alive());
          const named = new Set(live.map((s) => redisCli(s.port, 'sentinel', 'get-master-addr-by-name', name).split('\n')[1]));
          if (named.size !== 1) return false;
          primaryPort = Number([...named][0]);
          const { role, online } = replication(primaryPort);
          if (role !== 'master' || online !== nodes.filter((n) => n.alive()).length - 1) return false;
          // each sentinel knows the others (a failover needs a majority of them to agree)
          return live.every(
            (s) =>
              redisCli(s.port, 'sentinel', 'sentinels', name)
                .split('\n')
                .filter((l) => l === 'name').length >=
              live.length - 1,
          );
        },
        ms,
      );
    },
    async stop() {
      await Promise.all([...sentinelProcesses, ...nodes].map((p) => p.stop()));
      for (const port of ports) cliSignIn.delete(port);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    for (const n of nodes) await n.start();
    for (const s of sentinelProcesses) await s.start();
    await topology.settled();
    running = true;
  } catch (err) {
    await topology.stop();
    throw err;
  }
  return topology;
}

export interface RedisCluster {
  /** REDIS_CLUSTER_NODES */
  nodesSetting: string;
  nodes: TopologyRedis[];
  /** the live node serving `key`'s slot as its primary */
  primaryOf(key: string): TopologyRedis;
  /** Settled: every slot served, every live primary with an online replica (when it had one). */
  settled(ms?: number): Promise<void>;
  stop(): Promise<void>;
}

/** `primaries` primaries with `replicasEach` replicas each, a replica promoted within about `nodeTimeoutMs` + 1 s of its primary's loss. */
export async function startRedisCluster(
  o: { primaries?: number; replicasEach?: number; nodeTimeoutMs?: number; auth?: Pick<RedisAuth, 'username' | 'password' | 'rules'> } = {},
): Promise<RedisCluster> {
  const primaries = o.primaries ?? 3;
  const replicasEach = o.replicasEach ?? 1;
  const count = primaries * (1 + replicasEach);
  const dir = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
  // Each node's port and its cluster bus port (cluster-port), all free.
  const ports = await freePorts(2 * count);
  const nodes = Array.from({ length: count }, (_, i) => {
    const port = ports[i]!;
    const bus = ports[count + i]!;
    return redisProcess(port, () => [
      '--port',
      String(port),
      ...EPHEMERAL,
      ...dataNodeAuth(o.auth),
      '--cluster-enabled',
      'yes',
      '--cluster-port',
      String(bus),
      '--cluster-config-file',
      join(dir, `nodes-${port}.conf`),
      '--cluster-node-timeout',
      String(o.nodeTimeoutMs ?? 1_000),
      '--dir',
      dir,
    ]);
  });
  const cluster: RedisCluster = {
    nodesSetting: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    nodes,
    primaryOf(key) {
      for (const n of nodes.filter((x) => x.alive())) {
        try {
          const slot = redisCli(n.port, 'cluster', 'keyslot', key);
          const owner = redisCli(n.port, 'cluster', 'nodes')
            .split('\n')
            .map((l) => l.split(' '))
            .find((f) => f[2]!.split(',').includes('master') && !f[2]!.includes('fail') && f.slice(8).some((r) => inRange(r, Number(slot))));
          const port = owner ? Number(/:(\d+)@/.exec(owner[1]!)?.[1]) : undefined;
          const node = nodes.find((x) => x.port === port);
          if (node) return node;
        } catch {
          // ask the next one
        }
      }
      throw new Error(`no live primary serves ${key}`);
    },
    async settled(ms = 30_000) {
      const live = (port: number | undefined) => nodes.some((x) => x.port === port && x.alive());
      await settledWhen(
        'every live node to see the cluster whole, none of them failing, every replica linked to a live primary',
        () =>
          nodes
            .filter((n) => n.alive())
            .every((n) => {
              if (!/cluster_state:ok/.test(redisCli(n.port, 'cluster', 'info'))) return false;
              const failing = redisCli(n.port, 'cluster', 'nodes')
                .split('\n')
                .map((l) => l.split(' '))
                .some((f) => live(Number(/:(\d+)@/.exec(f[1] ?? '')?.[1])) && (f[2] ?? '').includes('fail'));
              if (failing) return false;
              const info = redisCli(n.port, 'info', 'replication');
              if (!/^role:slave/m.test(info)) return true;
              return /^master_link_status:up/m.test(info) && live(Number(/^master_port:(\d+)/m.exec(info)?.[1]));
            }),
        ms,
      );
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
      for (const n of nodes) cliSignIn.delete(n.port);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    for (const n of nodes) cliSignIn.set(n.port, signIn(dataAdmin(o.auth)));
    for (const n of nodes) await n.start();
    const created = spawnSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        String(replicasEach),
        '--cluster-yes',
        ...signIn(dataAdmin(o.auth)),
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed:\n${created.stdout}\n${created.stderr}`);
    await cluster.settled();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/** A CLUSTER NODES slot field (`5461-10922`, `42`, or a migration `[...]`) holds `slot`. */
function inRange(field: string, slot: number): boolean {
  const m = /^(\d+)(?:-(\d+))?$/.exec(field);
  return !!m && slot >= Number(m[1]) && slot <= Number(m[2] ?? m[1]);
}

export interface CutOffProxy {
  /** the proxy's port: connect here instead of `to` */
  port: number;
  /** Cut every connection through it, and refuse new ones until reopen(). */
  cut(): void;
  /**
   * A partition: nothing passes either way and nothing is closed, new connections are taken and
   * left waiting; what was sent meanwhile arrives once reopen() heals it (as TCP resends it).
   */
  stall(): void;
  reopen(): void;
  close(): Promise<void>;
}

/** A TCP proxy to 127.0.0.1:`to`, to cut one client off Redis, or partition it, while the others stay connected. */
export async function cutOffProxy(to: number): Promise<CutOffProxy> {
  const sockets = new Set<net.Socket>();
  let open = true;
  let stalled = false;
  const held: Array<() => void> = [];
  const join = (inbound: net.Socket) => {
    const outbound = net.connect(to, '127.0.0.1');
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        inbound.destroy();
        outbound.destroy();
      });
    }
    inbound.pipe(outbound).pipe(inbound);
  };
  const server = net.createServer((inbound) => {
    if (!open) return void inbound.destroy();
    if (!stalled) return join(inbound);
    inbound.pause();
    sockets.add(inbound);
    held.push(() => join(inbound));
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    cut() {
      open = false;
      for (const s of sockets) s.destroy();
    },
    stall() {
      stalled = true;
      for (const s of sockets) s.pause();
    },
    reopen() {
      open = true;
      stalled = false;
      for (const s of sockets) s.resume();
      for (const go of held.splice(0)) go();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface SilentServer {
  port: number;
  close(): Promise<void>;
}

/** A server that takes every connection and what is sent on it, and never answers (a hung process's listen backlog, a black hole). */
export async function silentServer(): Promise<SilentServer> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.resume();
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
