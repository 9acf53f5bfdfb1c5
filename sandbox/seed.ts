// What the sandbox's chat front-end holds at start: one user per demo account of the realm (same
// email, admin for PlatformSysAdmin), two files and one chat owned by each. Derived from
// sandbox/demo-realm.ts, so the sandbox and the tests share one set of demo data.
import { demoAccounts, type DemoAccount } from './demo-realm.js';
import type { StandInChat, StandInFile, StandInUser } from './open-webui/stand-in.js';

export const SANDBOX_GROUPS = ['acme', 'globex', 'initech'];

export interface Seed {
  users: StandInUser[];
  files: StandInFile[];
  chats: StandInChat[];
  groups: string[];
}

export function isPlatformSysAdmin(a: DemoAccount): boolean {
  return a.roles.includes('PlatformSysAdmin');
}

export function userIdOf(a: DemoAccount): string {
  return `user-${a.username}`;
}

/** The files seeded for an account, by file name. */
export function seededFileNames(a: DemoAccount): string[] {
  return [`${a.username}-notes.md`, `${a.username}-figures.csv`];
}

export function sandboxSeed(accounts: DemoAccount[] = demoAccounts, now = Math.floor(Date.now() / 1000)): Seed {
  const users: StandInUser[] = accounts.map((a) => ({
    id: userIdOf(a),
    email: a.email,
    name: a.name,
    role: isPlatformSysAdmin(a) ? 'admin' : 'user',
    groups: a.groups.filter((g) => SANDBOX_GROUPS.includes(g)),
  }));
  const files: StandInFile[] = [];
  const chats: StandInChat[] = [];
  accounts.forEach((a, i) => {
    const [notes, figures] = seededFileNames(a) as [string, string];
    const tenants = a.tenants.join(', ') || 'no tenant';
    const texts: Array<[string, string, string]> = [
      [notes, 'text/markdown', `# Notes of ${a.name}\n\nPrivate notes (${tenants}). Only ${a.name} should see this file in the list.\n`],
      [figures, 'text/csv', `owner,tenant,figure\n${a.username},${a.tenants[0] ?? '-'},${100 + i}\n`],
    ];
    texts.forEach(([filename, type, content], k) => {
      const at = now - 3600 * (accounts.length - i) - k * 60;
      files.push({
        id: `file-${a.username}-${k + 1}`,
        user_id: userIdOf(a),
        hash: null,
        filename,
        data: { content },
        meta: { name: filename, content_type: type, size: Buffer.byteLength(content) },
        created_at: at,
        updated_at: at,
      });
    });
    const at = now - 1800 * (accounts.length - i);
    chats.push({
      id: `chat-${a.username}-1`,
      user_id: userIdOf(a),
      title: `${a.name}: private conversation`,
      chat: {
        title: `${a.name}: private conversation`,
        messages: [
          { role: 'user', content: `Hello, this is ${a.name}. Please keep this between us.` },
          { role: 'assistant', content: 'Of course. Only you (and, if the operator allows the export, an administrator) can read this.' },
        ],
      },
      created_at: at,
      updated_at: at,
      share_id: null,
      archived: false,
      pinned: false,
      meta: {},
      folder_id: null,
    });
  });
  return { users, files, chats, groups: [...SANDBOX_GROUPS] };
}
