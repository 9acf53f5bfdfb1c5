// `npm run sandbox:open-webui`: the sandbox of `npm start` (the gateway, signing in against the
// embedded OpenID provider with the demo logins and tenant links) in front of the REAL Open WebUI
// 0.12.4 instead of the stand-in: unmodified, started by scripts/open-webui.sh on 127.0.0.1 with the
// trusted-header settings of docker-compose.yml and its three admin flags set like the gateway. It
// starts empty (no demo files or chats). Needs Python 3.11 or 3.12; the first run installs Open
// WebUI into the cache outside git (a minute or two). Open WebUI stops with the sandbox (Ctrl-C).
import { sandboxSettingsOrExit, startSandbox } from './main.js';
import { OPEN_WEBUI_VERSION, openWebUIInstalled, installOpenWebUI, startRealOpenWebUI } from './real-open-webui.js';

const base = sandboxSettingsOrExit('sandbox:open-webui');
if (!openWebUIInstalled()) {
  process.stdout.write(`Installing Open WebUI ${OPEN_WEBUI_VERSION} (scripts/open-webui.sh install, once)...\n`);
  installOpenWebUI();
}
process.stdout.write(`Starting the real Open WebUI ${OPEN_WEBUI_VERSION} (its first start migrates a new database: up to a minute)...\n`);
const owui = await startRealOpenWebUI({
  flags: {
    BYPASS_ADMIN_ACCESS_CONTROL: base.policy.bypassAdminAccessControl,
    ENABLE_ADMIN_EXPORT: base.policy.enableAdminExport,
    ENABLE_ADMIN_CHAT_ACCESS: false,
  },
});
process.stdout.write(`Open WebUI ready in ${owui.bootSeconds.toFixed(1)} s at ${owui.url}\n`);
await startSandbox(base, { openWebUI: { url: owui.url, version: OPEN_WEBUI_VERSION, close: () => owui.close() } });
