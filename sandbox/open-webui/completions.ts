// Chat completions as a model answers them behind Open WebUI (main.py /api/chat/completions and
// the /openai, /ollama proxies): `n` tokens (5 unless asked), whole or as server-sent events with
// a gap between chunks, so tests and benchmarks can watch a stream in flight.
import { randomUUID } from 'node:crypto';
import { authenticate } from './auth.js';
import { readJsonObject, sendJson, startEventStream, type Ctx } from './context.js';
import { nowS, sleep } from './http.js';
import type { Router } from './router.js';
import type { StandInState } from './state.js';

const SSE_COMPLETION_GAP_MS = 20;

/** `streamDefault`: whether a body without `stream` streams (Ollama's API does, OpenAI's does not). */
async function completions(state: StandInState, ctx: Ctx, streamDefault: boolean): Promise<void> {
  await authenticate(state, ctx, 'verified');
  const body = await readJsonObject(ctx);
  const stream = typeof body['stream'] === 'boolean' ? body['stream'] : streamDefault;
  const n = typeof body['n'] === 'number' && Number.isInteger(body['n']) && body['n'] >= 0 ? Math.min(body['n'], 10_000) : 5;
  const model = typeof body['model'] === 'string' ? body['model'] : 'stand-in';
  const id = `chatcmpl-${randomUUID()}`;
  const created = nowS();
  if (!stream) {
    const content = Array.from({ length: n }, (_, i) => `token${i} `).join('');
    sendJson(ctx, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    });
    return;
  }
  startEventStream(ctx);
  for (let i = 0; i < n; i++) {
    if (i > 0 && !(await sleep(SSE_COMPLETION_GAP_MS, ctx.signal))) return;
    if (ctx.res.destroyed) return;
    const chunk = {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta: { content: `token${i} ` }, finish_reason: i === n - 1 ? 'stop' : null }],
    };
    ctx.res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
  if (n > 0 && !(await sleep(SSE_COMPLETION_GAP_MS, ctx.signal))) return;
  ctx.res.end('data: [DONE]\n\n');
}

export function registerCompletionRoutes(router: Router, state: StandInState): void {
  const { route } = router;

  // completions and the model proxies
  route('POST', '/api/chat/completions', (ctx) => completions(state, ctx, false));
  route('POST', '/api/v1/chat/completions', (ctx) => completions(state, ctx, false));
  route('GET', '/openai/models', async (ctx) => {
    await authenticate(state, ctx, 'verified');
    sendJson(ctx, 200, { object: 'list', data: [{ id: 'stand-in', object: 'model', owned_by: 'openai' }] });
  });
  route('GET', '/ollama/api/tags', async (ctx) => {
    await authenticate(state, ctx, 'verified');
    sendJson(ctx, 200, { models: [] });
  });
  route('POST', '/openai/*', (ctx) => completions(state, ctx, false));
  route('POST', '/ollama/*', (ctx) => completions(state, ctx, true));
}
