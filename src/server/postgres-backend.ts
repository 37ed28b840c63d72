import pg from 'pg';
import { createPostgresEventHub, createPostgresRunStore, createPostgresStore } from '../storage/postgres/index.js';
import { ownPoolSettings } from '../storage/postgres/postgres-connection.js';
import type { EventHub } from '../storage/event-hub.js';
import type { RunStore } from '../storage/run-store.js';
import type { MemoryStore } from '../storage/store.js';

/** The Postgres backend of a harness replica: stores sharing one pool, and a LISTEN/NOTIFY hub. */
export async function openPostgresBackend(options: { connectionString: string; schema: string }): Promise<{
  store: MemoryStore;
  runStore: RunStore;
  hub: EventHub;
  close(): Promise<void>;
}> {
  const pool = new pg.Pool(ownPoolSettings(options.connectionString, 10));
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it on next use.
  });
  try {
    // The pool is ours, with no connect listeners: the stores share its read lane.
    const store = await createPostgresStore({ pool, schema: options.schema, readLane: true });
    const runStore = await createPostgresRunStore({ pool, schema: options.schema, readLane: true });
    const hub = await createPostgresEventHub({ pool, schema: options.schema });
    return {
      store,
      runStore,
      hub,
      async close() {
        await hub.close();
        await runStore.dispose();
        await store.dispose();
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end();
    throw error;
  }
}
