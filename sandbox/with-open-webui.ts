// `npm run sandbox:open-webui`: the sandbox of `npm start` (the gateway, signing in against the
// embedded OpenID provider with the demo logins and tenant links) in front of the REAL Open WebUI
// (the table release, or OWUI_VERSION's) instead of the stand-in: unmodified, started by scripts/open-webui.sh on 127.0.0.1 with the
// trusted-header settings of docker-compose.yml and its three admin flags set like the gateway.
// A model provider comes with it, the canned-answers server (sandbox/canned-model.ts: no language
// model), set as Open WebUI's OpenAI connection. Once the gateway listens, the demo accounts get
// their files and chat there through the gateway, and sysadmin registers the model for everyone
// (sandbox/seed-open-webui.ts). Needs Python 3.11 or 3.12; the first run installs Open WebUI into
// the cache outside git (a minute or two). Everything stops with the sandbox (SIGINT, SIGTERM).
import { sandboxSettingsOrExit, startSandbox } from './main.js';
import { CANNED_MODEL_NAME, cannedModelConnection, startCannedModel } from './canned-model.js';
import { OPEN_WEBUI_VERSION, openWebUIInstalled, installOpenWebUI, startRealOpenWebUI } from './real-open-webui.js';

const COMMAND = 'npm run sandbox:open-webui';
const base = sandboxSettingsOrExit('sandbox:open-webui');
if (!openWebUIInstalled()) {
  process.stdout.write(`Installing Open WebUI ${OPEN_WEBUI_VERSION} (scripts/open-webui.sh install, once)...\n`);
  installOpenWebUI();
}
const model = await startCannedModel();
process.stdout.write(`Starting the real Open WebUI ${OPEN_WEBUI_VERSION} (its first start migrates a new database: up to a minute)...\n`);
const owui = await startRealOpenWebUI({
  flags: {
    BYPASS_ADMIN_ACCESS_CONTROL: base.policy.bypassAdminAccessControl,
    ENABLE_ADMIN_EXPORT: base.policy.enableAdminExport,
    ENABLE_ADMIN_CHAT_ACCESS: false,
  },
  env: cannedModelConnection(model),
}).catch(async (err: unknown) => {
  await model.close();
  throw err;
});
process.stdout.write(`Open WebUI ready in ${owui.bootSeconds.toFixed(1)} s at ${owui.url}\n`);
await startSandbox(base, {
  command: COMMAND,
  openWebUI: {
    url: owui.url,
    version: OPEN_WEBUI_VERSION,
    model: {
      id: model.model,
      name: CANNED_MODEL_NAME,
      description: 'The sandbox\u2019s stand-in for a model provider: the same canned answer to every message, streamed word by word.',
      baseUrl: model.baseUrl,
    },
    seed: true,
    close: () => Promise.all([owui.close(), model.close()]).then(() => undefined),
  },
});
