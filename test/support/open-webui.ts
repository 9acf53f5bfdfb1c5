// The REAL Open WebUI for the end-to-end suite (test/real-open-webui/, issue 23): started unmodified
// by scripts/open-webui.sh (installed there first by `scripts/open-webui.sh install`, which .ci/run
// does), on 127.0.0.1 and a free port, DATA_DIR in a temporary folder; stopped with its whole
// process group. Also the suite's world: the embedded realm (sandbox/idp.ts), the real Open WebUI,
// the gateway in front of it, and the one stand-in allowed, a tiny OpenAI-compatible model server.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { demoAccounts, demoIdentityProviders, type DemoAccount } from '../../sandbox/demo-realm.js';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { loadSettings, type Env, type Settings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import type { Observability } from '../../gateway/ops/observability.js';
import { capturingObservability, type LogLine } from './gateway-harness.js';
import { CLIENT_ID, CLIENT_SECRET, SESSION_SECRET, worldEnv } from './cookie-jar.js';
import { freePort } from './raw-http.js';

export const OPEN_WEBUI_VERSION = '0.12.4';
const SCRIPT = resolve(import.meta.dirname, '../../scripts/open-webui.sh');
const BOOT_TIMEOUT_MS = Number(process.env.OPEN_WEBUI_BOOT_TIMEOUT_MS ?? 180_000);

/** The three admin flags of Open WebUI itself (config.py; all three default to true upstream). */
export interface AdminFlags {
  BYPASS_ADMIN_ACCESS_CONTROL: boolean;
  ENABLE_ADMIN_EXPORT: boolean;
  ENABLE_ADMIN_CHAT_ACCESS: boolean;
}

export interface RealOpenWebUI {
  url: string;
  /** seconds from spawn to the first 200 of /health */
  bootSeconds: number;
  dataDir: string;
  /** what it printed so far (for failure messages) */
  output(): string;
  close(): Promise<void>;
}

/** Is the venv of scripts/open-webui.sh complete (its marker file written)? */
export function openWebUIInstalled(): boolean {
  try {
    const venv = execFileSync('bash', [SCRIPT, 'path'], { encoding: 'utf8' }).trim();
    return existsSync(join(venv, '..', '.installed'));
  } catch {
    return false;
  }
}

const bool = (v: boolean) => (v ? 'True' : 'False');

/** Process groups of the Open WebUIs still running: killed when this process exits or is interrupted. */
const liveGroups = new Set<number>();
let exitHooked = false;
function killLiveGroups(): void {
  for (const pid of liveGroups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  liveGroups.clear();
}
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.once('exit', killLiveGroups);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killLiveGroups();
      process.kill(process.pid, signal); // the default action, now that this handler is gone
    });
  }
}

/**
 * Start the real Open WebUI. `env` adds to (and overrides) the settings below, which are the
 * trusted-header settings docker-compose.yml gives it plus the off-the-network ones.
 */
