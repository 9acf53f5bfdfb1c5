// Invalid settings stop startup naming every bad variable; the stage files hold the defaults.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { loadSettings, SettingsError, deriveAdminUrl, describeSettings } from '../../config/settings.js';
import { parseEnvFile } from '../../config/env.js';
import { parseTenantAliases } from '../../config/tenant-aliases.js';

const complete = {
  UPSTREAM_URL: 'http://open-webui:8080',
  OIDC_ISSUER_URL: 'https://kc.example/realms/platform',
  OIDC_CLIENT_ID: 'chat-gateway',
  OIDC_CLIENT_SECRET: 'secret',
  SESSION_SECRET: 'a'.repeat(32),
  CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
  CHATUI_ENABLE_ADMIN_EXPORT: 'false',
};

const problems = (env: Record<string, string | undefined>, stageFiles = false): string[] => {
  try {
    loadSettings(env, { stageFiles });
  } catch (err) {
    if (err instanceof SettingsError) return err.problems;
    throw err;
  }
  return [];
};

describe('settings: no public secrets, no plain-http realm outside a trusted place', () => {
  const devFile = parseEnvFile(readFileSync('config/dev.env', 'utf8'));
  const real = { ...complete, PUBLIC_URL: 'https://chat.example' };

  it('a gateway with real connection settings never takes its secrets from config/dev.env', () => {
    // Regression: NODE_ENV unset + UPSTREAM_URL set used the public dev-only secrets: anyone could forge an admin session.
    const found = problems({ ...real, OIDC_CLIENT_SECRET: undefined, SESSION_SECRET: undefined }, true);
    expect(
      found.some((p) => p.startsWith('SESSION_SECRET: required')),
      found.join('\n'),
    ).to.equal(true);
    expect(
      found.some((p) => p.startsWith('OIDC_CLIENT_SECRET: required')),
      found.join('\n'),
    ).to.equal(true);
  });

  it('the public dev-only values stop startup, naming the variable, unless PUBLIC_URL is loopback outside production', () => {
    const dev = { SESSION_SECRET: devFile.SESSION_SECRET!, OIDC_CLIENT_SECRET: devFile.OIDC_CLIENT_SECRET! };
    expect(dev.SESSION_SECRET).to.match(/^dev-only-/);
    const remote = problems({ ...real, ...dev });
    expect(remote.filter((p) => /dev-only value/.test(p)).map((p) => p.split(':')[0])).to.deep.equal(['OIDC_CLIENT_SECRET', 'SESSION_SECRET']);
    expect(problems({ ...real, ...dev, NODE_ENV: 'production', PUBLIC_URL: 'http://localhost:8080' }).some((p) => /dev-only value/.test(p))).to.equal(true);
    // docker compose with the dev stage file on this machine
    for (const local of ['http://localhost:8080', 'http://127.0.0.1:8080', 'http://[::1]:8080', undefined])
      expect(problems({ ...complete, ...dev, PUBLIC_URL: local }), String(local)).to.deep.equal([]);
    expect(
      problems({ ...real, SESSION_SECRET: `${'b'.repeat(32)},${dev.SESSION_SECRET}` }).some((p) => p.startsWith('SESSION_SECRET: the public dev-only')),
    ).to.equal(true);
  });

  it('production refuses an http: issuer unless it is loopback or ALLOW_INSECURE_ISSUER=true', () => {
    const prod = { ...real, NODE_ENV: 'production', OIDC_ISSUER_URL: 'http://kc.internal/realms/platform' };
    expect(problems(prod).some((p) => p.startsWith('OIDC_ISSUER_URL: an http: issuer is refused'))).to.equal(true);
    expect(problems({ ...prod, ALLOW_INSECURE_ISSUER: 'true' })).to.deep.equal([]);
    expect(problems({ ...prod, OIDC_ISSUER_URL: 'http://127.0.0.1:8081/realms/platform' })).to.deep.equal([]);
    expect(problems({ ...prod, OIDC_ISSUER_URL: 'https://kc.example/realms/platform' })).to.deep.equal([]);
    expect(problems({ ...prod, NODE_ENV: 'development' })).to.deep.equal([]);
  });
});

