/**
 * The SQLite stores: `createSqliteStore({ path })` for memory and `createSqliteRunStore({ path })`
 * for the harness's runs, in one file.
 * @module
 */
export { createSqliteStore, STORE_NAME } from './sqlite-store.js';
export type { SqliteStoreOptions } from './sqlite-store.js';
export { SQLITE_SCHEMA_VERSION } from './sqlite-migrations.js';
export { createSqliteRunStore } from './sqlite-run-store.js';
export type { SqliteRunStoreOptions } from './sqlite-run-store.js';
