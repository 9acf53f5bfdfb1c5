// The Open WebUI release behind the gateway, and what the gateway does when it is not one its route
// table was checked against (UPSTREAM_RELEASE_POLICY). Pure: the release status, the policy and the
// caller give a decision; the pipeline and operations carry it out (docs/design/release-check.md).
import type { CallerFacts, Decision, RefusalPage, RequestFacts } from './admin-scoping.js';
import { CHECKED_VERSIONS, isCheckedRelease } from './open-webui-releases.js';
import { classify } from './routes.js';

export const UPSTREAM_RELEASE_POLICIES = ['warn', 'refuse-admins', 'strict'] as const;
export type UpstreamReleasePolicy = (typeof UPSTREAM_RELEASE_POLICIES)[number];

export type ReleaseStatus = (
  | /** a release the table was checked against, or one it was not */
    { state: 'supported' | 'unsupported'; version: string }
    /** not read yet (the gateway is starting) */
  | { state: 'not-read' }
  /** GET /api/version did not answer, or answered something that is not a release */
  | { state: 'unreachable' | 'unreadable'; why: string }
) & {
  /** when the gateway first read this status (ms since the epoch), kept while it stays the same */
  since?: number;
};

/** Longest version string kept (a metric label, a log field). */
const MAX_VERSION_LENGTH = 64;

/** The status of a version Open WebUI reported (exactly as reported: `0.12.4`, never `v0.12.4`). */
export function releaseStatusOf(version: string): ReleaseStatus {
  if (version === '' || version.length > MAX_VERSION_LENGTH || !/^[0-9A-Za-z.+_-]+$/.test(version))
    return { state: 'unreadable', why: `the version reported is not a release name (${JSON.stringify(version.slice(0, MAX_VERSION_LENGTH))})` };
  return isCheckedRelease(version) ? { state: 'supported', version } : { state: 'unsupported', version };
}

/** The `release` label of gateway_upstream_release_supported. */
export function releaseLabel(status: ReleaseStatus): string {
  return status.state === 'supported' || status.state === 'unsupported' ? status.version : status.state;
}

const WHAT_POLICY_DOES: Record<UpstreamReleasePolicy, string> = {
  warn: 'UPSTREAM_RELEASE_POLICY=warn: serving with the table as it is',
  'refuse-admins': 'UPSTREAM_RELEASE_POLICY=refuse-admins: admins\u2019 API requests are refused, plain users are served',
  strict: 'UPSTREAM_RELEASE_POLICY=strict: not ready',
};

/** The status in words, for the log, /readyz and check-config. */
export function describeRelease(status: ReleaseStatus, policy: UpstreamReleasePolicy): string {
  const checked = CHECKED_VERSIONS.join(', ');
  switch (status.state) {
    case 'supported':
      return `Open WebUI ${status.version}: a release the route table was checked against`;
    case 'unsupported':
      return (
        `Open WebUI ${status.version}: NOT a release the route table was checked against (${checked}); routes it added are refused for admins ` +
        `and routes it changed are judged by rows written for another release (check it: npm run routes:check -- ${status.version}); ${WHAT_POLICY_DOES[policy]}`
      );
    case 'not-read':
      return `the Open WebUI release is not read yet; ${WHAT_POLICY_DOES[policy]}`;
    default:
      return `the Open WebUI release could not be read (${status.state}: ${status.why}), so it is not taken for a checked one (${checked}); ${WHAT_POLICY_DOES[policy]}`;
  }
}

export const RELEASE_NOT_CHECKED = 'The chat front-end runs a release this gateway was not checked against: admin requests are refused until it is';

/**
 * UPSTREAM_RELEASE_POLICY=refuse-admins while the release is not a checked one: an admin's request
 * to the chat front-end's API (policies/routes.ts: /api, /ws, /ollama, /openai, /oauth, /cache, any
 * letter case) is refused with a JSON `detail`; an admin's visit to one of its pages (GET or HEAD)
 * is refused with a page in the gateway's words (why, since when, what to tell the operator):
 * served, the web app would only show its own error page, its first API call being refused. Public
 * assets and every plain user's request are left to the rest of the policy (undefined).
 */
export function releaseDecision(request: RequestFacts, policy: UpstreamReleasePolicy, caller: CallerFacts, status: ReleaseStatus): Decision | undefined {
  if (policy !== 'refuse-admins' || !caller.admin || status.state === 'supported') return undefined;
  const cls = classify(request.path);
  const rule = 'upstream release not checked: admins refused';
  const seen = status.state === 'unsupported' ? ` (Open WebUI ${status.version})` : '';
  const detail = `${RELEASE_NOT_CHECKED}${seen}`;
  if (cls === 'api') return { action: 'deny', status: 403, detail, rule };
  if (cls !== 'page' || (request.method !== 'GET' && request.method !== 'HEAD')) return undefined;
  const page: RefusalPage = {
    kind: 'release-not-checked',
    checked: CHECKED_VERSIONS,
    ...(status.state === 'unsupported' ? { release: status.version } : {}),
    ...(status.state === 'unreachable' || status.state === 'unreadable' ? { unread: status.why } : {}),
    ...(status.state === 'not-read' ? { unread: 'not read yet: the gateway is starting' } : {}),
    ...(status.since !== undefined ? { since: status.since } : {}),
  };
  return { action: 'deny', status: 403, detail, rule: `${rule} (a page)`, page };
}

/** Does the release keep the gateway ready? Only UPSTREAM_RELEASE_POLICY=strict says no, for anything but a checked release. */
export function releaseKeepsReady(policy: UpstreamReleasePolicy, status: ReleaseStatus): boolean {
  return policy !== 'strict' || status.state === 'supported';
}
