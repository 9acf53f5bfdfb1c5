// `npm run routes:check -- <release> [--source] [--record]`: is the gateway's route table ready for
// that Open WebUI release? Prints what the table does not cover, so a release is reviewed before it
// runs (docs/operating/upgrades.md). Exit 0: nothing uncovered (or recorded); 1: differences; 2: could
// not check.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { matchRoute } from '../policies/route-matcher.js';
import { CHECKED_VERSIONS, isCheckedRelease } from '../policies/open-webui-releases.js';
import { covered, diffRelease, readRecorded, RECORDED_FILE, samplePath, type RealListing, type Recorded, type ReleaseDiff } from './open-webui-release-diff.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = join(ROOT, 'scripts', 'open-webui.sh');
const LISTER = join(ROOT, 'scripts', 'open-webui-routes.py');

const out = (line = '') => process.stdout.write(line + '\n');
const note = (line: string) => process.stderr.write(line + '\n');

function usage(): never {
  note('usage: npm run routes:check -- <release> [--source] [--record]   (e.g. npm run routes:check -- 0.12.5)');
  process.exit(2);
}

/** Install `version` into the cache (idempotent) and return its venv's Python. */
function install(version: string): string {
  const env = { ...process.env, OWUI_VERSION: version };
  const started = Date.now();
  const run = spawnSync('bash', [SCRIPT, 'install'], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  if (run.status !== 0) {
    note(`could not install Open WebUI ${version} (scripts/open-webui.sh install exited ${run.status ?? run.signal})`);
    process.exit(2);
  }
  note(`  install: ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return join(execFileSync('bash', [SCRIPT, 'path'], { env, encoding: 'utf8' }).trim(), 'bin', 'python');
}

function list(python: string, args: string[] = []): string {
  const run = spawnSync(python, [LISTER, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, timeout: 600_000 });
  if (run.status !== 0) {
    note(`scripts/open-webui-routes.py failed (${run.status ?? run.signal}):\n${run.stderr.slice(-4000)}`);
    process.exit(2);
  }
  return run.stdout;
}

function rowOf(route: string): string {
  const [method, path] = route.split(' ') as [string, string];
  if (!path) return '';
  const m = matchRoute(method, samplePath(path));
  return m ? `${m.row.class}${m.row.why ? `: ${m.row.why}` : ''}` : 'no row';
}

function print(d: ReleaseDiff): void {
  out(`Open WebUI ${d.version} against the gateway's route table (checked releases: ${CHECKED_VERSIONS.join(', ')})`);
  if (d.pythonDiffers)
    out(
      `  note: the fingerprints were recorded with Python ${d.pythonDiffers.recorded}, this is ${d.pythonDiffers.now}: a handler may show as changed only because Python prints it back differently`,
    );
  const section = (title: string, lines: string[]) => {
    if (!lines.length) return;
    out('');
    out(`${title} (${lines.length}):`);
    for (const l of lines) out(`  ${l}`);
  };
  section(
    'Routes added: no row lists them; what the gateway does with an admin\u2019s request today',
    d.added.map((a) => `+ ${a.route}\n      ${a.today}`),
  );
  section(
    'Routes removed: rows of the table this release does not serve',
    d.removed.map((r) => `- ${r}`),
  );
  section(
    'Handlers changed since the checked release: review each row (--source shows the code)',
    d.changed.map((c) => `~ ${c.route}   [row: ${rowOf(c.route)}; compared with ${c.against}]`),
  );
  section(
    'Socket.IO events added (an admin\u2019s are passed unread)',
    d.eventsAdded.map((e) => `+ ${e}`),
  );
  section(
    'Socket.IO events removed',
    d.eventsRemoved.map((e) => `- ${e}`),
  );
  section(
    'Socket.IO handlers changed since the checked release',
    d.changedEvents.map((c) => `~ ${c.route}   [compared with ${c.against}]`),
  );
  section(
    'Mounted sub-applications no row lists',
    d.mountsAdded.map((m) => `+ ${m}`),
  );
  section('The record of this release (policies/open-webui-releases.ts) no longer holds', d.staleRecord);
  section(
    'Handlers the same as another checked release\u2019s that differ from the table\u2019s: say it in this release\u2019s record too (differences)',
    d.unsaidDifferences,
  );
  out('');
}

/** Each changed handler's source beside the checked release's, as `diff -u` shows them. */
function printSources(d: ReleaseDiff, python: string): void {
  const byRelease = new Map<string, string[]>();
  for (const c of [...d.changed, ...d.changedEvents]) {
    if (!CHECKED_VERSIONS.includes(c.against)) continue;
    byRelease.set(c.against, [...(byRelease.get(c.against) ?? []), c.route]);
  }
  const dir = mkdtempSync(join(tmpdir(), 'routes-check-'));
  try {
    for (const [against, routes] of byRelease) {
      const theirs = JSON.parse(list(install(against), ['--source', ...routes])) as Record<string, string>;
      const ours = JSON.parse(list(python, ['--source', ...routes])) as Record<string, string>;
      for (const route of routes) {
        const a = join(dir, 'a');
        const b = join(dir, 'b');
        writeFileSync(a, (theirs[route] ?? '') + '\n');
        writeFileSync(b, (ours[route] ?? '') + '\n');
        const diff = spawnSync('diff', ['-u', '--label', `${against} ${route}`, '--label', `${d.version} ${route}`, a, b], { encoding: 'utf8' });
        out(diff.stdout);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function record(d: ReleaseDiff, real: RealListing, recorded: Recorded): boolean {
  if (!isCheckedRelease(d.version)) {
    note(
      `--record: ${d.version} is not in policies/open-webui-releases.ts. Review the differences, add rows with tests, then add the release there (CHECKED_RELEASES) and record again.`,
    );
    return false;
  }
  const open =
    d.added.length +
    d.removed.length +
    d.eventsAdded.length +
    d.eventsRemoved.length +
    d.mountsAdded.length +
    d.staleRecord.length +
    d.unsaidDifferences.length;
  if (open) {
    note(`--record: ${open} route or event differences are not covered yet: the table or the record of ${d.version} must say them first.`);
    return false;
  }
  const next: Recorded = { ...recorded, [d.version]: { python: real.python, handlers: real.handlers, events: real.events } };
  const ordered = Object.fromEntries(CHECKED_VERSIONS.filter((v) => next[v]).map((v) => [v, next[v]!]));
  writeFileSync(RECORDED_FILE, JSON.stringify(ordered, null, 1) + '\n');
  out(
    `Recorded the handler fingerprints of ${d.version} (${Object.keys(real.handlers).length} routes, ${Object.keys(real.events).length} events) in policies/open-webui-releases.json.`,
  );
  return true;
}

function main(): number {
  const args = process.argv.slice(2);
  const version = args.find((a) => !a.startsWith('--'));
  const unknown = args.filter((a) => a.startsWith('--') && a !== '--source' && a !== '--record');
  if (!version || unknown.length || !/^\d+\.\d+\.\d+[0-9A-Za-z.+-]*$/.test(version)) usage();
  const started = Date.now();
  note(`Installing Open WebUI ${version} into the cache (scripts/open-webui.sh install; once per release)...`);
  const python = install(version);
  const listedAt = Date.now();
  const real = JSON.parse(list(python)) as RealListing;
  note(`  listing: ${((Date.now() - listedAt) / 1000).toFixed(0)} s`);
  if (real.version !== version) {
    note(`the installed package reports ${real.version}, not ${version}`);
    return 2;
  }
  const recorded = readRecorded();
  const d = diffRelease(real, recorded);
  print(d);
  if (args.includes('--source')) printSources(d, python);
  const ok = covered(d);
  if (args.includes('--record') && !ok && record(d, real, recorded)) return 0;
  const total =
    d.added.length + d.removed.length + d.changed.length + d.eventsAdded.length + d.eventsRemoved.length + d.changedEvents.length + d.mountsAdded.length;
  if (ok) {
    out(
      isCheckedRelease(version)
        ? `${version}: nothing the table does not cover; it is a checked release (policies/open-webui-releases.ts).`
        : `${version}: nothing the table does not cover. To have the gateway call it supported, add it to CHECKED_RELEASES in policies/open-webui-releases.ts and run this again with --record.`,
    );
  } else {
    out(
      `${version}: ${total} difference${total === 1 ? '' : 's'}${d.staleRecord.length ? ` and ${d.staleRecord.length} stale record entries` : ''} the table does not cover yet.`,
    );
    out(
      'Next: review each (--source shows the changed code), add or change rows with tests, say what differs in policies/open-webui-releases.ts, add the release to CHECKED_RELEASES, then run this with --record.',
    );
  }
  note(`routes:check took ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return ok ? 0 : 1;
}

process.exitCode = main();
