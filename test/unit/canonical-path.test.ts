// The canonical form is the only path the policy judges and the only path forwarded.
import { expect } from 'chai';
import fc from 'fast-check';
import { canonicalize, decodeTarget } from '../../gateway/http/canonical-path.js';

const ok = (raw: string) => {
  const r = canonicalize(raw);
  if (!r.ok) throw new Error(`${raw} refused: ${r.reason}`);
  return r.target.url;
};
const refused = (raw: string) => {
  const r = canonicalize(raw);
  expect(r.ok, `${raw} should be refused`).to.equal(false);
  return r.ok ? '' : r.reason;
};

describe('canonical request targets', () => {
  it('keeps ordinary targets exactly as sent', () => {
    for (const t of ['/', '/api/v1/files/', '/api/v1/files', '/api/v1/files/search?filename=*.pdf&limit=5', '/c/abc-123', '/static/app.js?v=1'])
      expect(ok(t)).to.equal(t);
  });

  it('resolves every spelling of a protected path to one form', () => {
    const variants = [
      '/api/v1/chats/all/db',
      '//api//v1///chats/all/db',
      '/api/v1/x/../chats/all/db',
      '/api/v1/x/%2e%2e/chats/all/db',
      '/api/v1/x/%2E%2e/chats/all/db',
      '/api/v1/./chats/./all/db',
      '/api/v1/chats/all/%2e/db',
      '/%61pi/v1/ch%61ts/all/db',
      '/api/%76%31/chats/all/db',
      '/api/v1/chats/all/db/x/..',
    ];
    for (const v of variants) expect(ok(v).replace(/\/$/, ''), v).to.equal('/api/v1/chats/all/db');
  });

  it('keeps the trailing slash, which separates two upstream routes', () => {
    expect(ok('/api/v1/files/')).to.equal('/api/v1/files/');
    expect(ok('/api/v1/files/.')).to.equal('/api/v1/files/');
    expect(ok('/api/v1/files/x/..')).to.equal('/api/v1/files/');
  });

  it('normalizes escapes: unreserved decoded, others upper-case, unsafe raw characters escaped', () => {
    expect(ok('/a/%7e%41')).to.equal('/a/~A');
    expect(ok('/a/%3f%25%20')).to.equal('/a/%3F%25%20');
    expect(ok('/a/%25')).to.equal('/a/%25');
    expect(ok('/a/%25zz')).to.equal('/a/%25zz');
    expect(ok('/a/%e2%82%ac')).to.equal('/a/%E2%82%AC');
    expect(ok('/a/{x}|^"<>`')).to.equal('/a/%7Bx%7D%7C%5E%22%3C%3E%60');
    expect(ok('/a/%21')).to.equal('/a/!');
  });

  it('reads an encoded slash as the separator uvicorn makes of it before Starlette routes, then resolves the path', () => {
    expect(ok('/api/v1/chats%2Fall%2Fdb')).to.equal('/api/v1/chats/all/db');
    expect(ok('/api/v1/chats%2fall/db')).to.equal('/api/v1/chats/all/db');
    expect(ok('/api/v1/analytics/models/openai%2Fgpt-4o/overview?days=7')).to.equal('/api/v1/analytics/models/openai/gpt-4o/overview?days=7');
    // what it makes of dot segments and repeated slashes is what a raw '/' would have made
    expect(ok('/api/v1/x%2F..%2Fchats/all/db')).to.equal('/api/v1/chats/all/db');
    expect(ok('/api/v1/files%2F%2F')).to.equal('/api/v1/files/');
    expect(refused('/%2F..%2F..')).to.match(/above the root/);
    // twice encoded, it is a `%2F` after one decoding: refused as double encoding
    expect(refused('/api/v1/chats%252Fall')).to.match(/double percent-encoding/);
  });

  it('refuses what has no single safe reading', () => {
    expect(refused('/api/v1/chats%5Call/db')).to.match(/encoded backslash/);
    expect(refused('/api/v1\\chats/all/db')).to.match(/backslash/);
    expect(refused('/api/v1/chats/all;jsessionid=1/db')).to.match(/;/);
    expect(refused('/api/v1/chats/all/db%00')).to.match(/NUL/);
    expect(refused('/api/v1/chats/all/db%0a')).to.match(/control/);
    expect(refused('/api/v1/%C0%AE%C0%AE/x')).to.match(/UTF-8/); // overlong '.'
    expect(refused('/api/v1/%C0%AF')).to.match(/UTF-8/); // overlong '/'
    expect(refused('/api/v1/%E2%82')).to.match(/UTF-8/); // truncated sequence
    expect(refused('/api/v1/%ff')).to.match(/UTF-8/);
    expect(refused('/api/v1/chats/all/db#x')).to.match(/fragment/);
    expect(refused('/api/v1/%zz')).to.match(/percent-escape/);
    expect(refused('/api/v1/%2')).to.match(/percent-escape/);
    expect(refused('/..')).to.match(/above the root/);
    expect(refused('/a/../../api/v1/chats/all/db')).to.match(/above the root/);
    expect(refused('http://evil/api/v1/chats/all/db')).to.match(/path/);
    expect(refused('*')).to.match(/path/);
    expect(refused('/a b')).to.match(/space/);
    expect(refused('/\u00e9')).to.match(/non-ASCII/);
    expect(refused('/a?x=%00')).to.match(/NUL/);
    expect(refused('/a?x=%g1')).to.match(/percent-escape/);
    expect(refused('')).to.match(/path/);
  });

  it('refuses encodings that another server could read differently: encoded ;, double encoding, dot segments behind parameters', () => {
    // A server that strips `;` parameters after decoding reads `..%3B` as `..`; one that decodes
    // twice reads `%2561` as `a` and `%252e%252e` as `..`.
    expect(refused('//%2e%2e%3b/api/v1/chats/all/db')).to.match(/%3B/);
    expect(refused('/api/v1/x/..%3B/chats/all/db')).to.match(/%3B/);
    expect(refused('/api/v1/x/.%3bfoo/chats/all/db')).to.match(/%3B/);
    expect(refused('/api/v1/chats/all%3B/db')).to.match(/%3B/);
    expect(refused('/%2561pi/v1/chats/all/db')).to.match(/double percent-encoding/);
    expect(refused('/api/v1/x/%252e%252e/chats/all/db')).to.match(/double percent-encoding/);
    expect(refused('/api/v1/chats%252Fall%252Fdb')).to.match(/double percent-encoding/);
    expect(refused('/api/v1/x/%25%32%65')).to.match(/double percent-encoding/);
  });

  it('no accepted target holds an encoded ;, a %25 before hex digits, or a dot segment once parameters are stripped', () => {
    // Property: whatever the client sends, an accepted canonical path is one that a server
    // stripping `;` parameters, or decoding a second time, reads the same way.
    const alphabet = ['/', '/', '.', '.', 'a', '%', '%', '2', '5', '3', 'b', 'B', 'e', 'E', '6', '1', ';', 'x'];
    const target = fc.array(fc.constantFrom(...alphabet), { maxLength: 20 }).map((cs) => '/' + cs.join(''));
    fc.assert(
      fc.property(target, (raw) => {
        const r = canonicalize(raw);
        if (!r.ok) return;
        const path = r.target.path;
        expect(path, raw).not.to.match(/%3B/i);
        expect(path, raw).not.to.match(/;/);
        expect(path, raw).not.to.match(/%25[0-9A-Fa-f]{2}/);
        // decoding once more changes nothing that matters: no new `/`, `.` segments or escapes
        const twice = decodeURIComponent(path);
        for (const seg of twice.split('/')) expect(seg === '.' || seg === '..', `${raw} -> ${path}`).to.equal(false);
      }),
      { numRuns: 20_000 },
    );
  });

  it('is stable: canonical targets canonicalize to themselves and survive a URL parser', () => {
    for (const t of ['/api/v1/x/%2e%2e/chats/all/db', '/a/%7e%21%3f', '/a/{x}', '/a/%e2%82%ac/b/?q=%41%20b&c="x"', '//x//y/']) {
      const once = ok(t);
      expect(ok(once)).to.equal(once);
      const u = new URL(once, 'http://h');
      expect(u.pathname + u.search).to.equal(once);
    }
  });

  it('answers already-canonical targets without decoding them, exactly as the full decoding does', () => {
    // Both ways must agree on every target: the fast path only skips work, never changes an answer.
    const alphabet = [
      '/',
      '/',
      '/',
      '.',
      '.',
      'a',
      'Z',
      '0',
      '-',
      '_',
      '~',
      '%',
      '2',
      'e',
      'F',
      '?',
      '=',
      '&',
      "'",
      '"',
      '<',
      '>',
      '\\',
      '#',
      ' ',
      ';',
      ':',
      '@',
      '!',
      '(',
      '{',
      '`',
      '|',
      '^',
      '\u00e9',
      '\u0000',
      '\u007f',
    ];
    const target = fc.array(fc.constantFrom(...alphabet), { maxLength: 24 }).map((cs) => '/' + cs.join(''));
    fc.assert(
      fc.property(target, (raw) => {
        expect(canonicalize(raw)).to.deep.equal(decodeTarget(raw));
      }),
      { numRuns: 20_000 },
    );
    for (const raw of [
      '/',
      '/api/v1/files/',
      '/api/v1/files/?page=2&limit=50',
      '/a?',
      '/a/.',
      '/a/..',
      '/a/.../b',
      '/a/.b/',
      "/a?x='1'",
      '/a?x=\\',
      '/a?b?c',
      '/api/v1/bench/small',
    ]) {
      expect(canonicalize(raw), raw).to.deep.equal(decodeTarget(raw));
    }
  });
});
