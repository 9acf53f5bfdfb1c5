// Every pointer to a document names one that exists, and a heading of it where it names one: in
// code comments and messages (bin/start.mjs once pointed to a README section "Run it", which did
// not exist; seven comments kept pointing at README sections after they moved to docs/), and in
// the documents themselves. A pointer is any of:
//   - `<document>.md, "Section"` (the comma optional), or `README "Section"` for README.md;
//   - `<document>.md#anchor`, in a Markdown link or in running text;
//   - a Markdown link to a file of the project, or a path to a document (`docs/x.md`) in running text.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { spawnSync } from 'node:child_process';

const SKIPPED_DIRS = new Set(['node_modules', '.git', 'dist', '.tmp', 'fixtures']);

function files(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return SKIPPED_DIRS.has(name) ? [] : files(path, pattern);
    return pattern.test(name) ? [path] : [];
  });
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of withoutCodeBlocks(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** The text of a document's headings (levels 1 to 6), as a `"Section"` pointer names them. */
const headingsOf = (text: string) => [...withoutCodeBlocks(text).matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.trim());

const withoutCodeBlocks = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** A comment's lines read as one text, so that a pointer broken over two lines is still one. */
const joinedComments = (code: string) => code.replace(/\n[ \t]*(?:\/\/|\*(?!\/)|#)[ \t]*/g, ' ');

/** Does `section` name `heading`: the whole heading, or its start up to a word's end. */
const namesHeading = (heading: string, section: string) =>
  heading === section || (heading.startsWith(section) && !/[\p{L}\p{N}]/u.test(heading[section.length]!));

interface Pointer {
  /** the file that holds it */
  from: string;
  /** as written */
  text: string;
  /** the document it names, as candidates (relative to the project, then to its own folder) */
  targets: string[];
  anchor?: string;
  section?: string;
}

/** Every pointer of one file's text. `markdown`: a document, whose links are relative to its own folder. */
function pointersIn(from: string, raw: string, markdown: boolean): Pointer[] {
  const text = markdown ? withoutCodeBlocks(raw) : joinedComments(raw);
  const own = dirname(from);
  const candidates = (path: string) => [...new Set([normalize(path), normalize(join(own, path))])];
  const out: Pointer[] = [];
  for (const m of text.matchAll(/(?<![\w./-])((?:\.{1,2}\/)?(?:[\w.-]+\/)*[\w.-]+\.md|README)(?:,|\s)\s*"([^"\n]+)"/g)) {
    const path = m[1] === 'README' ? 'README.md' : m[1]!;
    out.push({ from, text: m[0], targets: candidates(path), section: m[2]! });
  }
  if (markdown) {
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const href = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // https:, mailto: ...: not a file of this project
      const [path, anchor] = href.split('#') as [string, string | undefined];
      // a link is relative to its document's folder, as GitHub reads it
      out.push({ from, text: href, targets: [path ? normalize(join(own, path)) : from], ...(anchor !== undefined ? { anchor } : {}) });
    }
  }
  // a path to a document in running text (a Markdown link's own target is read above)
  for (const m of text.matchAll(/(?<![\w./(-])((?:\.{1,2}\/)?(?:[\w.-]+\/)+[\w.-]+\.md|README\.md|SECURITY\.md|CHANGELOG\.md)(?:#([\w-]+))?(?![\w-])/g)) {
    if (markdown && text[m.index - 1] === '(' && text[m.index - 2] === ']') continue;
    out.push({ from, text: m[0], targets: candidates(m[1]!), ...(m[2] ? { anchor: m[2] } : {}) });
  }
  return out;
}

/** What is wrong with a pointer, or undefined when it reaches what it names. */
function brokenBy(p: Pointer, read: (path: string) => string | undefined): string | undefined {
  const target = p.targets.find((t) => read(t) !== undefined);
  if (target === undefined) return `${p.from}: ${p.text} (no ${p.targets.join(' nor ')})`;
  if (p.anchor !== undefined && !anchorsOf(read(target)!).has(p.anchor)) return `${p.from}: ${p.text} (no heading #${p.anchor} in ${target})`;
  if (p.section !== undefined && !headingsOf(read(target)!).some((h) => namesHeading(h, p.section!)))
    return `${p.from}: ${p.text} (no heading "${p.section}" in ${target})`;
  return undefined;
}

const readDocument = (path: string): string | undefined => {
  if (!existsSync(path)) return undefined;
  return statSync(path).isFile() ? readFileSync(path, 'utf8') : '';
};

/** The project's documents, and its code, configuration and scripts (their comments and messages). */
const DOCUMENTS = files('.', /\.md$/);
const CODE = [
  ...['bin', 'gateway', 'policies', 'config', 'sandbox', 'bench', 'scripts', 'test', 'deploy', '.ci'].flatMap((d) =>
    files(d, /\.(ts|mjs|js|sh|py|ya?ml|env)$|^run$/),
  ),
  ...files('.', /^(Dockerfile|docker-compose[\w.-]*\.yml)$/).filter((f) => !f.includes('/')),
].filter((f) => f !== 'test/readme-pointers.test.ts'); // this file's examples point nowhere on purpose

describe('pointers to documents and their sections, from code and from the documents', () => {
  it('the scan finds each kind of pointer, and a pointer to a heading or a file that is not there', () => {
    const docs: Record<string, string> = { 'docs/a.md': '# A\n\n## The part\n\n### Its detail, in short\n', 'README.md': '# R\n\n## Run it\n' };
    const read = (path: string) => docs[path];
    const broken = (from: string, text: string, markdown = false) =>
      pointersIn(from, text, markdown)
        .map((p) => brokenBy(p, read))
        .filter(Boolean);
    // reached
    expect(broken('gateway/x.ts', '// see docs/a.md, "The part"; docs/a.md "Its detail"; README "Run it"; docs/a.md#its-detail-in-short')).to.deep.equal([]);
    expect(broken('docs/b.md', 'As [there](a.md#the-part) and [the README](../README.md#run-it) say; docs/a.md#the-part.', true)).to.deep.equal([]);
    // a section that moved, also when the comment breaks the pointer over two lines
    expect(broken('gateway/x.ts', '// the cookie (README\n// "The session cookie") and more')).to.deep.equal([
      'gateway/x.ts: README "The session cookie" (no heading "The session cookie" in README.md)',
    ]);
    expect(broken('gateway/x.ts', ' * docs/a.md, "Gone"')).to.have.length(1);
    // an anchor that is no heading, in a link, in a comment, in running text
    expect(broken('docs/b.md', '[x](a.md#gone)', true)).to.deep.equal(['docs/b.md: a.md#gone (no heading #gone in docs/a.md)']);
    expect(broken('gateway/x.ts', '// docs/a.md#gone')).to.have.length(1);
    expect(broken('docs/b.md', 'see docs/a.md#gone', true)).to.have.length(1);
    // a file that is not there
    expect(broken('gateway/x.ts', '// docs/missing.md says why')).to.have.length(1);
    expect(broken('docs/b.md', '[x](missing.md)', true)).to.have.length(1);
    // not pointers: a file name as data, a heading inside a code block, a link to elsewhere
    expect(broken('sandbox/seed.ts', "{ filename: 'notes.md' }")).to.deep.equal([]);
    expect(broken('docs/b.md', '[site](https://example.com/x.md#y)\n```\nREADME "Nowhere"\n```\n', true)).to.deep.equal([]);
  });

  it('every pointer of the code (bin, gateway, policies, config, sandbox, bench, scripts, test, deploy, CI) reaches its document and heading', () => {
    const pointers = CODE.flatMap((f) => pointersIn(f, readFileSync(f, 'utf8'), false));
    expect(pointers.filter((p) => p.section !== undefined).length, 'section pointers found').to.be.greaterThan(10);
    expect(
      pointers.some((p) => p.from === 'bin/start.mjs' && p.section),
      'bin/start.mjs points somewhere',
    ).to.equal(true);
    expect(pointers.map((p) => brokenBy(p, readDocument)).filter(Boolean)).to.deep.equal([]);
  });

  it('every pointer and relative link of the documents reaches a file, and its #anchor or "Section" a heading there', () => {
    expect(DOCUMENTS).to.include.members(['README.md', 'docs/policies.md', 'docs/security.md', 'docs/operating/settings.md', 'bench/README.md']);
    const pointers = DOCUMENTS.flatMap((d) => pointersIn(d, readFileSync(d, 'utf8'), true));
    expect(pointers.filter((p) => p.anchor !== undefined).length, 'anchors checked').to.be.greaterThan(50);
    expect(pointers.map((p) => brokenBy(p, readDocument)).filter(Boolean)).to.deep.equal([]);
  });

  it('`npm start` under NODE_ENV=production without a build says where to read on', function () {
    this.timeout(20_000);
    if (existsSync('dist/gateway/main.js')) return this.skip(); // built: npm start would run it
    const r = spawnSync(process.execPath, ['bin/start.mjs'], { env: { PATH: process.env.PATH, NODE_ENV: 'production' }, encoding: 'utf8' });
    expect(r.status).to.equal(2);
    expect(r.stderr).to.include('dist/gateway/main.js is missing');
    expect(r.stderr).to.match(/See docs\/development\.md, "Dependencies and the build"/);
    expect(headingsOf(readFileSync('docs/development.md', 'utf8'))).to.include('Dependencies and the build');
  });
});
