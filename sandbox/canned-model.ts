// Canned answers: a tiny OpenAI-compatible server that plays a model provider for the real Open
// WebUI (`npm run sandbox:open-webui` and the suites of test/real-open-webui/). It is NOT a
// language model: every chat completion gets the same fixed sentence, which says so, streamed as
// server-sent events a word at a time (`stream: true`) the way a real provider streams, or whole
// when not streamed. It also answers GET /v1/models (the one model it offers) and POST
// /v1/embeddings (small vectors computed from the text's bytes, so memories can be stored without
// downloading a model). Nothing leaves this machine.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';

/** The model's id, as Open WebUI lists it: a name nobody takes for a language model. */
export const CANNED_MODEL_ID = 'canned-answers';
/** The name it is registered under in the sandbox's Open WebUI. */
export const CANNED_MODEL_NAME = 'Canned answers (not a language model)';

/** The answer to every chat completion, in the pieces it is streamed in. */
export const CANNED_WORDS: readonly string[] = [
  'This',
  ' is',
  ' a',
  ' canned',
  ' answer',
  ' from',
  ' the',
  ' sandbox,',
  ' not',
  ' a',
  ' language',
  ' model.',
  ' It',
  ' streamed',
  ' through',
  ' the',
  ' gateway',
  ' word',
  ' by',
  ' word.',
];

export interface CannedModel {
  /** e.g. http://127.0.0.1:PORT/v1, for Open WebUI's OPENAI_API_BASE_URLS */
  baseUrl: string;
  model: string;
  /** the pieces a streamed answer is made of, in order */
  words: readonly string[];
  /** every chat completion request's body, when started with `record` (tests read them) */
  completions: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/** Read a request's JSON body; an unreadable body is an empty object (answered anyway). */
function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve(parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {});
      } catch {
        resolve({});
      }
    });
    req.on('error', () => resolve({}));
  });
}

/** Deterministic 16-dimension unit vectors of the text's bytes: enough for Open WebUI to store and query memories. */
function embed(text: string): number[] {
  const v = new Array<number>(16).fill(0);
  for (const [i, b] of [...Buffer.from(text)].entries()) v[i % 16]! += b;
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
}

/**
 * Start the server on 127.0.0.1 and a free port. `delayMs` is the pause between two streamed
 * pieces (a reader sees the answer arrive); `record` keeps every completion request's body.
 */
export async function startCannedModel(o: { model?: string; delayMs?: number; record?: boolean } = {}): Promise<CannedModel> {
  const model = o.model ?? CANNED_MODEL_ID;
  const delayMs = o.delayMs ?? 60;
  const words = CANNED_WORDS;
  const completions: Array<Record<string, unknown>> = [];
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && path === '/v1/models') {
      return json(res, 200, { object: 'list', data: [{ id: model, object: 'model', created: 1700000000, owned_by: 'sandbox' }] });
    }
    if (req.method === 'POST' && path === '/v1/embeddings') {
      void readJson(req).then(({ input }) => {
        const texts = (Array.isArray(input) ? input : [input ?? '']).map(String);
        json(res, 200, {
          object: 'list',
          model: 'canned-embeddings',
          data: texts.map((t, index) => ({ object: 'embedding', index, embedding: embed(t) })),
          usage: { prompt_tokens: 1, total_tokens: 1 },
        });
      });
      return;
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      void readJson(req).then(async (body) => {
        if (o.record) completions.push(body);
        const id = `chatcmpl-${randomBytes(6).toString('hex')}`;
        const created = Math.floor(Date.now() / 1000);
        if (body.stream !== true) {
          return json(res, 200, {
            id,
            object: 'chat.completion',
            created,
            model,
            choices: [{ index: 0, message: { role: 'assistant', content: words.join('') }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1, completion_tokens: words.length, total_tokens: words.length + 1 },
          });
        }
        // Server-sent events as OpenAI's API sends them: a chunk per piece, a finish, then [DONE].
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
        const send = (delta: Record<string, unknown>, finish: string | null = null) =>
          res.write(
            `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
          );
        send({ role: 'assistant', content: '' });
        for (const w of words) {
          if (res.destroyed) return;
          send({ content: w });
          await new Promise((r) => setTimeout(r, delayMs));
        }
        if (res.destroyed) return;
        send({}, 'stop');
        res.end('data: [DONE]\n\n');
      });
      return;
    }
    json(res, 404, { error: { message: 'not found' } });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    model,
    words,
    completions,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Open WebUI's environment for a connection to `m`, as an operator sets one (its OpenAI
 * connection and the model new chats start with). The key is required by the connection's form;
 * the server reads none.
 */
export function cannedModelConnection(m: Pick<CannedModel, 'baseUrl' | 'model'>): Record<string, string> {
  return { ENABLE_OPENAI_API: 'True', OPENAI_API_BASE_URLS: m.baseUrl, OPENAI_API_KEYS: 'sk-canned-answers', DEFAULT_MODELS: m.model };
}
