// A flip of POLICY_FILE under load on two instances: no request fails, none is judged under a mix of
// the two policies, and every request that starts once the bound has passed is judged under the new
// policy, on both. The bound is the one the gateway promises: POLICY_FILE_CHECK_MS plus the settle
// time (gateway/policy-watch.ts), however the change is seen; the time each instance took is
// printed. Two gateway processes (gateway/main.ts) read the provider list's two live settings,
// whose answer shows both at once; two in-process gateways in front of the Open WebUI stand-in carry
// an admin's file list, which the bypass decides.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings } from '../../config/settings.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { POLICY_SETTLE_MS } from '../../gateway/policy-watch.js';
import { demoIdentityProviders } from '../../sandbox/demo-realm.js';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { baseEnv, capturingObservability, gatewayProcess, headerAuthenticator } from '../support/gateway-harness.js';
import { PEOPLE, policyText } from '../support/live-policy.js';
import { seedFiles, seedUsers } from '../support/raw-http.js';
import { sleep } from '../support/wait.js';

const CHECK_MS = 500;
/** What the gateway promises: the poll's period and the settle time. */
const BOUND_MS = CHECK_MS + POLICY_SETTLE_MS;
/** Timers fire late on a loaded, shared machine: this much is allowed on top, and no more. */
const TIMER_LAG_MS = 250;

interface Answer {
  instance: number;
  /** ms after the file was written (negative: before) that the request started */
  start: number;
  status: number;
  judged: 'old' | 'new' | 'mix' | 'failed';
  why?: string;
}

/** `loops` clients per instance asking `ask` back to back until `stop`; each answer classed. */
async function load(
  urls: string[],
  loops: number,
  ask: (url: string) => Promise<{ status: number; judged: Answer['judged'] }>,
  written: () => number,
  stop: () => boolean,
): Promise<Answer[]> {
  const answers: Answer[] = [];
  await Promise.all(
    urls.flatMap((url, instance) =>
      Array.from({ length: loops }, async () => {
        while (!stop()) {
          const start = performance.now() - written();
          const got = await ask(url).catch((err: Error) => ({
            status: 0,
            judged: 'failed' as const,
            why: `${err.message} ${String((err.cause as Error)?.message ?? '')}`,
          }));
          answers.push({ instance, start, ...got });
        }
      }),
    ),
  );
  return answers;
}

/** Every answer ok and judged under one policy; every request that started after the bound judged under the new one. */
function judge(answers: Answer[], instances: number) {
  expect(
    answers.filter((a) => a.status !== 200 || a.judged === 'failed'),
    'failed requests',
  ).to.deep.equal([]);
  expect(
    answers.filter((a) => a.judged === 'mix'),
    'answers judged under a mix of two policies',
  ).to.deep.equal([]);
  for (let i = 0; i < instances; i++) {
    const mine = answers.filter((a) => a.instance === i);
    const lastOld = Math.max(...mine.filter((a) => a.judged === 'old').map((a) => a.start));
    const firstNew = Math.min(...mine.filter((a) => a.judged === 'new').map((a) => a.start));
    console.log(
      `      [live policy] instance ${i + 1}: ${mine.length} requests; last judged under the old policy started ${lastOld.toFixed(0)} ms after the write, first under the new ${firstNew.toFixed(0)} ms`,
    );
    expect(mine.filter((a) => a.judged === 'old').length, 'requests before the flip').to.be.greaterThan(0);
    expect(
      mine.filter((a) => a.start > BOUND_MS + TIMER_LAG_MS && a.judged !== 'new'),
      `instance ${i + 1}: requests started after the bound (${BOUND_MS} ms) and judged under the old policy`,
    ).to.deep.equal([]);
    expect(mine.filter((a) => a.start > BOUND_MS + TIMER_LAG_MS).length, 'requests after the bound').to.be.greaterThan(0);
  }
}

