// Who a request is, as utils/auth.py decides it: a session JWT (Bearer, the `token` cookie) or an
// API key, checked against the trusted email header; and the routes that sign users in and out
// (routers/auths.py, trusted-header sign-in) or change them (routers/users.py update).
import type { IncomingMessage } from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import { readJsonObject, sendJson, type Ctx } from './context.js';
import {
  ACCESS_PROHIBITED,
  ACTION_PROHIBITED,
  HttpError,
  INVALID_AUTHENTICATION,
  INVALID_CRED,
  INVALID_SESSION_TOKEN,
  INVALID_TOKEN,
  INVALID_TRUSTED_HEADER,
  NOT_AUTHENTICATED,
  UNAUTHORIZED,
  USER_MISMATCH,
  firstHeader,
  nowS,
  parseCookies,
  unprocessable,
  type ValidationIssue,
} from './http.js';
import type { Router } from './router.js';
import type { StandInState } from './state.js';
import type { StandInUser } from './types.js';

const JWT_TTL_S = 4 * 7 * 24 * 3600; // JWT_EXPIRES_IN default: 4 weeks
const EMAIL_TAKEN = 'Uh-oh! This email is already registered. Sign in with your existing account or choose another email to start anew.';
const INVALID_EMAIL_FORMAT =
  "The email format you entered is invalid. Please double-check and make sure you're using a valid email address (e.g., yourname@example.com).";

const DEFAULT_PERMISSIONS = {
  workspace: { models: false, knowledge: false, prompts: false, tools: false },
  sharing: { public_models: false, public_knowledge: false, public_prompts: false, public_tools: false },
  chat: { controls: true, file_upload: true, delete: true, edit: true, share: true, export: true, temporary: true },
  features: { web_search: true, image_generation: true, code_interpreter: true },
};

export async function issueToken(state: StandInState, userId: string): Promise<{ token: string; exp: number }> {
  const iat = nowS();
  const exp = iat + JWT_TTL_S;
  // a session token carries the account's session_stamp: a new stamp refuses every older token
  const token = await new SignJWT({ id: userId, typ: 'session', session_stamp: state.sessionStamp(userId) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt(iat)
    .setJti(randomUUID())
    .setExpirationTime(exp)
    .sign(state.secret);
  return { token, exp };
}

/** A user's API key, made on first use: 'sk-' + hex, accepted as Bearer or x-api-key. */
export function apiKeyFor(state: StandInState, userId: string): string {
  let key = state.apiKeyOf.get(userId);
  if (!key) {
    key = `sk-${randomBytes(16).toString('hex')}`;
    state.apiKeyOf.set(userId, key);
    state.apiKeys.set(key, userId);
  }
  return key;
}

function tokenCookie(token: string, exp: number): string {
  return `token=${token}; expires=${new Date(exp * 1000).toUTCString()}; HttpOnly; Path=/; SameSite=lax`;
}

/** The credential a request carries: Bearer first, then the `token` cookie, then x-api-key. */
export function findToken(req: IncomingMessage): string | undefined {
  const authz = firstHeader(req, 'authorization');
  if (authz) {
    const m = /^\s*(\S+)\s+(.+?)\s*$/.exec(authz);
    if (m && (m[1] ?? '').toLowerCase() === 'bearer' && m[2]) return m[2];
  }
  const cookie = parseCookies(firstHeader(req, 'cookie')).get('token');
  if (cookie) return cookie;
  const key = firstHeader(req, 'x-api-key');
  if (key) return key.trim();
  return undefined;
}

/** The account a token opens, or the detail of get_current_user's 401 refusing it. */
async function holderOf(state: StandInState, token: string): Promise<{ user: StandInUser } | { refused: string }> {
  if (token.startsWith('sk-')) {
    const id = state.apiKeys.get(token);
    const user = id ? state.users.get(id) : undefined;
    return user ? { user } : { refused: INVALID_TOKEN };
  }
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, state.secret, { algorithms: ['HS256'] }));
  } catch {
    return { refused: UNAUTHORIZED };
  }
  const id = payload['id'];
  if (typeof id !== 'string') return { refused: UNAUTHORIZED };
  const user = state.users.get(id);
  if (!user) return { refused: INVALID_AUTHENTICATION };
  if (payload['session_stamp'] !== state.sessionStamp(id)) return { refused: INVALID_SESSION_TOKEN };
  return { user };
}

export async function userOfToken(state: StandInState, token: string): Promise<StandInUser | undefined> {
  const holder = await holderOf(state, token);
  return 'user' in holder ? holder.user : undefined;
}

/** get_current_user / get_verified_user / get_admin_user */
export async function authenticate(state: StandInState, ctx: Ctx, level: 'any' | 'verified' | 'admin'): Promise<{ user: StandInUser; token: string }> {
  const token = findToken(ctx.req);
  if (!token) throw new HttpError(401, NOT_AUTHENTICATED);
  const holder = await holderOf(state, token);
  if ('refused' in holder) throw new HttpError(401, holder.refused);
  const user = holder.user;
  const claimed = firstHeader(ctx.req, state.trusted.email);
  if (claimed && claimed.toLowerCase() !== user.email.toLowerCase()) throw new HttpError(401, USER_MISMATCH);
  if (level !== 'any' && user.role === 'pending') throw new HttpError(401, ACCESS_PROHIBITED);
  if (level === 'admin' && user.role !== 'admin') throw new HttpError(401, ACCESS_PROHIBITED);
  return { user, token };
}

function sessionUser(user: StandInUser): Record<string, unknown> {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    role: user.role,
    profile_image_url: '/user.png',
    permissions: DEFAULT_PERMISSIONS,
  };
}

