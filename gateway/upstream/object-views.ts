// Carries out the route table's decisions for admins (policies/open-webui-routes.ts, decided in
// policies/admin-scoping.ts) against the upstream, the way chat-views.ts does for chats:
//   - require-access: ask the upstream, as the caller, for the object the route names (a read-only
//     GET whose answer never reaches the client); forward only when policies/resource-access.ts
//     says the admin owns it or holds a grant on it. A write on another user's object therefore
//     never reaches Open WebUI. An answer that is not a readable object is a refusal.
//   - filter-listing: fetch the list as the caller and answer with the items the admin may read
//     (a list of one model's items only for a model the admin may see, as below).
//   - scope-names: answer a route that names tags users gave their chats or objects, or models by
//     id, with only the tags of the admin's own chats and ratings and of objects they may read, and
//     only the ids of models they may see (policies/resource-access.ts decides):
//       models, prompts: the upstream's list of names, kept where a model (GET /api/v1/models/all)
//         or an active prompt (GET /api/v1/prompts/) the admin may read carries the name; the
//         intersection never shows a name the upstream did not list.
//       chats-of-model: the analytics overview's `tags` counted again over the admin's own chats
//         (GET /api/v1/chats/all, the caller's export as NDJSON, read as it arrives); `history` kept.
//       feedbacks: the leaderboard's `top_tags` counted again over the admin's own ratings (GET
//         /api/v1/evaluations/feedbacks/user, page by page); ratings and counts kept.
//       model ids: the entries of models that are neither a connection's (GET /api/models/base) nor
//         a stored model the admin may read (GET /api/v1/models/all) are dropped, counts and all.
//       one model's counts (overview, leaderboard history, the ratings list of `model_id`): asked
//         only for a model the admin may see, by the same two lists; any other id is refused before
//         the upstream is asked.
// The caller's groups (GET /api/v1/users/groups?include_inherited=true) are asked once a minute.
// Rewritten answers: uncompressed fetch, no conditional or range headers, `no-store`; a body that
// is not a list the gateway understands fails closed (502).
import type { ServerResponse } from 'node:http';
import {
  filterList,
  keepModelIds,
  keepTags,
  leaderboardWithTags,
  lookupVerdict,
  modelTagNames,
  OwnChatTags,
  OwnFeedbackTags,
  overviewWithTags,
  parseGroupIds,
  promptTagNames,
  redactFields,
  visibleModelIds,
  type ModelIdShape,
  type Permission,
  type Principal,
  type TagSource,
} from '../../policies/resource-access.js';
import { TtlCache } from '../cache/cache.js';
import { UpstreamError, type BodySink, type Upstream } from './proxy.js';
import { callJson, errorDetail, GroupsAnswer, ListOrRecordAnswer, ObjectAnswer, UpstreamJsonError } from './json.js';
import { answerUncheckable, sendJson } from '../http/respond.js';
import type { Observability } from '../observability/observability.js';

type Headers = Record<string, string | string[] | undefined>;

const GROUPS_TTL_MS = 60_000;

/** Where the objects whose tags the admin may see are listed, as the caller. */
const OBJECTS_OF: Record<'models' | 'prompts', string> = { models: '/api/v1/models/all', prompts: '/api/v1/prompts/' };

/** Pages of the caller's own ratings one leaderboard may walk (30 a page): past it the answer is a 502, not a guess. */
export const MAX_FEEDBACK_PAGES = 40;
const MAX_ENTRIES = 20_000;

export class ObjectViews {
  private readonly groups = new TtlCache<string, ReadonlySet<string>>(MAX_ENTRIES, GROUPS_TTL_MS);

  constructor(
    private readonly upstream: Upstream,
    private readonly obs: Observability,
  ) {}

