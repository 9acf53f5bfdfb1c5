// `npm start` on a fresh clone: no UPSTREAM_URL, so the sandbox. Spawned for real, driven over
// HTTP like a newcomer's browser: provider buttons, a tenant link, the IdP's login form, the own
// files of the sysadmin, the 401 on the export; and again with the bypass switched on.
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loginThroughIdp } from '../../sandbox/idp-browser.js';
import { browse, Jar } from '../support/cookie-jar.js';
import { demoAccounts } from '../../sandbox/demo-realm.js';
import { sandboxSeed, seededFileNames } from '../../sandbox/seed.js';
import { freePort } from '../support/raw-http.js';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { startOpenWebUI } from '../../sandbox/open-webui/stand-in.js';
import { startSandbox } from '../../sandbox/main.js';
import { loadSettings } from '../../config/settings.js';
import { CHECKED_VERSIONS } from '../../policies/open-webui-releases.js';
import { accepts, alive, descendants, exited, listeningPorts } from '../support/process-tree.js';
import { eventually, sleep } from '../support/wait.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
  stop(): Promise<void>;
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `npm start` in its own process group, with only PATH and HOME from this environment. */
async function npmStart(env: Record<string, string> = {}): Promise<Running> {
  const [port, idpPort] = [await freePort(), await freePort()];
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    detached: true,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port), SANDBOX_IDP_PORT: String(idpPort), ...env },
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const pgid = child.pid!;
  const stop = async () => {
    // Ctrl-C in a terminal: SIGINT to the whole group. Everything must stop by itself.
    if (groupAlive(pgid)) process.kill(-pgid, 'SIGINT');
    const deadline = Date.now() + 8_000;
    while (groupAlive(pgid) && Date.now() < deadline) await sleep(50);
    if (groupAlive(pgid)) {
      process.kill(-pgid, 'SIGKILL');
      throw new Error(`the sandbox did not stop on SIGINT:\n${output}`);
    }
  };
  try {
    const url = await new Promise<string>((ok, fail) => {
      const timer = setInterval(() => {
        const m = /Sandbox ready: (http:\/\/\S+?)\/?\s/.exec(output);
        if (m) {
          clearInterval(timer);
          ok(m[1]!);
        }
      }, 50);
      child.once('exit', (code) => {
        clearInterval(timer);
        fail(new Error(`npm start exited with ${code} before the banner:\n${output}`));
      });
      setTimeout(() => {
        clearInterval(timer);
        fail(new Error(`no banner after 20 s:\n${output}`));
      }, 20_000);
    });
    return { child, url, output: () => output, stop };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}

async function signInAs(url: string, username: string): Promise<Jar> {
  const jar = new Jar(url);
  const start = await browse(jar, `${url}/auth/start?returnTo=%2F`);
  expect(start.status, start.text).to.equal(302);
  const { callbackUrl } = await loginThroughIdp(start.location!, username, undefined, new Jar());
  const callback = await browse(jar, callbackUrl);
  expect(callback.status, callback.text).to.equal(302);
  return jar;
}

interface FileList {
  items: Array<{ id: string; user_id: string; filename: string }>;
  total: number;
}

