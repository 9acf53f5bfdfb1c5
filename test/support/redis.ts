// A real redis-server (Debian's package) for one test: started on a free loopback port, without
// persistence, stopped (and started again on the same port) by the test.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { freePort } from './raw-http.js';

export interface TestRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Start again on the same port, empty (as a Redis without persistence comes back). */
  start(): Promise<void>;
}

async function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    let output = '';
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', (err) => (output += String(err)));
    const deadline = Date.now() + 10_000;
    while (!(await reachable(port))) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server did not start (is the redis-server package installed?):\n${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const stop = async () => {
    if (!child || child.exitCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}/0`, port, stop, start };
}
