// POLICY_FILE, followed while the gateway runs: a directory watch, a poll and SIGHUP, because none
// alone sees every way a file changes; a change is taken once two readings agree, and applied whole
// or refused (docs/design/live-policy.md).
import { watch, type FSWatcher } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, dirname } from 'node:path';
import { readPolicy, snapshotOf, type LivePolicy, type PolicySnapshot, type PolicySources } from '../config/policy.js';
import { readPolicyFile } from '../config/policy-file.js';
import type { Observability } from './observability/observability.js';
import type { PolicyStatus } from './operations/operations.js';

/** Between two readings that must agree before a changed file is taken. */
export const POLICY_SETTLE_MS = 50;

export interface PolicyWatch {
  /** Read the file now (SIGHUP: `signal`), without waiting for it to settle. */
  reload(source: 'file' | 'signal'): void;
  /** What /readyz shows of the policy. */
  status(): PolicyStatus;
  close(): void;
}

interface Seen {
  hash: string;
  text: string | undefined;
  problem: string | undefined;
}

function reading(path: string): Seen {
  const read = readPolicyFile(path);
  const body = read.ok ? read.text : `\u0000${read.problem}`;
  return { hash: createHash('sha256').update(body).digest('hex'), text: read.ok ? read.text : undefined, problem: read.ok ? undefined : read.problem };
}

function reportRefused(obs: Pick<Observability, 'log' | 'audit' | 'metrics'>, fields: Record<string, unknown>): void {
  obs.metrics.policyRefused.inc();
  obs.log.error(fields, 'POLICY_FILE refused: the policy in force stays');
  obs.audit.error(fields, 'POLICY_FILE refused: the policy in force stays');
}

/**
 * The file's directory watched, not the file: a swapped symlink or a renamed-over file is a new
 * file, which a watch on the old one never reports. `arm` watches it anew (the directory may be
 * another one after a re-pointed symlink).
 */
function directoryWatch(file: string, changed: () => void, obs: Pick<Observability, 'log'>) {
  const name = basename(file);
  let watcher: FSWatcher | undefined;
  function arm(): void {
    watcher?.close();
    watcher = undefined;
    try {
      const w = watch(dirname(file), { persistent: false }, (_event, entry) => {
        if (entry === null || entry === name || entry.startsWith('..')) changed();
      });
      w.on('error', () => {
        w.close();
        if (watcher === w) watcher = undefined;
      });
      watcher = w;
    } catch (err) {
      obs.log.warn(
        { event: 'policy-watch', file, err: { message: (err as Error).message } },
        'POLICY_FILE: its directory cannot be watched; the poll alone sees changes',
      );
    }
  }
  return { arm, close: () => watcher?.close() };
}

export function watchPolicyFile(o: {
  live: LivePolicy;
  sources: PolicySources & { file: string };
  /** every variable the gateway reads */
  known: readonly string[];
  /** what reading the file at start warned about */
  warnings: readonly string[];
  obs: Pick<Observability, 'log' | 'audit' | 'metrics'>;
}): PolicyWatch {
  const { live, sources, obs } = o;
  const file = sources.file;
  // the first check reads the file again: a change since the start's reading is not missed
  let applied = '';
  let warnings = [...o.warnings];
  let refused: { at: string; problems: string[] } | undefined;
  let settle: NodeJS.Timeout | undefined;
  let closed = false;

  const take = (seen: Seen, source: 'file' | 'signal') => {
    applied = seen.hash;
    const read = seen.text === undefined ? { ok: false as const, problems: [seen.problem!] } : readPolicy(sources, seen.text, o.known);
    if (!read.ok) {
      refused = { at: new Date().toISOString(), problems: read.problems };
      reportRefused(obs, { event: 'policy-refused', file, source, problems: read.problems, version: live.current.version });
      return;
    }
    refused = undefined;
    // said again when they change, or when the operator asks (SIGHUP)
    if (source === 'signal' || read.warnings.join('\n') !== warnings.join('\n'))
      for (const w of read.warnings) obs.log.warn({ event: 'policy-warning', file }, w);
    warnings = read.warnings;
    const next: PolicySnapshot = snapshotOf(read.policy, source, Date.now());
    if (next.version === live.current.version) {
      const fields = { event: 'policy-unchanged', file, source, version: next.version };
      if (source === 'signal') obs.log.info(fields, 'POLICY_FILE read: the policy in force is the same');
      else obs.log.debug(fields, 'POLICY_FILE read: the policy in force is the same');
      return;
    }
    live.apply(next);
  };

  /** A reading that differs from the one taken: taken once a second reading agrees. */
  const check = () => {
    if (closed || settle) return;
    const first = reading(file);
    if (first.hash === applied) return;
    settle = setTimeout(() => {
      settle = undefined;
      if (closed) return;
      const second = reading(file);
      if (second.hash !== first.hash) return check();
      take(second, 'file');
      // the directory may be another one now (a re-pointed symlink): watched anew
      directory.arm();
    }, POLICY_SETTLE_MS);
    settle.unref();
  };
  const directory = directoryWatch(file, () => check(), obs);
  directory.arm();
  const poll = setInterval(check, sources.checkMs);
  poll.unref();
  check();

  return {
    reload(source) {
      if (closed) return;
      clearTimeout(settle);
      settle = undefined;
      take(reading(file), source);
    },
    status() {
      const now = live.current;
      return {
        version: now.version,
        appliedAt: new Date(now.appliedAt).toISOString(),
        source: now.source,
        file,
        ...(refused ? { refused } : {}),
        ...(warnings.length ? { warnings } : {}),
      };
    },
    close() {
      closed = true;
      clearInterval(poll);
      clearTimeout(settle);
      directory.close();
    },
  };
}
