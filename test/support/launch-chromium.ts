/**
 * Headless Chromium for the real-browser tests: Playwright (`playwright-core`, which ships no
 * browser) drives the Chromium build of `@sparticuz/chromium`, which unpacks itself to /tmp.
 * A test that needs the browser must fail when it cannot start one, never skip: this throws
 * with the cause and what to check.
 * @module
 */
import sparticuzChromium from '@sparticuz/chromium';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';

// The package's defaults turn off the same-origin policy and mixed-content blocking: a browser
// that sends no Origin header on cross-site requests would make every test of the inspector's
// cross-site protections pass for the wrong reason.
const WEAKENING_ARGS = new Set(['--disable-web-security', '--allow-running-insecure-content']);
const BROWSER_ARGS = sparticuzChromium.args.filter((arg) => !WEAKENING_ARGS.has(arg));

/** Starts headless Chromium; throws (with the cause) when it cannot. */
export async function launchChromium(): Promise<Browser> {
  let executablePath: string;
  try {
    executablePath = await sparticuzChromium.executablePath();
  } catch (error) {
    throw new Error(
      '[harness-memory] [browser tests] @sparticuz/chromium could not unpack its Chromium. ' +
        'Run `npm ci` (it is a dev dependency) and check that /tmp is writable.',
      { cause: error },
    );
  }
  try {
    return await chromium.launch({ executablePath, args: BROWSER_ARGS, headless: true });
  } catch (error) {
    throw new Error(
      `[harness-memory] [browser tests] Chromium at ${executablePath} did not start. ` +
        'Check the error below (missing shared libraries, say); browser tests fail rather than skip.',
      { cause: error },
    );
  }
}
