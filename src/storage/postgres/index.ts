/**
 * The Postgres stores: `createPostgresStore({ connectionString, schema })` for memory and
 * `createPostgresRunStore(...)` for the harness's runs, sharing one schema.
 * @module
 */
export { createPostgresStore, STORE_NAME } from './postgres-store.js';
export type { PostgresStoreOptions } from './postgres-store.js';
export { createPostgresRunStore } from './postgres-run-store.js';
export type { PostgresRunStoreOptions } from './postgres-run-store.js';
export type { PostgresConnectionOptions } from './postgres-connection.js';
export { createPostgresEventHub } from './postgres-event-hub.js';
export type { PostgresEventHub, PostgresEventHubOptions } from './postgres-event-hub.js';
export { migratePostgresSchema, POSTGRES_SCHEMA_VERSION } from './postgres-migrations.js';
