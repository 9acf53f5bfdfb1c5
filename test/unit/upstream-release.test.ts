// policies/upstream-release.ts: what the gateway makes of the Open WebUI release behind it.
import { expect } from 'chai';
import { CHECKED_VERSIONS } from '../../policies/open-webui-releases.js';
import { describeRelease, releaseDecision, releaseKeepsReady, releaseLabel, releaseStatusOf, type ReleaseStatus } from '../../policies/upstream-release.js';

const admin = { admin: true };
const user = { admin: false };
const supported: ReleaseStatus = { state: 'supported', version: '0.12.4' };
const unsupported: ReleaseStatus = { state: 'unsupported', version: '0.13.0' };
const unreadable: ReleaseStatus = { state: 'unreadable', why: 'GET /api/version answered 404' };
const unreachable: ReleaseStatus = { state: 'unreachable', why: 'connect ECONNREFUSED' };
const notRead: ReleaseStatus = { state: 'not-read' };

describe('unit: the upstream release', () => {
  it('a checked release is supported exactly as reported; anything else is not; what is no release name is unreadable', () => {
    expect(CHECKED_VERSIONS).to.include('0.12.4');
    expect(releaseStatusOf('0.12.4')).to.deep.equal(supported);
    for (const v of ['0.12.5', '0.13.0', '0.0.0', 'v0.12.4', '0.12.4-dev', '0.12'])
      expect(releaseStatusOf(v), v).to.deep.equal({ state: 'unsupported', version: v });
    for (const v of ['', ' 0.12.4', '0.12.4\n', '0.12.4 <b>', 'x'.repeat(65)]) expect(releaseStatusOf(v).state, JSON.stringify(v)).to.equal('unreadable');
    expect([supported, unsupported, unreadable, unreachable, notRead].map(releaseLabel)).to.deep.equal([
      '0.12.4',
      '0.13.0',
      'unreadable',
      'unreachable',
      'not-read',
    ]);
  });

  it('refuse-admins refuses an admin\u2019s API request (any letter case, Socket.IO included) unless the release is supported; nothing else', () => {
    const api = ['/api/v1/chats/', '/API/config', '/ws/socket.io/', '/ollama/api/tags', '/openai/models', '/oauth/clients/x/authorize', '/cache/x', '/api'];
    for (const status of [unsupported, unreadable, unreachable, notRead])
      for (const path of api) {
        const d = releaseDecision({ method: 'GET', path }, 'refuse-admins', admin, status);
        expect(d, `${status.state} ${path}`).to.deep.include({ action: 'deny', status: 403, rule: 'upstream release not checked: admins refused' });
        expect(releaseDecision({ method: 'GET', path }, 'refuse-admins', user, status), `user ${path}`).to.equal(undefined);
        expect(releaseDecision({ method: 'GET', path }, 'warn', admin, status), `warn ${path}`).to.equal(undefined);
        expect(releaseDecision({ method: 'GET', path }, 'strict', admin, status), `strict ${path}`).to.equal(undefined);
      }
    for (const path of api) expect(releaseDecision({ method: 'POST', path }, 'refuse-admins', admin, supported)).to.equal(undefined);
    // public assets are not refused
    for (const path of ['/static/x.js', '/_app/y.js', '/health', '/favicon.png'])
      expect(releaseDecision({ method: 'GET', path }, 'refuse-admins', admin, unsupported), path).to.equal(undefined);
    // an admin's visit to a page is refused with a page saying why and since when; a plain user's is not
    for (const path of ['/', '/c/chat-1', '/workspace', '/notes/n-1', '/admin/settings'])
      for (const method of ['GET', 'HEAD']) {
        const d = releaseDecision({ method, path }, 'refuse-admins', admin, { ...unsupported, since: 1_795_900_000_000 });
        expect(d, `${method} ${path}`).to.deep.include({ action: 'deny', status: 403, rule: 'upstream release not checked: admins refused (a page)' });
        expect(d && d.action === 'deny' && d.page, path).to.deep.equal({
          kind: 'release-not-checked',
          release: '0.13.0',
          since: 1_795_900_000_000,
          checked: CHECKED_VERSIONS,
        });
        expect(releaseDecision({ method, path }, 'refuse-admins', user, unsupported), `user ${path}`).to.equal(undefined);
        expect(releaseDecision({ method, path }, 'warn', admin, unsupported), `warn ${path}`).to.equal(undefined);
        expect(releaseDecision({ method, path }, 'refuse-admins', admin, supported), `supported ${path}`).to.equal(undefined);
      }
    expect(releaseDecision({ method: 'POST', path: '/' }, 'refuse-admins', admin, unsupported), 'a POST to a page').to.equal(undefined);
    const unread = releaseDecision({ method: 'GET', path: '/' }, 'refuse-admins', admin, unreachable);
    expect(unread && unread.action === 'deny' && unread.page).to.deep.equal({
      kind: 'release-not-checked',
      unread: 'connect ECONNREFUSED',
      checked: CHECKED_VERSIONS,
    });
    expect(releaseDecision({ method: 'GET', path: '/api/v1/chats/' }, 'refuse-admins', admin, unsupported)!).to.deep.include({
      detail: 'The chat front-end runs a release this gateway was not checked against: admin requests are refused until it is (Open WebUI 0.13.0)',
    });
  });

  it('strict alone makes anything but a supported release not ready', () => {
    for (const status of [unsupported, unreadable, unreachable, notRead]) {
      expect(releaseKeepsReady('strict', status), status.state).to.equal(false);
      expect(releaseKeepsReady('warn', status)).to.equal(true);
      expect(releaseKeepsReady('refuse-admins', status)).to.equal(true);
    }
    expect(releaseKeepsReady('strict', supported)).to.equal(true);
  });

  it('says the release seen, the checked ones, what to run and what the policy does', () => {
    const words = describeRelease(unsupported, 'refuse-admins');
    expect(words).to.include('Open WebUI 0.13.0: NOT a release the route table was checked against');
    for (const v of CHECKED_VERSIONS) expect(words).to.include(v);
    expect(words).to.include('npm run routes:check -- 0.13.0').and.to.include('UPSTREAM_RELEASE_POLICY=refuse-admins');
    expect(describeRelease(unreachable, 'warn')).to.include('could not be read (unreachable: connect ECONNREFUSED), so it is not taken for a checked one');
  });
});
