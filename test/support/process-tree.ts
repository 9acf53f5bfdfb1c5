// What a command left running, read from Linux's /proc: the processes it started (however deep,
// whatever their process group) and the TCP ports they listen on. Taken while the command runs,
// then checked again after it was told to stop.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Each live process's pid and the fields of its /proc stat after the command name (state first). */
function processStats(): Array<[number, string[]]> {
  const stats: Array<[number, string[]]> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // the command name may hold spaces and parentheses: the fields after the last ')' are fixed
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      stats.push([Number(entry), stat.slice(stat.lastIndexOf(')') + 2).split(' ')]);
    } catch {
      // gone meanwhile
    }
  }
  return stats;
}

/** The states ('R', 'S', 'T' for stopped, ...) of every process in process group `pgid`. */
export function groupStates(pgid: number): string[] {
  return processStats()
    .filter(([, fields]) => Number(fields[2]) === pgid)
    .map(([, fields]) => fields[0]!);
}

/** Every process below `pid` (children, their children, ...), `pid` itself left out. */
export function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>(processStats().map(([p, fields]) => [p, Number(fields[1])]));
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parentOf) {
      if (parent === p) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The TCP ports the processes listen on (IPv4 and IPv6), from their open sockets. */
export function listeningPorts(pids: number[]): number[] {
  const inodes = new Set<string>();
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]!);
      } catch {
        // closed meanwhile
      }
    }
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let lines: string[];
    try {
      lines = readFileSync(table, 'utf8').split('\n').slice(1);
    } catch {
      continue;
    }
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      // local_address, rem_address, st (0A: LISTEN), ..., inode
      if (f.length > 9 && f[3] === '0A' && inodes.has(f[9]!)) ports.add(parseInt(f[1]!.split(':')[1]!, 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** Does anything accept a connection on 127.0.0.1:`port` (or ::1)? */
export async function accepts(port: number): Promise<boolean> {
  const one = (host: string) =>
    new Promise<boolean>((resolve) => {
      const s = net.connect({ host, port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
      s.setTimeout(2_000, () => {
        s.destroy();
        resolve(false);
      });
    });
  return (await one('127.0.0.1')) || (await one('::1'));
}

/** Has the child process ended, by itself or by a signal? */
export function exited(child: { exitCode: number | null; signalCode: NodeJS.Signals | null }): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** A sandbox command as a newcomer runs it. */
export interface SandboxRun {
  npm: ChildProcess;
  /** everything it printed so far, stdout and stderr */
  output(): string;
}

/**
 * `npm run <script>` (or `npm start`) on free ports, in its own process group (so that a failed
 * run can be cleaned up; tests signal only npm), with a newcomer's environment: PATH, HOME, the
 * peers' cache and Java, and `env`.
 */
export function runSandbox(script: string, ports: { port: number; idpPort: number }, env: Record<string, string> = {}): SandboxRun {
  const npm = spawn('npm', script === 'start' ? ['start'] : ['run', script], {
    cwd: ROOT,
    detached: true,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...(process.env.CHATGW_CACHE ? { CHATGW_CACHE: process.env.CHATGW_CACHE } : {}),
      ...(process.env.JAVA_HOME ? { JAVA_HOME: process.env.JAVA_HOME } : {}),
      PORT: String(ports.port),
      SANDBOX_IDP_PORT: String(ports.idpPort),
      ...env,
    },
  });
  let output = '';
  npm.stdout!.on('data', (d) => (output += d));
  npm.stderr!.on('data', (d) => (output += d));
  return { npm, output: () => output };
}
