// Where the settings are read from: the process environment over the per-stage env file
// (config/dev.env, or config/prod.env when NODE_ENV=production).
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Env = Record<string, string | undefined>;

const here = dirname(fileURLToPath(import.meta.url));

/** Secrets never come from a file the gateway reads at runtime. */
export const SECRETS = ['OIDC_CLIENT_SECRET', 'SESSION_SECRET', 'IDP_ADMIN_CLIENT_SECRET'];

/**
 * Reads `KEY=value` lines; `#` comments and blank lines are skipped, quotes are removed. Not
 * util.parseEnv: on Node 20 it takes an indented comment for the next line's name (that setting is
 * lost), and on every release it cuts an unquoted value at `#`, which docker compose, reading the
 * same file, keeps (test/settings.test.ts).
 */
export function parseEnvFile(text: string): Env {
  const env: Env = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m || line.trim().startsWith('#')) continue;
    let value = m[2] ?? '';
    if (/^(['"]).*\1$/.test(value)) value = value.slice(1, -1);
    env[m[1]!] = value;
  }
  return env;
}

export function stageFile(stage: string): string {
  const name = stage === 'production' ? 'prod.env' : 'dev.env';
  // Beside this module, or, when compiled to dist/config/, in the project's config/.
  const candidates = [join(here, name), join(here, '..', '..', 'config', name)];
  return candidates.find((f) => existsSync(f)) ?? candidates[0]!;
}

/** The environment as the gateway sees it: process values over the stage file's defaults. */
export function effectiveEnv(processEnv: Env, options: { stageFiles?: boolean } = {}): Env {
  const stage = processEnv.NODE_ENV === 'production' ? 'production' : 'development';
  const file = stageFile(stage);
  const fileEnv = options.stageFiles !== false && existsSync(file) ? parseEnvFile(readFileSync(file, 'utf8')) : {};
  // Secrets never come from a file the gateway reads at runtime: the dev stage file's are public
  // (docker compose hands them over as environment, where the rule in requiredProblems applies).
  const merged: Env = {};
  for (const [k, v] of Object.entries(fileEnv)) if (!SECRETS.includes(k)) merged[k] = v;
  for (const [k, v] of Object.entries(processEnv)) if (v !== undefined) merged[k] = v;
  return merged;
}
