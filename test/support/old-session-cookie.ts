// A session cookie value as the gateway wrote it before it owned the format (express-openid-connect
// 3.4's layout: JWE dir + A256GCM by hand, key HKDF-SHA256(secret, '', 'JWE CEK'), protected header
// {alg, enc, iat, uat, exp} without a version). Written independently of gateway/auth/session.ts,
// so that tests prove cookies issued before version 2 are still read.
import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';

export const sessionKey = (secret: string) => Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'JWE CEK', 32));

export function oldLayoutCookie(secret: string, data: unknown, header: { iat: number; uat: number; exp: number }): string {
  const b64u = (b: Buffer) => b.toString('base64url');
  const protectedHeader = b64u(Buffer.from(JSON.stringify({ alg: 'dir', enc: 'A256GCM', ...header })));
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sessionKey(secret), iv);
  cipher.setAAD(Buffer.from(protectedHeader, 'ascii'));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(data), 'utf8'), cipher.final()]);
  return `${protectedHeader}..${b64u(iv)}.${b64u(ciphertext)}.${b64u(cipher.getAuthTag())}`;
}

/** The Cookie header of a value cut as express-openid-connect cut it (chunks of 4096 bytes less its empty cookie's line). */
export function oldLayoutChunks(value: string): string {
  const empty = `appSession.0=; Path=/; Expires=${new Date().toUTCString()}; HttpOnly; SameSite=Lax`;
  const size = 4096 - empty.length;
  const pairs: string[] = [];
  for (let i = 0; i * size < value.length; i++) pairs.push(`appSession.${i}=${value.slice(i * size, (i + 1) * size)}`);
  return pairs.join('; ');
}
