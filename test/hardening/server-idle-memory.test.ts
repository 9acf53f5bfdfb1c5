// An idle keep-alive connection keeps nothing of the requests it carried (memory per idle
// connection). The server's per-socket record of answers under way (for clientError) held the last
// request and response, headers and all, as long as the connection stayed open: thousands of idle
// browser connections each kept a finished exchange. Checked on the real server over real sockets.
import { expect } from 'chai';
import http from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { serverOnly } from '../support/gateway-harness.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('HTTP server: memory per idle keep-alive connection', function () {
  this.timeout(30_000);

  it('a finished request on a connection left open is garbage: the idle socket does not hold it', async () => {
    const requests: WeakRef<http.IncomingMessage>[] = [];
    const gateway = serverOnly((req, res) => {
      requests.push(new WeakRef(req));
      res.setHeader('content-type', 'text/plain');
      res.end('ok');
    });
    const { url } = await gateway.listen(0, '127.0.0.1');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });
    try {
      const count = 20;
      await Promise.all(
        Array.from(
          { length: count },
          (_, i) =>
            new Promise<void>((resolve, reject) => {
              http
                .get(`${url}/api/v1/x/${i}`, { agent, headers: { cookie: `session=${'x'.repeat(2000)}` } }, (res) => {
                  res.resume();
                  res.on('end', resolve);
                })
                .on('error', reject);
            }),
        ),
      );
      expect(requests).to.have.length(count);
      // the sockets stay open, idle, in the agent's free list
      expect(Object.values(agent.freeSockets).flat().length).to.be.greaterThan(0);
      for (let k = 0; k < 3; k++) {
        await new Promise((r) => setImmediate(r));
        gc();
      }
      const alive = requests.filter((r) => r.deref() !== undefined).length;
      expect(alive, 'requests still alive on idle keep-alive connections').to.be.below(3);
    } finally {
      agent.destroy();
      await gateway.close(100);
    }
  });
});
