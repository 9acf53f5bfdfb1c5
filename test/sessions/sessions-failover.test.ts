// A Redis server lost under load: two gateway processes share their state through Redis Sentinel
// (a primary, a replica, three sentinels) or a Redis Cluster (three primaries, a replica each),
// real redis-servers; signed-in users keep asking both instances, copies of ended sessions' cookies
// keep trying both, and a server is killed with SIGKILL or hung with SIGSTOP (and left hung). What
// users see is recorded and checked:
//   - a session ended before the kill (at either instance, one within 100 ms of it) or signed out
//     during the failover stays ended at both instances from its answer on; a sign-out during the
//     failover answers as usual once the end is durable;
//   - during the failover window signed-in requests answer 503 (never let through unchecked); the
//     window is at most the detection time plus 4 s, and ends within 1 s of the servers naming a
//     new primary; after it, no error at all;
//   - a replica or a sentinel lost changes nothing users see (a hung replica that its primary
//     still lists: sign-outs say they are not durable yet).
// The measured window and counts are printed (operators' docs quote them).
import { expect } from 'chai';
import { browse, signIn, type Jar } from '../support/cookie-jar.js';
import { startTwoGateways, type TwoGateways } from '../support/two-gateways.js';
import { Redis } from 'ioredis';
import { LEASE_MS } from '../../gateway/state/redis-sync.js';
import { REPLICA_WAIT_MS } from '../../gateway/state/redis-ends.js';
import { END_WAIT_MS } from '../../gateway/state/redis-state.js';
import { sleep } from '../support/wait.js';
import { redisCli, startRedisCluster, startSentinelRedis, type RedisCluster, type SentinelRedis, type TopologyRedis } from '../support/redis.js';

/** The sentinels' down-after-milliseconds and the cluster's node timeout: how long a lost server takes to be noticed. */
const DETECTION_MS = 1_000;
/** What the failover may take beyond detection: the vote, the promotion, the instances' reconnection and re-read. */
const FAILOVER_MS = 4_000;
/** How long after the servers name a new primary the instances may still answer 503. */
const FOLLOW_MS = 1_000;
/** Live users asking, and the pause each takes between requests (a bounded load: about 100 requests a second). */
const LIVE_USERS = 8;
const PAUSE_MS = 100;
const USERS = ['alice', 'bob', 'carol', 'tina'];

interface Answer {
  at: number;
  instance: 'A' | 'B';
  kind: 'live' | 'ended';
  /** the status, or 'error' when no answer came (connection refused or reset) */
  status: number | 'error';
}

/** Users asking both instances in turn until stopped; copies of ended sessions' cookies too. */
class Load {
  readonly answers: Answer[] = [];
  private running = true;
  private readonly loops: Array<Promise<void>> = [];

  constructor(
    private readonly urls: { A: string; B: string },
    live: Jar[],
    private readonly ended: Jar[],
  ) {
    for (const jar of live) this.loops.push(this.loop(() => jar, 'live'));
    this.ended.forEach((_, i) => this.loops.push(this.loop(() => this.ended[i]!.clone(), 'ended')));
  }

  /** One more ended session's cookie, tried from now on. */
  addEnded(jar: Jar): void {
    this.ended.push(jar);
    const i = this.ended.length - 1;
    this.loops.push(this.loop(() => this.ended[i]!.clone(), 'ended'));
  }

  private async loop(jar: () => Jar, kind: Answer['kind']): Promise<void> {
    let turn = Math.random() < 0.5 ? 0 : 1;
    await sleep(Math.random() * PAUSE_MS);
    while (this.running) {
      const instance = turn++ % 2 ? 'B' : 'A';
      let status: Answer['status'];
      try {
        status = (await browse(jar(), `${this.urls[instance]}/api/v1/auths/`)).status;
      } catch {
        status = 'error';
      }
      this.answers.push({ at: Date.now(), instance, kind, status });
      await sleep(PAUSE_MS);
    }
  }

  async stop(): Promise<Answer[]> {
    this.running = false;
    await Promise.all(this.loops);
    return this.answers;
  }
}

interface World extends TwoGateways {
  live: Jar[];
}

