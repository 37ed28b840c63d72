/**
 * An event hub spanning replicas: `publish` sends a tiny `NOTIFY` (`<run_id>:<seq>`), and
 * every replica's LISTEN connection wakes its local subscribers of that run. The run store
 * stays the source of truth; subscribers re-read the history (see `src/server/sse.ts`).
 * @module
 */
import type { Notification, PoolClient } from 'pg';
import { createHash } from 'node:crypto';
import { StoreError } from '../../core/errors.js';
import { isConnectionLost, openPostgresConnection, validateSchemaName } from './postgres-connection.js';
import type { PostgresConnectionOptions } from './postgres-connection.js';
import type { RunEvent } from '../run-store.js';
import { createLocalEventHub } from '../local-event-hub.js';
import type { EventHub } from '../event-hub.js';

/**
 * Options of {@link createPostgresEventHub}. With `pool`, the hub keeps one of its connections
 * for LISTEN until `close()`; with `connectionString`, it opens its own pool of two.
 */
export interface PostgresEventHubOptions extends Omit<PostgresConnectionOptions, 'max'> {
  /**
   * The NOTIFY channel, a lower-case identifier. Replicas sharing a schema must share it.
   * @default `harness_run_events` for the `public` schema, else `harness_run_events_<schema>`
   */
  channel?: string;
  /** How often the LISTEN connection is checked, so a silently dead one is replaced. @default 30000 */
  healthCheckMs?: number;
}

/** An {@link EventHub} that must be closed: it holds a LISTEN connection. */
export interface PostgresEventHub extends EventHub {
  /** Stops listening and releases the connection (and the pool, if the hub created it). */
  close(): Promise<void>;
}

const HUB = 'postgres-event-hub';
const NOTIFY = 'SELECT pg_notify($1, $2)';
const MAX_RECONNECT_DELAY_MS = 5000;
// Ids this hub delivered locally whose own notification has not come back yet; bounded in
// case LISTEN was down when they were sent.
const MAX_PENDING_ECHOES = 10_000;

/**
 * Creates the hub and waits until it listens. Listeners of a run get each event once: events
 * published here are delivered at once (the full event) and their echo is skipped; events
 * from other replicas arrive as a minimal event (`type: 'notification'`, empty payload),
 * which is a wake-up: read the run's events from the run store. After a lost LISTEN
 * connection is re-established, every subscriber gets one `type: 'reconnected'` wake-up
 * (seq −1), since notifications sent meanwhile are lost.
 * @example
 * const hub = await createPostgresEventHub({ connectionString: process.env.DATABASE_URL, schema: 'harness' });
 */
