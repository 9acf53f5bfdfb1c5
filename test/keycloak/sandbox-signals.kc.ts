// `npm run sandbox:keycloak` stopped by a signal to its npm process while Keycloak boots: the moment
// a newcomer gives up waiting. Nothing it started stays: not the Node process, not Keycloak (its own
// process group), not Keycloak's watchdog, and no port listens. Stopped before the realm is ready,
// so the suite pays for a JVM start, not for another boot (the stop of a sandbox that is up runs
// the same exec and signal handling: test/real-open-webui/sandbox.test.ts).
import { expect } from 'chai';
import { accepts, alive, descendants, exited, listeningPorts, runSandbox } from '../support/process-tree.js';
import { freePort } from '../support/raw-http.js';
import { eventually } from '../support/wait.js';

describe('`npm run sandbox:keycloak`: SIGTERM to its npm process while Keycloak boots', function () {
  this.timeout(180_000);

  it('leaves no process and no listening port', async () => {
    const [port, idpPort] = [await freePort(), await freePort()];
    const run = runSandbox('sandbox:keycloak', { port, idpPort });
    const npm = run.npm;
    let started: number[] = [];
    try {
      // Keycloak listens (its HTTP or management port) before its realms are imported
      const listening = await eventually(
        () => {
          started = descendants(npm.pid!);
          return listeningPorts(started).length > 0;
        },
        { ms: 150_000, everyMs: 100 },
      );
      expect(listening, `Keycloak never listened:\n${run.output().slice(-3000)}`).to.equal(true);
      started = descendants(npm.pid!);
      const ports = listeningPorts(started);
      process.kill(npm.pid!, 'SIGTERM');
      const stopped = await eventually(() => exited(npm) && started.every((p) => !alive(p)), { ms: 15_000, everyMs: 100 });
      expect(stopped, `still running: ${started.filter(alive).join(', ')}\n${run.output().slice(-3000)}`).to.equal(true);
      for (const p of ports) expect(await accepts(p), `port ${p}`).to.equal(false);
    } finally {
      for (const pid of [npm.pid!, ...started])
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
    }
  });
});
