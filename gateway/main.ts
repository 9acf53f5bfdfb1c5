// `npm start`: validate the settings, then run the gateway (or, with no UPSTREAM_URL outside
// production, the self-contained sandbox). Invalid settings stop here, before listening.
import { loadSettings, SettingsError, type Settings } from '../config/settings.js';
import cluster from 'node:cluster';
import { createGateway } from './server.js';
import { superviseWorkers } from './cluster.js';

function settingsOrExit(): Settings {
  try {
    return loadSettings();
  } catch (err) {
    if (err instanceof SettingsError) {
      process.stderr.write(`${err.message}\nThe gateway did not start. See README.md, "Settings".\n`);
      process.exit(2);
    }
    throw err;
  }
}

const settings = settingsOrExit();

if (settings.sandbox) {
  // Loaded only here: production never imports the sandbox or its stand-ins.
  const { startSandbox } = await import('../sandbox/main.js');
  await startSandbox(settings);
} else if (settings.server.workers > 1 && cluster.isPrimary) {
  // GATEWAY_WORKERS: this process only supervises; each worker runs the branch below.
  superviseWorkers(settings);
} else {
  const gateway = await createGateway(settings);
  const { url } = await gateway.listen();
  gateway.obs.log.info({ url, publicUrl: settings.publicUrl, upstream: settings.upstream.url }, 'gateway listening');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    gateway.obs.log.info({ signal }, 'shutting down: finishing in-flight requests');
    gateway.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
