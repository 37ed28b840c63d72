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
export { createFaultLog, createJsonLogger } from './fault-log.js';
export type { FaultLog, Logger, LogRecord } from './fault-log.js';
export { createTenantLimits } from './tenant-limits.js';
export type { TenantLimits, TenantLimitsOptions } from './tenant-limits.js';
export { createRedactingRunStore } from '../storage/redacting-run-store.js';
export type { RedactingRunStoreOptions } from '../storage/redacting-run-store.js';
