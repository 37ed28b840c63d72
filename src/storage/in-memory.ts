/**
 * The in-memory stores, for tests and short-lived processes: `createInMemoryStore()` for
 * memory and `createInMemoryRunStore()` for the harness's runs. Nothing survives the process.
 * @module
 */
export { createInMemoryStore, STORE_NAME } from './in-memory-store.js';
export type { InMemoryStoreOptions } from './in-memory-store.js';
export { createInMemoryRunStore } from './in-memory-run-store.js';
export type { InMemoryRunStoreOptions } from './in-memory-run-store.js';
