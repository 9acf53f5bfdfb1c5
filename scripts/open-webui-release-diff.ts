// What differs between a release of Open WebUI (as scripts/open-webui-routes.py lists it) and what
// the gateway's route table covers: policies/open-webui-routes.ts, the record of checked releases
// (policies/open-webui-releases.ts) and the handler fingerprints recorded for them
// (policies/open-webui-releases.json). Used by `npm run routes:check` (scripts/routes-check.ts) and
// by test/operations/open-webui-routes.test.ts, so both read the same differences the same way.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decide } from '../policies/admin-scoping.js';
import { OPEN_WEBUI_MOUNTS, OPEN_WEBUI_ROUTES } from '../policies/open-webui-routes.js';
import { OPEN_WEBUI_SOCKET_EVENTS } from '../policies/socket-events.js';
import { matchRoute } from '../policies/route-matcher.js';
import { CHECKED_RELEASES, TABLE_RELEASE, type CheckedRelease } from '../policies/open-webui-releases.js';

/** What scripts/open-webui-routes.py prints. */
export interface RealListing {
  version: string;
  /** the interpreter's minor version the fingerprints were taken with */
  python: string;
  http: Array<{ methods: string[]; path: string }>;
  mounts: string[];
  socketio: string[];
  /** `METHOD /path` -> fingerprint of its handler */
  handlers: Record<string, string>;
  /** Socket.IO event -> fingerprint of its handler */
  events: Record<string, string>;
}

/** The recorded fingerprints of one checked release. */
export interface RecordedRelease {
  python: string;
  handlers: Record<string, string>;
  events: Record<string, string>;
}

export type Recorded = Record<string, RecordedRelease>;

export const RECORDED_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'policies', 'open-webui-releases.json');

export function readRecorded(file = RECORDED_FILE): Recorded {
  return JSON.parse(readFileSync(file, 'utf8')) as Recorded;
}

export interface AddedRoute {
  route: string;
  /** what the gateway does with an admin's request to it today */
  today: string;
}

export interface ChangedHandler {
  route: string;
  /** the checked release whose handler it was compared with */
  against: string;
}

export interface ReleaseDiff {
  version: string;
  /** checked (policies/open-webui-releases.ts lists it) */
  checked: boolean;
  /** routes the release serves that no row lists (nor the record) */
  added: AddedRoute[];
  /** rows the release does not serve that the record does not name */
  removed: string[];
  /** handlers whose fingerprint is none of the checked releases' for that route */
  changed: ChangedHandler[];
  eventsAdded: string[];
  eventsRemoved: string[];
  changedEvents: ChangedHandler[];
  mountsAdded: string[];
  /** entries of the release's record that no longer hold (it serves an absent row, an unlisted route is gone) */
  staleRecord: string[];
  /**
   * handlers (or events) the same as another checked release's whose record says they differ from
   * the table's, which this release's record does not say: the same difference, unsaid
   */
  unsaidDifferences: string[];
  /** the fingerprints were taken with another Python than the recorded ones (ast.unparse may print differently) */
  pythonDiffers?: { recorded: string; now: string };
}

const key = (method: string, path: string) => `${method.toUpperCase()} ${path.toLowerCase().replace(/\/$/, '')}`;

/** `A,B /path` -> its keys, one per method. */
function keysOfRowText(text: string): string[] {
  const [methods, path] = text.split(' ');
  return methods!.split(',').map((m) => key(m, path!));
}

/** A concrete path for a template: each parameter a sample value (a `:path` one two segments). */
export function samplePath(template: string): string {
  return template.replace(/\{[a-z_]+:path\}/gi, 'p1/p2').replace(/\{[a-z_]+\}/gi, 'x1');
}