export function registerAuthRoutes(router: Router, state: StandInState): void {
  const { route } = router;
  const { users, groups, trusted } = state;

  // auths
  route('POST', '/api/v1/auths/signin', async (ctx) => {
    const body = await readJsonObject(ctx);
    const issues: ValidationIssue[] = [];
    for (const k of ['email', 'password']) {
      if (!(k in body)) issues.push({ type: 'missing', loc: ['body', k], msg: 'Field required', input: body });
      else if (typeof body[k] !== 'string') issues.push({ type: 'string_type', loc: ['body', k], msg: 'Input should be a valid string', input: body[k] });
    }
    if (issues.length) throw unprocessable(issues);
    const headerEmail = firstHeader(ctx.req, trusted.email);
    // auths.py signin: no trusted header at all is INVALID_TRUSTED_HEADER
    if (headerEmail === undefined) throw new HttpError(400, INVALID_TRUSTED_HEADER);
    if (!headerEmail) throw new HttpError(400, INVALID_CRED);
    const email = headerEmail.toLowerCase();
    let user = [...users.values()].find((u) => u.email.toLowerCase() === email);
    if (!user) {
      user = { id: randomUUID(), email, name: firstHeader(ctx.req, trusted.name) || email, role: 'user', groups: [] };
      users.set(user.id, user);
    }
    const role = firstHeader(ctx.req, trusted.role);
    if (role === 'admin' || role === 'user' || role === 'pending') user.role = role;
    // 0.12.4 auths.py: groups are synced only when the header names at least one; an absent or
    // empty header leaves the user's memberships as they were.
    const groupHeader = firstHeader(ctx.req, trusted.groups);
    const wanted = (groupHeader ?? '')
      .split(',')
      .map((g) => g.trim())
      .filter(Boolean);
    if (wanted.length) user.groups = [...new Set(wanted.filter((g) => groups.has(g)))];
    const { token, exp } = await issueToken(state, user.id);
    sendJson(ctx, 200, { token, token_type: 'Bearer', expires_at: exp, ...sessionUser(user) }, { 'set-cookie': tokenCookie(token, exp) });
  });
  route('GET', '/api/v1/auths/', async (ctx) => {
    const { user, token } = await authenticate(state, ctx, 'any');
    let exp = nowS() + JWT_TTL_S;
    if (!token.startsWith('sk-')) {
      try {
        const { payload } = await jwtVerify(token, state.secret, { algorithms: ['HS256'] });
        if (typeof payload.exp === 'number') exp = payload.exp;
      } catch {
        /* authenticate() already verified it */
      }
    }
    sendJson(ctx, 200, { token, token_type: 'Bearer', expires_at: exp, ...sessionUser(user) }, { 'set-cookie': tokenCookie(token, exp) });
  });
  // POST since 0.10.2 (a GET falls through to the single-page app, 200 text/html, in 0.12.4).
  route('POST', '/api/v1/auths/signout', (ctx) =>
    sendJson(ctx, 200, { status: true }, { 'set-cookie': 'token=""; expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/; SameSite=lax' }),
  );

  // routers/auths.py add_user: an admin creates an account (default role pending) and gets its token.
  route('POST', '/api/v1/auths/add', async (ctx) => {
    await authenticate(state, ctx, 'admin');
    const body = await readJsonObject(ctx);
    const email = typeof body['email'] === 'string' ? body['email'].toLowerCase() : '';
    if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) throw new HttpError(400, INVALID_EMAIL_FORMAT);
    if ([...users.values()].some((u) => u.email.toLowerCase() === email)) throw new HttpError(400, EMAIL_TAKEN);
    const role = body['role'] === 'admin' || body['role'] === 'user' ? body['role'] : 'pending';
    const user: StandInUser = { id: randomUUID(), email, name: typeof body['name'] === 'string' ? body['name'] : email, role, groups: [] };
    users.set(user.id, user);
    const { token } = await issueToken(state, user.id);
    sendJson(ctx, 200, { token, token_type: 'Bearer', id: user.id, email, name: user.name, role, profile_image_url: `/api/v1/users/${user.id}/profile/image` });
  });

  // users
  route('POST', '/api/v1/users/{id}/update', async (ctx, [id]) => {
    await authenticate(state, ctx, 'admin');
    const body = await readJsonObject(ctx);
    const user = users.get(id ?? '');
    if (!user) throw new HttpError(400, 'User not found');
    // 0.12 Auths.update_user_password_by_id: a password set revokes every session of the account
    if (typeof body['password'] === 'string' && body['password']) state.revokeSessions(user.id);
    if (body['role'] === 'admin' || body['role'] === 'user' || body['role'] === 'pending') user.role = body['role'];
    if (typeof body['name'] === 'string') user.name = body['name'];
    if (typeof body['email'] === 'string') user.email = body['email'].toLowerCase();
    sendJson(ctx, 200, sessionUser(user));
  });
  // routers/users.py revoke_user_sessions (0.12): the account's session_stamp renewed; the first
  // user's sessions only by that user
  route('POST', '/api/v1/users/{id}/sessions/revoke', async (ctx, [id]) => {
    const { user: admin } = await authenticate(state, ctx, 'admin');
    const target = users.get(id ?? '');
    if (!target) throw new HttpError(404, 'User not found.');
    const first = users.keys().next().value;
    if (first === target.id && admin.id !== target.id) throw new HttpError(403, ACTION_PROHIBITED);
    state.revokeSessions(target.id);
    sendJson(ctx, 200, true);
  });
}
