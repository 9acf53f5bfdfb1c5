// The REAL Open WebUI (the route table's release, or the release OWUI_VERSION names: any checked
// one, policies/open-webui-releases.ts), started unmodified on 127.0.0.1 and a free port by
// scripts/open-webui.sh (installed once into the cache outside git): for `npm run
// sandbox:open-webui` (sandbox/with-open-webui.ts) and for the end-to-end suites, which import it
// from test/support/open-webui.ts. Its own process group, ended with close() or when this process exits.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { freePort } from './ports.js';
import { TABLE_RELEASE } from '../policies/open-webui-releases.js';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';

/** The release the suites run against: OWUI_VERSION as scripts/open-webui.sh reads it, the table's own release by default. */
export const OPEN_WEBUI_VERSION = process.env.OWUI_VERSION || TABLE_RELEASE;
const SCRIPT = resolve(import.meta.dirname, '../scripts/open-webui.sh');
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
  /** its process group (the server leads it): `process.kill(-pid, signal)` reaches every process of it */
  pid: number;
  /** what it printed so far (for failure messages) */
  output(): string;
  close(): Promise<void>;
}

/** Is the venv of scripts/open-webui.sh complete (its marker file written)? */
export function openWebUIInstalled(): boolean {
  try {
    const venv = execFileSync('bash', [SCRIPT, 'path'], { encoding: 'utf8', env: { ...process.env, OWUI_VERSION: OPEN_WEBUI_VERSION } }).trim();
    return existsSync(join(venv, '..', '.installed'));
  } catch {
    return false;
  }
}

/** `scripts/open-webui.sh install`: the venv into the cache outside git, once (its output shown). */
export function installOpenWebUI(): void {
  execFileSync('bash', [SCRIPT, 'install'], { stdio: 'inherit', env: { ...process.env, OWUI_VERSION: OPEN_WEBUI_VERSION } });
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

/** The settings it is started with: the trusted-header ones docker-compose.yml gives it, the off-the-network ones, then `o.env`. */
function serveEnv(dataDir: string, o: { flags: AdminFlags; env?: Record<string, string> }): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? dataDir,
    ...(process.env.CHATGW_CACHE ? { CHATGW_CACHE: process.env.CHATGW_CACHE } : {}),
    OWUI_VERSION: OPEN_WEBUI_VERSION,
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
}

/** Resolves once it answers GET /health 200; rejects when it exits first or BOOT_TIMEOUT_MS pass. */
function untilHealthy(child: ChildProcess, url: string, gaveUp: () => boolean): Promise<void> {
  return new Promise<void>((resolveUp, reject) => {
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
      if (child.exitCode === null && !gaveUp()) setTimeout(poll, 250);
    };
    void poll();
  });
}

/**
 * Start the real Open WebUI. `env` adds to (and overrides) the settings of serveEnv. `dataDir`: a
 * DATA_DIR prepared beforehand (a seeded database, sandbox/seed-volume.ts), left in place at close;
 * without it a temporary one, removed at close.
 */
export async function startRealOpenWebUI(o: { flags: AdminFlags; env?: Record<string, string>; dataDir?: string }): Promise<RealOpenWebUI> {
  if (!openWebUIInstalled())
    throw new Error(
      `Open WebUI ${OPEN_WEBUI_VERSION} is not installed: run \`OWUI_VERSION=${OPEN_WEBUI_VERSION} bash scripts/open-webui.sh install\` (.ci/run does)`,
    );
  const port = await freePort();
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), 'owui-data-'));
  const env = serveEnv(dataDir, o);
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
  let gaveUp = false;
  try {
    await untilHealthy(child, url, () => gaveUp);
  } catch (err) {
    // Nothing is left behind a start that failed: no poll, no process (its group, or the child
    // itself when it failed before leading a group of its own), no pipe, no data folder.
    gaveUp = true;
    const text = output().slice(-6000);
    const gone = child.exitCode === null && child.signalCode === null ? new Promise<void>((r) => child.once('exit', () => r())) : Promise.resolve();
    killGroup('SIGKILL');
    child.kill('SIGKILL');
    await gone;
    forget();
    log.end();
    if (!o.dataDir) rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`${(err as Error).message}\n--- its output ---\n${text}`, { cause: err });
  }
  const bootSeconds = (Date.now() - started) / 1000;
  return {
    url,
    bootSeconds,
    dataDir,
    pid: child.pid!,
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
      if (!o.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
