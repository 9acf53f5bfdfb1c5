// A real peer that fails to start ends the run at once, failed, naming why, with nothing left open
// behind it (the canned-answers server, the realm, the browser): mocha must not wait on handles.
// A suite of this folder is run in a mocha process of its own, its Open WebUI given no time to
// boot (OPEN_WEBUI_BOOT_TIMEOUT_MS=1), and one with a release that is not installed. Neither gets
// as far as anything of the release under test, so both run against the table's release only.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { itOnTableRelease } from '../support/open-webui.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function mochaRun(file: string, env: Record<string, string>): Promise<{ code: number | null; out: string; seconds: number }> {
  const started = Date.now();
  return new Promise((done) => {
    const child = spawn(process.execPath, ['node_modules/mocha/bin/mocha.js', '--timeout', '120000', file], {
      cwd: ROOT,
      env: { ...process.env, ...env },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => done({ code, out, seconds: (Date.now() - started) / 1000 }));
  });
}

describe('a real peer that fails to start', function () {
  this.timeout(120_000);

  itOnTableRelease('Open WebUI that does not come up: the suite fails at once, naming it, and mocha ends without waiting on anything left open', async () => {
    const r = await mochaRun('test/real-open-webui/browser.test.ts', { OPEN_WEBUI_BOOT_TIMEOUT_MS: '1' });
    expect(r.code, r.out).to.not.equal(0);
    expect(r.out).to.include('Open WebUI did not answer /health within 1 ms');
    expect(r.out, 'nothing left open').to.not.include('still open');
    expect(r.seconds, 'ended well before the exit watch\u2019s minute').to.be.below(45);
  });

  itOnTableRelease('a release that is not installed: the suite fails at once with what to run', async () => {
    const r = await mochaRun('test/real-open-webui/admin-socket-frames.test.ts', { OWUI_VERSION: '0.0.1' });
    expect(r.code, r.out).to.not.equal(0);
    expect(r.out).to.include('Open WebUI 0.0.1 is not installed: run `npm test`');
    expect(r.out).to.not.include('still open');
    expect(r.seconds).to.be.below(45);
  });
});
