// Spec area A: what a chat front-end administrator may see, decided on the request alone.
// Pure: request facts + settings + caller -> a decision. No I/O; the gateway carries it out.
//
// The table below is the contract's policy table, row for row. Paths are matched on the
// canonical path (gateway/http/canonical-path.ts), case-insensitively and with or without a
// trailing slash: Open WebUI's own routing is stricter, so matching more loosely here can
// only block more, never less. Chat routes of admins: policies/chat-scoping.ts.
import { chatAccess, type ChatAccess } from './chat-scoping.js';
import { OPEN_WEBUI_ROUTES, type BodyRef, type FilesView } from './open-webui-routes.js';
import { matchRoute, type RouteMatch } from './route-matcher.js';
import type { ModelIdShape, Permission, TagSource } from './resource-access.js';

export interface PolicySettings {
  /** CHATUI_BYPASS_ADMIN_ACCESS_CONTROL */
  bypassAdminAccessControl: boolean;
  /** CHATUI_ENABLE_ADMIN_EXPORT */
  enableAdminExport: boolean;
}

export interface RequestFacts {
  method: string;
  /** canonical path, no query */
  path: string;
  /** the query, `?...` or empty (only by-id rows whose object is named in the query read it) */
  search?: string;
}

export interface CallerFacts {
  /** the caller is a chat admin (a role of OAUTH_ADMIN_ROLES) */
  admin: boolean;
}

export type { FilesView };

/** How a listing is answered (the route table's row: policies/open-webui-routes.ts). */
export interface ListingView {
  /** a list of this one model's items, given only when the admin may see the model */
  modelId?: string;
  /** Open WebUI pages it, this many a page: a page that lost items is rebuilt from every page */
  pageSize?: number;
  /** answered from the admin's own ratings */
  own?: 'ratings' | 'rating-ids';
  /** written out as it is judged */
  streamed?: true;
}

/**
 * A refusal said as a page (policies/upstream-release.ts): the chat front-end runs a release the
 * route table was not checked against (`release`), or one that could not be read (`unread`), since
 * `since` (ms since the epoch, when the gateway first saw it), while the checked ones are `checked`.
 */
export interface RefusalPage {
  kind: 'release-not-checked';
  release?: string;
  unread?: string;
  since?: number;
  checked: readonly string[];
}

