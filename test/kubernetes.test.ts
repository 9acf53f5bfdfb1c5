// The Kubernetes manifests under deploy/kubernetes/: the base and the dev, prod and prod-sentinel
// (the shared state on Redis Sentinel) overlays are rendered (test/support/kustomize.ts; cross-checked with `kubectl kustomize` when installed),
// every rendered object is validated against the official Kubernetes schemas
// (kubernetes-models), and the trust-boundary invariants are checked, the gateway following its
// live policy file (chat-policy) among them. Each invariant is a
// function returning the problems it finds; every test also shows that the function reports a
// mutated manifest, so a check that silently passes everything cannot hide a regression.
// No cluster is involved: nothing here proves the images start, only what the manifests say.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kustomize, parseYamlDocuments, type Manifest } from './support/kustomize.js';
import { KNOWN_VARIABLES, loadSettings, SettingsError } from '../config/settings.js';
import { LIVE_VARIABLES, readPolicy } from '../config/policy.js';

import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const K8S = join(ROOT, 'deploy', 'kubernetes');
const TARGETS = {
  base: join(K8S, 'base'),
  dev: join(K8S, 'overlays', 'dev'),
  prod: join(K8S, 'overlays', 'prod'),
  'prod-sentinel': join(K8S, 'overlays', 'prod-sentinel'),
};

/** Open WebUI's own switches: the chat-config key each is read from. */
const SWITCHES: Record<string, string> = {
  OPEN_WEBUI_BYPASS_ADMIN_ACCESS_CONTROL: 'BYPASS_ADMIN_ACCESS_CONTROL',
  OPEN_WEBUI_ENABLE_ADMIN_EXPORT: 'ENABLE_ADMIN_EXPORT',
};
const SHARED_KEYS = ['WEBUI_AUTH_TRUSTED_EMAIL_HEADER', 'WEBUI_AUTH_TRUSTED_NAME_HEADER', 'WEBUI_AUTH_TRUSTED_ROLE_HEADER', 'WEBUI_AUTH_TRUSTED_GROUPS_HEADER'];
const SECRET_NAME = /SECRET|PASSWORD|TOKEN|_KEY$|DATABASE_URL/;

