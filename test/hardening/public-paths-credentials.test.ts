// Anonymous requests to the chat front-end's public paths (static assets, /health, the manifest:
// policies/routes.ts `public`) carry no credential of the chat front-end upstream: the gateway
// checked none, so a client's own `token` cookie, Authorization or x-api-key never goes along (its
// other cookies do). A signed-in request to the same paths sends its identity's own token, as before.
import { expect } from 'chai';
import { browse, signIn, startWorld, type World } from '../support/cookie-jar.js';

describe('public paths: an anonymous request forwards no client credential', function () {
  this.timeout(20_000);
  let w: World;
  before(async () => {
    w = await startWorld();
  });
  after(() => w?.close());

  const lastSeen = (path: string) => w.upstream.requests.filter((r) => r.url === path).pop();

  for (const path of [
    '/static/splash.png',
    '/_app/immutable/entry/start.js',
    '/favicon/favicon.svg',
    '/health',
    '/manifest.json',
    '/favicon.png',
    '/robots.txt',
  ])
    it(`${path}: no token cookie, Authorization or x-api-key upstream; other cookies kept`, async () => {
      const res = await fetch(`${w.url}${path}`, {
        headers: {
          cookie: 'theme=dark; token=eyJhbGciOiJIUzI1NiJ9.eyJpZCI6InUtdmljdGltIn0.sig; token =eyJspaced; lang=de',
          authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJpZCI6InUtdmljdGltIn0.sig',
          'x-api-key': 'sk-0123456789abcdef',
        },
      });
      await res.arrayBuffer();
      const seen = lastSeen(path);
      expect(seen, 'forwarded').to.not.equal(undefined);
      expect(seen!.headers.authorization).to.equal(undefined);
      expect(seen!.headers['x-api-key']).to.equal(undefined);
      expect(seen!.headers.cookie).to.equal('theme=dark; lang=de');
    });

  it('signed in: the identity’s own token goes along, never the client’s', async () => {
    const { jar } = await signIn(w.url, 'alice');
    await browse(jar, '/static/splash.png', { headers: { cookie: `${jar.header('/')}; token=client-token`, authorization: 'Bearer client-token' } });
    const seen = lastSeen('/static/splash.png')!;
    expect(seen.headers.authorization).to.match(/^Bearer /);
    expect(seen.headers.authorization).to.not.equal('Bearer client-token');
    expect(String(seen.headers.cookie ?? '')).to.not.include('client-token');
  });
});
