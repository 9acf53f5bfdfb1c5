// The deployment files: docker-compose.yml (rendered by `docker-compose config`, alone and with its
// Sentinel variant docker-compose.sentinel.yml laid over it), the gateway's policy file it mounts
// (deploy/policy/policy.yaml), the Keycloak realm export and the Dockerfile. The compose checks need a Compose client (the Debian package
// `docker-compose`, or the `docker compose` plugin); they are skipped, saying why, only when
// neither is installed. No Docker engine is needed: `config` only renders the file.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KNOWN_VARIABLES, loadSettings } from '../../config/settings.js';
import { LIVE_VARIABLES, readPolicy } from '../../config/policy.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

// Parsed JSON/YAML documents: deliberately loose, every access is checked by an assertion.
type Doc = any;

const SWITCHES = ['CHATUI_BYPASS_ADMIN_ACCESS_CONTROL', 'CHATUI_ENABLE_ADMIN_EXPORT'] as const;
const HEADER_DEFAULTS: Record<string, string> = {
  WEBUI_AUTH_TRUSTED_EMAIL_HEADER: 'X-Forwarded-Email',
  WEBUI_AUTH_TRUSTED_NAME_HEADER: 'X-Forwarded-Name',
  WEBUI_AUTH_TRUSTED_ROLE_HEADER: 'X-Forwarded-Role',
  WEBUI_AUTH_TRUSTED_GROUPS_HEADER: 'X-Forwarded-Groups',
};
const TEST_SECRETS: Record<string, string> = {
  OIDC_CLIENT_SECRET: 'test-oidc-client-secret',
  SESSION_SECRET: 'test-session-secret-0123456789abcdef0123456789',
  WEBUI_SECRET_KEY: 'test-webui-secret-key',
};

// ---------------------------------------------------------------------------------------------
// Compose client and YAML parsing

interface ComposeTool {
  bin: string;
  pre: string[];
  version: string;
  json: boolean;
}

/** Only PATH and HOME: no CHATUI_* or secrets from the developer's or CI's shell may leak in. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin' };
  if (process.env.HOME) env.HOME = process.env.HOME;
  return env;
}

function detectCompose(): ComposeTool | null {
  const candidates: Array<[string, string[]]> = [
    ['docker-compose', []],
    ['docker', ['compose']],
  ];
  for (const [bin, pre] of candidates) {
    const r = spawnSync(bin, [...pre, 'version', '--short'], { encoding: 'utf8', env: cleanEnv(), timeout: 30_000 });
    if (r.error || r.status !== 0) continue;
    const version = r.stdout.trim().replace(/^v/, '');
    const major = Number(version.split('.')[0]);
    return { bin, pre, version, json: Number.isFinite(major) && major >= 2 };
  }
  return null;
}

type Parse = (text: string) => Doc;

async function yamlParser(): Promise<{ name: string; parse: Parse } | null> {
  for (const name of ['yaml', 'js-yaml']) {
    try {
      const mod: Doc = await import(name);
      const fn = mod.parse ?? mod.load ?? mod.default?.parse ?? mod.default?.load;
      if (typeof fn === 'function') return { name, parse: (text) => fn(text) };
    } catch {
      // not installed: try the next one
    }
  }
  for (const py of ['python3', '/usr/bin/python3']) {
    const probe = spawnSync(py, ['-c', 'import yaml'], { encoding: 'utf8', timeout: 30_000 });
    if (probe.error || probe.status !== 0) continue;
    return {
      name: `${py} (PyYAML)`,
      parse: (text) => {
        const r = spawnSync(py, ['-c', 'import sys, json, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)'], {
          input: text,
          encoding: 'utf8',
          timeout: 30_000,
        });
        if (r.status !== 0) throw new Error(`PyYAML failed: ${r.stderr}`);
        return JSON.parse(r.stdout);
      },
    };
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Env files

function parseEnvLines(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m || line.trim().startsWith('#')) continue;
    out.set(m[1]!, (m[2] ?? '').replace(/^(['"])(.*)\1$/, '$2'));
  }
  return out;
}

/** The stage file as found in the tree, or a stand-in with the two switches when it is absent. */
function baseEnvText(stage: 'dev' | 'prod'): string {
  const file = join(ROOT, 'config', `${stage}.env`);
  if (existsSync(file)) return readFileSync(file, 'utf8');
  return [
    `NODE_ENV=${stage === 'prod' ? 'production' : 'development'}`,
    'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=false',
    'CHATUI_ENABLE_ADMIN_EXPORT=false',
    '',
  ].join('\n');
}

/** A copy of `text` with `set` applied (replacing or appending lines) and `drop` removed. */
function editEnv(text: string, set: Record<string, string>, drop: string[] = []): string {
  const pending = new Map(Object.entries(set));
  const lines: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/.exec(line);
    const key = m && !line.trim().startsWith('#') ? m[1]! : undefined;
    if (key && drop.includes(key)) continue;
    if (key && pending.has(key)) {
      lines.push(`${key}=${pending.get(key)}`);
      pending.delete(key);
      continue;
    }
    lines.push(line);
  }
  for (const [k, v] of pending) lines.push(`${k}=${v}`);
  return lines.join('\n') + '\n';
}

/** The dev env file plus test secrets where the file has none. */
function devEnvWith(set: Record<string, string> = {}, drop: string[] = []): string {
  const base = baseEnvText('dev');
  const present = parseEnvLines(base);
  const secrets = Object.fromEntries(Object.entries(TEST_SECRETS).filter(([k]) => !(present.get(k) ?? '').trim()));
  return editEnv(base, { ...secrets, ...set }, drop);
}

// ---------------------------------------------------------------------------------------------
// Rendered compose documents

/** A service's volumes as {source, target, readOnly}, whichever form the client rendered. */
function volumesOf(service: Doc): Array<{ source: string; target: string; readOnly: boolean }> {
  return (service?.volumes ?? []).map((v: Doc) => {
    if (typeof v === 'string') {
      const [source = '', target = '', mode = ''] = v.split(':');
      return { source, target, readOnly: mode.split(',').includes('ro') };
    }
    return { source: String(v.source ?? ''), target: String(v.target ?? ''), readOnly: v.read_only === true };
  });
}

