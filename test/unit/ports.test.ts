// Free ports are ports a client can reach: fetch and Chromium refuse the Fetch standard's "bad
// ports", and CI once lost a run to a test server that had been given 10080.
import { expect } from 'chai';
import { freePorts, reachablePort } from '../../sandbox/ports.js';

const refusedBy = async (port: number): Promise<string | undefined> => {
  try {
    await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) });
    return undefined;
  } catch (err) {
    return ((err as Error & { cause?: Error }).cause ?? (err as Error)).message;
  }
};

describe('ports', () => {
  it('the ports fetch refuses are not reachable; their neighbours are', async () => {
    for (const port of [6000, 6665, 6697, 10080]) {
      expect(reachablePort(port), `${port}`).to.equal(false);
      expect(await refusedBy(port), `${port}`).to.equal('bad port');
    }
    for (const port of [10079, 10081, 20000]) {
      expect(reachablePort(port), `${port}`).to.equal(true);
      expect(await refusedBy(port), `${port}`).to.not.equal('bad port');
    }
  });

  it('free ports are reachable ones, all different', async () => {
    const ports = await freePorts(50);
    expect(new Set(ports).size).to.equal(50);
    expect(ports.filter((p) => !reachablePort(p))).to.deep.equal([]);
  });

  it('a free port fetch refuses is passed over for the next one', async () => {
    const proposed = [10080, 6000, 20017, 20018];
    const ports = await freePorts(2, '127.0.0.1', () => proposed.shift() ?? 0);
    expect(ports).to.deep.equal([20017, 20018]);
  });
});
