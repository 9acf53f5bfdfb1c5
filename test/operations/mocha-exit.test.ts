// The test run ends by itself, failed and naming what is open, when a test leaves something open
// (test/support/exit-watch.ts): CI once waited out its whole time limit on a run that had failed.
import { execFile } from 'node:child_process';
import { expect } from 'chai';

describe('the test run: a leak ends it, failed, instead of hanging', function () {
  this.timeout(30_000);

  it('a passing test that leaves a server open: exit 1 after the grace, the server named', async () => {
    const { code, stderr, stdout } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(
        'npx',
        ['mocha', 'test/support/fixtures/leaks-a-server.ts'],
        { env: { ...process.env, MOCHA_EXIT_GRACE_MS: '1000' }, timeout: 25_000 },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
      child.stdin?.end();
    });
    expect(stdout).to.contain('1 passing');
    expect(code).to.equal(1);
    expect(stderr).to.contain('still open: ').and.contain('TCPServerWrap');
  });
});
