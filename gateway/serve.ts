// Run from gateway/main.ts: validate the settings, then run the gateway (or, with no UPSTREAM_URL
// outside production, the self-contained sandbox). Invalid settings stop here, before listening.
import { loadSettings, SettingsError, type Settings } from '../config/settings.js';
import { effectiveEnv } from '../config/env.js';
import { redactSettings } from '../config/redact.js';
import { configWarnings } from '../config/lint.js';
import cluster from 'node:cluster';
import { createGateway } from './app.js';
import { exitOnSignals, superviseWorkers } from './lifecycle.js';
import { reloadOnHangup } from './hangups.js';

function settingsOrExit(): Settings {
  try {
    return loadSettings();
  } catch (err) {
    if (err instanceof SettingsError) {
      process.stderr.write(`${err.message}\nThe gateway did not start. See docs/operating/settings.md, "The variables".\n`);
      process.exit(2);
    }
    throw err;
  }
}

const settings = settingsOrExit();

if (settings.sandbox) {
  // Loaded only here: production never imports the sandbox or its stand-ins. The specifier is
  // not a literal so that the production build (tsconfig.build.json) does not compile them.
  const sandboxModule = '../sandbox/main.js';
  type SandboxModule = { startSandbox(settings: Settings): Promise<unknown> };
  const sandbox = (await import(sandboxModule).catch((err: Error & { code?: string }) => {
    if (err.code !== 'ERR_MODULE_NOT_FOUND' || !err.message.includes('sandbox')) throw err;
    process.stderr.write('No UPSTREAM_URL: the sandbox runs from the source tree only (`npm start`). Set UPSTREAM_URL and the OIDC_* settings.\n');
    process.exit(2);
  })) as SandboxModule;
  await sandbox.startSandbox(settings);
} else if (settings.server.workers > 1 && cluster.isPrimary) {
  // GATEWAY_WORKERS: this process only supervises; each worker runs the branch below.
  superviseWorkers(settings);
} else {
  // With /healthz, /readyz, /metrics (or METRICS_PORT) and the policy drift check.
  const gateway = await createGateway(settings);
  const { url, metricsUrl } = await gateway.start();
  const policy = gateway.policyStatus();
  gateway.obs.log.info({ url, publicUrl: settings.publicUrl, upstream: settings.upstream.url, metricsUrl, policy }, 'gateway listening');
  // What it runs with, secrets redacted (config/redact.ts), and what `npm run check-config` warns about.
  gateway.obs.log.info({ settings: redactSettings(settings) }, 'effective settings');
  for (const warning of configWarnings(effectiveEnv(process.env))) gateway.obs.log.warn({ event: 'config-warning' }, warning);
  for (const warning of settings.policyWarnings) gateway.obs.log.warn({ event: 'policy-warning', file: settings.policySources.file }, warning);
  // a SIGHUP held while starting is answered here: the file is read once now
  reloadOnHangup(() => gateway.reloadPolicy());
  exitOnSignals(gateway.obs.log, () => gateway.close().then(() => gateway.obs.close()));
}
