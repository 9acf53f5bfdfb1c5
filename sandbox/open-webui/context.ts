// One request as the stand-in's routes see it (uvicorn's scope, decoded), and the ways they read
// it (query parameters as FastAPI validates them, the body) and answer it (JSON, HTML, streams,
// server-sent events), with the upstream's compression and ETags.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { HttpError, etagMatches, firstHeader, pickEncoding, unprocessable, weakEtag, type ValidationIssue } from './http.js';
import type { RecordedRequest } from './types.js';

const JSON_BODY_LIMIT = 8 * 1024 * 1024;

export interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  rec: RecordedRequest;
  /** GET for HEAD */
  method: string;
  head: boolean;
  /** percent-decoded path, like uvicorn's scope["path"] */
  path: string;
  query: URLSearchParams;
  signal: AbortSignal;
  bodyTaken: boolean;
  /** the server's `compress` option: JSON and HTML answers may be gzip or br */
  compress: boolean;
}

/** A query parameter; of a repeated one the last value wins (Starlette). */
export function q(ctx: Ctx, name: string): string | undefined {
  const all = ctx.query.getAll(name);
  return all.length ? all[all.length - 1] : undefined;
}

export function intParam(ctx: Ctx, name: string, def: number, issues: ValidationIssue[], ge?: number, le?: number): number {
  const raw = q(ctx, name);
  if (raw === undefined) return def;
  if (!/^\s*[+-]?\d+\s*$/.test(raw)) {
    issues.push({ type: 'int_parsing', loc: ['query', name], msg: 'Input should be a valid integer, unable to parse string as an integer', input: raw });
    return def;
  }
  const n = Number(raw.trim());
  if (ge !== undefined && n < ge) {
    issues.push({ type: 'greater_than_equal', loc: ['query', name], msg: `Input should be greater than or equal to ${ge}`, input: raw, ctx: { ge } });
  } else if (le !== undefined && n > le) {
    issues.push({ type: 'less_than_equal', loc: ['query', name], msg: `Input should be less than or equal to ${le}`, input: raw, ctx: { le } });
  }
  return n;
}

export function boolParam(ctx: Ctx, name: string, def: boolean, issues: ValidationIssue[]): boolean {
  const raw = q(ctx, name);
  if (raw === undefined) return def;
  const v = raw.trim().toLowerCase();
  if (['1', 'on', 't', 'true', 'y', 'yes'].includes(v)) return true;
  if (['0', 'off', 'f', 'false', 'n', 'no'].includes(v)) return false;
  issues.push({ type: 'bool_parsing', loc: ['query', name], msg: 'Input should be a valid boolean, unable to interpret input', input: raw });
  return def;
}

/** The request body as it arrives, counted on the recorded request. */
export async function* bodyChunks(ctx: Ctx): AsyncGenerator<Buffer> {
  ctx.bodyTaken = true;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    ctx.rec.bodyBytes += chunk.length;
    yield chunk;
  }
}

/** The whole body, up to 8 MiB (413 beyond, read to the end first). */
export async function readBody(ctx: Ctx): Promise<Buffer> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const chunk of bodyChunks(ctx)) {
    n += chunk.length;
    if (n <= JSON_BODY_LIMIT) parts.push(chunk);
  }
  if (n > JSON_BODY_LIMIT) throw new HttpError(413, 'Request body too large');
  return Buffer.concat(parts);
}

/** FastAPI-style JSON body: missing or undecodable => 422. */
export async function readJson(ctx: Ctx): Promise<unknown> {
  const raw = await readBody(ctx);
  if (raw.length === 0) throw unprocessable([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch (e) {
    throw unprocessable([{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: (e as Error).message } }]);
  }
}

/** A JSON body that must be an object (a pydantic model), else 422. */
export async function readJsonObject(ctx: Ctx): Promise<Record<string, unknown>> {
  const body = await readJson(ctx);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw unprocessable([
      { type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: body },
    ]);
  }
  return body as Record<string, unknown>;
}

/** Consume whatever body a handler left unread, still counting it. */
export function drain(ctx: Ctx): void {
  if (ctx.bodyTaken || ctx.req.readableEnded) return;
  ctx.bodyTaken = true;
  ctx.req.on('data', (c: Buffer) => {
    ctx.rec.bodyBytes += c.length;
  });
  ctx.req.on('error', () => undefined);
  ctx.req.resume();
}

/** A whole answer: compressed when `compressible` and accepted, a 304 when `etag` and If-None-Match agree. */
export function send(
  ctx: Ctx,
  status: number,
  body: Buffer,
  contentType: string,
  headers: Record<string, string | string[]> = {},
  o: { compressible?: boolean; etag?: boolean } = {},
): void {
  drain(ctx);
  const h: Record<string, string | string[] | number> = { server: 'uvicorn', 'content-type': contentType, ...headers };
  if (o.compressible) h['vary'] = 'Accept-Encoding';
  if (o.etag && ctx.method === 'GET' && status >= 200 && status < 300) {
    const tag = weakEtag(body);
    h['etag'] = tag;
    if (etagMatches(firstHeader(ctx.req, 'if-none-match'), tag)) {
      delete h['content-type'];
      ctx.res.writeHead(304, h);
      ctx.res.end();
      return;
    }
  }
  let payload = body;
  const enc = o.compressible && ctx.compress ? pickEncoding(ctx.req.headers['accept-encoding']) : null;
  if (enc === 'gzip') payload = zlib.gzipSync(body);
  else if (enc === 'br') payload = zlib.brotliCompressSync(body);
  if (enc) h['content-encoding'] = enc;
  h['content-length'] = payload.length;
  ctx.res.writeHead(status, h);
  ctx.res.end(payload);
}

export function sendJson(ctx: Ctx, status: number, value: unknown, headers: Record<string, string | string[]> = {}): void {
  send(ctx, status, Buffer.from(JSON.stringify(value)), 'application/json', headers, { compressible: true, etag: true });
}

export function sendHtml(ctx: Ctx, status: number, html: string, headers: Record<string, string> = {}): void {
  send(ctx, status, Buffer.from(html), 'text/html; charset=utf-8', headers, { compressible: true });
}

/** Streamed body (chunked). Compressed when `compressible` and the client accepts it. */
export async function sendStream(
  ctx: Ctx,
  status: number,
  contentType: string,
  source: AsyncIterable<string | Buffer>,
  headers: Record<string, string | number> = {},
  compressible = true,
): Promise<void> {
  drain(ctx);
  const h: Record<string, string | number> = { server: 'uvicorn', 'content-type': contentType, ...headers };
  const enc = compressible && ctx.compress ? pickEncoding(ctx.req.headers['accept-encoding']) : null;
  if (compressible) h['vary'] = 'Accept-Encoding';
  if (enc) {
    h['content-encoding'] = enc;
    delete h['content-length'];
  }
  ctx.res.writeHead(status, h);
  if (ctx.head) {
    ctx.res.end();
    return;
  }
  const src = Readable.from(source, { objectMode: false });
  try {
    if (enc === 'gzip') await pipeline(src, zlib.createGzip(), ctx.res);
    else if (enc === 'br') await pipeline(src, zlib.createBrotliCompress(), ctx.res);
    else await pipeline(src, ctx.res);
  } catch {
    ctx.res.destroy();
  }
}

/** Server-sent events: headers out at once, then the caller writes `data:` frames. */
export function startEventStream(ctx: Ctx): void {
  drain(ctx);
  ctx.req.socket.setNoDelay(true);
  ctx.res.writeHead(200, {
    server: 'uvicorn',
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
  });
  ctx.res.flushHeaders();
}