/** What the gateway does today with an admin's request to a route no row lists (bypass off, as the platform runs). */
function today(method: string, path: string): string {
  if (method === 'WEBSOCKET') return 'WebSocket: forwarded (not judged by the route table)';
  const concrete = samplePath(path);
  const match = matchRoute(method, concrete);
  const decision = decide({ method, path: concrete }, { bypassAdminAccessControl: false, enableAdminExport: false }, { admin: true });
  const verdict =
    decision.action === 'deny' ? `refused for admins (${decision.status})` : decision.action === 'pass' ? 'passed for admins' : `${decision.action} for admins`;
  return match ? `${verdict}: matched by the row ${match.row.methods.join(',')} ${match.row.path} (${match.row.class})` : `${verdict}: ${decision.rule}`;
}

/** A handler whose code is another checked release's carries that release's differences with it: those `said` does not name. */
function unsaidDifferencesOf(real: RealListing, recorded: Recorded, releases: readonly CheckedRelease[], said: ReadonlySet<string>): string[] {
  const unsaid: string[] = [];
  for (const other of releases) {
    if (other.version === real.version || !recorded[other.version]) continue;
    for (const [route, why] of Object.entries(other.differences)) {
      if (said.has(route)) continue;
      const isEvent = !route.includes(' ');
      const mine = isEvent ? real.events[route] : real.handlers[route];
      const theirs = isEvent ? recorded[other.version]!.events[route] : recorded[other.version]!.handlers[route];
      if (mine !== undefined && mine === theirs && mine !== (isEvent ? recorded[TABLE_RELEASE]?.events[route] : recorded[TABLE_RELEASE]?.handlers[route]))
        unsaid.push(`${route}: the same handler as ${other.version}\u2019s, which ${why}`);
    }
  }
  return unsaid;
}

/**
 * The differences between `real` and what the table covers for that release. A release not in
 * the record is compared with the table as it stands: every route it adds, every row it drops and
 * every handler whose fingerprint no checked release had is a difference.
 */
