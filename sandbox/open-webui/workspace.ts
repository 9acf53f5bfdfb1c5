// The stand-in's workspace: notes, folders, knowledge, channels (messages, members), feedback,
// memories, models, prompts, tools, skills, as Open WebUI 0.12.4 keeps them, and the access rules
// its routes share. The routes are in workspace-content.ts (users, notes, folders,
// knowledge, channels) and workspace-models.ts (feedback, analytics, memories,
// retrieval, models, prompts, tools, skills). Admin behaviour is the upstream's: by-id routes let
// any admin through, lists follow BYPASS_ADMIN_ACCESS_CONTROL, so the gateway's own scoping is
// what a test observes.
import { randomUUID } from 'node:crypto';

/** models/access_grants.py AccessGrantModel */
export interface Grant {
  id: string;
  resource_type: string;
  resource_id: string;
  principal_type: 'user' | 'group';
  principal_id: string;
  permission: 'read' | 'write';
  created_at: number;
}

export interface WorkspaceObject {
  id: string;
  user_id: string;
  access_grants?: Grant[];
  [k: string]: unknown;
}

export type Kind = 'note' | 'folder' | 'knowledge' | 'channel' | 'feedback' | 'memory' | 'model' | 'prompt' | 'tool' | 'skill';

export interface ChannelMessage {
  id: string;
  channel_id: string;
  user_id: string;
  content: string;
  created_at: number;
}

export interface Workspace {
  objects: Record<Kind, Map<string, WorkspaceObject>>;
  /** channel id -> member user ids (dm and group channels) */
  members: Map<string, Set<string>>;
  messages: ChannelMessage[];
  /** bodies of Socket.IO long-polling POSTs received (engine.io packets, \x1e-separated) */
  polled: string[];
  /** each user's own UserModel.settings (their UI settings, system prompt) */
  settings: Map<string, Record<string, unknown>>;
}

export function grant(kind: string, resourceId: string, principal: `${'user' | 'group'}:${string}`, permission: 'read' | 'write' = 'read'): Grant {
  const [type, id] = principal.split(/:(.*)/s) as ['user' | 'group', string];
  return {
    id: randomUUID(),
    resource_type: kind,
    resource_id: resourceId,
    principal_type: type,
    principal_id: id,
    permission,
    created_at: Math.floor(Date.now() / 1000),
  };
}

export function emptyWorkspace(): Workspace {
  const m = () => new Map<string, WorkspaceObject>();
  return {
    objects: { note: m(), folder: m(), knowledge: m(), channel: m(), feedback: m(), memory: m(), model: m(), prompt: m(), tool: m(), skill: m() },
    members: new Map(),
    messages: [],
    polled: [],
    settings: new Map(),
  };
}

export interface User {
  id: string;
  email: string;
  name: string;
  role: string;
  groups: string[];
}

/** What the stand-in hands its workspace routes (its own helpers, typed loosely to stay separate). */
export interface Kit<C> {
  route(method: string, pattern: string, h: (ctx: C, p: string[]) => Promise<void> | void): void;
  authenticate(ctx: C, level: 'verified' | 'admin'): Promise<{ user: User }>;
  sendJson(ctx: C, status: number, value: unknown): void;
  readJsonObject(ctx: C): Promise<Record<string, unknown>>;
  readText(ctx: C): Promise<string>;
  sendText(ctx: C, status: number, text: string): void;
  query(ctx: C, name: string): string | undefined;
  fail(status: number, detail: string): Error;
  flags: { bypassAdminAccessControl: boolean };
  users: Map<string, User>;
  chats: Map<string, { id: string; user_id: string; title: string; folder_id: string | null; chat: unknown }>;
  /** the stand-in's uploaded files (knowledge bases index them) */
  files: Map<string, { id: string; user_id: string; filename: string; data: { content?: string } }>;
}

export const FORBIDDEN = 'You do not have permission to access this resource. Please contact your administrator for assistance.';
export const NOT_FOUND = "We could not find what you're looking for :/";

/** AccessGrants.has_access: exact permission, the user, `user:*`, or one of the user's groups */
export function hasAccess(user: User, o: WorkspaceObject, permission: 'read' | 'write'): boolean {
  return (o.access_grants ?? []).some(
    (g) =>
      g.permission === permission &&
      ((g.principal_type === 'user' && (g.principal_id === user.id || g.principal_id === '*')) ||
        (g.principal_type === 'group' && user.groups.includes(g.principal_id))),
  );
}

export function readable(user: User, o: WorkspaceObject): boolean {
  return o.user_id === user.id || hasAccess(user, o, 'read') || hasAccess(user, o, 'write');
}

/**
 * The lookups the workspace routes share, over one workspace and the stand-in's kit. Arrow
 * properties, so a route module can take them off the object.
 */
export class WorkspaceAccess<C> {
  constructor(
    private readonly kit: Kit<C>,
    private readonly ws: Workspace,
  ) {}

  /** the object, or 404 */
  readonly get = (kind: Kind, id: string | undefined): WorkspaceObject => {
    const o = this.ws.objects[kind].get(id ?? '');
    if (!o) throw this.kit.fail(404, NOT_FOUND);
    return o;
  };

  /** the bypass-dependent list rule of notes, knowledge, models, prompts, tools, skills */
  readonly listed = (user: User, kind: Kind): WorkspaceObject[] =>
    [...this.ws.objects[kind].values()].filter((o) => (user.role === 'admin' && this.kit.flags.bypassAdminAccessControl) || readable(user, o));

  /** "user.role != 'admin' and not owner and not has_access": 403 */
  readonly byIdAdminAny = async (
    ctx: C,
    kind: Kind,
    id: string | undefined,
    permission: 'read' | 'write' = 'read',
  ): Promise<{ user: User; o: WorkspaceObject }> => {
    const { user } = await this.kit.authenticate(ctx, 'verified');
    const o = this.get(kind, id);
    if (user.role !== 'admin' && o.user_id !== user.id && !hasAccess(user, o, permission)) throw this.kit.fail(403, FORBIDDEN);
    return { user, o };
  };

  /** the object with its owner's id, name, email and role (null when the owner is gone) */
  readonly withUser = (o: WorkspaceObject): WorkspaceObject & { user: Pick<User, 'id' | 'name' | 'email' | 'role'> | null } => {
    const u = this.kit.users.get(o.user_id);
    return { ...o, user: u ? { id: u.id, name: u.name, email: u.email, role: u.role } : null };
  };
}