export type Decision =
  | { action: 'pass'; rule: string }
  /**
   * Answer `status` with `{detail}` and never call the upstream; `page`: a page the browser navigated
   * to, answered with a page in the gateway's words instead.
   */
  | { action: 'deny'; status: 401 | 403; detail: string; rule: string; page?: RefusalPage }
  /** Forward, then let only the caller's own files reach the client. */
  | { action: 'filter-own-files'; view: FilesView; rule: string }
  /**
   * Forward as the upstream answers; write an audit event when the admin is not the owner. `fileId`
   * '*': DELETE /api/v1/files/all (every user's files), audited as such.
   */
  | { action: 'audit-file-access'; fileId: string; operation: 'read' | 'write' | 'delete'; rule: string }
  /**
   * Ask the upstream who owns the chat first; forward only when the rule allows, else 401 `detail`.
   * `page`: the chat's page of the front-end (`/c/{id}`), refused with a page that says why.
   */
  | { action: 'require-own-chat'; access: ChatAccess; detail: string; rule: string; page?: true }
  /**
   * Read the JSON body first: a saved chat it names (`chat_id`) must be the admin's own, a channel chat
   * one they may reach, and every object `inBody` names (objectsNamedInBody) one they may reach; 401 `detail` else.
   */
  | { action: 'require-own-chat-in-body'; inBody?: readonly BodyRef[]; detail: string; rule: string }
  /**
   * Ask the upstream (as the caller) for the object at `lookup` and for every object the JSON body
   * names (`inBody`, read by objectsNamedInBody from the body the gateway then forwards unchanged);
   * forward only when the admin may reach each one, else 403. No `lookup`: the route's own object
   * is the caller's (class own) or is itself named in the body (`{=name}`).
   */
  | { action: 'require-access'; lookup?: string; permission: Permission; inBody?: readonly BodyRef[]; detail: string; rule: string }
  /**
   * Forward only when `userId` is the caller's own upstream id, else 403. `keepEmail`: the JSON body
   * is read first and an `email` other than the caller's realm email is refused too (the email is
   * the identity the trusted-header sign-in finds the account by).
   */
  | { action: 'require-own-account'; userId: string; keepEmail?: boolean; detail: string; rule: string }
  /** Forward, then let only the items the admin owns or holds a grant on reach the client (how: `ListingView`). */
  | ({ action: 'filter-listing'; rule: string } & ListingView)
  /** Forward, then remove `fields` from the answer's records (a bare record, an array, or `{users: [...]}`). */
  | { action: 'redact-fields'; fields: readonly string[]; emptied?: readonly string[]; rule: string }
  /**
   * Forward, then let only the names users gave their chats and objects that the admin may see reach
   * the client: `tags` of the admin's own chats and ratings and of objects they may read
   * (policies/resource-access.ts: `models` and `prompts` lists of names, `chats-of-model` the analytics
   * overview of `modelId`, `feedbacks` the leaderboard); `modelIds`, the ids of models they may see
   * (policies/resource-access.ts). `modelId`: the answer is about that one model, and is given only
   * when it is one of the models the admin may see (else 403, whether or not it exists).
   */
  | { action: 'scope-names'; tags?: TagSource; modelIds?: ModelIdShape; modelId?: string; rule: string }
  /** A Socket.IO long-polling POST of an admin: read its packets, drop note events on notes the admin may not reach. */
  | { action: 'guard-socketio-post'; notes: boolean; rule: string };

/**
 * auth-2: the chat admin role comes from the realm roles claim, by one of
 * OAUTH_ADMIN_ROLES (PlatformSysAdmin); rule 3: PlatformAdmin (a tenant admin) is not one.
 */
export function isChatAdmin(realmRoles: readonly string[], adminRoles: readonly string[]): boolean {
  return realmRoles.some((r) => adminRoles.includes(r));
}

export const EXPORT_DISABLED = 'Admin export is disabled on this platform';
export const ADMIN_CHAT_ACCESS_DISABLED = 'Admin chat access is disabled on this platform';
export const ACCOUNTS_FROM_REALM = 'Accounts come from the platform sign-in';
export const ADMIN_SCOPED = 'Admins reach only their own content and content shared with them on this platform';

/** Prefixes where Open WebUI serves its API; an unknown route there is refused for admins (fail closed). */
const API_SPACE = ['api', 'ollama', 'openai', 'oauth', 'cache'];

/** Lower-cased segments of a canonical path, without empty ones (so a trailing slash does not matter). */
export function routeSegments(path: string): string[] {
  return path.toLowerCase().split('/').filter(Boolean);
}

/** HEAD is judged as GET: Express and Starlette both answer HEAD with the GET handler. */
export function effectiveMethod(method: string): string {
  const m = method.toUpperCase();
  return m === 'HEAD' ? 'GET' : m;
}

/**
 * The export switch's routes (A6) as the route table classes them (`export`): held for every method
 * and every caller, so matched by path alone. Literal paths only: a template would need the matcher.
 */
const EXPORT_ROUTES: readonly (readonly string[])[] = OPEN_WEBUI_ROUTES.filter((r) => r.class === 'export').map((r) => {
  if (r.path.includes('{')) throw new Error(`an export route is a literal path: ${r.path}`);
  return routeSegments(r.path);
});

/**
 * The file answers of rules A1 and A2 by their path below /api/v1/files, as the route table's `files`
 * rows name them: held for every caller, so matched by path alone (literal paths only).
 */
