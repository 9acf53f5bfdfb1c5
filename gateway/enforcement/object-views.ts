// Carries out the route table's decisions for admins against the upstream, asked as the caller: a
// by-id route forwarded only when the admin may reach its object (so a write on another user's object
// never reaches Open WebUI), a list or an answer of names cut to what the admin may read or see.
// What each class answers: docs/policies.md "Admins and every route of Open WebUI".
import type { Calls } from '../upstream/calls.js';
import type { ServerResponse } from 'node:http';
import {
  keepModelIds,
  keepTags,
  leaderboardWithTags,
  lookupVerdict,
  mayReach,
  modelTagNames,
  OwnChatTags,
  OwnFeedbackTags,
  overviewWithTags,
  parseGroupIds,
  promptTagNames,
  redactFields,
  type ModelIdShape,
  type Permission,
  type Principal,
  type TagSource,
} from '../../policies/resource-access.js';
import { ratingIds } from '../../policies/ratings.js';
import type { ListingView } from '../../policies/admin-scoping.js';
import { TtlCache } from '../cache/cache.js';
import { UpstreamError, type BodySink } from '../upstream/proxy.js';
import { callJson, GroupsAnswer, ListOrRecordAnswer, ObjectAnswer, UpstreamJsonError } from '../upstream/json.js';
import { FileFilterError } from './file-stream-filter.js';
import { filteredAnswer, ListNotAnswered, readRecords } from './stream-reads.js';
import { passError, readableBy, rebuildPage, serveRatingsPage, streamListing } from './listing-views.js';
import { OwnRatings } from './own-ratings.js';
import { OwnChats } from './own-chats.js';
import { answerUncheckable, sendJson, sendJsonBody } from '../http/respond.js';
import type { Observability } from '../observability/observability.js';

type Headers = Record<string, string | string[] | undefined>;

const GROUPS_TTL_MS = 60_000;

/** Where the objects whose tags the admin may see are listed, as the caller. */
const OBJECTS_OF: Record<'models' | 'prompts', string> = { models: '/api/v1/models/all', prompts: '/api/v1/prompts/' };

const MAX_ENTRIES = 20_000;
const VARY = { vary: 'Cookie, Authorization' };

export class ObjectViews {
  private readonly groups = new TtlCache<string, ReadonlySet<string>>(MAX_ENTRIES, GROUPS_TTL_MS);
  private readonly ownRatings: OwnRatings;
  private readonly ownChats: OwnChats;

  constructor(
    private readonly calls: Calls,
    private readonly obs: Observability,
    /** the most bytes one rewritten answer keeps (REWRITE_MAX_BYTES) */
    private readonly maxKeptBytes = Infinity,
  ) {
    this.ownRatings = new OwnRatings(calls);
    this.ownChats = new OwnChats(calls);
  }

  /**
   * The caller as a principal of grants: their id and their groups (inherited ones too), read
   * from GET /api/v1/users/groups?include_inherited=true at most once a minute.
   */
  async principal(userId: string, headers: Headers): Promise<Principal> {
    let groupIds = this.groups.get(userId);
    if (!groupIds) {
      const up = await callJson(this.calls, GroupsAnswer, 'GET', '/api/v1/users/groups?include_inherited=true', headers).catch(noAnswerOnBadJson);
      const parsed = up?.json === undefined ? undefined : parseGroupIds(up.json);
      // Without the groups the caller holds only what they own or what is granted to them by name.
      groupIds = parsed ?? new Set();
      if (parsed) this.groups.set(userId, parsed);
    }
    return { userId, groupIds };
  }

  /**
   * May the caller reach the object the upstream returns at `lookup`? `absent`: the upstream has no
   * object there (404; policies/resource-access.ts lookupVerdict). Throws UpstreamError when it
   * cannot be asked. The lookup is a read-only GET whose answer never reaches the client.
   */
  async mayAccess(lookup: string, permission: Permission, principal: Principal, headers: Headers): Promise<{ ok: boolean; absent?: true; owner?: string }> {
    // An answer that is not an object is a refusal.
    const up = await callJson(this.calls, ObjectAnswer, 'GET', lookup, headers).catch(noAnswerOnBadJson);
    const verdict = lookupVerdict(up?.status ?? 0, up?.json, principal, permission);
    if (verdict === 'absent') return { ok: false, absent: true };
    const object = up?.json;
    const owner = object && typeof object === 'object' ? (object as { user_id?: unknown }).user_id : undefined;
    return { ok: verdict === 'allow', owner: typeof owner === 'string' ? owner : undefined };
  }