describe('settings: REDIS_URL', () => {
  it('takes redis:// and rediss:// with or without credentials; anything else stops startup naming it, without echoing a password', () => {
    expect(loadSettings({ ...complete, REDIS_URL: 'redis://redis:6379/0' }, { stageFiles: false }).redisUrl).to.equal('redis://redis:6379/0');
    expect(loadSettings({ ...complete, REDIS_URL: 'rediss://u:pw@cache.example:6380' }, { stageFiles: false }).redisUrl).to.equal(
      'rediss://u:pw@cache.example:6380',
    );
    expect(loadSettings({ ...complete, REDIS_URL: '' }, { stageFiles: false }).redisUrl).to.equal(undefined);
    for (const bad of ['http://redis:6379', 'redis-host:6379', 'redis://']) {
      const found = problems({ ...complete, REDIS_URL: bad });
      expect(
        found.some((p) => p.startsWith('REDIS_URL:')),
        `${bad}: ${found.join('; ')}`,
      ).to.equal(true);
    }
    expect(problems({ ...complete, REDIS_URL: 'http://u:hunter2@redis:6379' }).join('\n')).to.not.include('hunter2');
    expect(describeSettings({ ...complete, REDIS_URL: 'redis://u:hunter2@redis:6379/0' }).REDIS_URL).to.equal('redis://[redacted]@redis:6379/0');
  });
});

