/**
 * The harness server: composition root, HTTP app and listener.
 * @module
 */
export { createHarness } from './create-harness.js';
export type { Harness, HarnessOptions } from './create-harness.js';
export { createApp, MAX_BODY_BYTES } from './app.js';
export type { AppOptions } from './app.js';
export { startServer } from './serve.js';
export type { StartServerOptions, RunningServer } from './serve.js';
