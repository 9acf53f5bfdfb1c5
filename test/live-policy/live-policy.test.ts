// The live settings (POLICY_FILE) on a running gateway, in front of the Open WebUI stand-in, over real
// sockets: a flip applies without a restart and is audited, /readyz and /metrics name the version;
// an invalid file is refused and the policy in force stays; the file is followed however it
// changes (written in place, renamed over by an editor, a Kubernetes ConfigMap's `..data` symlink
// swapped, a directory re-pointed that no watch sees: the poll), and SIGHUP reads it at once in
// the gateway's own process. The stand-in runs with Open WebUI's own switches on: the gateway's
// policy is what narrows (docs/operating/settings.md, "Live settings").
import { expect } from 'chai';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings } from '../../config/settings.js';
import type { Env } from '../../config/env.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import type { PolicyStatus, Readiness } from '../../gateway/operations/operations.js';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { baseEnv, capturingObservability, gatewayProcess, headerAuthenticator, type LogLine } from '../support/gateway-harness.js';
import { seedChats, seedFiles, seedUsers } from '../support/raw-http.js';
import { PEOPLE, policyText } from '../support/live-policy.js';
import { sleep } from '../support/wait.js';

interface World {
  upstream: OpenWebUIStandIn;
  gateway: Gateway;
  url: string;
  dir: string;
  lines: LogLine[];
  as(who: 'admin' | 'user', path: string): Promise<Response>;
  readyz(): Promise<Readiness & { policy: PolicyStatus }>;
  close(): Promise<void>;
}

/** The stand-in with Open WebUI's own switches on, and a gateway reading `file` (relative to a new directory) as POLICY_FILE. */
async function world(o: { file?: string; layout?: (dir: string) => void; env?: Env } = {}): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'live-policy-'));
  const providers = join(dir, 'providers.json');
  writeFileSync(providers, JSON.stringify(demoIdentityProviders));
  if (o.layout) o.layout(dir);
  else writeFileSync(join(dir, 'policy.yaml'), policyText({ bypass: false, exportOn: false }));
  const upstream = await startOpenWebUI({ users: seedUsers, files: seedFiles(), chats: seedChats(), bypassAdminAccessControl: true, enableAdminExport: true });
  const settings = loadSettings(
    baseEnv(upstream.url, {
      CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: undefined,
      CHATUI_ENABLE_ADMIN_EXPORT: undefined,
      POLICY_FILE: join(dir, o.file ?? 'policy.yaml'),
      DRIFT_CHECK_SECONDS: '0',
      IDP_PROVIDERS_FILE: providers,
      ...o.env,
    }),
    { stageFiles: false },
  );
  const obs = capturingObservability();
  const gateway = await createGateway(settings, { obs, authenticator: headerAuthenticator(PEOPLE) });
  const { url } = await gateway.start(0, '127.0.0.1');
  return {
    upstream,
    gateway,
    url,
    dir,
    lines: obs.lines,
    as: (who, path) => fetch(`${url}${path}`, { headers: { 'x-test-caller': who } }),
    readyz: async () => (await fetch(`${url}/readyz`)).json() as Promise<Readiness & { policy: PolicyStatus }>,
    async close() {
      await gateway.close();
      await upstream.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Milliseconds until the gateway applies a policy other than the one in force now (fails after `ms`). */
async function applied(gateway: Gateway, change: () => void, ms = 5_000): Promise<number> {
  const before = gateway.policy.current.version;
  const started = performance.now();
  change();
  while (gateway.policy.current.version === before) {
    if (performance.now() - started > ms) throw new Error(`no new policy applied within ${ms} ms`);
    await sleep(5);
  }
  return performance.now() - started;
}

/** How many files the admin's list holds (0.12.4 answers `{items, total}`). */
const adminFiles = async (w: World) => ((await (await w.as('admin', '/api/v1/files/')).json()) as { total: number }).total;

/** Two policies in folders `a` (bypass off) and `b` (bypass on), and `current` pointing at `a`. */
function twoPolicies(dir: string): void {
  for (const [name, bypass] of [
    ['a', false],
    ['b', true],
  ] as const) {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'policy.yaml'), policyText({ bypass, exportOn: false }));
  }
  symlinkSync('a', join(dir, 'current'));
}

