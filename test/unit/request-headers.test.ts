// What the chat front-end is told about a caller's groups (gateway/http/request-headers.ts).
import { expect } from 'chai';
import { identityHeaders } from '../../gateway/http/request-headers.js';
import { noGroupsName } from '../../config/settings.js';
import { redactSettings } from '../../config/redact.js';
import { loadSettings } from '../../config/settings.js';

const names = {
  email: 'X-Forwarded-Email',
  name: 'X-Forwarded-Name',
  role: 'X-Forwarded-Role',
  groups: 'X-Forwarded-Groups',
  noGroups: noGroupsName('s'.repeat(32)),
};
const groupsHeader = (groups: string[]) => new Map(identityHeaders(names, { email: 'a@x.example', name: 'A', admin: false, groups })).get('X-Forwarded-Groups');

describe('the groups header', () => {
  it('names the realm groups, commas inside a name made spaces', () => {
    expect(groupsHeader(['acme', 'glo,bex'])).to.equal('acme,glo bex');
  });

  it('is never empty for a user in no group: it names a group that cannot exist, so Open WebUI drops every membership', () => {
    for (const none of [[], [''], ['  ']]) {
      const value = groupsHeader(none);
      expect(value).to.equal(names.noGroups);
      expect(value).to.match(/^no-group-[0-9a-f]{32}$/);
    }
  });

  it('the name of no group is secret to the deployment: another session secret, another name; never shown by the settings report', () => {
    expect(noGroupsName('a'.repeat(32))).to.not.equal(noGroupsName('b'.repeat(32)));
    expect(noGroupsName('a'.repeat(32))).to.equal(noGroupsName('a'.repeat(32)));
    const settings = loadSettings(
      { NODE_ENV: 'development', SESSION_SECRET: 'c'.repeat(40), CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false', CHATUI_ENABLE_ADMIN_EXPORT: 'false' },
      { stageFiles: false },
    );
    expect(settings.trustedHeaders.noGroups).to.equal(noGroupsName('c'.repeat(40)));
    expect(JSON.stringify(redactSettings(settings))).to.not.include(settings.trustedHeaders.noGroups);
  });
});

describe('the upstream credential replaces every token cookie the client sent', () => {
  it('Open WebUI reads `token =JWT` (names trimmed) as its token: removed in any spacing, other cookies kept', async () => {
    const { setUpstreamCredential } = await import('../../gateway/http/request-headers.js');
    for (const spelled of ['token=JWT', 'token =JWT', 'token\t=JWT', ' token = JWT']) {
      const out = { authorization: undefined, apiKey: undefined, cookie: `a=1; ${spelled}; b=2`, trustedHeaders: [] };
      setUpstreamCredential(out, { 'x-api-key': 'sk-own' });
      expect(out.cookie, spelled).to.equal('a=1; b=2');
      expect(out.apiKey).to.equal('sk-own');
    }
    const kept = { authorization: undefined, apiKey: undefined, cookie: 'tokens=1; mytoken=2', trustedHeaders: [] };
    setUpstreamCredential(kept, { authorization: 'Bearer own' });
    expect(kept.cookie).to.equal('tokens=1; mytoken=2');
  });
});