export function diffRelease(real: RealListing, recorded: Recorded, releases: readonly CheckedRelease[] = CHECKED_RELEASES): ReleaseDiff {
  const record = releases.find((r) => r.version === real.version);
  const absent = new Set((record?.absentRows ?? []).flatMap(keysOfRowText));
  const otherTemplates = new Map(Object.entries(record?.otherTemplates ?? {}).map(([k, v]) => [keysOfRowText(k)[0]!, v]));
  const unlisted = new Set(Object.keys(record?.unlisted ?? {}).flatMap(keysOfRowText));
  const rowKeys = new Set(OPEN_WEBUI_ROUTES.flatMap((row) => row.methods.map((m) => key(m, row.path))));
  const rowPaths = new Set(OPEN_WEBUI_ROUTES.map((row) => row.path.toLowerCase().replace(/\/$/, '')));

  const realRoutes = real.http.flatMap((r) => r.methods.map((m) => ({ method: m, path: r.path, key: key(m, r.path) })));
  const realKeys = new Set(realRoutes.map((r) => r.key));
  const added: AddedRoute[] = [];
  const staleRecord: string[] = [];
  for (const r of realRoutes) {
    if (rowKeys.has(r.key) || unlisted.has(r.key)) continue;
    const row = otherTemplates.get(r.key);
    if (row !== undefined) {
      // the row named must exist and match this route's paths
      const matched = matchRoute(r.method, samplePath(r.path))?.row.path;
      if (!rowPaths.has(row.toLowerCase()) || matched !== row) staleRecord.push(`otherTemplates: ${r.method} ${r.path} is not matched by the row ${row}`);
      continue;
    }
    added.push({ route: `${r.method} ${r.path}`, today: today(r.method, r.path) });
  }
  for (const k of absent) if (realKeys.has(k)) staleRecord.push(`absentRows: ${k} is served`);
  for (const k of absent) if (!rowKeys.has(k)) staleRecord.push(`absentRows: ${k} is no row of the table`);
  for (const k of unlisted) if (!realKeys.has(k)) staleRecord.push(`unlisted: ${k} is not served`);
  for (const k of otherTemplates.keys()) if (!realKeys.has(k)) staleRecord.push(`otherTemplates: ${k} is not served`);
  for (const k of Object.keys(record?.differences ?? {}))
    if (k.includes(' ') ? !realKeys.has(keysOfRowText(k)[0]!) : !real.socketio.includes(k)) staleRecord.push(`differences: ${k} is not served`);
  // a row the release serves under another template is served
  const servedAs = new Set([...otherTemplates].map(([k, row]) => key(k.split(' ')[0]!, row)));
  const removed = OPEN_WEBUI_ROUTES.flatMap((row) =>
    row.methods
      .filter((m) => !realKeys.has(key(m, row.path)) && !absent.has(key(m, row.path)) && !servedAs.has(key(m, row.path)))
      .map((m) => `${m} ${row.path}`),
  );

  const events = Object.keys(OPEN_WEBUI_SOCKET_EVENTS);
  const absentEvents = new Set(record?.absentEvents ?? []);
  const eventsAdded = real.socketio.filter((e) => !events.includes(e));
  const eventsRemoved = events.filter((e) => !real.socketio.includes(e) && !absentEvents.has(e));
  for (const e of absentEvents) if (real.socketio.includes(e)) staleRecord.push(`absentEvents: ${e} is handled`);
  const mountsAdded = real.mounts.filter((m) => !(m in OPEN_WEBUI_MOUNTS));

  // Handlers: compared with this release's own record when it has one, else with every checked
  // release's (the table release first); one equal fingerprint is enough.
  const order = recorded[real.version] ? [real.version] : [TABLE_RELEASE, ...releases.map((r) => r.version).filter((v) => v !== TABLE_RELEASE)];
  const against = order.filter((v) => recorded[v]);
  // a route served under another template is compared with the row's own template too
  const rowTemplate = new Map(Object.entries(record?.otherTemplates ?? {}).map(([k, row]) => [k, `${k.split(' ')[0]!} ${row}`]));
  const compare = (route: string, fingerprint: string, of: (r: RecordedRelease) => Record<string, string>): ChangedHandler | undefined => {
    const names = [route, rowTemplate.get(route)].filter((n): n is string => n !== undefined);
    const known = against.filter((v) => names.some((n) => of(recorded[v]!)[n] !== undefined));
    if (known.some((v) => names.some((n) => of(recorded[v]!)[n] === fingerprint))) return undefined;
    return { route, against: known[0] ?? 'none (not recorded for any checked release)' };
  };
  const addedKeys = new Set(added.map((a) => a.route));
  const changed = Object.entries(real.handlers)
    .filter(([route]) => !addedKeys.has(route))
    .map(([route, fp]) => compare(route, fp, (r) => r.handlers))
    .filter((c): c is ChangedHandler => c !== undefined);
  const changedEvents = Object.entries(real.events)
    .filter(([event]) => !eventsAdded.includes(event))
    .map(([event, fp]) => compare(event, fp, (r) => r.events))
    .filter((c): c is ChangedHandler => c !== undefined);
  const unsaidDifferences = unsaidDifferencesOf(real, recorded, releases, new Set(Object.keys(record?.differences ?? {})));
  const reference = recorded[against[0] ?? ''];
  return {
    version: real.version,
    checked: record !== undefined,
    added,
    removed,
    changed,
    eventsAdded,
    eventsRemoved,
    changedEvents,
    mountsAdded,
    staleRecord,
    unsaidDifferences,
    ...(reference && reference.python !== real.python ? { pythonDiffers: { recorded: reference.python, now: real.python } } : {}),
  };
}

/** Nothing the table and the record do not already cover. */
export function covered(d: ReleaseDiff): boolean {
  return (
    d.added.length + d.removed.length + d.changed.length + d.eventsAdded.length + d.eventsRemoved.length + d.changedEvents.length + d.mountsAdded.length ===
      0 &&
    d.staleRecord.length === 0 &&
    d.unsaidDifferences.length === 0
  );
}
