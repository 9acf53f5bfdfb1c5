// A small Kustomize renderer for deploy/kubernetes/, so the overlays are rendered (and then
// validated) in every test run without a cluster or a kustomize binary; no maintained npm
// package renders Kustomize. It implements exactly what the overlays use and refuses the rest
// (fail closed: a new kustomization feature must be implemented here before it is trusted):
//   - `resources`: YAML files, or directories holding a kustomization.yaml;
//   - `patches` with `path` only: strategic-merge patches that name their target by apiVersion,
//     kind and metadata.name. Maps merge recursively, `null` deletes a key, lists of objects
//     that all carry `name` (containers, env, volumes, volumeMounts) merge by name (their merge
//     key in the Kubernetes strategic-merge schema) in kustomize's order, any other list is
//     replaced; a patch whose top level says `$patch: delete` removes its target (one per file,
//     as kustomize 5 takes them: it crashes on several in one file);
//   - `namespace`: set on every namespaced resource.
// When `kubectl kustomize` is installed the Kubernetes tests also compare its output with this.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

// Parsed manifests: loose on purpose, every access in the tests is checked by an assertion.
export type Manifest = any;

const SUPPORTED = new Set(['apiVersion', 'kind', 'resources', 'patches', 'namespace']);
// Cluster-scoped kinds among those a namespace transformer must leave alone.
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'PersistentVolume', 'StorageClass']);

export function parseYamlDocuments(text: string, where: string): Manifest[] {
  const out: Manifest[] = [];
  // YAML 1.1, as kubectl and kustomize read it: an unquoted `no` or `on` is a boolean there, and
  // the schema check must see what the cluster would get.
  for (const doc of parseAllDocuments(text, { version: '1.1' })) {
    if (doc.errors.length > 0) throw new Error(`${where}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS();
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function mergeByName(base: unknown[], patch: unknown[]): unknown[] | null {
  const named = (l: unknown[]) => l.every((x) => isObject(x) && typeof x.name === 'string');
  if (!named(base) || !named(patch)) return null;
  // kustomize's order: the patch's items first (merged with their base item), then the base
  // items the patch does not name. Order matters to env `$(VAR)` references.
  const b = base as Array<Record<string, unknown>>;
  const p = patch as Array<Record<string, unknown>>;
  const merged = p.map((item) => {
    const old = b.find((x) => x.name === item.name);
    return old ? (strategicMerge(old, item) as Record<string, unknown>) : structuredClone(item);
  });
  return [...merged, ...b.filter((x) => !p.some((y) => y.name === x.name)).map((x) => structuredClone(x))];
}

export function strategicMerge(base: unknown, patch: unknown): unknown {
  if (isObject(base) && isObject(patch)) {
    const out: Record<string, unknown> = structuredClone(base);
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete out[k];
      else out[k] = k in out ? strategicMerge(out[k], v) : structuredClone(v);
    }
    return out;
  }
  if (Array.isArray(base) && Array.isArray(patch)) return mergeByName(base, patch) ?? structuredClone(patch);
  return structuredClone(patch);
}

const idOf = (m: Manifest) => `${m?.apiVersion}/${m?.kind}/${m?.metadata?.name}`;

/** The rendered resources of the kustomization in `dir`. */
export function kustomize(dir: string): Manifest[] {
  const file = join(dir, 'kustomization.yaml');
  const [k] = parseYamlDocuments(readFileSync(file, 'utf8'), file);
  for (const key of Object.keys(k ?? {})) {
    if (!SUPPORTED.has(key)) throw new Error(`${file}: "${key}" is not implemented by test/support/kustomize.ts`);
  }
  let out: Manifest[] = [];
  for (const entry of k.resources ?? []) {
    const path = resolve(dir, String(entry));
    if (!existsSync(path)) throw new Error(`${file}: resource ${entry} does not exist`);
    if (statSync(path).isDirectory()) out.push(...kustomize(path));
    else out.push(...parseYamlDocuments(readFileSync(path, 'utf8'), path));
  }
  for (const p of k.patches ?? []) {
    if (!isObject(p) || Object.keys(p).some((key) => key !== 'path')) {
      throw new Error(`${file}: only patches with a bare "path" are implemented`);
    }
    const path = resolve(dir, String(p.path));
    const patches = parseYamlDocuments(readFileSync(path, 'utf8'), path);
    for (const patch of patches) {
      const i = out.findIndex((m) => idOf(m) === idOf(patch));
      if (i < 0) throw new Error(`${path}: patch target ${idOf(patch)} not found`);
      const directive = patch.$patch;
      if (directive === undefined) out[i] = strategicMerge(out[i], patch);
      else if (directive === 'delete' && patches.length === 1) out.splice(i, 1);
      else throw new Error(`${path}: "$patch: ${String(directive)}" ${directive === 'delete' ? 'must be alone in its file' : 'is not implemented'}`);
    }
  }
  if (k.namespace) {
    out = out.map((m) => (CLUSTER_SCOPED.has(m.kind) ? m : { ...m, metadata: { ...m.metadata, namespace: String(k.namespace) } }));
  }
  const ids = out.map((m) => `${m.kind}/${m.metadata?.name}`);
  const dup = ids.find((id, i) => ids.indexOf(id) !== i);
  if (dup) throw new Error(`${dirname(file)}: ${dup} is defined twice`);
  return out;
}