  /**
   * Answer the list at `path` + `search` with the items `principal` may read; `audit` gets how many it
   * lost. A list of one model's items (`view.modelId`) is asked for only when `principal` may see that
   * model; otherwise `refuse` answers. The list is judged as it streams (file-stream-filter.ts); a
   * paged list whose page held items the admin may not read (Open WebUI's own bypass on) is rebuilt
   * from all its pages, so that pages and `total` count the admin's items only; an export is written
   * out as it is judged; the ratings list and its ids come from the admin's own ratings
   * (own-ratings.ts).
   */
  async serveListing(
    res: ServerResponse,
    path: string,
    search: string,
    headers: Headers,
    principal: Principal,
    view: ListingView,
    audit: (removed: number) => void,
    refuse: () => void,
  ): Promise<void> {
    try {
      if (view.modelId !== undefined && !(await this.visibleModelIds(headers, principal)).has(view.modelId)) return refuse();
      if (view.own === 'ratings') return serveRatingsPage(res, search, await this.ownRatings.ratings(principal.userId, headers), view.modelId);
      if (view.own === 'rating-ids') return sendJson(res, 200, ratingIds(await this.ownRatings.ratings(principal.userId, headers)), VARY);
      if (view.streamed) return await streamListing(this.calls, this.obs, res, path + search, headers, principal, audit);
      const readable = readableBy(principal);
      const { up, out } = await filteredAnswer(this.calls, 'any', path + search, headers, principal.userId, {
        rule: readable,
        totalLessRemoved: true,
        maxKeptBytes: this.maxKeptBytes,
      });
      if (up.status !== 200) return passError(res, up);
      if (out!.removed > 0) audit(out!.removed);
      // a page that lost items: Open WebUI's own bypass is on, and the page and its total count
      // every user's objects; rebuilt from every page, the admin's only
      if (out!.removed > 0 && view.pageSize && out!.paged)
        return await rebuildPage(
          this.calls,
          res,
          { path, search, pageSize: view.pageSize, maxKeptBytes: this.maxKeptBytes },
          headers,
          principal.userId,
          readable,
        );
      sendJsonBody(res, 200, out!.body, VARY);
    } catch (err) {
      answerUncheckable(res, err, this.obs, 'filtered list route');
    }
  }

  /** Answer with `fields` removed from the upstream's records (a page of users, or one). */
  async serveRedacted(res: ServerResponse, pathAndQuery: string, headers: Headers, fields: readonly string[], emptied?: readonly string[]): Promise<void> {
    try {
      const up = await callJson(this.calls, ListOrRecordAnswer, 'GET', pathAndQuery, headers);
      if (up.json === undefined) return passError(res, up);
      const body = redactFields(up.json, fields, emptied);
      if (body === undefined) throw new UpstreamError('bad-body', 'answer is not a record or a list of records');
      sendJson(res, 200, body, VARY);
    } catch (err) {
      answerUncheckable(res, err, this.obs, 'redacted route');
    }
  }

  /**
   * The caller wrote through the gateway (`path`, canonical): the kept copies their views are
   * answered from are brought up to date at their next use (their ratings for a write under
   * /evaluations/feedback, their chats for any other).
   */
  ownRecordsChanged(callerId: string, path: string): void {
    if (path.toLowerCase().startsWith('/api/v1/evaluations/feedback')) this.ownRatings.changed(callerId);
    else this.ownChats.changed(callerId);
  }

  clear(): void {
    this.groups.clear();
    this.ownRatings.clear();
    this.ownChats.clear();
  }

