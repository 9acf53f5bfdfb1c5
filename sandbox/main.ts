// The sandbox behind `npm start` when no UPSTREAM_URL is set. Filled in by the sandbox work.
import type { Settings } from '../config/settings.js';

export async function startSandbox(_settings: Settings): Promise<void> {
  process.stderr.write('The sandbox is not built yet: set UPSTREAM_URL and the OIDC settings.\n');
  process.exit(2);
}
