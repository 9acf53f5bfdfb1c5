// The end-to-end suite's world (test/real-open-webui/): the embedded realm (sandbox/idp.ts), the
// REAL Open WebUI (sandbox/real-open-webui.ts, started unmodified by scripts/open-webui.sh), the
// gateway in front of it, and the one stand-in allowed, the model provider: the sandbox's
// canned-answers server (sandbox/canned-model.ts).
import { writeFileSync } from 'node:fs';
import WebSocket from 'ws';
import { join } from 'node:path';
import { cannedModelConnection, startCannedModel, type CannedModel } from '../../sandbox/canned-model.js';
import { demoIdentityProviders, type DemoAccount } from '../../sandbox/demo-realm.js';
import { startIdp, type TestIdp } from '../../sandbox/idp.js';
import { loadSettings, type Settings } from '../../config/settings.js';
import { type Env } from '../../config/env.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import type { Observability } from '../../gateway/observability/observability.js';
import { capturingObservability, type LogLine } from './gateway-harness.js';
import { changeableDemoAccounts, gatewayClient, SESSION_SECRET, worldEnv, type Jar } from './cookie-jar.js';
import { freePort } from './raw-http.js';
import { TABLE_RELEASE } from '../../policies/open-webui-releases.js';

export { OPEN_WEBUI_VERSION, openWebUIInstalled, startRealOpenWebUI, type AdminFlags, type RealOpenWebUI } from '../../sandbox/real-open-webui.js';
import { OPEN_WEBUI_VERSION, openWebUIInstalled, startRealOpenWebUI, type AdminFlags, type RealOpenWebUI } from '../../sandbox/real-open-webui.js';

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

/**
 * `it` for a case whose outcome is the gateway's alone, the same behind every release (how it
 * answers an Open WebUI that hangs, say): run against the table's release (TABLE_RELEASE, the one a
 * run without OWUI_VERSION uses, and one of those `npm test` runs every suite against), pending
 * against the others, where it would only repeat the same proof at the cost of CI time.
 */
export function itOnTableRelease(title: string, fn: Mocha.Func | Mocha.AsyncFunc): void {
  if (OPEN_WEBUI_VERSION === TABLE_RELEASE) it(title, fn);
  else it.skip(`${title} (run against Open WebUI ${TABLE_RELEASE} only: the same behind every release)`, fn);
}

// ---- the model provider: the one stand-in of this suite ----------------------------------------

/** The sandbox's canned-answers server (sandbox/canned-model.ts), every completion request kept. */
export type ModelServer = CannedModel;

export function startModelServer(): Promise<ModelServer> {
  return startCannedModel({ record: true });
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
  // A release that is not installed fails here, before anything is started (nothing left open).
  if (!openWebUIInstalled())
    throw new Error(
      `Open WebUI ${OPEN_WEBUI_VERSION} is not installed: run \`npm test\` (its set-up installs every checked release) or \`OWUI_VERSION=${OPEN_WEBUI_VERSION} bash scripts/open-webui.sh install\``,
    );
  const accounts = changeableDemoAccounts();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // What started is stopped again when a later part fails: a failed start leaves no handle open.
  const started: Array<{ close(): Promise<unknown> }> = [];
  const stopStarted = () => Promise.all(started.splice(0).map((p) => p.close().catch(() => undefined)));
  try {
    return await startParts();
  } catch (err) {
    await stopStarted();
    throw err;
  }

  async function startParts(): Promise<RealWorld> {
    const model = o.model ? await startModelServer() : undefined;
    if (model) started.push(model);
    const modelEnv: Record<string, string> = model ? cannedModelConnection(model) : {};
    // memories and retrieval need an embedding engine: the model server's /v1/embeddings (no model download)
    if (model && o.embeddings)
      Object.assign(modelEnv, {
        RAG_EMBEDDING_ENGINE: 'openai',
        RAG_OPENAI_API_BASE_URL: model.baseUrl,
        RAG_OPENAI_API_KEY: 'sk-canned-answers',
        RAG_EMBEDDING_MODEL: 'canned-embeddings',
      });
    const starting = [
      startRealOpenWebUI({ flags: o.flags, env: { WEBUI_AUTH_SIGNOUT_REDIRECT_URL: `${url}/auth/logout`, ...modelEnv, ...o.owuiEnv } }),
      startIdp({
        clients: [gatewayClient(url)],
        accessTokenTtl: o.accessTokenTtl ?? 300,
        accounts,
      }),
    ] as const;
    // both started at once; whichever did start is stopped again when the other failed
    const [owuiStart, idpStart] = await Promise.allSettled(starting);
    for (const part of [owuiStart, idpStart]) if (part.status === 'fulfilled') started.push(part.value);
    if (owuiStart.status === 'rejected') throw owuiStart.reason;
    if (idpStart.status === 'rejected') throw idpStart.reason;
    const [owui, idp] = [owuiStart.value, idpStart.value];
    const providersFile = join(owui.dataDir, 'providers.json');
    writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
    const settingsEnv: Env = { ...worldEnv({ upstreamUrl: owui.url, publicUrl: url, issuer: idp.issuer, providersFile }), SESSION_SECRET, ...o.env };
    const settings = loadSettings(settingsEnv, { stageFiles: false });
    const obs = capturingObservability();
    const gateway = await createGateway(settings, { obs });
    started.push(gateway);
    await gateway.start(port, '127.0.0.1');
    started.length = 0; // the world's own close() stops them from here on
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

/** Open WebUI's Engine.IO handshake over the WebSocket transport, through the gateway at `url`: once its open packet came. */
export async function openSocketIO(url: string, jar: Jar): Promise<{ ws: WebSocket; opened: string; closed: Promise<{ code: number; reason: string }> }> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/ws/socket.io/?EIO=4&transport=websocket`, {
    headers: { cookie: jar.header('/ws/socket.io/'), origin: url },
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  const opened = await new Promise<string>((resolve, reject) => {
    ws.once('message', (d) => resolve(String(d)));
    ws.once('error', reject);
    ws.once('unexpected-response', (_q, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
  });
  return { ws, opened, closed };
}
