// A request body the gateway must read to judge the request (an admin's chat completion names its
// chat in the body). Bounded; sent on byte for byte afterwards (gateway/upstream/proxy.ts `forward`).
import type { IncomingMessage } from 'node:http';

/** Largest body read for judging: a completion carries the conversation and inline images. */
export const MAX_JUDGED_BODY_BYTES = 32 * 1024 * 1024;

export type ReadBody = { ok: true; raw: Buffer; json: unknown } | { ok: false; status: 400 | 413; detail: string };

export type RawBody = { ok: true; raw: Buffer } | { ok: false; status: 413; detail: string };

/** The body's bytes, bounded. */
export async function readRawBody(req: IncomingMessage, limit = MAX_JUDGED_BODY_BYTES): Promise<RawBody> {
  const read = await readBody(req, limit, false);
  return read.ok ? { ok: true, raw: read.raw } : { ok: false, status: 413, detail: read.detail };
}

export function readJsonBody(req: IncomingMessage, limit = MAX_JUDGED_BODY_BYTES): Promise<ReadBody> {
  return readBody(req, limit, true);
}

function readBody(req: IncomingMessage, limit: number, parse: boolean): Promise<ReadBody> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      return resolve({ ok: false, status: 413, detail: 'Request body too large to check' });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        done = true;
        return resolve({ ok: false, status: 413, detail: 'Request body too large to check' });
      }
      chunks.push(chunk);
    });
    req.on('error', (err) => {
      if (!done) reject(err);
      done = true;
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      const raw = Buffer.concat(chunks);
      if (!parse) return resolve({ ok: true, raw, json: undefined });
      try {
        resolve({ ok: true, raw, json: raw.length === 0 ? undefined : JSON.parse(raw.toString('utf8')) });
      } catch {
        // What the gateway cannot read, it does not send on for an admin to a chat route.
        resolve({ ok: false, status: 400, detail: 'Bad request: the body is not JSON' });
      }
    });
  });
}

/** Prefixes of chat ids Open WebUI does not store (utils/chat_id.py). */
const TEMPORARY_PREFIXES = ['temporary:', 'local:'];
const CHANNEL_PREFIX = 'channel:';

export type NamedChat = { kind: 'none' } | { kind: 'chat'; id: string } | { kind: 'channel'; id: string } | { kind: 'unreadable' };

/** Ids as Open WebUI makes them (UUIDs); anything else could steer the gateway's own lookup elsewhere. */
const ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * The chat a completion body names (`chat_id`, main.py `chat_completion`, `chat_completed`,
 * `chat_action`): none or a temporary chat, a saved chat, or a channel's chat (`channel:<id>`).
 * A `chat_id` the gateway cannot check (not a string, not an id) is `unreadable`: a refusal.
 */
export function chatNamedInBody(body: unknown): NamedChat {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return { kind: 'none' };
  const id = (body as { chat_id?: unknown }).chat_id;
  if (id === undefined || id === null || id === '') return { kind: 'none' };
  if (typeof id !== 'string') return { kind: 'unreadable' };
  if (TEMPORARY_PREFIXES.some((p) => id.startsWith(p))) return { kind: 'none' };
  const [kind, bare] = id.startsWith(CHANNEL_PREFIX) ? (['channel', id.slice(CHANNEL_PREFIX.length)] as const) : (['chat', id] as const);
  return ID.test(bare) ? { kind, id: bare } : { kind: 'unreadable' };
}
