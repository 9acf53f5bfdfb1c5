// Tag names are what users write to file their chats and objects ("divorce", a client's name):
// content, not configuration. For an admin while CHATUI_BYPASS_ADMIN_ACCESS_CONTROL is false, an
// answer that names tags keeps only those of the admin's own chats and of the objects they may read.
// Pure functions over the upstream's JSON answers (Open WebUI 0.12.4); the gateway asks, this decides.
//
//   GET /api/v1/models/tags       tags of workspace models (models/models.py get_all_tags: every
//                                 model's while Open WebUI's own bypass is on): kept when a model
//                                 the admin may read carries it
//   GET /api/v1/prompts/tags      tags of active prompts (models/prompts.py get_tags): the same
//   GET /api/v1/analytics/models/{model_id}/overview
//                                 `tags` counts the tags of every user's chats that used the model
//                                 (routers/analytics.py get_model_overview): recounted over the
//                                 admin's own chats only; `history` (feedback counts per day) kept
//   GET /api/v1/evaluations/leaderboard
//                                 each model's `top_tags` counts the tags of every user's ratings
//                                 (routers/evaluations.py _get_top_tags): recounted over the admin's
//                                 own ratings; ratings and won/lost counts kept. Its `query` weighs
//                                 every user's ratings by how near their tags are to it: refused
import { mayReach, type Principal } from './resource-access.js';

export type TagSource = 'models' | 'prompts' | 'chats-of-model' | 'feedbacks';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** How many tags the overview answers (get_model_overview: the top 10 by count). */
export const OVERVIEW_TAGS = 10;
/** How many tags each leaderboard entry answers (_get_top_tags: the top 5 by count). */
export const LEADERBOARD_TAGS = 5;

/** `counts` as Open WebUI answers top tags: by count, most first, the first `limit`. */
function topOf(counts: Map<string, number>, limit: number): Array<{ tag: string; count: number }> {
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([tag, count]) => ({ tag, count }));
}

/** A tag entry of a model's meta as get_all_tags reads it: `{name}` or a plain value. */
function tagName(tag: unknown): string | undefined {
  const name = isObj(tag) ? tag.name : tag;
  if (typeof name === 'string') return name || undefined;
  return typeof name === 'number' || typeof name === 'boolean' ? String(name) : undefined;
}

/**
 * Tag names of the workspace models (a base model set) that `who` may read, from GET
 * /api/v1/models/all (every model record, admins only). Undefined: not a list of model records.
 */
export function modelTagNames(models: unknown, who: Principal): Set<string> | undefined {
  if (!Array.isArray(models)) return undefined;
  const names = new Set<string>();
  for (const m of models) {
    if (!isObj(m)) return undefined;
    if (typeof m.base_model_id !== 'string' || !m.base_model_id || !mayReach(m, who, 'read')) continue;
    const tags = isObj(m.meta) ? m.meta.tags : undefined;
    if (!Array.isArray(tags)) continue;
    for (const t of tags) {
      const n = tagName(t);
      if (n) names.add(n);
    }
  }
  return names;
}

/** Tag names of the active prompts `who` may read, from GET /api/v1/prompts/ (PromptModel records). Undefined: not such a list. */
export function promptTagNames(prompts: unknown, who: Principal): Set<string> | undefined {
  if (!Array.isArray(prompts)) return undefined;
  const names = new Set<string>();
  for (const p of prompts) {
    if (!isObj(p)) return undefined;
    if (p.is_active === false || !mayReach(p, who, 'read') || !Array.isArray(p.tags)) continue;
    for (const t of p.tags) if (typeof t === 'string' && t) names.add(t);
  }
  return names;
}

/** The upstream's tag list (a list of names) with only `allowed` names kept, in its order. Undefined: not a list of names. */
export function keepTags(body: unknown, allowed: ReadonlySet<string>): { tags: string[]; removed: number } | undefined {
  if (!Array.isArray(body) || !body.every((t) => typeof t === 'string')) return undefined;
  const tags = (body as string[]).filter((t) => allowed.has(t));
  return { tags, removed: body.length - tags.length };
}

