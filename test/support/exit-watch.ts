// Loaded by mocha (.mocharc.json "require"). When every test has run, the process must end by
// itself: something still open (a server, a timer, a socket) is a leak of the test that opened it.
// Mocha alone would wait for it forever, and CI would see only its own time limit. So, a minute
// after the end, this names what is still open and ends the run as failed.
const GRACE_MS = Number(process.env.MOCHA_EXIT_GRACE_MS) || 60_000;

export function mochaGlobalTeardown(): void {
  setTimeout(() => {
    const open = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap');
    console.error(`\nmocha: the tests ended ${GRACE_MS / 1000} s ago but the process did not: still open: ${open.join(', ') || 'nothing named'}`);
    // mocha sets the exit code from its failures on 'exit' (0 here); this listener runs after it
    process.on('exit', () => (process.exitCode = 1));
    process.exit(1);
  }, GRACE_MS).unref();
}
