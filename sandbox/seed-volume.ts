// Platform volume in the REAL Open WebUI, written straight into its SQLite database while it is
// stopped: through its API the same volume would take hours (docs/development.md, "The real peers").
// The schema is the release's own (one boot runs its migrations); seeded databases are cached outside git.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DemoAccount } from './demo-realm.js';
import { demoAccounts } from './demo-realm.js';
import { OPEN_WEBUI_VERSION, startRealOpenWebUI, type AdminFlags, type RealOpenWebUI } from './real-open-webui.js';

const SEEDER = resolve(import.meta.dirname, '../scripts/seed-open-webui-volume.py');
const OPEN_WEBUI_SH = resolve(import.meta.dirname, '../scripts/open-webui.sh');

/** One user of the seeded platform and what they own. */
export interface VolumeUser {
  id: string;
  email: string;
  name: string;
  role: 'admin' | 'user';
  /** file names and chat titles start with it */
  prefix: string;
  files: number;
  chats: number;
  ratings: number;
  /** bytes of each file's extracted text, of each chat, of each rating's snapshot */
  fileBytes: number;
  chatBytes: number;
  snapshotBytes: number;
  /** the share of files changed after their upload (their updated_at later than created_at) */
  updatedShare: number;
  /** the tags their chats are filed under, and their ratings' */
  tags: string[];
  ratingTags: string[];
  /** workspace models they own (on the first model, a connection's), shared with nobody */
  models: string[];
}

export interface VolumeSpec {
  seed: number;
  /**
   * model ids chats and ratings name, in turn: the first a connection's (the sandbox's canned
   * answers), the second a workspace model of the admin's, the others workspace models of another
   * user's, private to them
   */
  models: string[];
  users: VolumeUser[];
}

/** What the seeder wrote. */
export interface SeedReport {
  counts: { users: number; files: number; chats: number; messages: number; tags: number; ratings: number };
  bytes: { chats: number; snapshots: number };
  seconds: number;
}

/** Shape of a platform: totals, and the admin's share of each. */
export interface PlatformShape {
  seed?: number;
  users: number;
  files: number;
  chats: number;
  ratings: number;
  models: string[];
  admin: { account: DemoAccount; files: number; chats: number; ratings: number; chatBytes: number; snapshotBytes: number };
  /** the other users' chat and snapshot sizes (bytes) */
  chatBytes: number;
  snapshotBytes: number;
  fileBytes?: number;
  /** realm accounts of the first plain users (their emails are the seeded users'): who may sign in */
  accounts: DemoAccount[];
}

