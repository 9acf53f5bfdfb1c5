// scripts/open-webui.sh install as an operator meets it (`npm run routes:check -- <release>`,
// `npm test`'s set-up), with a stand-in Python whose pip says what the real one says after the
// slim install: the list of the wheel's requirements left out is one line, not thirty "ERROR"
// lines; anything else pip says is shown; and two installs of one release at the same time make
// one venv, the second waiting for the first. No network, no real Python.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** What pip prints after installing requirements-slim.txt into a venv holding the open-webui wheel (0.12.3, as seen). */
const LEFT_OUT = ['accelerate==1.13.0', 'anthropic==0.86.0', 'chromadb==1.5.9', 'transformers==5.5.4'];
const PIP_CONFLICTS = [
  "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. This behaviour is the source of the following dependency conflicts.",
  ...LEFT_OUT.map((p) => `open-webui 9.9.9 requires ${p}, which is not installed.`),
];

/** A `python3` that makes a venv whose pip, python and open-webui only say what the install script reads. */
function fakePython(dir: string, pipSays: string[]): string {
  const template = join(dir, 'template');
  mkdirSync(template);
  const script = (name: string, body: string) => {
    writeFileSync(join(template, name), `#!/usr/bin/env bash\n${body}\n`);
    chmodSync(join(template, name), 0o755);
  };
  writeFileSync(join(dir, 'requirements-slim.txt'), 'fastapi\n');
  writeFileSync(join(dir, 'pip-says.txt'), pipSays.join('\n') + '\n');
  // pip: slow enough for two installs to overlap; says its lines when given the requirements file
  script('pip', `sleep 0.5\nfor a in "$@"; do [ "$a" = -r ] && cat ${join(dir, 'pip-says.txt')} >&2; done\nexit 0`);
  // the venv's python answers the script's question for the wheel's requirements-slim.txt
  script('python', `[ "$1" = - ] && echo ${join(dir, 'requirements-slim.txt')}\nexit 0`);
  script('open-webui', 'exit 0');
  const python = join(dir, 'python3');
  writeFileSync(
    python,
    `#!/usr/bin/env bash\nif [ "$1" = -m ] && [ "$2" = venv ]; then mkdir -p "$3/bin"; cp ${template}/* "$3/bin/"; echo "$3" >> ${join(dir, 'venvs')}; fi\nexit 0\n`,
  );
  chmodSync(python, 0o755);
  return python;
}

function install(cache: string, python: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const child = spawn('bash', [join(ROOT, 'scripts', 'open-webui.sh'), 'install'], {
      env: { PATH: process.env.PATH ?? '', HOME: cache, CHATGW_CACHE: cache, OWUI_VERSION: '9.9.9', PYTHON: python },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => done({ code, out, err }));
  });
}

describe('scripts/open-webui.sh install, as an operator meets it', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'owui-install-'));
    mkdirSync(join(dir, 'cache'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('the requirements the slim install leaves out are said in one line, not as pip\u2019s "ERROR" list; other words of pip are shown', async () => {
    const python = fakePython(dir, [...PIP_CONFLICTS, 'WARNING: something else pip wants you to see']);
    const r = await install(join(dir, 'cache'), python);
    expect(r.code, r.out + r.err).to.equal(0);
    const all = r.out + r.err;
    expect(all).to.not.include('ERROR');
    expect(all).to.not.include('which is not installed');
    expect(r.out).to.include(`open-webui 9.9.9: ${LEFT_OUT.length} packages of its full requirements left out on purpose`);
    expect(r.err).to.include('WARNING: something else pip wants you to see');
    expect(existsSync(join(dir, 'cache', 'open-webui-9.9.9', '.installed'))).to.equal(true);
    // installed once: the next run says so and does nothing
    const again = await install(join(dir, 'cache'), python);
    expect(again.out).to.include('open-webui 9.9.9 already installed');
    expect(readFileSync(join(dir, 'venvs'), 'utf8').trim().split('\n')).to.have.length(1);
  });

  it('two installs of one release at the same time make one venv: the second waits for the first and finds it there', async () => {
    const python = fakePython(dir, PIP_CONFLICTS);
    const [a, b] = await Promise.all([install(join(dir, 'cache'), python), install(join(dir, 'cache'), python)]);
    expect([a.code, b.code]).to.deep.equal([0, 0]);
    expect(readFileSync(join(dir, 'venvs'), 'utf8').trim().split('\n'), 'venvs made').to.have.length(1);
    expect([a.out, b.out].filter((o) => o.includes('installed meanwhile'))).to.have.length(1);
  });
});
