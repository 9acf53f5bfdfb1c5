// Every HTTP route and Socket.IO client event of Open WebUI's table release (TABLE_RELEASE), each in
// one class with the rule the gateway holds for an admin while CHATUI_BYPASS_ADMIN_ACCESS_CONTROL is
// false. Data, so that test/operations/open-webui-routes.test.ts can hold it to the routes the real
// app registers and a route nobody has read is refused (docs/design/route-table.md).

import type { ModelIdShape, Permission, TagSource } from './resource-access.js';

/** The file answers rules A1 and A2 rebuild of the caller's own files; `own`: Open WebUI's own-files routes, passed. */
export type FilesView = 'list' | 'search' | 'count';

/**
 * A route's class: the rule it holds for an admin while the bypass is off (policies/admin-scoping.ts
 * turns a row into a decision; docs/policies.md "What each class means for an admin").
 *   own          the upstream scopes the answer to the caller (or it holds nobody's content): pass
 *   listing      a list across users: forwarded, then only items the admin owns or holds a user or
 *                group grant on reach the client (by `user_id` and `access_grants`)
 *   by-id-read   a read of one object by id: the gateway asks the upstream (as the caller) for the
 *                object first and forwards only when the admin owns it or holds a grant on it
 *   by-id-write  a write on one object by id: the same check, a write grant needed; a write on
 *                another user's object never reaches Open WebUI
 *   account      a route on a user account by id: only the caller's own account
 *   refused      reaches other users' content in a way the gateway cannot scope (a body names the
 *                object, an aggregate of everybody's messages, code running inside Open WebUI,
 *                settings where every user's prompts go): refused for admins
 *   export       the export switch (A6), for every caller, every method and both bypass values
 *                (policies/admin-scoping.ts reads these rows by path)
 *   chat         ENABLE_ADMIN_CHAT_ACCESS fixed false (policies/chat-scoping.ts), both bypass values
 *   files        the contract's file rows (A1, A2, A7), for every caller: the list, search and count
 *                (`files`) answered with the caller's own files; reads and deletes by id pass
 *                audited, other per-file writes are the owner's and DELETE /files/all is refused
 *                while the bypass is off (policies/admin-scoping.ts adminFileRoute)
 *   admin-config admin configuration that exposes nobody's content: pass
 *   gateway      answered by the gateway itself, never forwarded (policies/routes.ts)
 * A route missing from the table is refused for admins while the bypass is off (fail closed) and
 * passed for plain users (Open WebUI scopes them). With the bypass on every admin request passes as
 * Open WebUI answers, except the export and chat classes and the rows marked `chats`.
 */
export type RouteClassName =
  'own' | 'listing' | 'by-id-read' | 'by-id-write' | 'account' | 'refused' | 'export' | 'chat' | 'files' | 'admin-config' | 'gateway';

export interface RouteRow {
  /** upper-case methods as Open WebUI registers them (HEAD is judged as GET) */
  methods: readonly string[];
  /** Open WebUI's path template: `{name}` one segment, `{name:path}` the rest (one or more) */
  path: string;
  class: RouteClassName;
  /** by-id classes: the permission the lookup's object must give (default: read for by-id-read, write for by-id-write) */
  permission?: Permission;
  /** by-id classes: the GET that returns the object, `{name}` from the path, `{?name}` from the query, `{=name}` from the JSON body */
  lookup?: string;
  /** objects the JSON body names besides the route's own, each checked like it (see BodyRef) */
  body?: readonly BodyRef[];
  /** refused: why (also the audit line's rule) */
  why?: string;
  /**
   * Refused for admins while CHATUI_BYPASS_ADMIN_ACCESS_CONTROL is false, whatever the class says
   * (the chat rows are judged for both switch values): a generation whose model the request does
   * not show in a form the gateway can check, and why.
   */
  hiddenModel?: string;
  /** admin-config: fields removed from the answer (each user's own settings and info) */
  redact?: readonly string[];
  /** admin-config: lists (`{items, total}`) emptied in the answer: what others shared, kept in the shape the front-end reads */
  emptied?: readonly string[];
  /**
   * The answer names tags users gave their chats or objects: only the tags of the admin's own chats
   * and of objects they may read reach them (policies/resource-access.ts), whatever the class says.
   */
  tags?: TagSource;
  /** The answer names models by id, every user's: only the ids of models the admin may see reach them (policies/resource-access.ts). */
  modelIds?: ModelIdShape;
  /**
   * The answer counts the uses or ratings of one model, named by the path (`{model_id}`) or by the
   * query (`{?model_id}`, where its absence means every model): answered only for a model the admin
   * may see, so that counts do not tell whether a guessed private model is used or rated.
   */
  ofModel?: '{model_id}' | '{?model_id}';
  /**
   * listing: Open WebUI pages the list (`?page=`, this many items a page, `{items, total}`). A page
   * that held items the admin may not read (Open WebUI's own bypass on) is rebuilt from every page,
   * so that pages and `total` count only theirs.
   */
  pageSize?: number;
  /** listing: answered from the admin's own ratings (policies/ratings.ts), not Open WebUI's list of everyone's */
  own?: 'ratings' | 'rating-ids';
  /** listing: larger than the gateway may hold (an export): written out as its items are judged */
  streamed?: true;
  /**
   * The answer or the change reaches users' chats outside /api/v1/chats (message text, titles, a
   * rating's snapshot of the chat, a folder's chats, their deletion): judged for admins as while the
   * bypass is off, whatever its value, since ENABLE_ADMIN_CHAT_ACCESS is fixed false.
   */
  chats?: true;
  /** files: the answer rules A1 and A2 rebuild of the caller's own files, or `own` (already only theirs) */
  files?: FilesView | 'own';
}

/**
 * An object named in the JSON body of an admin's request: the gateway reads the body (bounded),
 * asks the upstream for each object named (as the caller) and forwards exactly those bytes only
 * when the admin owns every one or holds a grant on it (policies/admin-scoping.ts
 * objectsNamedInBody). Absent or null (or '') is nothing to check, as Open WebUI treats it, unless
 * `required`; a value that is not a string id is refused (fail closed).
 */
export interface BodyRef {
  /** where the id is: field names joined by '.', `[]` for each element of an array ('file_id', '[].file_id', 'meta.skillIds[]') */
  at: string;
  /** the GET that returns the object, `{=}` where the id goes (none with `never`) */
  lookup?: string;
  permission: Permission;
  /** the field must hold nothing (absent, null or ''): what it would name is refused, and why */
  never?: string;
  /**
   * `at` holds text whose mentions `<@M:id|label>` name models (utils/channels.py extract_mentions):
   * a channel message mentioning a model has it answer in the thread, as the sender
   */
  modelMentions?: true;
  /**
   * `at` holds one vector collection's name that the request writes into (absent, null or '' is
   * none: Open WebUI names a new one itself), checked as `collections` entries are.
   */
  collectionName?: true;
  /** the request names its object here: absent, null or '' is refused */
  required?: boolean;
  /**
   * `at` holds `{type, id}` entries (folder and model knowledge): this ref checks the entries of this
   * type; entries of a type no ref names are not objects of these kinds (Open WebUI ignores them there)
   */
  type?: string;
  /** checked with CHATUI_BYPASS_ADMIN_ACCESS_CONTROL=true too: a chat (ENABLE_ADMIN_CHAT_ACCESS is fixed false) */
  always?: boolean;
  /**
   * `at` holds entries whose `collection_name` / `collection_names` name vector collections, whatever
   * the entry's type (retrieval/utils.py get_sources_from_items searches them for `text` and
   * `web_search` items, and filter_accessible_collections lets role admin search any): `file-<id>`
   * is that file, `user-memory-<id>` and `web-search-<id>-...` that user's own (the caller's only),
   * any other name a knowledge base (`lookup`).
   */
  collections?: true;
}

