// GATEWAY_WORKERS > 1: the primary only supervises (gateway/lifecycle.ts). A worker that dies is
// replaced, also when every worker dies at the same moment (an OOM kill of the group, a crash on
// the same request): the primary must not be left with nothing keeping it alive and exit.
import { expect } from 'chai';
import { startOpenWebUI, type OpenWebUIStandIn } from '../../sandbox/open-webui/stand-in.js';
import { baseEnv, gatewayProcess } from '../support/gateway-harness.js';
import { freePort } from '../support/raw-http.js';
import { sleep } from '../support/wait.js';

describe('operations: GATEWAY_WORKERS, every worker dying at once', function () {
  this.timeout(60_000);
  let upstream: OpenWebUIStandIn;
  before(async () => {
    upstream = await startOpenWebUI();
  });
  after(() => upstream?.close());

  it('the primary starts new workers, keeps running, and the port answers again', async () => {
    // a port of its own: with PORT=0 each new worker would listen on a new one
    const port = await freePort();
    const gw = await gatewayProcess({ ...baseEnv(upstream.url), HOST: '127.0.0.1', PORT: String(port), GATEWAY_WORKERS: '2', DRIFT_CHECK_SECONDS: '0' });
    const listening = () =>
      gw
        .output()
        .split('\n')
        .filter((l) => l.includes('"gateway listening"'))
        .map((l) => (JSON.parse(l) as { pid: number }).pid);
    try {
      for (let i = 0; i < 200 && listening().length < 2; i++) await sleep(50);
      const first = listening();
      expect(first, 'two workers listening').to.have.length(2);
      for (const pid of first) process.kill(pid, 'SIGKILL');
      for (let i = 0; i < 400 && listening().length < 4; i++) await sleep(50);
      expect(gw.exited(), 'the primary is still running').to.equal(null);
      expect(gw.output().split('gateway worker died').length - 1, 'both deaths seen').to.equal(2);
      const replaced = listening().slice(2);
      expect(replaced, 'two new workers listening').to.have.length(2);
      expect(replaced.filter((pid) => first.includes(pid))).to.deep.equal([]);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).to.equal(200);
    } finally {
      gw.child.kill('SIGKILL');
      for (const pid of listening())
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
    }
  });
});