describe('settings: REDIS_URL whose password holds a raw \u2018#\u2019, \u2018?\u2019 or \u2018/\u2019', () => {
  it('is refused naming REDIS_URL and saying to percent-encode, and shown with everything before the last \u2018@\u2019 taken out', () => {
    const url = 'redis://admin:p@ss#word@redis:6379';
    const found = problems({ ...complete, REDIS_URL: url }).join('\n');
    expect(found).to.match(/^REDIS_URL: .*percent-encode/m);
    expect(found).to.not.match(/ss#word|word@/);
    expect(describeSettings({ ...complete, REDIS_URL: url }).REDIS_URL).to.equal('redis://[redacted]@redis:6379');
    // a digit port and a path: the rest of the password would be the database
    expect(problems({ ...complete, REDIS_URL: 'redis://admin:12/secret@redis:6379' }).join('\n')).to.match(/^REDIS_URL: /m);
    expect(describeSettings({ ...complete, REDIS_URL: 'redis://admin:12/secret@redis:6379' }).REDIS_URL).to.equal('redis://[redacted]@redis:6379');
    // read as written: taken
    expect(loadSettings({ ...complete, REDIS_URL: 'redis://u:p@ss:w%23rd@redis:6379' }, { stageFiles: false }).redisUrl).to.equal(
      'redis://u:p%40ss%3Aw%23rd@redis:6379',
    );
  });
});

describe('settings: Redis Sentinel and Cluster', () => {
  const load = (env: Record<string, string>) => loadSettings({ ...complete, ...env }, { stageFiles: false });

  it('REDIS_SENTINELS with REDIS_SENTINEL_NAME: the sentinels (26379 unless told), the data nodes\u2019 credentials, the sentinels\u2019 password, TLS for rediss:// entries', () => {
    const s = load({
      REDIS_SENTINELS: 'sentinel-0:26380, sentinel-1,[fd00::5]:26379',
      REDIS_SENTINEL_NAME: 'mymaster',
      REDIS_USERNAME: 'gateway',
      REDIS_PASSWORD: 'p@ss#word ',
      REDIS_SENTINEL_USERNAME: 'watcher',
      REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
    });
    expect(s.redisSentinel).to.deep.equal({
      sentinels: [
        { host: 'sentinel-0', port: 26380 },
        { host: 'sentinel-1', port: 26379 },
        { host: 'fd00::5', port: 26379 },
      ],
      name: 'mymaster',
      tls: false,
      username: 'gateway',
      password: 'p@ss#word ',
      sentinelUsername: 'watcher',
      sentinelPassword: 'sentinel-secret',
    });
    expect(s.redisUrl).to.equal(undefined);
    expect(s.redisCluster).to.equal(undefined);
    const tls = load({ REDIS_SENTINELS: 'rediss://s0:26379,rediss://s1:26379', REDIS_SENTINEL_NAME: 'mymaster' }).redisSentinel!;
    expect(tls.tls).to.equal(true);
    expect(tls.password).to.equal(undefined);
  });

  it('REDIS_CLUSTER_NODES: some nodes to find the cluster from (6379 unless told), TLS for rediss:// entries', () => {
    expect(load({ REDIS_CLUSTER_NODES: 'redis-0:7000,redis-1', REDIS_PASSWORD: 'pw' }).redisCluster).to.deep.equal({
      nodes: [
        { host: 'redis-0', port: 7000 },
        { host: 'redis-1', port: 6379 },
      ],
      tls: false,
      username: undefined,
      password: 'pw',
    });
    expect(load({ REDIS_CLUSTER_NODES: 'rediss://redis-0:7000' }).redisCluster!.tls).to.equal(true);
  });

  it('one topology at most, and only the variables it reads: every problem stops startup naming its variable', () => {
    const cases: Array<[Record<string, string>, string[]]> = [
      [
        { REDIS_URL: 'redis://r:6379', REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm' },
        ['REDIS_URL: set together with REDIS_SENTINELS', 'REDIS_SENTINELS: set together with REDIS_URL'],
      ],
      [
        { REDIS_SENTINELS: 's:26379', REDIS_CLUSTER_NODES: 'n:6379', REDIS_SENTINEL_NAME: 'm' },
        ['REDIS_CLUSTER_NODES: set together with REDIS_SENTINELS', 'REDIS_SENTINELS: set together with REDIS_CLUSTER_NODES'],
      ],
      [{ REDIS_SENTINELS: 's:26379' }, ['REDIS_SENTINEL_NAME: required with REDIS_SENTINELS']],
      [{ REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'two words' }, ['REDIS_SENTINEL_NAME: must be one word']],
      [{ REDIS_SENTINEL_NAME: 'm' }, ['REDIS_SENTINEL_NAME: read only with REDIS_SENTINELS']],
      [{ REDIS_CLUSTER_NODES: 'n:6379', REDIS_SENTINEL_PASSWORD: 'x' }, ['REDIS_SENTINEL_PASSWORD: read only with REDIS_SENTINELS']],
      [{ REDIS_URL: 'redis://r:6379', REDIS_PASSWORD: 'x' }, ['REDIS_PASSWORD: not read with REDIS_URL']],
      [{ REDIS_PASSWORD: 'x' }, ['REDIS_PASSWORD: read only with REDIS_SENTINELS or REDIS_CLUSTER_NODES']],
      [{ REDIS_CLUSTER_NODES: 'n:6379', REDIS_USERNAME: 'u' }, ['REDIS_USERNAME: needs REDIS_PASSWORD']],
      [{ REDIS_CLUSTER_NODES: 'n:6379', REDIS_SENTINEL_USERNAME: 'w' }, ['REDIS_SENTINEL_USERNAME: read only with REDIS_SENTINELS']],
      [{ REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm', REDIS_SENTINEL_USERNAME: 'w' }, ['REDIS_SENTINEL_USERNAME: needs REDIS_SENTINEL_PASSWORD']],
      [{ REDIS_CLUSTER_NODES: 'n:6379', REDIS_USERNAME: 'the gateway', REDIS_PASSWORD: 'x' }, ['REDIS_USERNAME: must be one word']],
      [{ REDIS_CLUSTER_NODES: 'n:6379,,m:6379' }, ['REDIS_CLUSTER_NODES: entry 2 of 3 is empty']],
      [{ REDIS_CLUSTER_NODES: 'n:6379/2' }, ['REDIS_CLUSTER_NODES: the entry "n:6379/2" holds more than host:port']],
      [{ REDIS_CLUSTER_NODES: 'http://n:6379' }, ['REDIS_CLUSTER_NODES: the entry "http://n:6379" is not redis:// or rediss://']],
      [{ REDIS_CLUSTER_NODES: 'n:port' }, ['REDIS_CLUSTER_NODES: the entry is not host:port']],
      [{ REDIS_CLUSTER_NODES: 'redis://a:1,rediss://b:2' }, ['REDIS_CLUSTER_NODES: mixes redis:// and rediss://']],
    ];
    for (const [env, expected] of cases) {
      const found = problems({ ...complete, ...env });
      for (const e of expected)
        expect(
          found.some((p) => p.startsWith(e)),
          `${JSON.stringify(env)}: ${found.join('; ')}`,
        ).to.equal(true);
    }
  });

  it('a password written into a list of nodes is refused without being echoed, and check-config shows the list redacted', () => {
    for (const list of ['u:hunter2@s0:26379', 'redis://u:hunter2@s0:26379', 'redis://:hunter2@s0:26379,s1:26379', 'u:hun#ter2@s0:26379']) {
      for (const name of ['REDIS_SENTINELS', 'REDIS_CLUSTER_NODES']) {
        const found = problems({ ...complete, [name]: list, ...(name === 'REDIS_SENTINELS' ? { REDIS_SENTINEL_NAME: 'm' } : {}) });
        expect(
          found.some((p) => p.startsWith(`${name}: `)),
          `${name}=${list}: ${found.join('; ')}`,
        ).to.equal(true);
        expect(found.join('\n')).to.not.match(/hunter2|hun#ter2/);
        expect(describeSettings({ ...complete, [name]: list })[name]).to.not.match(/hunter2|hun#ter2|ter2/);
      }
    }
    expect(describeSettings({ ...complete, REDIS_SENTINELS: 'u:hunter2@s0:26379,s1:26379' }).REDIS_SENTINELS).to.equal('[redacted]@s0:26379,s1:26379');
    expect(describeSettings({ ...complete, REDIS_PASSWORD: 'hunter2', REDIS_SENTINEL_PASSWORD: 'hunter3' })).to.deep.include({
      REDIS_PASSWORD: '[redacted]',
      REDIS_SENTINEL_PASSWORD: '[redacted]',
    });
  });
});

describe('settings: the stage file, read the same on every Node release the gateway supports', () => {
  const read = (text: string) => parseEnvFile(text);

  it('as shipped, it reads config/dev.env and config/prod.env as util.parseEnv does', () => {
    for (const file of ['config/dev.env', 'config/prod.env']) {
      const text = readFileSync(file, 'utf8');
      expect(read(text), file).to.deep.equal({ ...parseEnv(text) });
      expect(Object.keys(read(text)).length, file).to.be.greaterThan(8);
    }
  });

  it('comments, blank lines, `export`, quotes, spaces and CRLF', () => {
    const text = '# a comment\n\n  # an indented comment\nA=1\nexport B=2\nC="q v"\nD=\'s\'\r\n  E = sp  \nF=\nG=a=b\n';
    expect(read(text)).to.deep.equal({ A: '1', B: '2', C: 'q v', D: 's', E: 'sp', F: '', G: 'a=b' });
  });

  it('an indented comment is a comment: the setting after it is kept (Node 20\u2019s util.parseEnv loses it)', () => {
    expect(read('  # the switch below\nCHATUI_BYPASS_ADMIN_ACCESS_CONTROL=false\n')).to.deep.equal({ CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false' });
  });

  it('`#` inside an unquoted value is kept, as docker compose keeps it (util.parseEnv cuts the value there)', () => {
    expect(read('REDIS_SENTINEL_PASSWORD=p#ss\n')).to.deep.equal({ REDIS_SENTINEL_PASSWORD: 'p#ss' });
    expect(parseEnv('REDIS_SENTINEL_PASSWORD=p#ss\n')).to.deep.equal({ REDIS_SENTINEL_PASSWORD: 'p' });
  });

  it('a quote left open stays in its own line\u2019s value: the lines after it are settings of their own', () => {
    expect(read('A="open\nB=2\n')).to.deep.equal({ A: '"open', B: '2' });
  });

  it('one line is one setting: no multi-line values, no escapes, no names outside [A-Za-z_][A-Za-z0-9_]*', () => {
    expect(read('A="line1\nline2"\nB="x\\ny"\n1C=1\nD.E=1\nexporter F=1\n')).to.deep.equal({ A: '"line1', B: 'x\\ny' });
  });
});

describe('settings', () => {
  it('both stage files keep the two policy switches private', () => {
    for (const file of ['config/dev.env', 'config/prod.env']) {
      const env = parseEnvFile(readFileSync(file, 'utf8'));
      expect(env.CHATUI_BYPASS_ADMIN_ACCESS_CONTROL, file).to.equal('false');
      expect(env.CHATUI_ENABLE_ADMIN_EXPORT, file).to.equal('false');
    }
    const dev = loadSettings({ ...complete, CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: undefined, CHATUI_ENABLE_ADMIN_EXPORT: undefined });
    expect(dev.policy).to.include({ bypassAdminAccessControl: false, enableAdminExport: false });
    const prod = loadSettings({ ...complete, NODE_ENV: 'production', PUBLIC_URL: 'https://chat.example' });
    expect(prod.policy).to.include({ bypassAdminAccessControl: false, enableAdminExport: false });
  });

  it('POLICY_FILE: read at start over the stage file, the environment winning; a missing or invalid one stops startup naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'settings-policy-'));
    try {
      const file = join(dir, 'policy.yaml');
      writeFileSync(file, 'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "true"\nCHATUI_ENABLE_ADMIN_EXPORT: "true"\n');
      const s = loadSettings({ ...complete, CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: undefined, CHATUI_ENABLE_ADMIN_EXPORT: 'false', POLICY_FILE: file });
      expect(s.policy).to.include({ bypassAdminAccessControl: true, enableAdminExport: false });
      expect(s.policyWarnings).to.have.length(1);
      expect(s.policyWarnings[0]).to.match(/^CHATUI_ENABLE_ADMIN_EXPORT \(POLICY_FILE .*\): set in the environment too, which wins/);
      expect(problems({ ...complete, POLICY_FILE: join(dir, 'nothing.yaml') })).to.deep.equal([`POLICY_FILE ${join(dir, 'nothing.yaml')}: no such file`]);
      writeFileSync(file, 'LOG_LEVEL: loud\n');
      expect(problems({ ...complete, POLICY_FILE: file })).to.deep.equal([
        `LOG_LEVEL (POLICY_FILE ${file}): must be one of fatal, error, warn, info, debug, trace, silent (got "loud")`,
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the process environment overrides the stage file', () => {
    const s = loadSettings({ ...complete, CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'true', CHATUI_ENABLE_ADMIN_EXPORT: 'true' });
    expect(s.policy).to.include({ bypassAdminAccessControl: true, enableAdminExport: true });
  });

  it('accepts the CHATUI_* switches only as exactly true or false', () => {
    for (const bad of ['TRUE', 'False', '1', '0', 'yes', '', ' true']) {
      const p = problems({ ...complete, CHATUI_ENABLE_ADMIN_EXPORT: bad });
      expect(p.join('\n'), JSON.stringify(bad)).to.match(/^CHATUI_ENABLE_ADMIN_EXPORT: must be exactly 'true' or 'false'/m);
    }
    expect(problems({ ...complete, CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: undefined })).to.have.length(1);
  });

  it('UPSTREAM_RELEASE_POLICY: warn by default, refuse-admins or strict; anything else stops startup naming it', () => {
    expect(loadSettings(complete).policy.upstreamRelease).to.equal('warn');
    expect(loadSettings({ ...complete, UPSTREAM_RELEASE_POLICY: 'refuse-admins' }).policy.upstreamRelease).to.equal('refuse-admins');
    expect(loadSettings({ ...complete, UPSTREAM_RELEASE_POLICY: 'strict' }).policy.upstreamRelease).to.equal('strict');
    for (const bad of ['Strict', 'refuse', 'off', ' warn'])
      expect(problems({ ...complete, UPSTREAM_RELEASE_POLICY: bad }), bad).to.deep.equal([
        `UPSTREAM_RELEASE_POLICY: must be one of warn, refuse-admins, strict (got ${JSON.stringify(bad)})`,
      ]);
  });

  it('lists every problem at once, each naming its variable', () => {
    const p = problems({
      NODE_ENV: 'production',
      CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'TRUE',
      CHATUI_ENABLE_ADMIN_EXPORT: 'yes',
      SESSION_SECRET: 'short',
      IDP_TENANT_IDP_ALIASES: 'acme=a,acme=b',
      PORT: 'eighty',
      SHOW_IDP_LOGIN: 'maybe',
      UPSTREAM_URL: 'ftp://x',
      QUIET_GC_MS: '50',
    });
    const names = p.map((line) => line.split(':')[0]);
    for (const n of [
      'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL',
      'CHATUI_ENABLE_ADMIN_EXPORT',
      'SESSION_SECRET',
      'IDP_TENANT_IDP_ALIASES',
      'PORT',
      'SHOW_IDP_LOGIN',
      'UPSTREAM_URL',
      'OIDC_ISSUER_URL',
      'OIDC_CLIENT_ID',
      'OIDC_CLIENT_SECRET',
      'PUBLIC_URL',
      'QUIET_GC_MS',
    ])
      expect(names, n).to.include(n);
  });

  it('BEARER_INTROSPECTION (on by default) and BEARER_INTROSPECTION_CACHE_SECONDS (5 by default, 0 to 300): anything else stops startup naming it', () => {
    expect(loadSettings(complete).oidc).to.include({ bearerIntrospection: true, introspectionCacheSeconds: 5 });
    expect(loadSettings({ ...complete, BEARER_INTROSPECTION: 'false', BEARER_INTROSPECTION_CACHE_SECONDS: '0' }).oidc).to.include({
      bearerIntrospection: false,
      introspectionCacheSeconds: 0,
    });
    expect(loadSettings({ ...complete, BEARER_INTROSPECTION_CACHE_SECONDS: '300' }).oidc.introspectionCacheSeconds).to.equal(300);
    for (const bad of ['-1', '301', '2.5', 'five'])
      expect(problems({ ...complete, BEARER_INTROSPECTION_CACHE_SECONDS: bad }), bad).to.deep.equal([
        `BEARER_INTROSPECTION_CACHE_SECONDS: must be a whole number from 0 to 300 (got ${JSON.stringify(bad)})`,
      ]);
    for (const bad of ['on', 'off', 'maybe'])
      expect(problems({ ...complete, BEARER_INTROSPECTION: bad }), bad).to.deep.equal([
        `BEARER_INTROSPECTION: must be one of true/false/1/0/yes/no (got ${JSON.stringify(bad)})`,
      ]);
  });

  it('lenient booleans accept true/false/1/0/yes/no in any case', () => {
    for (const [v, want] of [
      ['YES', true],
      ['1', true],
      ['No', false],
      ['0', false],
      ['true', true],
    ] as const)
      expect(loadSettings({ ...complete, SHOW_IDP_LOGIN: v }, { stageFiles: false }).policy.showIdpLogin).to.equal(want);
  });

  it('runs the sandbox only without UPSTREAM_URL and outside production', () => {
    expect(loadSettings({ CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false', CHATUI_ENABLE_ADMIN_EXPORT: 'false' }, { stageFiles: false }).sandbox).to.equal(true);
    expect(loadSettings(complete, { stageFiles: false }).sandbox).to.equal(false);
    expect(problems({ NODE_ENV: 'production', CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false', CHATUI_ENABLE_ADMIN_EXPORT: 'false' }).join()).to.match(
      /UPSTREAM_URL: required/,
    );
  });

  it('parses tenant links: pairs, shared aliases, empty is off; malformed or repeated fails', () => {
    const ok = parseTenantAliases('acme=acme-entra, globex=shared ,initech=shared');
    expect(ok.ok && [...ok.map]).to.deep.equal([
      ['acme', 'acme-entra'],
      ['globex', 'shared'],
      ['initech', 'shared'],
    ]);
    const empty = parseTenantAliases('');
    expect(empty.ok && empty.map.size).to.equal(0);
    for (const bad of ['acme', 'acme=', '=x', 'a=b=c', 'acme=x,,globex=y', 'a b=c']) expect(parseTenantAliases(bad).ok, bad).to.equal(false);
    const twice = parseTenantAliases('acme=a,acme=a');
    expect(twice.ok ? '' : twice.error).to.match(/acme.*twice/);
  });

  it('derives the Keycloak admin URL from the issuer', () => {
    expect(deriveAdminUrl('https://kc.example/realms/platform')).to.equal('https://kc.example/admin/realms/platform');
    expect(deriveAdminUrl('https://kc.example/auth/realms/p/')).to.equal('https://kc.example/auth/admin/realms/p');
    expect(loadSettings(complete, { stageFiles: false }).catalog.adminUrl).to.equal('https://kc.example/admin/realms/platform');
  });

  it('npm start refuses to listen with invalid settings, naming the variable', function () {
    this.timeout(20_000);
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'gateway/main.ts'], {
      env: { PATH: process.env.PATH, ...complete, CHATUI_ENABLE_ADMIN_EXPORT: 'TRUE', PORT: '0' },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(run.status).to.equal(2);
    expect(run.stderr).to.match(/CHATUI_ENABLE_ADMIN_EXPORT: must be exactly 'true' or 'false' \(got "TRUE"\)/);
    expect(run.stdout).to.not.match(/listening/);
  });
});
