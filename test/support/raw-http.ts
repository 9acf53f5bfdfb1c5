// Shared helpers of the hardening tests (test/hardening-*.test.ts): raw sockets, so that nothing
// on the client side normalizes what is sent, a small HTTP/1.x response parser for pipelined
// answers, and the seed data in which every foreign record carries a recognizable marker.
import net from 'node:net';
import { freePort } from '../../sandbox/ports.js';
import type { StandInChat, StandInFile, StandInUser } from '../../sandbox/open-webui/stand-in.js';
import { sleep } from './wait.js';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  /** every header line as received, lower-cased names (duplicates kept) */
  headerLines: Array<[string, string]>;
  body: string;
}

/**
 * Parse every HTTP/1.x response in `text` (latin1), in order: pipelined answers, 100 Continue
 * interim answers included. `methods` are the requests' methods in order (HEAD answers have no
 * body). A truncated last response is returned with what arrived.
 */
export function parseResponses(text: string, methods: string[] = []): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = text;
  let finals = 0;
  while (rest.startsWith('HTTP/')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const status = Number(statusLine!.split(' ')[1]);
    const headerLines: Array<[string, string]> = lines.map((l) => {
      const i = l.indexOf(':');
      return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()];
    });
    const headers = Object.fromEntries(headerLines);
    rest = rest.slice(end + 4);
    let body = '';
    const head = status >= 200 && methods[finals] === 'HEAD';
    if (status >= 200) finals++;
    const noBody = head || status < 200 || status === 204 || status === 304;
    if (noBody) {
      // headers only
    } else if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
      for (;;) {
        const lineEnd = rest.indexOf('\r\n');
        if (lineEnd < 0) break;
        const size = parseInt(rest.slice(0, lineEnd), 16);
        if (!Number.isFinite(size)) break;
        if (size === 0) {
          const trailerEnd = rest.indexOf('\r\n\r\n');
          rest = trailerEnd < 0 ? '' : rest.slice(trailerEnd + 4);
          break;
        }
        body += rest.slice(lineEnd + 2, lineEnd + 2 + size);
        rest = rest.slice(lineEnd + 2 + size + 2);
      }
    } else if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length']);
      body = rest.slice(0, n);
      rest = rest.slice(n);
    } else {
      body = rest;
      rest = '';
    }
    out.push({ status, headers, headerLines, body });
  }
  return out;
}

/**
 * Send exactly `bytes` over a fresh connection and collect what comes back until the server
 * closes, or `waitMs` passes (then the socket is destroyed).
 */
export function rawExchange(port: number, bytes: string | Buffer, waitMs = 3000): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    let done = false;
    const finish = (closedByServer: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closedByServer });
    };
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('error', (err: Error & { code?: string }) => (err.code === 'ECONNRESET' ? finish(true) : reject(err)));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    const timer = setTimeout(() => finish(false), waitMs);
  });
}

/** One request, one answer (the first final response), over a fresh connection. */
export async function rawRequest(port: number, bytes: string, waitMs = 3000): Promise<RawResponse & { raw: string }> {
  const { text } = await rawExchange(port, bytes, waitMs);
  const final = parseResponses(text, [bytes.slice(0, bytes.indexOf(' '))]).find((r) => r.status >= 200);
  return { ...(final ?? { status: 0, headers: {}, headerLines: [], body: '' }), raw: text };
}

/** A port that was free a moment ago (for settings that must know the port before listening). */
export { freePort };

/** A port nothing listens on (connections are refused). */
export const deadPort = freePort;

/** Open connections of a server (http.Server.getConnections as a promise). */
export function connectionsOf(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

/** Wait until `probe()` is at most `bound`, polling, for up to `ms`; returns the last value. */
export async function settleTo(probe: () => number | Promise<number>, bound: number, ms = 3000): Promise<number> {
  const until = Date.now() + ms;
  let v = await probe();
  while (v > bound && Date.now() < until) {
    await sleep(25);
    v = await probe();
  }
  return v;
}

/** Something a stack trace leaves in a body: `at fn (file:line:col)` or a file path. */
export const STACK_TRACE = /\n\s+at |\bat [\w.<>]+ \(|node:internal|\/work\/|\.ts:\d+:\d+|Error: /;

// ---- seed data: the admin's own records, and foreign ones carrying FOREIGN_MARKER -------------

export const FOREIGN_MARKER = 'globex-secret';
const now = Math.floor(Date.now() / 1000);

export const seedUsers: StandInUser[] = [
  { id: 'u-admin', email: 'sysadmin@platform.example', name: 'Sam Sysadmin', role: 'admin', groups: [] },
  { id: 'u-alice', email: 'alice@acme.example', name: 'Alice Acme', role: 'user', groups: [] },
  { id: 'u-bob', email: 'bob@globex.example', name: 'Bob Globex', role: 'user', groups: [] },
];

export const seedFile = (id: string, user_id: string, filename: string, age: number): StandInFile => ({
  id,
  user_id,
  hash: null,
  filename,
  data: { content: `text of ${filename}` },
  meta: { name: filename, content_type: 'text/plain', size: 10 },
  created_at: now - age,
  updated_at: now - age,
});

export function seedFiles(): StandInFile[] {
  const files: StandInFile[] = [];
  for (let i = 0; i < 6; i++) files.push(seedFile(`f-admin-${i}`, 'u-admin', `admin-${i}.txt`, 10 + i * 10));
  for (let i = 0; i < 6; i++) files.push(seedFile(`f-bob-${i}`, 'u-bob', `${FOREIGN_MARKER}-${i}.txt`, 15 + i * 10));
  for (let i = 0; i < 3; i++) files.push(seedFile(`f-alice-${i}`, 'u-alice', `acme-${FOREIGN_MARKER}-${i}.txt`, 17 + i * 10));
  return files;
}

export function seedChats(): StandInChat[] {
  return seedUsers.map((u, i) => ({
    id: `c-${u.id}`,
    user_id: u.id,
    title: `chat of ${u.name}`,
    chat: { messages: [{ role: 'user', content: u.id === 'u-admin' ? 'own words' : `${FOREIGN_MARKER} of ${u.name}` }] },
    created_at: now - i,
    updated_at: now - i,
    share_id: null,
    archived: false,
    pinned: false,
    meta: {},
    folder_id: null,
  }));
}