describe('live settings: a flip under load on two instances', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'live-policy-two-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('two gateway processes, the provider list (welcome page and direct login in one answer): none failed, none mixed, all new after the bound', async () => {
    const file = join(dir, 'policy.yaml');
    writeFileSync(file, policyText({ bypass: false, exportOn: false, welcome: false }));
    const providers = join(dir, 'providers.json');
    writeFileSync(providers, JSON.stringify(demoIdentityProviders));
    const env = {
      ...baseEnv('http://127.0.0.1:9', { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: undefined, CHATUI_ENABLE_ADMIN_EXPORT: undefined }),
      HOST: '127.0.0.1',
      PORT: '0',
      DRIFT_CHECK_SECONDS: '0',
      LOG_LEVEL: 'warn',
      IDP_PROVIDERS_FILE: providers,
      POLICY_FILE: file,
      POLICY_FILE_CHECK_MS: String(CHECK_MS),
    };
    // info for the line that names the port, then warn: a line per request would weigh on the load
    const gws = await Promise.all([gatewayProcess({ ...env, LOG_LEVEL: 'info' }), gatewayProcess({ ...env, LOG_LEVEL: 'info' })]);
    try {
      const urls = gws.map((g) => `http://127.0.0.1:${g.port}/api/v1/auth-providers/`);
      let writtenAt = Infinity;
      let stopAt = Infinity;
      const running = load(
        urls,
        8,
        async (url) => {
          const res = await fetch(url);
          const body = (await res.json()) as { welcome_page: boolean; providers: Array<{ alias: string }> };
          const direct = body.providers.some((p) => p.alias === 'direct-login');
          const judged =
            !body.welcome_page && !direct && body.providers.length > 0 ? 'old' : body.welcome_page && direct && body.providers.length === 1 ? 'new' : 'mix';
          return { status: res.status, judged };
        },
        () => (writtenAt === Infinity ? performance.now() + 1e9 : writtenAt),
        () => performance.now() > stopAt,
      );
      await sleep(1_000);
      writtenAt = performance.now();
      writeFileSync(file, policyText({ bypass: false, exportOn: false, welcome: true }));
      stopAt = writtenAt + BOUND_MS + TIMER_LAG_MS + 1_500;
      const answers = await running;
      judge(answers, 2);
      for (const g of gws) expect(g.exited(), g.output().slice(-2000)).to.equal(null);
    } finally {
      for (const g of gws) g.child.kill('SIGKILL');
    }
  });

  describe('two gateways in front of one Open WebUI (the stand-in, its own bypass on)', () => {
    let upstream: OpenWebUIStandIn;
    let gateways: Gateway[] = [];
    afterEach(async () => {
      await Promise.all(gateways.map((g) => g.close()));
      gateways = [];
      await upstream?.close();
    });

    it('an admin\u2019s file list, bypass on -> off: none failed, none mixed, every list after the bound only the admin\u2019s own files', async () => {
      const file = join(dir, 'policy.yaml');
      writeFileSync(file, policyText({ bypass: true, exportOn: false }));
      upstream = await startOpenWebUI({ users: seedUsers, files: seedFiles(), bypassAdminAccessControl: true, enableAdminExport: true });
      writeFileSync(join(dir, 'providers.json'), JSON.stringify(demoIdentityProviders));
      const settings = loadSettings(
        baseEnv(upstream.url, {
          CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: undefined,
          CHATUI_ENABLE_ADMIN_EXPORT: undefined,
          POLICY_FILE: file,
          POLICY_FILE_CHECK_MS: String(CHECK_MS),
          DRIFT_CHECK_SECONDS: '0',
          IDP_PROVIDERS_FILE: join(dir, 'providers.json'),
        }),
        { stageFiles: false },
      );
      const urls: string[] = [];
      for (let i = 0; i < 2; i++) {
        const g = await createGateway(settings, { obs: capturingObservability(), authenticator: headerAuthenticator(PEOPLE) });
        gateways.push(g);
        urls.push(`${(await g.listen(0, '127.0.0.1')).url}/api/v1/files/`);
      }
      let writtenAt = Infinity;
      let stopAt = Infinity;
      const running = load(
        urls,
        6,
        async (url) => {
          const res = await fetch(url, { headers: { 'x-test-caller': 'admin' } });
          const body = (await res.json()) as { items: Array<{ user_id: string }>; total: number };
          const own = body.items.every((f) => f.user_id === 'u-admin');
          // 15 files in all, 6 of them the admin's; a list and its count from two policies would disagree
          const judged = body.total === 15 && body.items.length === 15 ? 'old' : own && body.total === 6 && body.items.length === 6 ? 'new' : 'mix';
          return { status: res.status, judged };
        },
        () => (writtenAt === Infinity ? performance.now() + 1e9 : writtenAt),
        () => performance.now() > stopAt,
      );
      await sleep(1_000);
      writtenAt = performance.now();
      writeFileSync(file, policyText({ bypass: false, exportOn: false }));
      stopAt = writtenAt + BOUND_MS + TIMER_LAG_MS + 1_500;
      judge(await running, 2);
    });
  });
});
