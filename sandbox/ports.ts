// Free ports for programs that must know theirs before they listen (the sandbox's gateway, whose
// PUBLIC_URL the realm needs first; Keycloak; Open WebUI; nginx and the gateway in the bench).
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';

/**
 * The kernel's range for the local ports of outgoing connections (Linux; elsewhere IANA's). A port
 * picked inside it can be taken by any connection opened before the program listens (CI lost a
 * run to that: EADDRINUSE on a port freePort had just returned), so free ports are picked below it.
 */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low && high && low <= high) return [low, high];
  } catch {
    // not Linux
  }
  return [49152, 65535];
}

/** Ports picked from: 10000 up to the ephemeral range, or above it; none (port 0) when neither has room. */
function pickRange(): [number, number] | undefined {
  const [low, high] = ephemeralRange();
  if (low - 10_000 >= 1_000) return [10_000, low - 1];
  if (65_535 - high >= 1_000) return [high + 1, 65_535];
  return undefined;
}

/**
 * The ports fetch refuses to connect to ("bad port", the Fetch standard's list, which Chromium
 * shares): a server on one of them cannot be reached by the tests' fetch or the browser.
 */
const FETCH_BAD_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137,
  139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Whether a client (fetch, a browser) may connect to `port`. */
export function reachablePort(port: number): boolean {
  return !FETCH_BAD_PORTS.has(port);
}

async function holdPort(host: string, port: number): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' || err.code === 'EACCES' ? resolve(undefined) : reject(err)));
    s.listen(port, host, () => resolve(s));
  });
}

/** A random port of `range` (0, the kernel's choice, without one). */
function randomCandidate(range: [number, number] | undefined): () => number {
  return () => (range ? range[0] + Math.floor(Math.random() * (range[1] - range[0] + 1)) : 0);
}

/**
 * Free ports (on 127.0.0.1 unless told) for programs that cannot listen on port 0 and say which (nginx, the
 * gateway whose PUBLIC_URL must be known first). All are held open together, so they differ; they
 * lie outside the ephemeral range (above), so no outgoing connection takes one before it is used.
 * `candidate` proposes the ports to try (tests give their own).
 */
export async function freePorts(count: number, host = '127.0.0.1', candidate = randomCandidate(pickRange())): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let tries = 0; servers.length < count; tries++) {
      if (tries > 200 * count) throw new Error(`no ${count} free ports found on ${host}`);
      const s = await holdPort(host, tries < 100 * count ? candidate() : 0);
      if (s && reachablePort((s.address() as AddressInfo).port)) servers.push(s);
      else s?.close();
    }
    return servers.map((s) => (s.address() as AddressInfo).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  }
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return (await freePorts(1, host))[0]!;
}
