// The gateway's route table (policies/open-webui-routes.ts) against the REAL route table
// of every Open WebUI release it was checked against (policies/open-webui-releases.ts: 0.12.4 and
// 0.11.4): scripts/open-webui-routes.py imports open_webui.main in each release's venv and prints
// every HTTP route (mounted sub-apps included), every Socket.IO event handler and a fingerprint of
// each handler's code. A route or event missing from the gateway's table fails, unless the
// release's record says why; so does a row of the table Open WebUI does not have, and a handler
// whose code is not the one recorded when the table was checked (policies/open-webui-releases.json;
// `npm run routes:check` compares the same way). Without a venv its comparison is skipped locally,
// and fails in CI (CI=true).
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OPEN_WEBUI_MOUNTS, OPEN_WEBUI_ROUTES } from '../../policies/open-webui-routes.js';
import { OPEN_WEBUI_SOCKET_EVENTS } from '../../policies/socket-events.js';
import { matchRoute, tableHas } from '../../policies/route-matcher.js';
import { decide } from '../../policies/admin-scoping.js';
import { CHECKED_RELEASES, TABLE_RELEASE } from '../../policies/open-webui-releases.js';
import { covered, diffRelease, readRecorded, type RealListing, type ReleaseDiff } from '../../scripts/open-webui-release-diff.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const cacheDir = process.env.CHATGW_CACHE || path.join(homedir(), '.cache', 'chat-gateway');
const venvPython = (version: string) => path.join(cacheDir, `open-webui-${version}`, 'venv', 'bin', 'python');

/** scripts/open-webui-routes.py in a release's venv: its routes, as that release's code declares them. */
function listRoutes(python: string): Promise<RealListing> {
  return new Promise((resolve, reject) =>
    execFile(
      python,
      [path.join(root, 'scripts', 'open-webui-routes.py')],
      { encoding: 'utf8', timeout: 220_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) =>
        err
          ? reject(new Error(`scripts/open-webui-routes.py failed (${err.code ?? err.signal}):\n${stderr.slice(-4000)}`))
          : resolve(JSON.parse(stdout) as RealListing),
    ),
  );
}

/**
 * Every installed release's listing, asked of all of them at once when the first is needed: each
 * is mostly Open WebUI importing itself, which two cores do side by side.
 */
let listings: Map<string, Promise<RealListing>> | undefined;
function listingOf(version: string): Promise<RealListing> {
  listings ??= new Map(
    CHECKED_RELEASES.filter((r) => existsSync(venvPython(r.version))).map((r) => {
      const listing = listRoutes(venvPython(r.version));
      listing.catch(() => undefined); // reported by its own release's suite
      return [r.version, listing];
    }),
  );
  return listings.get(version)!;
}

/** A concrete path for a template: each parameter a sample value (a `:path` one two segments). */
function sample(template: string): string {
  return template.replace(/\{[a-z_]+:path\}/gi, 'p1/p2').replace(/\{[a-z_]+\}/gi, 'x1');
}

