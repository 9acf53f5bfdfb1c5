// Usage answers as routers/analytics.py gives them (admin only, ENABLE_ADMIN_ANALYTICS): counts per
// model over every user's chats, and a model's overview. The message texts route is the
// workspace's (workspace-models.ts).
import { authenticate } from './auth.js';
import { intParam, sendJson } from './context.js';
import { unprocessable, type ValidationIssue } from './http.js';
import type { Router } from './router.js';
import type { StandInState } from './state.js';
import type { StandInChat } from './types.js';

// routers/analytics.py counts per model over every user's messages (the chat_message rows: a
// message's model_id, else its model); tokens and days are not kept by the stand-in (zero, today)
function modelMessages(chats: Map<string, StandInChat>): Array<{ model: string; chat: string; user: string }> {
  const out: Array<{ model: string; chat: string; user: string }> = [];
  for (const c of chats.values()) {
    const body = (c.chat ?? {}) as { history?: { messages?: Record<string, Record<string, unknown>> }; messages?: Array<Record<string, unknown>> };
    for (const m of [...Object.values(body.history?.messages ?? {}), ...(body.messages ?? [])]) {
      const model = m.model_id || m.model;
      if (typeof model === 'string' && model) out.push({ model, chat: c.id, user: c.user_id });
    }
  }
  return out;
}

/** Messages, users and chats per model, the most used model first. */
function perModel(chats: Map<string, StandInChat>): Array<[string, { count: number; users: Set<string>; chats: Set<string> }]> {
  const counts = new Map<string, { count: number; users: Set<string>; chats: Set<string> }>();
  for (const m of modelMessages(chats)) {
    const e = counts.get(m.model) ?? { count: 0, users: new Set<string>(), chats: new Set<string>() };
    e.count++;
    e.users.add(m.user);
    e.chats.add(m.chat);
    counts.set(m.model, e);
  }
  return [...counts.entries()].sort((a, b) => b[1].count - a[1].count);
}

export function registerAnalyticsRoutes(router: Router, state: StandInState): void {
  const { route } = router;
  const { chats } = state;

  route('GET', '/api/v1/analytics/models', async (ctx) => {
    await authenticate(state, ctx, 'admin');
    sendJson(ctx, 200, {
      models: perModel(chats).map(([model_id, e]) => ({ model_id, count: e.count, unique_users: e.users.size, unique_chats: e.chats.size })),
    });
  });
  route('GET', '/api/v1/analytics/tokens', async (ctx) => {
    await authenticate(state, ctx, 'admin');
    const models = perModel(chats).map(([model_id, e]) => ({ model_id, input_tokens: 0, output_tokens: 0, total_tokens: 0, message_count: e.count }));
    sendJson(ctx, 200, { models, total_input_tokens: 0, total_output_tokens: 0, total_tokens: 0 });
  });
  route('GET', '/api/v1/analytics/daily', async (ctx) => {
    await authenticate(state, ctx, 'admin');
    const models = Object.fromEntries(perModel(chats).map(([id, e]) => [id, e.count]));
    sendJson(ctx, 200, { data: [{ date: new Date().toISOString().slice(0, 10), models }] });
  });

  // routers/analytics.py get_model_overview (admin only): feedback counts per day (none here) and the
  // top 10 tags of every user's chats that used the model (a message's model_id, else its model)
  route('GET', '/api/v1/analytics/models/*/overview', async (ctx, [rawId]) => {
    await authenticate(state, ctx, 'admin');
    const modelId = decodeURIComponent(rawId ?? '');
    const issues: ValidationIssue[] = [];
    const days = intParam(ctx, 'days', 30, issues);
    if (issues.length) throw unprocessable(issues);
    const history: Array<{ date: string; won: number; lost: number }> = [];
    for (let d = days; days > 0 && d >= 0; d--) history.push({ date: new Date(Date.now() - d * 86_400_000).toISOString().slice(0, 10), won: 0, lost: 0 });
    const counts = new Map<string, number>();
    for (const c of chats.values()) {
      const body = (c.chat ?? {}) as { history?: { messages?: Record<string, Record<string, unknown>> }; messages?: Array<Record<string, unknown>> };
      const messages = [...Object.values(body.history?.messages ?? {}), ...(body.messages ?? [])];
      if (!messages.some((m) => (m.model_id || m.model) === modelId)) continue;
      for (const t of ((c.meta as { tags?: unknown[] }).tags ?? []) as string[]) counts.set(t, (counts.get(t) ?? 0) + 1);
    }
    const tags = [...counts.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 10)
      .map(([tag, count]) => ({ tag, count }));
    sendJson(ctx, 200, { history, tags });
  });
}
