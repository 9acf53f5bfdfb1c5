// One headless Chromium and one gateway world per describe block, with a fresh browser context per
// test, closed after it: the set-up every browser suite of the gateway shares.
import { expect } from 'chai';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { launchChromium, openPage, signInAtRealm, type OpenPage } from './browser.js';
import { startWorld, type World } from './cookie-jar.js';

export interface BrowserWorld {
  readonly browser: Browser;
  readonly w: World;
  /** A fresh context and page for this test; closed after it. */
  open(options?: BrowserContextOptions): Promise<OpenPage>;
}

/** Registers the hooks in the calling describe block; the browser is launched before the world, so a world that fails to start leaves nothing open. */
export function browserWorld(options: Parameters<typeof startWorld>[0] = {}): BrowserWorld {
  let browser: Browser | undefined;
  let w: World | undefined;
  const tabs: OpenPage[] = [];
  before(async () => {
    browser = await launchChromium();
    w = await startWorld(options);
  });
  afterEach(async () => {
    await Promise.all(tabs.splice(0).map((t) => t.close()));
  });
  after(async () => {
    await browser?.close();
    await w?.close();
  });
  return {
    get browser() {
      return browser!;
    },
    get w() {
      return w!;
    },
    async open(contextOptions) {
      const tab = await openPage(browser!, contextOptions);
      tabs.push(tab);
      return tab;
    },
  };
}

/** Signs in at the realm's form from /auth/start and waits for the stand-in's chat page to name the user. */
export async function signInToChat(page: Page, url: string, username: string, password = `${username}-pass`): Promise<void> {
  await page.goto(`${url}/auth/start?returnTo=%2F`);
  await signInAtRealm(page, username, password);
  await page.waitForURL(`${url}/`);
  await page.waitForSelector('#who');
  expect(await page.textContent('#who')).to.include(`${username}@`);
}