export async function createPostgresEventHub(options: PostgresEventHubOptions): Promise<PostgresEventHub> {
  const connection = openPostgresConnection({ ...options, max: 2 }, HUB);
  const channel = options.channel === undefined ? defaultChannel(connection.schema) : validateChannel(options.channel);
  const { pool } = connection;
  // Local subscribers; this hub only adds the cross-replica notifications.
  const local = createLocalEventHub();
  const pendingEchoes = new Set<string>();
  let listening: PoolClient | undefined;
  let closed = false;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let reconnectDelayMs = 100;

  const deliver = (event: RunEvent): void => local.publish(event);

  const onNotification = (message: Notification): void => {
    if (message.channel !== channel || !message.payload) return;
    const event = notificationEvent(message.payload);
    if (event && !pendingEchoes.delete(event.id)) deliver(event);
  };

  const drop = (client: PoolClient): void => {
    if (listening !== client) return;
    listening = undefined;
    // true destroys the connection rather than pooling a client that may still LISTEN.
    client.release(true);
    if (!closed) scheduleReconnect();
  };

  const listen = async (): Promise<void> => {
    const client = await pool.connect();
    client.on('notification', onNotification);
    client.on('error', () => drop(client));
    client.on('end', () => drop(client));
    listening = client;
    try {
      await client.query(`LISTEN "${channel}"`);
    } catch (error) {
      drop(client);
      throw error;
    }
  };

  const scheduleReconnect = (): void => {
    if (reconnectTimer !== undefined || closed) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      if (closed) return;
      listen().then(
        () => {
          reconnectDelayMs = 100;
          if (closed && listening) return drop(listening);
          for (const runId of local.subscribedRunIds()) deliver(wakeUp(runId, -1, 'reconnected'));
        },
        () => {
          reconnectDelayMs = Math.min(reconnectDelayMs * 2, MAX_RECONNECT_DELAY_MS);
          scheduleReconnect();
        },
      );
    }, reconnectDelayMs);
    reconnectTimer.unref();
  };

  try {
    await listen();
  } catch (error) {
    closed = true;
    if (reconnectTimer !== undefined) clearTimeout(reconnectTimer);
    if (connection.ownsPool) await pool.end().catch(() => {});
    const reason = error instanceof Error ? error.message : String(error);
    throw new StoreError({
      store: HUB,
      message: `Could not LISTEN on channel ${channel}: ${reason}.`,
      data: { channel },
      cause: error,
    });
  }

  // A notification whose connection was lost is sent again on a new one: sent twice, it only wakes
  // the other replicas' subscribers twice, and they read the run store again (an echo that comes
  // back twice is delivered here once as a wake-up). A pooled connection killed with the LISTEN
  // one would otherwise lose the first notification after the kill.
  const notify = (payload: string): Promise<unknown> =>
    pool.query(NOTIFY, [channel, payload]).catch((error: unknown) => {
      if (!isConnectionLost(error)) throw error;
      return pool.query(NOTIFY, [channel, payload]);
    });

  const healthCheck = setInterval(() => {
    const client = listening;
    if (client) client.query('SELECT 1').catch(() => drop(client));
  }, options.healthCheckMs ?? 30_000);
  healthCheck.unref();

  return {
    publish(event) {
      if (closed) return;
      if (pendingEchoes.size >= MAX_PENDING_ECHOES) {
        const oldest = pendingEchoes.values().next();
        if (!oldest.done) pendingEchoes.delete(oldest.value);
      }
      pendingEchoes.add(event.id);
      deliver(event);
      // Other replicas' subscribers will catch up at their next heartbeat read if this fails.
      notify(`${event.runId}:${event.seq}`).catch(() => {
        pendingEchoes.delete(event.id);
      });
    },
    subscribe: (runId, listener) => local.subscribe(runId, listener),
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(healthCheck);
      if (reconnectTimer !== undefined) clearTimeout(reconnectTimer);
      const client = listening;
      listening = undefined;
      client?.release(true);
      local.clear();
      if (connection.ownsPool) await pool.end();
    },
  };
}

/** A wake-up event: no payload, only which run to read again. */
function wakeUp(runId: string, seq: number, type: 'notification' | 'reconnected'): RunEvent {
  return Object.freeze({
    id: `${runId}:${seq}`,
    runId,
    seq,
    type,
    timestamp: new Date().toISOString(),
    payload: Object.freeze({}),
  });
}

/** The wake-up a notification payload (`<run id>:<seq>`) stands for, or undefined for a malformed one. */
function notificationEvent(payload: string): RunEvent | undefined {
  const split = payload.lastIndexOf(':');
  const runId = payload.slice(0, split);
  const seq = Number(payload.slice(split + 1));
  if (split <= 0 || !Number.isSafeInteger(seq)) return undefined;
  return wakeUp(runId, seq, 'notification');
}

function validateChannel(channel: string): string {
  if (/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) return channel;
  throw new StoreError({
    store: HUB,
    message: `Option channel must match ^[a-z_][a-z0-9_]{0,62}$; got ${JSON.stringify(channel)}.`,
    data: { option: 'channel' },
  });
}

// Postgres truncates identifiers to 63 bytes; a long schema gets a hash so two schemas never share a channel.
function defaultChannel(schema: string): string {
  validateSchemaName(schema, HUB);
  if (schema === 'public') return 'harness_run_events';
  const name = `harness_run_events_${schema}`;
  return name.length <= 63
    ? name
    : `harness_run_events_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
}
