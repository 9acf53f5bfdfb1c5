// `npm run sandbox:open-webui`: the sandbox of `npm start` in front of the REAL Open WebUI, unmodified,
// instead of the stand-in, with the canned-answers model provider and the demo data put in through the
// gateway (docs/development.md, "The real peers"). Everything stops with the sandbox.
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
