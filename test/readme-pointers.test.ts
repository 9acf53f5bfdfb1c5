// Messages that send an operator to a README section name one that exists (issue 28 item 5:
// bin/start.mjs pointed to "Run it", which does not).
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.(ts|mjs)$/.test(name) ? [path] : [];
  });
}

const headings = (readme: string) => new Set([...readFileSync(readme, 'utf8').matchAll(/^#{2,4} (.+)$/gm)].map((m) => m[1]!.trim()));

describe('pointers to README sections (issue 28, item 5)', () => {
  it('every `README.md, "Section"` in bin/, gateway/, sandbox/, config/ and policies/ names an existing heading', () => {
    const found: string[] = [];
    for (const file of ['bin', 'gateway', 'sandbox', 'config', 'policies'].flatMap(files)) {
      for (const m of readFileSync(file, 'utf8').matchAll(/((?:bench\/)?README\.md), "([^"]+)"/g)) {
        const sections = headings(m[1]!);
        const ok = [...sections].some((h) => h === m[2] || h.startsWith(`${m[2]} `) || h.includes(m[2]!));
        expect(ok, `${file}: ${m[1]}, "${m[2]}" is no section of ${m[1]}`).to.equal(true);
        found.push(`${file}: ${m[2]}`);
      }
    }
    expect(
      found.some((f) => f.startsWith('bin/start.mjs')),
      'bin/start.mjs points somewhere',
    ).to.equal(true);
  });

  it('`npm start` under NODE_ENV=production without a build says where to read on', function () {
    this.timeout(20_000);
    if (existsSync('dist/gateway/main.js')) return this.skip(); // built: npm start would run it
    const r = spawnSync(process.execPath, ['bin/start.mjs'], { env: { PATH: process.env.PATH, NODE_ENV: 'production' }, encoding: 'utf8' });
    expect(r.status).to.equal(2);
    expect(r.stderr).to.include('dist/gateway/main.js is missing');
    expect(r.stderr).to.match(/See README\.md, "Development"/);
    expect(headings('README.md').has('Development')).to.equal(true);
  });
});
