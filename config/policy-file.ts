// POLICY_FILE's bytes: the one place it is read, at start and whenever it may have changed
// (gateway/policy-watch.ts). What the text means is config/policy.ts.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** A policy file is a few lines; anything larger is a mistake (a wrong path), refused before it is read. */
export const POLICY_FILE_MAX_BYTES = 64 * 1024;

/** The file's text, or why it cannot be read (naming POLICY_FILE and the path). Opened once: the bytes are those of one file. */
export function readPolicyFile(path: string): { ok: true; text: string } | { ok: false; problem: string } {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    if (size > POLICY_FILE_MAX_BYTES)
      return { ok: false, problem: `POLICY_FILE ${path}: ${size} bytes, more than the ${POLICY_FILE_MAX_BYTES} a policy file may hold` };
    const buf = Buffer.alloc(size);
    let read = 0;
    while (read < size) {
      const n = readSync(fd, buf, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    return { ok: true, text: buf.subarray(0, read).toString('utf8') };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EISDIR' ? 'a directory, not a file' : e.code === 'EACCES' ? 'not readable' : e.message;
    return { ok: false, problem: `POLICY_FILE ${path}: ${why}` };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
