/**
 * The conformance suites of the two store ports, for adapters of your own (`harness-memory/testing`):
 * the tests every built-in store passes, run with vitest against your `MemoryStore` or `RunStore`.
 * Call one at the top level of a test file. vitest is an optional peer dependency of this
 * subpath only.
 * @example
 * import { runMemoryStoreSuite } from 'harness-memory/testing';
 * runMemoryStoreSuite({ name: 'my store', create: () => createMyStore(), cleanup: () => dropMyTables() });
 * @module
 */
export { runStoreSuite as runMemoryStoreSuite } from './store.suite.js';
export type { StoreSuiteOptions as MemoryStoreSuiteOptions } from './store.suite.js';
export { runRunStoreSuite } from './run-store.suite.js';
export type { RunStoreSuiteOptions } from './run-store.suite.js';
