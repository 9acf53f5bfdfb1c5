// IDP_TENANT_IDP_ALIASES read into a map, every malformed pair named.
import { ID_SYNTAX } from '../policies/syntax.js';

/** What a tenant id and an alias may look like, in words (the grammar is policies/syntax.ts). */
const ID_WORDS = "letters, digits, '.', '_' and '-', starting with a letter or digit";

/**
 * IDP_TENANT_IDP_ALIASES: `<tenant_id>=<idp_alias>,...`. Empty turns tenant links off.
 * Spec, links-5: a malformed pair or a repeated tenant stops startup. Every problem is
 * named, each pair on its own (`acme=,globex` gives two). An empty entry (a trailing or doubled
 * comma) is refused too, with words saying so: a template whose pair came out empty
 * (`acme=x,${GLOBEX_PAIR}`) must not pass unnoticed.
 */
export function tenantAliasProblems(raw: string | undefined): { map: Map<string, string>; problems: string[] } {
  const map = new Map<string, string>();
  const problems: string[] = [];
  if (raw === undefined || raw.trim() === '') return { map, problems };
  const parts = raw.split(',');
  parts.forEach((part, i) => {
    const pair = part.trim();
    const where = parts.length > 1 ? ` (entry ${i + 1} of ${parts.length})` : '';
    if (!pair) {
      const why = i === parts.length - 1 ? 'a trailing comma' : i === 0 ? 'a leading comma' : 'two commas in a row';
      problems.push(`malformed pair${where}: the entry is empty (${why}); remove the extra comma`);
      return;
    }
    const eq = pair.indexOf('=');
    const bad = (why: string) => problems.push(`malformed pair ${JSON.stringify(pair)}${where}: ${why}; expected <tenant_id>=<idp_alias>`);
    if (eq < 0) return void bad('no "="');
    const tenant = pair.slice(0, eq).trim();
    const alias = pair.slice(eq + 1).trim();
    if (!tenant) return void bad('no tenant id before "="');
    if (!alias) return void bad(`no alias after "=" for tenant ${JSON.stringify(tenant)}`);
    if (!ID_SYNTAX.test(tenant)) return void bad(`tenant id ${JSON.stringify(tenant)} is not a valid tenant id (${ID_WORDS})`);
    if (!ID_SYNTAX.test(alias)) return void bad(`alias ${JSON.stringify(alias)} is not a valid provider alias (${ID_WORDS})`);
    if (map.has(tenant)) return void problems.push(`tenant ${JSON.stringify(tenant)} appears twice`);
    map.set(tenant, alias);
  });
  return { map, problems: [...new Set(problems)] };
}

export function parseTenantAliases(raw: string | undefined): { ok: true; map: Map<string, string> } | { ok: false; error: string } {
  const { map, problems } = tenantAliasProblems(raw);
  return problems.length ? { ok: false, error: problems.join('; ') } : { ok: true, map };
}
