// Spec area B: the anonymous auth-providers API, the login pages and the logged-out guard.
// This file defines the seam the data plane depends on; the login-routing module fills it in.
import type { IncomingMessage } from 'node:http';
import { Router } from 'express';
import type { Settings } from '../config/settings.js';
import type { Observability } from './observability.js';

export interface LoginRouting {
  /** /api/v1/auth-providers/..., /auth/login..., /{locale}/auth/login... */
  router: Router;
  /** Where a logged-out visit of a page goes (links rules 6 to 8): a Location for a 302. */
  guard(path: string, req: IncomingMessage): Promise<string>;
  /** For /readyz: the provider catalog's state. */
  ready(): { ok: boolean; detail: string };
  close(): Promise<void>;
}

const LOCALE = /^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$/i;

export function localeOf(path: string): string | undefined {
  const first = path.split('/')[1] ?? '';
  return LOCALE.test(first) ? first : undefined;
}

/** Placeholder until login routing lands: every logged-out page goes to the login page. */
export async function createLoginRouting(_settings: Settings, _obs: Observability): Promise<LoginRouting> {
  return {
    router: Router(),
    guard: async (path) => {
      const locale = localeOf(path);
      return locale ? `/${locale}/auth/login` : '/auth/login';
    },
    ready: () => ({ ok: true, detail: 'not configured' }),
    close: async () => {},
  };
}
