// scripts/setup.sh, the set-up `npm test` (and .ci/run) runs first, on a machine that lacks the
// Debian packages: root installs them with apt-get, with nothing asked; a user who may not is told
// in one line what is missing and how to install it, and the set-up stops before any test runs.
// Stand-ins for dpkg-query, id, sudo, apt-get and python3 on PATH: nothing is installed here.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function machine(o: { uid: number; sudo: boolean }) {
  const bin = mkdtempSync(join(tmpdir(), 'setup-bin-'));
  const tool = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/bash\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  tool('dpkg-query', 'exit 1'); // nothing installed
  tool('id', `[ "$1" = -u ] && echo ${o.uid} || /usr/bin/id "$@"`);
  tool('sudo', o.sudo ? `echo "sudo $*" >> ${join(bin, 'ran')}; [ "$1" = -n ] && shift; [ "$1" = true ] && exit 0; exec "$@"` : 'exit 1');
  tool('apt-get', `echo "apt-get $*" >> ${join(bin, 'ran')}`);
  // an unsuitable Python stops the set-up right after the packages: no peer is installed here
  tool('python3', 'exit 1');
  const run = () =>
    spawnSync('bash', [join(ROOT, 'scripts', 'setup.sh')], {
      encoding: 'utf8',
      env: { PATH: `${bin}:/usr/bin:/bin`, HOME: bin, CHATGW_CACHE: join(bin, 'cache') },
      timeout: 20_000,
    });
  const ran = () => (existsSync(join(bin, 'ran')) ? readFileSync(join(bin, 'ran'), 'utf8').trim().split('\n') : []);
  return { run, ran, close: () => rmSync(bin, { recursive: true, force: true }) };
}

describe('scripts/setup.sh: the Debian packages `npm test` needs', function () {
  this.timeout(30_000);

  it('a user who may not install them: one line naming what is missing and the command, and the set-up stops', () => {
    const m = machine({ uid: 1000, sudo: false });
    try {
      const r = m.run();
      expect(r.status).to.equal(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines, r.stderr).to.have.length(1);
      expect(lines[0]).to.match(
        /^setup: missing Debian packages: chromium redis-server python3 python3-venv maven .*\(install them: sudo apt-get install -y chromium redis-server /,
      );
      expect(lines[0]).to.include('then run npm test again');
      expect(m.ran(), 'nothing installed').to.deep.equal([]);
    } finally {
      m.close();
    }
  });

  it('root installs them with apt-get; a user who may sudo without a password, through sudo', () => {
    for (const who of [
      { uid: 0, sudo: false },
      { uid: 1000, sudo: true },
    ]) {
      const m = machine(who);
      try {
        const r = m.run();
        const prefix = who.uid === 0 ? 'apt-get' : 'sudo apt-get';
        const ran = m.ran().filter((l) => l.startsWith(`${prefix} `));
        expect(ran[0], r.stderr).to.equal(`${prefix} update -qq`);
        expect(ran[1]).to.match(new RegExp(`^${prefix} install -y -qq --no-install-recommends chromium redis-server python3 python3-venv maven`));
        expect(r.stdout).to.include('setup: installing Debian packages: chromium redis-server');
        // then on to the peers: here the stand-in python3 is not one Open WebUI runs on
        expect(r.stderr).to.include('setup: Open WebUI needs Python 3.11 or 3.12 with venv as python3');
        expect(r.status).to.equal(1);
      } finally {
        m.close();
      }
    }
  });
});
