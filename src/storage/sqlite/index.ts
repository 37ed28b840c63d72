/**
 * The SQLite store: `createSqliteStore({ path })`.
 * @module
 */
export { createSqliteStore, STORE_NAME } from './sqlite-store.js';
export type { SqliteStoreOptions } from './sqlite-store.js';
export { SQLITE_SCHEMA_VERSION } from './sqlite-migrations.js';
