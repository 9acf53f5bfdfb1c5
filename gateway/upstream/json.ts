// Every JSON document the gateway reads from a peer is checked against a zod schema here, in one
// way: a body that is not JSON, or not of the schema's shape, fails closed. The schemas say what the
// gateway reads of each answer (loose objects keep the rest of a record that is passed on); the
// rules applied to what was read stay in policies/ (pure, no zod).
import type { Calls } from './calls.js';
import { z } from 'zod';
import { UpstreamError } from '../http/respond.js';
import type { UpstreamResponse } from './proxy.js';

type Headers = Record<string, string | string[] | undefined>;

/**
 * An answer that is not JSON of the expected shape: an UpstreamError of kind `bad-body`, so a 502
 * wherever the caller lets it go on; the few lookups whose unreadable answer means "no" (an owner
 * lookup, the caller's groups) catch it and say no.
 */
export class UpstreamJsonError extends UpstreamError {
  constructor(message: string) {
    super('bad-body', message);
    this.name = 'UpstreamJsonError';
  }
}

/** `text` as JSON of `schema`'s shape, or why not. */
export function parseJson<T>(schema: z.ZodType<T>, text: string): { ok: true; value: T } | { ok: false; why: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, why: 'not JSON' };
  }
  const checked = schema.safeParse(raw);
  if (checked.success) return { ok: true, value: checked.data };
  const issue = checked.error.issues[0];
  return { ok: false, why: `not of the expected shape${issue ? ` (${issue.path.join('.') || 'the document'}: ${issue.message})` : ''}` };
}

/** An answer of the chat front-end, with its JSON read when its status is 200. */
export interface JsonAnswer<T> extends UpstreamResponse {
  /** the body checked against the schema (status 200 only; undefined for any other status) */
  json: T | undefined;
}

/**
 * One call of the gateway's own (`UpstreamCalls.call`) whose 200 answer must be JSON of `schema`'s
 * shape: anything else throws UpstreamJsonError. Other statuses are the caller's to read.
 */
export async function callJson<T>(calls: Calls, schema: z.ZodType<T>, method: string, path: string, headers: Headers, body?: string): Promise<JsonAnswer<T>> {
  const up = await calls.call(method, path, headers, body);
  if (up.status !== 200) return { ...up, json: undefined };
  const read = parseJson(schema, up.body.toString('utf8'));
  if (!read.ok) throw new UpstreamJsonError(`${method} ${path.split('?')[0]} answered 200 with a body ${read.why}`);
  return { ...up, json: read.value };
}

/** The `detail` of an upstream error answer, when it has one (a non-JSON error page has none). */
export function errorDetail(body: Buffer): unknown {
  const read = parseJson(ErrorAnswer, body.toString('utf8'));
  return read.ok ? read.value.detail : undefined;
}

// ---- what the gateway reads of Open WebUI's answers (0.12.4) --------------------------------

/** POST /api/v1/auths/signin (trusted-header sign-in): the caller's token and user id. */
export const SignInAnswer = z.looseObject({ token: z.string(), id: z.string(), role: z.unknown().optional() });
/** GET /api/v1/auths/ (an API key's account). */
export const AccountAnswer = z.looseObject({ id: z.string(), role: z.unknown().optional() });
/** GET /api/v1/auths/ read for the account's email (the email rule of policies/admin-scoping.ts). */
export const AccountEmailAnswer = z.looseObject({ email: z.string() });
/** GET /api/v1/chats/{id}, /api/v1/chats/share/{id}: whose chat it is. */
export const ChatAnswer = z.looseObject({ id: z.string(), user_id: z.string(), share_id: z.string().nullish() });
/** GET /api/v1/chats/list/user/{user_id} (ChatTitleIdResponse): an owner's chats, by id. */
export const ChatListAnswer = z.array(z.looseObject({ id: z.string() }));
/** GET /api/v1/chats/shared/{id}/access: a share's grants (read by policies/chat-scoping.ts shareGrantsReach). */
export const ShareGrantsAnswer = z.array(z.looseObject({ principal_type: z.string(), principal_id: z.string(), permission: z.string() }));
/** GET /api/v1/users/groups: the caller's groups. */
export const GroupsAnswer = z.array(z.looseObject({ id: z.string() }));
/** An object a route names (model, knowledge, note, channel, ...): its owner and grants are read by policies/resource-access.ts. */
export const ObjectAnswer = z.record(z.string(), z.unknown());
/** A list answer (a bare array, `{items}`, `{data}`, `{users}`) or a record, filtered or redacted whole. */
export const ListOrRecordAnswer = z.union([z.array(z.unknown()), z.record(z.string(), z.unknown())]);
/** A file record: its id and owner (the rest is passed on). */
export const FileAnswer = z.looseObject({ id: z.string(), user_id: z.string() });
/** GET /api/v1/files/{id}: whose file it is (the audit of an admin's access). */
export const FileOwnerAnswer = z.looseObject({ user_id: z.string() });
/** GET /api/v1/files/search: an array of file records. */
export const FileArrayAnswer = z.array(FileAnswer);
/** GET /api/v1/files/: a page of file records and the total. */
export const FileListAnswer = z.looseObject({ items: FileArrayAnswer, total: z.number().int().nonnegative() });
/** GET /api/v1/files/count. */
export const FileCountAnswer = z.number().int().nonnegative();
/** GET /api/config: the feature flags the drift check compares. */
export const ConfigAnswer = z.looseObject({ features: z.record(z.string(), z.unknown()).optional() });
/** GET /api/version (main.py get_app_version, public): the release the front-end runs. */
export const VersionAnswer = z.looseObject({ version: z.string(), deployment_id: z.string().nullish() });
/** Any error answer: its `detail` is passed on. */
export const ErrorAnswer = z.looseObject({ detail: z.unknown() });
