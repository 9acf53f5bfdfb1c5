// Found by a review (fixed): withoutCookies (gateway/http/request-headers.ts) trims cookie names with JS
// String.prototype.trim, Starlette's cookie_parser with Python str.strip. They differ: U+0085 (NEL,
// byte 0x85, which Node's parser lets through as obs-text and Starlette decodes as latin-1) is
// whitespace to Python only. `\x85token=JWT` keeps its name to the gateway (not `token`, so not
// removed) and is Open WebUI's `token` cookie: an anonymous request to a public path forwards a
// client's Open WebUI credential after all (8e6e733), and the same trick carries `appSession`
// past withoutGatewayCookies.
import { expect } from 'chai';
import { startWorld, type World } from './support/cookie-jar.js';
import { rawExchange } from './support/raw-http.js';
import { sleep } from './support/wait.js';

/** starlette.requests.cookie_parser, as 0.12.4's Starlette has it (last duplicate wins). */
function starletteCookies(header: string): Record<string, string> {
  // Python str.strip() with no argument: every character for which str.isspace() is true.
  const py = '[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
  const strip = (s: string) => s.replace(new RegExp(`^${py}+|${py}+$`, 'g'), '');
  const out: Record<string, string> = {};
  for (const chunk of header.split(';')) {
    const eq = chunk.indexOf('=');
    const [k, v] = eq >= 0 ? [chunk.slice(0, eq), chunk.slice(eq + 1)] : ['', chunk];
    const key = strip(k);
    const val = strip(v);
    if (key || val) out[key] = val;
  }
  return out;
}

describe('cookie names are read as Starlette reads them (Python strip)', function () {
  this.timeout(20_000);
  let w: World;
  let port: number;
  before(async () => {
    w = await startWorld({});
    port = Number(new URL(w.url).port);
  });
  after(() => w?.close());

  it('an anonymous request to a public path: no cookie Starlette reads as `token` (or `appSession`) reaches Open WebUI', async () => {
    const mark = w.upstream.requests.length;
    const cookie = Buffer.from('theme=dark; \x85token=STOLEN-JWT; \x85appSession=GATEWAY', 'latin1');
    await rawExchange(
      port,
      Buffer.concat([Buffer.from('GET /static/app.js HTTP/1.1\r\nHost: x\r\nCookie: ', 'latin1'), cookie, Buffer.from('\r\nConnection: close\r\n\r\n')]),
      1500,
    );
    await sleep(50);
    const seen = w.upstream.requests.slice(mark).filter((r) => r.url.startsWith('/static/'));
    expect(seen.length, 'forwarded').to.equal(1);
    const parsed = starletteCookies(String(seen[0]!.headers.cookie ?? ''));
    expect({ token: parsed.token, appSession: parsed.appSession }).to.deep.equal({ token: undefined, appSession: undefined });
  });
});
