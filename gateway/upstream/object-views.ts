// Carries out the route table's decisions for admins (policies/open-webui-routes.ts, decided in
// policies/admin-scoping.ts) against the upstream, the way chat-views.ts does for chats:
//   - require-access: ask the upstream, as the caller, for the object the route names (a read-only
//     GET whose answer never reaches the client); forward only when policies/resource-access.ts
//     says the admin owns it or holds a grant on it. A write on another user's object therefore
//     never reaches Open WebUI. An answer that is not a readable object is a refusal.
//   - filter-listing: fetch the list as the caller and answer with the items the admin may read.
// The caller's groups (GET /api/v1/users/groups?include_inherited=true) are asked once a minute.
// Rewritten answers: uncompressed fetch, no conditional or range headers, `no-store`; a body that
// is not a list the gateway understands fails closed (502).
import type { ServerResponse } from 'node:http';
import { filterList, mayReach, parseGroupIds, redactFields, type Permission, type Principal } from '../../policies/resource-access.js';
import { TtlCache } from '../cache/cache.js';
import { UpstreamError, type Upstream } from './proxy.js';
import { callJson, errorDetail, GroupsAnswer, ListOrRecordAnswer, ObjectAnswer, UpstreamJsonError } from './json.js';
import { sendJson, UPSTREAM_TIMEOUT } from '../http/respond.js';
import type { Observability } from '../observability/observability.js';

type Headers = Record<string, string | string[] | undefined>;

const GROUPS_TTL_MS = 60_000;
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

  /** May the caller reach the object the upstream returns at `lookup`? Throws UpstreamError when it cannot be asked. */
  async mayAccess(lookup: string, permission: Permission, who: Principal, headers: Headers): Promise<{ ok: boolean; owner?: string }> {
    // An answer that is not an object is a refusal, as an object that is not there.
    const up = await callJson(this.upstream, ObjectAnswer, 'GET', lookup, headers).catch(noAnswerOnBadJson);
    if (up?.json === undefined) return { ok: false };
    const object = up.json;
    const owner = object && typeof object === 'object' ? (object as { user_id?: unknown }).user_id : undefined;
    return { ok: mayReach(object, who, permission), owner: typeof owner === 'string' ? owner : undefined };
  }

  /** Answer a list route with the items the caller may read. */
  async serveListing(res: ServerResponse, pathAndQuery: string, headers: Headers, who: Principal, audit: (removed: number) => void): Promise<void> {
    try {
      const up = await callJson(this.upstream, ListOrRecordAnswer, 'GET', pathAndQuery, headers);
      if (up.json === undefined) return passError(res, up.status, up.body);
      const filtered = filterList(up.json, who);
      if (!filtered) throw new UpstreamError('bad-body', 'list answer is not an array, {items} or {data}');
      if (filtered.removed > 0) audit(filtered.removed);
      sendJson(res, 200, filtered.body, { vary: 'Cookie, Authorization' });
    } catch (err) {
      const e = err instanceof UpstreamError ? err : new UpstreamError('bad-body', String(err));
      this.obs.metrics.upstreamErrors.inc({ kind: e.kind });
      this.obs.log.error({ err: { message: e.message } }, 'filtered list route failed closed');
      sendJson(res, e.status, { detail: e.kind === 'timeout' ? UPSTREAM_TIMEOUT : 'The chat front-end gave an answer the gateway cannot check' });
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
      const e = err instanceof UpstreamError ? err : new UpstreamError('bad-body', String(err));
      this.obs.metrics.upstreamErrors.inc({ kind: e.kind });
      this.obs.log.error({ err: { message: e.message } }, 'redacted route failed closed');
      sendJson(res, e.status, { detail: e.kind === 'timeout' ? UPSTREAM_TIMEOUT : 'The chat front-end gave an answer the gateway cannot check' });
    }
  }

  clear(): void {
    this.groups.clear();
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
