// What a browser or a probe fetches outside the API: the single-page app's shell and the
// stand-in's own front-end script, static assets, the manifest, health, /api/version and
// /api/config (main.py).
import { findToken, userOfToken } from './auth.js';
import { send, sendHtml, sendJson, type Ctx } from './context.js';
import type { Router } from './router.js';
import type { StandInState } from './state.js';
import { VERSION } from './types.js';

const SPA_SHELL = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<link rel="icon" href="/static/favicon.png" />
<link rel="manifest" href="/manifest.json" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>Open WebUI</title>
</head>
<body data-sveltekit-preload-data="hover">
<div style="display: contents" id="app">Open WebUI stand-in ${VERSION}</div>
<script type="module" src="/static/app.js"></script>
</body>
</html>
`;

/**
 * The stand-in's front-end: who is signed in (as the chat front-end sees the trusted headers),
 * links to try the policies, the active tenant and, for a user of several, a control to switch it
 * (POST /auth/session/tenant), and the chat front-end's own "Sign out", done as Open WebUI's
 * UserMenu does it since 0.10.2 (POST /api/v1/auths/signout, then `location.href` = `redirect_url`,
 * or `/auth?state=logout` without one).
 */
const standInAppJs = (flags: { bypassAdminAccessControl: boolean; enableAdminExport: boolean }) => `const app = document.getElementById('app');
const SWITCHES = ${JSON.stringify({ CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: flags.bypassAdminAccessControl, CHATUI_ENABLE_ADMIN_EXPORT: flags.enableAdminExport })};
const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
// A user of several tenants picks the active one, as the platform's front-end does (POST /auth/session/tenant).
function tenantSwitch(session) {
  const tenants = Array.isArray(session.tenants) ? session.tenants : [];
  if (tenants.length < 2) return '';
  return '<form id="tenant-switch"><label for="tenant-choice">Active tenant</label> <select id="tenant-choice">'
    + tenants.map((t) => '<option value="' + esc(t) + '"' + (t === session.active_tenant ? ' selected' : '') + '>' + esc(t) + '</option>').join('')
    + '</select> <button type="submit">Switch tenant</button> <span id="tenant-switch-result" role="status"></span></form>';
}
async function main() {
  const me = await fetch('/api/v1/auths/', { credentials: 'include' });
  if (me.status !== 200) { app.innerHTML = '<p id="signed-out">Not signed in. <a href="/auth/login">Sign in</a></p>'; return; }
  const user = await me.json();
  const session = await fetch('/auth/session', { credentials: 'include' }).then((r) => (r.ok ? r.json() : {})).catch(() => ({}));
  app.innerHTML = '<main style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 2rem auto">'
    + '<h1>Open WebUI stand-in ${VERSION}</h1>'
    + '<p id="who">Signed in as <strong>' + esc(user.name) + '</strong> (' + esc(user.email) + '), role <strong id="role">' + esc(user.role) + '</strong>'
    + (session.active_tenant ? ', tenant <strong id="tenant">' + esc(session.active_tenant) + '</strong>' : '') + '</p>'
    + '<ul><li><a href="/api/v1/files/">Your files (GET /api/v1/files/)</a></li>'
    + '<li><a href="/api/v1/chats/all/db">The full chat export (GET /api/v1/chats/all/db)</a></li>'
    + '<li><a href="/auth/session">Your gateway session (/auth/session)</a></li>'
    + '<li><a href="/auth/logout">Log out through the gateway (/auth/logout)</a></li></ul>'
    + '<p id="switches">Switches (set alike here and on the gateway): ' + Object.entries(SWITCHES).map(([k, v]) => esc(k) + '=<strong>' + esc(v) + '</strong>').join(', ') + '</p>'
    + tenantSwitch(session)
    + '<p><button id="sign-out" type="button">Sign out</button> (the chat front-end\\'s own menu entry)</p></main>';
  const chooser = document.getElementById('tenant-switch');
  if (chooser) chooser.addEventListener('submit', async (e) => {
    e.preventDefault();
    const tenant_id = document.getElementById('tenant-choice').value;
    const res = await fetch('/auth/session/tenant', { method: 'POST', headers: { 'Content-Type': 'application/json' }, credentials: 'include', body: JSON.stringify({ tenant_id }) });
    if (res.ok) location.reload();
    else document.getElementById('tenant-switch-result').textContent = 'Not switched (' + res.status + '): ' + ((await res.json().catch(() => ({}))).detail ?? '');
  });
  document.getElementById('sign-out').addEventListener('click', async () => {
    const res = await fetch('/api/v1/auths/signout', { method: 'POST', headers: { 'Content-Type': 'application/json' }, credentials: 'include' })
      .then((r) => r.json()).catch(() => null);
    localStorage.removeItem('token');
    location.href = res?.redirect_url ?? '/auth?state=logout';
  });
}
main();
`;

// 1x1 transparent PNG
const PNG_BYTES = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');

/** Any GET that is no route: the single-page app's shell, as the upstream's SPA static mount answers. */
export function sendAppShell(ctx: Ctx): void {
  sendHtml(ctx, 200, SPA_SHELL);
}

export function registerMetaRoutes(router: Router, state: StandInState): void {
  const { route } = router;
  const { release, trusted, flags } = state;

  // meta
  route('GET', '/health', (ctx) => sendJson(ctx, 200, { status: true }));
  route('GET', '/health/db', (ctx) => sendJson(ctx, 200, { status: true }));
  route('GET', '/ready', (ctx) => sendJson(ctx, 200, { status: true }));
  // main.py get_app_version: public, the package's version and DEPLOYMENT_ID ('' unless set)
  route('GET', '/api/version', (ctx) =>
    release.answer
      ? send(ctx, release.answer.status, Buffer.from(release.answer.body), 'application/json')
      : sendJson(ctx, 200, { version: release.version, deployment_id: '' }),
  );
  route('GET', '/manifest.json', (ctx) =>
    sendJson(ctx, 200, {
      name: 'Open WebUI',
      short_name: 'Open WebUI',
      description: 'Open WebUI is an open, extensible, user-friendly interface for AI.',
      start_url: '/',
      display: 'standalone',
      background_color: '#343541',
      icons: [{ src: '/static/logo.png', type: 'image/png', sizes: '500x500', purpose: 'any' }],
    }),
  );
  route('GET', '/api/config', async (ctx) => {
    // 0.12.4 main.py get_app_config: the public features for everyone, the rest (admin flags
    // included) only for a caller whose token names a user.
    const token = findToken(ctx.req);
    const signedIn = state.adminFlagsInConfig === 'anyone' || (token !== undefined && (await userOfToken(state, token).catch(() => undefined)) !== undefined);
    sendJson(ctx, 200, {
      status: true,
      name: 'Open WebUI',
      version: release.version,
      default_locale: '',
      i18n: {},
      oauth: { providers: {}, auto_redirect: false },
      features: {
        slim: false,
        auth: true,
        auth_trusted_header: Boolean(trusted.email),
        enable_signup_password_confirmation: false,
        enable_ldap: false,
        enable_signup: false,
        enable_login_form: true,
        enable_websocket: true,
        ...(signedIn
          ? {
              enable_api_keys: true,
              enable_community_sharing: true,
              enable_admin_export: flags.enableAdminExport,
              enable_admin_chat_access: flags.enableAdminChatAccess,
              enable_admin_analytics: true,
            }
          : {}),
      },
    });
  });
}

export function registerStaticRoutes(router: Router, state: StandInState): void {
  const { route } = router;

  // static assets
  route('GET', '/static/*', (ctx) => {
    const ext = (/\.([a-z0-9]+)$/i.exec(ctx.path)?.[1] ?? '').toLowerCase();
    if (ext === 'png') return send(ctx, 200, PNG_BYTES, 'image/png', { 'cache-control': 'public, max-age=3600' });
    if (ctx.path === '/static/app.js') return send(ctx, 200, Buffer.from(standInAppJs(state.flags)), 'text/javascript; charset=utf-8');
    if (ext === 'js') return send(ctx, 200, Buffer.from('console.log("open-webui stand-in");\n'), 'text/javascript; charset=utf-8');
    if (ext === 'css') return send(ctx, 200, Buffer.from('body{margin:0}\n'), 'text/css; charset=utf-8');
    return send(ctx, 200, Buffer.from(`static ${ctx.path}\n`), 'application/octet-stream');
  });
}