  /**
   * Answer `pathAndQuery` with only the tags and model ids `principal` may see; `audit` gets how many the
   * upstream's answer lost. An answer about one model (`modelId`) is asked for only when `principal` may
   * see that model; otherwise `refuse` answers, the same for a private model as for none. Lists of
   * every user's objects (the models, the prompts) are read as they stream, never held.
   */
  async serveNames(
    res: ServerResponse,
    names: { tags?: TagSource; modelIds?: ModelIdShape; modelId?: string },
    pathAndQuery: string,
    headers: Headers,
    principal: Principal,
    audit: (removed: number) => void,
    refuse: () => void,
  ): Promise<void> {
    try {
      let visible: Promise<ReadonlySet<string>> | undefined;
      const visibleIds = () => (visible ??= this.visibleModelIds(headers, principal));
      if (names.modelId !== undefined && !(await visibleIds()).has(names.modelId)) return refuse();
      // the caller's own tags are counted while Open WebUI answers
      const own = names.tags ? this.ownTagSource(names.tags, headers, principal, names.modelId) : undefined;
      own?.catch(() => {});
      const up = await callJson(this.calls, ListOrRecordAnswer, 'GET', pathAndQuery, headers);
      if (up.json === undefined) return passError(res, up);
      let body: unknown = up.json;
      let removed = 0;
      if (own) ({ body, removed } = (await own)(body));
      if (names.modelIds) {
        const kept = keepModelIds(body, names.modelIds, await visibleIds());
        if (!kept) throw new UpstreamError('bad-body', `answer is not of the shape ${names.modelIds}`);
        body = kept.body;
        removed += kept.removed;
      }
      if (removed > 0) audit(removed);
      sendJson(res, 200, body, VARY);
    } catch (err) {
      answerUncheckable(res, err, this.obs, 'names route');
    }
  }

  /** The ids of the models `principal` may see: every connection's models, and the stored ones they may read. */
  private async visibleModelIds(headers: Headers, principal: Principal): Promise<ReadonlySet<string>> {
    const ids = new Set<string>();
    const [base] = await Promise.all([
      callJson(this.calls, ListOrRecordAnswer, 'GET', '/api/models/base', headers),
      // every user's stored models, read as they stream: only the ids the admin may read are kept
      readRecords(this.calls, '/api/v1/models/all', headers, (m) => {
        if (typeof m.id !== 'string') throw new FileFilterError('a model without an id');
        if (mayReach(m, principal, 'read')) ids.add(m.id);
      }),
    ]);
    const list = base.json && !Array.isArray(base.json) ? base.json.data : undefined;
    if (!Array.isArray(list)) throw new UpstreamError('bad-body', `/api/models/base answered ${base.status} without a list of models`);
    for (const m of list) {
      const id = m && typeof m === 'object' ? (m as { id?: unknown }).id : undefined;
      if (typeof id !== 'string') throw new UpstreamError('bad-body', 'a connection model without an id');
      ids.add(id);
    }
    return ids;
  }

  /**
   * Where the caller's own tags come from, asked beside the upstream's answer: a function that puts
   * them in that answer (and says how many of its tags went).
   */
  private async ownTagSource(
    source: TagSource,
    headers: Headers,
    principal: Principal,
    modelId: string | undefined,
  ): Promise<(answer: unknown) => { body: unknown; removed: number }> {
    if (source === 'chats-of-model') {
      const counted = await this.ownChatTags(headers, principal.userId, modelId ?? '');
      return (answer) => {
        const out = overviewWithTags(answer, counted.top());
        if (!out) throw new UpstreamError('bad-body', 'overview answer is not {history, tags}');
        return out;
      };
    }
    if (source === 'feedbacks') {
      const counted = new OwnFeedbackTags(principal.userId);
      for (const r of storedOrder(await this.ownRatings.ratings(principal.userId, headers))) counted.addRating(r.modelId, r.tags);
      return (answer) => {
        const out = leaderboardWithTags(answer, (m) => counted.top(m));
        if (!out) throw new UpstreamError('bad-body', 'leaderboard answer is not {entries: [{model_id}]}');
        return out;
      };
    }
    // the names carried by what the admin may read, the list read as it streams
    const objects: unknown[] = [];
    await readRecords(this.calls, OBJECTS_OF[source], headers, (o) => {
      // what decides is small: the owner, the grants, the tags, whether it is active or a base model
      objects.push(source === 'models' ? modelTagFacts(o) : promptTagFacts(o));
    });
    const allowed = source === 'models' ? modelTagNames(objects, principal) : promptTagNames(objects, principal);
    if (!allowed) throw new UpstreamError('bad-body', `${OBJECTS_OF[source]} is not a list of records`);
    return (answer) => {
      const kept = keepTags(answer, allowed);
      if (!kept) throw new UpstreamError('bad-body', 'tags answer is not a list of names');
      return { body: kept.tags, removed: kept.removed };
    };
  }

