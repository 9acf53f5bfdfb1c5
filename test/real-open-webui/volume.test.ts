// The views the gateway rewrites, at a platform's volume, on the REAL Open WebUI (0.12.4, or the
// release OWUI_VERSION names): past every limit the gateway once had (more than 2,000 files of
// everyone, more than 1,200 ratings of the admin's own, an export of every user's ratings over 64
// MiB, an admin's chats over 64 MiB), each answer exactly the admin's own, with Open WebUI's own
// admin flags false (the platform's) and true (its defaults). The volume is written straight into
// Open WebUI's database (sandbox/seed-volume.ts) and kept in the peers' cache; the truth each test
// compares with is asked of Open WebUI itself, with the admin's own token.
import { expect } from 'chai';
import { startIdp } from '../../sandbox/idp.js';
import { loginThroughIdp } from '../../sandbox/idp-browser.js';
import { demoAccounts, demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { cannedModelConnection, startCannedModel, CANNED_MODEL_ID, type CannedModel } from '../../sandbox/canned-model.js';
import {
  ADMIN_ONLY_TAGS,
  OTHERS_ONLY_TAGS,
  platformVolume,
  startVolumeOpenWebUI,
  VOLUME_ADMIN,
  volumeAccounts,
  type SeedReport,
} from '../../sandbox/seed-volume.js';
import { OPEN_WEBUI_VERSION, type AdminFlags, type RealOpenWebUI } from '../../sandbox/real-open-webui.js';
import { loadSettings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { browse, gatewayClient, Jar, SESSION_SECRET, worldEnv } from '../support/cookie-jar.js';
import { capturingObservability, type LogLine } from '../support/gateway-harness.js';
import { freePort } from '../support/raw-http.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MiB = 1024 * 1024;
const USERS = 10;
const MODEL = CANNED_MODEL_ID;
const ADMIN_MODEL = 'model-b';
const PRIVATE_MODEL = 'model-c';

/** 2,600 files (the admin's 130), 5,600 chats of the admin's at 12 KB (67 MB), 4,400 ratings with 16 KB snapshots (the admin's 1,300). */
const SPEC = platformVolume({
  seed: 4242,
  users: 40,
  files: 2_600,
  chats: 7_000,
  ratings: 4_400,
  models: [MODEL, ADMIN_MODEL, PRIVATE_MODEL],
  admin: { account: VOLUME_ADMIN, files: 130, chats: 5_600, ratings: 1_300, chatBytes: 12_000, snapshotBytes: 16_000 },
  chatBytes: 1_500,
  snapshotBytes: 16_000,
  accounts: volumeAccounts(USERS),
});

interface FileRec {
  id: string;
  user_id: string;
  filename: string;
  created_at: number;
  updated_at: number;
  data: Record<string, unknown>;
}
interface Rating {
  id: string;
  user_id: string;
  created_at: number;
  updated_at: number;
  data: { model_id?: string; tags?: string[] };
}

/** A code-flow sign-in at the embedded realm, through the gateway, with the account's password. */
async function signIn(url: string, username: string, password: string): Promise<Jar> {
  const jar = new Jar(url);
  const start = await browse(jar, '/auth/start');
  const { callbackUrl } = await loginThroughIdp(start.location!, username, password);
  const callback = await browse(jar, callbackUrl);
  if (callback.status !== 302) throw new Error(`sign-in of ${username}: ${callback.status}`);
  return jar;
}

const FLAG_SETS: Array<{ title: string; flags: AdminFlags }> = [
  {
    title: "Open WebUI's own admin flags false (the platform's)",
    flags: { BYPASS_ADMIN_ACCESS_CONTROL: false, ENABLE_ADMIN_EXPORT: false, ENABLE_ADMIN_CHAT_ACCESS: false },
  },
  {
    title: "Open WebUI's own admin flags true (its defaults)",
    flags: { BYPASS_ADMIN_ACCESS_CONTROL: true, ENABLE_ADMIN_EXPORT: true, ENABLE_ADMIN_CHAT_ACCESS: true },
  },
];

for (const { title, flags } of FLAG_SETS) {
  describe(`platform volume on the real Open WebUI ${OPEN_WEBUI_VERSION}: ${title}; gateway switches false`, function () {
    this.timeout(300_000);
    let model: CannedModel;
    let owui: RealOpenWebUI & { seed: SeedReport };
    let providersDir: string | undefined;
    let idp: Awaited<ReturnType<typeof startIdp>>;
    let gateway: Gateway;
    let gatewayLog: LogLine[];
    let url: string;
    let admin: Jar;
    let token: string;
    let adminId: string;

    /** Straight at Open WebUI with the admin's own token. */
    const direct = async (path: string) => {
      const res = await fetch(`${owui.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, text: await res.text() };
    };
    const through = async (path: string, jar = admin) => browse(jar, path);
    const json = <T>(r: { text: string }) => JSON.parse(r.text) as T;
    /** An answer's start and what the gateway logged failing (a failed answer names its cause). */
    const said = (r: { text: string }) => {
      const failed = gatewayLog.filter((l) => l.level >= 50).map((l) => `${l.msg} (${(l.err as { message?: string } | undefined)?.message ?? ''})`);
      return `${r.text.slice(0, 300)}${failed.length ? `; the gateway logged: ${failed.join('; ')}` : ''}`;
    };

    /** Every file of the admin's, from Open WebUI's own search (every user's while its bypass is on: kept to theirs). */
    async function ownFiles(): Promise<FileRec[]> {
      const out: FileRec[] = [];
      for (let skip = 0; ; skip += 1000) {
        const r = await direct(`/api/v1/files/search?filename=*&content=false&limit=1000&skip=${skip}`);
        if (r.status === 404) break;
        const batch = json<FileRec[]>(r);
        out.push(...batch.filter((f) => f.user_id === adminId));
        if (batch.length < 1000) break;
      }
      return out;
    }

    /** Every rating of the admin's, from Open WebUI's own /feedbacks/user. */
    async function ownRatings(): Promise<Rating[]> {
      const out: Rating[] = [];
      for (let page = 1; ; page++) {
        const r = json<{ items: Rating[]; total: number }>(await direct(`/api/v1/evaluations/feedbacks/user?page=${page}`));
        out.push(...r.items);
        if (page * 30 >= r.total) return out;
      }
    }

    before(async function () {
      this.timeout(900_000);
      model = await startCannedModel();
      owui = await startVolumeOpenWebUI({ spec: SPEC, flags, env: cannedModelConnection(model) });
      const port = await freePort();
      url = `http://127.0.0.1:${port}`;
      idp = await startIdp({ clients: [gatewayClient(url)], accounts: [...demoAccounts, ...volumeAccounts(USERS)] });
      providersDir = mkdtempSync(join(tmpdir(), 'volume-'));
      const providersFile = join(providersDir, 'providers.json');
      writeFileSync(providersFile, JSON.stringify(demoIdentityProviders));
      const settings = loadSettings(
        { ...worldEnv({ upstreamUrl: owui.url, publicUrl: url, issuer: idp.issuer, providersFile }), SESSION_SECRET },
        { stageFiles: false },
      );
      const obs = capturingObservability();
      gatewayLog = obs.lines;
      gateway = await createGateway(settings, { obs });
      await gateway.start(port, '127.0.0.1');
      admin = await signIn(url, VOLUME_ADMIN.username, VOLUME_ADMIN.password);
      const signedIn = await fetch(`${owui.url}/api/v1/auths/signin`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-email': VOLUME_ADMIN.email, 'x-forwarded-role': 'admin' },
        body: JSON.stringify({ email: '', password: '' }),
      });
      ({ token, id: adminId } = (await signedIn.json()) as { token: string; id: string });
    });
    after(async () => {
      await gateway?.close();
      await idp?.close();
      await owui?.close();
      await model?.close();
      if (providersDir) rmSync(providersDir, { recursive: true, force: true });
    });

    it('the platform holds the volume, and Open WebUI is set as the title says (its own answers, without the gateway)', async () => {
      expect(owui.seed.counts).to.include({ files: 2_600, ratings: 4_400 });
      expect(owui.seed.bytes.chats).to.be.greaterThan(64 * MiB);
      const count = json<number>(await direct('/api/v1/files/count'));
      expect(count).to.equal(flags.BYPASS_ADMIN_ACCESS_CONTROL ? 2_600 : 130);
    });

    it('the files list: every page exactly the admin\u2019s files in Open WebUI\u2019s order, the total theirs (more than 2,000 files of everyone)', async () => {
      const own = await ownFiles();
      expect(own).to.have.length(130);
      const order = [...own].sort((a, b) => b.updated_at - a.updated_at || (a.id < b.id ? 1 : -1)).map((f) => f.id);
      const seen: string[] = [];
      for (let page = 1; page <= 3; page++) {
        const r = await through(`/api/v1/files/?page=${page}${page === 2 ? '&content=false' : ''}`);
        expect(r.status, said(r)).to.equal(200);
        const body = json<{ items: FileRec[]; total: number }>(r);
        expect(body.total).to.equal(130);
        expect(body.items.every((f) => f.user_id === adminId)).to.equal(true);
        expect(
          body.items.every((f) => 'content' in f.data === (page !== 2)),
          'the text as asked',
        ).to.equal(true);
        seen.push(...body.items.map((f) => f.id));
        // with Open WebUI's bypass off its own page is the answer, byte for byte
        if (!flags.BYPASS_ADMIN_ACCESS_CONTROL)
          expect(r.text).to.equal((await direct(`/api/v1/files/?page=${page}${page === 2 ? '&content=false' : ''}`)).text);
      }
      expect(seen).to.deep.equal(order);
    });

    it('the files count and search: exactly the admin\u2019s, a search of other users\u2019 names 404', async () => {
      expect(json<number>(await through('/api/v1/files/count'))).to.equal(130);
      const hits = json<FileRec[]>(await through('/api/v1/files/search?filename=admin-file-0000*&content=false&skip=2&limit=5'));
      const want = (await ownFiles())
        .filter((f) => f.filename.startsWith('admin-file-0000'))
        .sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? 1 : -1))
        .slice(2, 7)
        .map((f) => f.id);
      expect(hits.map((f) => f.id)).to.deep.equal(want);
      const all = json<FileRec[]>(await through('/api/v1/files/search?filename=*&limit=1000'));
      expect(all).to.have.length(130);
      expect(all.every((f) => f.user_id === adminId)).to.equal(true);
      expect((await through('/api/v1/files/search?filename=vol-001-file-*')).status).to.equal(404);
    });

    it('the model overview: the tags of the admin\u2019s own chats that used the model, counted over all of them (their chats over 64 MiB)', async () => {
      const r = await through(`/api/v1/analytics/models/${MODEL}/overview?days=30`);
      expect(r.status, said(r)).to.equal(200);
      const got = json<{ history: unknown[]; tags: Array<{ tag: string; count: number }> }>(r);
      // the truth: the admin's own usage lines, straight at Open WebUI
      const counts = new Map<string, number>();
      for (let page = 1; ; page++) {
        const lines = json<{ items: Array<{ history_models: Record<string, number>; tags: string[] }>; total: number }>(
          await direct(`/api/v1/chats/stats/usage?items_per_page=1000&page=${page}`),
        );
        for (const l of lines.items) if (MODEL in l.history_models) for (const t of l.tags) counts.set(t, (counts.get(t) ?? 0) + 1);
        if (page * 1000 >= lines.total) break;
      }
      expect(new Map(got.tags.map((t) => [t.tag, t.count]))).to.deep.equal(new Map([...counts].sort((a, b) => b[1] - a[1]).slice(0, 10)));
      expect(got.tags.map((t) => t.tag)).to.include.members(ADMIN_ONLY_TAGS);
      expect(got.tags.some((t) => OTHERS_ONLY_TAGS.includes(t.tag))).to.equal(false);
      expect(got.history).to.deep.equal(json<{ history: unknown[] }>(await direct(`/api/v1/analytics/models/${MODEL}/overview?days=30`)).history);
      expect((await through(`/api/v1/analytics/models/${PRIVATE_MODEL}/overview`)).status, 'another user\u2019s private model').to.equal(403);
    });

    it('the leaderboard: Open WebUI\u2019s ratings of the models the admin may see, each one\u2019s top tags of the admin\u2019s own ratings (more than 1,200 of them)', async () => {
      const r = await through('/api/v1/evaluations/leaderboard');
      expect(r.status, said(r)).to.equal(200);
      const got = json<{ entries: Array<{ model_id: string; rating: number; won: number; lost: number; top_tags: Array<{ tag: string; count: number }> }> }>(r);
      const upstream = json<{ entries: Array<{ model_id: string; rating: number; won: number; lost: number }> }>(
        await direct('/api/v1/evaluations/leaderboard'),
      );
      expect(got.entries.map((e) => e.model_id).sort()).to.deep.equal([ADMIN_MODEL, MODEL].sort());
      const mine = await ownRatings();
      expect(mine.length).to.equal(1_300);
      for (const e of got.entries) {
        const u = upstream.entries.find((x) => x.model_id === e.model_id)!;
        expect({ rating: e.rating, won: e.won, lost: e.lost }).to.deep.equal({ rating: u.rating, won: u.won, lost: u.lost });
        const counts = new Map<string, number>();
        for (const f of mine) if (f.data.model_id === e.model_id) for (const t of f.data.tags ?? []) counts.set(t, (counts.get(t) ?? 0) + 1);
        for (const t of e.top_tags) expect(t.count, t.tag).to.equal(counts.get(t.tag));
        expect(e.top_tags.map((t) => t.count)).to.deep.equal([...counts.values()].sort((a, b) => b - a).slice(0, 5));
      }
    });

    it('the ratings list, its total and ids: exactly the admin\u2019s own ratings, page after page', async () => {
      const mine = new Set((await ownRatings()).map((f) => f.id));
      const listed: string[] = [];
      for (let page = 1; ; page++) {
        const r = json<{ items: Rating[]; total: number }>(await through(`/api/v1/evaluations/feedbacks/list?order_by=updated_at&direction=desc&page=${page}`));
        expect(r.total).to.equal(1_300);
        expect(r.items.every((f) => f.user_id === adminId)).to.equal(true);
        listed.push(...r.items.map((f) => f.id));
        if (r.items.length < 30) break;
      }
      expect(listed).to.have.length(1_300);
      expect(new Set(listed)).to.deep.equal(mine);
      const ofModelAnswer = await through(`/api/v1/evaluations/feedbacks/list?model_id=${ADMIN_MODEL}`);
      expect(ofModelAnswer.status, said(ofModelAnswer)).to.equal(200);
      const ofModel = json<{ items: Rating[]; total: number }>(ofModelAnswer);
      expect(ofModel.items.every((f) => f.data.model_id === ADMIN_MODEL)).to.equal(true);
      const ids = json<Array<{ id: string; user_id: string }>>(await through('/api/v1/evaluations/feedbacks/all/ids'));
      expect(new Set(ids.map((i) => i.id))).to.deep.equal(mine);
    });

    it('the ratings export: every rating of the admin\u2019s own with its chat, none of anyone else\u2019s, though Open WebUI\u2019s is over 64 MiB', async () => {
      const upstream = await fetch(`${owui.url}/api/v1/evaluations/feedbacks/all/export`, { headers: { authorization: `Bearer ${token}` } });
      const all = Buffer.from(await upstream.arrayBuffer());
      expect(all.length).to.be.greaterThan(64 * MiB);
      const want = (JSON.parse(all.toString('utf8')) as Rating[]).filter((f) => f.user_id === adminId);
      const r = await fetch(`${url}/api/v1/evaluations/feedbacks/all/export`, { headers: { cookie: admin.header('/') } });
      expect(r.status).to.equal(200);
      const got = (await r.json()) as Rating[];
      expect(got).to.have.length(1_300);
      expect(got).to.deep.equal(want);
    });

    it(`${USERS} users listing at once: each their own files only`, async () => {
      const accounts = volumeAccounts(USERS);
      const jars = await Promise.all(accounts.map((a) => signIn(url, a.username, a.password)));
      const ids = await Promise.all(jars.map(async (j) => json<{ id: string }>(await through('/api/v1/auths/', j)).id));
      const answers = await Promise.all(jars.map((j) => through('/api/v1/files/?content=false', j)));
      answers.forEach((a, k) => {
        const body = json<{ items: FileRec[]; total: number }>(a);
        expect(body.items.length).to.be.greaterThan(0);
        expect(
          body.items.every((f) => f.user_id === ids[k]),
          accounts[k]!.username,
        ).to.equal(true);
      });
    });
  });
}