type Validatable = { validate(): void };
const MODELS: Record<string, new (data: Manifest) => Validatable> = {
  'v1/ConfigMap': ConfigMap,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'networking.k8s.io/v1/Ingress': Ingress,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

// ---------------------------------------------------------------------------------------------
// Accessors over a rendered set

const find = (docs: Manifest[], kind: string, name: string) => docs.find((d) => d?.kind === kind && d?.metadata?.name === name);
const chatDeployment = (docs: Manifest[]) => find(docs, 'Deployment', 'chat');
const podSpec = (docs: Manifest[]) => chatDeployment(docs)?.spec?.template?.spec ?? {};
const container = (docs: Manifest[], name: string) => (podSpec(docs).containers ?? []).find((c: Manifest) => c?.name === name);
const envEntry = (c: Manifest, name: string) => (c?.env ?? []).find((e: Manifest) => e?.name === name);
const literal = (c: Manifest, name: string): string | undefined => {
  const e = envEntry(c, name);
  return e && e.valueFrom === undefined && e.value !== undefined ? String(e.value) : undefined;
};
const matches = (selector: Manifest, labels: Manifest) => isObj(selector) && Object.entries(selector).every(([k, v]) => labels?.[k] === v);
function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
const podLabels = (docs: Manifest[]) => chatDeployment(docs)?.spec?.template?.metadata?.labels ?? {};
/** The ConfigMap the gateway loads whole (envFrom). */
const gatewayConfigMapName = (docs: Manifest[]): string | undefined =>
  (container(docs, 'gateway')?.envFrom ?? []).find((e: Manifest) => e?.configMapRef)?.configMapRef?.name;

function openWebuiPort(docs: Manifest[]): string {
  return literal(container(docs, 'open-webui'), 'PORT') ?? '8080';
}
/** containerPort numbers of the gateway, with names resolved. */
function gatewayPorts(docs: Manifest[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const p of container(docs, 'gateway')?.ports ?? []) {
    m.set(String(p.containerPort), p.containerPort);
    if (p.name) m.set(String(p.name), p.containerPort);
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// Invariants: each returns what is wrong, empty when all is well

/** The gateway's POLICY_FILE, the volume mount it lies in and that volume's ConfigMap, as rendered. */
function policyOf(docs: Manifest[]): { file?: string; mount?: Manifest; configMap?: Manifest; text?: string } {
  const gw = container(docs, 'gateway');
  const cm = find(docs, 'ConfigMap', gatewayConfigMapName(docs) ?? '');
  const file: string | undefined = literal(gw, 'POLICY_FILE') ?? cm?.data?.POLICY_FILE;
  if (!file) return {};
  const mount = (gw?.volumeMounts ?? []).find((m: Manifest) => m.mountPath === dirname(file) || file.startsWith(`${m.mountPath}/`));
  const volume = (podSpec(docs).volumes ?? []).find((v: Manifest) => v.name === mount?.name);
  const configMap = volume?.configMap ? find(docs, 'ConfigMap', volume.configMap.name) : undefined;
  const key = mount ? file.slice(String(mount.mountPath).length + 1) : undefined;
  return { file, mount, configMap, text: key === undefined ? undefined : configMap?.data?.[key] };
}

/**
 * The gateway follows its live policy: POLICY_FILE lies in a read-only mount of a whole ConfigMap
 * volume (a subPath mount is never updated by the kubelet), the file reads as a valid policy, and
 * nothing in the gateway's environment sets a live setting (it would win over the file, which
 * would then do nothing for it).
 */
function livePolicyProblems(docs: Manifest[]): string[] {
  const problems: string[] = [];
  const gw = container(docs, 'gateway');
  const cm = find(docs, 'ConfigMap', gatewayConfigMapName(docs) ?? '');
  const { file, mount, configMap, text } = policyOf(docs);
  if (!file) return ['the gateway has no POLICY_FILE'];
  if (!mount) return [`no volume is mounted where POLICY_FILE ${file} lies`];
  if (mount.subPath !== undefined) problems.push('the policy volume is mounted with subPath: the kubelet never updates it');
  if (mount.readOnly !== true) problems.push('the policy volume is mounted read-write');
  if (!configMap) problems.push(`the volume at ${mount.mountPath} is no rendered ConfigMap`);
  else if (text === undefined) problems.push(`ConfigMap ${configMap.metadata.name} has no key for ${file}`);
  else {
    const read = readPolicy({ file, checkMs: 1_000, environment: {}, defaults: {} }, text, KNOWN_VARIABLES);
    if (!read.ok) problems.push(...read.problems.map((p) => `${configMap.metadata.name}: ${p}`));
  }
  for (const key of LIVE_VARIABLES) {
    if (cm?.data?.[key] !== undefined) problems.push(`${cm.metadata.name} sets ${key} in the gateway's environment, which would win over the file`);
    if (envEntry(gw, key)) problems.push(`the gateway's env sets ${key}, which would win over the file`);
  }
  return problems;
}

/** POLICY_FILE's text in a file of its own, for loading the gateway's settings here; removed by `done`. */
function policyFileHere(docs: Manifest[]): { path: string; done(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'k8s-policy-'));
  const path = join(dir, 'policy.yaml');
  writeFileSync(path, policyOf(docs).text ?? '');
  return { path, done: () => rmSync(dir, { recursive: true, force: true }) };
}

function switchProblems(docs: Manifest[]): string[] {
  const problems: string[] = [];
  const gw = container(docs, 'gateway');
  const ow = container(docs, 'open-webui');
  if (!gw || !ow) return ['chat Deployment lacks the gateway or the open-webui container'];
  const cmName = gatewayConfigMapName(docs);
  const cm = cmName ? find(docs, 'ConfigMap', cmName) : undefined;
  if (!cm) return [`the gateway loads no rendered ConfigMap via envFrom (${cmName})`];
  problems.push(...livePolicyProblems(docs));
  for (const [key, owName] of Object.entries(SWITCHES)) {
    if (!['true', 'false'].includes(cm.data?.[key])) problems.push(`${cmName}.${key} is not exactly true/false`);
    if ((gw.envFrom ?? []).length !== 1) problems.push('the gateway loads more than one env source');
    const ref = envEntry(ow, owName)?.valueFrom?.configMapKeyRef;
    if (ref?.name !== cmName || ref?.key !== key) {
      problems.push(`open-webui ${owName} does not come from ${cmName}.${key}`);
    }
    if ((ow.envFrom ?? []).length > 0) problems.push('open-webui loads an env source that could shadow its env');
  }
  for (const key of [...SHARED_KEYS, 'WEBUI_AUTH_SIGNOUT_REDIRECT_URL']) {
    const ref = envEntry(ow, key)?.valueFrom?.configMapKeyRef;
    if (ref?.name !== cmName || ref?.key !== key) problems.push(`open-webui ${key} does not come from ${cmName}`);
  }
  const publicUrl = String(cm.data?.PUBLIC_URL ?? '');
  if (cm.data?.WEBUI_AUTH_SIGNOUT_REDIRECT_URL !== `${publicUrl}/auth/logout`) {
    problems.push('WEBUI_AUTH_SIGNOUT_REDIRECT_URL is not PUBLIC_URL/auth/logout');
  }
  return problems;
}

function exposureProblems(docs: Manifest[]): string[] {
  const problems: string[] = [];
  const spec = podSpec(docs);
  const gw = container(docs, 'gateway');
  const ow = container(docs, 'open-webui');
  if (!gw || !ow) return ['chat Deployment lacks the gateway or the open-webui container'];
  if (spec.hostNetwork) problems.push('the chat pod uses the host network');
  if (literal(ow, 'HOST') !== '127.0.0.1') problems.push(`open-webui HOST is ${literal(ow, 'HOST') ?? '(not a literal 127.0.0.1)'}`);
  const owPort = openWebuiPort(docs);
  if ((ow.ports ?? []).length > 0) problems.push('open-webui declares container ports');
  for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
    for (const p of c.ports ?? []) {
      if (String(p.containerPort) === owPort) problems.push(`${c.name} declares Open WebUI's port ${owPort}`);
      if (p.hostPort) problems.push(`${c.name} uses a hostPort`);
    }
  }
  let upstream: URL | null = null;
  try {
    upstream = new URL(literal(gw, 'UPSTREAM_URL') ?? '');
  } catch {
    // reported below
  }
  if (!upstream || upstream.hostname !== '127.0.0.1' || (upstream.port || '80') !== owPort) {
    problems.push(`gateway UPSTREAM_URL is not http://127.0.0.1:${owPort}`);
  }
  const gwPorts = gatewayPorts(docs);
  const services = docs.filter((d) => d?.kind === 'Service' && matches(d.spec?.selector, podLabels(docs)));
  for (const s of services) {
    for (const p of s.spec?.ports ?? []) {
      const target = String(p.targetPort ?? p.port);
      if (!gwPorts.has(target)) problems.push(`Service ${s.metadata.name} targets ${target}, not a gateway port`);
    }
  }
  const chatServices = new Set(services.map((s) => s.metadata.name));
  for (const ing of docs.filter((d) => d?.kind === 'Ingress')) {
    const backends = [ing.spec?.defaultBackend, ...(ing.spec?.rules ?? []).flatMap((r: Manifest) => (r.http?.paths ?? []).map((p: Manifest) => p.backend))];
    for (const b of backends.filter(Boolean)) {
      if (b.service && !chatServices.has(b.service.name)) {
        problems.push(`Ingress ${ing.metadata.name} routes to ${b.service.name}, not the gateway's Service`);
      }
    }
  }
  // Defence in depth: only the gateway's port is let into the pod.
  const np = docs.find((d) => d?.kind === 'NetworkPolicy' && matches(d.spec?.podSelector?.matchLabels, podLabels(docs)));
  if (!np) problems.push('no NetworkPolicy selects the chat pod');
  else {
    if (!(np.spec.policyTypes ?? []).includes('Ingress')) problems.push('the chat NetworkPolicy does not restrict ingress');
    for (const rule of np.spec.ingress ?? []) {
      const ports = rule.ports ?? [];
      if (ports.length === 0) problems.push('a chat NetworkPolicy rule allows every port');
      for (const p of ports) {
        if (!gwPorts.has(String(p.port))) problems.push(`the chat NetworkPolicy admits port ${p.port}`);
      }
    }
  }
  return problems;
}

function probeProblems(docs: Manifest[]): string[] {
  const problems: string[] = [];
  const gw = container(docs, 'gateway');
  const gwPorts = gatewayPorts(docs);
  for (const [probe, path] of [
    ['livenessProbe', '/healthz'],
    ['readinessProbe', '/readyz'],
  ] as const) {
    const get = gw?.[probe]?.httpGet;
    if (get?.path !== path) problems.push(`gateway ${probe} is not GET ${path}`);
    else if (!gwPorts.has(String(get.port))) problems.push(`gateway ${probe} port ${get.port} is not the gateway's`);
  }
  for (const c of podSpec(docs).containers ?? []) {
    if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory || !c.resources?.limits?.memory) {
      problems.push(`${c.name} lacks cpu/memory requests or a memory limit`);
    }
  }
  return problems;
}

