// A sealed value: opened by every secret of the rotation, by no other secret and under no other
// `info`, and read back as the JSON that was sealed, its extra protected header with it.
import { expect } from 'chai';
import { compactDecrypt, decodeProtectedHeader } from 'jose';
import { hkdfSync } from 'node:crypto';
import { Sealer } from '../../gateway/auth/sealed.js';

describe('Sealer (gateway/auth/sealed.ts)', () => {
  const value = { state: 's', nested: { n: 1 }, list: ['a'] };

  it('seals with the first secret and opens with any of the rotation', async () => {
    const sealed = await new Sealer(['new-secret', 'old-secret'], 'what').seal(value, { v: 2, iat: 1 });
    expect((await new Sealer(['new-secret'], 'what').open(sealed))?.value).to.deep.equal(value);
    expect((await new Sealer(['other', 'new-secret'], 'what').open(sealed))?.value).to.deep.equal(value);
    expect(await new Sealer(['old-secret'], 'what').open(sealed)).to.equal(undefined);
  });

  it('a value sealed under one `info` does not open under another', async () => {
    const sealed = await new Sealer(['secret'], 'sign-in transaction').seal(value);
    expect(await new Sealer(['secret'], 'JWE CEK').open(sealed)).to.equal(undefined);
  });

  it('the protected header is `dir`, `A256GCM` and the extra fields; the key is HKDF-SHA256(secret, no salt, info, 32 bytes)', async () => {
    const sealed = await new Sealer(['secret'], 'JWE CEK').seal(value, { v: 2, iat: 1, uat: 2, exp: 3 });
    expect(decodeProtectedHeader(sealed)).to.deep.equal({ alg: 'dir', enc: 'A256GCM', v: 2, iat: 1, uat: 2, exp: 3 });
    const key = Buffer.from(hkdfSync('sha256', 'secret', Buffer.alloc(0), 'JWE CEK', 32));
    const { plaintext } = await compactDecrypt(sealed, key);
    expect(JSON.parse(new TextDecoder().decode(plaintext))).to.deep.equal(value);
    expect((await new Sealer(['secret'], 'JWE CEK').open(sealed))?.header).to.deep.include({ v: 2, iat: 1, uat: 2, exp: 3 });
  });

  it('anything else is undefined, never an error: garbage, a JWT, a tampered value', async () => {
    const sealer = new Sealer(['secret'], 'x');
    const sealed = await sealer.seal(value);
    const tampered = `${sealed.slice(0, -3)}${sealed.endsWith('A') ? 'B' : 'A'}${sealed.slice(-2)}`;
    for (const bad of ['', 'garbage', 'a.b.c', 'a.b.c.d.e', tampered]) expect(await sealer.open(bad), bad).to.equal(undefined);
  });

  it('no secret is a configuration error', () => {
    expect(() => new Sealer([], 'x')).to.throw('SESSION_SECRET is required');
  });
});