/** `current` re-pointed at once (a new link renamed over the old one), as a deploy tool swaps it. */
function repoint(dir: string, to: string): void {
  symlinkSync(to, join(dir, 'current.tmp'));
  renameSync(join(dir, 'current.tmp'), join(dir, 'current'));
}

describe('live settings: POLICY_FILE followed by a running gateway', function () {
  this.timeout(30_000);
  let w: World;
  afterEach(async () => {
    await w?.close();
  });

  it('a flip applies without a restart: the admin\u2019s file list and the export follow it; audited with old and new values; /readyz and /metrics name the version', async () => {
    w = await world();
    expect(await adminFiles(w), 'bypass off: the admin\u2019s own files only').to.equal(6);
    expect((await w.as('admin', '/api/v1/chats/all/db')).status, 'export off').to.equal(401);
    const first = await w.readyz();
    expect(first.policy).to.include({ source: 'file', file: join(w.dir, 'policy.yaml'), version: w.gateway.policy.current.version });
    expect(w.lines.find((l) => l.event === 'policy-applied')).to.include({ name: 'audit', version: first.policy.version, source: 'file' });

    const ms = await applied(w.gateway, () => writeFileSync(join(w.dir, 'policy.yaml'), policyText({ bypass: true, exportOn: true })));
    console.log(`      [live policy] written in place -> applied in ${ms.toFixed(0)} ms`);
    expect(await adminFiles(w), 'bypass on: everyone\u2019s files').to.equal(15);
    expect((await w.as('admin', '/api/v1/chats/all/db')).status, 'export on').to.equal(200);
    const now = await w.readyz();
    expect(now.policy.version).to.equal(w.gateway.policy.current.version).and.not.equal(first.policy.version);
    expect(Date.parse(now.policy.appliedAt)).to.be.greaterThan(Date.parse(first.policy.appliedAt));
    const audit = w.lines.filter((l) => l.event === 'policy-applied').at(-1)!;
    expect(audit).to.deep.include({
      name: 'audit',
      level: 30,
      source: 'file',
      version: now.policy.version,
      previousVersion: first.policy.version,
      changes: [
        { setting: 'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL', from: 'false', to: 'true' },
        { setting: 'CHATUI_ENABLE_ADMIN_EXPORT', from: 'false', to: 'true' },
      ],
    });
    // Open WebUI's own switches are read at its start: a widening is said to hold only where they allow it
    expect(w.lines.filter((l) => l.event === 'policy-widened').map((l) => l.msg)).to.deep.equal([
      "CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true takes effect where Open WebUI's own BYPASS_ADMIN_ACCESS_CONTROL is true as well (Open WebUI reads it at its start)",
      "CHATUI_ENABLE_ADMIN_EXPORT=true takes effect where Open WebUI's own ENABLE_ADMIN_EXPORT is true as well (Open WebUI reads it at its start)",
    ]);
    const metrics = await (await fetch(`${w.url}/metrics`)).text();
    expect(metrics).to.include(`gateway_policy_info{version="${now.policy.version}",source="file"} 1`);
    expect(metrics).to.not.include(`version="${first.policy.version}"`);
    expect(metrics).to.match(/^gateway_policy_applied_timestamp_seconds \d+(\.\d+)?$/m);
  });

  it('the login routing follows too: the provider list becomes the welcome page, both of its settings in one answer', async () => {
    w = await world();
    const list = async () => (await (await fetch(`${w.url}/api/v1/auth-providers/`)).json()) as { welcome_page: boolean; providers: Array<{ alias: string }> };
    const before = await list();
    expect(before.welcome_page).to.equal(false);
    expect(before.providers.map((p) => p.alias)).to.not.include('direct-login');
    await applied(w.gateway, () => writeFileSync(join(w.dir, 'policy.yaml'), policyText({ bypass: false, exportOn: false, welcome: true })));
    expect(await list()).to.deep.equal({ welcome_page: true, providers: [{ alias: 'direct-login', display_name: 'Administrator login' }] });
    const page = await (await fetch(`${w.url}/auth/login`)).text();
    expect(page).to.match(/welcome/i);
  });

  it('an invalid file is refused, naming the field: the policy in force stays, /readyz says so; fixed, it applies', async () => {
    w = await world();
    const version = w.gateway.policy.current.version;
    writeFileSync(join(w.dir, 'policy.yaml'), 'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "true"\nCHATUI_ENABLE_ADMIN_EXPORT: "TRUE"\n');
    let refused: LogLine | undefined;
    for (let i = 0; i < 200 && !refused; i++, await sleep(10)) refused = w.lines.find((l) => l.event === 'policy-refused' && l.name !== 'audit');
    expect(refused, 'an error line').to.deep.include({
      level: 50,
      problems: [`CHATUI_ENABLE_ADMIN_EXPORT (POLICY_FILE ${join(w.dir, 'policy.yaml')}): must be exactly 'true' or 'false' (got "TRUE")`],
      version,
    });
    expect(
      w.lines.some((l) => l.event === 'policy-refused' && l.name === 'audit' && l.level === 50),
      'an audit error event',
    ).to.equal(true);
    // nothing of the refused file applied, not even its valid half
    expect(w.gateway.policy.current.version).to.equal(version);
    expect(await adminFiles(w)).to.equal(6);
    const ready = await w.readyz();
    expect(ready.policy.version).to.equal(version);
    expect(ready.policy.refused?.problems).to.deep.equal(refused!.problems);
    expect(await (await fetch(`${w.url}/metrics`)).text()).to.match(/^gateway_policy_refused_total 1$/m);
    // the poll does not say it again for the same bytes
    await sleep(1_200);
    expect(w.lines.filter((l) => l.event === 'policy-refused' && l.name !== 'audit')).to.have.length(1);

    await applied(w.gateway, () => writeFileSync(join(w.dir, 'policy.yaml'), policyText({ bypass: true, exportOn: false })));
    expect(await adminFiles(w)).to.equal(15);
    expect((await w.readyz()).policy.refused).to.equal(undefined);
  });

  it('a Kubernetes ConfigMap volume: the `..data` symlink swapped atomically to a new directory', async () => {
    // as the kubelet lays it out: policy.yaml -> ..data/policy.yaml, ..data -> ..<timestamp>/
    const version = (dir: string, name: string, text: string) => {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, 'policy.yaml'), text);
    };
    w = await world({
      layout: (dir) => {
        version(dir, '..2026_01_01_00_00_00.1', policyText({ bypass: false, exportOn: false }));
        symlinkSync('..2026_01_01_00_00_00.1', join(dir, '..data'));
        symlinkSync('..data/policy.yaml', join(dir, 'policy.yaml'));
      },
    });
    expect(await adminFiles(w)).to.equal(6);
    const ms = await applied(w.gateway, () => {
      version(w.dir, '..2026_01_01_00_01_00.2', policyText({ bypass: true, exportOn: false }));
      symlinkSync('..2026_01_01_00_01_00.2', join(w.dir, '..data_tmp'));
      renameSync(join(w.dir, '..data_tmp'), join(w.dir, '..data'));
      rmSync(join(w.dir, '..2026_01_01_00_00_00.1'), { recursive: true });
    });
    console.log(`      [live policy] ConfigMap symlink swap -> applied in ${ms.toFixed(0)} ms`);
    expect(await adminFiles(w)).to.equal(15);
  });

  it('an editor\u2019s save: a new file renamed over the old one', async () => {
    w = await world();
    const ms = await applied(w.gateway, () => {
      writeFileSync(join(w.dir, '.policy.yaml.swp'), policyText({ bypass: true, exportOn: false }));
      renameSync(join(w.dir, '.policy.yaml.swp'), join(w.dir, 'policy.yaml'));
    });
    console.log(`      [live policy] renamed over -> applied in ${ms.toFixed(0)} ms`);
    expect(await adminFiles(w)).to.equal(15);
  });

  it('a change no watch sees (the file\u2019s directory re-pointed) is found by the poll within POLICY_FILE_CHECK_MS', async () => {
    w = await world({
      file: 'current/policy.yaml',
      env: { POLICY_FILE_CHECK_MS: '300' },
      layout: (dir) => {
        twoPolicies(dir);
      },
    });
    const ms = await applied(w.gateway, () => {
      repoint(w.dir, 'b');
    });
    console.log(`      [live policy] directory re-pointed, POLICY_FILE_CHECK_MS=300 -> applied in ${ms.toFixed(0)} ms`);
    expect(ms).to.be.lessThan(300 + 50 + 500);
    expect(await adminFiles(w)).to.equal(15);
  });

  it('a file being written is never applied half-written: a change is taken once two readings agree', async () => {
    w = await world();
    const version = w.gateway.policy.current.version;
    // the first half of a new file (valid YAML, the export line still missing), then the rest 20 ms later
    const next = policyText({ bypass: true, exportOn: true });
    const cut = next.indexOf('CHATUI_ENABLE_ADMIN_EXPORT');
    writeFileSync(join(w.dir, 'policy.yaml'), next.slice(0, cut));
    await sleep(20);
    writeFileSync(join(w.dir, 'policy.yaml'), next);
    for (let i = 0; i < 100 && w.gateway.policy.current.version === version; i++) await sleep(10);
    const applied = w.lines.filter((l) => l.event === 'policy-applied' && l.previousVersion !== undefined);
    expect(applied.map((l) => l.changes)).to.deep.equal([
      [
        { setting: 'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL', from: 'false', to: 'true' },
        { setting: 'CHATUI_ENABLE_ADMIN_EXPORT', from: 'false', to: 'true' },
      ],
    ]);
    expect(w.lines.some((l) => l.event === 'policy-refused')).to.equal(false);
  });
});

