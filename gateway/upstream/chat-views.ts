// Who owns a chat, as the upstream tells the caller (policies/chat-scoping.ts decides what that
// allows). The lookups are read-only GETs sent with the caller's own forwarded credentials, so
// they show nothing the caller could not ask for; their answers never reach the client. An answer
// that cannot be read fails closed: the request is refused, never forwarded on a guess.
import { chatAccessAllowed, parseChatRecord, sharedByShareId, sharesFollowGrants, type ChatAccess, type ChatRecord } from '../../policies/chat-scoping.js';
import { TtlCache } from '../cache/cache.js';
import type { Upstream } from './proxy.js';
import { callJson, ChatAnswer, UpstreamJsonError } from './json.js';

/** A chat's owner does not change: an allowed answer is reused this long for the same caller. */
const ALLOWED_TTL_MS = 60_000;
const MAX_ENTRIES = 20_000;

type Headers = Record<string, string | string[] | undefined>;

export class ChatViews {
  private readonly allowed = new TtlCache<string, true>(MAX_ENTRIES, ALLOWED_TTL_MS);

  constructor(private readonly upstream: Upstream) {}

  /**
   * May the admin `callerId` go on? Asks the upstream as the caller: `GET /api/v1/chats/{id}` for
   * an own-chat check, `GET /api/v1/chats/share/{id}` for the share routes, and for another user's
   * chat reached by its share id whether the upstream held it to its grants (sharesFollowGrants).
   * Only a yes is cached (a refused chat may become the caller's own share later). Throws
   * UpstreamError when the upstream cannot be asked (the request then gets 502/504, and is not
   * forwarded).
   */
  async mayAccess(access: ChatAccess, callerId: string, headers: Headers): Promise<boolean> {
    const id = access.need === 'own-chat' ? access.chatId : access.id;
    const key = `${callerId}\0${access.need}\0${id}`;
    if (this.allowed.get(key)) return true;
    const chat = await this.lookup(access.need === 'own-chat' ? `/api/v1/chats/${id}` : `/api/v1/chats/share/${id}`, headers);
    let ok = chatAccessAllowed(access, chat, callerId);
    if (ok && chat && sharedByShareId(access, chat, callerId)) {
      // the caller's own chat list by the admin route: its answer is read for its status only
      const probe = await this.upstream.call('GET', `/api/v1/chats/list/user/${encodeURIComponent(callerId)}`, headers);
      ok = sharesFollowGrants(probe.status);
    }
    if (ok) this.allowed.set(key, true);
    return ok;
  }

  private async lookup(path: string, headers: Headers): Promise<ChatRecord | undefined> {
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
