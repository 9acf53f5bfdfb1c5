// How long a change of POLICY_FILE takes to be applied by two gateway processes following one file,
// each way a file may change (docs/operating/operations.md, "Flipping a switch"; bench/README.md).
// `node --import tsx bench/policy-flip.ts [ROUNDS]`.
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep, spawnChild, stopAll, type Child } from './proc.js';

const ROUNDS = Number(process.argv[2] ?? 10);
const dir = mkdtempSync(join(tmpdir(), 'policy-flip-'));
const text = (bypass: boolean) => `CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "${bypass}"\nCHATUI_ENABLE_ADMIN_EXPORT: "false"\n`;

interface Way {
  name: string;
  checkMs: number;
  /** where POLICY_FILE is, relative to `dir`, and how it starts */
  layout(): string;
  /** the change; `signal` is then sent when set */
  change(bypass: boolean): void;
  signal?: boolean;
}

let generation = 0;
const configMap = (bypass: boolean) => {
  const name = `..2026_${++generation}`;
  mkdirSync(join(dir, 'cm', name));
  writeFileSync(join(dir, 'cm', name, 'policy.yaml'), text(bypass));
  return name;
};
const repointed = (bypass: boolean) => {
  const name = `release-${++generation}`;
  mkdirSync(join(dir, 'rp', name));
  writeFileSync(join(dir, 'rp', name, 'policy.yaml'), text(bypass));
  symlinkSync(name, join(dir, 'rp', 'current.tmp'));
  renameSync(join(dir, 'rp', 'current.tmp'), join(dir, 'rp', 'current'));
};

const WAYS: Way[] = [
  {
    name: 'written in place',
    checkMs: 1_000,
    layout: () => (writeFileSync(join(dir, 'policy.yaml'), text(false)), 'policy.yaml'),
    change: (b) => writeFileSync(join(dir, 'policy.yaml'), text(b)),
  },
  {
    name: 'renamed over (an editor)',
    checkMs: 1_000,
    layout: () => (writeFileSync(join(dir, 'policy.yaml'), text(false)), 'policy.yaml'),
    change: (b) => {
      writeFileSync(join(dir, '.policy.yaml.tmp'), text(b));
      renameSync(join(dir, '.policy.yaml.tmp'), join(dir, 'policy.yaml'));
    },
  },
  {
    name: 'ConfigMap ..data swap',
    checkMs: 1_000,
    layout: () => {
      mkdirSync(join(dir, 'cm'));
      symlinkSync(configMap(false), join(dir, 'cm', '..data'));
      symlinkSync('..data/policy.yaml', join(dir, 'cm', 'policy.yaml'));
      return 'cm/policy.yaml';
    },
    change: (b) => {
      symlinkSync(configMap(b), join(dir, 'cm', '..data_tmp'));
      renameSync(join(dir, 'cm', '..data_tmp'), join(dir, 'cm', '..data'));
    },
  },
  {
    name: 'directory re-pointed (the poll, 1000 ms)',
    checkMs: 1_000,
    layout: () => (mkdirSync(join(dir, 'rp')), repointed(false), 'rp/current/policy.yaml'),
    change: repointed,
  },
  {
    name: 'SIGHUP (poll at 60 s)',
    checkMs: 60_000,
    layout: () => (mkdirSync(join(dir, 'rp')), repointed(false), 'rp/current/policy.yaml'),
    change: repointed,
    signal: true,
  },
];

async function instance(n: number, file: string, checkMs: number): Promise<{ child: Child; url: string }> {
  const env = {
    PATH: process.env.PATH,
    HOST: '127.0.0.1',
    PORT: '0',
    UPSTREAM_URL: 'http://127.0.0.1:9',
    OIDC_ISSUER_URL: 'http://127.0.0.1:9/realms/platform',
    OIDC_CLIENT_ID: 'bench',
    OIDC_CLIENT_SECRET: 'bench-secret',
    SESSION_SECRET: 'bench-session-secret-0123456789abcdef',
    DRIFT_CHECK_SECONDS: '0',
    POLICY_FILE: join(dir, file),
    POLICY_FILE_CHECK_MS: String(checkMs),
  };
  const { child, info } = await spawnChild(`gateway-${n}`, process.execPath, ['--import', 'tsx', 'gateway/main.ts'], {
    env,
    logFile: join(dir, `gateway-${n}.log`),
    ready: (line) => (line.includes('"gateway listening"') ? /"url":"(http:\/\/[^"]+)"/.exec(line)?.[1] : undefined),
  });
  return { child, url: info };
}

const policyOf = async (url: string) => ((await (await fetch(`${url}/readyz`)).json()) as { policy: { version: string; appliedAt: string } }).policy;
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `min ${s[0]} ms, median ${s[Math.floor(s.length / 2)]} ms, max ${s.at(-1)} ms`;
};

try {
  for (const way of WAYS) {
    rmSync(join(dir, 'cm'), { recursive: true, force: true });
    rmSync(join(dir, 'rp'), { recursive: true, force: true });
    const file = way.layout();
    const gateways = [await instance(1, file, way.checkMs), await instance(2, file, way.checkMs)];
    await sleep(300);
    const took: number[][] = [[], []];
    for (let round = 0; round < ROUNDS; round++) {
      const before = await Promise.all(gateways.map((g) => policyOf(g.url)));
      const writtenAt = Date.now();
      way.change(round % 2 === 0);
      if (way.signal) for (const g of gateways) g.child.proc.kill('SIGHUP');
      for (const [i, g] of gateways.entries()) {
        let now = before[i]!;
        const deadline = Date.now() + way.checkMs + 5_000;
        while (now.version === before[i]!.version && Date.now() < deadline) {
          await sleep(5);
          now = await policyOf(g.url);
        }
        if (now.version === before[i]!.version) throw new Error(`${way.name}: instance ${i + 1} did not apply round ${round + 1}`);
        took[i]!.push(Date.parse(now.appliedAt) - writtenAt);
      }
      await sleep(200);
    }
    for (const [i, t] of took.entries()) console.log(`${way.name.padEnd(42)} instance ${i + 1}: ${stats(t)} (${ROUNDS} flips)`);
    for (const g of gateways) await g.child.stop();
  }
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