/**
 * Why the gateway would not follow its policy file as rendered: empty when POLICY_FILE lies in a
 * read-only bind mount of a directory (a mounted file keeps the old one after an editor renames a
 * new one over it), the mounted file reads as a valid policy, and no environment of the gateway
 * sets a live setting (it would win over the file, which would then do nothing for it).
 */
function composePolicyProblems(doc: Doc): string[] {
  const problems: string[] = [];
  const gw = doc.services?.gateway;
  const env = envOf(gw);
  const file = env.POLICY_FILE;
  if (!file) return ['the gateway has no POLICY_FILE'];
  const mount = volumesOf(gw).find((v) => v.target === dirname(file));
  if (!mount) problems.push(`no volume is mounted at ${dirname(file)}, the directory of POLICY_FILE`);
  else {
    if (!mount.readOnly) problems.push('the policy directory is mounted read-write');
    if (!existsSync(join(mount.source, file.slice(dirname(file).length + 1))))
      problems.push(`${mount.source} holds no ${file.slice(dirname(file).length + 1)}`);
    else {
      const read = readPolicy(
        { file, checkMs: 1_000, environment: {}, defaults: {} },
        readFileSync(join(mount.source, 'policy.yaml'), 'utf8'),
        KNOWN_VARIABLES,
      );
      if (!read.ok) problems.push(...read.problems);
    }
  }
  if (volumesOf(gw).some((v) => v.target === file)) problems.push('POLICY_FILE itself is mounted, not its directory');
  for (const key of LIVE_VARIABLES) if (env[key] !== undefined) problems.push(`the gateway's environment sets ${key}, which would win over the file`);
  if (gw?.env_file) problems.push('the gateway loads an env_file, whose live settings would win over the file');
  return problems;
}

/** The mounted policy file as the host sees it (for loading the gateway's settings here). */
function hostPolicyFile(doc: Doc): string {
  const file = envOf(doc.services.gateway).POLICY_FILE!;
  const mount = volumesOf(doc.services.gateway).find((v) => v.target === dirname(file))!;
  return join(mount.source, file.slice(dirname(file).length + 1));
}