/** Two gateway processes sharing `redisEnv` (test/support/two-gateways.ts); LIVE_USERS signed in. */
async function startWorld(redisEnv: Record<string, string>): Promise<World> {
  const gateways = await startTwoGateways(redisEnv);
  try {
    const live: Jar[] = [];
    for (let i = 0; i < LIVE_USERS; i++) live.push((await signIn(gateways.urls.A, USERS[i % USERS.length]!)).jar);
    return { ...gateways, live };
  } catch (err) {
    await gateways.close();
    throw err;
  }
}

const at = (jar: Jar, url: string) => browse(jar.clone(), `${url}/api/v1/auths/`).then((r) => r.status);

/** A session signed in, its cookie copied, then signed out at `instance`: the copy must stay refused. */
async function endedSession(world: World, instance: 'A' | 'B', user: string): Promise<{ copy: Jar; answeredAt: number }> {
  const { jar } = await signIn(world.urls.A, user);
  const copy = jar.clone();
  expect(await at(copy, world.urls[instance])).to.equal(200);
  await browse(jar, `${world.urls[instance]}/auth/logout`);
  return { copy, answeredAt: Date.now() };
}

interface Outcome {
  killedAt: number;
  answers: Answer[];
  ended: Jar[];
  /** how long after its sign-out answered the last session ended before the kill was killed */
  lastEndBeforeKillMs: number;
  /** sign-outs made during the failover */
  during: DuringSignOut[];
}

/** A sign-out made during the failover: when (ms from the kill), its answer, and its copy replayed at both instances at once. */
interface DuringSignOut {
  instance: 'A' | 'B';
  startedMs: number;
  answeredMs: number;
  status: number;
  /** answered as durable: on to the realm's logout without the state that says it is not yet */
  durable: boolean;
  replayed: number[];
}

/** Whether a sign-out's answer sends the browser through the realm with the state that brings back "still being written". */
const notYetDurable = (location: string | undefined) => new URL(location ?? 'http://x/').searchParams.get('state') === 'sign-out-pending';

/** Signed in before the failover, signed out `afterMs` into it at `instance`; the copy joins the load's ended sessions from its answer on. */
async function signOutDuring(world: World, load: Load, jar: Jar, instance: 'A' | 'B', killedAt: number, afterMs: number): Promise<DuringSignOut> {
  await sleep(killedAt + afterMs - Date.now());
  const copy = jar.clone();
  const startedMs = Date.now() - killedAt;
  const out = await browse(jar, `${world.urls[instance]}/auth/logout`);
  const answeredMs = Date.now() - killedAt;
  const replayed = await Promise.all([at(copy, world.urls.A), at(copy, world.urls.B)]);
  load.addEnded(copy);
  return { instance, startedMs, answeredMs, status: out.status, durable: !notYetDurable(out.location), replayed };
}

/**
 * Sessions ended at both instances, the load running, `kill` done within 100 ms of the last sign-out,
 * then the load kept on until both instances have been ready for `settleMs`.
 */
async function underLoad(world: World, kill: () => Promise<void>, o: { settleMs: number; maxMs: number }): Promise<Outcome> {
  const ended: Jar[] = [];
  for (const [i, instance] of (['A', 'B', 'A', 'B'] as const).entries()) ended.push((await endedSession(world, instance, USERS[i]!)).copy);
  const toEndDuring = [(await signIn(world.urls.A, 'alice')).jar, (await signIn(world.urls.A, 'bob')).jar];
  const load = new Load(world.urls, world.live, [...ended]);
  await sleep(1_000);
  // One more, ended at B a moment before the kill.
  const last = await endedSession(world, 'B', 'carol');
  const killedAt = Date.now();
  const lastEndBeforeKillMs = killedAt - last.answeredAt;
  await kill();
  ended.push(last.copy);
  load.addEnded(last.copy);
  // Two more signed out while it fails over, at either instance.
  const during = Promise.all([
    signOutDuring(world, load, toEndDuring[0]!, 'A', killedAt, 300),
    signOutDuring(world, load, toEndDuring[1]!, 'B', killedAt, 1_300),
  ]);
  let readySince: number | undefined;
  while (Date.now() - killedAt < o.maxMs) {
    const ready = (
      await Promise.all(
        Object.values(world.urls).map((u) =>
          fetch(`${u}/readyz`).then(
            (r) => r.status === 200,
            () => false,
          ),
        ),
      )
    ).every(Boolean);
    readySince = ready ? (readySince ?? Date.now()) : undefined;
    if (readySince && Date.now() - readySince >= o.settleMs) break;
    await sleep(100);
  }
  return { killedAt, answers: await load.stop(), ended, lastEndBeforeKillMs, during: await during };
}