export async function startRealOpenWebUI(o: { flags: AdminFlags; env?: Record<string, string> }): Promise<RealOpenWebUI> {
  if (!openWebUIInstalled()) throw new Error('Open WebUI is not installed: run `bash scripts/open-webui.sh install` (.ci/run does)');
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'owui-data-'));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? dataDir,
    ...(process.env.CHATGW_CACHE ? { CHATGW_CACHE: process.env.CHATGW_CACHE } : {}),
    DATA_DIR: dataDir,
    WEBUI_SECRET_KEY: randomBytes(32).toString('hex'),
    // as docker-compose.yml
    WEBUI_AUTH_TRUSTED_EMAIL_HEADER: 'X-Forwarded-Email',
    WEBUI_AUTH_TRUSTED_NAME_HEADER: 'X-Forwarded-Name',
    WEBUI_AUTH_TRUSTED_ROLE_HEADER: 'X-Forwarded-Role',
    WEBUI_AUTH_TRUSTED_GROUPS_HEADER: 'X-Forwarded-Groups',
    ENABLE_SIGNUP: 'False',
    ENABLE_LOGIN_FORM: 'False',
    OFFLINE_MODE: 'True',
    BYPASS_ADMIN_ACCESS_CONTROL: bool(o.flags.BYPASS_ADMIN_ACCESS_CONTROL),
    ENABLE_ADMIN_EXPORT: bool(o.flags.ENABLE_ADMIN_EXPORT),
    ENABLE_ADMIN_CHAT_ACCESS: bool(o.flags.ENABLE_ADMIN_CHAT_ACCESS),
    // no language model unless the test gives one; no background tasks that would call it
    ENABLE_OPENAI_API: 'False',
    ENABLE_OLLAMA_API: 'False',
    ENABLE_TITLE_GENERATION: 'False',
    ENABLE_FOLLOW_UP_GENERATION: 'False',
    ENABLE_TAGS_GENERATION: 'False',
    ENABLE_AUTOCOMPLETE_GENERATION: 'False',
    ENABLE_PLUGINS: 'False',
    GLOBAL_LOG_LEVEL: 'WARNING',
    ...o.env,
  };
  const logFile = join(dataDir, 'open-webui.log');
  const log = createWriteStream(logFile);
  const started = Date.now();
  // Its own process group: close() (and an exiting test process) ends the whole tree.
  const child: ChildProcess = spawn('bash', [SCRIPT, 'serve', String(port)], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  const output = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, signal);
    } catch {
      /* gone */
    }
  };
  hookExit();
  if (child.pid) liveGroups.add(child.pid);
  const forget = () => {
    if (child.pid) liveGroups.delete(child.pid);
  };
  const url = `http://127.0.0.1:${port}`;
  try {
    await new Promise<void>((resolveUp, reject) => {
      const timer = setTimeout(() => reject(new Error(`Open WebUI did not answer /health within ${BOOT_TIMEOUT_MS} ms`)), BOOT_TIMEOUT_MS);
      const exited = (code: number | null) => reject(new Error(`Open WebUI exited with ${code} before it was up`));
      child.once('exit', exited);
      const poll = async () => {
        try {
          const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) });
          if (res.status === 200) {
            clearTimeout(timer);
            child.off('exit', exited);
            return resolveUp();
          }
        } catch {
          /* not yet */
        }
        if (child.exitCode === null) setTimeout(poll, 250);
      };
      void poll();
    });
  } catch (err) {
    killGroup('SIGKILL');
    forget();
    throw new Error(`${(err as Error).message}\n--- its output ---\n${output().slice(-6000)}`, { cause: err });
  }
  const bootSeconds = (Date.now() - started) / 1000;
  return {
    url,
    bootSeconds,
    dataDir,
    output,
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise<void>((r) => child.once('exit', () => r()));
        killGroup('SIGTERM');
        const timer = setTimeout(() => killGroup('SIGKILL'), 10_000);
        await gone;
        clearTimeout(timer);
      }
      // uvicorn may leave children (none expected with one worker): the group goes in any case.
      killGroup('SIGKILL');
      forget();
      log.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
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
  const accounts = demoAccounts.map((a) => ({ ...a, roles: [...a.roles], groups: [...a.groups], tenants: [...a.tenants] }));
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
      clients: [
        {
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          redirect_uris: [`${url}/auth/callback`],
          post_logout_redirect_uris: [`${url}/auth/login`, `${url}/de/auth/login`],
          backchannel_logout_uri: `${url}/auth/backchannel-logout`,
        },
      ],
      accessTokenTtl: o.accessTokenTtl ?? 300,
      accounts,
    }),
  ]);
  const providersFile = join(owui.dataDir, 'providers.json');
  writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
  const settings = loadSettings(
    { ...worldEnv({ upstreamUrl: owui.url, publicUrl: url, issuer: idp.issuer, providersFile }), SESSION_SECRET, ...o.env },
    { stageFiles: false },
  );
  const obs = capturingObservability();
  const gateway = await createGateway(settings, { obs });
  await gateway.start(port, '127.0.0.1');
  return {
    idp,
    owui,
    model,
    gateway,
    settings,
    obs,
    url,
    accounts,
    async close() {
      await gateway.close();
      await Promise.all([idp.close(), owui.close(), model?.close()]);
    },
  };
}
