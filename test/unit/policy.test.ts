// config/policy.ts: a policy file (YAML or JSON) is read by the fields of the one schema, over the
// environment (which wins, with a warning naming the key), above the stage file; what needs a
// restart is said, what the gateway does not know refuses the file; the version is a hash of the
// values in force.
import { expect } from 'chai';
import { policyChanges, policyVersion, readPolicy, type Policy, type PolicyRead, type PolicySources } from '../../config/policy.js';
import { KNOWN_VARIABLES } from '../../config/settings.js';

const sources = (o: Partial<PolicySources> = {}): PolicySources => ({
  file: '/etc/chat-gateway/policy.yaml',
  checkMs: 1_000,
  environment: {},
  defaults: { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false', CHATUI_ENABLE_ADMIN_EXPORT: 'false' },
  ...o,
});
const read = (text: string | undefined, o: Partial<PolicySources> = {}): PolicyRead => readPolicy(sources(o), text, KNOWN_VARIABLES);
const policyOf = (r: PolicyRead): Policy => {
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.policy;
};
const problemsOf = (r: PolicyRead): string[] => (r.ok ? [] : r.problems);

describe('config/policy.ts: the live settings read from POLICY_FILE and the environment', () => {
  it('YAML and JSON give the same policy, and the same version', () => {
    const yaml = policyOf(read('CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: true\nIDP_TENANT_IDP_ALIASES: acme=acme-entra\nLOG_LEVEL: warn\n'));
    const json = policyOf(read('{"CHATUI_BYPASS_ADMIN_ACCESS_CONTROL": "true", "IDP_TENANT_IDP_ALIASES": "acme=acme-entra", "LOG_LEVEL": "warn"}'));
    expect(yaml).to.deep.equal(json);
    expect(yaml).to.include({ bypassAdminAccessControl: true, enableAdminExport: false, logLevel: 'warn' });
    expect([...yaml.tenantAliases]).to.deep.equal([['acme', 'acme-entra']]);
    expect(policyVersion(yaml))
      .to.equal(policyVersion(json))
      .and.match(/^[0-9a-f]{12}$/);
  });

  it('a value is judged as the environment judges it: TRUE and 1 are not exactly true, and the message names the field and the file', () => {
    for (const value of ['TRUE', '1', 'yes', "''"]) {
      const found = problemsOf(read(`CHATUI_ENABLE_ADMIN_EXPORT: ${value}\n`));
      expect(found, value).to.have.length(1);
      expect(found[0]).to.match(/^CHATUI_ENABLE_ADMIN_EXPORT \(POLICY_FILE \/etc\/chat-gateway\/policy\.yaml\): must be exactly 'true' or 'false'/);
    }
    expect(problemsOf(read('IDP_TENANT_IDP_ALIASES: acme=,globex\n')).join('\n')).to.match(/^IDP_TENANT_IDP_ALIASES \(POLICY_FILE .*\): malformed pair/);
    expect(problemsOf(read('UPSTREAM_RELEASE_POLICY: strictly\n'))).to.deep.equal([
      'UPSTREAM_RELEASE_POLICY (POLICY_FILE /etc/chat-gateway/policy.yaml): must be one of warn, refuse-admins, strict (got "strictly")',
    ]);
  });

  it('the environment wins over the file, and the file\u2019s value for that key is named as ignored', () => {
    const r = read('CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: true\nCHATUI_ENABLE_ADMIN_EXPORT: true\n', { environment: { CHATUI_ENABLE_ADMIN_EXPORT: 'false' } });
    expect(policyOf(r)).to.include({ bypassAdminAccessControl: true, enableAdminExport: false });
    expect(r.ok && r.warnings).to.deep.equal([
      "CHATUI_ENABLE_ADMIN_EXPORT (POLICY_FILE /etc/chat-gateway/policy.yaml): set in the environment too, which wins; the file's value is ignored (unset CHATUI_ENABLE_ADMIN_EXPORT in the environment to manage it from the file)",
    ]);
  });

  it('the file wins over the stage file; a key the file leaves out keeps the stage file\u2019s value', () => {
    const p = policyOf(
      read('CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "true"\n', { defaults: { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'false', CHATUI_ENABLE_ADMIN_EXPORT: 'true' } }),
    );
    expect(p).to.include({ bypassAdminAccessControl: true, enableAdminExport: true });
  });

  it('a setting read at start only is reported as needing a restart, its value never echoed; the rest applies', () => {
    const r = read('SESSION_SECRET: do-not-print-me-0123456789abcdef0123\nPORT: 9999\nSHOW_IDP_LOGIN: yes\n');
    expect(policyOf(r).showIdpLogin).to.equal(true);
    const warnings = r.ok ? r.warnings : [];
    expect(warnings).to.have.length(2);
    expect(warnings.join('\n'))
      .to.match(/^PORT \(POLICY_FILE .*\): read at start only/m)
      .and.match(/^SESSION_SECRET \(POLICY_FILE .*\): read at start only/m);
    expect(warnings.join('\n')).to.not.include('do-not-print-me');
  });

  it('a name the gateway does not know refuses the whole file (a misspelt switch must not do nothing)', () => {
    const found = problemsOf(read('CHATUI_BYPASS_ADMIN_ACCES_CONTROL: true\nSHOW_IDP_LOGIN: true\n'));
    expect(found).to.have.length(1);
    expect(found[0]).to.match(
      /^CHATUI_BYPASS_ADMIN_ACCES_CONTROL \(POLICY_FILE .*\): not a setting of the gateway; the file holds the live settings CHATUI_BYPASS_ADMIN_ACCESS_CONTROL, /,
    );
  });

  it('a file that is not one mapping of single values is refused, naming why; an empty file too, `{}` is none', () => {
    expect(problemsOf(read('CHATUI_ENABLE_ADMIN_EXPORT: [true]\n'))).to.deep.equal([
      'CHATUI_ENABLE_ADMIN_EXPORT (POLICY_FILE /etc/chat-gateway/policy.yaml): must be one value, not a list',
    ]);
    expect(problemsOf(read('CHATUI_ENABLE_ADMIN_EXPORT: true\nCHATUI_ENABLE_ADMIN_EXPORT: false\n'))[0]).to.match(
      /not YAML or JSON: Map keys must be unique at line 2/,
    );
    expect(problemsOf(read('CHATUI_ENABLE_ADMIN_EXPORT: true\nSHOW_IDP_LOGIN'))[0]).to.match(/not YAML or JSON: .*line 2, column 1/);
    expect(problemsOf(read('- CHATUI_ENABLE_ADMIN_EXPORT\n'))).to.deep.equal([
      'POLICY_FILE /etc/chat-gateway/policy.yaml: must be a mapping of setting names to values',
    ]);
    for (const empty of ['', '\n', '# nothing yet\n']) expect(problemsOf(read(empty))[0], JSON.stringify(empty)).to.match(/holds no setting/);
    expect(policyOf(read('{}'))).to.include({ bypassAdminAccessControl: false });
  });

  it('without a file the environment alone decides, as before', () => {
    expect(policyOf(read(undefined, { file: undefined, environment: { CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: 'true' } }))).to.include({
      bypassAdminAccessControl: true,
    });
    expect(problemsOf(read(undefined, { file: undefined, defaults: {} }))).to.deep.equal([
      "CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: must be exactly 'true' or 'false' (got nothing)",
      "CHATUI_ENABLE_ADMIN_EXPORT: must be exactly 'true' or 'false' (got nothing)",
    ]);
  });

  it('the version changes with any value and only with a value; the changes list old and new', () => {
    const a = policyOf(read('CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "true"\n'));
    const b = policyOf(read('# a comment, the same values\nCHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "true"\nCHATUI_ENABLE_ADMIN_EXPORT: "false"\n'));
    const c = policyOf(read('CHATUI_BYPASS_ADMIN_ACCESS_CONTROL: "false"\n'));
    expect(policyVersion(a)).to.equal(policyVersion(b));
    expect(policyVersion(a)).to.not.equal(policyVersion(c));
    expect(policyChanges(a, c)).to.deep.equal([{ setting: 'CHATUI_BYPASS_ADMIN_ACCESS_CONTROL', from: 'true', to: 'false' }]);
    expect(policyChanges(a, b)).to.deep.equal([]);
  });
});
