// The scripted browsers' one cookie jar (sandbox/cookie-jar.ts) keeps cookies as RFC 6265 has a
// browser keep them: per host name whatever the port, a missing Path defaulting to the request's
// folder, Max-Age before Expires, a past expiry deleting, values as sent.
import { expect } from 'chai';
import { CookieJar } from '../../sandbox/cookie-jar.js';

describe('CookieJar (sandbox/cookie-jar.ts)', () => {
  it('sends a cookie to its path and below it, not to a sibling', () => {
    const jar = new CookieJar('http://127.0.0.1:8080');
    jar.store(['tx=1; Path=/auth/callback; HttpOnly', 's=2; Path=/'], '/auth/start');
    expect(jar.header('/auth/callback')).to.equal('tx=1; s=2');
    expect(jar.header('/auth/callback/x')).to.equal('tx=1; s=2');
    expect(jar.header('/auth/callbacks')).to.equal('s=2');
    expect(jar.header('/')).to.equal('s=2');
  });

  it('a cookie without Path (or with one not starting with /) is the folder of the URL that set it', () => {
    const jar = new CookieJar('http://127.0.0.1:8080');
    jar.store(['a=1', 'b=2; Path=relative'], '/realms/platform/login');
    expect(jar.header('/realms/platform/x')).to.equal('a=1; b=2');
    expect(jar.header('/realms/other')).to.equal('');
    jar.store(['c=3'], '/top');
    expect(jar.header('/anything')).to.equal('c=3');
  });

  it('keeps cookies per host name, shared by its ports as a browser shares them; never sent to another host', () => {
    const jar = new CookieJar();
    jar.store(['s=1; Path=/'], 'http://127.0.0.1:1111/x');
    expect(jar.header('http://127.0.0.1:2222/')).to.equal('s=1');
    expect(jar.header('http://localhost:1111/')).to.equal('');
  });

  it('Max-Age wins over Expires; a past expiry or Max-Age=0 deletes; an expired cookie is not sent', () => {
    const jar = new CookieJar('http://127.0.0.1');
    const past = new Date(Date.now() - 60_000).toUTCString();
    const future = new Date(Date.now() + 60_000).toUTCString();
    jar.store([`a=1; Max-Age=60; Expires=${past}`, `b=2; Max-Age=0; Expires=${future}`, `c=3; Expires=${future}`, 'd=4']);
    expect(jar.names()).to.deep.equal(['a', 'c', 'd']);
    jar.store([`c=; Expires=${past}`, 'd=; Max-Age=0']);
    expect(jar.header()).to.equal('a=1');
  });

  it('a cookie of the same name and path is replaced in place; another path is another cookie', () => {
    const jar = new CookieJar('http://127.0.0.1');
    jar.store(['s=old; Path=/', 't=1; Path=/'], '/');
    jar.store(['s=new; Path=/', 's=deep; Path=/api'], '/');
    expect(jar.header('/')).to.equal('s=new; t=1');
    expect(jar.header('/api/x')).to.equal('s=deep; s=new; t=1');
  });

  it('values are kept as sent (base64url, dots, percent signs): never decoded', () => {
    const jar = new CookieJar('http://127.0.0.1');
    jar.store(['appSession=eyJ.a-b_c.%41%2F; Path=/; HttpOnly; SameSite=Lax']);
    expect(jar.get('appSession')).to.equal('eyJ.a-b_c.%41%2F');
  });

  it('a clone is a copy: what either stores later leaves the other as it was', () => {
    const jar = new CookieJar('http://127.0.0.1');
    jar.store(['s=1; Path=/']);
    const copy = jar.clone();
    copy.store(['s=2; Path=/']);
    jar.store(['t=3; Path=/']);
    expect([jar.header(), copy.header()]).to.deep.equal(['s=1; t=3', 's=2']);
  });

  it('a path alone needs the jar to have an origin', () => {
    expect(() => new CookieJar().header('/x')).to.throw(/no origin/);
  });
});
