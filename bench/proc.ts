// Child processes of the bench and what /proc says about them. Every child is started here,
// remembered, and stopped by its own pid (and its descendants' pids, which are read from /proc
// before the signal) at the end, on an error, or on Ctrl-C.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Child {
  name: string;
  pid: number;
  proc: ChildProcess;
  /** This process and its descendants (nginx workers, cluster workers), now. */
  pids(): number[];
  stop(): Promise<void>;
}

const live = new Set<Child>();

export interface SpawnOptions<T> {
  env?: NodeJS.ProcessEnv;
  /** Called with each line the child writes (stdout or stderr) until it returns a value: the child is ready. */
  ready: (line: string) => T | undefined;
  timeoutMs?: number;
  /** stdout and stderr are copied here */
  logFile: string;
}

export async function spawnChild<T>(name: string, command: string, args: string[], options: SpawnOptions<T>): Promise<{ child: Child; info: T }> {
  // stdout and stderr go straight to a file, never through a pipe this process must drain: a
  // child that logs every request must not be slowed (or blocked: stdout to a pipe is
  // synchronous on Linux) by the bench. Readiness is read back from that file, from where it
  // ended before this child started: an earlier child's lines (the same log name) are not this one's.
  const fd = openSync(options.logFile, 'a');
  const start = fstatSync(fd).size;
  const proc = spawn(command, args, { env: options.env ?? process.env, stdio: ['pipe', fd, fd] });
  closeSync(fd);
  proc.stdin!.on('error', () => {});
  const child: Child = {
    name,
    pid: proc.pid ?? -1,
    proc,
    pids: () => (proc.pid ? processTree(proc.pid) : []),
    stop: () => stopProcess(child),
  };
  if (!proc.pid) throw new Error(`${name}: could not start ${command}`);
  live.add(child);
  const info = await new Promise<T>((resolve, reject) => {
    const timeoutMs = options.timeoutMs ?? 20_000;
    const deadline = Date.now() + timeoutMs;
    let offset = start;
    let partial = '';
    const poll = setInterval(() => {
      let text = '';
      try {
        const buf = readFileSync(options.logFile);
        text = buf.subarray(offset).toString('utf8');
        offset = buf.length;
      } catch {
        /* not there yet */
      }
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const value = options.ready(line);
        if (value !== undefined) {
          done();
          return resolve(value);
        }
      }
      if (Date.now() > deadline) fail(new Error(`${name}: not ready after ${timeoutMs} ms (log: ${options.logFile})`));
    }, 25);
    const done = () => {
      clearInterval(poll);
      proc.off('exit', onExit);
    };
    const fail = (err: Error) => {
      done();
      child.stop().finally(() => reject(err));
    };
    const onExit = (code: number | null) => fail(new Error(`${name}: exited with ${code} before it was ready (log: ${options.logFile})`));
    proc.once('exit', onExit);
  });
  return { child, info };
}

async function stopProcess(child: Child): Promise<void> {
  if (!live.has(child)) return;
  live.delete(child);
  const { proc } = child;
  const tree = child.pids();
  if (proc.exitCode === null && proc.signalCode === null) {
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.stdin?.end();
    try {
      proc.kill('SIGTERM');
    } catch {
      /* already gone */
    }
    const t0 = Date.now();
    await Promise.race([exited, sleep(4_000)]);
    if (Date.now() - t0 > 1_000) process.stderr.write(`bench: ${child.name} took ${Date.now() - t0} ms to stop\n`);
  }
  // Whatever of the tree is still there (a stuck worker) is killed by pid.
  for (const pid of tree)
    if (alive(pid))
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
}

export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((c) => c.stop()));
}

/** Last resort on exit: synchronous SIGKILL of every child still known. */
export function killAllSync(): void {
  for (const c of live)
    for (const pid of c.pids())
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** pid and all its descendants, from the ppid field of /proc/<pid>/stat. */
export function processTree(root: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name is in parentheses and may hold spaces: fields start after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(entry), Number(fields[1]));
    } catch {
      /* exited meanwhile */
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, ppid] of parent) if (ppid === out[i]) out.push(pid);
  return out.filter((p) => parent.has(p));
}

export function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * Peak resident memory of a set of processes over a measurement: the peak counters are reset
 * at the start (/proc/<pid>/clear_refs, where allowed) and VmRSS is sampled every 50 ms; the
 * answer is the larger of the summed VmHWM and the largest summed sample, in MB.
 */
export function watchRss(pids: () => number[]): { stop(): number } {
  for (const pid of pids())
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
    } catch {
      /* not allowed: sampling only */
    }
  let peak = 0;
  const sample = () => {
    const sum = pids().reduce((s, p) => s + statusKb(p, 'VmRSS'), 0);
    if (sum > peak) peak = sum;
  };
  sample();
  const timer = setInterval(sample, 50);
  return {
    stop() {
      clearInterval(timer);
      sample();
      const hwm = pids().reduce((s, p) => s + statusKb(p, 'VmHWM'), 0);
      return Math.max(peak, hwm) / 1024;
    },
  };
}

export { freePort, freePorts } from '../sandbox/ports.js';

export const logPath = (dir: string, name: string) => join(dir, `${name.replace(/[^a-z0-9-]+/gi, '-')}.log`);

/** CPU time of a set of processes so far, in ms, user and system apart, from /proc/<pid>/stat (10 ms ticks). */
export function cpuTimes(pids: number[]): { user: number; system: number } {
  let user = 0;
  let system = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      user += Number(fields[11]); // utime, field 14 of stat
      system += Number(fields[12]); // stime, field 15
    } catch {
      /* exited */
    }
  }
  return { user: user * (1000 / CLK_TCK), system: system * (1000 / CLK_TCK) };
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();