const FILE_VIEWS: ReadonlyMap<string, FilesView | 'own'> = new Map(
  OPEN_WEBUI_ROUTES.filter((r) => r.files).map((r) => {
    if (r.path.includes('{')) throw new Error(`a files view is a literal path: ${r.path}`);
    return [routeSegments(r.path).slice(3).join('/'), r.files!] as const;
  }),
);

export function decide(request: RequestFacts, settings: PolicySettings, caller: CallerFacts): Decision {
  const method = effectiveMethod(request.method);
  const s = routeSegments(request.path);
  const under = (...prefix: string[]) => prefix.every((p, i) => s[i] === p);
  const is = (...exact: string[]) => s.length === exact.length && under(...exact);

  // Rule A6 (and the raw database, which holds the same and more): blocked for every caller,
  // whatever the method, while the export switch is off.
  if (EXPORT_ROUTES.some((route) => is(...route))) {
    return settings.enableAdminExport
      ? { action: 'pass', rule: 'A6: export enabled' }
      : { action: 'deny', status: 401, detail: EXPORT_DISABLED, rule: 'A6: export disabled' };
  }

  // Accounts come from the realm (the trusted-header sign-in): a sign-up or an LDAP sign-in answers
  // with a token of an account of the body's choosing, which the later sign-in of that email lands
  // in. Refused for every caller, whatever the switches (an admin may turn sign-up on upstream).
  // Open WebUI's own OAuth sign-in (a provider an admin may configure at runtime, merging accounts
  // by email) and its token exchange do the same: the platform does not use them.
  const ownOAuthSignIn = s[0] === 'oauth' && s[1] !== 'clients' && s.length >= 3 && (s[2] === 'login' || s[2] === 'callback');
  const tokenExchange = under('api', 'v1', 'auths', 'oauth') && s.length >= 7 && s[s.length - 2] === 'token' && s[s.length - 1] === 'exchange';
  if ((method === 'POST' && (is('api', 'v1', 'auths', 'signup') || is('api', 'v1', 'auths', 'ldap'))) || ownOAuthSignIn || tokenExchange) {
    return { action: 'deny', status: 403, detail: ACCOUNTS_FROM_REALM, rule: 'accounts come from the realm' };
  }

  // The route table (policies/open-webui-routes.ts) is read for admins only: plain users' requests
  // are judged by the rows above and below alone.
  const route = caller.admin ? matchRoute(method, request.path) : undefined;

  // A generation whose model the gateway cannot see to check (MODEL_USED): refused for admins.
  if (route?.row.hiddenModel && !settings.bypassAdminAccessControl)
    return {
      action: 'deny',
      status: 403,
      detail: ADMIN_SCOPED,
      rule: `route table: ${route.row.methods.join(',')} ${route.row.path}: ${route.row.hiddenModel}`,
    };

  // ENABLE_ADMIN_CHAT_ACCESS is fixed false: no browsing other users' chats.
  if (under('api', 'v1', 'chats', 'list', 'user') && s.length >= 6) {
    return { action: 'deny', status: 401, detail: ADMIN_CHAT_ACCESS_DISABLED, rule: 'ENABLE_ADMIN_CHAT_ACCESS fixed false' };
  }

  // ... and no reading, copying, changing, deleting or exporting the stats of another user's chat by id.
  if (caller.admin && under('api', 'v1', 'chats')) {
    const access = chatAccess(method, request.path.split('/').filter(Boolean));
    if (access) return { action: 'require-own-chat', access, detail: ADMIN_CHAT_ACCESS_DISABLED, rule: 'ENABLE_ADMIN_CHAT_ACCESS fixed false: own chats only' };
  }
  // ... nor opening its page: the front-end would show its home page with no word of why (its own
  // request for the chat is refused above), so the page itself is refused, saying why.
  if (caller.admin && method === 'GET' && s.length === 2 && s[0] === 'c') {
    const chatId = request.path.split('/').filter(Boolean)[1]!;
    return {
      action: 'require-own-chat',
      access: { need: 'own-chat', chatId },
      detail: ADMIN_CHAT_ACCESS_DISABLED,
      rule: 'ENABLE_ADMIN_CHAT_ACCESS fixed false: own chats only (the chat\u2019s page)',
      page: true,
    };
  }
  // Chats named outside /api/v1/chats: the task routes by path, the completion routes by body.
  if (route?.row.class === 'chat') {
    if (route.params.chat_id !== undefined) {
      // a `{chat_id:path}` may hold slashes: no chat id has one, and the owner lookup must name exactly one chat
      if (route.params.chat_id.includes('/'))
        return { action: 'deny', status: 401, detail: ADMIN_CHAT_ACCESS_DISABLED, rule: 'ENABLE_ADMIN_CHAT_ACCESS fixed false: not a chat id' };
      return {
        action: 'require-own-chat',
        access: { need: 'own-chat', chatId: route.params.chat_id },
        detail: ADMIN_CHAT_ACCESS_DISABLED,
        rule: 'ENABLE_ADMIN_CHAT_ACCESS fixed false: own chats only',
      };
    }
    if (method === 'POST' && !under('api', 'v1', 'chats')) {
      // what the completion attaches: chats whatever the bypass, other content while it is off
      const inBody = (route.row.body ?? []).filter((r) => r.always || !settings.bypassAdminAccessControl);
      return {
        action: 'require-own-chat-in-body',
        ...(inBody.length ? { inBody } : {}),
        detail: ADMIN_CHAT_ACCESS_DISABLED,
        rule: 'ENABLE_ADMIN_CHAT_ACCESS fixed false: a chat named in the body must be own',
      };
    }
  }

  if (under('api', 'v1', 'files')) {
    const view = FILE_VIEWS.get(s.slice(3).join('/'));
    // The caller's own files by name (the table release's /files/user/search and /files/user/count): no file of anyone else.
    if (view === 'own' && method === 'GET') return { action: 'pass', rule: 'own files' };
    if (view && view !== 'own' && method === 'GET') {
      // Rules A1 and A2.
      return settings.bypassAdminAccessControl
        ? { action: 'pass', rule: 'A2: bypass on, the upstream decides' }
        : { action: 'filter-own-files', view, rule: 'A1: only the caller\u2019s own files' };
    }
    if (s.length >= 4 && (view === undefined || view === 'own') && caller.admin) return adminFileRoute(method, request.path, settings);
  }

  // Socket.IO (mounted at /ws): an admin's long-polling POSTs are read like their WebSocket frames
  // (chat joins always, note events while the bypass is off).
  if (caller.admin && s[0] === 'ws' && s[1] === 'socket.io' && method === 'POST') {
    return { action: 'guard-socketio-post', notes: !settings.bypassAdminAccessControl, rule: 'route table: Socket.IO events' };
  }

  // Admins while the bypass is off, and on the rows that reach users' chats whatever it is: the route
  // table's class decides (A3 to A5, and every route of Open WebUI: docs/policies.md).
  if (caller.admin && (!settings.bypassAdminAccessControl || route?.row.chats)) return scopeAdmin(route, s, request.search ?? '', method);

  // Rule A8: nothing here changes what the platform API exposes; everything else passes.
  return { action: 'pass', rule: 'no policy' };
}

