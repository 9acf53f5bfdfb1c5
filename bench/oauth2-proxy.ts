// oauth2-proxy as a bench peer, alone and behind nginx's `auth_request`: the proxy users would pick
// instead of the gateway. Built from source with Go at a pinned release, outside git; skipped with a
// notice without Go or the binary (bench/README.md, "Running it").
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { CookieJar } from '../sandbox/cookie-jar.js';
import { freePort, logPath, spawnChild, type Child } from './proc.js';
import { nginxPreamble, type Peer } from './peers.js';

export const OAUTH2_PROXY_VERSION = 'v7.15.6';
const MODULE = 'github.com/oauth2-proxy/oauth2-proxy/v7';

export function oauth2ProxyDir(): string {
  return join(process.env.CHATGW_CACHE || join(homedir(), '.cache', 'chat-gateway'), `oauth2-proxy-${OAUTH2_PROXY_VERSION}`);
}

/**
 * The pinned oauth2-proxy binary: built with `go install` when absent. Returns the path, or a
 * sentence saying why there is none (the caller skips the peer with it as a notice).
 */
export function ensureOauth2Proxy(options: { build: boolean } = { build: true }): { bin: string } | { why: string } {
  const dir = oauth2ProxyDir();
  const bin = join(dir, 'oauth2-proxy');
  if (existsSync(bin)) return { bin };
  if (!options.build) return { why: `oauth2-proxy ${OAUTH2_PROXY_VERSION} is not built (${bin}); the full run builds it with Go` };
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (go.status !== 0) return { why: `Go is not on PATH: oauth2-proxy ${OAUTH2_PROXY_VERSION} cannot be built, its rows are skipped` };
  mkdirSync(dir, { recursive: true });
  const r = spawnSync('go', ['install', `${MODULE}@${OAUTH2_PROXY_VERSION}`], { env: { ...process.env, GOBIN: dir }, encoding: 'utf8', timeout: 15 * 60_000 });
  if (r.status !== 0 || !existsSync(bin)) return { why: `go install ${MODULE}@${OAUTH2_PROXY_VERSION} failed: ${(r.stderr || r.stdout || '').slice(-600)}` };
  return { bin };
}

export const OAUTH2_PROXY_CLIENT = { client_id: 'bench-oauth2-proxy', client_secret: 'bench-oauth2-proxy-secret' };

export interface Oauth2ProxyOptions {
  bin: string;
  port: number;
  /** where the IdP sends the browser back: oauth2-proxy's own port, or nginx's in front of it */
  publicUrl: string;
  issuer: string;
  /** proxy mode: the upstream it forwards to; auth-request mode: none (nginx forwards) */
  upstreamUrl?: string;
  name: string;
  /** its log file's name (default: name) */
  logName?: string;
}