describe('Open WebUI route table', () => {
  describe('the gateway\u2019s table', () => {
    it('resolves every row\u2019s own path to that row (no row shadows another)', () => {
      for (const row of OPEN_WEBUI_ROUTES)
        for (const method of row.methods) {
          if (method === 'WEBSOCKET') continue;
          const m = matchRoute(method, sample(row.path));
          expect(m?.row.path, `${method} ${row.path}`).to.equal(row.path);
        }
    });

    it('matches case-insensitively and with or without a trailing slash, HEAD as GET', () => {
      expect(matchRoute('GET', '/API/V1/Notes/n-1/')?.row.path).to.equal('/api/v1/notes/{id}');
      expect(matchRoute('HEAD', '/api/v1/notes/n-1')?.params).to.deep.equal({ id: 'n-1' });
      expect(matchRoute('GET', '/api/v1/notes/search')?.row.class).to.equal('listing');
      expect(matchRoute('GET', '/api/v1/nope')).to.equal(undefined);
    });

    it('by-id rows name a lookup whose parameters the route has', () => {
      for (const row of OPEN_WEBUI_ROUTES) {
        if (row.class !== 'by-id-read' && row.class !== 'by-id-write') continue;
        expect(row.lookup, row.path).to.be.a('string');
        for (const [, name] of row.lookup!.matchAll(/\{([a-z_]+)\}/g)) expect(row.path, `${row.path} -> ${row.lookup}`).to.include(`{${name}}`);
      }
    });

    it('rows about one model say where it is named, and a model\u2019s chat tags come with that check', () => {
      for (const row of OPEN_WEBUI_ROUTES) {
        if (row.ofModel === '{model_id}') expect(row.path, row.path).to.match(/\{model_id(:path)?\}/);
        if (row.tags === 'chats-of-model') expect(row.ofModel, row.path).to.equal('{model_id}');
        if (/\{model_id(:path)?\}/.test(row.path) && row.class === 'admin-config')
          expect(row.ofModel, `${row.path}: counts of a named model`).to.equal('{model_id}');
      }
    });

    it('task routes name exactly one chat: own-chat check, and a chat id with a slash is refused', () => {
      const off = { bypassAdminAccessControl: false, enableAdminExport: false };
      expect(decide({ method: 'GET', path: '/api/tasks/chat/c-1' }, off, { admin: true })).to.deep.include({
        action: 'require-own-chat',
        access: { need: 'own-chat', chatId: 'c-1' },
      });
      expect(decide({ method: 'POST', path: '/api/tasks/chat/c-1/stop' }, off, { admin: true })).to.deep.include({
        access: { need: 'own-chat', chatId: 'c-1' },
      });
      expect(decide({ method: 'GET', path: '/api/tasks/chat/c-1/tags' }, off, { admin: true })).to.include({ action: 'deny', status: 401 });
      expect(decide({ method: 'GET', path: '/api/tasks/chat/c-1' }, off, { admin: false }).action).to.equal('pass');
    });

    it('a handler the same as another checked release\u2019s carries that release\u2019s recorded difference: unsaid in its own record, it is reported', () => {
      const recorded = readRecorded();
      const release = CHECKED_RELEASES.find((r) => r.version === '0.12.3')!;
      const listing = { version: '0.12.3', http: [], mounts: [], socketio: [], ...recorded['0.12.3']! };
      const calendar = 'POST /api/v1/calendars/{calendar_id}/update';
      expect(diffRelease(listing, recorded).unsaidDifferences, 'as recorded').to.deep.equal([]);
      const without = CHECKED_RELEASES.map((r) =>
        r === release ? { ...r, differences: Object.fromEntries(Object.entries(r.differences).filter(([route]) => route !== calendar)) } : r,
      );
      const unsaid = diffRelease(listing, recorded, without).unsaidDifferences;
      expect(unsaid).to.have.length(1);
      expect(unsaid[0]).to.match(/^POST \/api\/v1\/calendars\/\{calendar_id\}\/update: the same handler as 0\.11\.4\u2019s, which takes the calendar/);
    });

    it('routes not in the table are refused for admins while the bypass is off, passed for users and with the bypass on', () => {
      const off = { bypassAdminAccessControl: false, enableAdminExport: false };
      const on = { bypassAdminAccessControl: true, enableAdminExport: false };
      for (const [method, p] of [
        ['GET', '/api/v1/notes/n-1/secret-new-route'],
        ['POST', '/api/v2/anything'],
        ['GET', '/ollama/x/y/z/w'],
        ['PUT', '/api/v1/notes/n-1'],
      ]) {
        expect(decide({ method: method!, path: p! }, off, { admin: true }), `${method} ${p}`).to.include({ action: 'deny', status: 403 });
        expect(decide({ method: method!, path: p! }, off, { admin: false }).action).to.equal('pass');
        expect(decide({ method: method!, path: p! }, on, { admin: true }).action).to.equal('pass');
      }
    });
  });

  // Every release the table was checked against (policies/open-webui-releases.ts: 0.12.4, whose
  // code the rows were read from, and 0.11.4), each from its own venv in the cache.
  for (const release of CHECKED_RELEASES) {
    describe(`against the installed Open WebUI ${release.version}`, function () {
      this.timeout(240_000);
      const python = venvPython(release.version);
      let real: RealListing;
      let diff: ReleaseDiff;

      before(async function () {
        if (!existsSync(python)) {
          const why = `Open WebUI ${release.version} venv not found at ${python} (set CHATGW_CACHE, or OWUI_VERSION=${release.version} bash scripts/open-webui.sh install)`;
          if (process.env.CI === 'true') throw new Error(`${why}: required in CI`);
          console.warn(`      skipped: ${why}`);
          this.skip();
        }
        real = await listingOf(release.version);
        diff = diffRelease(real, readRecorded());
      });

      it(`is release ${release.version} with its full route set (analytics and SCIM mounted)`, () => {
        expect(real.version).to.equal(release.version);
        expect(real.http.length).to.be.greaterThan(500);
        expect(real.http.some((r) => r.path.startsWith('/api/v1/analytics/'))).to.equal(true);
        expect(real.http.some((r) => r.path.startsWith('/api/v1/scim/v2/'))).to.equal(true);
      });

      it('every HTTP route (method and path) is in the gateway\u2019s table, or the release\u2019s record says why not', () => {
        expect(
          diff.added.map((a) => a.route),
          `routes of Open WebUI ${release.version} missing from policies/open-webui-routes.ts`,
        ).to.deep.equal([]);
        if (release.version === TABLE_RELEASE) {
          const missing = real.http.flatMap((r) => r.methods.filter((m) => !tableHas(m, r.path)).map((m) => `${m} ${r.path}`));
          expect(missing, 'the table release: every route a row of its own').to.deep.equal([]);
        }
      });

      it('every row of the table is a route of Open WebUI, or the release\u2019s record names it absent (no stale rows)', () => {
        expect(diff.removed).to.deep.equal([]);
        expect(diff.staleRecord, 'policies/open-webui-releases.ts').to.deep.equal([]);
        // a handler the same as another checked release's carries what that release's record says of it
        expect(diff.unsaidDifferences, 'policies/open-webui-releases.ts differences').to.deep.equal([]);
      });

      it('every mounted sub-app and every Socket.IO event is in the table', () => {
        expect(diff.mountsAdded).to.deep.equal([]);
        expect(diff.eventsAdded).to.deep.equal([]);
        expect(diff.eventsRemoved).to.deep.equal([]);
        expect(real.socketio.filter((e) => !(e in OPEN_WEBUI_SOCKET_EVENTS))).to.deep.equal([]);
        // the events that open another user's note are among them
        expect(real.socketio).to.include.members(['join-note', 'ydoc:document:join', 'ydoc:document:update']);
        if (release.version === TABLE_RELEASE) {
          expect(real.mounts.filter((m) => !(m in OPEN_WEBUI_MOUNTS))).to.deep.equal([]);
          expect(Object.keys(OPEN_WEBUI_SOCKET_EVENTS).filter((e) => !real.socketio.includes(e))).to.deep.equal([]);
        }
      });

      it('every handler is the one recorded when the table was checked (policies/open-webui-releases.json)', () => {
        expect(diff.pythonDiffers, 'the fingerprints are taken with the Python they were recorded with').to.equal(undefined);
        expect(
          diff.changed.map((c) => c.route),
          `handlers of ${release.version} changed since they were reviewed: npm run routes:check -- ${release.version} --source`,
        ).to.deep.equal([]);
        expect(diff.changedEvents.map((c) => c.route)).to.deep.equal([]);
        expect(Object.keys(readRecorded()[release.version]?.handlers ?? {}).length).to.equal(Object.keys(real.handlers).length);
        expect(covered(diff)).to.equal(true);
      });
    });
  }
});
