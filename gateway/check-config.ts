// `npm run check-config`, like `nginx -t`: the environment (or, with `--policy-file`, a candidate
// POLICY_FILE) validated as the running gateway would, the effective settings printed redacted, every
// problem named (exit 2), so a mistake is found before it is deployed (docs/operating/settings.md).
import { describeSettings, loadSettings, SettingsError, type Settings } from '../config/settings.js';
import { policyVariables, policyVersion } from '../config/policy.js';
import { effectiveEnv, stageFile } from '../config/env.js';
import { redactSettings } from '../config/redact.js';
import { configWarnings } from '../config/lint.js';
import { describeRelease } from '../policies/upstream-release.js';
import { FileSource, KeycloakAdminSource, type CatalogSource } from './login/catalog.js';
import { readRelease } from './upstream/release.js';

const CATALOG_TIMEOUT_MS = 5_000;

/** Tenant links whose alias the catalog does not know (or cannot use), or why the catalog could not be read. */
async function catalogWarnings(settings: Settings): Promise<string[]> {
  const links = [...settings.policy.tenantAliases];
  if (!links.length) return [];
  let source: CatalogSource | undefined;
  const closing = new AbortController();
  if (settings.catalog.providersFile) source = new FileSource(settings.catalog.providersFile);
  else if (settings.catalog.adminUrl && settings.catalog.clientId && settings.catalog.clientSecret) {
    source = new KeycloakAdminSource(
      settings.catalog.adminUrl,
      settings.catalog.clientId,
      settings.catalog.clientSecret,
      globalThis.fetch,
      CATALOG_TIMEOUT_MS,
      Date.now,
      closing.signal,
    );
  }
  const where = settings.catalog.providersFile
    ? `IDP_PROVIDERS_FILE ${settings.catalog.providersFile}`
    : `the Keycloak admin API ${settings.catalog.adminUrl ?? ''}`.trim();
  if (!source)
    return [
      `IDP_TENANT_IDP_ALIASES: the provider catalog cannot be read here (no IDP_PROVIDERS_FILE, no admin URL or client): the aliases ${links.map(([, a]) => JSON.stringify(a)).join(', ')} were not checked`,
    ];
  try {
    const providers = await source.list();
    const out: string[] = [];
    for (const [tenant, alias] of links) {
      const p = providers.find((x) => x.alias === alias);
      if (!p)
        out.push(
          `IDP_TENANT_IDP_ALIASES: tenant ${JSON.stringify(tenant)} maps to alias ${JSON.stringify(alias)}, which ${where} does not know: its link leads to the login page${suggestAlias(
            alias,
            providers.map((x) => x.alias),
          )}`,
        );
      else if (p.enabled !== true)
        out.push(
          `IDP_TENANT_IDP_ALIASES: tenant ${JSON.stringify(tenant)} maps to alias ${JSON.stringify(alias)}, which is disabled: its link leads to the login page`,
        );
      else if (p.linkOnly === true)
        out.push(
          `IDP_TENANT_IDP_ALIASES: tenant ${JSON.stringify(tenant)} maps to alias ${JSON.stringify(alias)}, which is link-only: its link leads to the login page`,
        );
    }
    return out;
  } catch (err) {
    return [`IDP_TENANT_IDP_ALIASES: could not read the provider catalog (${where}: ${(err as Error).message}); the aliases were not checked`];
  } finally {
    closing.abort();
  }
}

const RELEASE_TIMEOUT_MS = 5_000;

/** The chat front-end's release, in words, and a warning when it is not one the route table was checked against. */
async function releaseLines(settings: Settings): Promise<{ line: string; warning?: string }> {
  const base = settings.upstream.url;
  const status = await readRelease(
    {
      async call(method, path, headers) {
        const res = await fetch(`${base}${path}`, { method, headers: headers as Record<string, string>, signal: AbortSignal.timeout(RELEASE_TIMEOUT_MS) });
        return { status: res.status, headers: {}, body: Buffer.from(await res.arrayBuffer()) };
      },
    },
    RELEASE_TIMEOUT_MS,
  );
  const words = describeRelease(status, settings.policy.upstreamRelease);
  return { line: `Upstream release (${base}/api/version): ${words}`, ...(status.state === 'supported' ? {} : { warning: `UPSTREAM_URL: ${words}` }) };
}

function suggestAlias(alias: string, known: string[]): string {
  const lower = alias.toLowerCase();
  const near = known.find((k) => k.toLowerCase() === lower || k.toLowerCase().includes(lower) || lower.includes(k.toLowerCase()));
  return near
    ? ` (the catalog has ${JSON.stringify(near)})`
    : known.length
      ? ` (the catalog has ${known
          .slice(0, 8)
          .map((k) => JSON.stringify(k))
          .join(', ')}${known.length > 8 ? ', ...' : ''})`
      : '';
}

/** `--policy-file <path>` or `--policy-file=<path>`: the candidate policy file to check; undefined without. */
function policyFileArgument(args: string[]): string | undefined {
  const i = args.findIndex((a) => a === '--policy-file' || a.startsWith('--policy-file='));
  if (i < 0) return undefined;
  const value = args[i]!.includes('=') ? args[i]!.slice('--policy-file='.length) : args[i + 1];
  if (!value) throw new Error('--policy-file needs a path');
  return value;
}

async function main(): Promise<number> {
  const candidate = policyFileArgument(process.argv.slice(2));
  const env = candidate === undefined ? process.env : { ...process.env, POLICY_FILE: candidate };
  const stage = env.NODE_ENV === 'production' ? 'production' : 'development';
  const out: string[] = [`Stage: ${stage} (defaults from ${stageFile(stage)}; the environment wins)`, '', 'Effective settings:'];
  const described = describeSettings(env);
  const width = Math.max(0, ...Object.keys(described).map((k) => k.length));
  for (const [key, value] of Object.entries(described)) out.push(`  ${key.padEnd(width)}  ${value}`);
  const warnings = configWarnings(effectiveEnv(env));
  const warningBlock = (list: string[]) => (list.length ? ['', `Warnings (${list.length}):`, ...list.map((w) => `  - ${w}`)] : []);
  try {
    const settings = loadSettings(env);
    warnings.push(...settings.policyWarnings);
    warnings.push(...(await catalogWarnings(settings)));
    const release = settings.sandbox ? undefined : await releaseLines(settings);
    if (release?.warning) warnings.push(release.warning);
    out.push('', 'Resolved (defaults filled in):', JSON.stringify(redactSettings(settings), null, 2).replace(/^/gm, '  '));
    if (release) out.push('', release.line);
    const p = settings.policy;
    out.push(
      '',
      `Live settings (policy version ${policyVersion(p)}, ${settings.policySources.file ? `from the environment and POLICY_FILE ${settings.policySources.file}` : 'from the environment'}):`,
      ...Object.entries(policyVariables(p)).map(([k, v]) => `  ${k}=${v}`),
    );
    out.push(...warningBlock(warnings), '');
    if (settings.sandbox) out.push('No UPSTREAM_URL: `npm start` runs the sandbox (stand-ins and demo logins, not for production).');
    out.push(warnings.length ? `configuration OK, with ${warnings.length} warning${warnings.length === 1 ? '' : 's'}` : 'configuration OK');
    process.stdout.write(out.join('\n') + '\n');
    return 0;
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    out.push(...warningBlock(warnings));
    out.push('', err.message, '', `configuration NOT OK: ${err.problems.length} problem${err.problems.length === 1 ? '' : 's'}`);
    process.stderr.write(out.join('\n') + '\n');
    return 2;
  }
}

process.exitCode = await main();
