// A value sealed for the browser to carry: JSON in a JWE made with jose (`dir`, `A256GCM`), under a
// key derived by HKDF-SHA256 (salt empty, `info` naming what it seals) from each SESSION_SECRET. The
// first secret seals, every one opens (rotation). The session cookie and the sign-in transaction
// cookie are sealed so, each under its own `info`.
import { hkdfSync } from 'node:crypto';
import { CompactEncrypt, compactDecrypt, type CompactJWEHeaderParameters } from 'jose';

const JWE_OPTIONS = { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] };
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface Opened {
  value: unknown;
  header: CompactJWEHeaderParameters;
}

export class Sealer {
  private readonly keys: Buffer[];

  constructor(secrets: readonly string[], info: string) {
    if (!secrets.length) throw new Error('SESSION_SECRET is required');
    this.keys = secrets.map((s) => Buffer.from(hkdfSync('sha256', s, Buffer.alloc(0), info, 32)));
  }

  /** `value` sealed with the first key; `header` joins the protected header after `alg` and `enc`. */
  seal(value: unknown, header: Record<string, unknown> = {}): Promise<string> {
    return new CompactEncrypt(encoder.encode(JSON.stringify(value))).setProtectedHeader({ alg: 'dir', enc: 'A256GCM', ...header }).encrypt(this.keys[0]!);
  }

  /** What a key of the rotation opens, or undefined for anything not sealed here (or not JSON). */
  async open(jwe: string): Promise<Opened | undefined> {
    for (const key of this.keys) {
      let opened: Awaited<ReturnType<typeof compactDecrypt>>;
      try {
        opened = await compactDecrypt(jwe, key, JWE_OPTIONS);
      } catch {
        continue; // the next key of the rotation
      }
      try {
        return { value: JSON.parse(decoder.decode(opened.plaintext)), header: opened.protectedHeader };
      } catch {
        return undefined;
      }
    }
    return undefined;
  }
}