/** A UUID from the seed and a name: the same spec gives the same ids. */
function idOf(seed: number, name: string): string {
  const h = createHash('sha256').update(`${seed}:${name}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Tags only the admin files chats and ratings under; tags every other user does; tags both do. */
export const ADMIN_ONLY_TAGS = ['admin-budget', 'admin-hiring', 'admin-roadmap', 'admin-vendors'];
export const OTHERS_ONLY_TAGS = ['divorce', 'diagnosis', 'lawsuit', 'salary', 'layoffs', 'therapy'];
export const SHARED_TAGS = ['work', 'travel', 'research'];

/** Realm accounts of plain users `vol-001`... for a volume world: they sign in at the embedded realm. */
export function volumeAccounts(n: number): DemoAccount[] {
  return Array.from({ length: n }, (_, i) => {
    const name = `vol-${String(i + 1).padStart(3, '0')}`;
    return {
      sub: idOf(0, `account:${name}`),
      username: name,
      password: `${name}-pass`,
      email: `${name}@volume.example`,
      name: `Volume user ${i + 1}`,
      roles: [],
      groups: [],
      tenants: [],
      note: 'a plain user of the seeded platform',
    };
  });
}

/** The admin is the demo realm's sysadmin (a chat admin by realm role). */
export const VOLUME_ADMIN = demoAccounts.find((a) => a.username === 'sysadmin')!;

/** Spread the totals over `users` users: the admin first with their share, the rest evenly. */
export function platformVolume(shape: PlatformShape): VolumeSpec {
  const seed = shape.seed ?? 42;
  const others = shape.users - 1;
  const share = (total: number, adminPart: number, i: number) => {
    const rest = total - adminPart;
    return Math.floor(rest / others) + (i < rest % others ? 1 : 0);
  };
  const users: VolumeUser[] = [
    {
      id: idOf(seed, 'user:admin'),
      email: shape.admin.account.email,
      name: shape.admin.account.name,
      role: 'admin',
      prefix: 'admin',
      files: shape.admin.files,
      chats: shape.admin.chats,
      ratings: shape.admin.ratings,
      fileBytes: shape.fileBytes ?? 300,
      chatBytes: shape.admin.chatBytes,
      snapshotBytes: shape.admin.snapshotBytes,
      updatedShare: 0.1,
      tags: [...ADMIN_ONLY_TAGS, ...SHARED_TAGS],
      ratingTags: [...ADMIN_ONLY_TAGS, ...SHARED_TAGS],
      models: shape.models.slice(1, 2),
    },
  ];
  for (let i = 0; i < others; i++) {
    const account = shape.accounts[i];
    const prefix = account ? account.username : `user-${String(i + 1).padStart(4, '0')}`;
    users.push({
      id: idOf(seed, `user:${i}`),
      email: account ? account.email : `${prefix}@volume.example`,
      name: account ? account.name : `User ${i + 1}`,
      role: 'user',
      prefix,
      files: share(shape.files, shape.admin.files, i),
      chats: share(shape.chats, shape.admin.chats, i),
      ratings: share(shape.ratings, shape.admin.ratings, i),
      fileBytes: shape.fileBytes ?? 300,
      chatBytes: shape.chatBytes,
      snapshotBytes: shape.snapshotBytes,
      updatedShare: 0.1,
      tags: [...OTHERS_ONLY_TAGS, ...SHARED_TAGS],
      ratingTags: [...OTHERS_ONLY_TAGS, ...SHARED_TAGS],
      models: i === 0 ? shape.models.slice(2) : [],
    });
  }
  return { seed, models: shape.models, users };
}

function cacheDir(): string {
  return join(process.env.CHATGW_CACHE || join(homedir(), '.cache', 'chat-gateway'), 'volume');
}

/** The venv's Python of the release (the one that runs it; sqlite3 is in its standard library). */
function releasePython(): string {
  const venv = execFileSync('bash', [OPEN_WEBUI_SH, 'path'], { encoding: 'utf8', env: { ...process.env, OWUI_VERSION: OPEN_WEBUI_VERSION } }).trim();
  return join(venv, 'bin', 'python');
}

/** Write `spec` into the database at `db` (Open WebUI stopped). */
export function seedDatabase(db: string, spec: VolumeSpec): SeedReport {
  const dir = mkdtempSync(join(tmpdir(), 'owui-seed-'));
  try {
    const specFile = join(dir, 'spec.json');
    writeFileSync(specFile, JSON.stringify(spec));
    const out = execFileSync(releasePython(), [SEEDER, db, specFile], { encoding: 'utf8', maxBuffer: 1 << 20 });
    return JSON.parse(out.trim().split('\n').pop()!) as SeedReport;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An empty database migrated by this release of Open WebUI itself: made once by a boot, then kept. */
async function migratedTemplate(): Promise<string> {
  const template = join(cacheDir(), `open-webui-${OPEN_WEBUI_VERSION}-migrated.db`);
  if (existsSync(template)) return template;
  mkdirSync(cacheDir(), { recursive: true });
  const dataDir = mkdtempSync(join(tmpdir(), 'owui-migrate-'));
  try {
    const owui = await startRealOpenWebUI({
      flags: { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false },
      dataDir,
    });
    await owui.close();
    // its write-ahead log folded into the file, so that one file is the whole database; the settings
    // that boot stored dropped, so that a boot on a copy takes its own environment's (a model
    // connection, the flags), as a fresh install does
    execFileSync(releasePython(), [
      '-c',
      'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DELETE FROM config"); c.commit(); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.close()',
      join(dataDir, 'webui.db'),
    ]);
    const partial = `${template}.${process.pid}.part`;
    copyFileSync(join(dataDir, 'webui.db'), partial);
    renameSync(partial, template);
    return template;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The seeded database of `spec` for this release: from the cache, or migrated and seeded now. */
export async function seededDatabase(spec: VolumeSpec): Promise<{ db: string; report: SeedReport; cached: boolean }> {
  const key = createHash('sha256').update(JSON.stringify(spec)).update(readFileSync(SEEDER)).digest('hex').slice(0, 16);
  const db = join(cacheDir(), `open-webui-${OPEN_WEBUI_VERSION}-volume-${key}.db`);
  const reportFile = `${db}.json`;
  if (existsSync(db) && existsSync(reportFile)) return { db, report: JSON.parse(readFileSync(reportFile, 'utf8')) as SeedReport, cached: true };
  const template = await migratedTemplate();
  const partial = `${db}.${process.pid}.part`;
  copyFileSync(template, partial);
  try {
    const report = seedDatabase(partial, spec);
    writeFileSync(reportFile, JSON.stringify(report));
    renameSync(partial, db);
    return { db, report, cached: false };
  } finally {
    rmSync(partial, { force: true });
  }
}

/** The real Open WebUI on a copy of the seeded database of `spec` (the copy removed at close). */
export async function startVolumeOpenWebUI(o: {
  spec: VolumeSpec;
  flags: AdminFlags;
  env?: Record<string, string>;
}): Promise<RealOpenWebUI & { seed: SeedReport; seededNow: boolean }> {
  const { db, report, cached } = await seededDatabase(o.spec);
  const dataDir = mkdtempSync(join(tmpdir(), 'owui-volume-'));
  copyFileSync(db, join(dataDir, 'webui.db'));
  try {
    const owui = await startRealOpenWebUI({ flags: o.flags, env: o.env, dataDir });
    return {
      ...owui,
      seed: report,
      seededNow: !cached,
      async close() {
        await owui.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}
