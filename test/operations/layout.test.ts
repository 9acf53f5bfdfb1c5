// The layout keeps its promises (README "The code", docs/development.md "The layout rules"): every
// production module is on the README's map, and the things the gateway does in one place stay in
// that one place. A test fails when a change adds a second copy or an unmapped file.
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const sources = (dir: string) =>
  readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
const text = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const production = [...sources('gateway'), ...sources('policies'), ...sources('config')];
const code = (file: string) => text(file).replace(/^\s*(\/\/|\*|\/\*\*).*$/gm, '');
/** Files other than `home` whose code matches `pattern`, comments left out; `home` must match it. */
const offenders = (pattern: RegExp, home: string[]) => {
  for (const f of home) expect(pattern.test(code(f)), `${f} holds it`).to.equal(true);
  return production.filter((f) => !home.includes(f) && pattern.test(code(f)));
};

/** A document's section "## <heading>", up to the next section. */
const section = (file: string, heading: string) => {
  const doc = text(file);
  const start = doc.indexOf(`\n## ${heading}\n`);
  expect(start, `${file} has a section "## ${heading}"`).to.be.greaterThan(-1);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end === -1 ? undefined : end);
};

describe('layout: one obvious place for each thing', () => {
  it('every production folder is on the README\u2019s map of the code, one line each', () => {
    const map = section('README.md', 'The code');
    const folders = [...new Set(production.map((f) => f.split('/').slice(0, -1).join('/') + '/'))];
    expect(folders.filter((d) => !new RegExp(`^${d.replace(/[.]/g, '\\.')} `, 'm').test(map))).to.deep.equal([]);
  });

  it('every production module is on docs/development.md\u2019s map of the code, file by file', () => {
    const map = section('docs/development.md', 'The code, file by file');
    const missing = production.filter((f) => {
      const [top, ...rest] = f.split('/');
      const name = rest.at(-1)!;
      // listed by its path (gateway/main.ts) or by its name on its folder's line (gateway/http/ ... server.ts)
      return (
        !map.includes(f) &&
        !new RegExp(
          `${top}/${rest
            .slice(0, -1)
            .map((p) => `${p}/`)
            .join('')}[^\\n]*(\\n {21}[^\\n]*)*\\b${name.replace('.', '\\.')}`,
        ).test(map)
      );
    });
    expect(missing).to.deep.equal([]);
  });

  it('values sealed for the browser (JWE, keys derived from SESSION_SECRET) are made and opened in gateway/auth/sealed.ts only', () => {
    expect(offenders(/CompactEncrypt|compactDecrypt|hkdfSync/, ['gateway/auth/sealed.ts'])).to.deep.equal([]);
  });

  it('raw HTTP answers are written in gateway/http/respond.ts only', () => {
    expect(offenders(/HTTP\/1\.1 |STATUS_CODES/, ['gateway/http/respond.ts'])).to.deep.equal([]);
  });

  it('caches are built on gateway/cache/cache.ts only (one store, one set of eviction rules)', () => {
    expect(offenders(/from 'lru-cache'|from 'node-cache'/, ['gateway/cache/cache.ts'])).to.deep.equal([]);
  });

  it('cookies are read and written with the `cookie` package; the one byte-keeping filter of a Cookie header is in http/request-headers.ts', () => {
    expect(offenders(/\.split\(['"];\s?['"]\)/, ['gateway/http/request-headers.ts'])).to.deep.equal([]);
    expect(offenders(/(?:;|')\s*HttpOnly/, [])).to.deep.equal([]);
  });

  it('the client\u2019s headers are never edited in place: what goes upstream is assembled once, by upstreamHeaders', () => {
    expect(offenders(/delete (req|request)\.headers|(req|request)\.headers(\.[a-z]+|\[[^\]]+\]) =(?!=)/, [])).to.deep.equal([]);
    expect(offenders(/export function upstreamHeaders\(/, ['gateway/http/request-headers.ts'])).to.deep.equal([]);
  });

  it('the tenant, alias and locale grammar is written once, in policies/syntax.ts', () => {
    expect(offenders(/\[A-Za-z0-9\]\[A-Za-z0-9\._-\]\*|\[a-z\]\{2,3\}/, ['policies/syntax.ts'])).to.deep.equal([]);
  });

  it('the realm-role rule for chat admins is written once, in policies/admin-scoping.ts', () => {
    expect(
      offenders(/\.some\(\(\w+\) => \w*[aA]dminRoles\.includes|adminRoles\.(some|includes|has)\(|\.roles\.(some|includes)\(/, ['policies/admin-scoping.ts']),
    ).to.deep.equal([]);
  });

  it('HTML pages are escape-by-default templates (gateway/pages/templates.ts, eta): no escaping placed by hand', () => {
    expect(offenders(/(?<!function )escapeHtml\(/, [])).to.deep.equal([]);
    expect(offenders(/new Eta\(/, ['gateway/pages/templates.ts'])).to.deep.equal([]);
  });

  it('production code never imports the sandbox or test code (the sandbox only by its non-literal entry in serve.ts)', () => {
    expect(offenders(/from '(\.\.\/)+(test|sandbox)\/|import\('(\.\.\/)+(test|sandbox)\//, [])).to.deep.equal([]);
    expect(code('gateway/serve.ts')).to.include("const sandboxModule = '../sandbox/main.js';");
  });
});

describe('layout: what depends on what', () => {
  /** The relative modules a file loads at run time (static and dynamic imports and re-exports; `import type` loads nothing), from the repository root. */
  const importsOf = (file: string): string[] =>
    [...code(file).matchAll(/^\s*(import|export)\s+(type\s+)?[^;]*?\bfrom\s+'(\.{1,2}\/[^']+)'|\bimport\s*\(\s*'(\.{1,2}\/[^']+)'/gms)]
      .filter((m) => !m[2])
      .map((m) => join(dirname(file), (m[3] ?? m[4])!).replace(/\.js$/, '.ts'));

  it('the sandbox and the benchmarks never load test code (test code may load them, not the other way round)', () => {
    const loadsTest = [...sources('sandbox'), ...sources('bench')].filter((f) => importsOf(f).some((m) => m.startsWith('test/')));
    expect(loadsTest).to.deep.equal([]);
  });

  it('policies/ is pure: it imports only other policies, never gateway/, config/ or a package with I/O', () => {
    for (const f of sources('policies')) {
      const all = [...code(f).matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)'([^']+)'/gm)].map((m) => m[1]!);
      expect(
        all.filter((s) => !s.startsWith('./')),
        f,
      ).to.deep.equal([]);
    }
  });

  it('the decisions are values from policies/: the Origin, tenant and route rules are not written in gateway/', () => {
    // What the rules read, compared by hand, is a sign of a rule outside policies/.
    expect(offenders(/allowedOrigins\.includes\(/, ['policies/origins.ts'])).to.deep.equal([]);
    expect(offenders(/tenants\.includes\(/, ['policies/tenancy.ts'])).to.deep.equal([]);
    expect(offenders(/['"]cross-site['"]/, ['policies/origins.ts'])).to.deep.equal([]);
  });

  /** Every relative module a file names, types included (`import type` ties two modules as much as a value does). */
  const namedBy = (file: string): string[] =>
    [...code(file).matchAll(/^\s*(?:import|export)\s[^;]*?\bfrom\s+'(\.{1,2}\/[^']+)'|\bimport\s*\(\s*'(\.{1,2}\/[^']+)'/gms)]
      .map((m) => join(dirname(file), (m[1] ?? m[2])!).replace(/\.js$/, '.ts'))
      .filter((d) => production.includes(d));

  it('no import circle anywhere in gateway/, policies/ and config/, types included', () => {
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const walk = (f: string, stack: string[]): void => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') return void cycles.push([...stack.slice(stack.indexOf(f)), f].join(' -> '));
      state.set(f, 'open');
      for (const d of namedBy(f)) walk(d, [...stack, f]);
      state.set(f, 'done');
    };
    for (const f of production) walk(f, []);
    expect(cycles).to.deep.equal([]);
  });

  /**
   * The folders from the bottom up: a module names modules of its own folder or of a folder in an
   * EARLIER layer, never one beside or above it. Folders of one layer know nothing of each other.
   * The gateway's root files (main.ts, serve.ts, hangups.ts, app.ts, lifecycle.ts, check-config.ts) put the rest together.
   */
  const LAYERS: readonly (readonly string[])[] = [
    ['policies'],
    ['config'],
    ['gateway/observability', 'gateway/cache', 'gateway/pages'],
    ['gateway/http'],
    ['gateway/upstream', 'gateway/state'],
    ['gateway/auth'],
    ['gateway/login', 'gateway/enforcement'],
    ['gateway/pipeline'],
    ['gateway/operations'],
    ['gateway'],
  ];
  const layerOf = (file: string): number => LAYERS.findIndex((folders) => folders.includes(dirname(file)));

  it('every production folder has its place in the layers', () => {
    expect(production.filter((f) => layerOf(f) < 0)).to.deep.equal([]);
  });

  it('imports point one way: down the layers, never beside or up', () => {
    const wrong = production.flatMap((f) =>
      namedBy(f)
        .filter((d) => dirname(d) !== dirname(f) && layerOf(d) >= layerOf(f))
        .map((d) => `${f} -> ${d}`),
    );
    expect(wrong).to.deep.equal([]);
  });

  it('no production file over 450 lines but the route table, whose rows are data', () => {
    const long = production.filter((f) => f !== 'policies/open-webui-routes.ts' && text(f).split('\n').length > 450);
    expect(long).to.deep.equal([]);
  });

  it('every test in test/unit/ is named after the module it covers: <module>.test.ts, or <module>.<aspect>.test.ts', () => {
    const modules = new Set(
      ['config', 'policies', 'gateway', 'sandbox', 'bench', 'scripts'].flatMap(sources).map((f) => f.split('/').at(-1)!.replace(/\.ts$/, '')),
    );
    const unnamed = readdirSync(join(ROOT, 'test/unit')).filter((f) => f.endsWith('.test.ts') && !modules.has(f.split('.')[0]!));
    expect(unnamed).to.deep.equal([]);
  });

  it('operations depends on probes, not on the gateway that wires it', () => {
    expect(importsOf('gateway/operations/operations.ts')).to.not.include('gateway/app.ts');
  });
});