/**
 * An admin's per-file request (Open WebUI's table release, routers/files.py: every per-file route lets role
 * admin past its owner check, whatever BYPASS_ADMIN_ACCESS_CONTROL). Rule A7 names what an admin may
 * do to another user's file by id: read it (its record, its content variants; the processing status
 * too, a read) and delete it, audited. Every other per-file route writes (the indexed text, the name)
 * and stays the owner's while the bypass is off: the gateway asks the upstream for the file as the
 * caller and forwards only the owner's request. DELETE /files/all deletes every user's files, their
 * storage and the whole vector database: refused while the bypass is off. With the bypass on the
 * upstream decides, audited.
 */
function adminFileRoute(method: string, path: string, settings: PolicySettings): Decision {
  const raw = path.split('/').filter(Boolean);
  const s = raw.map((x) => x.toLowerCase());
  const bypass = settings.bypassAdminAccessControl;
  if (s.length === 4 && s[3] === 'all' && method === 'DELETE') {
    return bypass
      ? {
          action: 'audit-file-access',
          fileId: '*',
          operation: 'delete',
          rule: 'A7 bypass on: every user\u2019s files deleted as the upstream answers, audited',
        }
      : { action: 'deny', status: 403, detail: ADMIN_SCOPED, rule: 'A7: deleting every user\u2019s files is refused for admins' };
  }
  const fileId = raw[3]!;
  if (method === 'GET') return { action: 'audit-file-access', fileId, operation: 'read', rule: 'A7: per-file read, audited' };
  if (method === 'DELETE' && s.length === 4) return { action: 'audit-file-access', fileId, operation: 'delete', rule: 'A7: per-file delete, audited' };
  if (bypass) return { action: 'audit-file-access', fileId, operation: 'write', rule: 'A7 bypass on: per-file write as the upstream answers, audited' };
  // the segment as the canonical path holds it: the upstream decodes it to the same id it acts on
  return {
    action: 'require-access',
    lookup: `/api/v1/files/${fileId}`,
    permission: 'owner',
    detail: ADMIN_SCOPED,
    rule: 'A7 names reading and deleting: other per-file writes are the owner\u2019s',
  };
}