describe('sandbox: `npm start` without UPSTREAM_URL', function () {
  this.timeout(30_000);
  let sandbox: Running;

  before(async () => {
    sandbox = await npmStart();
  });
  after(async () => {
    await sandbox?.stop();
  });

  it('prints the address, every demo login, the tenant links and how to flip the switches', () => {
    const out = sandbox.output();
    expect(out, 'nothing to warn about').to.not.include('WARNING');
    expect(sandbox.url).to.match(/^http:\/\/localhost:\d+$/);
    for (const a of demoAccounts) expect(out).to.include(`${a.username} / ${a.password}`);
    expect(out).to.include(`${sandbox.url}/acme`);
    expect(out).to.include(`${sandbox.url}/globex`);
    expect(out).to.match(/Flip them while it runs: edit \/\S+\/policy\.yaml and save \(no restart\); the stand-in takes them too:/);
    expect(out).to.include('CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "true"   admins see everyone\'s files');
    expect(out).to.include('Or at start: CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true npm start');
  });

  it('the provider buttons and the tenant link of the demo realm', async () => {
    const list = await browse(undefined, `${sandbox.url}/api/v1/auth-providers/`);
    expect(list.json()).to.deep.equal({
      welcome_page: false,
      providers: [
        { alias: 'acme-entra', display_name: 'Acme (Microsoft Entra ID)' },
        { alias: 'globex-okta', display_name: 'Globex (Okta)' },
      ],
    });
    const page = await browse(undefined, `${sandbox.url}/auth/login`);
    expect(page.status).to.equal(200);
    expect(page.text).to.include('Acme (Microsoft Entra ID)').and.to.include('Globex (Okta)');
    // A logged-out visit of the tenant's address goes to its provider; the embedded IdP shows the hint.
    const link = await browse(undefined, `${sandbox.url}/acme`);
    expect(link.status).to.equal(302);
    const start = await browse(new Jar(sandbox.url), link.location!);
    expect(start.status).to.equal(302);
    expect(new URL(start.location!).searchParams.get('kc_idp_hint')).to.equal('acme-entra');
    const jar = new Jar();
    let at = start.location!;
    let html = '';
    for (let i = 0; i < 5 && !html; i++) {
      const res = await fetch(at, { redirect: 'manual', headers: { cookie: jar.header(at) } });
      jar.store(res.headers.getSetCookie(), at);
      if (res.status >= 300 && res.status < 400) at = new URL(res.headers.get('location')!, at).href;
      else html = await res.text();
    }
    expect(html).to.match(/id="idp-hint" data-hint="acme-entra"/);
  });

  it('the sysadmin signs in through the IdP form and sees only their own files; the export is 401', async () => {
    const jar = await signInAs(sandbox.url, 'sysadmin');
    const session = (await browse(jar, `${sandbox.url}/auth/session`)).json<{ authenticated: boolean; user: { admin: boolean } }>();
    expect(session).to.deep.include({ authenticated: true });
    expect(session.user.admin).to.equal(true);
    const files = await browse(jar, `${sandbox.url}/api/v1/files/`);
    expect(files.status).to.equal(200);
    const body = files.json<FileList>();
    const sysadmin = demoAccounts.find((a) => a.username === 'sysadmin')!;
    expect(body.items.map((f) => f.filename).sort()).to.deep.equal(seededFileNames(sysadmin).sort());
    expect(body.total).to.equal(2);
    const exportRes = await browse(jar, `${sandbox.url}/api/v1/chats/all/db`);
    expect(exportRes.status).to.equal(401);
    // a plain user as well
    const alice = await signInAs(sandbox.url, 'alice');
    const own = (await browse(alice, `${sandbox.url}/api/v1/files/`)).json<FileList>();
    expect(own.items.map((f) => f.filename).sort()).to.deep.equal(seededFileNames(demoAccounts.find((a) => a.username === 'alice')!).sort());
    // the sandbox logs at the gateway's default level, info, as the README and check-config say: a line per request
    await sleep(100);
    expect(sandbox.output())
      .to.match(/"msg":"request"/)
      .and.match(/"path":"\/api\/v1\/chats\/all\/db","status":401/);
  });

  it('the policy file the banner names: a switch flipped there is seen without a restart, and flipped back', async () => {
    const file = /Flip them while it runs: edit (\S+) and save/.exec(sandbox.output())![1]!;
    const original = readFileSync(file, 'utf8');
    expect(original).to.include('CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "false"').and.include('IDP_TENANT_IDP_ALIASES: "acme=acme-entra');
    const jar = await signInAs(sandbox.url, 'sysadmin');
    const total = async () => (await browse(jar, `${sandbox.url}/api/v1/files/`)).json<FileList>().total;
    const until = async (what: () => Promise<unknown>, want: unknown) => {
      for (let i = 0; i < 60 && (await what()) !== want; i++) await new Promise((r) => setTimeout(r, 50));
      return what();
    };
    expect(await total()).to.equal(2);
    try {
      writeFileSync(
        file,
        original
          .replace('CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "false"', 'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "true"')
          .replace('CHATUI_ENABLE_ADMIN_EXPORT: "false"', 'CHATUI_ENABLE_ADMIN_EXPORT: "true"'),
      );
      expect(await until(total, sandboxSeed().files.length), 'everyone\u2019s files').to.equal(sandboxSeed().files.length);
      expect((await browse(jar, `${sandbox.url}/api/v1/chats/all/db`)).status, 'the export').to.equal(200);
      expect(sandbox.output()).to.match(/"event":"policy-applied".*"source":"file"/);
    } finally {
      writeFileSync(file, original);
    }
    expect(await until(total, 2), 'flipped back').to.equal(2);
    expect((await browse(jar, `${sandbox.url}/api/v1/chats/all/db`)).status).to.equal(401);
  });

  it('operations endpoints answer; the stand-in is set like the gateway, so no drift', async () => {
    const ready = await browse(undefined, `${sandbox.url}/readyz`);
    expect(ready.status, ready.text).to.equal(200);
    const body = ready.json<{ ready: boolean; checks: Record<string, { ok: boolean; detail: string }> }>();
    expect(body.ready).to.equal(true);
    expect(body.checks.policyDrift!.ok).to.equal(true);
    expect((await browse(undefined, `${sandbox.url}/metrics`)).text).to.include('gateway_requests_total');
  });
});

