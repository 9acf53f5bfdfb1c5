// Who owns a chat, as the upstream tells the caller (policies/chat-scoping.ts decides what that
// allows). The lookup is a read-only GET sent with the caller's own forwarded credentials, so it
// shows nothing the caller could not ask for; its answer never reaches the client. An answer that
// cannot be read fails closed: the request is refused, never forwarded on a guess.
import { chatAccessAllowed, parseChatRecord, type ChatAccess, type ChatRecord } from '../../policies/chat-scoping.js';
import { TtlCache } from '../cache/cache.js';
import type { Upstream } from './proxy.js';
import { callJson, ChatAnswer, UpstreamJsonError } from './json.js';

/** A chat's owner does not change: an allowed answer is reused this long for the same caller. */
const ALLOWED_TTL_MS = 60_000;
const MAX_ENTRIES = 20_000;

export class ChatViews {
  private readonly allowed = new TtlCache<string, true>(MAX_ENTRIES, ALLOWED_TTL_MS);

  constructor(private readonly upstream: Upstream) {}

  /**
   * May the admin `callerId` go on? Asks the upstream as the caller: `GET /api/v1/chats/{id}` for
   * an own-chat check, `GET /api/v1/chats/share/{id}` for the share routes. Only a yes is cached
   * (a refused chat may become the caller's own share later). Throws UpstreamError when the
   * upstream cannot be asked (the request then gets 502/504, and is not forwarded).
   */
  async mayAccess(
    access: Exclude<ChatAccess, { need: 'audit-delete' }>,
    callerId: string,
    headers: Record<string, string | string[] | undefined>,
  ): Promise<boolean> {
    const id = access.need === 'own-chat' ? access.chatId : access.id;
    const key = `${callerId}\0${access.need}\0${id}`;
    if (this.allowed.get(key)) return true;
    const chat = await this.lookup(access.need === 'own-chat' ? `/api/v1/chats/${id}` : `/api/v1/chats/share/${id}`, headers);
    const ok = chatAccessAllowed(access, chat, callerId);
    if (ok) this.allowed.set(key, true);
    return ok;
  }

  /** The owner of a chat, for the audit of an admin's delete; undefined when the upstream does not say. */
  async ownerOf(chatId: string, headers: Record<string, string | string[] | undefined>): Promise<string | undefined> {
    return (await this.lookup(`/api/v1/chats/${chatId}`, headers).catch(() => undefined))?.user_id;
  }

  private async lookup(path: string, headers: Record<string, string | string[] | undefined>): Promise<ChatRecord | undefined> {
    // An answer that is not a chat record is no chat: refused, as a chat that is not there.
    const up = await callJson(this.upstream, ChatAnswer, 'GET', path, headers).catch((err: unknown) => {
      if (err instanceof UpstreamJsonError) return undefined;
      throw err;
    });
    return up?.json === undefined ? undefined : parseChatRecord(up.json);
  }

  clear(): void {
    this.allowed.clear();
  }
}
