// What `npm run check-config` tells an operator who got something wrong, and
// one redaction (config/redact.ts) for check-config, the startup log and the
// sandbox banner, none of which ever prints a secret.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSettings } from '../../config/settings.js';
import { redactSettings } from '../../config/redact.js';
import { baseEnv, capturingObservability, gatewayProcess } from '../support/gateway-harness.js';
import { redisState } from '../../gateway/state/redis-state.js';
import { freePort } from '../support/raw-http.js';
import { startSandbox } from '../../sandbox/main.js';
import { sleep } from '../support/wait.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function checkConfig(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'gateway/check-config.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => done({ code, out }));
  });
}

const production = {
  NODE_ENV: 'production',
  UPSTREAM_URL: 'http://open-webui:8080',
  PUBLIC_URL: 'https://chat.example',
  OIDC_ISSUER_URL: 'https://kc.example/realms/platform',
  OIDC_CLIENT_ID: 'chat-gateway',
  OIDC_CLIENT_SECRET: 'cc-client-secret-value',
  SESSION_SECRET: 'cc-session-secret-value-0123456789abcdef',
  CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
  CHATUI_ENABLE_ADMIN_EXPORT: 'false',
};

describe('check-config: what operators get wrong', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'check-config-'));
    writeFileSync(
      join(dir, 'providers.json'),
      JSON.stringify([
        { alias: 'acme-entra', enabled: true },
        { alias: 'globex-okta', enabled: true },
        { alias: 'old-idp', enabled: false },
      ]),
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('names every malformed pair of IDP_TENANT_IDP_ALIASES, not just the first', async () => {
    const r = await checkConfig({ ...production, IDP_TENANT_IDP_ALIASES: 'acme=,globex' });
    expect(r.code).to.equal(2);
    expect(r.out).to.match(/IDP_TENANT_IDP_ALIASES: malformed pair "acme=".*no alias after "="/);
    expect(r.out).to.match(/IDP_TENANT_IDP_ALIASES: malformed pair "globex".*no "="/);
    expect(r.out).to.include('configuration NOT OK: 2 problems');
  });

  it('a trailing comma is said in words, never as `malformed pair ""`', async () => {
    const r = await checkConfig({ ...production, IDP_TENANT_IDP_ALIASES: 'acme=acme-entra,' });
    expect(r.code).to.equal(2);
    expect(r.out).to.not.include('malformed pair ""');
    expect(r.out).to.match(/IDP_TENANT_IDP_ALIASES: .*empty \(a trailing comma\); remove the extra comma/);
  });

  it('an invalid tenant id is named as a tenant id, an invalid alias as an alias', async () => {
    const r = await checkConfig({ ...production, IDP_TENANT_IDP_ALIASES: 'ac me=acme-entra,globex=okta/2' });
    expect(r.code).to.equal(2);
    expect(r.out).to.match(/tenant id "ac me" is not a valid tenant id/);
    expect(r.out).to.match(/alias "okta\/2" is not a valid provider alias/);
  });

  it('a mapped alias the provider catalog does not know (or cannot use) is reported when the catalog can be read', async () => {
    const r = await checkConfig({
      ...production,
      IDP_PROVIDERS_FILE: join(dir, 'providers.json'),
      IDP_TENANT_IDP_ALIASES: 'acme=acme-entra,globex=globex-okt,initech=old-idp',
    });
    expect(r.code, r.out).to.equal(0);
    expect(r.out).to.match(
      /tenant "globex" maps to alias "globex-okt", which IDP_PROVIDERS_FILE .* does not know: its link leads to the login page \(the catalog has "globex-okta"\)/,
    );
    expect(r.out).to.match(/tenant "initech" maps to alias "old-idp", which is disabled/);
    expect(r.out).to.not.match(/tenant "acme" maps/);
    // the third: no Open WebUI answers at http://open-webui:8080 here, so its release cannot be read
    expect(r.out).to.include('- UPSTREAM_URL: the Open WebUI release could not be read (unreachable');
    expect(r.out).to.include('configuration OK, with 3 warnings');
  });

  it('and a warning says so when the catalog cannot be read', async () => {
    const port = await freePort();
    const r = await checkConfig({ ...production, IDP_ADMIN_URL: `http://127.0.0.1:${port}/admin/realms/platform`, IDP_TENANT_IDP_ALIASES: 'acme=acme-entra' });
    expect(r.code, r.out).to.equal(0);
    expect(r.out).to.match(
      /IDP_TENANT_IDP_ALIASES: could not read the provider catalog \(the Keycloak admin API http:\/\/127\.0\.0\.1:\d+\/admin\/realms\/platform: .*\); the aliases were not checked/,
    );
  });

  it('a misspelt switch is not "configuration OK": every unknown variable with a gateway prefix is named, with the nearest known name', async () => {
    const r = await checkConfig({
      ...production,
      CHATUI_BYPASS_ADMIN_ACCES_CONTROL: 'true',
      OIDC_CLIENTID: 'x',
      REDIS_ULR: 'redis://r:6379',
      GATEWAY_WORKER: '2',
      BEARER_INTROSPECTON: 'false',
      WEBUI_AUTH_SIGNOUT_REDIRECT_URL: 'https://chat.example/auth/logout',
    });
    expect(r.code, r.out).to.equal(0);
    expect(r.out).to.include('CHATUI_BYPASS_ADMIN_ACCES_CONTROL: not a setting of the gateway, ignored; did you mean CHATUI_BYPASS_ADMIN_ACCESS_CONTROL?');
    expect(r.out).to.include('OIDC_CLIENTID: not a setting of the gateway, ignored; did you mean OIDC_CLIENT_ID?');
    expect(r.out).to.include('REDIS_ULR: not a setting of the gateway, ignored; did you mean REDIS_URL?');
    expect(r.out).to.include('GATEWAY_WORKER: not a setting of the gateway, ignored; did you mean GATEWAY_WORKERS?');
    expect(r.out).to.include('BEARER_INTROSPECTON: not a setting of the gateway, ignored; did you mean BEARER_INTROSPECTION?');
    // Open WebUI's own variable in the shared env file is not a typo.
    expect(r.out).to.not.include('WEBUI_AUTH_SIGNOUT_REDIRECT_URL: not a setting');
    // the sixth: no Open WebUI answers at http://open-webui:8080 here, so its release cannot be read
    expect(r.out).to.include('- UPSTREAM_URL: the Open WebUI release could not be read (unreachable');
    expect(r.out).to.include('configuration OK, with 6 warnings');
  });

  it("Open WebUI's Sentinel or Cluster variables without the gateway's: a warning naming the gateway's, and a misspelt one gets the nearest", async () => {
    const r = await checkConfig({
      ...production,
      REDIS_URL: 'redis://mymaster:6379/0',
      REDIS_SENTINEL_HOSTS: 'sentinel-0,sentinel-1',
      REDIS_CLUSTER: 'true',
      REDIS_SENTINEL_NAMES: 'mymaster',
    });
    expect(r.code, r.out).to.equal(0);
    expect(r.out).to.include(
      "REDIS_SENTINEL_HOSTS: Open WebUI's Sentinel setting, not the gateway's: the gateway reads REDIS_SENTINELS (host:port,...) with REDIS_SENTINEL_NAME, and takes REDIS_URL as one plain server",
    );
    expect(r.out).to.include("REDIS_CLUSTER: Open WebUI's Cluster switch, not the gateway's: the gateway reads REDIS_CLUSTER_NODES (host:port,...)");
    expect(r.out).to.include('REDIS_SENTINEL_NAMES: not a setting of the gateway, ignored; did you mean REDIS_SENTINEL_NAME?');
    const both = await checkConfig({ ...production, REDIS_SENTINELS: 's-0:26379', REDIS_SENTINEL_NAME: 'mymaster', REDIS_SENTINEL_HOSTS: 's-0' });
    expect(both.code, both.out).to.equal(0);
    expect(both.out).to.not.include('REDIS_SENTINEL_HOSTS:');
  });

  it('a "#" or "@" in the Redis password gets the hint to percent-encode it, and the password is not echoed', async () => {
    const hash = await checkConfig({ ...production, REDIS_URL: 'redis://user:pa#ss-word-1@redis:6379/0' });
    expect(hash.code).to.equal(2);
    expect(hash.out).to.match(/REDIS_URL: must be redis:.*a '#' in the password must be percent-encoded \(# as %23\)/);
    const at = await checkConfig({ ...production, REDIS_URL: 'redis://user:pa@ss-word-2@redis:6379/0' });
    expect(at.code).to.equal(0);
    expect(at.out).to.match(/REDIS_URL: .*a '@' in the password must be percent-encoded \(@ as %40\)/);
    for (const text of [hash.out, at.out]) expect(text).to.not.match(/ss-word-/);
  });

  it('a URL that does not parse is shown as written (only credentials hidden), and the message says which condition it failed', async () => {
    const r = await checkConfig({
      ...production,
      OIDC_ISSUER_URL: 'kc.example.com/realms/platform',
      PUBLIC_URL: 'https//chat.example.com',
      UPSTREAM_URL: 'ftp://open-webui:8080',
      IDP_ADMIN_URL: 'https://kc-admin:leak-url-password@kc.example/admin/realms/platform',
    });
    expect(r.code, r.out).to.equal(2);
    // the effective settings: the typo is there to see
    expect(r.out).to.match(/OIDC_ISSUER_URL +kc\.example\.com\/realms\/platform\n/);
    expect(r.out).to.match(/PUBLIC_URL +https\/\/chat\.example\.com\n/);
    expect(r.out).to.include(
      '- OIDC_ISSUER_URL: must be an absolute http(s) URL without credentials: it does not start with http:// or https:// (got "kc.example.com/realms/platform")',
    );
    expect(r.out).to.include(
      '- PUBLIC_URL: must be an absolute http(s) URL without credentials: it does not start with http:// or https:// (got "https//chat.example.com")',
    );
    expect(r.out).to.include('- UPSTREAM_URL: must be an absolute http(s) URL without credentials: its scheme is ftp://, not http:// or https://');
    expect(r.out).to.include(
      '- IDP_ADMIN_URL: must be an absolute http(s) URL without credentials: it holds a user or password (user:password@) (got "https://[redacted]@kc.example/admin/realms/platform")',
    );
    expect(r.out).to.not.include('leak-url-password');
    // a value that reads as user:password, with no '@' and no scheme, keeps its password hidden
    const bare = await checkConfig({ ...production, UPSTREAM_URL: 'webui:leak-bare-password' });
    expect(bare.code).to.equal(2);
    expect(bare.out).to.include('(got "webui:[redacted]")');
    expect(bare.out).to.not.include('leak-bare-password');
  });

  it("a '#' after the host of REDIS_URL is a fragment, not part of the password: no percent-encoding warning", async () => {
    const r = await checkConfig({ ...production, REDIS_URL: 'redis://default:leak-redis-secret@redis:6379/0#x' });
    expect(r.code, r.out).to.equal(0);
    expect(r.out).to.not.include('must be percent-encoded');
    expect(r.out).to.not.include('leak-redis-secret');
    const inPassword = await checkConfig({ ...production, REDIS_URL: 'redis://default:leak-redis#secret@redis:6379/0' });
    expect(inPassword.out).to.include("a '#' in the password must be percent-encoded (# as %23)");
  });

  it('the sandbox resolves to the address it binds: 127.0.0.1, not 0.0.0.0', async () => {
    const r = await checkConfig({ CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false', CHATUI_ENABLE_ADMIN_EXPORT: 'false' });
    expect(r.code, r.out).to.equal(0);
    expect(r.out).to.match(/"host": "127\.0\.0\.1"/);
    expect(r.out).to.not.include('0.0.0.0');
    const withHost = await checkConfig({ CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false', CHATUI_ENABLE_ADMIN_EXPORT: 'false', HOST: '0.0.0.0' });
    expect(withHost.out).to.match(/"host": "0\.0\.0\.0"/);
    expect(loadSettings(production, { stageFiles: false }).listen.host, 'the gateway itself').to.equal('0.0.0.0');
  });
});

describe('redactSettings: no secret printed by check-config, the startup log or the sandbox banner', function () {
  this.timeout(60_000);
  const secrets = {
    OIDC_CLIENT_SECRET: 'leak-oidc-client-secret',
    SESSION_SECRET: 'leak-session-secret-0123456789abcdef,leak-old-session-secret-0123456789ab',
    IDP_ADMIN_CLIENT_SECRET: 'leak-admin-client-secret',
    REDIS_URL: 'redis://gateway:leak-redis-password@127.0.0.1:9/0',
  };
  // Sentinel and Cluster: the data nodes' and the sentinels' passwords, and one written into a node list.
  const sentinelSecrets = {
    REDIS_SENTINELS: '127.0.0.1:9,127.0.0.1:10',
    REDIS_SENTINEL_NAME: 'mymaster',
    REDIS_USERNAME: 'gateway',
    REDIS_PASSWORD: 'leak-redis-data-p@ss#word',
    REDIS_SENTINEL_PASSWORD: 'leak-redis-sentinel-p@ss#word',
  };
  const clusterSecrets = { REDIS_CLUSTER_NODES: '127.0.0.1:9,127.0.0.1:10', REDIS_USERNAME: 'gateway', REDIS_PASSWORD: 'leak-redis-cluster-p@ss#word' };
  const listWithPassword = { REDIS_CLUSTER_NODES: 'gateway:leak-redis-list-p@ss#word@127.0.0.1:9,redis://:leak-redis-url-list-pw@127.0.0.1:10' };
  const needles = [
    'leak-oidc-client-secret',
    'leak-session-secret',
    'leak-old-session-secret',
    'leak-admin-client-secret',
    'leak-redis-password',
    'leak-redis-data',
    'leak-redis-sentinel',
    'leak-redis-cluster',
    'leak-redis-list',
    'leak-redis-url-list',
    'p@ss#word',
    'ss#word',
  ];
  const clean = (what: string, text: string) => {
    for (const n of needles) expect(text.includes(n), `${what} prints ${n}:\n${text.slice(0, 3000)}`).to.equal(false);
  };

  it('redactSettings replaces each of them', () => {
    const s = loadSettings({ ...production, ...secrets, IDP_ADMIN_CLIENT_ID: 'admin' }, { stageFiles: false });
    const shown = JSON.stringify(redactSettings(s));
    clean('redactSettings', shown);
    expect(shown).to.include('redis://[redacted]@127.0.0.1:9/0');
  });

  it('redactSettings replaces the Redis passwords of Sentinel and Cluster', () => {
    for (const redis of [sentinelSecrets, clusterSecrets]) {
      const s = loadSettings({ ...production, ...secrets, REDIS_URL: undefined, ...redis, IDP_ADMIN_CLIENT_ID: 'admin' }, { stageFiles: false });
      const shown = JSON.stringify(redactSettings(s));
      clean('redactSettings', shown);
      expect(shown).to.include('[redacted]').and.include('127.0.0.1');
    }
  });

  it('check-config with Sentinel or Cluster, valid and invalid, a password in a node list included', async () => {
    const withoutUrl = { ...production, ...secrets, REDIS_URL: '' };
    // each check-config a process of its own: run at once, judged in turn
    const [both, inList, ...topologies] = await Promise.all([
      checkConfig({ ...production, ...secrets, ...sentinelSecrets }),
      checkConfig({ ...withoutUrl, ...listWithPassword }),
      ...[sentinelSecrets, clusterSecrets].flatMap((redis) => [
        checkConfig({ ...withoutUrl, ...redis }),
        checkConfig({ ...withoutUrl, ...redis, PORT: 'eighty' }),
      ]),
    ]);
    for (let i = 0; i < topologies.length; i += 2) {
      const [ok, bad] = [topologies[i]!, topologies[i + 1]!];
      expect(ok.code, ok.out).to.equal(0);
      expect(ok.out).to.match(/REDIS_PASSWORD\s+\[redacted\]/);
      clean('check-config', ok.out);
      expect(bad.code).to.equal(2);
      clean('check-config (invalid)', bad.out);
    }
    expect(both.code).to.equal(2);
    expect(both.out).to.include('REDIS_SENTINELS: set together with REDIS_URL');
    clean('check-config (two topologies)', both.out);
    expect(inList.code).to.equal(2);
    expect(inList.out).to.include('REDIS_CLUSTER_NODES: entry 1 of 2 carries credentials');
    clean('check-config (a password in a node list)', inList.out);
  });

  it('check-config, valid and invalid', async () => {
    const ok = await checkConfig({ ...production, ...secrets, IDP_ADMIN_CLIENT_ID: 'admin' });
    expect(ok.code, ok.out).to.equal(0);
    expect(ok.out).to.include('[redacted]');
    clean('check-config', ok.out);
    const bad = await checkConfig({ ...production, ...secrets, PORT: 'eighty' });
    expect(bad.code).to.equal(2);
    clean('check-config (invalid)', bad.out);
    // A URL refused for carrying credentials is named without them.
    const withCredentials = await checkConfig({ ...production, UPSTREAM_URL: 'http://webui:leak-upstream-password@open-webui:8080' });
    expect(withCredentials.code).to.equal(2);
    expect(withCredentials.out).to.match(
      /UPSTREAM_URL: must be an absolute http\(s\) URL without credentials: it holds a user or password \(user:password@\) \(got "http:\/\/\[redacted\]@open-webui:8080\/?"\)/,
    );
    expect(withCredentials.out).to.not.include('leak-upstream-password');
  });

  /** A gateway process with these Redis settings, at debug level: what it printed in its first 3 s (Redis at nothing warns within the connect timeout). */
  async function gatewayOutput(redis: Record<string, string>): Promise<string> {
    const gw = await gatewayProcess({
      ...baseEnv('http://127.0.0.1:9'),
      ...secrets,
      ...redis,
      IDP_ADMIN_CLIENT_ID: 'admin',
      HOST: '127.0.0.1',
      PORT: '0',
      DRIFT_CHECK_SECONDS: '0',
      LOG_LEVEL: 'debug',
    });
    try {
      await sleep(3_000);
      return gw.output();
    } finally {
      gw.child.kill('SIGKILL');
    }
  }

  it('the gateway process: its startup lines (the effective settings among them) and its Redis warnings', async () => {
    const output = await gatewayOutput({});
    expect(output).to.include('effective settings');
    expect(output).to.match(/Redis/);
    clean('the gateway log', output);
  });

  it('gateway processes on Sentinel and on Cluster: their startup lines and their Redis warnings', async () => {
    // two processes, each watched for its own first 3 s: side by side
    const outputs = await Promise.all([sentinelSecrets, clusterSecrets].map((redis) => gatewayOutput({ REDIS_URL: '', ...redis })));
    for (const output of outputs) {
      expect(output).to.include('effective settings');
      expect(output).to.match(/shared-state-unreachable/);
      clean('the gateway log', output);
    }
  });

  it('the sandbox banner on Sentinel', async () => {
    const env = { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false', CHATUI_ENABLE_ADMIN_EXPORT: 'false', PORT: '0', LOG_LEVEL: 'silent', ...sentinelSecrets };
    const sandbox = await startSandbox(loadSettings(env, { stageFiles: false }), { env, print: false, signals: false });
    try {
      expect(sandbox.banner).to.include('Redis Sentinel "mymaster" at 127.0.0.1:9,127.0.0.1:10 (REDIS_SENTINELS)');
      expect(sandbox.banner).to.include('Sandbox started but NOT READY');
      expect(sandbox.banner).to.include('or unset REDIS_SENTINELS');
      clean('the sandbox banner', sandbox.banner);
    } finally {
      await sandbox.close();
    }
  });

  it('the sandbox banner', async () => {
    const env = {
      CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false',
      CHATUI_ENABLE_ADMIN_EXPORT: 'false',
      PORT: '0',
      LOG_LEVEL: 'silent',
      REDIS_URL: secrets.REDIS_URL,
    };
    const sandbox = await startSandbox(loadSettings(env, { stageFiles: false }), { env, print: false, signals: false });
    try {
      expect(sandbox.banner).to.include('Redis redis://[redacted]@127.0.0.1:9/0');
      // With Redis at nothing the banner does not say "ready".
      expect(sandbox.banner).to.include('Sandbox started but NOT READY');
      expect(sandbox.banner).to.not.include('Sandbox ready');
      expect(sandbox.banner).to.match(/WARNING: Redis redis:\/\/127\.0\.0\.1:9\/0 unreachable/);
      clean('the sandbox banner', sandbox.banner);
      for (const s of [sandbox.settings.oidc.clientSecret, ...sandbox.settings.oidc.sessionSecrets]) expect(sandbox.banner).to.not.include(s);
    } finally {
      await sandbox.close();
    }
  });
});

describe('a Redis password holding \u2018@\u2019, \u2018#\u2019, \u2018/\u2019, \u2018?\u2019, \u2018:\u2019 or percent-escapes: printed nowhere, and refused where Redis would not be given it as written', function () {
  this.timeout(180_000);
  // Every part of a password is a `qz?` token, so any piece of it that is printed is found.
  const cases: Array<{ url: string; read: boolean; why: string }> = [
    { url: 'redis://gateway:qz1@qz2@127.0.0.1:9/0', read: true, why: "a raw '@': read as written" },
    { url: 'redis://admin:qz3@qz4#qz5@127.0.0.1:9/0', read: false, why: "'@' and '#': read as host qz4" },
    { url: 'redis://gateway:qz6#qz7@127.0.0.1:9/0', read: false, why: "'#' alone: no URL at all" },
    { url: 'redis://gateway:qz8/qz9@127.0.0.1:9/0', read: false, why: "'/': no URL at all" },
    { url: 'redis://gateway:qza?qzb@127.0.0.1:9/0', read: false, why: "'?': no URL at all" },
    { url: 'redis://gateway:12/qzc@127.0.0.1:9/0', read: false, why: "'/' after digits: port 12, the rest a path" },
    { url: 'redis://gateway:qzd@qze?qzf@127.0.0.1:9/0', read: false, why: "'@' then '?': host qze, the rest a query" },
    { url: 'redis://gateway:qzg:qzh@127.0.0.1:9/0', read: true, why: "a raw ':': read as written" },
    { url: 'redis://gateway:qzi%23qzj%40qzk%2Fqzl%3Fqzm%3Aqzn%25@127.0.0.1:9/0', read: true, why: 'every one percent-encoded' },
    { url: 'redis://gateway:qzo%zzqzp@127.0.0.1:9/0', read: false, why: "a '%' not followed by two hex digits" },
    { url: 'redis://127.0.0.1:9/0?password=qzq', read: true, why: 'a password in the query, which ioredis reads' },
  ];
  const needles = (url: string) => url.match(/qz[0-9a-z]/g) ?? [];
  const clean = (what: string, url: string, text: string) => {
    for (const n of needles(url)) expect(text.includes(n), `${what} for ${url} prints ${n}:\n${text.slice(0, 3000)}`).to.equal(false);
  };

  it('check-config: the ones read as written are OK and redacted; the others refused, naming REDIS_URL and saying to percent-encode', async () => {
    const runs = await Promise.all(cases.map(({ url }) => checkConfig({ ...production, REDIS_URL: url })));
    for (const [i, { url, read, why }] of cases.entries()) {
      const r = runs[i]!;
      expect(r.code, `${why}: ${r.out}`).to.equal(read ? 0 : 2);
      if (!read) expect(r.out, why).to.match(/REDIS_URL: [^\n]*percent-encode/);
      clean('check-config', url, r.out);
    }
  });

  it('the gateway process: its startup lines and its Redis warnings, or the reason it does not start', async () => {
    // a process of its own for each URL, each mostly waiting on Redis's connect timeout: all at once,
    // every one stopped before the test ends, whichever failed
    const runs = await Promise.allSettled(
      cases.map(async ({ url, read, why }) => {
        const env = { ...baseEnv('http://127.0.0.1:9'), HOST: '127.0.0.1', PORT: '0', DRIFT_CHECK_SECONDS: '0', LOG_LEVEL: 'debug', REDIS_URL: url };
        if (!read) {
          const err = await gatewayProcess(env).then(
            (gw) => (gw.child.kill('SIGKILL'), expect.fail(`${why}: started`)),
            (e: Error) => e.message,
          );
          expect(err, why).to.match(/REDIS_URL: [^\n]*percent-encode/);
          return clean('the refusal at startup', url, err);
        }
        const gw = await gatewayProcess(env);
        try {
          // Redis at nothing: its warning comes once the connect timeout passed
          for (let t = 0; t < 6_000 && !gw.output().includes('shared-state-unreachable'); t += 100) await sleep(100);
          expect(gw.output(), why).to.include('effective settings').and.include('shared-state-unreachable');
          clean('the gateway log', url, gw.output());
          const ready = await fetch(`http://127.0.0.1:${gw.port}/readyz`);
          clean('/readyz', url, await ready.text());
        } finally {
          gw.child.kill('SIGKILL');
        }
      }),
    );
    for (const run of runs) if (run.status === 'rejected') throw run.reason;
  });

  it('the shared state itself (every warning naming the URL, its readiness detail), also given a URL the settings would refuse', async () => {
    await Promise.all(
      cases.map(async ({ url, read, why }) => {
        const obs = capturingObservability();
        const started = redisState(url, obs, { downLogEveryMs: 400 });
        if (!read) {
          const err = await started.then(
            (s) => (void s.close(), expect.fail(`${why}: connected`)),
            (e: Error) => e.message,
          );
          expect(err, why).to.match(/^REDIS_URL: .*percent-encode/);
          return clean('the refusal', url, err);
        }
        const state = await started;
        try {
          await sleep(3_300);
          expect(obs.lines.some((l) => l.event === 'shared-state-unreachable')).to.equal(true);
          clean('the shared state log', url, JSON.stringify(obs.lines));
          clean('readiness', url, state.ready().detail);
        } finally {
          await state.close();
        }
      }),
    );
  });

  it('the sandbox banner', async () => {
    for (const [url, shown] of [
      [cases[0]!.url, 'Redis redis://[redacted]@127.0.0.1:9/0'],
      [cases.at(-1)!.url, 'Redis redis://127.0.0.1:9/0?password=[redacted]'],
    ] as const) {
      const env = { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false', CHATUI_ENABLE_ADMIN_EXPORT: 'false', PORT: '0', LOG_LEVEL: 'silent', REDIS_URL: url };
      const sandbox = await startSandbox(loadSettings(env, { stageFiles: false }), { env, print: false, signals: false });
      try {
        expect(sandbox.banner).to.include(shown);
        clean('the sandbox banner', url, sandbox.banner);
      } finally {
        await sandbox.close();
      }
    }
  });
});