/**
 * Fill a lookup template: `{name}` from the path's parameters, `{?name}` from the query (exactly
 * once: Starlette reads the LAST of repeated keys, URLSearchParams the first, so a repeated key could
 * have one object checked and another acted on). `{=name}`: the object is the JSON body's field
 * `name`, a required BodyRef instead of a lookup. Undefined when one is missing or repeated.
 */
function fillLookup(
  template: string,
  params: Record<string, string>,
  search: string,
  permission: Permission,
): { lookup?: string; inBody?: BodyRef[] } | undefined {
  const named = /\{=([a-z_]+)\}/.exec(template);
  if (named) return { inBody: [{ at: named[1]!, lookup: template.replace(named[0], '{=}'), permission, required: true }] };
  const query = new URLSearchParams(search);
  let missing = false;
  const lookup = template.replace(/\{(\??)([a-z_]+)\}/g, (_m, q: string, name: string) => {
    const values = q ? query.getAll(name) : [params[name]];
    const v = values.length === 1 ? values[0] : undefined;
    if (v === null || v === undefined || v === '') {
      missing = true;
      return '';
    }
    // a path parameter is a canonical segment, escapes kept: the id Open WebUI acts on is it decoded
    return q ? encodeURIComponent(v) : encodeURIComponent(decodeURIComponent(v));
  });
  return missing ? undefined : { lookup };
}