interface Measured {
  requests: number;
  unavailable: number;
  errors: number;
  /** the first and last 503 after the kill, in ms from it */
  window?: { from: number; to: number };
}

/** What every scenario asserts: ended sessions never served, live ones 200 or 503, no other answer. */
function measure(o: Outcome): Measured {
  const refusedEnded = o.answers.filter((a) => a.kind === 'ended' && a.status === 200);
  expect(
    refusedEnded.map((a) => `${a.instance} +${a.at - o.killedAt} ms`),
    'an ended session was served',
  ).to.deep.equal([]);
  const unexpected = o.answers.filter((a) => !(a.kind === 'live' ? [200, 503] : [401, 503]).includes(a.status as number));
  expect(
    unexpected.map((a) => `${a.kind} at ${a.instance} +${a.at - o.killedAt} ms: ${a.status}`),
    'answers other than 200/401 or 503',
  ).to.deep.equal([]);
  const unavailable = o.answers.filter((a) => a.status === 503);
  expect(
    unavailable.filter((a) => a.at < o.killedAt).map((a) => `${a.kind} at ${a.instance} ${a.at - o.killedAt} ms`),
    '503 before the kill',
  ).to.deep.equal([]);
  expect(o.lastEndBeforeKillMs, 'the last session ended within 100 ms of the kill').to.be.below(100);
  const window = unavailable.length
    ? { from: Math.min(...unavailable.map((a) => a.at)) - o.killedAt, to: Math.max(...unavailable.map((a) => a.at)) - o.killedAt }
    : undefined;
  return { requests: o.answers.length, unavailable: unavailable.length, errors: o.answers.filter((a) => a.status === 'error').length, window };
}

async function everyEndHolds(world: World, ended: Jar[]): Promise<void> {
  for (const [i, copy] of ended.entries()) {
    for (const instance of ['A', 'B'] as const) expect(await at(copy, world.urls[instance]), `ended session ${i + 1} at ${instance}`).to.equal(401);
  }
}

/** The load went on well past the window, and everything after it was answered as before the kill. */
function afterTheWindow(o: Outcome, m: Measured): void {
  const after = o.answers.filter((a) => a.at - o.killedAt > m.window!.to);
  expect(Math.max(...after.map((a) => a.at)) - o.killedAt - m.window!.to, 'the load ran on after the window').to.be.at.least(1_500);
  expect(after.filter((a) => a.status !== (a.kind === 'live' ? 200 : 401)).length, 'answers after the window other than 200 (live) or 401 (ended)').to.equal(0);
}

/** The sign-outs made during the failover: answered as usual (durable) within the wait, their copies refused at both instances from the answer on. */
function signOutsDuringHeld(o: Outcome): void {
  for (const d of o.during) {
    expect([d.status, d.durable], `the sign-out at ${d.instance} +${d.startedMs} ms answered as usual, once durable`).to.deep.equal([302, true]);
    expect(d.answeredMs - d.startedMs, 'within the wait').to.be.below(END_WAIT_MS);
    for (const status of d.replayed) expect([401, 503], `its copy replayed at once (${d.replayed.join(', ')})`).to.include(status);
  }
}

/** When the servers named a new primary for the ended sessions (ms since the epoch), once they have. */
interface Promotion {
  at(): number | undefined;
  close(): void;
}

/** The sentinels' +switch-master, heard on one of them. */
async function sentinelPromotion(redis: SentinelRedis): Promise<Promotion> {
  const sentinel = redis.sentinelProcesses.find((s) => s.alive())!;
  const conn = new Redis({ host: '127.0.0.1', port: sentinel.port, lazyConnect: true });
  let at: number | undefined;
  conn.on('message', () => (at ??= Date.now()));
  await conn.subscribe('+switch-master');
  return { at: () => at, close: () => conn.disconnect() };
}

