// SIGHUP (read POLICY_FILE now) from the process's first moment: Node's default for it ends the
// process, and configuration management may send one on every policy change, a restart included.
// One held during startup is answered once, when the gateway runs. No imports: nothing to load first.

let held = false;
let answer: (() => void) | undefined;
const onHangup = (): void => {
  if (answer) answer();
  else held = true;
};

/** From now on a SIGHUP no longer ends the process; one that arrives before `reloadOnHangup` is kept. */
export function holdHangups(): void {
  if (!process.listeners('SIGHUP').includes(onHangup)) process.on('SIGHUP', onHangup);
}

/** SIGHUP runs `reload` from now on; one kept during startup runs it once, now. */
export function reloadOnHangup(reload: () => void): void {
  holdHangups();
  answer = reload;
  if (!held) return;
  held = false;
  reload();
}