/**
 * Did this chat (a ChatResponse of GET /api/v1/chats/all) use the model? As the analytics count it
 * (models/chat_messages.py: a message's `model_id`, else its `model`, in the chat's history or its
 * message list).
 */
export function chatUsedModel(chat: Obj, modelId: string): boolean {
  const body = isObj(chat.chat) ? chat.chat : {};
  const history = isObj(body.history) && isObj(body.history.messages) ? Object.values(body.history.messages) : [];
  const list = Array.isArray(body.messages) ? body.messages : [];
  return [...history, ...list].some((m) => isObj(m) && (m.model_id || m.model) === modelId);
}

/** Counts tags over the caller's own chats that used a model, one chat at a time. */
export class OwnChatTags {
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly callerId: string,
    private readonly modelId: string,
  ) {}

  /** One chat of the caller's export; a record that is not a chat, or not the caller's, is skipped (it counts nothing). */
  add(chat: unknown): void {
    if (!isObj(chat) || chat.user_id !== this.callerId || !this.callerId || !chatUsedModel(chat, this.modelId)) return;
    const tags = isObj(chat.meta) && Array.isArray(chat.meta.tags) ? chat.meta.tags : [];
    for (const t of tags) if (typeof t === 'string' && t) this.counts.set(t, (this.counts.get(t) ?? 0) + 1);
  }

  /** The top tags by count, as get_model_overview answers them. */
  top(): Array<{ tag: string; count: number }> {
    return topOf(this.counts, OVERVIEW_TAGS);
  }
}

/** Counts tags per rated model over the caller's own ratings (FeedbackResponse records of GET /api/v1/evaluations/feedbacks/user). */
export class OwnFeedbackTags {
  private readonly counts = new Map<string, Map<string, number>>();

  constructor(private readonly callerId: string) {}

  /** One rating; one that is not the caller's counts nothing. Not a record: false (the page is not what the gateway reads). */
  add(feedback: unknown): boolean {
    if (!isObj(feedback)) return false;
    if (feedback.user_id !== this.callerId || !this.callerId || !isObj(feedback.data)) return true;
    const { model_id: modelId, tags } = feedback.data;
    if (typeof modelId !== 'string' || !modelId || !Array.isArray(tags)) return true;
    const counts = this.counts.get(modelId) ?? new Map<string, number>();
    for (const t of tags) if (typeof t === 'string' && t) counts.set(t, (counts.get(t) ?? 0) + 1);
    this.counts.set(modelId, counts);
    return true;
  }

  /** A model's top tags, as _get_top_tags answers them. */
  top(modelId: string): Array<{ tag: string; count: number }> {
    return topOf(this.counts.get(modelId) ?? new Map(), LEADERBOARD_TAGS);
  }
}

/** The leaderboard with each entry's `top_tags` replaced by `top(model_id)`. Undefined: not a leaderboard. */
export function leaderboardWithTags(
  body: unknown,
  top: (modelId: string) => Array<{ tag: string; count: number }>,
): { body: Obj; removed: number } | undefined {
  if (!isObj(body) || !Array.isArray(body.entries)) return undefined;
  let removed = 0;
  const entries: Obj[] = [];
  for (const e of body.entries) {
    if (!isObj(e) || typeof e.model_id !== 'string') return undefined;
    const mine = top(e.model_id);
    const names = new Set(mine.map((t) => t.tag));
    removed += (Array.isArray(e.top_tags) ? e.top_tags : []).filter((t) => !(isObj(t) && typeof t.tag === 'string' && names.has(t.tag))).length;
    entries.push({ ...e, top_tags: mine });
  }
  return { body: { ...body, entries }, removed };
}

/** The overview with its `tags` replaced (`history` kept as answered). Undefined: not an overview. */
export function overviewWithTags(body: unknown, tags: Array<{ tag: string; count: number }>): { body: Obj; removed: number } | undefined {
  if (!isObj(body) || !Array.isArray(body.history) || !Array.isArray(body.tags)) return undefined;
  const mine = new Set(tags.map((t) => t.tag));
  const removed = body.tags.filter((t) => !(isObj(t) && typeof t.tag === 'string' && mine.has(t.tag))).length;
  return { body: { ...body, tags }, removed };
}
