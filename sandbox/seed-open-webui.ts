// The demo data of `npm start`, put into the REAL Open WebUI the way its users and operator would:
// through the gateway, each demo account signed in by its password, then Open WebUI's own API
// (docs/development.md, "The real peers"). What was done is reported step by step, so the banner says
// only that.
import { CookieJar } from './cookie-jar.js';
import { loginThroughIdp } from './idp-browser.js';
import { RELEASE_NOT_CHECKED } from '../policies/upstream-release.js';
import { demoAccounts, type DemoAccount } from './demo-realm.js';
import { isPlatformSysAdmin, sandboxSeed, userIdOf, type Seed } from './seed.js';

export interface RealSeedReport {
  /** the model registered for everyone, when that was done */
  model?: { id: string; name: string };
  /** per account, in the realm's order: what it owns now */
  accounts: Array<{ username: string; files: string[]; chats: string[] }>;
  /** what failed, in words (the sandbox runs anyway) */
  problems: string[];
}

/** A signed-in browser of the gateway, as far as the seeding needs one. */
class GatewaySession {
  constructor(
    private readonly publicUrl: string,
    private readonly jar: CookieJar,
  ) {}

  static async signIn(publicUrl: string, account: DemoAccount): Promise<GatewaySession> {
    const jar = new CookieJar();
    const start = await request(jar, `${publicUrl}/auth/start?returnTo=%2F`);
    if (start.status !== 302 || !start.location) throw new Error(`/auth/start answered ${start.status}`);
    const { callbackUrl } = await loginThroughIdp(start.location, account.username, account.password);
    const back = await request(jar, callbackUrl);
    if (back.status !== 302) throw new Error(`the sign-in callback answered ${back.status}`);
    return new GatewaySession(publicUrl, jar);
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await request(this.jar, `${this.publicUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status !== 200) throw new SeedRefusal(method, path, res.status, res.text);
    return JSON.parse(res.text) as T;
  }

  async upload(filename: string, type: string, content: string): Promise<{ id: string; filename: string }> {
    const form = new FormData();
    form.append('file', new Blob([content], { type }), filename);
    const res = await request(this.jar, `${this.publicUrl}/api/v1/files/`, { method: 'POST', body: form });
    if (res.status !== 200) throw new SeedRefusal('POST', `/api/v1/files/ (uploading ${filename})`, res.status, res.text);
    return JSON.parse(res.text) as { id: string; filename: string };
  }
}

/** A step refused by the gateway or Open WebUI, in words: the answer's `detail`, and why when the gateway says so. */
class SeedRefusal extends Error {
  constructor(method: string, path: string, status: number, text: string) {
    let detail = text.slice(0, 200);
    try {
      const parsed = JSON.parse(text) as { detail?: unknown };
      if (typeof parsed.detail === 'string') detail = parsed.detail;
    } catch {
      /* not JSON: the text as it came */
    }
    // the gateway refuses admins behind a release it was not checked against (policies/upstream-release.ts)
    const why = detail.startsWith(RELEASE_NOT_CHECKED)
      ? ` (UPSTREAM_RELEASE_POLICY=refuse-admins refuses every API request of an admin while Open WebUI runs a release the gateway was not checked against; see the warning above)`
      : '';
    super(`${method} ${path} answered ${status}: ${detail}${why}`);
  }
}

async function request(
  jar: CookieJar,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | FormData } = {},
): Promise<{ status: number; location?: string; text: string }> {
  const cookie = jar.header(url);
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { accept: 'application/json', ...init.headers, ...(cookie ? { cookie } : {}) },
    body: init.body,
    redirect: 'manual',
    signal: AbortSignal.timeout(60_000),
  });
  jar.store(res.headers.getSetCookie(), url);
  const location = res.headers.get('location');
  return { status: res.status, ...(location ? { location: new URL(location, url).href } : {}), text: await res.text() };
}

/** A chat as Open WebUI's front-end stores it: the messages as a history tree and as a list. */
function chatBody(title: string, messages: Array<{ role: string; content: string }>, model: string | undefined, at: number) {
  const ids = messages.map(() => crypto.randomUUID());
  const stored = messages.map((m, i) => ({
    id: ids[i]!,
    parentId: i === 0 ? null : ids[i - 1]!,
    childrenIds: i + 1 < ids.length ? [ids[i + 1]!] : [],
    role: m.role,
    content: m.content,
    timestamp: at + i,
    ...(model ? (m.role === 'assistant' ? { model, modelIdx: 0, done: true } : { models: [model] }) : {}),
  }));
  return {
    chat: {
      title,
      models: model ? [model] : [],
      params: {},
      history: { messages: Object.fromEntries(stored.map((m) => [m.id, m])), currentId: ids.at(-1) ?? null },
      messages: stored,
      tags: [],
      files: [],
      timestamp: at * 1000,
    },
  };
}

/**
 * Sign every demo account in through the gateway at `publicUrl`, register `model` for everyone
 * (as the first platform administrator) and give each account its demo files and chat.
 */
export async function seedThroughGateway(o: {
  publicUrl: string;
  model?: { id: string; name: string; description: string };
  accounts?: DemoAccount[];
  seed?: Seed;
}): Promise<RealSeedReport> {
  const accounts = o.accounts ?? demoAccounts;
  const seed = o.seed ?? sandboxSeed(accounts);
  const report: RealSeedReport = { accounts: [], problems: [] };
  const sessions = new Map<string, GatewaySession>();
  const session = async (a: DemoAccount) => {
    let s = sessions.get(a.username);
    if (!s) sessions.set(a.username, (s = await GatewaySession.signIn(o.publicUrl, a)));
    return s;
  };

  const admin = accounts.find(isPlatformSysAdmin);
  if (o.model && admin) {
    try {
      const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
      await (
        await session(admin)
      ).json('POST', '/api/v1/models/create', {
        id: o.model.id,
        name: o.model.name,
        base_model_id: null,
        meta: { description: o.model.description },
        params: {},
        access_grants: everyone,
      });
      report.model = { id: o.model.id, name: o.model.name };
    } catch (err) {
      report.problems.push(
        `the model ${o.model.id} was not registered for everyone, so nobody can chat with it until an admin registers a model: ${admin.username}'s ${(err as Error).message}`,
      );
    }
  } else if (o.model) report.problems.push(`the model ${o.model.id} was not registered: no demo account is a platform administrator`);

  for (const a of accounts) {
    const done = { username: a.username, files: [] as string[], chats: [] as string[] };
    report.accounts.push(done);
    try {
      const s = await session(a);
      for (const f of seed.files.filter((x) => x.user_id === userIdOf(a))) {
        done.files.push((await s.upload(f.filename, f.meta.content_type, f.data.content ?? '')).filename);
      }
      for (const c of seed.chats.filter((x) => x.user_id === userIdOf(a))) {
        const messages = (c.chat as { messages?: Array<{ role: string; content: string }> }).messages ?? [];
        await s.json('POST', '/api/v1/chats/new', chatBody(c.title, messages, report.model?.id, c.created_at));
        done.chats.push(c.title);
      }
    } catch (err) {
      report.problems.push(`${a.username}: ${(err as Error).message}`);
    }
  }
  return report;
}
