// `npm run check-config`, like `nginx -t`: validate the environment as `npm start` would (the
// process environment over config/dev.env or config/prod.env), print the effective settings with
// secrets redacted and "configuration OK" (exit 0), or every problem (exit 2). Starts nothing.
import { describeSettings, loadSettings, SettingsError, stageFile, type Settings } from '../config/settings.js';

const REDACTED = '[redacted]';

/** The resolved settings as plain JSON, every secret replaced. */
function redacted(settings: Settings): unknown {
  return {
    ...settings,
    oidc: { ...settings.oidc, clientSecret: settings.oidc.clientSecret ? REDACTED : '', sessionSecrets: settings.oidc.sessionSecrets.map(() => REDACTED) },
    catalog: { ...settings.catalog, clientSecret: settings.catalog.clientSecret ? REDACTED : '' },
    login: { ...settings.login, tenantAliases: Object.fromEntries(settings.login.tenantAliases) },
  };
}

function main(): number {
  const env = process.env;
  const stage = env.NODE_ENV === 'production' ? 'production' : 'development';
  const out: string[] = [`Stage: ${stage} (defaults from ${stageFile(stage)}; the environment wins)`, '', 'Effective settings:'];
  const described = describeSettings(env);
  const width = Math.max(0, ...Object.keys(described).map((k) => k.length));
  for (const [key, value] of Object.entries(described)) out.push(`  ${key.padEnd(width)}  ${value}`);
  try {
    const settings = loadSettings(env);
    out.push('', 'Resolved (defaults filled in):', JSON.stringify(redacted(settings), null, 2).replace(/^/gm, '  '), '');
    if (settings.sandbox) out.push('No UPSTREAM_URL: `npm start` runs the sandbox (stand-ins and demo logins, not for production).');
    out.push('configuration OK');
    process.stdout.write(out.join('\n') + '\n');
    return 0;
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    out.push('', err.message, '', `configuration NOT OK: ${err.problems.length} problem${err.problems.length === 1 ? '' : 's'}`);
    process.stderr.write(out.join('\n') + '\n');
    return 2;
  }
}

process.exitCode = main();
