// The catalog's service-account token (gateway/login/catalog.ts), now requested through
// openid-client: what Keycloak receives (client_credentials, the client in HTTP Basic only) and
// what each failure is called where readiness shows it. The catalog fails closed on every one.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { KeycloakAdminSource } from '../../gateway/login/catalog.js';

const ADMIN = 'http://kc.invalid/admin/realms/platform';
const TOKEN = 'http://kc.invalid/realms/platform/protocol/openid-connect/token';

function source(answer: (url: string, init: RequestInit) => Promise<Response>) {
  const seen: Array<{ url: string; init: RequestInit }> = [];
  const http = (async (url: string | URL | Request, init?: RequestInit) => {
    seen.push({ url: String(url), init: init ?? {} });
    return answer(String(url), init ?? {});
  }) as typeof fetch;
  const s = new KeycloakAdminSource(ADMIN, 'chat gateway', 's3cret:+/', http, 1_000, () => Date.now(), new AbortController().signal);
  return { s, seen };
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

describe('the catalog’s service-account token', () => {
  it('asks the realm’s token endpoint for client_credentials with the client in HTTP Basic only, then the admin API with it', async () => {
    const { s, seen } = source(async (url) => (url === TOKEN ? json(200, { access_token: 'sa-token', token_type: 'Bearer', expires_in: 300 }) : json(200, [])));
    expect(await s.list()).to.deep.equal([]);
    const token = seen[0]!;
    expect(token.url).to.equal(TOKEN);
    expect(token.init.method).to.equal('POST');
    const headers = new Headers(token.init.headers);
    const basic = Buffer.from(headers.get('authorization')!.replace(/^Basic /, ''), 'base64').toString();
    // RFC 6749 2.3.1: each part form-urlencoded, so a ':' in the secret cannot split it
    const formDecoded = (part: string) => new URLSearchParams(`x=${part}`).get('x');
    expect(basic.split(':').map(formDecoded)).to.deep.equal(['chat gateway', 's3cret:+/']);
    const form = new URLSearchParams(await new Response(token.init.body).text());
    expect(form.get('grant_type')).to.equal('client_credentials');
    expect(form.has('client_secret'), 'the secret never in the body').to.equal(false);
    expect(new Headers(seen[1]!.init.headers).get('authorization')).to.equal('Bearer sa-token');
  });

  for (const [why, answer, message] of [
    ['refused (401, OAuth error)', async () => json(401, { error: 'unauthorized_client' }), /service-account token refused: HTTP 401/],
    ['a 500 that is not JSON', async () => new Response('down', { status: 500 }), /service-account token refused: HTTP 500/],
    ['a 200 without an access token', async () => json(200, { token_type: 'Bearer' }), /service-account token/],
    ['no answer at all', async () => Promise.reject(new TypeError('fetch failed')), /Keycloak request failed: fetch failed/],
  ] as const) {
    it(`${why}: the catalog is unavailable, said in words`, async () => {
      const { s } = source(answer);
      let err: Error | undefined;
      await s.list().catch((e: Error) => (err = e));
      expect(err?.name).to.equal('CatalogUnavailableError');
      expect(err?.message).to.match(message);
    });
  }
});

describe('the catalog’s requests to a Keycloak that hangs', () => {
  it('each gives up at its timeout, also when garbage is collected meanwhile (Node 20 lost a timeout only AbortSignal.any listened to)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const held: http.ServerResponse[] = [];
    const hung = http.createServer((_req, res) => void held.push(res));
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    const admin = `http://127.0.0.1:${(hung.address() as AddressInfo).port}/admin/realms/platform`;
    const collecting = setInterval(gc, 50);
    try {
      for (let i = 0; i < 3; i++) {
        const s = new KeycloakAdminSource(admin, 'chat-gateway', 'secret', fetch, 500, () => Date.now(), new AbortController().signal);
        const started = Date.now();
        const err = await Promise.race([
          s.list().then(
            () => new Error('answered'),
            (e: Error) => e,
          ),
          new Promise<Error>((resolve) => setTimeout(() => resolve(new Error('still waiting after 3 s')), 3_000)),
        ]);
        expect(err.message).to.match(/no answer within 500 ms/);
        expect(Date.now() - started).to.be.below(1_500);
      }
    } finally {
      clearInterval(collecting);
      for (const res of held) res.destroy();
      hung.close();
    }
  });
});
