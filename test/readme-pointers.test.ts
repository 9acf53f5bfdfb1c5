// Messages and comments that send a reader to a section of a document name one that exists
// (bin/start.mjs once pointed to a README section "Run it", which did not), and every relative link
// of the project's documents reaches a file, and a heading of it where it names one.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { spawnSync } from 'node:child_process';

function files(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path, pattern) : pattern.test(name) ? [path] : [];
  });
}

/** The text of a document's headings (levels 2 to 4), as a pointer names them. */
const headings = (doc: string) => new Set([...readFileSync(doc, 'utf8').matchAll(/^#{2,4} (.+)$/gm)].map((m) => m[1]!.trim()));

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(doc: string): Set<string> {
  const text = readFileSync(doc, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.matchAll(/^#{1,6} (.+)$/gm)) {
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

/** The project's documents: the front door, the policies, the changelog, bench/ and docs/. */
const documents = ['README.md', 'SECURITY.md', 'CHANGELOG.md', 'bench/README.md', ...files('docs', /\.md$/)];

describe('pointers to document sections, and links between documents', () => {
  it('every `<document>.md, "Section"` in bin/, gateway/, sandbox/, config/ and policies/ names an existing heading', () => {
    const found: string[] = [];
    for (const file of ['bin', 'gateway', 'sandbox', 'config', 'policies'].flatMap((d) => files(d, /\.(ts|mjs)$/))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/((?:[\w.-]+\/)*[\w.-]+\.md), "([^"]+)"/g)) {
        expect(existsSync(m[1]!), `${file}: ${m[1]} does not exist`).to.equal(true);
        const sections = headings(m[1]!);
        const ok = [...sections].some((h) => h === m[2] || h.startsWith(`${m[2]} `) || h.includes(m[2]!));
        expect(ok, `${file}: ${m[1]}, "${m[2]}" is no section of ${m[1]}`).to.equal(true);
        found.push(`${file}: ${m[1]}, ${m[2]}`);
      }
    }
    expect(
      found.some((f) => f.startsWith('bin/start.mjs')),
      'bin/start.mjs points somewhere',
    ).to.equal(true);
    expect(
      found.some((f) => f.startsWith('gateway/main.ts')),
      'gateway/main.ts points somewhere',
    ).to.equal(true);
  });

  it('`npm start` under NODE_ENV=production without a build says where to read on', function () {
    this.timeout(20_000);
    if (existsSync('dist/gateway/main.js')) return this.skip(); // built: npm start would run it
    const r = spawnSync(process.execPath, ['bin/start.mjs'], { env: { PATH: process.env.PATH, NODE_ENV: 'production' }, encoding: 'utf8' });
    expect(r.status).to.equal(2);
    expect(r.stderr).to.include('dist/gateway/main.js is missing');
    expect(r.stderr).to.match(/See docs\/development\.md, "Dependencies and the build"/);
    expect(headings('docs/development.md').has('Dependencies and the build')).to.equal(true);
  });

  it('every relative link of README.md, SECURITY.md, CHANGELOG.md, bench/README.md and docs/ reaches a file, and its #anchor a heading there', () => {
    expect(documents).to.include.members(['docs/policies.md', 'docs/security.md', 'docs/operating/settings.md']);
    const broken: string[] = [];
    let checked = 0;
    for (const doc of documents) {
      const text = readFileSync(doc, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const href = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // https:, mailto: ...: not a file of this project
        const [path, anchor] = href.split('#') as [string, string | undefined];
        const target = path ? normalize(join(dirname(doc), path)) : doc;
        checked++;
        if (!existsSync(target)) {
          broken.push(`${doc}: ${href} (no ${target})`);
          continue;
        }
        if (anchor !== undefined && !(statSync(target).isFile() && anchors(target).has(anchor)))
          broken.push(`${doc}: ${href} (no heading #${anchor} in ${target})`);
      }
    }
    expect(broken).to.deep.equal([]);
    expect(checked, 'links checked').to.be.greaterThan(50);
  });
});