/** A gateway process following `dir`/current/policy.yaml, its poll a minute away: only a signal reads it soon. */
const followingProcess = (dir: string, env: Env = {}, o: Parameters<typeof gatewayProcess>[1] = {}) =>
  gatewayProcess(
    {
      ...baseEnv('http://127.0.0.1:9', { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: undefined, CHATUI_ENABLE_ADMIN_EXPORT: undefined }),
      HOST: '127.0.0.1',
      PORT: '0',
      DRIFT_CHECK_SECONDS: '0',
      POLICY_FILE: join(dir, 'current', 'policy.yaml'),
      POLICY_FILE_CHECK_MS: '60000',
      ...env,
    },
    o,
  );

/** An upstream whose GET /api/version (the release check a gateway's start waits for) answers only when released. */
async function heldUpstream(): Promise<{ url: string; asked: Promise<void>; release(): void; close(): Promise<void> }> {
  const waiting: ServerResponse[] = [];
  let released = false;
  let asked!: () => void;
  const answer = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"version":"0.12.4"}');
  const server = createServer((req, res) => {
    if (req.url !== '/api/version') return void res.writeHead(404).end();
    if (released) return answer(res);
    waiting.push(res);
    asked();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    asked: new Promise<void>((resolve) => (asked = resolve)),
    release() {
      released = true;
      for (const res of waiting.splice(0)) answer(res);
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('live settings: SIGHUP in the gateway\u2019s own process (gateway/main.ts)', function () {
  this.timeout(60_000);

  it('SIGHUP reads POLICY_FILE at once (a change no watch saw, the poll a minute away); the process keeps running; the startup line names the version', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'live-policy-hup-'));
    twoPolicies(dir);
    let gw: Awaited<ReturnType<typeof gatewayProcess>> | undefined;
    try {
      gw = await followingProcess(dir);
      const port = gw.port;
      const policy = async () => ((await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as { policy: PolicyStatus }).policy;
      const start = await policy();
      const listening = JSON.parse(
        gw
          .output()
          .split('\n')
          .find((l) => l.includes('gateway listening'))!,
      ) as { policy: PolicyStatus };
      expect(listening.policy).to.include({ version: start.version, source: 'file', appliedAt: start.appliedAt });
      repoint(dir, 'b');
      await sleep(500);
      expect((await policy()).version, 'no watch saw it, the poll is a minute away').to.equal(start.version);
      const sent = performance.now();
      gw.child.kill('SIGHUP');
      let now = start;
      while (now.version === start.version && performance.now() - sent < 5_000) now = await policy();
      console.log(`      [live policy] SIGHUP -> applied in ${(performance.now() - sent).toFixed(0)} ms (gateway process)`);
      expect(now).to.include({ source: 'signal' });
      expect(now.version).to.not.equal(start.version);
      expect(gw.exited(), 'still running after SIGHUP').to.equal(null);
      const running = gw;
      const audit = () =>
        running
          .output()
          .split('\n')
          .filter((l) => l.includes('"policy-applied"'))
          .map((l) => JSON.parse(l) as LogLine);
      // its output comes through a pipe, maybe after the answer that showed the new version
      for (let i = 0; i < 100 && audit().at(-1)?.source !== 'signal'; i++) await sleep(20);
      expect(audit().at(-1)).to.deep.include({
        source: 'signal',
        version: now.version,
        changes: [{ setting: 'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL', from: 'false', to: 'true' }],
      });
    } finally {
      gw?.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('GATEWAY_WORKERS=2: SIGHUP to the primary reaches every worker, each applies the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'live-policy-hup-workers-'));
    twoPolicies(dir);
    let gw: Awaited<ReturnType<typeof gatewayProcess>> | undefined;
    try {
      gw = await followingProcess(dir, { GATEWAY_WORKERS: '2' });
      const running = gw;
      const applied = () =>
        running
          .output()
          .split('\n')
          .filter((l) => l.includes('"policy-applied"') && l.includes('"signal"'))
          .map((l) => JSON.parse(l) as LogLine);
      // both workers listening: each logs its own line
      for (let i = 0; i < 200 && gw.output().split('gateway listening').length < 3; i++) await sleep(50);
      repoint(dir, 'b');
      gw.child.kill('SIGHUP');
      for (let i = 0; i < 100 && applied().length < 2; i++) await sleep(50);
      const lines = applied();
      expect(new Set(lines.map((l) => l.pid)).size, 'two workers applied it').to.equal(2);
      expect(new Set(lines.map((l) => l.version)).size, 'the same version').to.equal(1);
      expect(gw.exited(), 'still running').to.equal(null);
      // every worker answers with it (a new connection each: the primary hands them out in turn)
      for (let i = 0; i < 4; i++) {
        const ready = (await (await fetch(`http://127.0.0.1:${gw.port}/readyz`, { headers: { connection: 'close' } })).json()) as { policy: PolicyStatus };
        expect(ready.policy).to.include({ version: lines[0]!.version, source: 'signal' });
      }
    } finally {
      gw?.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const [entry, args] of [
    ['gateway/main.ts', undefined],
    ['bin/start.mjs (npm start)', ['bin/start.mjs']],
  ] as const)
    it(`${entry}: a SIGHUP while it starts (its release check unanswered) is kept: it lives, listens, then reads POLICY_FILE once`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'live-policy-hup-starting-'));
      twoPolicies(dir);
      const upstream = await heldUpstream();
      let child: ChildProcess | undefined;
      try {
        const started = followingProcess(dir, { UPSTREAM_URL: upstream.url }, { ...(args ? { entry: [...args] } : {}), starting: (c) => (child = c) });
        started.catch(() => {});
        await upstream.asked;
        // its first reading of the file settled (50 ms), then a change only a signal reads soon
        await sleep(400);
        repoint(dir, 'b');
        child!.kill('SIGHUP');
        await sleep(300);
        expect({ code: child!.exitCode, signal: child!.signalCode }, 'still running after SIGHUP while starting').to.deep.equal({ code: null, signal: null });
        upstream.release();
        const gw = await started;
        const listening = JSON.parse(
          gw
            .output()
            .split('\n')
            .find((l) => l.includes('gateway listening'))!,
        ) as { policy: PolicyStatus };
        expect(listening.policy.source, 'started with the file as it was read at start').to.equal('file');
        const signalled = () =>
          gw
            .output()
            .split('\n')
            .filter((l) => l.includes('"policy-applied"') && l.includes('"signal"'))
            .map((l) => JSON.parse(l) as LogLine);
        for (let i = 0; i < 100 && signalled().length === 0; i++) await sleep(50);
        await sleep(300);
        expect(signalled(), 'the kept SIGHUP read the file once, after start').to.have.length(1);
        // its start waited for the answer released after the signal (not the check's own time limit)
        expect(gw.output()).to.match(/"event":"upstream-release","release":"0\.12\.4"/);
        expect(signalled()[0]).to.deep.include({ changes: [{ setting: 'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL', from: 'false', to: 'true' }] });
        const ready = (await (await fetch(`http://127.0.0.1:${gw.port}/readyz`)).json()) as { policy: PolicyStatus };
        expect(ready.policy).to.include({ source: 'signal', version: signalled()[0]!.version });
        expect(ready.policy.version).to.not.equal(listening.policy.version);
      } finally {
        child?.kill('SIGKILL');
        await upstream.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

  it('GATEWAY_WORKERS=2: a SIGHUP to the primary while its workers still load reaches each once it runs; none dies', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'live-policy-hup-workers-starting-'));
    twoPolicies(dir);
    let gw: Awaited<ReturnType<typeof gatewayProcess>> | undefined;
    let child: ChildProcess | undefined;
    try {
      gw = await followingProcess(
        dir,
        { GATEWAY_WORKERS: '2' },
        {
          starting: (c, output) => {
            child = c;
            // the moment the primary has forked its workers: they are still loading the gateway
            const poll = setInterval(() => {
              if (!output().includes('gateway primary supervising workers')) return;
              clearInterval(poll);
              c.kill('SIGHUP');
            }, 5);
            c.once('exit', () => clearInterval(poll));
          },
        },
      );
      const running = gw;
      const answered = () =>
        running
          .output()
          .split('\n')
          .filter((l) => /"policy-(applied|unchanged)"/.test(l) && l.includes('"signal"'))
          .map((l) => JSON.parse(l) as LogLine);
      for (let i = 0; i < 200 && (gw.output().split('gateway listening').length < 3 || answered().length < 2); i++) await sleep(50);
      await sleep(300);
      expect(gw.output(), 'no worker died').to.not.include('gateway worker died');
      expect(gw.output().split('gateway listening').length - 1, 'two workers listening').to.equal(2);
      expect(
        answered()
          .map((l) => l.pid)
          .sort(),
        'each worker answered the SIGHUP once',
      ).to.have.length(2);
      expect(new Set(answered().map((l) => l.pid)).size).to.equal(2);
      expect(gw.exited(), 'still running').to.equal(null);
    } finally {
      child?.kill('SIGKILL');
      gw?.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('live settings: `npm run check-config -- --policy-file <file>`', function () {
  this.timeout(60_000);
  const run = (file: string) =>
    spawnSync('npm', ['run', '--silent', 'check-config', '--', '--policy-file', file], {
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...baseEnv('http://127.0.0.1:9', { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: undefined, CHATUI_ENABLE_ADMIN_EXPORT: undefined }),
      },
    });

  it('a candidate that would be refused: exit 2, every problem named with the field; a good one: exit 0, its version and values', () => {
    const dir = mkdtempSync(join(tmpdir(), 'live-policy-check-'));
    try {
      writeFileSync(join(dir, 'bad.yaml'), 'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "yes"\nCHATUI_ENABLE_ADMIN_EXPORT: "false"\nSHOW_IDP_LOGN: "true"\n');
      const bad = run(join(dir, 'bad.yaml'));
      expect(bad.status, bad.stdout + bad.stderr).to.equal(2);
      expect(bad.stderr).to.include(`CHATUI_BYPASS_ADMIN_ACCESS_CONTROL (POLICY_FILE ${join(dir, 'bad.yaml')}): must be exactly 'true' or 'false' (got "yes")`);
      expect(bad.stderr).to.include(`SHOW_IDP_LOGN (POLICY_FILE ${join(dir, 'bad.yaml')}): not a setting of the gateway`);
      writeFileSync(join(dir, 'good.yaml'), policyText({ bypass: true, exportOn: false }));
      const good = run(join(dir, 'good.yaml'));
      expect(good.status, good.stdout + good.stderr).to.equal(0);
      expect(good.stdout).to.match(
        new RegExp(`Live settings \\(policy version [0-9a-f]{12}, from the environment and POLICY_FILE ${join(dir, 'good.yaml').replace(/[.]/g, '\\.')}\\):`),
      );
      expect(good.stdout).to.include('  CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
