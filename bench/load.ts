// Load generators and measuring clients. Every function is bounded in time and reports what it
// saw; none asserts a speed.
//   httpLoad  fixed concurrency GETs for a fixed time: wrk when it is on PATH (a C client leaves
//             more of the 2 cores to the peer), else autocannon; latencies in ms with us precision
//   transfer  one large upload or download, streamed, its bytes checked
//   sseLoad   many event streams; latency of each event from upstream write to client read
//   wsLoad    N idle WebSockets opened and held, then a sequential echo on one of them
import http from 'node:http';
import net from 'node:net';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import WebSocket from 'ws';

export interface Measured {
  /** per second: requests, MB, events or messages */
  rate: number;
  p50: number;
  p99: number;
  /** failed requests: non-2xx, socket errors, timeouts, broken streams */
  errors: number;
  count: number;
  /** units of work done, for CPU per unit: requests, MB, events, echoes */
  units: number;
  note?: string;
}

export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

function summarize(latencies: number[]): { p50: number; p99: number } {
  const sorted = Float64Array.from(latencies).sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

let wrkPath: string | null | undefined;
export function loadGenerator(): 'wrk' | 'autocannon' {
  if (process.env.BENCH_LOADGEN === 'autocannon') return 'autocannon';
  if (wrkPath === undefined) {
    try {
      wrkPath = execFileSync('sh', ['-c', 'command -v wrk'], { encoding: 'utf8' }).trim() || null;
    } catch {
      wrkPath = null;
    }
  }
  return wrkPath ? 'wrk' : 'autocannon';
}

export interface HttpLoadOptions {
  url: string;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  warmupSeconds: number;
  /** called between warm-up and the measured run: the caller starts counting the peer's CPU here */
  onMeasuring?: () => void;
}

export async function httpLoad(o: HttpLoadOptions): Promise<Measured> {
  const run = loadGenerator() === 'wrk' ? wrk : cannon;
  if (o.warmupSeconds > 0) await run({ ...o, seconds: o.warmupSeconds });
  o.onMeasuring?.();
  return run(o);
}

// wrk reports through a Lua `done` hook: exact counts and microsecond percentiles as JSON.
const WRK_SCRIPT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.connect, e.read, e.write, e.status, e.timeout))
end
`;
let wrkScript: string | undefined;

async function wrk(o: HttpLoadOptions): Promise<Measured> {
  if (!wrkScript) {
    wrkScript = join(mkdtempSync(join(tmpdir(), 'bench-wrk-')), 'report.lua');
    writeFileSync(wrkScript, WRK_SCRIPT);
  }
  const args = ['-t1', `-c${o.connections}`, `-d${Math.max(1, Math.round(o.seconds * 10) / 10)}s`, '--timeout', '5s', '-s', wrkScript];
  for (const [k, v] of Object.entries(o.headers)) args.push('-H', `${k}: ${v}`);
  args.push(o.url);
  const out = await new Promise<string>((resolve, reject) => {
    // BENCH_LOADGEN_CPUS=1: wrk pinned to those CPUs with taskset (the GATEWAY_WORKERS measurement)
    const pin = process.env.BENCH_LOADGEN_CPUS;
    const p = pin
      ? spawn('taskset', ['-c', pin, wrkPath!, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(wrkPath!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    p.stdout.on('data', (c: Buffer) => (text += c));
    p.stderr.on('data', (c: Buffer) => (text += c));
    const timer = setTimeout(() => p.kill('SIGKILL'), (o.seconds + 15) * 1000);
    p.once('error', reject);
    p.once('exit', () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
  const line = /WRKJSON (\{.*\})/.exec(out);
  if (!line) throw new Error(`wrk gave no result: ${out.slice(0, 500)}`);
  const r = JSON.parse(line[1]!) as Record<string, number>;
  const errors = r.connect! + r.read! + r.write! + r.status! + r.timeout!;
  return { rate: r.requests! / (r.duration_us! / 1e6), p50: r.p50_us! / 1000, p99: r.p99_us! / 1000, errors, count: r.requests! - errors, units: r.requests! };
}

async function cannon(o: HttpLoadOptions): Promise<Measured> {
  // autocannon's own histogram keeps whole milliseconds; the response event has the exact time.
  const latencies: number[] = [];
  let errors = 0;
  const started = process.hrtime.bigint();
  // autocannon's own duration has whole seconds only: stop it on our own clock.
  const instance = autocannon({ url: o.url, headers: o.headers, connections: o.connections, duration: Math.ceil(o.seconds) + 1, timeout: 5, sampleInt: 100 });
  const stopper = setTimeout(() => instance.stop(), o.seconds * 1000);
  instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    if (status >= 200 && status < 400) latencies.push(ms);
    else errors++;
  });
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    instance.once('done', resolve);
    instance.once('error', reject);
  });
  clearTimeout(stopper);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  errors += result.errors + result.timeouts;
  return { rate: (latencies.length + errors) / seconds, ...summarize(latencies), errors, count: latencies.length, units: latencies.length + errors };
}

/** One streamed transfer of `bytes` (upload: POST body; download: GET). Rate in MB/s (1 MB = 2^20 bytes). */
export async function transfer(
  url: string,
  headers: Record<string, string>,
  direction: 'upload' | 'download',
  bytes: number,
  timeoutMs: number,
): Promise<Measured> {
  const chunk = Buffer.alloc(1024 * 1024, 0x62);
  const started = process.hrtime.bigint();
  const target = new URL(direction === 'download' ? `${url}?bytes=${bytes}` : url);
  const moved = await new Promise<number>((resolve, reject) => {
    const req = http.request(target, {
      method: direction === 'upload' ? 'POST' : 'GET',
      agent: false,
      headers: { ...headers, ...(direction === 'upload' ? { 'content-type': 'application/octet-stream', 'content-length': String(bytes) } : {}) },
    });
    const timer = setTimeout(() => req.destroy(new Error(`${direction} did not finish in ${timeoutMs} ms`)), timeoutMs);
    req.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.once('response', (res) => {
      let got = 0;
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        got += c.length;
        if (direction === 'upload') parts.push(c);
      });
      res.once('end', () => {
        clearTimeout(timer);
        if (res.statusCode !== 200) return reject(new Error(`${direction} answered ${res.statusCode}`));
        if (direction === 'download') return resolve(got);
        resolve((JSON.parse(Buffer.concat(parts).toString()) as { bytes: number }).bytes);
      });
      res.once('error', reject);
    });
    if (direction === 'download') return void req.end();
    let left = bytes;
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const ms = seconds * 1000;
  return {
    rate: moved / 1048576 / seconds,
    p50: ms,
    p99: ms,
    errors: moved === bytes ? 0 : 1,
    count: 1,
    units: moved / 1048576,
    ...(moved === bytes ? {} : { note: `moved ${moved} of ${bytes} bytes` }),
  };
}

/**
 * `streams` event streams open for `seconds`; the upstream writes an event every `intervalMs` on
 * each, stamped with CLOCK_MONOTONIC (shared by processes on one machine). Latency: read - write.
 */
export async function sseLoad(url: string, headers: Record<string, string>, streams: number, seconds: number, intervalMs: number): Promise<Measured> {
  const latencies: number[] = [];
  let errors = 0;
  const target = new URL(`${url}?interval=${intervalMs}`);
  const requests: http.ClientRequest[] = [];
  const opened = Array.from(
    { length: streams },
    () =>
      new Promise<void>((resolve) => {
        const req = http.request(target, { agent: false, headers: { ...headers, accept: 'text/event-stream' } });
        requests.push(req);
        req.once('error', () => {
          errors++;
          resolve();
        });
        req.once('response', (res) => {
          if (res.statusCode !== 200) {
            errors++;
            res.resume();
            return resolve();
          }
          let buffered = '';
          res.setEncoding('utf8');
          res.on('data', (text: string) => {
            const now = process.hrtime.bigint();
            buffered += text;
            let end: number;
            while ((end = buffered.indexOf('\n\n')) !== -1) {
              const event = buffered.slice(0, end);
              buffered = buffered.slice(end + 2);
              const m = /^data: (\d+)$/m.exec(event);
              if (m) latencies.push(Number(now - BigInt(m[1]!)) / 1e6);
            }
          });
          res.on('error', () => {});
          resolve();
        });
        req.end();
      }),
  );
  await Promise.race([Promise.all(opened), new Promise((r) => setTimeout(r, 10_000))]);
  // Measure after every stream is open; events before that are warm-up.
  latencies.length = 0;
  const started = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const count = latencies.length;
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const measured = latencies.slice(0, count);
  for (const req of requests) req.destroy();
  return { rate: count / elapsed, ...summarize(measured), errors, count, units: count };
}

/** Open `connections` WebSockets, at most 200 handshakes in flight, for at most a minute. */
async function openSockets(url: string, headers: Record<string, string>, connections: number) {
  const opened = { sockets: [] as WebSocket[], failed: 0, firstError: '' };
  let next = 0;
  const deadline = Date.now() + 60_000;
  const openOne = () =>
    new Promise<void>((resolve) => {
      const ws = new WebSocket(url, { headers, perMessageDeflate: false, handshakeTimeout: 10_000 });
      ws.once('open', () => {
        opened.sockets.push(ws);
        resolve();
      });
      ws.once('unexpected-response', (_req, res) => {
        opened.firstError ||= `handshake answered ${res.statusCode}`;
        res.resume();
        opened.failed++;
        ws.terminate();
        resolve();
      });
      ws.once('error', (e) => {
        opened.firstError ||= e.message;
        opened.failed++;
        resolve();
      });
    });
  const lanes = Array.from({ length: Math.min(200, connections) }, async () => {
    while (next < connections && Date.now() < deadline) {
      next++;
      await openOne();
    }
  });
  await Promise.all(lanes);
  return opened;
}

/** `echoes` messages one after another on `probe` after a warm-up: their round trips, and when the measured ones began. */
async function echoLatencies(probe: WebSocket, echoes: number): Promise<{ latencies: number[]; started: bigint; error?: string }> {
  const latencies: number[] = [];
  let started = process.hrtime.bigint();
  const message = Buffer.alloc(64, 0x63);
  const once = () =>
    new Promise<void>((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      const timer = setTimeout(() => reject(new Error('echo timed out')), 5_000);
      probe.once('message', () => {
        clearTimeout(timer);
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        resolve();
      });
      probe.send(message);
    });
  try {
    for (let i = 0; i < Math.min(200, echoes); i++) await once(); // warm-up
    latencies.length = 0;
    started = process.hrtime.bigint();
    for (let i = 0; i < echoes; i++) await once();
    return { latencies, started };
  } catch (e) {
    return { latencies, started, error: (e as Error).message };
  }
}

/**
 * Open `connections` WebSockets (at most 200 handshakes in flight), hold them `holdSeconds`, count
 * those still open, then echo `echoes` messages one after another on one of them (round-trip
 * latency). Rate: echoes per second; the note says how many were held.
 */
export async function wsLoad(
  url: string,
  headers: Record<string, string>,
  connections: number,
  holdSeconds: number,
  echoes: number,
): Promise<Measured & { held: number }> {
  const { sockets, ...opened } = await openSockets(url, headers, connections);
  let { failed, firstError } = opened;
  let closed = 0;
  for (const ws of sockets) ws.once('close', () => closed++);
  await new Promise((r) => setTimeout(r, holdSeconds * 1000));
  const held = sockets.filter((ws) => ws.readyState === WebSocket.OPEN).length;

  const probe = sockets.find((ws) => ws.readyState === WebSocket.OPEN);
  const echoed = probe ? await echoLatencies(probe, echoes) : { latencies: [], started: process.hrtime.bigint() };
  if (echoed.error !== undefined) {
    firstError ||= echoed.error;
    failed++;
  }
  const { latencies } = echoed;
  const seconds = Number(process.hrtime.bigint() - echoed.started) / 1e9;
  const closedEarly = closed;
  for (const ws of sockets) ws.terminate();
  await new Promise((r) => setTimeout(r, 200));
  return {
    rate: latencies.length / seconds,
    ...summarize(latencies),
    errors: failed + (connections - failed - held),
    count: latencies.length,
    units: latencies.length,
    held,
    note: `${held}/${connections} held${firstError ? `; ${firstError}` : ''}${closedEarly ? `; ${closedEarly} closed early` : ''}`,
  };
}

/**
 * Idle keep-alive connections: open `connections` sockets, send one authenticated GET
 * on each (so each peer has done its per-connection work: parser, session, upstream pairing), read
 * the answer, then leave them idle. The peer's RSS is read before the first socket and after the
 * last answer (`rssBytes`); the difference over the connections held is the memory one idle
 * connection costs. `rate` is the number held; `units` too.
 */
export async function idleLoad(
  url: string,
  headers: Record<string, string>,
  connections: number,
  rssBytes: () => number,
  settleMs = 500,
): Promise<Measured & { bytesPerConnection: number }> {
  const { hostname, port, pathname, search } = new URL(url);
  const request = `GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}Connection: keep-alive\r\n\r\n`;
  await new Promise((r) => setTimeout(r, settleMs));
  const before = rssBytes();
  const sockets: net.Socket[] = [];
  let errors = 0;
  let held = 0;
  const t0 = performance.now();
  const one = () =>
    new Promise<void>((resolve) => {
      const s = net.connect(Number(port), hostname);
      sockets.push(s);
      let got = '';
      const done = (ok: boolean) => {
        s.removeAllListeners('data');
        if (ok) held++;
        else errors++;
        resolve();
      };
      s.setEncoding('latin1');
      s.once('connect', () => s.write(request));
      s.on('data', (chunk: string) => {
        got += chunk;
        const end = got.indexOf('\r\n\r\n');
        if (end < 0) return;
        const ok = /^HTTP\/1\.1 200/.test(got);
        const len = /\r\ncontent-length: *(\d+)/i.exec(got.slice(0, end));
        if (len && got.length - end - 4 < Number(len[1])) return; // the body is still coming
        done(ok && !/\r\nconnection: *close/i.test(got.slice(0, end)));
      });
      s.once('error', () => done(false));
      s.once('close', () => {
        if (s.listenerCount('data')) done(false);
      });
    });
  // 100 handshakes at a time: quick enough to stay inside the peers' keep-alive timeouts (5 s for node)
  for (let i = 0; i < connections; i += 100) await Promise.all(Array.from({ length: Math.min(100, connections - i) }, one));
  const opened = performance.now() - t0;
  await new Promise((r) => setTimeout(r, settleMs));
  const after = rssBytes();
  const stillOpen = sockets.filter((s) => !s.destroyed && s.readyState === 'open').length;
  for (const s of sockets) s.destroy();
  const bytesPerConnection = held > 0 ? Math.max(0, after - before) / held : NaN;
  return {
    rate: stillOpen,
    p50: opened,
    p99: opened,
    errors: errors + (held - stillOpen),
    count: held,
    units: held,
    bytesPerConnection,
    note: `${stillOpen}/${connections} held idle, ${(bytesPerConnection / 1024).toFixed(1)} KB each (RSS ${(before / 2 ** 20).toFixed(0)} -> ${(after / 2 ** 20).toFixed(0)} MB)`,
  };
}