/** A live node's CLUSTER SLOTS naming another primary than `from` for the ended sessions' slot, asked every 50 ms. */
async function clusterPromotion(redis: RedisCluster, from: TopologyRedis): Promise<Promotion> {
  const observer = redis.nodes.find((n) => n.alive() && n !== from)!;
  const conn = new Redis({ host: '127.0.0.1', port: observer.port });
  const slot = Number(await conn.cluster('KEYSLOT', 'chat-gateway:ended'));
  let at: number | undefined;
  const timer = setInterval(() => {
    void conn
      .cluster('SLOTS')
      .then((ranges) => {
        const range = ranges.find(([lo, hi]) => slot >= lo && slot <= hi);
        if (range?.[2] && range[2][1] !== from.port) at ??= Date.now();
      })
      .catch(() => undefined);
  }, 50);
  return {
    at: () => at,
    close() {
      clearInterval(timer);
      conn.disconnect();
    },
  };
}

/**
 * Kill or freeze the primary under load: cookie sessions answer 503 for at most the detection and
 * failover time, and from the servers naming a new primary for at most FOLLOW_MS; then no error;
 * every session ended before the kill and during the failover stays ended, and sign-out holds.
 */
async function failsOver(world: World, what: string, kill: () => Promise<void>, promotion: Promotion): Promise<void> {
  let outcome: Outcome;
  try {
    outcome = await underLoad(world, kill, { settleMs: 2_000, maxMs: 30_000 });
  } finally {
    promotion.close();
  }
  const m = measure(outcome);
  const named = promotion.at() === undefined ? undefined : promotion.at()! - outcome.killedAt;
  report(what, m, outcome, named);
  expect(m.window, 'cookie sessions answered 503 while Redis failed over').to.not.equal(undefined);
  expect(m.window!.to, 'the failover window').to.be.at.most(DETECTION_MS + FAILOVER_MS);
  expect(named, 'a new primary named').to.not.equal(undefined);
  expect(m.window!.to - named!, 'the window after the new primary was named').to.be.at.most(FOLLOW_MS);
  expect(m.errors).to.equal(0);
  afterTheWindow(outcome, m);
  signOutsDuringHeld(outcome);
  await everyEndHolds(world, outcome.ended);
  await signOutHolds(world, LEASE_MS + 500);
}

function report(what: string, m: Measured, o: Outcome, named?: number): void {
  const window = m.window ? `503 from +${m.window.from} ms to +${m.window.to} ms` : 'no 503';
  const promoted = named === undefined ? '' : `, new primary named at +${named} ms`;
  const during = o.during.map((d) => `${d.status} at ${d.instance} +${d.startedMs}..+${d.answeredMs} ms`).join(', ');
  console.log(
    `    [failover] ${what}: ${m.requests} requests, ${window} (${m.unavailable} answered 503)${promoted}, ${m.errors} errors; sign-outs during it: ${during}`,
  );
}

/** A sign-out made now answers within `ms`, on to the realm's logout, `durable` or saying it is not yet, and holds at both instances. */
async function signOutHolds(world: World, ms: number, durable = true): Promise<void> {
  const { jar } = await signIn(world.urls.A, 'bob');
  const copy = jar.clone();
  const started = Date.now();
  const out = await browse(jar, `${world.urls.B}/auth/logout`);
  expect(Date.now() - started, 'the sign-out answered in time').to.be.below(ms);
  expect(out.status).to.equal(302);
  expect(!notYetDurable(out.location), 'answered as durable').to.equal(durable);
  await everyEndHolds(world, [copy]);
}

/** Lose `server` (kill or freeze it), let the load run past the detection, then bring it back and let the topology settle. */
async function nothingChanges(world: World, what: string, lose: () => Promise<TopologyRedis>, back: (server: TopologyRedis) => Promise<void>, durable = true) {
  let lost: TopologyRedis | undefined;
  const outcome = await underLoad(world, async () => void (lost = await lose()), { settleMs: DETECTION_MS + 2_000, maxMs: 15_000 });
  const m = measure(outcome);
  report(what, m, outcome);
  expect(m.unavailable, 'requests answered 503').to.equal(0);
  expect(m.errors).to.equal(0);
  if (durable) signOutsDuringHeld(outcome);
  await everyEndHolds(world, outcome.ended);
  await signOutHolds(world, durable ? LEASE_MS + 500 : REPLICA_WAIT_MS + LEASE_MS + 500, durable);
  await back(lost!);
}