describe('sandbox: CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true npm start', function () {
  this.timeout(30_000);
  let sandbox: Running;

  before(async () => {
    // and one switch mistyped, as a newcomer may
    sandbox = await npmStart({ CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'true', CHATUI_ENABLE_ADMIN_EXPOT: 'true' });
  });
  after(async () => {
    await sandbox?.stop();
  });

  it('a mistyped setting is warned about, in the banner and the log, as a production start and check-config do; its switch stays off', async () => {
    const warning = 'CHATUI_ENABLE_ADMIN_EXPOT: not a setting of the gateway, ignored; did you mean CHATUI_ENABLE_ADMIN_EXPORT?';
    expect(sandbox.output()).to.include(`WARNING: ${warning}`);
    const logged = sandbox
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; event?: string; msg: string });
    expect(logged.filter((l) => l.event === 'config-warning')).to.deep.equal([logged.find((l) => l.event === 'config-warning')]);
    expect(logged.find((l) => l.event === 'config-warning')).to.include({ level: 40, msg: warning });
    expect(sandbox.output()).to.include('CHATUI_ENABLE_ADMIN_EXPORT=false');
  });

  it("the banner says so, and the sysadmin sees everyone's files; the export stays 401", async () => {
    expect(sandbox.output()).to.include('Policy switches at start: CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true');
    expect(sandbox.output()).to.include('Held by the environment, which wins over the file: CHATUI_BYPASS_ADMIN_ACCESS_CONTROL');
    // the banner describes what the switch does now, not the default
    expect(sandbox.output()).to.include("as sysadmin: everyone's files").and.not.include("only sysadmin's own files");
    const jar = await signInAs(sandbox.url, 'sysadmin');
    const body = (await browse(jar, `${sandbox.url}/api/v1/files/`)).json<FileList>();
    const all = sandboxSeed().files;
    expect(body.total).to.equal(all.length);
    expect(body.items.map((f) => f.id).sort()).to.deep.equal(all.map((f) => f.id).sort());
    expect((await browse(jar, `${sandbox.url}/api/v1/chats/all/db`)).status).to.equal(401);
    // a plain user still sees only their own
    const bob = await signInAs(sandbox.url, 'bob');
    const own = (await browse(bob, `${sandbox.url}/api/v1/files/`)).json<FileList>();
    expect(own.items.every((f) => f.user_id === 'user-bob')).to.equal(true);
    expect(own.total).to.equal(2);
  });
});

