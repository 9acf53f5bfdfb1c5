/**
 * A stand-in of Keycloak's Admin REST API for identity providers (Java cannot run here), with
 * the realm's service-account token endpoint, as Keycloak 26 answers (test/keycloak/ checks the real one):
 *
 * - `POST /realms/{realm}/protocol/openid-connect/token`: `grant_type=client_credentials`, client
 *   id and secret in HTTP Basic only; otherwise 401 `{"error":"unauthorized_client",...}`.
 * - `GET /admin/realms/{realm}/identity-provider/instances` (`first`, `max` (unset: capped at
 *   maxDefault), `search` (prefix by default, `*x*` infix, `x*` prefix, `"x"` exact; case-insensitive),
 *   `briefRepresentation`, `realmOnly`) and `.../instances/{alias}` (404 when absent). Bearer required.
 * - Version 26: top-level boolean `hideOnLogin`, no `config.hideOnLoginPage`; version 25: the
 *   reverse. Secrets in `config` (keys containing "secret" or "password") read as `**********`.
 *
 * Faults (set `fault` at run time):
 * - 'down': really stops listening (connections refused, open ones cut); clearing it (any other
 *   value) listens again on the same port. `setFault()` resolves once that has happened.
 * - 'slow': every request waits `slowMs` before being answered normally.
 * - '500': admin routes answer 500; the token endpoint still works.
 * - 'invalid-json': admin routes answer 200 application/json with a truncated body.
 * - 'token-fail': the token endpoint answers 500; admin routes still accept valid tokens.
 * `calls` counts requests that reached a route (including ones answered with a fault).
 */
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { demoIdentityProviders, type KeycloakIdentityProvider } from '../../sandbox/demo-realm.js';
import { loopbackListener } from '../../sandbox/listener.js';

export type { KeycloakIdentityProvider } from '../../sandbox/demo-realm.js';

export interface KeycloakAdminOptions {
  port?: number;
  /** Default 'platform'. */
  realm?: string;
  clientId: string;
  clientSecret: string;
  /** Default: a deep copy of demoIdentityProviders. */
  providers?: KeycloakIdentityProvider[];
  /** Default 26. */
  version?: 25 | 26;
  /** Service-account token lifetime in seconds, default 300. */
  tokenTtl?: number;
  /** The cap applied to an unset `max`, default 100. */
  maxDefault?: number;
}

export type KeycloakFault = null | 'down' | 'slow' | '500' | 'invalid-json' | 'token-fail';

export interface KeycloakAdmin {
  /** origin, e.g. http://127.0.0.1:PORT */
  url: string;
  /** `${url}/admin/realms/${realm}` (what IDP_ADMIN_URL is set to) */
  adminUrl: string;
  /** `${url}/realms/${realm}/protocol/openid-connect/token` */
  tokenUrl: string;
  /** Requests that reached each route. */
  calls: { token: number; list: number; get: number };
  /** The realm's providers (mutable; seed-style, the version shaping happens on read). */
  providers: KeycloakIdentityProvider[];
  /** Mutable at run time. */
  fault: KeycloakFault;
  /** Delay of the 'slow' fault, default 1000 ms. */
  slowMs: number;
  /** Mutable at run time. */
  version: 25 | 26;
  /** Set a fault and wait until it is in effect (matters for leaving 'down'). */
  setFault(fault: KeycloakFault): Promise<void>;
  /** Make every issued token expired (the next admin call gets 401). */
  expireTokens(): void;
  close(): Promise<void>;
}

const SECRET_MASK = '**********';
const BRIEF_KEYS = ['alias', 'displayName', 'providerId', 'enabled', 'internalId'] as const;

function isHidden(p: KeycloakIdentityProvider): boolean {
  return p.hideOnLogin === true || p.config?.hideOnLoginPage === 'true';
}

function stripSecrets(config: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) {
    out[k] = /secret|password/i.test(k) && !String(v).startsWith('${vault.') ? SECRET_MASK : v;
  }
  return out;
}

