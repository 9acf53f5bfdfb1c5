// The realm's pages in the sandbox's OpenID provider: laid out as a plain Keycloak realm's (its
// element ids, which the scripted browsers and the Keycloak suite look for), every value escaped.

export function esc(s: unknown): string {
  return String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Looks like a plain realm login page (Keycloak's layout, no theme): a card on a grey page. */
const REALM_STYLE = `
*,*::before,*::after{box-sizing:border-box}
html{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;line-height:1.5;color:#1b1f24;background:#eef0f3}
body{margin:0;min-height:100vh;display:flex;flex-direction:column;align-items:center;padding:3rem 1rem}
#kc-header{font-size:1.1rem;letter-spacing:.2em;text-transform:uppercase;color:#4a5568;margin-bottom:1.5rem}
#kc-content{background:#fff;width:100%;max-width:24rem;padding:2rem;border-top:4px solid #0066cc;border-radius:.25rem;box-shadow:0 1px 4px rgba(0,0,0,.15)}
h1{font-size:1.4rem;font-weight:500;text-align:center;margin:0 0 1.5rem}
label{display:block;font-size:.9rem;margin:0 0 .25rem}
input[type=text],input[type=password]{display:block;width:100%;padding:.5rem .6rem;margin:0 0 1rem;border:1px solid #b8bec7;border-radius:.2rem;font-size:1rem}
input:focus{outline:2px solid #0066cc;outline-offset:0;border-color:#0066cc}
button{display:block;width:100%;padding:.6rem;border:0;border-radius:.2rem;background:#0066cc;color:#fff;font-size:1rem;cursor:pointer}
button:hover{background:#004f9e}
button.secondary{background:none;color:#0066cc;margin-top:.5rem}
.alert-error{background:#fdecea;border-left:4px solid #c9190b;padding:.5rem .75rem;margin:0 0 1rem;font-size:.9rem}
.note{font-size:.8rem;color:#4a5568;background:#f5f7fa;border-radius:.2rem;padding:.5rem .75rem;margin:0 0 1rem}
`;

export function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>${REALM_STYLE}</style></head>
<body><div id="kc-header">Platform</div><div id="kc-content">${body}</div></body></html>`;
}

export function loginPage(uid: string, params: Record<string, unknown>, opts: { error?: string; username?: string } = {}): string {
  const hint = typeof params.kc_idp_hint === 'string' ? params.kc_idp_hint : '';
  // The brokered providers do not exist in the sandbox: a small note names the one the hint asked
  // for (Keycloak would have gone straight there); the realm's own form stands in for it.
  const note = hint
    ? `<p class="note" id="hint-note">Provider <strong><span id="idp-hint" data-hint="${esc(hint)}">${esc(hint)}</span></strong> was asked for. It does not exist in this sandbox: sign in here with a demo login instead.</p>`
    : `<span id="idp-hint" data-hint="" hidden></span>`;
  return page(
    'Sign in to platform',
    `<h1 id="kc-page-title">Sign in to your account</h1>
${note}
${opts.error ? `<div id="input-error" class="alert-error" role="alert">${esc(opts.error)}</div>` : ''}
<form id="kc-form-login" action="/interaction/${esc(uid)}/login" method="post">
  <label for="username">Username or email</label>
  <input id="username" name="username" type="text" autocomplete="username" value="${esc(opts.username ?? '')}" autofocus>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password">
  <button id="kc-login" name="login" type="submit">Sign In</button>
</form>
<form id="kc-form-cancel" action="/interaction/${esc(uid)}/abort" method="post"><button id="kc-cancel" class="secondary" type="submit">Cancel</button></form>`,
  );
}
