/**
 * Real headless Chromium for browser tests: Debian's `chromium` package (installed by .ci/run,
 * or `apt-get install -y chromium`) driven by playwright-core. No browser download: playwright
 * is pointed at the system binary. `CHROMIUM_PATH` overrides the location.
 *
 *   const browser = await launchChromium();
 *   const { page, errors, close } = await openPage(browser);
 *   await page.goto(url);
 *   ...
 *   expect(errors).to.deep.equal([]);   // console errors, CSP violations and page errors
 *   await close();
 *   await browser.close();
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function chromiumInstalled(): boolean {
  return existsSync(CHROMIUM_PATH);
}

/** Launch the system Chromium; a clear error (not a skip) when it is missing, so CI cannot pass without it. */
export async function launchChromium(): Promise<Browser> {
  if (!chromiumInstalled()) {
    throw new Error(`Chromium not found at ${CHROMIUM_PATH}: install Debian's package (apt-get install -y chromium; .ci/run does) or set CHROMIUM_PATH`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
}

export interface OpenPage {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught page errors (CSP violations show up here); failed loads are in `failed`. */
  errors: string[];
  /** Responses with status 400 or above, as `STATUS URL`, the browser's own favicon probes left out. */
  failed: string[];
  /** Every main-frame document the page loaded, in order (redirect hops are not documents). */
  documents: string[];
  close(): Promise<void>;
}

/** A fresh context (own cookies) with one page that records errors and loaded documents. */
export async function openPage(browser: Browser, options: BrowserContextOptions = {}): Promise<OpenPage> {
  const context = await browser.newContext({ locale: 'en-US', ...options });
  context.setDefaultTimeout(15_000);
  context.setDefaultNavigationTimeout(15_000);
  const page = await context.newPage();
  const errors: string[] = [];
  const failed: string[] = [];
  const documents: string[] = [];
  page.on('console', (m) => {
    // "Failed to load resource" names no URL; `failed` has it.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && new URL(r.url()).pathname !== '/favicon.ico') failed.push(`${r.status()} ${r.url()}`);
  });
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('framenavigated', (f) => {
    if (f === page.mainFrame()) documents.push(f.url());
  });
  return { context, page, errors, failed, documents, close: () => context.close() };
}

/** On the realm's login form (sandbox/idp.ts, Keycloak's element ids): sign in and leave the realm. */
export async function signInAtRealm(page: Page, username: string, password: string): Promise<void> {
  await page.waitForSelector('#kc-form-login');
  await page.fill('#username', username);
  await page.fill('#password', password);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith('/interaction/')), page.click('#kc-login')]);
}
