// The Open WebUI releases the route table was checked against, and what differs between them. Pure
// data: a row holds for every checked release, and where releases differ it is the stricter reading
// (docs/design/route-table.md, "The checked releases").

export interface CheckedRelease {
  version: string;
  /** rows of the table (`METHOD /path` as the row writes it) this release does not serve: added after it */
  absentRows: readonly string[];
  /** routes of this release registered under another template than the row that matches them: `METHOD template` -> the row's path */
  otherTemplates: Readonly<Record<string, string>>;
  /** routes of this release no row lists, refused for admins as unknown routes (fail closed), and why that is right */
  unlisted: Readonly<Record<string, string>>;
  /** Socket.IO events of the table this release does not handle */
  absentEvents: readonly string[];
  /**
   * Handlers of this release that differ from the table release's in what a row relies on (a check
   * Open WebUI makes or leaves out, a body field it reads): `METHOD /path` or a Socket.IO event ->
   * what differs and how the row holds. Every other changed handler was reviewed and its row holds
   * unchanged (its fingerprint is recorded in policies/open-webui-releases.json).
   */
  differences: Readonly<Record<string, string>>;
}

/** The release the table's rows were read from. */
export const TABLE_RELEASE = '0.12.4';

const NONE = { absentRows: [], otherTemplates: {}, unlisted: {}, absentEvents: [], differences: {} } as const;

/** Added in 0.12: history and versions of tools, skills, functions and models; apps; MFA; and more. */
const ADDED_IN_0_12: readonly string[] = [
  'WEBSOCKET /api/v1/audio/realtime',
  'GET /api/v1/auths/mfa/status',
  ...['challenge', 'enroll/start', 'enroll/confirm', 'verify', 'replace', 'recovery/codes', 'recover'].map((p) => `POST /api/v1/auths/mfa/${p}`),
  'POST /api/v1/users/{user_id}/sessions/revoke',
  'GET /api/v1/apps',
  'POST /api/v1/apps/manifest/preview',
  'POST /api/v1/apps',
  'GET /api/v1/apps/{app_id}',
  'PATCH /api/v1/apps/{app_id}',
  'DELETE /api/v1/apps/{app_id}',
  'POST /api/v1/apps/{app_id}/connect',
  'POST /api/v1/apps/{app_id}/interactions',
  'POST /api/v1/channels/{id}/members/mute',
  'POST /api/v1/channels/{id}/access/update',
  'GET /api/v1/channels/{channel_id}/apps',
  'POST /api/v1/channels/{channel_id}/apps',
  'DELETE /api/v1/channels/{channel_id}/apps/{app_id}',
  'PATCH /api/v1/chats/{id}/params',
  'POST /api/v1/configs/interface/visibility',
  'GET /api/v1/files/user/search',
  'GET /api/v1/files/user/count',
  'GET /api/v1/groups/id/{id}/members',
  'GET /api/v1/models/model/history',
  'GET /api/v1/models/model/history/{history_id}',
  'DELETE /api/v1/models/model/history/{history_id}',
  'POST /api/v1/models/model/update/version',
  'GET /api/v1/search',
  ...['tools', 'functions'].flatMap((kind) => [
    `GET /api/v1/${kind}/id/{id}/history`,
    `GET /api/v1/${kind}/id/{id}/history/diff`,
    `GET /api/v1/${kind}/id/{id}/history/{history_id}`,
    `DELETE /api/v1/${kind}/id/{id}/history/{history_id}`,
    `POST /api/v1/${kind}/id/{id}/update/version`,
  ]),
  'GET /api/v1/tools/id/{id}/specs',
  'GET /api/v1/skills/id/{id}/files',
  'GET /api/v1/skills/id/{id}/files/content',
  'GET /api/v1/skills/id/{id}/history',
  'GET /api/v1/skills/id/{id}/history/diff',
  'GET /api/v1/skills/id/{id}/history/diff/file',
  'GET /api/v1/skills/id/{id}/history/{history_id}',
  'DELETE /api/v1/skills/id/{id}/history/{history_id}',
  'POST /api/v1/skills/id/{id}/update/version',
  'POST /api/v1/skills/id/{id}/clone',
  'POST /api/v1/skills/load/url',
  'POST /api/v1/skills/import/preview',
  'POST /api/v1/skills/import',
  'POST /api/v1/calendars/{calendar_id}/access/update',
  'DELETE,GET,HEAD,OPTIONS,PATCH,POST,PUT /api/v1/terminals/{server_id}/chats/{chat_id}/{path:path}',
];

/** Added in 0.12.4: sharing of channels and calendars at /access/update, a chat's own parameters, a user's files, the visibility of controls. */
const ADDED_IN_0_12_4: readonly string[] = [
  'POST /api/v1/configs/interface/visibility',
  'POST /api/v1/channels/{id}/access/update',
  'PATCH /api/v1/chats/{id}/params',
  'GET /api/v1/files/user/search',
  'GET /api/v1/files/user/count',
  'POST /api/v1/calendars/{calendar_id}/access/update',
];

/** Served only while ENV=dev (the default outside the image), by 0.11.4 and 0.12.3. */
const DEV_EMBEDDING_ROUTE = {
  'GET /api/v1/retrieval/ef/{text}':
    'registered only while ENV=dev (the default outside the image): an anonymous debugging route that embeds the text in its own path; nobody needs it through the gateway',
} as const;