describe('sandbox: what it says when something is not right', function () {
  this.timeout(60_000);

  it('a port in use: exit 2 naming it, and nothing left behind (not even its temporary directory)', async () => {
    const taken = createServer();
    await new Promise<void>((ok) => taken.listen(0, '127.0.0.1', ok));
    const port = (taken.address() as AddressInfo).port;
    const tmp = mkdtempSync(join(tmpdir(), 'sandbox-port-taken-'));
    try {
      const run = spawnSync('npm', ['start'], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 30_000,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port), SANDBOX_IDP_PORT: String(await freePort()), TMPDIR: tmp },
      });
      expect(run.status, run.stdout + run.stderr).to.equal(2);
      expect(run.stderr).to.include(`The sandbox did not start: port ${port} is in use`);
      // (tsx keeps its own cache there)
      expect(
        readdirSync(tmp).filter((f) => f.startsWith('chat-gateway-sandbox-')),
        'its temporary directory',
      ).to.deep.equal([]);
    } finally {
      taken.close();
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('behind an Open WebUI release the gateway was not checked against: a warning atop the banner; with refuse-admins, why the demo model was not registered', async () => {
    const env = {
      CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
      CHATUI_ENABLE_ADMIN_EXPORT: 'false',
      UPSTREAM_RELEASE_POLICY: 'refuse-admins',
      PORT: '0',
      LOG_LEVEL: 'error',
    };
    const upstream = await startOpenWebUI({ version: '0.12.5' });
    const sandbox = await startSandbox(loadSettings(env, { stageFiles: false }), {
      env: { ...env, SANDBOX_IDP_PORT: '0' },
      print: false,
      signals: false,
      command: 'npm run sandbox:open-webui',
      openWebUI: {
        url: upstream.url,
        version: '0.12.5',
        model: { id: 'canned-answers', name: 'Canned answers', description: 'canned', baseUrl: 'http://127.0.0.1:9/v1' },
        seed: true,
        close: () => upstream.close(),
      },
    });
    try {
      const warnings = sandbox.banner.split('\n').filter((l) => l.startsWith('  WARNING: '));
      expect(warnings[0]).to.include(
        `WARNING: Open WebUI 0.12.5: NOT a release the route table was checked against (${CHECKED_VERSIONS.join(', ')}); routes it added are refused for admins`,
      );
      expect(warnings[0]).to.include('npm run routes:check -- 0.12.5').and.to.include('UPSTREAM_RELEASE_POLICY=refuse-admins');
      const model = warnings.find((l) => l.includes('the model canned-answers'));
      expect(model, sandbox.banner).to.include(
        "the demo data: the model canned-answers was not registered for everyone, so nobody can chat with it until an admin registers a model: sysadmin's POST /api/v1/models/create answered 403: The chat front-end runs a release this gateway was not checked against: admin requests are refused until it is (Open WebUI 0.12.5) (UPSTREAM_RELEASE_POLICY=refuse-admins refuses every API request of an admin",
      );
    } finally {
      await sandbox.close();
    }
  });
});

