// The live settings (the policy): the switches an operator may change while the gateway runs, from
// the environment and POLICY_FILE, validated by the fields of the one schema. The environment wins, as
// in Pomerium (docs/design/live-policy.md). Pure: text in, policy or problems out.
import { createHash } from 'node:crypto';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { UPSTREAM_RELEASE_POLICIES, type UpstreamReleasePolicy } from '../policies/upstream-release.js';
import type { Env } from './env.js';
import { tenantAliasProblems } from './tenant-aliases.js';

/** `true`/`false`, exactly: the two policy switches must never be guessed from `1` or `TRUE`. */
const strictSwitch = z
  .enum(['true', 'false'], {
    error: (issue) => `must be exactly 'true' or 'false' (got ${issue.input === undefined ? 'nothing' : JSON.stringify(issue.input)})`,
  })
  .transform((v) => v === 'true');

/** Lenient booleans for the other switches, as the contract says. */
export const flag = (fallback: boolean) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return fallback;
      const s = v.trim().toLowerCase();
      if (['true', '1', 'yes'].includes(s)) return true;
      if (['false', '0', 'no'].includes(s)) return false;
      ctx.addIssue({ code: 'custom', message: `must be one of true/false/1/0/yes/no (got ${JSON.stringify(v)})` });
      return z.NEVER;
    });

const tenantAliases = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const { map, problems } = tenantAliasProblems(v);
    for (const message of problems) ctx.addIssue({ code: 'custom', message });
    return problems.length ? z.NEVER : map;
  });

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The live settings' fields of the one schema: the environment and POLICY_FILE are read by these. */
export const POLICY_FIELDS = {
  CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: strictSwitch,
  CHATUI_ENABLE_ADMIN_EXPORT: strictSwitch,
  /** what to do behind an Open WebUI release the route table was not checked against (policies/upstream-release.ts) */
  UPSTREAM_RELEASE_POLICY: z
    .enum(UPSTREAM_RELEASE_POLICIES, {
      error: (issue) => `must be one of ${UPSTREAM_RELEASE_POLICIES.join(', ')} (got ${JSON.stringify(issue.input)})`,
    })
    .default('warn'),
  IDP_LOGIN_WELCOME_PAGE: flag(false),
  SHOW_IDP_LOGIN: flag(false),
  IDP_TENANT_IDP_ALIASES: tenantAliases,
  LOG_LEVEL: z.enum(LOG_LEVELS, { error: (issue) => `must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(issue.input)})` }).default('info'),
};
const policySchema = z.object(POLICY_FIELDS);

/** The names of the live settings, as the environment and POLICY_FILE spell them. */
export const LIVE_VARIABLES: readonly string[] = Object.keys(POLICY_FIELDS);

/** The live settings' values: one immutable policy. */
export interface Policy {
  /** CHATUI_BYPASS_ADMIN_ACCESS_CONTROL */
  readonly bypassAdminAccessControl: boolean;
  /** CHATUI_ENABLE_ADMIN_EXPORT */
  readonly enableAdminExport: boolean;
  /** UPSTREAM_RELEASE_POLICY */
  readonly upstreamRelease: UpstreamReleasePolicy;
  /** IDP_LOGIN_WELCOME_PAGE */
  readonly welcomePage: boolean;
  /** SHOW_IDP_LOGIN */
  readonly showIdpLogin: boolean;
  /** IDP_TENANT_IDP_ALIASES */
  readonly tenantAliases: ReadonlyMap<string, string>;
  /** LOG_LEVEL */
  readonly logLevel: LogLevel;
}

/** Where an applied policy came from: the start (environment, with the file when set), the file changing, SIGHUP. */
export type PolicySource = 'environment' | 'file' | 'signal';

/** The policy in force, as every part reads it: taken once at a request's start (or a WebSocket's open). */
export interface PolicySnapshot extends Policy {
  /** a hash of the applied values: instances that show the same version judge alike */
  readonly version: string;
  /** when this instance applied it (ms since the epoch) */
  readonly appliedAt: number;
  readonly source: PolicySource;
}

/** What the policy is read from, besides the file's text. */
export interface PolicySources {
  /** POLICY_FILE */
  file?: string;
  /** POLICY_FILE_CHECK_MS: the longest a change of the file goes unseen when no file event comes */
  checkMs: number;
  /** the live variables the process environment sets: they win over the file */
  environment: Readonly<Env>;
  /** the live variables of the stage file: the file wins over them */
  defaults: Readonly<Env>;
}

export type PolicyRead = { ok: true; policy: Policy; warnings: string[] } | { ok: false; problems: string[] };

/** The live variables of `env` that are set. */
export function liveVariablesOf(env: Env): Env {
  const out: Env = {};
  for (const key of LIVE_VARIABLES) if (env[key] !== undefined) out[key] = env[key];
  return out;
}

/** The file's text as name -> value, or why it is refused (line and column from the YAML parser). */
function fileValues(text: string, where: string): { ok: true; values: Record<string, unknown> } | { ok: false; problem: string } {
  // failsafe: every scalar stays the text written, so `TRUE` or `1` is judged as the environment's would be
  const doc = parseDocument(text, { schema: 'failsafe', uniqueKeys: true });
  const error = doc.errors[0];
  // the message's first line ends with the line and column; the excerpt after it could hold a secret
  if (error) return { ok: false, problem: `${where}: not YAML or JSON: ${error.message.split('\n')[0]!.replace(/:$/, '')}` };
  const values: unknown = doc.toJS();
  // An empty file is refused: a file cut short while it is written must not turn every switch to its default.
  if (values === null || values === undefined) return { ok: false, problem: `${where}: holds no setting (write {} for a file that sets none)` };
  if (typeof values !== 'object' || Array.isArray(values)) return { ok: false, problem: `${where}: must be a mapping of setting names to values` };
  return { ok: true, values: values as Record<string, unknown> };
}