function securityProblems(docs: Manifest[]): string[] {
  const problems: string[] = [];
  for (const d of docs.filter((x) => x?.kind === 'Deployment' || x?.kind === 'StatefulSet')) {
    const spec = d.spec?.template?.spec ?? {};
    for (const c of spec.containers ?? []) {
      const sc = { ...spec.securityContext, ...c.securityContext };
      const who = `${d.metadata.name}/${c.name}`;
      if (sc.runAsNonRoot !== true) problems.push(`${who} may run as root`);
      if (sc.runAsUser === 0) problems.push(`${who} runs as uid 0`);
      if (c.securityContext?.allowPrivilegeEscalation !== false) problems.push(`${who} allows privilege escalation`);
      if (!(c.securityContext?.capabilities?.drop ?? []).includes('ALL')) problems.push(`${who} keeps capabilities`);
      if (c.securityContext?.privileged) problems.push(`${who} is privileged`);
      // Open WebUI writes beside its code at start; every other image runs read-only.
      if (c.name !== 'open-webui' && c.securityContext?.readOnlyRootFilesystem !== true) {
        problems.push(`${who} has a writable root filesystem`);
      }
    }
  }
  return problems;
}

function secretProblems(docs: Manifest[], shipsSecret: boolean): string[] {
  const problems: string[] = [];
  const refs = new Map<string, Set<string>>();
  for (const d of docs.filter((x) => x?.kind === 'Deployment')) {
    for (const c of d.spec?.template?.spec?.containers ?? []) {
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref) {
          if (!refs.has(ref.name)) refs.set(ref.name, new Set());
          refs.get(ref.name)!.add(ref.key);
        } else if (SECRET_NAME.test(e.name)) {
          problems.push(`${d.metadata.name}/${c.name} ${e.name} is not taken from a Secret`);
        }
      }
    }
  }
  for (const cm of docs.filter((x) => x?.kind === 'ConfigMap')) {
    for (const key of Object.keys(cm.data ?? {})) {
      if (SECRET_NAME.test(key)) problems.push(`ConfigMap ${cm.metadata.name} holds ${key}`);
    }
  }
  for (const name of ['OIDC_CLIENT_SECRET', 'SESSION_SECRET']) {
    if (envEntry(container(docs, 'gateway'), name)?.valueFrom?.secretKeyRef?.key !== name) {
      problems.push(`gateway ${name} is not from a Secret`);
    }
  }
  if (envEntry(container(docs, 'open-webui'), 'WEBUI_SECRET_KEY')?.valueFrom?.secretKeyRef?.key !== 'WEBUI_SECRET_KEY') {
    problems.push('open-webui WEBUI_SECRET_KEY is not from a Secret');
  }
  const secrets = docs.filter((x) => x?.kind === 'Secret');
  if (!shipsSecret && secrets.length > 0) problems.push('this overlay ships a Secret; the operator creates it');
  if (shipsSecret) {
    for (const [name, keys] of refs) {
      const s = find(docs, 'Secret', name);
      if (!s) problems.push(`Secret ${name} is referenced but not rendered`);
      else for (const k of keys) if (!(k in { ...s.data, ...s.stringData })) problems.push(`Secret ${name} lacks ${k}`);
    }
  }
  return problems;
}

