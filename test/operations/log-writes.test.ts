// The gateway's log on stdout: request lines leave in writes of at least 4 KB or within 250 ms
// (a write per line was the largest cost above the floor of a proxied request), an audit line
// leaves at once with every line before it, and nothing is lost when the process exits.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { createObservability } from '../../gateway/observability/observability.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const linesOf = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

describe('log lines on stdout', () => {
  let dir: string;
  let file: string;
  let fd: number;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'log-writes-'));
    file = join(dir, 'stdout');
    fd = openSync(file, 'a');
  });
  // The descriptor stays open, as stdout does: the destination's periodic flush still writes to it.
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('are held until 4 KB are there, then leave together', async () => {
    const created = performance.now();
    const obs = createObservability({ level: 'info', fd });
    for (let i = 0; i < 5; i++) obs.log.info({ path: `/api/v1/chats/${i}`, status: 200 }, 'request');
    await sleep(60);
    // judged only before the first 250 ms flush (a loaded machine can take longer to get here)
    if (performance.now() - created < 240) expect(linesOf(file), 'five short lines, not yet written').to.have.length(0);
    for (let i = 5; i < 60; i++) obs.log.info({ path: `/api/v1/chats/${i}`, status: 200 }, 'request');
    await sleep(60);
    expect(linesOf(file).length, 'past 4 KB: written').to.be.greaterThan(20);
    await obs.close();
  });

  it('leave within 250 ms when fewer come', async () => {
    const obs = createObservability({ level: 'info', fd });
    obs.log.info({ path: '/api/v1/chats/', status: 200 }, 'request');
    await sleep(600);
    expect(linesOf(file).map((l) => JSON.parse(l).msg)).to.deep.equal(['request']);
    await obs.close();
  });

  it('leave at once, with the lines before them, when an audit event is written', async () => {
    const obs = createObservability({ level: 'info', fd });
    obs.log.info({ path: '/api/v1/files/', status: 200 }, 'request');
    obs.audit.warn({ event: 'policy-denied', rule: 'A6' }, 'export denied');
    await sleep(60);
    const lines = linesOf(file).map((l) => JSON.parse(l) as { msg: string; name?: string; event?: string });
    expect(lines.map((l) => l.msg)).to.deep.equal(['request', 'export denied']);
    expect(lines[1]).to.include({ name: 'audit', event: 'policy-denied' });
    await obs.close();
  });

  it('are all written when the process exits', () => {
    const script = [
      `import { createObservability } from ${JSON.stringify(new URL('../../gateway/observability/observability.ts', import.meta.url).href)};`,
      `const obs = createObservability({ level: 'info' });`,
      `for (let i = 0; i < 7; i++) obs.log.info({ i }, 'request');`,
      `process.exit(0);`,
    ].join('\n');
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(run.status, run.stderr).to.equal(0);
    expect(
      run.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).i),
    ).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
  });
});