const row = (methods: string, path: string, cls: RouteClassName, extra: Partial<RouteRow> = {}): RouteRow => ({
  methods: methods.split(','),
  path,
  class: cls,
  ...extra,
});
const own = (m: string, p: string) => row(m, p, 'own');
const cfg = (m: string, p: string) => row(m, p, 'admin-config');
const list = (m: string, p: string, extra: Partial<RouteRow> = {}) => row(m, p, 'listing', extra);
/** a listing Open WebUI pages (PAGE_ITEM_COUNT of its router) */
const paged = (p: string, pageSize = 30) => list('GET', p, { pageSize });
const read = (m: string, p: string, lookup: string) => row(m, p, 'by-id-read', { lookup });
const write = (m: string, p: string, lookup: string, body?: readonly BodyRef[]) => row(m, p, 'by-id-write', { lookup, ...(body ? { body } : {}) });
/** what Open WebUI leaves to the object's owner (or its author) alone, admins aside: a grant or a membership is not enough */
const ownerOnly = (m: string, p: string, lookup: string, body?: readonly BodyRef[]) =>
  row(m, p, 'by-id-write', { lookup, permission: 'owner', ...(body ? { body } : {}) });
/** a route Open WebUI scopes to the caller, but whose body names other objects (checked as BodyRef) */
const ownNaming = (m: string, p: string, body: readonly BodyRef[]) => row(m, p, 'own', { body });
const refused = (m: string, p: string, why: string) => row(m, p, 'refused', { why });
/** a row whose answer or change reaches users' chats: see RouteRow.chats */
const ofChats = (r: RouteRow): RouteRow => ({ ...r, chats: true });
const account = (m: string, p: string) => row(m, p, 'account');
const chat = (m: string, p: string) => row(m, p, 'chat');

const NOTE = '/api/v1/notes/{id}';
const FOLDER = '/api/v1/folders/{id}';
const CHANNEL = '/api/v1/channels/{id}';
const CHANNEL_MESSAGE = '/api/v1/channels/{id}/messages/{message_id}';
const KNOWLEDGE = '/api/v1/knowledge/{id}';
const PROMPT = '/api/v1/prompts/id/{prompt_id}';
const TOOL = '/api/v1/tools/id/{id}';
const SKILL = '/api/v1/skills/id/{id}';
const MODEL = '/api/v1/models/model?id={?id}';
/** update, access/update and delete read the model's id from the JSON body (routers/models.py ModelForm, ModelAccessGrantsForm, ModelIdForm), not the query */
const MODEL_IN_BODY = '/api/v1/models/model?id={=id}';
const FEEDBACK = '/api/v1/evaluations/feedback/{id}';
const CALENDAR = '/api/v1/calendars/{calendar_id}';
const CAL_EVENT = '/api/v1/calendars/events/{event_id}';

// ---- objects named in a request BODY (admins, bypass off)
// Open WebUI lets role admin past most of its own checks on an id a body names, so a route that
// passes could still act on another user's object named in its body. Every route an admin's
// request passes was read for such ids; the verdict for each (checked here, checked by Open WebUI,
// opens nothing, refused) is in docs/policies.md, "The request bodies, route by route".
const BODY_FILE = '/api/v1/files/{=}';
const BODY_FOLDER = '/api/v1/folders/{=}';
const BODY_KNOWLEDGE = '/api/v1/knowledge/{=}';
const BODY_NOTE = '/api/v1/notes/{=}';
const BODY_SKILL = '/api/v1/skills/id/{=}';
const BODY_CALENDAR = '/api/v1/calendars/{=}';
const BODY_CHANNEL = '/api/v1/channels/{=}';
/** folder.data.files and model meta.knowledge: `{type, id}` entries naming files, knowledge bases and notes, read by chats */
const attached = (at: string): BodyRef[] => [
  { at, type: 'file', lookup: BODY_FILE, permission: 'read' },
  { at, type: 'collection', lookup: BODY_KNOWLEDGE, permission: 'read' },
  { at, type: 'note', lookup: BODY_NOTE, permission: 'read' },
];
const FOLDER_BODY: BodyRef[] = attached('data.files[]');
const MODEL_BODY: BodyRef[] = [...attached('meta.knowledge[]'), { at: 'meta.skillIds[]', lookup: BODY_SKILL, permission: 'read' }];
/** what a completion attaches (main.py chat_completion: form `files`, `folder_id`) */
/** what a model reads for its answer (retrieval/utils.py get_sources_from_items): the attached kinds, folders and chats */
const forTheModel = (at: string): BodyRef[] => [
  ...attached(at),
  { at, collections: true, lookup: BODY_KNOWLEDGE, permission: 'read' },
  { at, type: 'folder', lookup: BODY_FOLDER, permission: 'read' },
  { at, type: 'chat', lookup: '/api/v1/chats/{=}', permission: 'read', always: true },
];
/**
 * The model a generation runs (`model`): a stored model (a workspace model) brings its owner's system
 * prompt and, in a chat, reads its knowledge for the answer (utils/chat.py, routers/openai.py and
 * ollama.py apply `params`; check_model_access lets role admin use any model there, whatever the
 * bypass). It must be a model the admin owns or holds a grant on. One Open WebUI has no entry for
 * (404) is refused too: an arena model picks among every model, another user's included, and an
 * Ollama name resolves to the entry of its `:latest` alias; with BYPASS_ADMIN_ACCESS_CONTROL false
 * Open WebUI itself lets an admin chat only with a registered model (check_model_access).
 */
const MODEL_LOOKUP = '/api/v1/models/model?id={=}';
const MODEL_USED: BodyRef = { at: 'model', lookup: MODEL_LOOKUP, permission: 'read' };
/** a generation outside the chat routes (Ollama's and OpenAI's own APIs): configuration, but its model is checked */
const generation = (p: string) => row('POST', p, 'admin-config', { body: [MODEL_USED] });
const COMPLETION_BODY: BodyRef[] = [
  MODEL_USED,
  ...forTheModel('files[]'),
  { at: 'folder_id', lookup: BODY_FOLDER, permission: 'read' },
  // a "direct" model the client describes itself (main.py chat_completion, _set_direct_model:
  // get_accessible_folder_files keeps every entry for role admin): its knowledge is read like a
  // stored model's, in legacy mode as attached files, natively by the knowledge tools
  ...forTheModel('model_item.info.meta.knowledge[]'),
  { at: 'model_item.info.meta.skillIds[]', lookup: BODY_SKILL, permission: 'read' },
];
/** a vector collection a retrieval route writes into: the caller's own memories or searches, a file or knowledge base they may write */
const COLLECTION_WRITTEN: BodyRef[] = [{ at: 'collection_name', collectionName: true, lookup: BODY_KNOWLEDGE, permission: 'write' }];
/** a channel message's attachments: a model mentioned in the thread answers from them, as the sender */
const MESSAGE_BODY: BodyRef[] = [...forTheModel('data.files[]'), { at: 'content', modelMentions: true, lookup: MODEL_LOOKUP, permission: 'read' }];
const AUTOMATION_BODY: BodyRef[] = [
  { at: 'data.target.channel_id', lookup: BODY_CHANNEL, permission: 'write' },
  // the model the automation runs its prompt with (automations.py)
  { at: 'data.model_id', lookup: MODEL_LOOKUP, permission: 'read' },
];

const CODE = 'runs code of the admin inside Open WebUI, with access to every user\u2019s data (ENABLE_PLUGINS=false turns plugin loading off)';
const PROMPT_ROUTE = 'routes every user\u2019s prompts or documents to an address the admin sets (set it in the deployment instead)';
const GROUPS = 'group membership comes from the realm (the groups header at each sign-in); a self-added group opens that tenant\u2019s content';

