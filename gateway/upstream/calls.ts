// The gateway's own requests to the chat front-end (sign-in, rewritten routes, owner lookups, drift
// checks): buffered up to a bound and decoded, unlike client traffic, which is streamed.
import http, { type IncomingHttpHeaders } from 'node:http';
import zlib from 'node:zlib';
import { UPSTREAM_DOWN, UPSTREAM_TIMEOUT, UpstreamError } from '../http/respond.js';

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** decoded (gzip, deflate, br undone) */
  body: Buffer;
}

/**
 * Reads an upstream body chunk by chunk instead of having it buffered; throws to refuse it. A
 * promise returned holds the body back until it settles (what the sink writes on waits for its
 * reader); a rejected one ends the call.
 */
export interface BodySink {
  write(chunk: Buffer): void | Promise<void>;
}

/** Where the gateway's own requests go, over which pool, within which bounds. */
export interface CallTarget {
  target: URL;
  agent: http.Agent;
  timeoutMs: number;
  rewriteMaxBytes: number;
}

/** What makes the gateway's own requests: the Upstream's `calls`, or a stand-in (check-config, tests). */
export type Calls = Pick<UpstreamCalls, 'call'>;

/**
 * Renews an upstream token the gateway supplied once the upstream answered 401 to it
 * (gateway/upstream/accounts.ts): the token to send instead, or undefined (still valid, checked too
 * recently, no renewal to be had). Undefined at once for a token the gateway did not supply.
 */
export interface TokenRenewal {
  renewed(token: string): Promise<string | undefined> | undefined;
}

/** The token of `Authorization: Bearer <token>`, as the gateway writes it. */
export function bearerToken(authorization: string | string[] | undefined): string | undefined {
  return typeof authorization === 'string' && authorization.startsWith('Bearer ') ? authorization.slice(7) : undefined;
}

/**
 * `calls` whose request the upstream answered 401 on a token the gateway supplied is made once
 * more, with the renewed token: every body here is in hand, and nothing is sent to the client yet.
 */
export function renewingCalls(calls: Calls, renewal: TokenRenewal): Calls {
  return {
    async call(method, path, headers, body, sinkFor) {
      // a sink reads a 200 only (every view's does): a 401 stays buffered, to be dropped or returned
      const first = await calls.call(method, path, headers, body, sinkFor && ((status) => (status === 401 ? undefined : sinkFor(status))));
      if (first.status !== 401) return first;
      const stale = bearerToken(headers.authorization);
      const token = stale === undefined ? undefined : await renewal.renewed(stale);
      if (token === undefined) return first;
      return calls.call(method, path, { ...headers, authorization: `Bearer ${token}` }, body, sinkFor);
    },
  };
}

/** The gateway's own requests over the Upstream's keep-alive pool (gateway/upstream/proxy.ts makes the one). */
export class UpstreamCalls {
  constructor(private readonly to: CallTarget) {}

  /**
   * One request of the gateway's own, buffered up to rewriteMaxBytes, decoded. A body read by a sink
   * is not buffered here: the sink bounds what it keeps, and the timeout then bounds the wait for the
   * headers and each pause of the body rather than the whole (a long list streamed through is not cut).
   * Throws UpstreamError (502/504 material) on every failure.
   */
  call(
    method: string,
    path: string,
    headers: Record<string, string | string[] | undefined>,
    body?: string | Buffer,
    sinkFor?: (status: number) => BodySink | undefined,
  ): Promise<UpstreamResponse> {
    const to = this.to;
    return new Promise((resolve, reject) => {
      const outgoing: Record<string, string | string[]> = { host: to.target.host };
      for (const [k, v] of Object.entries(headers)) if (v !== undefined) outgoing[k] = v;
      outgoing['accept-encoding'] = 'identity';
      if (body !== undefined) outgoing['content-length'] = String(Buffer.byteLength(body));
      const req = http.request({
        protocol: to.target.protocol,
        hostname: to.target.hostname,
        port: to.target.port,
        method,
        path,
        headers: outgoing,
        agent: to.agent,
      });
      const timedOut = () => timeOut(req, (err) => fail(err));
      let timer = setTimeout(timedOut, to.timeoutMs);
      const fail = (err: Error & { code?: string }) => {
        clearTimeout(timer);
        if (err instanceof UpstreamError) return reject(err);
        reject(new UpstreamError(err.code === 'ECONNREFUSED' ? 'unreachable' : 'reset', `${UPSTREAM_DOWN}: ${err.message}`));
      };
      req.on('error', fail);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const decoded = decoder(res.headers['content-encoding']);
        if (!decoded) {
          res.resume();
          return fail(new UpstreamError('bad-body', `unsupported content-encoding ${String(res.headers['content-encoding'])}`));
        }
        const stream = decoded === 'identity' ? res : res.pipe(decoded);
        // A sink reads the decoded body as it arrives (the streamed file filter); the answer then
        // carries an empty body. A sink that throws has refused the body: the rest is read and
        // dropped, and the call fails when the body ends (a body that stalls stays a timeout).
        const sink = sinkFor?.(res.statusCode ?? 502);
        let refused: UpstreamError | undefined;
        stream.on('data', (chunk: Buffer) => {
          if (!sink) {
            size += chunk.length;
            if (size > to.rewriteMaxBytes) {
              req.destroy(new UpstreamError('too-large', `upstream body larger than ${to.rewriteMaxBytes} bytes`));
              return;
            }
            return void chunks.push(chunk);
          }
          clearTimeout(timer);
          timer = setTimeout(timedOut, to.timeoutMs);
          if (refused) return;
          try {
            const wait = sink.write(chunk);
            if (wait) {
              stream.pause();
              wait.then(
                () => stream.resume(),
                (err: unknown) => req.destroy(err instanceof UpstreamError ? err : new UpstreamError('reset', (err as Error).message)),
              );
            }
          } catch (err) {
            refused = err instanceof UpstreamError ? err : new UpstreamError('bad-body', `upstream body refused: ${(err as Error).message}`);
          }
        });
        stream.on('error', (err: Error) => fail(err instanceof UpstreamError ? err : new UpstreamError('bad-body', `undecodable body: ${err.message}`)));
        stream.on('end', () => {
          clearTimeout(timer);
          if (refused) return reject(refused);
          resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) });
        });
        res.on('aborted', () => fail(new UpstreamError('reset', 'upstream closed mid-body')));
      });
      req.end(body);
    });
  }
}

/**
 * A call past its time: destroyed. One still waiting for a pooled socket (each held by an upstream
 * that does not answer) would hear of that only once one came free: `fail` is told now.
 */
function timeOut(req: http.ClientRequest, fail: (err: UpstreamError) => void): void {
  const waiting = !req.socket;
  const err = new UpstreamError('timeout', UPSTREAM_TIMEOUT);
  req.destroy(err);
  if (waiting) fail(err);
}

function decoder(encoding: string | undefined): 'identity' | NodeJS.ReadWriteStream | undefined {
  const e = (encoding ?? 'identity').trim().toLowerCase();
  if (e === 'identity' || e === '') return 'identity';
  if (e === 'gzip' || e === 'x-gzip') return zlib.createGunzip();
  if (e === 'deflate') return zlib.createInflate();
  if (e === 'br') return zlib.createBrotliDecompress();
  return undefined;
}