function matchesSearch(alias: string, search: string): boolean {
  const a = alias.toLowerCase();
  let s = search.toLowerCase();
  if (s.length >= 2 && s.startsWith('"') && s.endsWith('"')) return a === s.slice(1, -1);
  const infix = s.startsWith('*');
  if (infix) s = s.slice(1);
  if (s.endsWith('*')) s = s.slice(0, -1);
  return infix ? a.includes(s) : a.startsWith(s);
}

export async function startKeycloakAdmin(opts: KeycloakAdminOptions): Promise<KeycloakAdmin> {
  const realm = opts.realm ?? 'platform';
  const tokenTtl = opts.tokenTtl ?? 300;
  const maxDefault = opts.maxDefault ?? 100;
  const tokens = new Map<string, number>(); // token -> expiry (ms)
  const generatedIds = new WeakMap<object, string>();
  const timers = new Set<NodeJS.Timeout>();
  let fault: KeycloakFault = null;
  let transition: Promise<void> = Promise.resolve();

  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":"unknown_error"}');
    });
  });
  server.keepAliveTimeout = 1000;

  const { listen, stop } = loopbackListener(server);

  await listen(opts.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const adminPrefix = `/admin/realms/${realm}`;
  const tokenPath = `/realms/${realm}/protocol/openid-connect/token`;

  const kc: KeycloakAdmin = {
    url,
    adminUrl: `${url}${adminPrefix}`,
    tokenUrl: `${url}${tokenPath}`,
    calls: { token: 0, list: 0, get: 0 },
    providers: opts.providers ?? structuredClone(demoIdentityProviders),
    get fault() {
      return fault;
    },
    set fault(f: KeycloakFault) {
      void kc.setFault(f).catch(() => {});
    },
    slowMs: 1000,
    version: opts.version ?? 26,
    setFault(f) {
      const prev = fault;
      fault = f;
      if (f === 'down' && prev !== 'down') transition = transition.then(stop, stop);
      else if (f !== 'down' && prev === 'down') {
        const up = () => listen(port);
        transition = transition.then(up, up);
      }
      return transition;
    },
    expireTokens() {
      for (const t of tokens.keys()) tokens.set(t, 0);
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      fault = null;
      await transition.catch(() => {});
      await stop();
    },
  };

  function representation(p: KeycloakIdentityProvider, brief: boolean): Record<string, unknown> {
    let internalId = p.internalId;
    if (!internalId) {
      internalId = generatedIds.get(p) ?? crypto.randomUUID();
      generatedIds.set(p, internalId);
    }
    if (brief) {
      const out: Record<string, unknown> = {};
      for (const k of BRIEF_KEYS) {
        const v = k === 'internalId' ? internalId : p[k];
        if (v !== undefined) out[k] = v;
      }
      return out;
    }
    const full = structuredClone(p) as Record<string, unknown> & KeycloakIdentityProvider;
    full.internalId = internalId;
    full.linkOnly = p.linkOnly ?? false;
    const config = stripSecrets({ ...(p.config ?? {}) });
    const hidden = isHidden(p);
    if (kc.version >= 26) {
      delete config.hideOnLoginPage;
      full.hideOnLogin = hidden;
    } else {
      delete full.hideOnLogin;
      if (hidden) config.hideOnLoginPage = 'true';
    }
    full.config = config;
    return full;
  }

  function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
    res.end(text);
  }

  function readBody(req: http.IncomingMessage): Promise<string> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });
  }

  function basicCredentials(header: string | undefined): [string, string] | undefined {
    const m = /^Basic\s+(\S+)$/i.exec(header ?? '');
    if (!m) return undefined;
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i < 0) return undefined;
    const dec = (s: string) => {
      try {
        return decodeURIComponent(s.replace(/\+/g, ' '));
      } catch {
        return s;
      }
    };
    return [dec(decoded.slice(0, i)), dec(decoded.slice(i + 1))];
  }

  function issueToken(): string {
    const now = Math.floor(Date.now() / 1000);
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const token = [
      b64({ alg: 'RS256', typ: 'JWT', kid: 'stand-in' }),
      b64({ exp: now + tokenTtl, iat: now, jti: crypto.randomUUID(), iss: `${url}/realms/${realm}`, azp: opts.clientId, typ: 'Bearer' }),
      crypto.randomBytes(32).toString('base64url'),
    ].join('.');
    tokens.set(token, Date.now() + tokenTtl * 1000);
    return token;
  }

  function bearerValid(header: string | undefined): boolean {
    const m = /^Bearer\s+(\S+)$/i.exec(header ?? '');
    if (!m) return false;
    const exp = tokens.get(m[1]!);
    return exp !== undefined && exp > Date.now();
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', url);
    const path = u.pathname;
    const isToken = path === tokenPath;
    const listPath = `${adminPrefix}/identity-provider/instances`;
    const isList = path === listPath || path === `${listPath}/`;
    const getMatch = path.startsWith(`${listPath}/`) && !isList ? path.slice(listPath.length + 1) : undefined;
    const isGet = getMatch !== undefined && !getMatch.includes('/');

    if (isToken) kc.calls.token++;
    else if (isList && req.method === 'GET') kc.calls.list++;
    else if (isGet && req.method === 'GET') kc.calls.get++;

    const body = req.method === 'POST' ? await readBody(req) : '';

    if (fault === 'slow') {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          timers.delete(t);
          resolve();
        }, kc.slowMs);
        timers.add(t);
      });
      if (res.destroyed) return;
    }

    if (isToken) {
      if (req.method !== 'POST') return send(res, 405, { error: 'HTTP 405 Method Not Allowed' });
      if (fault === 'token-fail') return send(res, 500, { error: 'unknown_error' });
      const form = new URLSearchParams(body);
      const creds = basicCredentials(req.headers.authorization);
      if (!creds || creds[0] !== opts.clientId || creds[1] !== opts.clientSecret) {
        return send(res, 401, { error: 'unauthorized_client', error_description: 'Invalid client or Invalid client credentials' });
      }
      if (form.get('grant_type') !== 'client_credentials') {
        return send(res, 400, { error: 'unsupported_grant_type', error_description: 'Unsupported grant_type' });
      }
      return send(res, 200, {
        access_token: issueToken(),
        expires_in: tokenTtl,
        refresh_expires_in: 0,
        token_type: 'Bearer',
        'not-before-policy': 0,
        scope: 'profile email',
      });
    }

    if (!path.startsWith('/admin/realms/')) return send(res, 404, { error: 'Unable to find matching target resource method' });
    if (!bearerValid(req.headers.authorization)) return send(res, 401, { error: 'HTTP 401 Unauthorized' });
    if (!path.startsWith(`${adminPrefix}/`) && path !== adminPrefix) return send(res, 404, { error: 'Realm not found.' });
    if (!isList && !isGet) return send(res, 404, { error: 'Unable to find matching target resource method' });
    if (req.method !== 'GET') return send(res, 405, { error: 'HTTP 405 Method Not Allowed' });
    if (fault === '500') return send(res, 500, { error: 'unknown_error' });
    if (fault === 'invalid-json') return send(res, 200, '[{"alias":"acme-entra","displayName":"Acme (Micro');

    if (isGet) {
      let alias: string;
      try {
        alias = decodeURIComponent(getMatch!);
      } catch {
        return send(res, 404, { error: 'HTTP 404 Not Found' });
      }
      const p = kc.providers.find((x) => x.alias === alias);
      if (!p) return send(res, 404, { error: 'HTTP 404 Not Found' });
      return send(res, 200, representation(p, false));
    }

    const q = u.searchParams;
    const int = (name: string): number | undefined => {
      const v = q.get(name);
      if (v === null || v.trim() === '' || !/^-?\d+$/.test(v.trim())) return undefined;
      return Number(v);
    };
    const first = Math.max(0, int('first') ?? 0);
    const maxParam = int('max');
    const max = maxParam === undefined ? maxDefault : maxParam < 0 ? Infinity : maxParam;
    const brief = q.get('briefRepresentation') === 'true';
    const realmOnly = q.get('realmOnly') === 'true';
    const search = q.get('search');

    const list = kc.providers
      .filter((p) => (search ? matchesSearch(p.alias, search) : true))
      .filter((p) => (realmOnly ? !p.organizationId : true))
      .sort((a, b) => (a.alias < b.alias ? -1 : a.alias > b.alias ? 1 : 0))
      .slice(first, first + max)
      .map((p) => representation(p, brief));
    return send(res, 200, list);
  }

  return kc;
}
