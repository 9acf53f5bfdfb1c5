// Who owns a chat, as the upstream tells the caller (policies/chat-scoping.ts decides what that
// allows). The lookups are read-only GETs sent with the caller's own forwarded credentials, so
// they show nothing the caller could not ask for; their answers never reach the client. An answer
// that cannot be read fails closed: the request is refused, never forwarded on a guess.
import type { Calls } from '../upstream/calls.js';
import {
  chatAccessAllowed,
  parseChatRecord,
  shareCandidates,
  sharedByShareId,
  shareGrantsReach,
  sharesFollowGrants,
  sharesNeedGrantsRead,
  type ChatAccess,
  type ChatRecord,
} from '../../policies/chat-scoping.js';
import type { Principal } from '../../policies/resource-access.js';
import { TtlCache } from '../cache/cache.js';
import { callJson, ChatAnswer, ChatListAnswer, ShareGrantsAnswer, UpstreamJsonError } from '../upstream/json.js';

/** A chat's owner does not change: an allowed answer is reused this long for the same caller. */
const ALLOWED_TTL_MS = 60_000;
const MAX_ENTRIES = 20_000;
/** A share is taken from one chat for good: which one is kept this long. */
const SHARE_CHAT_TTL_MS = 10 * 60_000;
/** Chats of the share's owner read at most to find the one a share was taken from (one list page is 60). */
const MAX_SHARE_CANDIDATES = 60;
/**
 * A share whose chat was not found is not looked for again this long (for the same caller): a
 * client retrying would cost up to MAX_SHARE_CANDIDATES reads each time. Short: the owner's chats
 * change (a rename, newer chats deleted), and then the share's chat can be found.
 */
export const SHARE_MISS_TTL_MS = 30_000;

type Headers = Record<string, string | string[] | undefined>;
/** The caller as a principal of grants (their groups), asked of the upstream as the caller. */
export type PrincipalOf = (callerId: string, headers: Headers) => Promise<Principal>;

export class ChatViews {
  private readonly allowed = new TtlCache<string, true>(MAX_ENTRIES, ALLOWED_TTL_MS);
  private readonly shareChats: TtlCache<string, string>;
  private readonly shareMisses: TtlCache<string, true>;

  constructor(
    private readonly calls: Calls,
    private readonly principalOf: PrincipalOf,
    clock?: () => number,
  ) {
    this.shareChats = new TtlCache<string, string>(MAX_ENTRIES, SHARE_CHAT_TTL_MS, clock);
    this.shareMisses = new TtlCache<string, true>(MAX_ENTRIES, SHARE_MISS_TTL_MS, clock);
  }

  /**
   * May the admin `callerId` go on? Asks the upstream as the caller: `GET /api/v1/chats/{id}` for
   * an own-chat check, `GET /api/v1/chats/share/{id}` for the share routes; another user's chat
   * reached by its share id is then judged by its grants (shareReachesCaller). Only the caller's
   * own chat is cached (a refused chat may become the caller's own share later; a grant may be
   * taken back). Throws UpstreamError when the upstream cannot be asked (the request then gets
   * 502/504, and is not forwarded).
   */
  async mayAccess(access: ChatAccess, callerId: string, headers: Headers): Promise<boolean> {
    const id = access.need === 'own-chat' ? access.chatId : access.id;
    const key = `${callerId}\0${access.need}\0${id}`;
    if (this.allowed.get(key)) return true;
    const chat = await this.lookup(access.need === 'own-chat' ? `/api/v1/chats/${id}` : `/api/v1/chats/share/${id}`, headers);
    if (!chatAccessAllowed(access, chat, callerId)) return false;
    if (chat && sharedByShareId(access, chat, callerId)) return this.shareReachesCaller(id, chat, callerId, headers);
    this.allowed.set(key, true);
    return true;
  }

  /**
   * Another user's share, reached by its id: would Open WebUI, holding it to its grants, answer the
   * caller? The caller's own chat list by the admin route answers on exactly the upstream's
   * ENABLE_ADMIN_CHAT_ACCESS: 401 while it is false (the share's answer then came from its grants);
   * 200 while it is true (it answers any admin for any share): then the share is served when it is
   * open (Open WebUI answers it without any identity) or its grants name the caller.
   */
  private async shareReachesCaller(shareId: string, share: ChatRecord, callerId: string, headers: Headers): Promise<boolean> {
    const probe = await this.calls.call('GET', `/api/v1/chats/list/user/${encodeURIComponent(callerId)}`, headers);
    if (sharesFollowGrants(probe.status)) return true;
    if (!sharesNeedGrantsRead(probe.status)) return false;
    // No credential, no trusted header: what anyone on the web would be answered.
    const anonymous = await this.calls.call('GET', `/api/v1/chats/share/${encodeURIComponent(shareId)}`, {});
    if (anonymous.status === 200) return true;
    const chatId = share.id !== shareId ? share.id : await this.chatOfShare(shareId, share, callerId, headers);
    if (chatId === undefined) return false;
    const grants = await callJson(this.calls, ShareGrantsAnswer, 'GET', `/api/v1/chats/shared/${encodeURIComponent(chatId)}/access`, headers).catch(noAnswer);
    if (grants?.json === undefined) return false;
    return shareGrantsReach(grants.json, await this.principalOf(callerId, headers));
  }

  /**
   * The chat a share was taken from: the share's answer names its snapshot only, so the owner's
   * chats (the admin route, open while the upstream's flag is true) are read, those of the share's
   * title first, until one names the share. Undefined when none of the first MAX_SHARE_CANDIDATES does;
   * that is kept a short while for this caller (the owner's chats were read as the caller).
   */
  private async chatOfShare(shareId: string, share: ChatRecord, callerId: string, headers: Headers): Promise<string | undefined> {
    const known = this.shareChats.get(shareId);
    if (known !== undefined) return known;
    const missKey = `${callerId}\0${shareId}`;
    if (this.shareMisses.get(missKey)) return undefined;
    const owner = encodeURIComponent(share.user_id);
    const titled = share.title ? `&query=${encodeURIComponent(share.title)}` : '';
    const read = new Set<string>();
    for (const page of [`/api/v1/chats/list/user/${owner}?page=1${titled}`, `/api/v1/chats/list/user/${owner}?page=1`]) {
      const list = await callJson(this.calls, ChatListAnswer, 'GET', page, headers).catch(noAnswer);
      for (const id of shareCandidates(list?.json, share.title, MAX_SHARE_CANDIDATES)) {
        if (read.has(id) || read.size >= MAX_SHARE_CANDIDATES) continue;
        read.add(id);
        if ((await this.lookup(`/api/v1/chats/${encodeURIComponent(id)}`, headers))?.share_id === shareId) {
          this.shareChats.set(shareId, id);
          return id;
        }
      }
      if (!titled) break;
    }
    this.shareMisses.set(missKey, true);
    return undefined;
  }

  private async lookup(path: string, headers: Headers): Promise<ChatRecord | undefined> {
    // An answer that is not a chat record is no chat: refused, as a chat that is not there.
    const up = await callJson(this.calls, ChatAnswer, 'GET', path, headers).catch(noAnswer);
    return up?.json === undefined ? undefined : parseChatRecord(up.json);
  }

  clear(): void {
    this.allowed.clear();
    this.shareChats.clear();
    this.shareMisses.clear();
  }
}

/** An answer of another shape is no answer (the caller refuses); an upstream that cannot be asked still throws. */
function noAnswer(err: unknown): undefined {
  if (err instanceof UpstreamJsonError) return undefined;
  throw err;
}
