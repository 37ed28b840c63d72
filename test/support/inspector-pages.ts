/**
 * Tabs of the memory inspector in headless Chromium, for the browser tests: the browser is
 * started once per test file, each page is a new tab (so a fresh session storage, no key),
 * the key is typed into the header form as a user does, and every uncaught page error or
 * CSP violation is collected, so the test that caused it fails.
 * @module
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './launch-chromium.js';

/** How long a browser test waits for a condition. */
export const WAIT = { timeout: 15_000 } as const;

/** Options of {@link InspectorPages.open}. */
export interface OpenInspectorOptions {
  /** A key to type into the header form before going to the view. */
  readonly key?: string;
  /** @default 1280 */
  readonly width?: number;
  /** @default 800 */
  readonly height?: number;
  /** Script run in the page before its own (`page.addInitScript`). */
  readonly init?: string;
}

/** The inspector tabs of one test file. */
export interface InspectorPages {
  /** Opens `${base}/inspector/` in a new tab, types the key (if any), then goes to `hash`. */
  open(base: string, hash: string, options?: OpenInspectorOptions): Promise<Page>;
  /** Types a key into the header form. */
  useKey(page: Page, key: string): Promise<void>;
  /** Closes the pages opened since the last call; returns the problems they reported. */
  closePages(): Promise<string[]>;
  /** Closes the browser. */
  close(): Promise<void>;
}

/**
 * Starts the browser (each `open` awaits it, so a test fails rather than skips when it
 * cannot start).
 */
export function createInspectorPages(): InspectorPages {
  const browserStart: Promise<Browser> = launchChromium();
  // Awaited by each `open`; here only kept from being an unhandled rejection.
  browserStart.catch(() => {});
  let contextStart: Promise<BrowserContext> | undefined;
  const pages: Page[] = [];
  let problems: string[] = [];

  // NOTE: Chromium runs with --single-process (@sparticuz/chromium's flags), where closing a
  // context takes the browser down; so there is one context and a tab per page.
  const browserContext = (): Promise<BrowserContext> => {
    contextStart ??= (async () => {
      const context = await (await browserStart).newContext();
      // A tab that stays open, so closing a test's page never closes the last one.
      await context.newPage();
      return context;
    })();
    return contextStart;
  };

  const useKey = async (page: Page, key: string): Promise<void> => {
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Use key' }).click();
    await page.getByText('Key in use for this tab').waitFor(WAIT);
  };

  return {
    async open(base, hash, options = {}) {
      const page = await (await browserContext()).newPage();
      pages.push(page);
      await page.setViewportSize({ width: options.width ?? 1280, height: options.height ?? 800 });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (/content security policy/i.test(message.text())) problems.push(`CSP: ${message.text()}`);
      });
      if (options.init !== undefined) await page.addInitScript(options.init);
      await page.goto(`${base}/inspector/`);
      if (options.key !== undefined) await useKey(page, options.key);
      await page.goto(`${base}/inspector/${hash}`);
      return page;
    },
    useKey,
    async closePages() {
      for (const page of pages.splice(0)) await page.close();
      const seen = problems;
      problems = [];
      return seen;
    },
    async close() {
      await (await browserStart.catch(() => undefined))?.close();
    },
  };
}

/**
 * Makes the page count the API answers it has read (their URLs), so a test knows when an
 * answer it released was handled: the handling runs in the same microtask checkpoint as the
 * count, before any later `page.evaluate`.
 */
export async function countAnswersRead(page: Page): Promise<void> {
  // A string, as the page's own code: the tests are type-checked without the DOM library.
  await page.evaluate(`{
    const read = Response.prototype.text;
    const log = (window.answersRead = []);
    Response.prototype.text = async function text() {
      try {
        return await read.call(this);
      } finally {
        log.push(this.url);
      }
    };
  }`);
}

/** How many observation lists without a search the page has read since {@link countAnswersRead}. */
export function unsearchedAnswersRead(page: Page): Promise<number> {
  return page.evaluate(
    `window.answersRead.filter((url) => /\\/observations(\\?|$)/u.test(url) && !new URL(url).searchParams.has('q')).length`,
  );
}