export const CHECKED_RELEASES: readonly CheckedRelease[] = [
  { version: TABLE_RELEASE, ...NONE },
  {
    version: '0.12.3',
    absentRows: ADDED_IN_0_12_4,
    otherTemplates: {},
    unlisted: DEV_EMBEDDING_ROUTE,
    absentEvents: [],
    differences: {
      'POST /api/v1/notes/{id}/update':
        'as the /update of prompts, models and skills: also takes `access_grants` (0.12.4 only at /access/update), and does not check the files a note attaches (0.12.4: has_access_to_note_files). Those rows need write, as their /access/update rows do; has_access_to_file opens a file through a note only to readers of its owner\u2019s own notes, so no file is reached.',
      'POST /api/v1/channels/{id}/update':
        'takes the channel\u2019s sharing (`access_grants`) from its owner or any admin (0.12.4 at /access/update, added in 0.12.4). The row needs the channel\u2019s owner, for both.',
      'POST /api/v1/calendars/{calendar_id}/update':
        'as 0.11.4\u2019s (the same handler): takes the calendar\u2019s sharing (`access_grants`) from its owner or any admin. The row refuses `access_grants` in the body (shown on the real 0.12.3).',
      'POST /api/v1/knowledge/{id}/update':
        'as 0.11.4\u2019s (the same handler): also takes `access_grants`. The row needs write, as its /access/update row does.',
      'POST /api/v1/chats/{id}':
        'changes only the caller\u2019s own chat (0.12.4 also lets a shared folder\u2019s owner rename a chat in it): the chat rows need the admin\u2019s own chat either way.',
      'ydoc:document:update':
        'does not check the files a note\u2019s snapshot attaches, nor seed a new document once (0.12.4: has_access_to_note_files, `initialize`), as 0.11.4: the note rules hold unchanged, and no file is reached through a note.',
    },
  },
  {
    version: '0.11.4',
    absentRows: ADDED_IN_0_12,
    otherTemplates: {
      // one segment in 0.11.4, the rest of the path in 0.12.4: the row's `{model_id:path}` matches both
      'GET /api/v1/evaluations/leaderboard/{model_id}/history': '/api/v1/evaluations/leaderboard/{model_id:path}/history',
    },
    unlisted: DEV_EMBEDDING_ROUTE,
    absentEvents: ['encryption:bind', 'encryption:join', 'encryption:leave', 'encryption:packet', 'encryption:ping', 'encryption:start', 'encryption:status'],
    differences: {
      'POST /api/v1/calendars/{calendar_id}/update':
        'takes the calendar\u2019s sharing (`access_grants`) from its owner or any admin; 0.12.4 ignores the field and shares at /access/update, owner only. The row refuses `access_grants` in the body, for both.',
      'POST /api/v1/channels/{id}/update/members/add':
        'lets an admin add anyone, themself included, to any direct message and so read it (0.12.4 refuses member changes on a DM). The row needs the channel\u2019s owner, for both.',
      'POST /api/v1/groups/create': 'has no group hierarchy: `parent_group_id` is ignored (no door). The row refuses it all the same.',
      'GET /api/v1/skills/id/{id}':
        'as /update, /access/update, /toggle and /delete: lets role admin reach any skill whatever BYPASS_ADMIN_ACCESS_CONTROL (0.12.4 only with it on). The by-id rows check owner or grant either way.',
      'POST /api/v1/chats/{id}/messages/{message_id}':
        'as the other chat routes (a message, its events and deletion, the task list and stop, a stats export, a shared chat\u2019s access, chat items in a completion\u2019s files): lets role admin reach any chat whatever ENABLE_ADMIN_CHAT_ACCESS (0.12.4 only with it on). The chat rows need the admin\u2019s own chat either way.',
      'DELETE /api/v1/chats/{id}':
        'deletes another user\u2019s chat for any admin whatever ENABLE_ADMIN_CHAT_ACCESS (0.12.4 only with it on): Open WebUI\u2019s own flag does not stop it here; what the gateway does with it is policies/chat-scoping.ts\u2019s, the same for both.',
      'POST /api/v1/knowledge/{id}/update':
        'as the /update of notes, prompts, models, skills and tools: also takes `access_grants` (0.12.4 only at /access/update). Those rows need write, as their /access/update rows do.',
      'POST /api/v1/notes/{id}/update':
        'does not check the files a note attaches (0.12.4: has_access_to_note_files), nor does ydoc:document:update; 0.11.4\u2019s has_access_to_file never opens a file through a note, so nothing is reached (as the table says of 0.12.4).',
      'POST /api/v1/retrieval/process/text':
        'as every route naming a vector collection: filter_accessible_collections also takes a name no knowledge base has with ENABLE_RETRIEVAL_UNSCOPED_COLLECTIONS. The gateway looks every other name up as a knowledge base: unknown is refused.',
      'events:chat':
        'has no chat rooms: a join does nothing (0.12.4 enters the chat\u2019s room for any chat the sender may read). The event rule drops an admin\u2019s join of another user\u2019s chat, for both.',
      'ydoc:document:join':
        'answers the document\u2019s state without the note\u2019s text (0.12.4 sends it along); the live edits follow either way. The note rules hold unchanged.',
      'ydoc:document:update':
        'keeps any bytes as an update (0.12 decodes one first): one that does not decode makes every later join of the document fail ("Failed to join document"), the owner\u2019s included. An admin\u2019s update goes on only when it decodes as Yjs, for every release (socketUpdateNeed).',
    },
  },
];

/** Is `version` one the table was checked against (exactly as Open WebUI reports it)? */
export function isCheckedRelease(version: string): boolean {
  return CHECKED_RELEASES.some((r) => r.version === version);
}

/** The checked releases, the table's first, for messages. */
export const CHECKED_VERSIONS: readonly string[] = CHECKED_RELEASES.map((r) => r.version);
