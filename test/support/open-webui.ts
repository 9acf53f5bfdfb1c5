// The end-to-end suite's world (test/real-open-webui/, issue 23): the embedded realm
// (sandbox/idp.ts), the REAL Open WebUI (sandbox/real-open-webui.ts, started unmodified by
// scripts/open-webui.sh), the gateway in front of it, and the one stand-in allowed, a tiny
// OpenAI-compatible model server.
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { demoIdentityProviders, type DemoAccount } from '../../sandbox/demo-realm.js';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { loadSettings, type Settings } from '../../config/settings.js';
import { type Env } from '../../config/env.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import type { Observability } from '../../gateway/observability/observability.js';
import { capturingObservability, type LogLine } from './gateway-harness.js';
import { changeableDemoAccounts, gatewayClient, SESSION_SECRET, worldEnv } from './cookie-jar.js';
import { freePort } from './raw-http.js';

export { OPEN_WEBUI_VERSION, openWebUIInstalled, startRealOpenWebUI, type AdminFlags, type RealOpenWebUI } from '../../sandbox/real-open-webui.js';
import { OPEN_WEBUI_VERSION, startRealOpenWebUI, type AdminFlags, type RealOpenWebUI } from '../../sandbox/real-open-webui.js';

/**
 * Is the real Open WebUI the suites run against (OWUI_VERSION, 0.12.4 by default) `version` or
 * later? Where the checked releases differ (policies/open-webui-releases.ts), a test shows each
 * release's own door (or that it has none) and the gateway's answer, which is the same for both.
 */
export function releaseAtLeast(version: string): boolean {
  const parts = (v: string) => v.split(/[^0-9]+/).map(Number);
  const [a, b] = [parts(OPEN_WEBUI_VERSION), parts(version)];
  for (let i = 0; i < b.length; i++) if ((a[i] ?? 0) !== b[i]) return (a[i] ?? 0) > b[i]!;
  return true;
}

// ---- the language model: the one stand-in of this suite ---------------------------------------