/** The Redis of the shared state: the one-server Deployment, or the Sentinel StatefulSet. */
const redisWorkload = (docs: Manifest[]) => find(docs, 'Deployment', 'chat-redis') ?? find(docs, 'StatefulSet', 'chat-redis');

function availabilityProblems(docs: Manifest[]): string[] {
  const problems: string[] = [];
  const labels = podLabels(docs);
  const pdb = docs.find((d) => d?.kind === 'PodDisruptionBudget' && matches(d.spec?.selector?.matchLabels, labels));
  if (!pdb) problems.push('no PodDisruptionBudget selects the chat pod');
  const redisNp = find(docs, 'NetworkPolicy', 'chat-redis');
  const redis = redisWorkload(docs);
  const redisLabels = redis?.spec?.template?.metadata?.labels ?? {};
  if (!redis) problems.push('no Redis Deployment or StatefulSet');
  if (!redisNp || !matches(redisNp.spec?.podSelector?.matchLabels, redisLabels)) {
    problems.push('no NetworkPolicy guards Redis');
  } else {
    for (const rule of redisNp.spec.ingress ?? []) {
      const from = rule.from ?? [];
      // the chat pods, and (Sentinel) the Redis pods themselves: replication and the sentinels' votes
      const admitted = (f: Manifest) =>
        matches(f.podSelector?.matchLabels, labels) || (redis?.kind === 'StatefulSet' && matches(f.podSelector?.matchLabels, redisLabels));
      if (from.length === 0 || from.some((f: Manifest) => !admitted(f) || f.namespaceSelector || f.ipBlock)) {
        problems.push('the Redis NetworkPolicy admits more than the chat pods');
      }
    }
  }
  const replicas = chatDeployment(docs)?.spec?.replicas ?? 1;
  if (replicas > 1) {
    const cm = find(docs, 'ConfigMap', gatewayConfigMapName(docs) ?? '');
    const raw = literal(container(docs, 'gateway'), 'REDIS_URL') ?? cm?.data?.REDIS_URL;
    if (cm?.data?.REDIS_SENTINELS) problems.push(...sentinelProblems(docs));
    else {
      let url: URL | null = null;
      try {
        url = new URL(String(raw ?? ''));
      } catch {
        // reported below
      }
      if (!url || !/^rediss?:$/.test(url.protocol)) problems.push(`${replicas} replicas without a REDIS_URL for the gateway`);
      else {
        const svc = find(docs, 'Service', url.hostname.split('.')[0]!);
        if (!svc || !matches(svc.spec?.selector, redisLabels)) {
          problems.push(`REDIS_URL host ${url.hostname} is not the rendered Redis Service`);
        }
      }
    }
  }
  return problems;
}

