// The objects an admin's JSON body names (the route table's BodyRefs): what the gateway must ask
// the upstream about, as the caller, before it forwards exactly those bytes.
import type { BodyRef } from './open-webui-routes.js';
import type { Permission } from './resource-access.js';

/** Most objects one body may name (a batch of files): each costs an upstream lookup. */
export const MAX_BODY_OBJECTS = 500;

/** One object a body names: a lookup to ask as the caller, or a vector collection that must be the caller's own. */
export type BodyObject = { lookup: string; permission: Permission } | { ownCollection: string };

export type BodyObjects = { ok: true; lookups: BodyObject[] } | { ok: false; why: string };

/** A user's own vector collections (retrieval/utils.py has_access_to_collection): their memories and their web searches. */
export function isCallersOwnCollection(name: string, callerId: string): boolean {
  return callerId !== '' && (name === `user-memory-${callerId}` || name.startsWith(`web-search-${callerId}-`));
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The values at a BodyRef's `at` ('a.b', '[].file_id', 'meta.knowledge[]'); absent or null parts hold none; a part of the wrong kind is 'bad'. */
function valuesAt(body: unknown, at: string): unknown[] | 'bad' {
  let values: unknown[] = [body];
  for (const part of at.split('.')) {
    const many = part.endsWith('[]');
    const name = many ? part.slice(0, -2) : part;
    const next: unknown[] = [];
    for (const v of values) {
      let field: unknown = v;
      if (name) {
        if (v === undefined || v === null) continue;
        if (!isRecord(v)) return 'bad';
        field = Object.prototype.hasOwnProperty.call(v, name) ? v[name] : undefined;
      }
      if (!many) next.push(field);
      else if (field === undefined || field === null) continue;
      else if (!Array.isArray(field)) return 'bad';
      else next.push(...(field as unknown[]));
    }
    values = next;
  }
  return values;
}

/**
 * The objects an admin's JSON body names (the route's BodyRefs), as lookups for the gateway to ask
 * the upstream as the caller. Open WebUI treats an absent, null or empty optional id as none; an
 * id that is not a string (an object, a number) or a part of the body of the wrong kind is refused,
 * as is an id that would leave its path segment. Entries `{type, id}`: those of a type one of the
 * refs names are checked, others are not objects of these kinds.
 */
export function objectsNamedInBody(body: unknown, refs: readonly BodyRef[]): BodyObjects {
  const named = new NamedObjects();
  for (const ref of refs) {
    const values = valuesAt(body, ref.at);
    if (values === 'bad') return { ok: false, why: `${ref.at} is not of the form Open WebUI reads` };
    if (ref.required && values.length === 0) return { ok: false, why: `no ${ref.at} in the body` };
    const read = ref.modelMentions ? modelMentions : ref.collectionName ? collectionNames : ref.collections ? collections : ids;
    const why = read(named, ref, values);
    if (why) return { ok: false, why };
  }
  return { ok: true, lookups: [...named.lookups.values()] };
}

const TOO_MANY = `more than ${MAX_BODY_OBJECTS} objects named in one body`;

/** The lookups a body's ids make, each once. */
class NamedObjects {
  readonly lookups = new Map<string, BodyObject>();

  get tooMany(): boolean {
    return this.lookups.size > MAX_BODY_OBJECTS;
  }

  /** One id the ref names: why it is refused, or undefined (looked up, or none). */
  add(ref: BodyRef, id: unknown): string | undefined {
    if (id === undefined || id === null || id === '') return ref.required ? `no ${ref.at} in the body` : undefined;
    if (ref.never !== undefined || ref.lookup === undefined) return `${ref.at}: ${ref.never ?? 'not checked here'}`;
    if (typeof id !== 'string') return `${ref.at} is not an id`;
    // in the lookup's path a slash or dot segment would name another route (Starlette decodes %2F)
    const query = ref.lookup.indexOf('?');
    const inPath = query === -1 || ref.lookup.indexOf('{=}') < query;
    if (inPath && (/[/\\]/.test(id) || id === '.' || id === '..')) return `${ref.at} is not an id`;
    const lookup = ref.lookup.replace('{=}', encodeURIComponent(id));
    this.lookups.set(`${ref.permission} ${lookup}`, { lookup, permission: ref.permission });
    return undefined;
  }

  /** A vector collection's name, as filter_accessible_collections reads it. */
  addCollection(ref: BodyRef, name: unknown): string | undefined {
    if (typeof name !== 'string' || name === '') return `${ref.at} names a collection that is not a name`;
    if (name.startsWith('user-memory-') || name.startsWith('web-search-')) {
      this.lookups.set(`own ${name}`, { ownCollection: name });
      return undefined;
    }
    if (!name.startsWith('file-')) return this.add(ref, name);
    return name === 'file-' ? `${ref.at} names a collection that is not a name` : this.add({ ...ref, lookup: '/api/v1/files/{=}' }, name.slice('file-'.length));
  }
}

/** Models mentioned in text (extract_mentions: <@T:id> or <@T:id|label>; a model is type M). */
function modelMentions(named: NamedObjects, ref: BodyRef, values: unknown[]): string | undefined {
  for (const text of values) {
    if (text === undefined || text === null) continue;
    if (typeof text !== 'string') return `${ref.at} is not text`;
    for (const m of text.matchAll(/<@([A-Z]):([^|>]+)(?:\|[^>]+)?>/g)) {
      if (m[1] !== 'M') continue;
      const why = named.add(ref, m[2]);
      if (why) return why;
      if (named.tooMany) return TOO_MANY;
    }
  }
  return undefined;
}

function collectionNames(named: NamedObjects, ref: BodyRef, values: unknown[]): string | undefined {
  for (const name of values) {
    if (name === undefined || name === null || name === '') continue;
    const why = named.addCollection(ref, name);
    if (why) return why;
  }
  return undefined;
}

/** Entries naming `collection_name` or `collection_names`. */
function collections(named: NamedObjects, ref: BodyRef, values: unknown[]): string | undefined {
  for (const v of values) {
    if (v === undefined || v === null) continue;
    if (!isRecord(v)) return `${ref.at} holds an entry that is not an object`;
    const names: unknown[] = [];
    if (Object.prototype.hasOwnProperty.call(v, 'collection_name') && v.collection_name !== null && v.collection_name !== undefined)
      names.push(v.collection_name);
    if (Object.prototype.hasOwnProperty.call(v, 'collection_names') && v.collection_names !== null && v.collection_names !== undefined) {
      if (!Array.isArray(v.collection_names)) return `${ref.at} holds collection_names that are not a list`;
      names.push(...(v.collection_names as unknown[]));
    }
    for (const name of names) {
      const why = named.addCollection(ref, name);
      if (why) return why;
      if (named.tooMany) return TOO_MANY;
    }
  }
  return undefined;
}

/** Ids, or entries `{type, id}` of the ref's type. */
function ids(named: NamedObjects, ref: BodyRef, values: unknown[]): string | undefined {
  for (const v of values) {
    let id = v;
    if (ref.type !== undefined) {
      if (!isRecord(v)) return `${ref.at} holds an entry that is not an object`;
      if (v.type !== ref.type) continue;
      id = v.id;
      if (id === undefined || id === null || id === '') return `${ref.at} holds a ${ref.type} with no id`;
    }
    const why = named.add(ref, id);
    if (why) return why;
    if (named.tooMany) return TOO_MANY;
  }
  return undefined;
}
