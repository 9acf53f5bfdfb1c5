// `npm start`. With NODE_ENV=production: the compiled gateway (dist/, built by `npm run build`),
// exactly what the image runs, with no TypeScript loader and no dev dependency. Otherwise the
// sources through tsx, so the sandbox and development need no build step after `npm install`.
// Cluster workers (GATEWAY_WORKERS) re-run this file and take the same branch.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

// A SIGHUP before the gateway's hold (gateway/hangups.ts) is loaded is kept, then handed to it.
let hangupBeforeHold = false;
const keepHangup = () => (hangupBeforeHold = true);
process.on('SIGHUP', keepHangup);

const root = fileURLToPath(new URL('..', import.meta.url));
const fail = (message) => {
  process.stderr.write(`${message}\nThe gateway did not start. See docs/development.md, "Dependencies and the build".\n`);
  process.exit(2);
};

if (process.env.NODE_ENV === 'production') {
  const compiled = `${root}dist/gateway/main.js`;
  if (!existsSync(compiled)) fail('NODE_ENV=production runs the compiled gateway, and dist/gateway/main.js is missing: run `npm run build` first.');
  await holdThenRun(`${root}dist/gateway/hangups.js`, compiled);
} else {
  let tsx;
  try {
    tsx = await import('tsx/esm/api');
  } catch {
    fail('Running from the TypeScript sources needs the dev dependencies (tsx): run `npm install`, or set NODE_ENV=production after `npm run build`.');
  }
  tsx.register();
  await holdThenRun(`${root}gateway/hangups.ts`, `${root}gateway/main.ts`);
}

async function holdThenRun(hangups, main) {
  (await import(pathToFileURL(hangups).href)).holdHangups();
  process.off('SIGHUP', keepHangup);
  if (hangupBeforeHold) process.emit('SIGHUP', 'SIGHUP');
  await import(pathToFileURL(main).href);
}