/**
 * Sentinel: the gateway's settings load (one topology); every entry of REDIS_SENTINELS is a pod of
 * the Redis StatefulSet under its headless Service, on the sentinels' port; the sentinels monitor
 * REDIS_SENTINEL_NAME with a majority quorum; the StatefulSet runs a data node and a sentinel per pod.
 */
function sentinelProblems(docs: Manifest[]): string[] {
  const problems: string[] = [];
  const cm = find(docs, 'ConfigMap', gatewayConfigMapName(docs) ?? '');
  const data: Record<string, string> = cm?.data ?? {};
  const policy = policyFileHere(docs);
  try {
    loadSettings(
      {
        ...data,
        NODE_ENV: 'production',
        UPSTREAM_URL: literal(container(docs, 'gateway'), 'UPSTREAM_URL'),
        OIDC_CLIENT_SECRET: 'x',
        SESSION_SECRET: 'x'.repeat(32),
        POLICY_FILE: policy.path,
      },
      { stageFiles: false },
    );
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    problems.push(...err.problems.map((p) => `the gateway's settings: ${p}`));
  } finally {
    policy.done();
  }
  const sts = find(docs, 'StatefulSet', 'chat-redis');
  if (!sts) return [...problems, 'REDIS_SENTINELS without the Redis StatefulSet'];
  const headless = find(docs, 'Service', sts.spec?.serviceName ?? '');
  if (!headless || headless.spec?.clusterIP !== 'None' || !matches(headless.spec?.selector, sts.spec?.template?.metadata?.labels ?? {})) {
    problems.push(`the StatefulSet's serviceName ${sts.spec?.serviceName} is not a rendered headless Service selecting its pods`);
  }
  const count = sts.spec?.replicas ?? 1;
  const pods = new Set(Array.from({ length: count }, (_, i) => `${sts.metadata.name}-${i}.${sts.spec?.serviceName}:26379`));
  const named = String(data.REDIS_SENTINELS ?? '')
    .split(',')
    .map((e) => e.trim());
  for (const entry of named) if (!pods.has(entry)) problems.push(`REDIS_SENTINELS entry ${entry} is not a sentinel of the StatefulSet`);
  if (named.length < 3) problems.push('fewer than three sentinels: one lost leaves no majority to fail over');
  const containers: Manifest[] = sts.spec?.template?.spec?.containers ?? [];
  const sentinel = containers.find((c) => (c.ports ?? []).some((p: Manifest) => p.containerPort === 26379));
  const dataNode = containers.find((c) => (c.ports ?? []).some((p: Manifest) => p.containerPort === 6379));
  if (!sentinel || !dataNode) problems.push('a StatefulSet pod lacks its data node (6379) or its sentinel (26379)');
  const script = (sentinel?.command ?? []).join(' ');
  const monitor = /sentinel monitor (\S+) \S+ 6379 (\d+)/.exec(script);
  if (!monitor || monitor[1] !== data.REDIS_SENTINEL_NAME) problems.push(`the sentinels do not monitor REDIS_SENTINEL_NAME ${data.REDIS_SENTINEL_NAME}`);
  else if (Number(monitor[2]) !== Math.floor(count / 2) + 1) problems.push(`the sentinels' quorum ${monitor[2]} is not a majority of ${count}`);
  if (!docs.some((d) => d?.kind === 'PodDisruptionBudget' && matches(d.spec?.selector?.matchLabels, sts.spec?.template?.metadata?.labels ?? {}))) {
    problems.push('no PodDisruptionBudget keeps a majority of the Redis pods');
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------

describe('deployment: Kubernetes manifests under deploy/kubernetes/', function () {
  this.timeout(60_000);
  const rendered: Record<string, Manifest[]> = {};

  before(function () {
    for (const [name, dir] of Object.entries(TARGETS)) rendered[name] = kustomize(dir);
  });

  const mutated = (name: string, mutate: (docs: Manifest[]) => void) => {
    const docs = structuredClone(rendered[name]!);
    mutate(docs);
    return docs;
  };

  for (const name of Object.keys(TARGETS)) {
    it(`${name}: every rendered object is valid against the Kubernetes schema`, function () {
      const docs = rendered[name]!;
      expect(docs.length).to.be.greaterThan(5);
      for (const d of docs) {
        const Model = MODELS[`${d.apiVersion}/${d.kind}`];
        expect(Model, `a schema for ${d.apiVersion} ${d.kind}`).to.not.equal(undefined);
        expect(() => new Model!(d).validate(), `${d.kind}/${d.metadata?.name}`).to.not.throw();
      }
    });
  }

  it('the schema check rejects a malformed manifest', function () {
    const docs = mutated('dev', (d) => void (container(d, 'gateway').ports[0].containerPort = 'http'));
    expect(() => new Deployment(chatDeployment(docs)).validate()).to.throw(/containerPort/);
  });

  it('the overlays render as `kubectl kustomize` renders them (when installed)', function () {
    const probe = spawnSync('kubectl', ['kustomize', TARGETS.base], { encoding: 'utf8', timeout: 30_000 });
    if (probe.error || probe.status !== 0) {
      console.log('    [kubernetes] `kubectl kustomize` not available: the small renderer alone is used');
      this.skip();
    }
    const key = (m: Manifest) => `${m.kind}/${m.metadata?.namespace ?? ''}/${m.metadata?.name}`;
    for (const [name, dir] of Object.entries(TARGETS)) {
      const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 30_000 });
      expect(r.status, r.stderr).to.equal(0);
      const theirs = Object.fromEntries(parseYamlDocuments(r.stdout, name).map((m) => [key(m), m]));
      const ours = Object.fromEntries(rendered[name]!.map((m) => [key(m), m]));
      expect(ours, name).to.deep.equal(theirs);
    }
  });

  const invariants: Array<{
    what: string;
    check: (docs: Manifest[], target: string) => string[];
    mutations: Array<[string, (docs: Manifest[]) => void]>;
  }> = [
    {
      what: 'the gateway follows its live policy file (chat-policy); Open WebUI takes its own switches from chat-config',
      check: (d) => switchProblems(d),
      mutations: [
        [
          'open-webui gets a literal value',
          (d) =>
            void (
              (envEntry(container(d, 'open-webui'), 'BYPASS_ADMIN_ACCESS_CONTROL').valueFrom = undefined),
              (envEntry(container(d, 'open-webui'), 'BYPASS_ADMIN_ACCESS_CONTROL').value = 'true')
            ),
        ],
        [
          'open-webui reads another ConfigMap',
          (d) => void (envEntry(container(d, 'open-webui'), 'ENABLE_ADMIN_EXPORT').valueFrom.configMapKeyRef.name = 'other'),
        ],
        ["the gateway's env sets a live switch", (d) => void container(d, 'gateway').env.push({ name: 'CHATUI_ENABLE_ADMIN_EXPORT', value: 'true' })],
        ['chat-config holds a live switch', (d) => void (find(d, 'ConfigMap', 'chat-config').data.CHATUI_BYPASS_ADMIN_ACCESS_CONTROL = 'false')],
        ["Open WebUI's switch is not a strict boolean", (d) => void (find(d, 'ConfigMap', 'chat-config').data.OPEN_WEBUI_ENABLE_ADMIN_EXPORT = 'yes')],
        [
          "the policy file's switch is not a strict boolean",
          (d) =>
            void (find(d, 'ConfigMap', 'chat-policy').data['policy.yaml'] = 'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "false"\nCHATUI_ENABLE_ADMIN_EXPORT: yes\n'),
        ],
        [
          'the policy mounted with subPath',
          (d) => void (container(d, 'gateway').volumeMounts.find((m: Manifest) => m.name === 'policy').subPath = 'policy.yaml'),
        ],
        ['no policy volume', (d) => void (podSpec(d).volumes = podSpec(d).volumes.filter((v: Manifest) => v.name !== 'policy'))],
        ['no POLICY_FILE', (d) => void delete find(d, 'ConfigMap', 'chat-config').data.POLICY_FILE],
        ['the sign-out redirect misses the gateway', (d) => void (find(d, 'ConfigMap', 'chat-config').data.WEBUI_AUTH_SIGNOUT_REDIRECT_URL = 'http://x/')],
      ],
    },
    {
      what: 'Open WebUI binds loopback and no Service, port, Ingress or policy exposes it',
      check: (d) => exposureProblems(d),
      mutations: [
        ['HOST 0.0.0.0', (d) => void (envEntry(container(d, 'open-webui'), 'HOST').value = '0.0.0.0')],
        ['HOST removed', (d) => void (container(d, 'open-webui').env = container(d, 'open-webui').env.filter((e: Manifest) => e.name !== 'HOST'))],
        ['open-webui containerPort', (d) => void (container(d, 'open-webui').ports = [{ containerPort: 3000 }])],
        ['Service targets 3000', (d) => void (find(d, 'Service', 'chat').spec.ports[0].targetPort = 3000)],
        [
          'Ingress to another Service',
          (d) =>
            void d.push({
              apiVersion: 'networking.k8s.io/v1',
              kind: 'Ingress',
              metadata: { name: 'x' },
              spec: { defaultBackend: { service: { name: 'open-webui', port: { number: 3000 } } } },
            }),
        ],
        ['UPSTREAM_URL off loopback', (d) => void (envEntry(container(d, 'gateway'), 'UPSTREAM_URL').value = 'http://open-webui:8080')],
        ['hostNetwork', (d) => void (chatDeployment(d).spec.template.spec.hostNetwork = true)],
        ['NetworkPolicy admits 3000', (d) => void find(d, 'NetworkPolicy', 'chat').spec.ingress[0].ports.push({ protocol: 'TCP', port: 3000 })],
        ['no NetworkPolicy', (d) => void d.splice(d.indexOf(find(d, 'NetworkPolicy', 'chat')), 1)],
      ],
    },
    {
      what: 'the gateway is probed on /healthz and /readyz, every container has resources',
      check: (d) => probeProblems(d),
      mutations: [
        ['readiness on /healthz', (d) => void (container(d, 'gateway').readinessProbe.httpGet.path = '/healthz')],
        ['no liveness probe', (d) => void delete container(d, 'gateway').livenessProbe],
        ['no memory limit', (d) => void delete container(d, 'open-webui').resources.limits],
      ],
    },
    {
      what: 'every container runs non-root, without privileges, read-only where the image allows',
      check: (d) => securityProblems(d),
      mutations: [
        ['runAsNonRoot dropped', (d) => void delete chatDeployment(d).spec.template.spec.securityContext.runAsNonRoot],
        ['uid 0', (d) => void (container(d, 'gateway').securityContext.runAsUser = 0)],
        ['writable gateway root', (d) => void (container(d, 'gateway').securityContext.readOnlyRootFilesystem = false)],
        ['privilege escalation', (d) => void (container(d, 'open-webui').securityContext.allowPrivilegeEscalation = true)],
      ],
    },
    {
      what: 'secrets come from a Secret, never from a ConfigMap or a literal',
      check: (d, target) => secretProblems(d, target === 'dev'),
      mutations: [
        [
          'literal SESSION_SECRET',
          (d) =>
            void (
              (envEntry(container(d, 'gateway'), 'SESSION_SECRET').valueFrom = undefined),
              (envEntry(container(d, 'gateway'), 'SESSION_SECRET').value = 'x'.repeat(40))
            ),
        ],
        ['secret in the ConfigMap', (d) => void (find(d, 'ConfigMap', 'chat-config').data.OIDC_CLIENT_SECRET = 'x')],
      ],
    },
    {
      what: 'a PodDisruptionBudget, Redis guarded by a NetworkPolicy, REDIS_URL for more than one replica',
      check: (d) => availabilityProblems(d),
      mutations: [
        ['no PDB', (d) => void d.splice(d.indexOf(find(d, 'PodDisruptionBudget', 'chat')), 1)],
        ['Redis open to all', (d) => void (find(d, 'NetworkPolicy', 'chat-redis').spec.ingress[0].from = [])],
        ['3 replicas, no REDIS_URL', (d) => void ((chatDeployment(d).spec.replicas = 3), delete find(d, 'ConfigMap', 'chat-config').data.REDIS_URL)],
        [
          '3 replicas, REDIS_URL elsewhere',
          (d) => void ((chatDeployment(d).spec.replicas = 3), (find(d, 'ConfigMap', 'chat-config').data.REDIS_URL = 'redis://elsewhere:6379')),
        ],
      ],
    },
  ];

  for (const inv of invariants) {
    for (const target of Object.keys(TARGETS)) {
      if (inv.check === invariants[4]!.check && target === 'base') continue; // the base is not deployable without a Secret
      it(`${target}: ${inv.what}`, function () {
        expect(inv.check(rendered[target]!, target)).to.deep.equal([]);
      });
    }
    it(`the check "${inv.what}" reports a mutated manifest`, function () {
      for (const [label, mutate] of inv.mutations) {
        expect(inv.check(mutated('dev', mutate), 'dev'), label).to.not.be.empty;
      }
    });
  }

  it('prod-sentinel: the gateway and Open WebUI follow three sentinels, one per Redis pod; the one-server Redis is gone', function () {
    const docs = rendered['prod-sentinel']!;
    expect(sentinelProblems(docs)).to.deep.equal([]);
    expect(find(docs, 'Deployment', 'chat-redis'), 'the one-server Redis').to.equal(undefined);
    expect(find(docs, 'Service', 'chat-redis'), "the one-server Redis's Service").to.equal(undefined);
    expect(find(docs, 'ConfigMap', 'chat-config').data).to.not.have.property('REDIS_URL');
    expect(find(docs, 'StatefulSet', 'chat-redis').spec.replicas).to.equal(3);
    const ow = container(docs, 'open-webui');
    expect(literal(ow, 'REDIS_SENTINEL_HOSTS')?.split(',')).to.have.length(3);
    expect(new URL(literal(ow, 'REDIS_URL')!).hostname, "Open WebUI's URL names the primary by its sentinel name").to.equal(
      find(docs, 'ConfigMap', 'chat-config').data.REDIS_SENTINEL_NAME,
    );
  });

  it('the Sentinel check reports a mutated manifest', function () {
    const mutations: Array<[string, (d: Manifest[]) => void]> = [
      ['REDIS_URL as well', (d) => void (find(d, 'ConfigMap', 'chat-config').data.REDIS_URL = 'redis://chat-redis:6379/0')],
      ['a sentinel that is no pod', (d) => void (find(d, 'ConfigMap', 'chat-config').data.REDIS_SENTINELS += ',chat-redis-3.chat-redis-headless:26379')],
      ['another primary name', (d) => void (find(d, 'ConfigMap', 'chat-config').data.REDIS_SENTINEL_NAME = 'mymaster')],
      ['no name', (d) => void delete find(d, 'ConfigMap', 'chat-config').data.REDIS_SENTINEL_NAME],
      ['one Redis pod', (d) => void (find(d, 'StatefulSet', 'chat-redis').spec.replicas = 1)],
      ['no PodDisruptionBudget for Redis', (d) => void d.splice(d.indexOf(find(d, 'PodDisruptionBudget', 'chat-redis')), 1)],
      ['no headless Service', (d) => void delete find(d, 'Service', 'chat-redis-headless').spec.clusterIP],
    ];
    for (const [label, mutate] of mutations) {
      const docs = structuredClone(rendered['prod-sentinel']!);
      mutate(docs);
      expect(availabilityProblems(docs), label).to.not.be.empty;
    }
  });

  it('prod runs more than one replica (so REDIS_URL is required there) and dev one', function () {
    expect(chatDeployment(rendered.prod!).spec.replicas).to.be.greaterThan(1);
    expect(chatDeployment(rendered.dev!).spec.replicas ?? 1).to.equal(1);
    const url = new URL(find(rendered.prod!, 'ConfigMap', 'chat-config').data.REDIS_URL);
    expect(url.hostname).to.equal('chat-redis');
  });

  it('switches are private in every rendering: the gateway\u2019s in chat-policy\u2019s file, Open WebUI\u2019s own in chat-config', function () {
    for (const [name, docs] of Object.entries(rendered)) {
      const cms = docs.filter((d) => d.kind === 'ConfigMap');
      expect(
        cms.map((c) => c.metadata.name),
        name,
      ).to.deep.equal(['chat-config', 'chat-policy']);
      for (const key of Object.keys(SWITCHES)) expect(cms[0].data[key], `${name} ${key}`).to.equal('false');
      const read = readPolicy({ checkMs: 1_000, environment: {}, defaults: {} }, policyOf(docs).text ?? '', KNOWN_VARIABLES);
      expect(read.ok && read.policy, name).to.include({ bypassAdminAccessControl: false, enableAdminExport: false });
    }
  });

  it('chat-policy is a plain ConfigMap: its name stays when its content changes, so applying it restarts no pod', function () {
    for (const [name, docs] of Object.entries(rendered)) {
      const { configMap } = policyOf(docs);
      expect(configMap?.metadata?.name, name).to.equal('chat-policy');
    }
  });
});