describe('a Redis server lost under load: Sentinel (a primary, a replica, three sentinels)', function () {
  this.timeout(120_000);
  let redis: SentinelRedis;
  let world: World;

  before(async () => {
    redis = await startSentinelRedis({ downAfterMs: DETECTION_MS });
    world = await startWorld({ REDIS_SENTINELS: redis.sentinels, REDIS_SENTINEL_NAME: redis.name });
  });
  after(async () => {
    await world?.close();
    await redis?.stop();
  });

  const killed = (server: () => TopologyRedis) => async () => {
    const s = server();
    await s.stop();
    return s;
  };
  const restarted = async (server: TopologyRedis) => {
    await server.start();
    await redis.settled();
  };

  it('a sentinel killed: users see nothing of it', async () => {
    await nothingChanges(
      world,
      'Sentinel, a sentinel killed',
      killed(() => redis.sentinelProcesses[0]!),
      restarted,
    );
  });

  it('the replica killed: users see nothing of it, sign-outs answer at once', async () => {
    await nothingChanges(
      world,
      'Sentinel, the replica killed',
      killed(() => redis.nodes.find((n) => n !== redis.primary())!),
      restarted,
    );
  });

  it('the primary killed: 503 while the replica is promoted, then no error; every session ended before the kill or during the failover stays ended at both instances', async () => {
    const primary = redis.primary();
    await failsOver(world, 'Sentinel, the primary killed', () => primary.stop(), await sentinelPromotion(redis));
    await restarted(primary);
  });

  it('the primary hung (SIGSTOP) and left hung: the same, and the instances follow the promoted replica without anyone killing the hung one', async () => {
    const primary = redis.primary();
    try {
      await failsOver(world, 'Sentinel, the primary hung', async () => primary.freeze(), await sentinelPromotion(redis));
    } finally {
      primary.thaw();
    }
    await redis.settled();
  });
});

describe('a Redis server lost under load: Cluster (three primaries, a replica each)', function () {
  this.timeout(120_000);
  let redis: RedisCluster;
  let world: World;

  before(async () => {
    redis = await startRedisCluster({ nodeTimeoutMs: DETECTION_MS });
    world = await startWorld({ REDIS_CLUSTER_NODES: redis.nodesSetting });
  });
  after(async () => {
    await world?.close();
    await redis?.stop();
  });

  const holder = () => redis.primaryOf('chat-gateway:ended');

  it('the primary holding the ended sessions killed: 503 while its replica is promoted, then no error; every session ended before the kill or during the failover stays ended at both instances', async () => {
    const primary = holder();
    await failsOver(world, 'Cluster, the primary holding the ended sessions killed', () => primary.stop(), await clusterPromotion(redis, primary));
    await primary.start();
    await redis.settled();
  });

  it('the primary holding the ended sessions, where every instance listens, hung (SIGSTOP) and left hung: the same, without anyone killing it', async () => {
    const primary = holder();
    try {
      await failsOver(world, 'Cluster, the primary holding the ended sessions hung', async () => primary.freeze(), await clusterPromotion(redis, primary));
    } finally {
      primary.thaw();
    }
    await redis.settled();
  });

  it('a replica of that primary hung: no 503 and no error; sign-outs say they are not durable yet (through the realm, back to the words) until it is back', async () => {
    const replicaOf = (primary: TopologyRedis) =>
      redis.nodes.find(
        (n) => n.alive() && n !== primary && new RegExp(`^master_port:${primary.port}\\s*$`, 'm').test(redisCli(n.port, 'info', 'replication')),
      )!;
    await nothingChanges(
      world,
      'Cluster, a replica of the primary holding the ended sessions hung',
      async () => {
        const replica = replicaOf(holder());
        replica.freeze();
        return replica;
      },
      async (replica) => {
        replica.thaw();
        await redis.settled();
      },
      false,
    );
  });
});