export async function startOauth2Proxy(logDir: string, o: Oauth2ProxyOptions): Promise<Peer> {
  const args = [
    `--http-address=127.0.0.1:${o.port}`,
    '--provider=oidc',
    `--oidc-issuer-url=${o.issuer}`,
    `--client-id=${OAUTH2_PROXY_CLIENT.client_id}`,
    `--client-secret=${OAUTH2_PROXY_CLIENT.client_secret}`,
    `--redirect-url=${o.publicUrl}/oauth2/callback`,
    '--scope=openid email profile',
    '--email-domain=*',
    // 32 bytes: AES-256 for the session cookie (the default cookie session store)
    '--cookie-secret=bench-oauth2-proxy-cookie-secret',
    // the bench speaks plain HTTP on loopback: a Secure cookie would never be sent back
    '--cookie-secure=false',
    '--skip-provider-button=true',
    '--code-challenge-method=S256',
    // production default: one access log line per request (the gateway logs one too)
    '--request-logging=true',
    ...(o.upstreamUrl
      ? [`--upstream=${o.upstreamUrl}/`]
      : // auth_request mode: nginx proxies; /oauth2/auth answers 202 or 401 with the user in X-Auth-Request-*
        ['--upstream=static://202', '--reverse-proxy=true', '--trusted-proxy-ip=127.0.0.1/32', '--set-xauthrequest=true']),
  ];
  const { child } = await spawnChild(o.name, o.bin, args, {
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    // it prints no line once listening: the last configuration line, then its port is polled
    ready: (line) => (/Cookie settings/.test(line) ? true : undefined),
    timeoutMs: 20_000,
    logFile: logPath(logDir, o.logName ?? o.name),
  });
  for (let tries = 0; !(await accepts(o.port)); tries++) {
    if (tries > 200) {
      await child.stop();
      throw new Error(`${o.name}: port ${o.port} not open after 10 s`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { name: o.name, url: `http://127.0.0.1:${o.port}`, child, countsGc: false, pids: () => child.pids(), stop: () => child.stop() };
}

/** nginx in front of the upstream, asking oauth2-proxy about each request (the documented setup). */
export function nginxAuthRequestConfig(dir: string, port: number, o: { upstreamPort: number; oauth2ProxyPort: number }): string {
  return `${nginxPreamble(dir, { generatedBy: 'bench/oauth2-proxy.ts', workers: 1, upstreamPort: o.upstreamPort })}  upstream oauth2_proxy {
    server 127.0.0.1:${o.oauth2ProxyPort};
    keepalive 64;
  }

  server {
    listen 127.0.0.1:${port};
    client_max_body_size 0;

    # sign-in, callback, sign-out: oauth2-proxy's own pages
    location /oauth2/ {
      proxy_pass http://oauth2_proxy;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Auth-Request-Redirect $request_uri;
    }
    # the subrequest of every request: the session cookie only, no body
    location = /oauth2/auth {
      internal;
      proxy_pass http://oauth2_proxy;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header Content-Length "";
      proxy_pass_request_body off;
    }

    location / {
      auth_request /oauth2/auth;
      error_page 401 = /oauth2/sign_in;
      auth_request_set $user $upstream_http_x_auth_request_user;
      auth_request_set $email $upstream_http_x_auth_request_email;
      proxy_set_header X-User $user;
      proxy_set_header X-Email $email;
      proxy_pass http://chat;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 300s;
      proxy_send_timeout 300s;
    }
  }
}
`;
}

/** nginx + oauth2-proxy as one peer: its CPU and memory are both processes'. */
export async function startNginxAuthRequest(
  logDir: string,
  nginxBin: string,
  o: { bin: string; port: number; upstreamPort: number; issuer: string; tag?: string },
): Promise<Peer> {
  const tag = o.tag ?? 'nginx-auth-request';
  const dir = join(logDir, tag);
  for (const d of ['', 'client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) {
    mkdirSync(join(dir, d), { recursive: true });
    chmodSync(join(dir, d), 0o755);
  }
  const port = o.port;
  const o2pPort = await freePort();
  const o2p = await startOauth2Proxy(logDir, {
    bin: o.bin,
    port: o2pPort,
    publicUrl: `http://127.0.0.1:${port}`,
    issuer: o.issuer,
    name: `oauth2-proxy-${tag}`,
  });
  writeFileSync(join(dir, 'nginx.conf'), nginxAuthRequestConfig(dir, port, { upstreamPort: o.upstreamPort, oauth2ProxyPort: o2pPort }));
  let started = 0;
  let nginx: Child;
  try {
    ({ child: nginx } = await spawnChild(tag, nginxBin, ['-e', 'stderr', '-p', dir, '-c', join(dir, 'nginx.conf')], {
      ready: (line) => (/start worker process/.test(line) && ++started >= 1 ? true : undefined),
      logFile: logPath(logDir, tag),
    }));
  } catch (e) {
    await o2p.stop();
    throw e;
  }
  return {
    name: 'nginx + oauth2-proxy',
    url: `http://127.0.0.1:${port}`,
    child: nginx,
    countsGc: false,
    pids: () => [...nginx.pids(), ...o2p.pids()],
    stop: async () => {
      await Promise.all([nginx.stop(), o2p.stop()]);
    },
  };
}

/**
 * A session cookie by oauth2-proxy's real flow: /oauth2/start (its CSRF cookie and the redirect
 * to the IdP), the IdP's login form as a browser fills it, then /oauth2/callback, which sets the
 * session cookie (`_oauth2_proxy`, split in parts when large). Returns the Cookie header to send.
 */
export async function signInOauth2Proxy(
  url: string,
  login: (authorizeUrl: string) => Promise<{ callbackUrl: string }>,
  jar = new CookieJar(),
): Promise<Record<string, string>> {
  const startUrl = `${url}/oauth2/start?rd=%2F`;
  const start = await fetch(startUrl, { redirect: 'manual' });
  jar.store(start.headers.getSetCookie(), startUrl);
  const location = start.headers.get('location');
  if (start.status !== 302 || !location) throw new Error(`oauth2-proxy /oauth2/start answered ${start.status}`);
  const { callbackUrl } = await login(new URL(location, startUrl).href);
  const callback = await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: jar.header(callbackUrl) } });
  jar.store(callback.headers.getSetCookie(), callbackUrl);
  if (callback.status !== 302) throw new Error(`oauth2-proxy /oauth2/callback answered ${callback.status}: ${(await callback.text()).slice(0, 300)}`);
  const cookie = jar.header(`${url}/`);
  if (!/_oauth2_proxy/.test(cookie)) throw new Error('oauth2-proxy set no session cookie');
  return { cookie };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export function goVersion(): string | null {
  try {
    return execFileSync('go', ['version'], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}