export const OPEN_WEBUI_ROUTES: readonly RouteRow[] = [
  // ---- main.py: the app itself
  own('GET,HEAD', '/openapi.json'),
  own('GET,HEAD', '/docs'),
  own('GET,HEAD', '/docs/oauth2-redirect'),
  list('GET', '/api/models'),
  list('GET', '/api/v1/models'),
  cfg('GET', '/api/models/base'),
  cfg('POST', '/api/models/unload'),
  own('POST', '/api/embeddings'),
  own('POST', '/api/v1/embeddings'),
  // chat_id in the body: the admin's own chat checked before forwarding (ENABLE_ADMIN_CHAT_ACCESS)
  row('POST', '/api/chat/completions', 'chat', { body: COMPLETION_BODY }),
  row('POST', '/api/v1/chat/completions', 'chat', { body: COMPLETION_BODY }),
  chat('POST', '/api/chat/completed'),
  chat('POST', '/api/chat/actions/{action_id}'),
  row('POST', '/api/v1/chats/{id}/messages/{message_id}/resolve', 'chat', {
    hiddenModel: 'goes on with the model a stored message of the chat names, which the admin may have written there',
  }),
  // Anthropic's messages API on chat_completion: the same `model`
  ownNaming('POST', '/api/message', [MODEL_USED]),
  ownNaming('POST', '/api/v1/messages', [MODEL_USED]),
  own('POST', '/api/message/count_tokens'),
  own('POST', '/api/v1/messages/count_tokens'),
  // admin-only in Open WebUI; an id is unguessable once nobody lists them (the chat's own stop route is a chat row)
  own('POST', '/api/tasks/stop/{task_id}'),
  refused('GET', '/api/tasks', 'lists every user\u2019s running generations, for stopping any of them (a chat\u2019s own are listed by /api/tasks/chat/{id})'),
  chat('GET', '/api/tasks/chat/{chat_id:path}'),
  chat('POST', '/api/tasks/chat/{chat_id:path}/stop'),
  own('GET', '/api/config'),
  own('GET', '/api/events'),
  // The list of outbound event webhooks is configuration (names, addresses, event filters): reading
  // it, as Admin Settings does on every visit, shows nobody's content. Aiming one is the danger:
  // each receives a preview of every user's messages, so creating and changing one stay refused.
  cfg('GET', '/api/events/webhooks'),
  refused('POST', '/api/events/webhooks', 'outbound event webhooks receive a preview of every user\u2019s messages'),
  refused('PUT', '/api/events/webhooks/{webhook_id}', 'outbound event webhooks receive a preview of every user\u2019s messages'),
  cfg('DELETE', '/api/events/webhooks/{webhook_id}'),
  own('GET', '/api/version'),
  own('GET', '/api/version/updates'),
  own('GET', '/api/changelog'),
  // the ids of the models in use, every user's private ones included
  row('GET', '/api/usage', 'own', { modelIds: 'usage' }),
  own('GET', '/oauth/clients/{client_id}/authorize'),
  own('GET', '/oauth/clients/{client_id}/callback'),
  // Open WebUI's own OAuth sign-in: refused for every caller (policies/admin-scoping.ts, accounts come from the realm)
  refused('GET', '/oauth/{provider}/login', 'accounts come from the realm'),
  refused('GET', '/oauth/{provider}/callback', 'accounts come from the realm'),
  refused('GET', '/oauth/{provider}/login/callback', 'accounts come from the realm'),
  own('POST', '/oauth/backchannel-logout'),
  own('GET', '/manifest.json'),
  own('GET', '/opensearch.xml'),
  own('GET', '/health'),
  own('GET', '/ready'),
  own('GET', '/health/db'),
  own('GET', '/cache/{path:path}'),

  // ---- routers/ollama.py (/ollama): model serving and its connection settings
  cfg('GET,HEAD', '/ollama/'),
  cfg('GET', '/ollama/config'),
  refused('POST', '/ollama/config/update', PROMPT_ROUTE),
  cfg('POST', '/ollama/verify'),
  ...['/ollama/api/tags', '/ollama/api/version', '/ollama/v1/models'].flatMap((p) => [cfg('GET', p), cfg('GET', `${p}/{url_idx}`)]),
  cfg('GET', '/ollama/api/ps'),
  cfg('POST', '/ollama/api/unload'),
  cfg('POST', '/ollama/api/show'),
  ...[
    '/ollama/api/pull',
    '/ollama/api/create',
    '/ollama/api/copy',
    '/ollama/api/embed',
    '/ollama/api/embeddings',
    '/ollama/v1/embeddings',
    '/ollama/models/download',
    '/ollama/models/upload',
  ].flatMap((p) => [cfg('POST', p), cfg('POST', `${p}/{url_idx}`)]),
  // generations: the model they run may be a user's stored model (MODEL_USED)
  ...[
    '/ollama/api/generate',
    '/ollama/api/chat',
    '/ollama/v1/completions',
    '/ollama/v1/chat/completions',
    '/ollama/v1/messages',
    '/ollama/v1/responses',
  ].flatMap((p) => [generation(p), generation(`${p}/{url_idx}`)]),
  ...['/ollama/api/push', '/ollama/api/delete'].flatMap((p) => [cfg('DELETE', p), cfg('DELETE', `${p}/{url_idx}`)]),

  // ---- routers/openai.py (/openai)
  cfg('GET', '/openai/config'),
  refused('POST', '/openai/config/update', PROMPT_ROUTE),
  cfg('POST', '/openai/verify'),
  cfg('GET', '/openai/models'),
  cfg('GET', '/openai/models/{url_idx}'),
  cfg('DELETE', '/openai/models/{url_idx}'),
  cfg('GET', '/openai/models/{url_idx}/catalog'),
  cfg('POST', '/openai/models/{url_idx}/download'),
  cfg('GET', '/openai/models/{url_idx}/download/status/{job_id}'),
  cfg('POST', '/openai/models/{url_idx}/load'),
  cfg('POST', '/openai/models/{url_idx}/unload'),
  cfg('GET', '/openai/models/{url_idx}/sse'),
  cfg('POST', '/openai/audio/speech'),
  generation('/openai/chat/completions'),
  generation('/openai/responses'),
  cfg('GET,POST,PUT,DELETE', '/openai/{path:path}'),

  // ---- routers/pipelines.py (/api/v1/pipelines): pipelines are code on a pipelines server
  cfg('GET', '/api/v1/pipelines/list'),
  refused('POST', '/api/v1/pipelines/upload', CODE),
  refused('POST', '/api/v1/pipelines/add', CODE),
  cfg('DELETE', '/api/v1/pipelines/delete'),
  cfg('GET', '/api/v1/pipelines/'),
  cfg('GET', '/api/v1/pipelines/{pipeline_id}/valves'),
  cfg('GET', '/api/v1/pipelines/{pipeline_id}/valves/spec'),
  refused('POST', '/api/v1/pipelines/{pipeline_id}/valves/update', CODE),

  // ---- routers/tasks.py (/api/v1/tasks)
  cfg('GET', '/api/v1/tasks/config'),
  refused('POST', '/api/v1/tasks/config/update', 'the task model receives every user\u2019s chats (set it in the deployment instead)'),
  ...['title', 'follow_up', 'tags', 'image_prompt', 'queries', 'auto', 'emoji', 'moa'].map((t) =>
    ownNaming('POST', `/api/v1/tasks/${t}/completions`, [MODEL_USED]),
  ),

  // ---- routers/images.py, routers/audio.py
  cfg('GET', '/api/v1/images/config'),
  refused('POST', '/api/v1/images/config/update', PROMPT_ROUTE),
  cfg('POST', '/api/v1/images/verify'),
  cfg('GET', '/api/v1/images/models'),
  own('POST', '/api/v1/images/generations'),
  own('POST', '/api/v1/images/edit'),
  cfg('GET', '/api/v1/audio/config'),
  refused('POST', '/api/v1/audio/config/update', PROMPT_ROUTE),
  own('POST', '/api/v1/audio/speech'),
  own('POST', '/api/v1/audio/transcriptions'),
  cfg('GET', '/api/v1/audio/models'),
  cfg('GET', '/api/v1/audio/voices'),
  own('WEBSOCKET', '/api/v1/audio/realtime'),

  // ---- routers/retrieval.py (/api/v1/retrieval)
  cfg('GET', '/api/v1/retrieval/embedding'),
  refused('POST', '/api/v1/retrieval/embedding/update', PROMPT_ROUTE),
  cfg('GET', '/api/v1/retrieval/config'),
  refused('POST', '/api/v1/retrieval/config/update', PROMPT_ROUTE),
  refused('POST', '/api/v1/retrieval/process/file', 'names a file by body, any user\u2019s for an admin'),
  refused('POST', '/api/v1/retrieval/process/files/batch', 'names files by body, any user\u2019s for an admin'),
  // collection_name: replaced (overwrite defaults to true) and filter_accessible_collections lets role admin name any
  ...['text', 'url', 'web', 'youtube'].map((k) => ownNaming('POST', `/api/v1/retrieval/process/${k}`, COLLECTION_WRITTEN)),
  own('POST', '/api/v1/retrieval/process/web/search'),
  refused('POST', '/api/v1/retrieval/query/doc', 'queries any collection by name: user-memory-<id>, file-<id>'),
  refused('POST', '/api/v1/retrieval/query/collection', 'queries any collection by name: user-memory-<id>, file-<id>'),
  refused('POST', '/api/v1/retrieval/delete', 'deletes from any collection by name'),
  refused('POST', '/api/v1/retrieval/reset/db', 'wipes every user\u2019s vectors'),
  refused('POST', '/api/v1/retrieval/reset/uploads', 'wipes every user\u2019s uploads'),

  // ---- routers/configs.py (/api/v1/configs): admin settings
  refused('POST', '/api/v1/configs/import', `sets every setting at once, connections and webhooks included: ${PROMPT_ROUTE}`),
  cfg('GET', '/api/v1/configs/export'),
  cfg('GET', '/api/v1/configs/connections'),
  refused('POST', '/api/v1/configs/connections', PROMPT_ROUTE),
  cfg('GET', '/api/v1/configs/namespace/{namespace}'),
  cfg('POST', '/api/v1/configs/interface/visibility'),
  cfg('POST', '/api/v1/configs/oauth/clients/register'),
  cfg('GET', '/api/v1/configs/tool_servers'),
  refused('POST', '/api/v1/configs/tool_servers', PROMPT_ROUTE),
  cfg('POST', '/api/v1/configs/tool_servers/verify'),
  cfg('GET', '/api/v1/configs/terminal_servers'),
  refused('POST', '/api/v1/configs/terminal_servers', PROMPT_ROUTE),
  cfg('POST', '/api/v1/configs/terminal_servers/verify'),
  cfg('POST', '/api/v1/configs/terminal_servers/policy'),
  cfg('POST', '/api/v1/configs/terminal_servers/lifecycle'),
  cfg('POST', '/api/v1/configs/terminal_servers/refresh'),
  cfg('GET', '/api/v1/configs/code_execution'),
  refused('POST', '/api/v1/configs/code_execution', PROMPT_ROUTE),
  cfg('GET', '/api/v1/configs/models'),
  cfg('GET', '/api/v1/configs/models/defaults'),
  cfg('GET', '/api/v1/configs/subagents'),
  cfg('POST', '/api/v1/configs/subagents'),
  cfg('POST', '/api/v1/configs/models'),
  cfg('POST', '/api/v1/configs/suggestions'),
  cfg('GET', '/api/v1/configs/banners'),
  cfg('POST', '/api/v1/configs/banners'),

  // ---- routers/auths.py, mfa.py: the caller's own account; admin settings
  own('GET', '/api/v1/auths/'),
  own('POST', '/api/v1/auths/update/profile'),
  own('POST', '/api/v1/auths/update/timezone'),
  own('POST', '/api/v1/auths/update/password'),
  refused('POST', '/api/v1/auths/ldap', 'accounts come from the realm: an LDAP sign-in answers with a token of whatever account its server names'),
  own('POST', '/api/v1/auths/signin'),
  refused(
    'POST',
    '/api/v1/auths/signup',
    'accounts come from the realm: a sign-up answers with a token of the account the next sign-in with that email lands in',
  ),
  row('POST', '/api/v1/auths/signout', 'gateway'),
  own('DELETE', '/api/v1/auths/oauth/sessions/{provider:path}'),
  // answers with a token OF THE NEW ACCOUNT: an admin adding the email of someone not signed in
  // yet would hold a token of the account that person's trusted-header sign-in lands in (shown on
  // the real table release); accounts come from the realm at first sign-in
  refused('POST', '/api/v1/auths/add', 'accounts come from the realm; the answer holds a token of the new account'),
  cfg('GET', '/api/v1/auths/admin/details'),
  cfg('GET,POST', '/api/v1/auths/admin/config'),
  cfg('GET,POST', '/api/v1/auths/admin/config/ldap/server'),
  cfg('GET,POST', '/api/v1/auths/admin/config/ldap'),
  cfg('GET,POST', '/api/v1/auths/admin/config/oauth'),
  own('GET,POST,DELETE', '/api/v1/auths/api_key'),
  refused('POST', '/api/v1/auths/oauth/{provider}/token/exchange', 'accounts come from the realm'),
  own('GET', '/api/v1/auths/mfa/status'),
  ...['challenge', 'enroll/start', 'enroll/confirm', 'verify', 'replace', 'recovery/codes', 'recover'].map((p) => own('POST', `/api/v1/auths/mfa/${p}`)),

  // ---- routers/users.py (/api/v1/users)
  // UserModel carries each user's own `settings` (their UI settings, system prompt, tool servers)
  // and `info`: the admin's user management gets the records without them
  row('GET', '/api/v1/users/', 'admin-config', { redact: ['settings', 'info'] }),
  cfg('GET', '/api/v1/users/all'),
  cfg('GET', '/api/v1/users/search'),
  own('GET', '/api/v1/users/groups'),
  own('GET', '/api/v1/users/permissions'),
  cfg('GET,POST', '/api/v1/users/default/permissions'),
  cfg('GET', '/api/v1/users/default/permissions/defaults'),
  own('GET', '/api/v1/users/user/settings'),
  own('POST', '/api/v1/users/user/settings/update'),
  own('GET', '/api/v1/users/user/status'),
  own('POST', '/api/v1/users/user/status/update'),
  own('GET', '/api/v1/users/user/info'),
  own('POST', '/api/v1/users/user/info/update'),
  own('GET', '/api/v1/users/user/variables'),
  own('POST', '/api/v1/users/user/variables/update'),
  cfg('GET', '/api/v1/users/usage'),
  row('GET', '/api/v1/users/{user_id}', 'admin-config', { redact: ['settings', 'info'] }),
  // UserInfoResponse: name, email, bio, status (any verified user may ask, for profile previews)
  cfg('GET', '/api/v1/users/{user_id}/info'),
  account('GET', '/api/v1/users/{user_id}/oauth/sessions'),
  cfg('GET', '/api/v1/users/{user_id}/profile/image'),
  cfg('GET', '/api/v1/users/{user_id}/active'),
  account('POST', '/api/v1/users/{user_id}/sessions/revoke'),
  account('POST', '/api/v1/users/{user_id}/update'),
  account('DELETE', '/api/v1/users/{user_id}'),
  cfg('GET', '/api/v1/users/{user_id}/groups'),
  // what a user can reach: the ids and NAMES of every knowledge base, model and tool they own or
  // hold a grant on, private ones of other users included (seen on the real table release): the admin
  // keeps the user and their groups only
  row('GET', '/api/v1/users/{user_id}/preview', 'admin-config', { emptied: ['models', 'knowledge', 'tools'] }),

  // ---- routers/apps.py (/api/v1/apps): external apps, installed and managed by admins, global
  cfg('GET', '/api/v1/apps'),
  cfg('POST', '/api/v1/apps/manifest/preview'),
  cfg('POST', '/api/v1/apps'),
  cfg('GET,PATCH,DELETE', '/api/v1/apps/{app_id}'),
  cfg('POST', '/api/v1/apps/{app_id}/connect'),
  own('POST', '/api/v1/apps/{app_id}/interactions'),

  // ---- routers/channels.py (/api/v1/channels): a channel the admin owns, holds a grant on, or is a member of
  own('GET', '/api/v1/channels/'),
  list('GET', '/api/v1/channels/list'),
  own('GET', '/api/v1/channels/users/{user_id}'),
  own('POST', '/api/v1/channels/create'),
  read('GET', '/api/v1/channels/{id}', CHANNEL),
  read('GET', '/api/v1/channels/{id}/members', CHANNEL),
  read('POST', '/api/v1/channels/{id}/members/mute', CHANNEL),
  read('POST', '/api/v1/channels/{id}/members/active', CHANNEL),
  ownerOnly('POST', '/api/v1/channels/{id}/update/members/add', CHANNEL),
  ownerOnly('POST', '/api/v1/channels/{id}/update/members/remove', CHANNEL),
  ownerOnly('POST', '/api/v1/channels/{id}/update', CHANNEL),
  ownerOnly('POST', '/api/v1/channels/{id}/access/update', CHANNEL),
  ownerOnly('DELETE', '/api/v1/channels/{id}/delete', CHANNEL),
  read('GET', '/api/v1/channels/{channel_id}/apps', '/api/v1/channels/{channel_id}'),
  write('POST', '/api/v1/channels/{channel_id}/apps', '/api/v1/channels/{channel_id}'),
  write('DELETE', '/api/v1/channels/{channel_id}/apps/{app_id}', '/api/v1/channels/{channel_id}'),
  read('GET', '/api/v1/channels/{id}/messages', CHANNEL),
  read('GET', '/api/v1/channels/{id}/messages/pinned', CHANNEL),
  write('POST', '/api/v1/channels/{id}/messages/post', CHANNEL, MESSAGE_BODY),
  read('GET', '/api/v1/channels/{id}/messages/{message_id}', CHANNEL),
  read('GET', '/api/v1/channels/{id}/messages/{message_id}/data', CHANNEL),
  read('GET', '/api/v1/channels/{id}/messages/{message_id}/thread', CHANNEL),
  read('POST', '/api/v1/channels/{id}/messages/{message_id}/reactions/add', CHANNEL),
  read('POST', '/api/v1/channels/{id}/messages/{message_id}/reactions/remove', CHANNEL),
  write('POST', '/api/v1/channels/{id}/messages/{message_id}/pin', CHANNEL),
  // only its author edits or deletes a message (`message.user_id != user.id`, admins aside)
  ownerOnly('POST', '/api/v1/channels/{id}/messages/{message_id}/update', CHANNEL_MESSAGE, MESSAGE_BODY),
  ownerOnly('DELETE', '/api/v1/channels/{id}/messages/{message_id}/delete', CHANNEL_MESSAGE),
  own('GET', '/api/v1/channels/webhooks/{webhook_id}/profile/image'),
  ownerOnly('GET', '/api/v1/channels/{id}/webhooks', CHANNEL),
  ownerOnly('POST', '/api/v1/channels/{id}/webhooks/create', CHANNEL),
  ownerOnly('POST', '/api/v1/channels/{id}/webhooks/{webhook_id}/update', CHANNEL),
  ownerOnly('DELETE', '/api/v1/channels/{id}/webhooks/{webhook_id}/delete', CHANNEL),
  own('POST', '/api/v1/channels/webhooks/{webhook_id}/{token}'),

  // ---- routers/chats.py (/api/v1/chats): policies/chat-scoping.ts
  own('GET', '/api/v1/chats/list'),
  own('GET', '/api/v1/chats/'),
  own('POST', '/api/v1/chats/read'),
  own('GET', '/api/v1/chats/stats/usage'),
  own('GET', '/api/v1/chats/stats/export'),
  chat('GET', '/api/v1/chats/stats/export/{chat_id}'),
  own('DELETE', '/api/v1/chats/'),
  chat('GET', '/api/v1/chats/list/user/{user_id}'),
  own('POST', '/api/v1/chats/new'),
  own('POST', '/api/v1/chats/import'),
  cfg('GET', '/api/v1/chats/config'),
  refused(
    'POST',
    '/api/v1/chats/config',
    'the context compaction model and its prompt receive every user\u2019s chats, and its summary is written into them (set it in the deployment instead)',
  ),
  own('GET', '/api/v1/chats/search'),
  own('GET', '/api/v1/chats/folder/{folder_id}'),
  own('GET', '/api/v1/chats/folder/{folder_id}/list'),
  own('GET', '/api/v1/chats/pinned'),
  own('GET', '/api/v1/chats/all'),
  own('GET', '/api/v1/chats/all/archived'),
  own('GET', '/api/v1/chats/all/tags'),
  row('GET', '/api/v1/chats/all/db', 'export'),
  own('GET', '/api/v1/chats/archived'),
  own('GET', '/api/v1/chats/archived/count'),
  own('POST', '/api/v1/chats/archive/all'),
  own('POST', '/api/v1/chats/unarchive/all'),
  own('DELETE', '/api/v1/chats/share/all'),
  own('GET', '/api/v1/chats/shared'),
  chat('GET', '/api/v1/chats/share/{share_id}'),
  own('POST', '/api/v1/chats/tags'),
  ...[
    'POST /{id}/compact',
    'GET /{id}',
    'POST /{id}',
    'PATCH /{id}/params',
    'POST /{id}/messages/{message_id}',
    'DELETE /{id}/messages/{message_id}',
    'POST /{id}/messages/{message_id}/event',
    'DELETE /{id}',
    'GET /{id}/pinned',
    'POST /{id}/pin',
    'POST /{id}/fork',
    'POST /{id}/clone',
    'POST /{id}/clone/shared',
    'POST /{id}/archive',
    'POST /{id}/share',
    'DELETE /{id}/share',
    'POST /shared/{id}/access/update',
    'GET /shared/{id}/access',
    'POST /{id}/unread',
    'POST /{id}/folder',
    'GET /{id}/tags',
    'POST /{id}/tags',
    'DELETE /{id}/tags',
  ].map((r) =>
    r === 'POST /{id}/compact'
      ? row('POST', '/api/v1/chats/{id}/compact', 'chat', {
          hiddenModel: 'the model that summarises comes in the body of a chat row, which the gateway does not read',
        })
      : chat(r.split(' ')[0]!, `/api/v1/chats${r.split(' ')[1]!}`),
  ),

  // ---- routers/notes.py (/api/v1/notes)
  // the caller's own and shared notes whatever the role (get_notes_by_user_id); pins are the caller's
  own('GET', '/api/v1/notes/'),
  own('GET', '/api/v1/notes/pinned'),
  paged('/api/v1/notes/search', 60),
  own('POST', '/api/v1/notes/create'),
  read('GET', '/api/v1/notes/{id}', NOTE),
  read('GET', '/api/v1/notes/{id}/chat', NOTE),
  read('GET', '/api/v1/notes/{id}/chats', NOTE),
  write('POST', '/api/v1/notes/{id}/chat', NOTE),
  write('POST', '/api/v1/notes/{id}/update', NOTE),
  write('POST', '/api/v1/notes/{id}/access/update', NOTE),
  read('POST', '/api/v1/notes/{id}/pin', NOTE),
  write('DELETE', '/api/v1/notes/{id}/delete', NOTE),

  // ---- routers/search.py: chats, notes, knowledge... of the caller, but admins see across users
  refused('GET', '/api/v1/search', 'searches across users\u2019 content for admins; items carry no owner to filter by'),

  // ---- routers/models.py (/api/v1/models): A3 to A5
  paged('/api/v1/models/list'),
  list('GET', '/api/v1/models/all'),
  cfg('GET', '/api/v1/models/base/tags'),
  cfg('GET', '/api/v1/models/base'),
  // every workspace model's tags while Open WebUI's own bypass is on (get_all_tags)
  row('GET', '/api/v1/models/tags', 'own', { tags: 'models' }),
  ownNaming('POST', '/api/v1/models/create', MODEL_BODY),
  list('GET', '/api/v1/models/export'),
  refused('POST', '/api/v1/models/import', 'overwrites models named by body, any user\u2019s'),
  refused('POST', '/api/v1/models/sync', 'overwrites every user\u2019s models'),
  read('GET', '/api/v1/models/model', MODEL),
  // the history keeps each version's params (the system prompt) that GET /models/model strips for readers: write, as for users
  write('GET', '/api/v1/models/model/history', MODEL),
  write('GET', '/api/v1/models/model/history/{history_id}', MODEL),
  write('DELETE', '/api/v1/models/model/history/{history_id}', MODEL),
  write('POST', '/api/v1/models/model/update/version', MODEL),
  read('GET', '/api/v1/models/model/profile/image', MODEL),
  write('POST', '/api/v1/models/model/toggle', MODEL),
  write('POST', '/api/v1/models/model/update', MODEL_IN_BODY, MODEL_BODY),
  write('POST', '/api/v1/models/model/access/update', MODEL_IN_BODY),
  write('POST', '/api/v1/models/model/delete', MODEL_IN_BODY),
  refused('DELETE', '/api/v1/models/delete/all', 'deletes every user\u2019s models'),

  // ---- routers/notifications.py: the caller's own targets
  own('GET', '/api/v1/notifications/events'),
  own('GET,POST', '/api/v1/notifications/targets'),
  own('PUT,DELETE', '/api/v1/notifications/targets/{target_id}'),
  own('PUT', '/api/v1/notifications/targets/{target_id}/default'),
  own('POST', '/api/v1/notifications/targets/{target_id}/test'),

  // ---- routers/knowledge.py (/api/v1/knowledge)
  paged('/api/v1/knowledge/'),
  paged('/api/v1/knowledge/search'),
  paged('/api/v1/knowledge/search/files'),
  own('POST', '/api/v1/knowledge/create'),
  cfg('POST', '/api/v1/knowledge/reindex'),
  cfg('POST', '/api/v1/knowledge/metadata/reindex'),
  cfg('GET,POST', '/api/v1/knowledge/external/connections'),
  cfg('GET,PATCH,DELETE', '/api/v1/knowledge/external/connections/{id}'),
  cfg('POST', '/api/v1/knowledge/external/connections/{id}/test'),
  cfg('POST', '/api/v1/knowledge/external/source/test'),
  cfg('POST', '/api/v1/knowledge/external/connections/{id}/retrieve-test'),
  own('POST', '/api/v1/knowledge/external/knowledge/create'),
  own('POST', '/api/v1/knowledge/external/source/create'),
  write('PATCH', '/api/v1/knowledge/external/source/{id}', KNOWLEDGE),
  read('GET', '/api/v1/knowledge/{id}', KNOWLEDGE),
  read('GET', '/api/v1/knowledge/{id}/files/pending', KNOWLEDGE),
  read('GET', '/api/v1/knowledge/{id}/files', KNOWLEDGE),
  read('GET', '/api/v1/knowledge/{id}/export', KNOWLEDGE),
  ...['update', 'access/update', 'file/update', 'file/remove', 'reset', 'sync/diff', 'sync/cleanup', 'dirs/create', 'dirs/{dir_id}/update', 'file/move'].map(
    (p) => write('POST', `/api/v1/knowledge/{id}/${p}`, KNOWLEDGE),
  ),
  // the file named must be the admin's own (files carry no grants in the table release: owner only)
  write('POST', '/api/v1/knowledge/{id}/file/add', KNOWLEDGE, [{ at: 'file_id', lookup: BODY_FILE, permission: 'read', required: true }]),
  write('POST', '/api/v1/knowledge/{id}/files/batch/add', KNOWLEDGE, [{ at: '[].file_id', lookup: BODY_FILE, permission: 'read', required: true }]),
  write('DELETE', '/api/v1/knowledge/{id}/delete', KNOWLEDGE),
  write('DELETE', '/api/v1/knowledge/{id}/dirs/{dir_id}/delete', KNOWLEDGE),

  // ---- routers/prompts.py
  list('GET', '/api/v1/prompts/'),
  // every active prompt's tags while Open WebUI's own bypass is on (get_tags)
  row('GET', '/api/v1/prompts/tags', 'own', { tags: 'prompts' }),
  paged('/api/v1/prompts/list'),
  own('POST', '/api/v1/prompts/create'),
  read('GET', '/api/v1/prompts/id/{prompt_id}', PROMPT),
  read('GET', '/api/v1/prompts/id/{prompt_id}/history', PROMPT),
  read('GET', '/api/v1/prompts/id/{prompt_id}/history/diff', PROMPT),
  read('GET', '/api/v1/prompts/id/{prompt_id}/history/{history_id}', PROMPT),
  write('DELETE', '/api/v1/prompts/id/{prompt_id}/history/{history_id}', PROMPT),
  ...['update', 'update/meta', 'update/version', 'access/update', 'toggle'].map((p) => write('POST', `/api/v1/prompts/id/{prompt_id}/${p}`, PROMPT)),
  write('DELETE', '/api/v1/prompts/id/{prompt_id}/delete', PROMPT),

  // ---- routers/tools.py: tools are Python run inside Open WebUI
  list('GET', '/api/v1/tools/'),
  list('GET', '/api/v1/tools/list'),
  list('GET', '/api/v1/tools/export'),
  refused('POST', '/api/v1/tools/load/url', CODE),
  refused('POST', '/api/v1/tools/create', CODE),
  refused('POST', '/api/v1/tools/id/{id}/update', CODE),
  refused('POST', '/api/v1/tools/id/{id}/update/version', CODE),
  read('GET', '/api/v1/tools/id/{id}', TOOL),
  read('GET', '/api/v1/tools/id/{id}/specs', TOOL),
  write('POST', '/api/v1/tools/id/{id}/access/update', TOOL),
  write('DELETE', '/api/v1/tools/id/{id}/delete', TOOL),
  // the tool's valves hold its secrets (API keys); Open WebUI gives them to writers only
  write('GET', '/api/v1/tools/id/{id}/valves', TOOL),
  read('GET', '/api/v1/tools/id/{id}/valves/spec', TOOL),
  write('POST', '/api/v1/tools/id/{id}/valves/update', TOOL),
  read('GET', '/api/v1/tools/id/{id}/valves/user', TOOL),
  read('GET', '/api/v1/tools/id/{id}/valves/user/spec', TOOL),
  read('POST', '/api/v1/tools/id/{id}/valves/user/update', TOOL),
  write('GET', '/api/v1/tools/id/{id}/history', TOOL),
  write('GET', '/api/v1/tools/id/{id}/history/diff', TOOL),
  write('GET', '/api/v1/tools/id/{id}/history/{history_id}', TOOL),
  write('DELETE', '/api/v1/tools/id/{id}/history/{history_id}', TOOL),

  // ---- routers/skills.py
  list('GET', '/api/v1/skills/'),
  paged('/api/v1/skills/list'),
  list('GET', '/api/v1/skills/export'),
  own('POST', '/api/v1/skills/create'),
  read('GET', '/api/v1/skills/id/{id}', SKILL),
  write('POST', '/api/v1/skills/id/{id}/update', SKILL),
  write('POST', '/api/v1/skills/id/{id}/access/update', SKILL),
  write('POST', '/api/v1/skills/id/{id}/toggle', SKILL),
  write('DELETE', '/api/v1/skills/id/{id}/delete', SKILL),
  read('GET', '/api/v1/skills/id/{id}/files', SKILL),
  read('GET', '/api/v1/skills/id/{id}/files/content', SKILL),
  read('GET', '/api/v1/skills/id/{id}/history', SKILL),
  read('GET', '/api/v1/skills/id/{id}/history/diff', SKILL),
  read('GET', '/api/v1/skills/id/{id}/history/diff/file', SKILL),
  read('GET', '/api/v1/skills/id/{id}/history/{history_id}', SKILL),
  write('DELETE', '/api/v1/skills/id/{id}/history/{history_id}', SKILL),
  write('POST', '/api/v1/skills/id/{id}/update/version', SKILL),
  read('POST', '/api/v1/skills/id/{id}/clone', SKILL),
  own('POST', '/api/v1/skills/load/url'),
  own('POST', '/api/v1/skills/import/preview'),
  // multipart: a decision `replace` names the skill it writes over, any user's while Open WebUI's own
  // BYPASS_ADMIN_ACCESS_CONTROL is on (authorized_skill); the gateway reads JSON bodies only
  refused('POST', '/api/v1/skills/import', 'its multipart decisions may replace any user\u2019s skill by id (skills are made with /skills/create)'),

  // ---- routers/memories.py: the caller's own memories only
  own('GET', '/api/v1/memories/'),
  ...['add', 'update', 'query', 'search', 'paths', 'path', 'reindex', 'reset', '{memory_id}/update'].map((p) => own('POST', `/api/v1/memories/${p}`)),
  own('DELETE', '/api/v1/memories/delete/user'),
  own('DELETE', '/api/v1/memories/{memory_id}'),

  // ---- routers/folders.py
  own('GET', '/api/v1/folders/'),
  ownNaming('POST', '/api/v1/folders/', [{ at: 'parent_id', lookup: BODY_FOLDER, permission: 'write' }, ...FOLDER_BODY]),
  list('GET', '/api/v1/folders/shared'),
  read('GET', '/api/v1/folders/{id}', FOLDER),
  ofChats(read('GET', '/api/v1/folders/{id}/shared/chats', FOLDER)),
  write('POST', '/api/v1/folders/{id}/update', FOLDER, FOLDER_BODY),
  write('POST', '/api/v1/folders/{id}/update/parent', FOLDER, [{ at: 'parent_id', lookup: BODY_FOLDER, permission: 'write' }]),
  write('POST', '/api/v1/folders/{id}/update/expanded', FOLDER),
  // who else reads a folder is its owner's say: a write grant edits what is in it (folders.py update_folder_access_by_id)
  ofChats(ownerOnly('POST', '/api/v1/folders/{id}/access/update', FOLDER)),
  read('POST', '/api/v1/folders/{id}/read', FOLDER),
  // only the owner deletes a folder, and with it their chats in it (folders.py delete_folder_by_id)
  ofChats(ownerOnly('DELETE', '/api/v1/folders/{id}', FOLDER)),

  // ---- routers/groups.py: membership comes from the realm
  cfg('GET', '/api/v1/groups/'),
  // a parent group: the new group's members (the admin, once the realm's groups header names it) inherit the parent's shares
  row('POST', '/api/v1/groups/create', 'admin-config', { body: [{ at: 'parent_group_id', permission: 'write', never: GROUPS }] }),
  cfg('GET', '/api/v1/groups/id/{id}'),
  cfg('GET', '/api/v1/groups/id/{id}/info'),
  cfg('GET', '/api/v1/groups/id/{id}/export'),
  cfg('POST', '/api/v1/groups/id/{id}/users'),
  refused('POST', '/api/v1/groups/id/{id}/update', GROUPS),
  refused('POST', '/api/v1/groups/id/{id}/users/add', GROUPS),
  refused('POST', '/api/v1/groups/id/{id}/users/remove', GROUPS),
  refused('DELETE', '/api/v1/groups/id/{id}/delete', GROUPS),
  // the names of the models, knowledge bases and tools shared with the group: other users' (as on /users/{user_id}/preview)
  row('GET', '/api/v1/groups/id/{id}/preview', 'admin-config', { emptied: ['models', 'knowledge', 'tools'] }),
  cfg('GET', '/api/v1/groups/id/{id}/members'),

  // ---- routers/files.py: the contract's rows (A1, A2, A7): `files` names the answers rebuilt of the
  // caller's own files; the per-file rows are policies/admin-scoping.ts adminFileRoute's
  row('POST', '/api/v1/files/', 'files'),
  row('GET', '/api/v1/files/', 'files', { files: 'list' }),
  row('GET', '/api/v1/files/search', 'files', { files: 'search' }),
  row('GET', '/api/v1/files/user/search', 'files', { files: 'own' }),
  row('GET', '/api/v1/files/count', 'files', { files: 'count' }),
  row('GET', '/api/v1/files/user/count', 'files', { files: 'own' }),
  ...[
    'DELETE /all',
    'GET /{id}',
    'GET /{id}/process/status',
    'GET /{id}/data/content',
    'POST /{id}/data/content/update',
    'GET /{id}/content',
    'GET /{id}/content/html',
    'GET /{id}/content/{file_name}',
    'POST /{id}/rename',
    'DELETE /{id}',
  ].map((r) => row(r.split(' ')[0]!, `/api/v1/files${r.split(' ')[1]!}`, 'files')),

  // ---- routers/functions.py: admin-only, global; functions are code
  cfg('GET', '/api/v1/functions/'),
  cfg('GET', '/api/v1/functions/list'),
  cfg('GET', '/api/v1/functions/export'),
  refused('POST', '/api/v1/functions/load/url', CODE),
  refused('POST', '/api/v1/functions/sync', CODE),
  refused('POST', '/api/v1/functions/create', CODE),
  cfg('GET', '/api/v1/functions/id/{id}'),
  cfg('POST', '/api/v1/functions/id/{id}/toggle'),
  cfg('POST', '/api/v1/functions/id/{id}/toggle/global'),
  refused('POST', '/api/v1/functions/id/{id}/update', CODE),
  cfg('DELETE', '/api/v1/functions/id/{id}/delete'),
  cfg('GET', '/api/v1/functions/id/{id}/valves'),
  cfg('GET', '/api/v1/functions/id/{id}/valves/spec'),
  cfg('POST', '/api/v1/functions/id/{id}/valves/update'),
  own('GET', '/api/v1/functions/id/{id}/valves/user'),
  own('GET', '/api/v1/functions/id/{id}/valves/user/spec'),
  own('POST', '/api/v1/functions/id/{id}/valves/user/update'),
  cfg('GET', '/api/v1/functions/id/{id}/history'),
  cfg('GET', '/api/v1/functions/id/{id}/history/diff'),
  cfg('GET', '/api/v1/functions/id/{id}/history/{history_id}'),
  cfg('DELETE', '/api/v1/functions/id/{id}/history/{history_id}'),
  refused('POST', '/api/v1/functions/id/{id}/update/version', CODE),

  // ---- routers/evaluations.py: feedback carries a snapshot of the whole rated chat; the leaderboard names
  // models by id and each one's tags
  // each model's `top_tags`: the tags of every user's ratings of it
  row('GET', '/api/v1/evaluations/leaderboard', 'admin-config', { tags: 'feedbacks', modelIds: 'entries' }),
  // every user's wins and losses of one model, by day
  row('GET', '/api/v1/evaluations/leaderboard/{model_id:path}/history', 'admin-config', { ofModel: '{model_id}' }),
  cfg('GET,POST', '/api/v1/evaluations/config'),
  row('GET', '/api/v1/evaluations/feedbacks/models', 'admin-config', { modelIds: 'ids' }),
  // every user's rating ids: the admin's own, from their own ratings
  list('GET', '/api/v1/evaluations/feedbacks/all/ids', { own: 'rating-ids' }),
  refused('DELETE', '/api/v1/evaluations/feedbacks/all', 'deletes every user\u2019s feedback'),
  // every user's ratings, each with the rated chat: read as it streams, the admin's written out
  ofChats(list('GET', '/api/v1/evaluations/feedbacks/all/export', { streamed: true })),
  own('GET', '/api/v1/evaluations/feedbacks/user'),
  own('DELETE', '/api/v1/evaluations/feedbacks'),
  // a page of every user's ratings (of `model_id` when named), `total` counting them all: the
  // admin's own, paged and counted as Open WebUI pages every user's
  row('GET', '/api/v1/evaluations/feedbacks/list', 'listing', { ofModel: '{?model_id}', own: 'ratings' }),
  own('POST', '/api/v1/evaluations/feedback'),
  // a rating's record holds its snapshot of the rated chat; the update answers with it
  ofChats(read('GET', '/api/v1/evaluations/feedback/{id}', FEEDBACK)),
  ofChats(write('POST', '/api/v1/evaluations/feedback/{id}', FEEDBACK)),
  write('DELETE', '/api/v1/evaluations/feedback/{id}', FEEDBACK),

  // ---- routers/analytics.py (when ENABLE_ADMIN_ANALYTICS): counts pass, content is refused, model ids and
  // tags are the admin's to see only where the models and chats are
  // counts per model id: every user's models named, their private ones included (policies/resource-access.ts)
  row('GET', '/api/v1/analytics/models', 'admin-config', { modelIds: 'models' }),
  cfg('GET', '/api/v1/analytics/users'),
  ofChats(refused('GET', '/api/v1/analytics/messages', 'every user\u2019s message text (ENABLE_ADMIN_ANALYTICS=false removes the routes)')),
  cfg('GET', '/api/v1/analytics/summary'),
  row('GET', '/api/v1/analytics/daily', 'admin-config', { modelIds: 'daily' }),
  row('GET', '/api/v1/analytics/tokens', 'admin-config', { modelIds: 'models' }),
  ofChats(refused('GET', '/api/v1/analytics/models/{model_id:path}/chats', 'every user\u2019s chat ids and titles for a model')),
  // `tags`: the tags of every user's chats that used the model, counted; `history`: feedback counts
  row('GET', '/api/v1/analytics/models/{model_id:path}/overview', 'admin-config', { tags: 'chats-of-model', ofModel: '{model_id}' }),

  // ---- routers/utils.py
  own('GET', '/api/v1/utils/gravatar'),
  own('POST', '/api/v1/utils/code/format'),
  own('POST', '/api/v1/utils/code/execute'),
  row('GET', '/api/v1/utils/db/download', 'export'),

  // ---- routers/terminals.py: a proxy to admin-configured terminal servers, keyed by the caller's
  // own user id (X-User-Id) whatever chat id is named
  own('GET', '/api/v1/terminals/'),
  own('DELETE,GET,HEAD,OPTIONS,PATCH,POST,PUT', '/api/v1/terminals/{server_id}/chats/{chat_id}/{path:path}'),
  own('DELETE,GET,HEAD,OPTIONS,PATCH,POST,PUT', '/api/v1/terminals/{server_id}/{path:path}'),
  own('WEBSOCKET', '/api/v1/terminals/{server_id}/api/terminals/{session_id}'),
  // ---- routers/automations.py: owner only, admins included (check_automation_access)
  own('GET', '/api/v1/automations/list'),
  ownNaming('POST', '/api/v1/automations/create', AUTOMATION_BODY),
  own('GET', '/api/v1/automations/{id}'),
  ownNaming('POST', '/api/v1/automations/{id}/update', AUTOMATION_BODY),
  own('POST', '/api/v1/automations/{id}/toggle'),
  own('POST', '/api/v1/automations/{id}/run'),
  own('DELETE', '/api/v1/automations/{id}/delete'),
  own('GET', '/api/v1/automations/{id}/runs'),
  // ---- routers/calendar.py (/api/v1/calendars): lists are the caller's own and shared; by id an
  // admin reaches any calendar (_check_calendar_access)
  own('GET', '/api/v1/calendars/'),
  own('POST', '/api/v1/calendars/create'),
  own('GET', '/api/v1/calendars/events'),
  own('GET', '/api/v1/calendars/events/search'),
  ownNaming('POST', '/api/v1/calendars/events/create', [{ at: 'calendar_id', lookup: BODY_CALENDAR, permission: 'write', required: true }]),
  read('GET', '/api/v1/calendars/events/{event_id}', CAL_EVENT),
  write('POST', '/api/v1/calendars/events/{event_id}/update', CAL_EVENT, [{ at: 'calendar_id', lookup: BODY_CALENDAR, permission: 'write' }]),
  write('DELETE', '/api/v1/calendars/events/{event_id}/delete', CAL_EVENT),
  read('POST', '/api/v1/calendars/events/{event_id}/rsvp', CAL_EVENT),
  read('GET', '/api/v1/calendars/{calendar_id}', CALENDAR),
  // 0.11.4 also takes the calendar's sharing here (`access_grants`, owner or any admin); the table release ignores the field
  write('POST', '/api/v1/calendars/{calendar_id}/update', CALENDAR, [
    { at: 'access_grants', never: 'a calendar\u2019s sharing is its owner\u2019s (/access/update)', permission: 'owner' },
  ]),
  ownerOnly('POST', '/api/v1/calendars/{calendar_id}/access/update', CALENDAR),
  ownerOnly('DELETE', '/api/v1/calendars/{calendar_id}/delete', CALENDAR),
  write('POST', '/api/v1/calendars/{calendar_id}/default', CALENDAR),

  // ---- routers/scim.py (/api/v1/scim/v2, when ENABLE_SCIM): bearer SCIM_TOKEN, provisioning
  ...['/ServiceProviderConfig', '/ResourceTypes', '/Schemas'].map((p) => cfg('GET', `/api/v1/scim/v2${p}`)),
  cfg('GET,POST', '/api/v1/scim/v2/Users'),
  cfg('GET,PUT,PATCH,DELETE', '/api/v1/scim/v2/Users/{user_id}'),
  cfg('GET,POST', '/api/v1/scim/v2/Groups'),
  cfg('GET,PUT,PATCH,DELETE', '/api/v1/scim/v2/Groups/{group_id}'),
];

/**
 * Sub-applications Open WebUI mounts (main.py): Socket.IO at /ws (its events below; the gateway
 * reads an admin's traffic, gateway/enforcement/socketio-guard.ts), static files, Pyodide and the web app.
 */
export const OPEN_WEBUI_MOUNTS: Readonly<Record<string, RouteClassName>> = { '/ws': 'own', '/static': 'own', '/pyodide': 'own', '/': 'own' };