/** The decision for an admin's request while CHATUI_BYPASS_ADMIN_ACCESS_CONTROL is false. */
function scopeAdmin(route: RouteMatch | undefined, s: string[], search: string, method: string): Decision {
  if (!route) {
    // Not a route of Open WebUI's table release: fail closed in its API space; static files, the web app
    // and the Socket.IO mount (gateway/enforcement/socketio-guard.ts) pass.
    if (s.length > 0 && API_SPACE.includes(s[0]!))
      return { action: 'deny', status: 403, detail: ADMIN_SCOPED, rule: 'route table: unknown route, refused for admins' };
    return { action: 'pass', rule: 'route table: mount' };
  }
  const { row, params } = route;
  const rule = `route table: ${row.class} ${row.methods.join(',')} ${row.path}`;
  // the one model the answer is about, as Open WebUI reads it; undefined: every model
  let modelId: string | undefined;
  if (row.ofModel === '{model_id}') {
    // Starlette decodes the path before it hands the model id to the route
    try {
      modelId = decodeURIComponent(params.model_id ?? '');
    } catch {
      modelId = '';
    }
    if (!modelId) return { action: 'deny', status: 403, detail: ADMIN_SCOPED, rule: `${rule} (no model id)` };
  } else if (row.ofModel === '{?model_id}') {
    const named = new URLSearchParams(search).getAll('model_id');
    // one reading only: a server may take the first of repeated parameters, FastAPI the last
    if (named.length > 1) return { action: 'deny', status: 403, detail: ADMIN_SCOPED, rule: `${rule} (model_id given twice)` };
    modelId = named[0] || undefined;
  }
  const ofModel = modelId === undefined ? {} : { modelId };
  if (row.tags || row.modelIds) {
    const names = { ...(row.tags ? { tags: row.tags } : {}), ...(row.modelIds ? { modelIds: row.modelIds } : {}) };
    // the leaderboard's query weighs every user's ratings by how near their tags are to it
    if (row.tags === 'feedbacks' && new URLSearchParams(search).getAll('query').some((q) => q.trim() !== ''))
      return { action: 'deny', status: 403, detail: ADMIN_SCOPED, rule: `${rule}: its query weighs every user\u2019s ratings by their tags` };
    return { action: 'scope-names', ...names, ...ofModel, rule };
  }
  if (row.ofModel && row.class === 'admin-config') return { action: 'scope-names', ...ofModel, rule };
  const permission: Permission = row.permission ?? (row.class === 'by-id-read' ? 'read' : 'write');
  switch (row.class) {
    case 'listing':
      return {
        action: 'filter-listing',
        ...ofModel,
        ...(row.pageSize ? { pageSize: row.pageSize } : {}),
        ...(row.own ? { own: row.own } : {}),
        ...(row.streamed ? { streamed: row.streamed } : {}),
        rule,
      };
    case 'by-id-read':
    case 'by-id-write': {
      const filled = fillLookup(row.lookup!, params, search, permission);
      if (!filled) return { action: 'deny', status: 403, detail: ADMIN_SCOPED, rule: `${rule} (no single id to check)` };
      const inBody = [...(filled.inBody ?? []), ...(row.body ?? [])];
      return {
        action: 'require-access',
        ...(filled.lookup ? { lookup: filled.lookup } : {}),
        permission,
        ...(inBody.length ? { inBody } : {}),
        detail: ADMIN_SCOPED,
        rule,
      };
    }
    case 'own':
      // the caller's own object, but the body names others (a parent folder, an attached file)
      return row.body ? { action: 'require-access', permission, inBody: row.body, detail: ADMIN_SCOPED, rule } : { action: 'pass', rule };
    case 'account':
      // An admin who gives their OWN account another email hands it (their token still valid on the
      // socket) to whoever signs in with that email next: the email stays the realm's.
      return {
        action: 'require-own-account',
        userId: params.user_id!,
        ...(method === 'POST' && row.path.endsWith('/update') ? { keepEmail: true } : {}),
        detail: ADMIN_SCOPED,
        rule,
      };
    case 'refused':
      return { action: 'deny', status: 403, detail: ADMIN_SCOPED, rule: `${rule}: ${row.why}` };
    case 'admin-config':
      // configuration, but the body may name what opens other users' content (a parent group, a stored model)
      if (row.body) return { action: 'require-access', permission, inBody: row.body, detail: ADMIN_SCOPED, rule };
      return row.redact || row.emptied
        ? { action: 'redact-fields', fields: row.redact ?? [], ...(row.emptied ? { emptied: row.emptied } : {}), rule }
        : { action: 'pass', rule };
    default:
      // own, admin-config, gateway; export, chat and files were decided above
      return { action: 'pass', rule };
  }
}