  /** The caller's own chats that used the model, their tags counted in the order Open WebUI reads the chats for its own count (by id). */
  private async ownChatTags(headers: Headers, callerId: string, modelId: string): Promise<OwnChatTags> {
    const chats = await this.ownChats.chats(callerId, headers).catch((err: unknown) => {
      if (!(err instanceof ListNotAnswered && err.answered === 400)) throw err;
      return undefined;
    });
    // Open WebUI answers the usage lines 400 for a caller with one chat whose last message has no
    // whole-number `timestamp` (written by an API client, or imported): their export is read instead
    if (chats === undefined) return this.ownChatTagsFromExport(headers, callerId, modelId);
    const used = chats.filter((c) => c.models.has(modelId));
    used.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const counted = new OwnChatTags(callerId, modelId);
    for (const c of used) counted.addUsage({ id: c.id, history_models: { [modelId]: 1 }, tags: c.tags });
    return counted;
  }

  /** The caller's own chats (their export, one JSON chat a line), counted as they arrive: no chat is kept. */
  private async ownChatTagsFromExport(headers: Headers, callerId: string, modelId: string): Promise<OwnChatTags> {
    this.obs.log.warn(
      { callerId },
      "the usage lines of an admin's chats cannot be listed (a chat without a whole-number timestamp): their export is read for the overview",
    );
    const counted = new OwnChatTags(callerId, modelId);
    const lines = new LineSink((line) => counted.add(JSON.parse(line)));
    const up = await this.calls.call('GET', '/api/v1/chats/all', { ...headers, accept: 'application/x-ndjson' }, undefined, (status) =>
      status === 200 ? lines : undefined,
    );
    if (up.status !== 200) throw new UpstreamError('bad-body', `/api/v1/chats/all answered ${up.status}`);
    lines.end();
    return counted;
  }
}

/** Splits a body into lines, each handed over whole (a line that is not JSON throws: the body is refused). */
class LineSink implements BodySink {
  private parts: Buffer[] = [];

  constructor(private readonly line: (text: string) => void) {}

  write(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      this.parts.push(chunk.subarray(start, nl));
      this.flush();
      start = nl + 1;
    }
    if (start < chunk.length) this.parts.push(chunk.subarray(start));
  }

  /** The last line, when the body did not end with a newline. */
  end(): void {
    this.flush();
  }

  private flush(): void {
    const text = Buffer.concat(this.parts).toString('utf8').trim();
    this.parts = [];
    if (text) this.line(text);
  }
}

/** What decides whether a model's tags are the admin's to see (policies/resource-access.ts modelTagNames). */
function modelTagFacts(m: Record<string, unknown>): Record<string, unknown> {
  const meta = m.meta && typeof m.meta === 'object' ? (m.meta as Record<string, unknown>) : {};
  return {
    ...pick(m, ['id', 'user_id', 'base_model_id', 'access_grants', 'info', 'user', 'user_ids']),
    meta: { tags: meta.tags, access_grants: meta.access_grants },
  };
}

/** What decides whether a prompt's tags are the admin's to see (promptTagNames). */
function promptTagFacts(p: Record<string, unknown>): Record<string, unknown> {
  return pick(p, ['id', 'user_id', 'is_active', 'tags', 'access_grants', 'meta', 'info', 'user', 'user_ids']);
}

function pick(o: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (Object.hasOwn(o, k)) out[k] = o[k];
  return out;
}

/** Ratings in the order they were stored (Open WebUI counts the leaderboard's tags in it). */
function storedOrder<R extends { createdAt: number; id: string }>(ratings: R[]): R[] {
  return [...ratings].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** A lookup whose answer is not JSON of its shape: no answer (a refusal), never a pass. */
function noAnswerOnBadJson(err: unknown): undefined {
  if (err instanceof UpstreamJsonError) return undefined;
  throw err;
}