/**
 * The policy from the environment and, when there is a file, its text. `known`: every variable the
 * gateway reads (a known one that is not live needs a restart). Problems name the variable, and the
 * file when the value came from it; the caller keeps the policy in force on any problem.
 */
export function readPolicy(sources: PolicySources, text: string | undefined, known: readonly string[]): PolicyRead {
  const where = `POLICY_FILE ${sources.file ?? ''}`.trim();
  const problems: string[] = [];
  const warnings: string[] = [];
  const fromFile: Env = {};
  if (text !== undefined) {
    const read = fileValues(text, where);
    if (!read.ok) return { ok: false, problems: [read.problem] };
    for (const [key, value] of Object.entries(read.values)) {
      if (!known.includes(key)) {
        problems.push(`${key} (${where}): not a setting of the gateway; the file holds the live settings ${LIVE_VARIABLES.join(', ')}`);
      } else if (!LIVE_VARIABLES.includes(key)) {
        // never echoed: it may be a secret
        warnings.push(
          `${key} (${where}): read at start only, from the environment; the file's value is ignored (a restart with it in the environment applies it)`,
        );
      } else if (typeof value !== 'string') {
        problems.push(`${key} (${where}): must be one value, not a ${Array.isArray(value) ? 'list' : 'mapping'}`);
      } else if (sources.environment[key] !== undefined) {
        warnings.push(
          `${key} (${where}): set in the environment too, which wins; the file's value is ignored (unset ${key} in the environment to manage it from the file)`,
        );
      } else {
        fromFile[key] = value;
      }
    }
  }
  const result = policySchema.safeParse({ ...sources.defaults, ...fromFile, ...sources.environment });
  if (!result.success) {
    for (const issue of result.error.issues) {
      const key = String(issue.path[0] ?? '(policy)');
      problems.push(`${key}${key in fromFile ? ` (${where})` : ''}: ${issue.message}`);
    }
  }
  if (problems.length || !result.success) return { ok: false, problems: [...new Set(problems)].sort() };
  const e = result.data;
  const policy: Policy = {
    bypassAdminAccessControl: e.CHATUI_BYPASS_ADMIN_ACCESS_CONTROL,
    enableAdminExport: e.CHATUI_ENABLE_ADMIN_EXPORT,
    upstreamRelease: e.UPSTREAM_RELEASE_POLICY,
    welcomePage: e.IDP_LOGIN_WELCOME_PAGE,
    showIdpLogin: e.SHOW_IDP_LOGIN,
    tenantAliases: e.IDP_TENANT_IDP_ALIASES,
    logLevel: e.LOG_LEVEL,
  };
  return { ok: true, policy, warnings };
}

/** The policy as its variables spell it (the audit's old and new values, the version's input). */
export function policyVariables(p: Policy): Record<string, string> {
  return {
    CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: String(p.bypassAdminAccessControl),
    CHATUI_ENABLE_ADMIN_EXPORT: String(p.enableAdminExport),
    UPSTREAM_RELEASE_POLICY: p.upstreamRelease,
    IDP_LOGIN_WELCOME_PAGE: String(p.welcomePage),
    SHOW_IDP_LOGIN: String(p.showIdpLogin),
    IDP_TENANT_IDP_ALIASES: [...p.tenantAliases].map(([t, a]) => `${t}=${a}`).join(','),
    LOG_LEVEL: p.logLevel,
  };
}

/** A hash of the applied values, 12 hex digits: the same policy gives the same version on every instance. */
export function policyVersion(p: Policy): string {
  const text = Object.entries(policyVariables(p))
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

/** The settings whose value differs, old and new. */
export function policyChanges(before: Policy, after: Policy): Array<{ setting: string; from: string; to: string }> {
  const a = policyVariables(before);
  const b = policyVariables(after);
  return Object.keys(b)
    .filter((k) => a[k] !== b[k])
    .map((k) => ({ setting: k, from: a[k]!, to: b[k]! }));
}

/** The snapshot of `policy` applied now from `source`: frozen, so no part can change what another reads. */
export function snapshotOf(policy: Policy, source: PolicySource, appliedAt: number): PolicySnapshot {
  return Object.freeze({ ...policy, version: policyVersion(policy), appliedAt, source });
}

/** What the parts that decide hold: the policy in force, read once per request or WebSocket. */
export interface PolicyReader {
  readonly current: PolicySnapshot;
}

/**
 * The policy in force: one reference, swapped whole when a new policy is applied, so a request that
 * read it judges under exactly one policy to its end. Listeners run after the swap (open
 * connections judged again, the log level, the audit line).
 */
export class LivePolicy implements PolicyReader {
  /** a plain field: reading it is one property load on the hot path (parts hold it as a PolicyReader, read-only) */
  current: PolicySnapshot;
  private readonly listeners: Array<(next: PolicySnapshot, previous: PolicySnapshot) => void> = [];

  constructor(initial: PolicySnapshot) {
    this.current = initial;
  }

  /** Make `next` the policy in force. */
  apply(next: PolicySnapshot): void {
    const previous = this.current;
    this.current = next;
    for (const listener of this.listeners) listener(next, previous);
  }

  onChange(listener: (next: PolicySnapshot, previous: PolicySnapshot) => void): void {
    this.listeners.push(listener);
  }
}