describe('sandbox: kept apart from production', function () {
  this.timeout(30_000);

  it('the production build compiles no sandbox or test code', () => {
    const r = spawnSync(process.execPath, [resolve(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--listFilesOnly'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    const ours = r.stdout.split('\n').filter((f) => f.startsWith(ROOT) && !f.includes('/node_modules/'));
    expect(ours.length, r.stderr).to.be.greaterThan(5);
    expect(ours.filter((f) => f.includes('/sandbox/') || f.includes('/test/'))).to.deep.equal([]);
  });

  it('the sandbox owns the stand-ins and the demo realm: no production or sandbox file imports test code', () => {
    const sources = ['config', 'policies', 'gateway', 'sandbox'].flatMap((dir) =>
      readdirSync(resolve(ROOT, dir), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts'))
        .map((f) => join(dir, f)),
    );
    expect(sources.length).to.be.greaterThan(20);
    const offenders = sources.filter((f) => /from '(\.\.\/)+test\/|import\('(\.\.\/)+test\//.test(readFileSync(resolve(ROOT, f), 'utf8')));
    expect(offenders).to.deep.equal([]);
  });

  it('NODE_ENV=production without UPSTREAM_URL is an error, not the sandbox', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'gateway/main.ts'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_ENV: 'production' },
      timeout: 20_000,
    });
    expect(r.status).to.equal(2);
    expect(r.stderr).to.include('UPSTREAM_URL: required in production');
    expect(r.stdout + r.stderr).to.not.include('Sandbox ready');
  });
});

describe('sandbox: a signal to its npm process stops everything it started', function () {
  this.timeout(30_000);

  it('every sandbox command execs node: npm passes SIGTERM and SIGINT to its one child, and no shell in between drops them', () => {
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    const sandboxes = Object.entries(scripts).filter(([name]) => name === 'start' || name.startsWith('sandbox:'));
    expect(sandboxes.map(([name]) => name)).to.include.members(['start', 'sandbox:open-webui', 'sandbox:keycloak']);
    for (const [name, command] of sandboxes) expect(command, name).to.match(/^exec node /);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const)
    it(`${signal} to the npm process of \`npm start\`: no process and no listening port left`, async () => {
      const sandbox = await npmStart();
      const npm = sandbox.child;
      const started = descendants(npm.pid!);
      const ports = listeningPorts(started);
      expect(ports.length, 'the gateway and the OpenID provider listen').to.be.at.least(2);
      process.kill(npm.pid!, signal);
      const stopped = await eventually(() => exited(npm) && started.every((p) => !alive(p)), { ms: 10_000, everyMs: 100 });
      expect(stopped, `still running: ${started.filter(alive).join(', ')}\n${sandbox.output()}`).to.equal(true);
      for (const port of ports) expect(await accepts(port), `port ${port}`).to.equal(false);
      await sandbox.stop();
    });
});

describe('`npm start` runs what NODE_ENV says (bin/start.mjs)', function () {
  this.timeout(60_000);
  // A copy of what the image holds: dist/ from `npm run build`, bin/start.mjs, package.json. It
  // lives under .tmp/ inside the repository so the production dependencies resolve from
  // node_modules, and it carries a `tsx` of its own that fails when loaded: nearer than the real
  // one, it shows whether a branch loads the TypeScript loader.
  let dir = '';
  const baseEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
  const startCmd = () =>
    (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start.replace(/^exec /, '').split(' ');
  const run = (env: Record<string, string>) => {
    const [, ...args] = startCmd();
    return spawnSync(process.execPath, args, { cwd: dir, env: { ...baseEnv, ...env }, encoding: 'utf8', timeout: 20_000 });
  };

  before(() => {
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    dir = mkdtempSync(join(ROOT, '.tmp', 'start-'));
    const tsc = spawnSync(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(dir, 'dist')],
      { encoding: 'utf8' },
    );
    expect(tsc.status, tsc.stdout + tsc.stderr).to.equal(0);
    mkdirSync(join(dir, 'bin'));
    cpSync(join(ROOT, 'bin/start.mjs'), join(dir, 'bin/start.mjs'));
    cpSync(join(ROOT, 'config'), join(dir, 'dist/config'), { recursive: true, filter: (f) => !f.endsWith('.ts') });
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    mkdirSync(join(dir, 'node_modules/tsx/esm'), { recursive: true });
    writeFileSync(join(dir, 'node_modules/tsx/package.json'), '{"name":"tsx","type":"module","exports":{"./esm/api":"./esm/api.js"}}\n');
    writeFileSync(join(dir, 'node_modules/tsx/esm/api.js'), 'throw new Error("tsx was loaded");\n');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('NODE_ENV=production: the compiled gateway listens and answers, and tsx is never loaded', async () => {
    const env = {
      ...baseEnv,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: '0',
      PUBLIC_URL: 'https://chat.example',
      UPSTREAM_URL: 'http://127.0.0.1:9',
      OIDC_ISSUER_URL: 'http://127.0.0.1:9/realms/platform',
      OIDC_CLIENT_ID: 'chat-gateway',
      OIDC_CLIENT_SECRET: 'a-client-secret-of-some-length',
      SESSION_SECRET: 'a-session-secret-of-at-least-32-characters',
      CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
      CHATUI_ENABLE_ADMIN_EXPORT: 'false',
      DRIFT_CHECK_SECONDS: '0',
    };
    const [, ...args] = startCmd();
    const child = spawn(process.execPath, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      const onData = (c: Buffer) => {
        output += c;
        const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)".*"gateway listening"/.exec(output);
        if (m) resolve(m[1]!);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code) => reject(new Error(`exited with ${code}:\n${output}`)));
    });
    try {
      const health = await fetch(`${url}/healthz`);
      expect(health.status).to.equal(200);
      expect(await health.json()).to.deep.equal({ status: 'ok' });
      expect(output).not.to.include('tsx was loaded');
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('NODE_ENV=production without a build: exit 2 and the command that builds it', () => {
    renameSync(join(dir, 'dist'), join(dir, 'dist.away'));
    try {
      const r = run({ NODE_ENV: 'production' });
      expect(r.status).to.equal(2);
      expect(r.stderr).to.include('dist/gateway/main.js is missing: run `npm run build` first');
    } finally {
      renameSync(join(dir, 'dist.away'), join(dir, 'dist'));
    }
  });

  it('from the sources without the dev dependencies (`npm ci --omit=dev`): exit 2 and what to run', () => {
    const r = run({});
    expect(r.status).to.equal(2);
    expect(r.stderr).to.include('needs the dev dependencies (tsx): run `npm install`');
  });
});
