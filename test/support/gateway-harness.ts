// Builds a gateway for tests: complete settings, captured logs, real sockets on 127.0.0.1.
import { spawn, type ChildProcess } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { Router } from 'express';
import { loadSettings, type Settings } from '../../config/settings.js';
import type { Authenticator, Identity } from '../../gateway/auth/identity.js';
import { type Env } from '../../config/env.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../gateway/app.js';
import { createObservability, type Observability } from '../../gateway/observability/observability.js';
import { createHttpServer } from '../../gateway/http/server.js';
import type { RequestHandler } from '../../gateway/http/server.js';
import type { WebSocketTracker } from '../../gateway/http/websockets.js';

export interface LogLine {
  level: number;
  msg?: string;
  name?: string;
  event?: string;
  [k: string]: unknown;
}

/** An observability set whose log lines (audit stream included) land in `lines`. */
export function capturingObservability(): Observability & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return Object.assign(createObservability({ level: 'info', destination }), { lines });
}

export const baseEnv = (upstreamUrl: string, extra: Env = {}): Env => ({
  UPSTREAM_URL: upstreamUrl,
  OIDC_ISSUER_URL: 'http://127.0.0.1:9/realms/platform',
  OIDC_CLIENT_ID: 'chat-gateway',
  OIDC_CLIENT_SECRET: 'gateway-secret',
  SESSION_SECRET: 'test-session-secret-0123456789abcdef',
  CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
  CHATUI_ENABLE_ADMIN_EXPORT: 'false',
  LOG_LEVEL: 'info',
  ...extra,
});

export interface RunningGateway {
  gateway: Gateway;
  url: string;
  settings: Settings;
  obs: Observability & { lines: LogLine[] };
  close(): Promise<void>;
}

export async function startGateway(env: Env, options: GatewayOptions = {}): Promise<RunningGateway> {
  const settings = loadSettings(env, { stageFiles: false });
  const obs = capturingObservability();
  const gateway = await createGateway(settings, { obs, ...options });
  const { url } = await gateway.listen(0, '127.0.0.1');
  return { gateway, url, settings, obs, close: () => gateway.close() };
}

/**
 * gateway/main.ts (or `entry`, e.g. bin/start.mjs) in a child process; resolves with its address once
 * it logs that it listens. `starting` sees the process and its output before that.
 */
export async function gatewayProcess(
  env: Record<string, string | undefined>,
  o: { entry?: string[]; starting?: (child: ChildProcess, output: () => string) => void } = {},
): Promise<{ child: ChildProcess; port: number; exited: () => number | null; output: () => string }> {
  const child = spawn(process.execPath, o.entry ?? ['--import', 'tsx', 'gateway/main.ts'], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
  o.starting?.(child, () => output);
  const port = await new Promise<number>((resolve, reject) => {
    // a gateway that did not start in time is stopped: no process outlives the test that started it
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gateway did not start:\n${output}`));
    }, 20_000);
    // a gateway that stops at its settings: all it said ('close' comes after its output), nothing left polling
    child.once('close', (code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code}:\n${output}`));
    });
    const poll = setInterval(() => {
      const line = output.split('\n').find((l) => l.includes('gateway listening'));
      const port = line ? /"url":"http:\/\/[^"]*:(\d+)"/.exec(line)?.[1] : undefined;
      if (port) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve(Number(port));
      }
    }, 50);
  });
  return { child, port, exited: () => child.exitCode, output: () => output };
}

/**
 * The gateway's HTTP server (gateway/http/server.ts) with a pipeline that only runs `handle`: what
 * the server itself does (sockets, timeouts, the listen queue), without the rest of the gateway.
 */
export function serverOnly(handle: (req: IncomingMessage, res: ServerResponse) => void): ReturnType<typeof createHttpServer> {
  const pipeline = { handle: async (req: IncomingMessage, res: ServerResponse) => handle(req, res), upgrade: async () => {} } satisfies RequestHandler;
  return createHttpServer({
    server: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, idleTimeoutMs: 60_000, shutdownGraceMs: 100, quietGcMs: 0, workers: 1 },
    obs: createObservability({ level: 'silent' }),
    pipeline,
    websockets: { closeAll() {}, destroyAll() {} } as unknown as WebSocketTracker,
    idleTimeoutMs: 60_000,
  });
}

/**
 * Everyone is who their `x-test-caller` header names (a key of `people`), as a realm bearer token
 * would say; nobody without it. For tests of what the gateway decides, not of how it signs in.
 */
export function headerAuthenticator(people: Record<string, Omit<Identity, 'via'>>): Authenticator {
  return {
    router: Router(),
    authenticate: async (req) => {
      const who = req.headers['x-test-caller'];
      const person = typeof who === 'string' ? people[who] : undefined;
      return person && { ...person, via: 'bearer' };
    },
    ready: async () => ({ ok: true, detail: 'stub identity provider' }),
    close: async () => {},
  };
}