function envOf(service: Doc): Record<string, string> {
  const env = service?.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((entry: string) => {
        const i = entry.indexOf('=');
        return i < 0 ? [entry, ''] : [entry.slice(0, i), entry.slice(i + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]));
}

function networksOf(service: Doc): string[] {
  const n = service?.networks;
  if (!n) return ['default'];
  return Array.isArray(n) ? n.map(String) : Object.keys(n);
}

function aliasesOf(service: Doc, network: string): string[] {
  const n = service?.networks;
  if (!n || Array.isArray(n)) return [];
  return (n[network]?.aliases ?? []).map(String);
}

interface PortMapping {
  hostIp?: string;
  published?: string;
  target: string;
}

function portsOf(service: Doc): PortMapping[] {
  const ports: Doc[] = service?.ports ?? [];
  return ports.map((p) => {
    if (typeof p === 'object' && p !== null) {
      const out: PortMapping = { target: String(p.target) };
      if (p.published !== undefined && p.published !== null) out.published = String(p.published);
      if (p.host_ip) out.hostIp = String(p.host_ip);
      return out;
    }
    const parts = String(p)
      .replace(/\/(tcp|udp)$/, '')
      .split(':');
    const target = parts.pop()!;
    const out: PortMapping = { target };
    const published = parts.pop();
    if (published !== undefined) out.published = published;
    const hostIp = parts.join(':');
    if (hostIp) out.hostIp = hostIp;
    return out;
  });
}

function healthTest(service: Doc): string {
  const t = service?.healthcheck?.test;
  return Array.isArray(t) ? t.join(' ') : String(t ?? '');
}

/**
 * Why Open WebUI could be reached other than through the gateway, per the rendered compose
 * document: empty when it lives only on the loopback of the gateway's network namespace.
 */
function composeExposureProblems(doc: Doc): string[] {
  const problems: string[] = [];
  const ow = doc.services?.['open-webui'];
  const gw = doc.services?.gateway;
  if (!ow || !gw) return ['open-webui or gateway service missing'];
  if (ow.network_mode !== 'service:gateway') problems.push(`open-webui network_mode is ${ow.network_mode}`);
  if (ow.networks) problems.push('open-webui has networks of its own');
  if ((ow.ports ?? []).length > 0) problems.push('open-webui publishes ports');
  if ((ow.expose ?? []).length > 0) problems.push('open-webui exposes ports');
  const owEnv = envOf(ow);
  if (owEnv.HOST !== '127.0.0.1') problems.push(`open-webui HOST is ${owEnv.HOST ?? '(unset: 0.0.0.0)'}`);
  const owPort = owEnv.PORT ?? '8080';
  let upstream: URL | null = null;
  try {
    upstream = new URL(envOf(gw).UPSTREAM_URL ?? '');
  } catch {
    // reported below
  }
  if (!upstream || upstream.hostname !== '127.0.0.1' || (upstream.port || '80') !== owPort) {
    problems.push(`gateway UPSTREAM_URL ${envOf(gw).UPSTREAM_URL} is not http://127.0.0.1:${owPort}`);
  }
  if (gw.network_mode !== undefined) problems.push(`gateway network_mode is ${gw.network_mode}`);
  const gwPort = envOf(gw).PORT ?? '8080';
  for (const p of portsOf(gw)) {
    if (p.target !== gwPort) problems.push(`gateway publishes container port ${p.target}`);
  }
  for (const [name, svc] of Object.entries<Doc>(doc.services)) {
    if (name === 'open-webui') continue;
    if (/^(service:(gateway|open-webui)|container:)/.test(String(svc.network_mode ?? ''))) {
      problems.push(`${name} joins the namespace (${svc.network_mode})`);
    }
  }
  return problems;
}

/**
 * Why Redis could be reached by anyone but the gateway: empty when it cannot. `servers` are the
 * Redis services (the Sentinel variant's replica and sentinels share their network with each other).
 */
function redisExposureProblems(doc: Doc, servers: readonly string[] = ['redis']): string[] {
  const problems: string[] = [];
  for (const server of servers) {
    const redis = doc.services?.[server];
    if (!redis) {
      problems.push(`${server} service missing`);
      continue;
    }
    if ((redis.ports ?? []).length > 0) problems.push(`${server} publishes ports`);
    if (redis.network_mode) problems.push(`${server} network_mode is ${redis.network_mode}`);
    for (const n of networksOf(redis)) {
      if (doc.networks?.[n]?.internal !== true) problems.push(`${server} network ${n} is not internal`);
      for (const [name, svc] of Object.entries<Doc>(doc.services)) {
        if (servers.includes(name) || name === 'gateway' || svc.network_mode) continue;
        if (networksOf(svc).includes(n)) problems.push(`${name} shares network ${n} with ${server}`);
      }
    }
    if (!networksOf(doc.services.gateway).some((n) => networksOf(redis).includes(n))) {
      problems.push(`the gateway cannot reach ${server}`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------

describe('deployment: docker-compose.yml rendered by `docker-compose config`', function () {
  this.timeout(120_000);

  let tool: ComposeTool | null = null;
  let parser: { name: string; parse: Parse } | null = null;
  let work = '';
  let project = '';
  let counter = 0;
  let dev: Doc;

  function render(envText: string, variants: string[] = []): { status: number | null; out: string; err: string } {
    const envFile = join(work, `run-${++counter}.env`);
    writeFileSync(envFile, envText);
    const files = ['docker-compose.yml', ...variants].flatMap((f) => ['-f', join(project, f)]);
    const args = [...tool!.pre, ...files, '--env-file', envFile, 'config'];
    if (tool!.json) args.push('--format', 'json');
    const r = spawnSync(tool!.bin, args, { cwd: work, encoding: 'utf8', env: cleanEnv(), timeout: 60_000 });
    if (r.error) throw r.error;
    return { status: r.status, out: r.stdout, err: r.stderr };
  }

  function renderOk(envText: string, variants: string[] = []): Doc {
    const r = render(envText, variants);
    expect(r.status, `compose config failed:\n${r.err}${r.out}`).to.equal(0);
    const doc = tool!.json ? JSON.parse(r.out) : parser!.parse(r.out);
    expect(doc?.services, 'rendered document has services').to.be.an('object');
    return doc;
  }

  before(async function () {
    tool = detectCompose();
    if (!tool) {
      console.log(
        '    [deployment] skipping the compose checks: neither `docker-compose` nor `docker compose` is installed ' +
          '(Debian: apt-get install -y docker-compose)',
      );
      this.skip();
    }
    if (!tool.json) {
      parser = await yamlParser();
      if (!parser) {
        throw new Error(
          `${tool.bin} ${tool.version} prints YAML only and no YAML parser was found ` +
            '(npm `yaml`/`js-yaml`, or python3 with PyYAML: apt-get install -y python3-yaml)',
        );
      }
    }
    // A private copy of the project layout the compose file refers to: the compose file itself,
    // config/<stage>.env and the policy directory it mounts. Keeps the check independent of concurrent edits.
    work = mkdtempSync(join(tmpdir(), 'deployment-test-'));
    project = join(work, 'project');
    mkdirSync(join(project, 'config'), { recursive: true });
    for (const f of ['docker-compose.yml', 'docker-compose.sentinel.yml']) copyFileSync(join(ROOT, f), join(project, f));
    for (const stage of ['dev', 'prod'] as const) writeFileSync(join(project, 'config', `${stage}.env`), baseEnvText(stage));
    mkdirSync(join(project, 'deploy', 'policy'), { recursive: true });
    copyFileSync(join(ROOT, 'deploy', 'policy', 'policy.yaml'), join(project, 'deploy', 'policy', 'policy.yaml'));
    dev = renderOk(devEnvWith());
  });

  after(function () {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('renders the four services from the dev env file', function () {
    expect(Object.keys(dev.services)).to.include.members(['keycloak', 'open-webui', 'gateway', 'redis']);
  });

  it('runs open-webui in the gateway network namespace, on loopback, with no port or network', function () {
    const ow = dev.services['open-webui'];
    expect(ow.network_mode, 'open-webui network_mode').to.equal('service:gateway');
    expect(ow.ports ?? [], 'open-webui ports').to.have.length(0);
    expect(ow.networks, 'open-webui networks').to.equal(undefined);
    expect(envOf(ow).HOST).to.equal('127.0.0.1');
    expect(envOf(dev.services.gateway).UPSTREAM_URL).to.equal(`http://127.0.0.1:${envOf(ow).PORT}`);
    expect(composeExposureProblems(dev)).to.deep.equal([]);
  });

  // Each mutation is a way Open WebUI could become reachable from outside the gateway's
  // namespace; the checker the test above relies on must report every one.
  const exposures: Array<[string, (doc: Doc) => void]> = [
    [
      'open-webui gets its own network',
      (d) => {
        delete d.services['open-webui'].network_mode;
        d.services['open-webui'].networks = { edge: null };
      },
    ],
    ['open-webui publishes a port', (d) => void (d.services['open-webui'].ports = ['3000:3000'])],
    ['open-webui binds all interfaces', (d) => void (d.services['open-webui'].environment.HOST = '0.0.0.0')],
    ['open-webui HOST unset (its default is 0.0.0.0)', (d) => void delete d.services['open-webui'].environment.HOST],
    ['UPSTREAM_URL leaves the namespace', (d) => void (d.services.gateway.environment.UPSTREAM_URL = 'http://open-webui:8080')],
    ['another service joins the namespace', (d) => void (d.services.keycloak.network_mode = 'service:gateway')],
    ['the gateway publishes the Open WebUI port', (d) => void d.services.gateway.ports.push('3000:3000')],
    ['the gateway runs in the host network', (d) => void (d.services.gateway.network_mode = 'host')],
  ];
  for (const [what, mutate] of exposures) {
    it(`the exposure check reports: ${what}`, function () {
      const doc = structuredClone(dev);
      for (const name of ['open-webui', 'gateway']) doc.services[name].environment = envOf(doc.services[name]);
      mutate(doc);
      expect(composeExposureProblems(doc), what).to.not.be.empty;
    });
  }

  it('the exposure check reports edits of docker-compose.yml itself, as rendered', function () {
    const original = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
    const edits: Array<[string, string, string]> = [
      // Indented: the service keys, not the header comment.
      ['HOST on all interfaces', '      HOST: 127.0.0.1', '      HOST: 0.0.0.0'],
      ['UPSTREAM_URL by service name', '      UPSTREAM_URL: http://127.0.0.1:3000', '      UPSTREAM_URL: http://open-webui:3000'],
      ['its own network', '    network_mode: "service:gateway"', '    networks: [edge]'],
    ];
    try {
      for (const [what, from, to] of edits) {
        expect(original, what).to.include(from);
        writeFileSync(join(project, 'docker-compose.yml'), original.replace(from, to));
        expect(composeExposureProblems(renderOk(devEnvWith())), what).to.not.be.empty;
      }
    } finally {
      writeFileSync(join(project, 'docker-compose.yml'), original);
    }
  });

  it('keeps Redis on an internal network with the gateway alone, unpublished, as REDIS_URL', function () {
    expect(redisExposureProblems(dev)).to.deep.equal([]);
    const url = new URL(envOf(dev.services.gateway).REDIS_URL!);
    expect(url.protocol).to.equal('redis:');
    expect(url.hostname).to.equal('redis');
    for (const mutate of [
      (d: Doc) => void (d.services.redis.ports = ['6379:6379']),
      (d: Doc) => void (d.services.keycloak.networks = { ...d.services.keycloak.networks, sessions: null }),
      (d: Doc) => void (d.networks.sessions.internal = false),
    ]) {
      const doc = structuredClone(dev);
      mutate(doc);
      expect(redisExposureProblems(doc)).to.not.be.empty;
    }
  });

  /** What is wrong with the Sentinel variant as rendered: empty when the gateway follows three sentinels of its own. */
  function sentinelVariantProblems(doc: Doc): string[] {
    const problems: string[] = [];
    const sentinels = Object.keys(doc.services).filter((n) => /^redis-sentinel-\d+$/.test(n));
    const servers = ['redis', 'redis-replica', ...sentinels];
    problems.push(...redisExposureProblems(doc, servers));
    if (sentinels.length < 3) problems.push(`${sentinels.length} sentinels: one lost must leave a majority`);
    const gw = envOf(doc.services.gateway);
    const named = (gw.REDIS_SENTINELS ?? '').split(',').filter(Boolean);
    if (
      named.sort().join(',') !==
      sentinels
        .map((n) => `${n}:26379`)
        .sort()
        .join(',')
    )
      problems.push(`REDIS_SENTINELS ${gw.REDIS_SENTINELS} is not the sentinel services`);
    for (const n of sentinels) {
      const script = [doc.services[n].command ?? []].flat().join(' ');
      const monitor = /sentinel monitor (\S+) (\S+) 6379 (\d+)/.exec(script);
      if (!monitor || monitor[1] !== gw.REDIS_SENTINEL_NAME) problems.push(`${n} does not monitor REDIS_SENTINEL_NAME ${gw.REDIS_SENTINEL_NAME}`);
      else if (monitor[2] !== 'redis' || Number(monitor[3]) !== Math.floor(sentinels.length / 2) + 1)
        problems.push(`${n} does not watch redis with a majority quorum`);
    }
    const replicaOf = [doc.services['redis-replica']?.command ?? []].flat().join(' ');
    if (!/--replicaof redis 6379/.test(replicaOf)) problems.push('redis-replica is not the replica of redis');
    for (const n of ['redis', 'redis-replica']) {
      if (!/--appendonly yes/.test([doc.services[n]?.command ?? []].flat().join(' ')))
        problems.push(`${n} keeps no append-only file: restarted empty, it would empty its replica`);
    }
    const deps = doc.services.gateway.depends_on ?? {};
    for (const n of sentinels) if (!(Array.isArray(deps) ? deps : Object.keys(deps)).includes(n)) problems.push(`the gateway does not wait for ${n}`);
    try {
      // one topology: the gateway starts with what the variant gives it
      loadSettings(
        { ...gw, POLICY_FILE: hostPolicyFile(doc), OIDC_CLIENT_SECRET: 'x', SESSION_SECRET: 'x'.repeat(32), NODE_ENV: 'development' },
        { stageFiles: false },
      );
    } catch (err) {
      problems.push(`the gateway's settings: ${(err as Error).message}`);
    }
    return problems;
  }

  it('the Sentinel variant (docker-compose.sentinel.yml): a replica and three sentinels beside redis, all on the internal network, unpublished; the gateway follows the sentinels and has no REDIS_URL', function () {
    const doc = renderOk(devEnvWith(), ['docker-compose.sentinel.yml']);
    expect(sentinelVariantProblems(doc)).to.deep.equal([]);
    expect(envOf(doc.services.gateway).REDIS_URL ?? '').to.equal('');
    expect(Object.keys(doc.services)).to.include.members([
      'keycloak',
      'open-webui',
      'gateway',
      'redis',
      'redis-replica',
      'redis-sentinel-1',
      'redis-sentinel-2',
      'redis-sentinel-3',
    ]);
    // Open WebUI stays where it was: the variant changes nothing of the trust boundary.
    expect(composeExposureProblems(doc)).to.deep.equal([]);
    const mutations: Array<[string, (d: Doc) => void]> = [
      ['a sentinel published', (d) => void (d.services['redis-sentinel-2'].ports = ['26379:26379'])],
      ['REDIS_URL as well', (d) => void (d.services.gateway.environment.REDIS_URL = 'redis://redis:6379/0')],
      ['a sentinel not named', (d) => void (d.services.gateway.environment.REDIS_SENTINELS = 'redis-sentinel-1:26379,redis-sentinel-2:26379')],
      ['two sentinels', (d) => void delete d.services['redis-sentinel-3']],
      ['keycloak on the sessions network', (d) => void (d.services.keycloak.networks = { ...d.services.keycloak.networks, sessions: null })],
      ['no append-only file', (d) => void (d.services['redis-replica'].command = ['redis-server', '--replicaof', 'redis', '6379'])],
    ];
    for (const [what, mutate] of mutations) {
      const copy = structuredClone(doc);
      copy.services.gateway.environment = envOf(copy.services.gateway);
      mutate(copy);
      expect(sentinelVariantProblems(copy), what).to.not.be.empty;
    }
  });

  it("points Open WebUI's sign-out at the gateway's /auth/logout", function () {
    const ow = envOf(dev.services['open-webui']);
    expect(ow.WEBUI_AUTH_SIGNOUT_REDIRECT_URL).to.equal(`${envOf(dev.services.gateway).PUBLIC_URL}/auth/logout`);
    const doc = renderOk(devEnvWith({ PUBLIC_URL: 'https://chat.example.test' }));
    expect(envOf(doc.services['open-webui']).WEBUI_AUTH_SIGNOUT_REDIRECT_URL).to.equal('https://chat.example.test/auth/logout');
  });

  it('publishes the gateway on container port 8080 from a network with outside access', function () {
    const gw = dev.services.gateway;
    expect(portsOf(gw).map((p) => p.target)).to.include('8080');
    const external = networksOf(gw).filter((n) => dev.networks?.[n]?.internal !== true);
    expect(external, 'gateway is on a non-internal network').to.not.be.empty;
    expect(envOf(gw).PORT ?? '8080').to.equal('8080');
  });

  for (const [bypass, exportSwitch] of [
    ['true', 'false'],
    ['false', 'true'],
  ] as const) {
    it(`hands Open WebUI its own switches from the env file (bypass=${bypass}, export=${exportSwitch}); the gateway's environment holds none`, function () {
      const doc = renderOk(devEnvWith({ CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: bypass, CHATUI_ENABLE_ADMIN_EXPORT: exportSwitch }));
      const ow = envOf(doc.services['open-webui']);
      expect(ow.BYPASS_ADMIN_ACCESS_CONTROL).to.equal(bypass);
      expect(ow.ENABLE_ADMIN_EXPORT).to.equal(exportSwitch);
      expect(composePolicyProblems(doc)).to.deep.equal([]);
    });
  }

  it('takes Open WebUI\u2019s switches from the stage env file unchanged (dev: both private)', function () {
    const file = parseEnvLines(baseEnvText('dev'));
    const ow = envOf(dev.services['open-webui']);
    expect(ow.BYPASS_ADMIN_ACCESS_CONTROL).to.equal(file.get('CHATUI_BYPASS_ADMIN_ACCESS_CONTROL'));
    expect(ow.ENABLE_ADMIN_EXPORT).to.equal(file.get('CHATUI_ENABLE_ADMIN_EXPORT'));
  });

  it('the gateway follows deploy/policy/policy.yaml: its directory mounted read-only, a valid policy, no live setting in its environment', function () {
    expect(composePolicyProblems(dev)).to.deep.equal([]);
    const mutations: Array<[string, (d: Doc) => void]> = [
      ['the environment sets a switch', (d) => void (d.services.gateway.environment.CHATUI_ENABLE_ADMIN_EXPORT = 'true')],
      ['an env_file', (d) => void (d.services.gateway.env_file = ['config/dev.env'])],
      [
        'the file itself mounted',
        (d) =>
          void (d.services.gateway.volumes = [{ type: 'bind', source: hostPolicyFile(dev), target: envOf(dev.services.gateway).POLICY_FILE, read_only: true }]),
      ],
      [
        'mounted read-write',
        (d) => void (d.services.gateway.volumes = volumesOf(dev.services.gateway).map((v) => ({ type: 'bind', source: v.source, target: v.target }))),
      ],
      ['POLICY_FILE outside the mount', (d) => void (d.services.gateway.environment.POLICY_FILE = '/etc/policy.yaml')],
      ['no POLICY_FILE', (d) => void delete d.services.gateway.environment.POLICY_FILE],
    ];
    for (const [label, mutate] of mutations) {
      const doc = structuredClone(dev);
      if (Array.isArray(doc.services.gateway.environment)) doc.services.gateway.environment = envOf(doc.services.gateway);
      mutate(doc);
      expect(composePolicyProblems(doc), label).to.not.be.empty;
    }
  });

  it('the shipped policy file keeps both switches private and turns no tenant link on', function () {
    const read = readPolicy(
      { checkMs: 1_000, environment: {}, defaults: {} },
      readFileSync(join(ROOT, 'deploy', 'policy', 'policy.yaml'), 'utf8'),
      KNOWN_VARIABLES,
    );
    expect(read.ok && read.policy).to.include({ bypassAdminAccessControl: false, enableAdminExport: false, welcomePage: false, showIdpLogin: false });
    expect(read.ok && read.policy.tenantAliases.size).to.equal(0);
  });

  for (const name of SWITCHES) {
    it(`fails to render when ${name} is missing from the env file`, function () {
      const r = render(devEnvWith({}, [name]));
      expect(r.status, `compose config must fail without ${name}`).to.not.equal(0);
      expect(r.err + r.out).to.include(name);
    });

    it(`fails to render when ${name} is empty`, function () {
      const r = render(devEnvWith({ [name]: '' }));
      expect(r.status, `compose config must fail with an empty ${name}`).to.not.equal(0);
    });
  }

  it('fixes ENABLE_ADMIN_CHAT_ACCESS (and sign-up, the login form) to false on open-webui', function () {
    const ow = envOf(dev.services['open-webui']);
    expect(ow.ENABLE_ADMIN_CHAT_ACCESS).to.match(/^false$/i);
    expect(ow.ENABLE_SIGNUP).to.match(/^false$/i);
    expect(ow.ENABLE_LOGIN_FORM).to.match(/^false$/i);
    expect(ow.WEBUI_SECRET_KEY, 'WEBUI_SECRET_KEY').to.be.a('string').and.not.equal('');
  });

  it('gives open-webui and the gateway the same trusted header names (contract defaults)', function () {
    const ow = envOf(dev.services['open-webui']);
    const gw = envOf(dev.services.gateway);
    const file = parseEnvLines(baseEnvText('dev'));
    for (const [name, fallback] of Object.entries(HEADER_DEFAULTS)) {
      expect(ow[name], `open-webui ${name}`).to.be.a('string').and.not.equal('');
      expect(gw[name], `gateway ${name}`).to.equal(ow[name]);
      if (!file.get(name)) expect(ow[name], name).to.equal(fallback);
    }
  });

  it('keeps the trusted header names equal when the env file changes them', function () {
    const doc = renderOk(devEnvWith({ WEBUI_AUTH_TRUSTED_EMAIL_HEADER: 'X-Test-Email' }));
    expect(envOf(doc.services['open-webui']).WEBUI_AUTH_TRUSTED_EMAIL_HEADER).to.equal('X-Test-Email');
    expect(envOf(doc.services.gateway).WEBUI_AUTH_TRUSTED_EMAIL_HEADER).to.equal('X-Test-Email');
  });

  it('pins every image to a version (no latest, no bare name)', function () {
    for (const [name, svc] of Object.entries<Doc>(dev.services)) {
      if (!svc.image) {
        expect(svc.build, `${name} has an image or a build`).to.not.equal(undefined);
        continue;
      }
      const image = String(svc.image);
      if (image.includes('@sha256:')) continue;
      const tag = /:([^:/]+)$/.exec(image)?.[1];
      expect(tag, `${name} image ${image} has a tag`).to.be.a('string');
      expect(tag, `${name} image tag`).to.not.match(/^(latest|main|dev|nightly|stable)$/i);
      expect(tag, `${name} image tag is a full version`).to.match(/^v?\d+\.\d+\.\d+/);
    }
    expect(dev.services.keycloak.image).to.match(/^quay\.io\/keycloak\/keycloak:26\.\d+\.\d+$/);
    expect(dev.services['open-webui'].image).to.match(/^ghcr\.io\/open-webui\/open-webui:v?\d+\.\d+\.\d+$/);
  });

  it('builds the gateway here, in production mode, with a /healthz healthcheck', function () {
    const gw = dev.services.gateway;
    expect(gw.build, 'gateway build').to.not.equal(undefined);
    expect(healthTest(gw)).to.include('/healthz');
    const env = envOf(gw);
    expect(env.NODE_ENV).to.equal('production');
    expect(env.UPSTREAM_URL).to.equal('http://127.0.0.1:3000');
    expect(env.OIDC_CLIENT_ID).to.equal('chat-gateway');
    for (const name of ['OIDC_ISSUER_URL', 'OIDC_CLIENT_SECRET', 'SESSION_SECRET', 'PUBLIC_URL']) {
      expect(env[name], name).to.be.a('string').and.not.equal('');
    }
    // the login routing's settings are live: in the policy file, never the environment
    const policy = readFileSync(hostPolicyFile(dev), 'utf8');
    for (const name of ['IDP_TENANT_IDP_ALIASES', 'IDP_LOGIN_WELCOME_PAGE', 'SHOW_IDP_LOGIN']) {
      expect(env, name).to.not.have.property(name);
      expect(policy, name).to.match(new RegExp(`^${name}: `, 'm'));
    }
    const deps = gw.depends_on;
    const depNames = Array.isArray(deps) ? deps : Object.keys(deps ?? {});
    expect(depNames).to.include.members(['keycloak', 'redis']);
  });

  it('fails to render without the secrets', function () {
    for (const name of Object.keys(TEST_SECRETS)) {
      const r = render(devEnvWith({ [name]: '' }));
      expect(r.status, `compose config must fail with an empty ${name}`).to.not.equal(0);
    }
  });

  it('gives browsers and the gateway one issuer URL that both can reach', function () {
    const kc = dev.services.keycloak;
    const kcEnv = envOf(kc);
    const gwEnv = envOf(dev.services.gateway);
    const hostname = new URL(kcEnv.KC_HOSTNAME!);
    expect(gwEnv.OIDC_ISSUER_URL).to.equal(`${hostname.origin}/realms/platform`);
    expect(hostname.hostname, 'not localhost: inside the gateway container that is the gateway').to.not.match(
      /^(localhost|127\.0\.0\.1|\[::1\])$|\.localhost$/,
    );
    // The gateway resolves the public name to the keycloak container through a network alias ...
    const shared = networksOf(kc).filter((n) => networksOf(dev.services.gateway).includes(n));
    expect(
      shared.some((n) => aliasesOf(kc, n).includes(hostname.hostname)),
      'alias on a shared network',
    ).to.equal(true);
    // ... and reaches it on the same port browsers use.
    const port = hostname.port || (hostname.protocol === 'https:' ? '443' : '80');
    expect(kcEnv.KC_HTTP_PORT ?? '8080', 'keycloak listens on the public port').to.equal(port);
    expect(
      portsOf(kc).some((p) => p.published === port && p.target === port),
      'published port = public port',
    ).to.equal(true);
    expect(port).to.equal('8081');
    // The client secret of the imported realm is the gateway's: the realm file names an
    // environment placeholder that the keycloak service receives with the gateway's value.
    const realm = JSON.parse(readFileSync(join(ROOT, 'deploy', 'keycloak', 'realm-platform.json'), 'utf8'));
    const secret = String(realm.clients.find((c: Doc) => c.clientId === 'chat-gateway').secret);
    const placeholder = /^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}$/.exec(secret);
    expect(placeholder, 'realm client secret is an ${ENV} placeholder').to.not.equal(null);
    expect(kcEnv[placeholder![1]!], `keycloak gets ${placeholder![1]}`).to.equal(gwEnv.OIDC_CLIENT_SECRET);
  });

  it('starts keycloak in dev mode importing the realm file', function () {
    const kc = dev.services.keycloak;
    const command = Array.isArray(kc.command) ? kc.command.join(' ') : String(kc.command);
    expect(command).to.include('start-dev').and.include('--import-realm');
    const volumes: Doc[] = kc.volumes ?? [];
    const targets = volumes.map((v) => (typeof v === 'string' ? v.split(':')[1] : v.target));
    expect(targets.some((t) => String(t).startsWith('/opt/keycloak/data/import/'))).to.equal(true);
    const env = envOf(kc);
    expect(env.KC_BOOTSTRAP_ADMIN_USERNAME).to.be.a('string').and.not.equal('');
    expect(env.KC_BOOTSTRAP_ADMIN_PASSWORD).to.be.a('string').and.not.equal('');
  });

  it('keeps open-webui data on a named volume', function () {
    const volumes: Doc[] = dev.services['open-webui'].volumes ?? [];
    const data = volumes
      .map((v) => (typeof v === 'string' ? { source: v.split(':')[0], target: v.split(':')[1], type: 'volume' } : v))
      .find((v) => v.target === '/app/backend/data');
    expect(data, '/app/backend/data volume').to.not.equal(undefined);
    expect(Object.keys(dev.volumes ?? {})).to.include(data.source);
  });
});

describe('deployment: stage env files', function () {
  for (const stage of ['dev', 'prod']) {
    it(`config/${stage}.env sets both switches to the private 'false'`, function () {
      const file = join(ROOT, 'config', `${stage}.env`);
      if (!existsSync(file)) this.skip();
      const env = parseEnvLines(readFileSync(file, 'utf8'));
      for (const name of SWITCHES) expect(env.get(name), `${stage}: ${name}`).to.equal('false');
    });
  }
});

describe('deployment: Keycloak realm export deploy/keycloak/realm-platform.json', function () {
  const realmFile = join(ROOT, 'deploy', 'keycloak', 'realm-platform.json');
  let realm: Doc;

  before(function () {
    realm = JSON.parse(readFileSync(realmFile, 'utf8'));
  });

  it('is the realm platform with the realm role PlatformSysAdmin and no PlatformAdmin', function () {
    expect(realm.realm).to.equal('platform');
    expect(realm.enabled).to.equal(true);
    const roles: string[] = (realm.roles?.realm ?? []).map((r: Doc) => r.name);
    expect(roles).to.include('PlatformSysAdmin');
    expect(roles).to.not.include('PlatformAdmin');
  });

  function clientMappers(): Doc[] {
    const fromClients = (realm.clients ?? []).flatMap((c: Doc) => c.protocolMappers ?? []);
    const fromScopes = (realm.clientScopes ?? []).flatMap((s: Doc) => s.protocolMappers ?? []);
    return [...fromClients, ...fromScopes];
  }

  function expectInAllTokens(m: Doc, what: string) {
    for (const flag of ['id.token.claim', 'access.token.claim', 'userinfo.token.claim']) {
      expect(m.config?.[flag], `${what}: ${flag}`).to.equal('true');
    }
  }

  it('maps realm roles to a multivalued `roles` claim in ID token, access token and userinfo', function () {
    const m = clientMappers().find((x) => x.config?.['claim.name'] === 'roles');
    expect(m, 'a protocol mapper with claim.name roles').to.not.equal(undefined);
    expect(m.protocolMapper).to.equal('oidc-usermodel-realm-role-mapper');
    expect(m.config.multivalued).to.equal('true');
    expectInAllTokens(m, 'roles');
  });

  it('maps group membership (short names) to `groups` and the tenants attribute to `tenants`', function () {
    const groups = clientMappers().find((x) => x.config?.['claim.name'] === 'groups');
    expect(groups?.protocolMapper).to.equal('oidc-group-membership-mapper');
    expect(groups.config['full.path']).to.equal('false');
    expectInAllTokens(groups, 'groups');
    const tenants = clientMappers().find((x) => x.config?.['claim.name'] === 'tenants');
    expect(tenants?.protocolMapper).to.equal('oidc-usermodel-attribute-mapper');
    expect(tenants.config['user.attribute']).to.equal('tenants');
    expect(tenants.config.multivalued).to.equal('true');
    expectInAllTokens(tenants, 'tenants');
  });

  it('has the confidential client chat-gateway with standard flow and service account', function () {
    const c = (realm.clients ?? []).find((x: Doc) => x.clientId === 'chat-gateway');
    expect(c, 'client chat-gateway').to.not.equal(undefined);
    expect(c.enabled).to.equal(true);
    expect(c.publicClient).to.equal(false);
    expect(c.bearerOnly ?? false).to.equal(false);
    expect(c.clientAuthenticatorType).to.equal('client-secret');
    expect(c.secret, 'client secret').to.be.a('string').and.not.equal('');
    expect(c.standardFlowEnabled).to.equal(true);
    expect(c.serviceAccountsEnabled).to.equal(true);
    expect(c.redirectUris).to.include('http://localhost:8080/auth/callback');
    expect(c.attributes?.['post.logout.redirect.uris']).to.equal('http://localhost:8080/*');
  });

  it('posts back-channel logout tokens, with the session id, to the gateway (POST /auth/backchannel-logout)', function () {
    const c = (realm.clients ?? []).find((x: Doc) => x.clientId === 'chat-gateway');
    // Keycloak reaches the gateway by its compose service name on the `edge` network.
    expect(c.attributes?.['backchannel.logout.url']).to.equal('http://gateway:8080/auth/backchannel-logout');
    expect(c.attributes?.['backchannel.logout.session.required']).to.equal('true');
    const compose = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
    expect(compose)
      .to.match(/\n {2}gateway:\n/)
      .and.match(/- "\$\{PORT:-8080\}:8080"/);
  });

  it("lets the client's service account view identity providers", function () {
    const sa = (realm.users ?? []).find((u: Doc) => u.serviceAccountClientId === 'chat-gateway');
    expect(sa, 'service-account user of chat-gateway').to.not.equal(undefined);
    expect(sa.clientRoles?.['realm-management']).to.include('view-identity-providers');
  });

  it('brokers the five identity providers with their flags', function () {
    const idps: Doc[] = realm.identityProviders ?? [];
    const byAlias = (alias: string) => {
      const p = idps.find((x) => x.alias === alias);
      expect(p, `identity provider ${alias}`).to.not.equal(undefined);
      return p;
    };
    for (const alias of ['acme-entra', 'globex-okta']) {
      const p = byAlias(alias);
      expect(p.providerId, alias).to.equal('oidc');
      expect(p.enabled, alias).to.equal(true);
      expect(p.linkOnly ?? false, alias).to.equal(false);
      expect(p.hideOnLogin ?? false, alias).to.equal(false);
    }
    const hidden = byAlias('hidden-saml');
    expect(hidden.enabled).to.equal(true);
    expect(hidden.hideOnLogin).to.equal(true);
    expect(hidden.linkOnly ?? false).to.equal(false);
    const linkOnly = byAlias('partner-linkonly');
    expect(linkOnly.enabled).to.equal(true);
    expect(linkOnly.linkOnly).to.equal(true);
    expect(byAlias('legacy-disabled').enabled).to.equal(false);
    expect(new Set(idps.map((p) => p.alias)).size, 'aliases are unique').to.equal(idps.length);
  });

  it('has the demo users, with PlatformSysAdmin only for sysadmins and PlatformAdmin for nobody', function () {
    const users: Doc[] = realm.users ?? [];
    const user = (name: string) => {
      const u = users.find((x) => x.username === name);
      expect(u, `user ${name}`).to.not.equal(undefined);
      return u;
    };
    const sysadmin = user('sysadmin');
    expect(sysadmin.realmRoles).to.include('PlatformSysAdmin');
    const pw = (sysadmin.credentials ?? []).find((c: Doc) => c.type === 'password');
    expect(pw?.value, 'sysadmin password').to.be.a('string').and.not.equal('');
    expect(pw.temporary).to.equal(false);
    expect(user('alice').attributes?.tenants).to.deep.equal(['acme']);
    expect(user('bob').attributes?.tenants).to.deep.equal(['globex']);
    const tina = user('tina');
    expect(tina.attributes?.tenants).to.deep.equal(['acme']);
    expect(tina.realmRoles ?? []).to.not.include('PlatformSysAdmin');
    for (const u of users) {
      expect(u.realmRoles ?? [], `${u.username} realm roles`).to.not.include('PlatformAdmin');
      expect(Object.values<string[]>(u.clientRoles ?? {}).flat(), `${u.username} client roles`).to.not.include('PlatformAdmin');
    }
    for (const g of realm.groups ?? []) {
      expect(g.realmRoles ?? [], `group ${g.name}`).to.not.include('PlatformAdmin');
    }
  });

  it('declares the tenants attribute in the user profile, editable by admins only', function () {
    const providers: Doc[] = realm.components?.['org.keycloak.userprofile.UserProfileProvider'] ?? [];
    const raw = providers[0]?.config?.['kc.user.profile.config']?.[0];
    expect(raw, 'user profile config').to.be.a('string');
    const profile = JSON.parse(raw);
    const tenants = profile.attributes.find((a: Doc) => a.name === 'tenants');
    expect(tenants?.multivalued).to.equal(true);
    expect(tenants.permissions.edit).to.deep.equal(['admin']);
  });
});

describe('deployment: Dockerfile and .dockerignore', function () {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  // Instructions with continuation lines joined and comments dropped.
  const instructions = dockerfile
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const args = new Map<string, string>();
  for (const l of instructions) {
    const m = /^ARG\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)/i.exec(l);
    if (m) args.set(m[1]!, m[2]!);
  }
  const expand = (s: string) => s.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, n: string) => args.get(n) ?? '');
  const froms = instructions.filter((l) => /^FROM\s/i.test(l)).map((l) => expand(l.split(/\s+/)[1]!));
  const lastFrom = instructions.map((l) => /^FROM\s/i.test(l)).lastIndexOf(true);
  const finalStage = instructions.slice(lastFrom);

  it('is multi-stage on a pinned node 22 bookworm-slim base', function () {
    expect(froms.length).to.be.at.least(2);
    for (const image of froms) expect(image).to.match(/^node:22\.\d+\.\d+-bookworm-slim$/);
  });

  it('builds with npm ci + npm run build and installs only production dependencies at runtime', function () {
    const buildStage = instructions.slice(0, lastFrom).join('\n');
    expect(buildStage)
      .to.match(/npm ci/)
      .and.match(/npm run build/);
    expect(finalStage.join('\n')).to.match(/npm ci[^\n]*--omit=dev/);
    expect(finalStage.join('\n')).to.match(/COPY --from=\S+ \S*dist/);
    expect(finalStage.join('\n')).to.match(/config\/\*\.env/);
  });

  it('runs as a non-root user, in production, with a /healthz healthcheck', function () {
    const users = finalStage.filter((l) => /^USER\s/i.test(l)).map((l) => l.split(/\s+/)[1]);
    expect(users, 'USER in the final stage').to.not.be.empty;
    expect(users[users.length - 1]).to.not.match(/^(root|0)(:|$)/);
    expect(finalStage.some((l) => /^ENV\s+NODE_ENV[= ]production/i.test(l))).to.equal(true);
    const hc = finalStage.find((l) => /^HEALTHCHECK\s/i.test(l));
    expect(hc, 'HEALTHCHECK').to.be.a('string');
    expect(hc).to.include('/healthz').and.include('fetch');
    expect(finalStage.some((l) => /^EXPOSE\s+8080\b/i.test(l))).to.equal(true);
    const cmd = finalStage.filter((l) => /^CMD\s/i.test(l)).pop();
    expect(cmd).to.equal(
      'CMD ["node", "--initial-old-space-size=32", "--heap-growing-percent=300", "--min-semi-space-size=8", "--max-semi-space-size=8", "--no-allocation-site-pretenuring", "dist/gateway/main.js"]',
    );
  });

  it("limits glibc's malloc arenas (MALLOC_ARENA_MAX=2: memory freed after streaming goes back, bench/README.md)", function () {
    const env = finalStage.filter((l) => /^ENV\s/i.test(l)).map((l) => l.replace(/^ENV\s+/i, ''));
    expect(env).to.include('MALLOC_ARENA_MAX=2');
  });

  it('runs node with the same flags as `npm start`', function () {
    const start = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!;
    const cmd = JSON.parse(
      finalStage
        .filter((l) => /^CMD\s/i.test(l))
        .pop()!
        .replace(/^CMD\s+/i, ''),
    ) as string[];
    const nodeFlags = (words: string[]) => words.filter((w) => w.startsWith('--') && !['--import', 'tsx'].includes(w));
    expect(nodeFlags(cmd)).to.not.be.empty;
    expect(nodeFlags(start.split(/\s+/))).to.deep.equal(nodeFlags(cmd));
  });

  it('keeps node_modules, dist, tests and .git out of the build context', function () {
    const ignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split(/\r?\n/)
      .map((l) => l.trim());
    for (const entry of ['node_modules', 'dist', '.git']) expect(ignore, entry).to.include(entry);
    expect(
      ignore.some((l) => /^(test$|test\/|\*\*\/\*\.test\.ts$)/.test(l)),
      'test files',
    ).to.equal(true);
    expect(
      ignore.some((l) => /^config/.test(l) || /\*\.env$/.test(l)),
      'config/*.env stays in the context',
    ).to.equal(false);
  });

  it('ships the stage env files the image copies', function () {
    const envFiles = existsSync(join(ROOT, 'config')) ? readdirSync(join(ROOT, 'config')).filter((f) => f.endsWith('.env')) : [];
    if (envFiles.length === 0) this.skip();
    expect(envFiles).to.include.members(['dev.env', 'prod.env']);
  });
});