export interface ModelServer {
  /** e.g. http://127.0.0.1:PORT/v1, for OPENAI_API_BASE_URLS */
  baseUrl: string;
  model: string;
  /** the words a streamed answer is made of, in order */
  words: string[];
  /** every chat completion request's body */
  completions: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/** A tiny OpenAI-compatible server: GET /v1/models, POST /v1/chat/completions (SSE when `stream`), POST /v1/embeddings. */
export async function startModelServer(model = 'tiny-test-model'): Promise<ModelServer> {
  const words = ['The', ' tiny', ' model', ' streams', ' this', ' answer', ' through', ' the', ' gateway.'];
  const completions: Array<Record<string, unknown>> = [];
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && path === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model', created: 1700000000, owned_by: 'test' }] }));
    }
    if (req.method === 'POST' && path === '/v1/embeddings') {
      // deterministic 16-dimension vectors of the text's bytes: enough for Open WebUI to store and query memories
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let input: unknown = '';
        try {
          input = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input?: unknown }).input;
        } catch {
          /* empty input */
        }
        const texts = (Array.isArray(input) ? input : [input]).map(String);
        const embed = (t: string) => {
          const v = new Array<number>(16).fill(0);
          for (const [i, b] of [...Buffer.from(t)].entries()) v[i % 16]! += b;
          const norm = Math.hypot(...v) || 1;
          return v.map((x) => x / norm);
        };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'list',
            model: 'tiny-embed',
            data: texts.map((t, index) => ({ object: 'embedding', index, embedding: embed(t) })),
            usage: { prompt_tokens: 1, total_tokens: 1 },
          }),
        );
      });
      return;
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        } catch {
          /* answered anyway */
        }
        completions.push(body);
        const id = `chatcmpl-${randomBytes(6).toString('hex')}`;
        const created = Math.floor(Date.now() / 1000);
        if (!body.stream) {
          res.writeHead(200, { 'content-type': 'application/json' });
          return void res.end(
            JSON.stringify({
              id,
              object: 'chat.completion',
              created,
              model,
              choices: [{ index: 0, message: { role: 'assistant', content: words.join('') }, finish_reason: 'stop' }],
              usage: { prompt_tokens: 1, completion_tokens: words.length, total_tokens: words.length + 1 },
            }),
          );
        }
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
        const send = (delta: Record<string, unknown>, finish: string | null = null) =>
          res.write(
            `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
          );
        send({ role: 'assistant', content: '' });
        for (const w of words) {
          if (res.destroyed) return;
          send({ content: w });
          await new Promise((r) => setTimeout(r, 60));
        }
        send({}, 'stop');
        res.end('data: [DONE]\n\n');
      });
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'not found' } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    model,
    words,
    completions,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

// ---- the world: realm, real Open WebUI, gateway ------------------------------------------------

export interface RealWorld {
  idp: TestIdp;
  owui: RealOpenWebUI;
  model?: ModelServer;
  /** as `npm start` runs it: with /healthz, /readyz, /metrics and the drift check */
  gateway: Gateway;
  settings: Settings;
  /** the environment `settings` were loaded from (for another gateway in front of the same peers) */
  settingsEnv: Env;
  obs: Observability & { lines: LogLine[] };
  /** the gateway, also its PUBLIC_URL */
  url: string;
  /** the realm's accounts (copies: a test may change roles, the realm answers with the change) */
  accounts: DemoAccount[];
  close(): Promise<void>;
}

export async function startRealWorld(o: {
  flags: AdminFlags;
  model?: boolean;
  embeddings?: boolean;
  env?: Env;
  accessTokenTtl?: number;
  owuiEnv?: Record<string, string>;
}): Promise<RealWorld> {
  const accounts = changeableDemoAccounts();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const model = o.model ? await startModelServer() : undefined;
  const modelEnv: Record<string, string> = model
    ? { ENABLE_OPENAI_API: 'True', OPENAI_API_BASE_URLS: model.baseUrl, OPENAI_API_KEYS: 'sk-test-model', DEFAULT_MODELS: model.model }
    : {};
  // memories and retrieval need an embedding engine: the model server's /v1/embeddings (no model download)
  if (model && o.embeddings)
    Object.assign(modelEnv, {
      RAG_EMBEDDING_ENGINE: 'openai',
      RAG_OPENAI_API_BASE_URL: model.baseUrl,
      RAG_OPENAI_API_KEY: 'sk-test-model',
      RAG_EMBEDDING_MODEL: 'tiny-embed',
    });
  const [owui, idp] = await Promise.all([
    startRealOpenWebUI({ flags: o.flags, env: { WEBUI_AUTH_SIGNOUT_REDIRECT_URL: `${url}/auth/logout`, ...modelEnv, ...o.owuiEnv } }),
    startIdp({
      clients: [gatewayClient(url)],
      accessTokenTtl: o.accessTokenTtl ?? 300,
      accounts,
    }),
  ]);
  const providersFile = join(owui.dataDir, 'providers.json');
  writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
  const settingsEnv: Env = { ...worldEnv({ upstreamUrl: owui.url, publicUrl: url, issuer: idp.issuer, providersFile }), SESSION_SECRET, ...o.env };
  const settings = loadSettings(settingsEnv, { stageFiles: false });
  const obs = capturingObservability();
  const gateway = await createGateway(settings, { obs });
  await gateway.start(port, '127.0.0.1');
  return {
    idp,
    owui,
    model,
    gateway,
    settings,
    settingsEnv,
    obs,
    url,
    accounts,
    async close() {
      await gateway.close();
      await Promise.all([idp.close(), owui.close(), model?.close()]);
    },
  };
}

/** An answer read whole: status, text, and the text as JSON on demand. */
export interface Answer {
  status: number;
  text: string;
  json<T = unknown>(): T;
}

/** A request straight at Open WebUI (no gateway) with `token` as the bearer, a JSON body when given. */
export async function callOpenWebUI(baseUrl: string, token: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, text, json: <T>() => JSON.parse(text) as T };
}