  /** The caller as a principal of grants: their id and their groups (inherited ones too). */
  async principal(userId: string, headers: Headers): Promise<Principal> {
    let groupIds = this.groups.get(userId);
    if (!groupIds) {
      const up = await callJson(this.upstream, GroupsAnswer, 'GET', '/api/v1/users/groups?include_inherited=true', headers).catch(noAnswerOnBadJson);
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
   * cannot be asked.
   */
  async mayAccess(lookup: string, permission: Permission, who: Principal, headers: Headers): Promise<{ ok: boolean; absent?: true; owner?: string }> {
    // An answer that is not an object is a refusal.
    const up = await callJson(this.upstream, ObjectAnswer, 'GET', lookup, headers).catch(noAnswerOnBadJson);
    const verdict = lookupVerdict(up?.status ?? 0, up?.json, who, permission);
    if (verdict === 'absent') return { ok: false, absent: true };
    const object = up?.json;
    const owner = object && typeof object === 'object' ? (object as { user_id?: unknown }).user_id : undefined;
    return { ok: verdict === 'allow', owner: typeof owner === 'string' ? owner : undefined };
  }

  /**
   * Answer the list at `pathAndQuery` with the items `who` may read; `audit` gets how many it lost.
   * A list of one model's items (`modelId`) is asked for only when `who` may see that model;
   * otherwise `refuse` answers.
   */
  async serveListing(
    res: ServerResponse,
    pathAndQuery: string,
    headers: Headers,
    who: Principal,
    audit: (removed: number) => void,
    modelId: string | undefined,
    refuse: () => void,
  ): Promise<void> {
    try {
      if (modelId !== undefined && !(await this.visibleModelIds(headers, who)).has(modelId)) return refuse();
      const up = await callJson(this.upstream, ListOrRecordAnswer, 'GET', pathAndQuery, headers);
      if (up.json === undefined) return passError(res, up.status, up.body);
      const filtered = filterList(up.json, who);
      if (!filtered) throw new UpstreamError('bad-body', 'list answer is not an array, {items} or {data}');
      if (filtered.removed > 0) audit(filtered.removed);
      sendJson(res, 200, filtered.body, { vary: 'Cookie, Authorization' });
    } catch (err) {
      answerUncheckable(res, err, this.obs, 'filtered list route');
    }
  }

  /** Answer with `fields` removed from the upstream's records. */
  async serveRedacted(res: ServerResponse, pathAndQuery: string, headers: Headers, fields: readonly string[], emptied?: readonly string[]): Promise<void> {
    try {
      const up = await callJson(this.upstream, ListOrRecordAnswer, 'GET', pathAndQuery, headers);
      if (up.json === undefined) return passError(res, up.status, up.body);
      const body = redactFields(up.json, fields, emptied);
      if (body === undefined) throw new UpstreamError('bad-body', 'answer is not a record or a list of records');
      sendJson(res, 200, body, { vary: 'Cookie, Authorization' });
    } catch (err) {
      answerUncheckable(res, err, this.obs, 'redacted route');
    }
  }

  clear(): void {
    this.groups.clear();
  }

  /**
   * Answer `pathAndQuery` with only the tags and model ids `who` may see; `audit` gets how many the
   * upstream's answer lost. An answer about one model (`modelId`) is asked for only when `who` may
   * see that model; otherwise `refuse` answers, the same for a private model as for none.
   */
  async serveNames(
    res: ServerResponse,
    names: { tags?: TagSource; modelIds?: ModelIdShape; modelId?: string },
    pathAndQuery: string,
    headers: Headers,
    who: Principal,
    audit: (removed: number) => void,
    refuse: () => void,
  ): Promise<void> {
    try {
      let visible: Promise<ReadonlySet<string>> | undefined;
      const visibleIds = () => (visible ??= this.visibleModelIds(headers, who));
      if (names.modelId !== undefined && !(await visibleIds()).has(names.modelId)) return refuse();
      const up = await callJson(this.upstream, ListOrRecordAnswer, 'GET', pathAndQuery, headers);
      if (up.json === undefined) return passError(res, up.status, up.body);
      let body: unknown = up.json;
      let removed = 0;
      if (names.tags) ({ body, removed } = await this.ownTags(names.tags, body, headers, who, names.modelId));
      if (names.modelIds) {
        const kept = keepModelIds(body, names.modelIds, await visibleIds());
        if (!kept) throw new UpstreamError('bad-body', `answer is not of the shape ${names.modelIds}`);
        body = kept.body;
        removed += kept.removed;
      }
      if (removed > 0) audit(removed);
      sendJson(res, 200, body, { vary: 'Cookie, Authorization' });
    } catch (err) {
      answerUncheckable(res, err, this.obs, 'names route');
    }
  }

  /** The ids of the models `who` may see: every connection's models, and the stored ones they may read. */
  private async visibleModelIds(headers: Headers, who: Principal): Promise<ReadonlySet<string>> {
    const [base, stored] = await Promise.all(
      ['/api/models/base', '/api/v1/models/all'].map((p) =>
        callJson(this.upstream, ListOrRecordAnswer, 'GET', p, headers).then((a) => {
          if (a.json === undefined) throw new UpstreamError('bad-body', `${p} answered ${a.status}`);
          return a.json;
        }),
      ),
    );
    const visible = visibleModelIds(base, stored, who);
    if (!visible) throw new UpstreamError('bad-body', 'the models are not lists of records with ids');
    return visible;
  }

  /** The answer with only the tags `who` may see, and how many it lost. */
  private async ownTags(
    source: TagSource,
    answer: unknown,
    headers: Headers,
    who: Principal,
    modelId: string | undefined,
  ): Promise<{ body: unknown; removed: number }> {
    if (source === 'chats-of-model') {
      const counted = await this.ownChatTags(headers, who.userId, modelId ?? '');
      const out = overviewWithTags(answer, counted.top());
      if (!out) throw new UpstreamError('bad-body', 'overview answer is not {history, tags}');
      return out;
    }
    if (source === 'feedbacks') {
      const counted = await this.ownFeedbackTags(headers, who.userId);
      const out = leaderboardWithTags(answer, (m) => counted.top(m));
      if (!out) throw new UpstreamError('bad-body', 'leaderboard answer is not {entries: [{model_id}]}');
      return out;
    }
    const objects = await callJson(this.upstream, ListOrRecordAnswer, 'GET', OBJECTS_OF[source], headers);
    if (objects.json === undefined) throw new UpstreamError('bad-body', `${OBJECTS_OF[source]} answered ${objects.status}`);
    const allowed = source === 'models' ? modelTagNames(objects.json, who) : promptTagNames(objects.json, who);
    if (!allowed) throw new UpstreamError('bad-body', `${OBJECTS_OF[source]} is not a list of records`);
    const kept = keepTags(answer, allowed);
    if (!kept) throw new UpstreamError('bad-body', 'tags answer is not a list of names');
    return { body: kept.tags, removed: kept.removed };
  }

  /** The caller's own ratings, page by page until the total is reached. */
  private async ownFeedbackTags(headers: Headers, callerId: string): Promise<OwnFeedbackTags> {
    const counted = new OwnFeedbackTags(callerId);
    let seen = 0;
    for (let page = 1; page <= MAX_FEEDBACK_PAGES; page++) {
      const up = await callJson(this.upstream, ListOrRecordAnswer, 'GET', `/api/v1/evaluations/feedbacks/user?page=${page}`, headers);
      const body = up.json as { items?: unknown; total?: unknown } | undefined;
      if (!body || Array.isArray(body) || !Array.isArray(body.items) || typeof body.total !== 'number')
        throw new UpstreamError('bad-body', `/api/v1/evaluations/feedbacks/user answered ${up.status} without {items, total}`);
      for (const f of body.items) if (!counted.add(f)) throw new UpstreamError('bad-body', 'a rating that is not a record');
      seen += body.items.length;
      if (body.items.length === 0 || seen >= body.total) return counted;
    }
    throw new UpstreamError('too-large', `more than ${MAX_FEEDBACK_PAGES} pages of the caller's own ratings`);
  }

  /** The caller's own chats (their export, one JSON chat a line), counted as they arrive: no chat is kept. */
  private async ownChatTags(headers: Headers, callerId: string, modelId: string): Promise<OwnChatTags> {
    const counted = new OwnChatTags(callerId, modelId);
    const lines = new LineSink((line) => counted.add(JSON.parse(line)));
    const up = await this.upstream.call('GET', '/api/v1/chats/all', { ...headers, accept: 'application/x-ndjson' }, undefined, (status) =>
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

/** A lookup whose answer is not JSON of its shape: no answer (a refusal), never a pass. */
function noAnswerOnBadJson(err: unknown): undefined {
  if (err instanceof UpstreamJsonError) return undefined;
  throw err;
}

/** An upstream error answer carries no content: its status and `{detail}` go on. */
function passError(res: ServerResponse, status: number, body: Buffer): void {
  const told = errorDetail(body);
  const detail = typeof told === 'string' ? told : 'Upstream error';
  sendJson(res, status >= 400 && status < 600 ? status : 502, { detail });
}
