import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createPostgresTestSchemas, postgresTestUrl } from '../support/postgres-schema.js';
import { startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';
import { openSse } from './sse-client.js';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.close();
  e2e = undefined;
});

const url = postgresTestUrl();
const schemas = url ? createPostgresTestSchemas(url) : undefined;
// One schema for the file: each start finds it migrated.
const schema = schemas?.next();
afterAll(async () => {
  await schemas?.dropAll();
});

const STORES: Array<{ name: string; skip: boolean; env: Record<string, string> }> = [
  { name: 'SQLite', skip: false, env: {} },
  {
    name: 'Postgres',
    skip: !url,
    env: {
      HARNESS_MEMORY_DB_DRIVER: 'postgres',
      HARNESS_MEMORY_DB_DSN: url ?? '',
      HARNESS_MEMORY_SCHEMA: schema ?? '',
    },
  },
];

async function until(condition: () => boolean): Promise<void> {
  // Polled; the test's timeout bounds the wait.
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** A client reading a run's events: the event types it got, and how the stream ended. */
async function follow(baseUrl: string, runId: string) {
  const stream = await openSse(`${baseUrl}/v1/runs/${runId}/events`);
  const types: string[] = [];
  const ending = (async () => {
    try {
      for await (const frame of stream) types.push(frame.event ?? 'message');
      return 'ended';
    } catch (error) {
      return `cut: ${String(error)}`;
    }
  })();
  return { types, ending };
}

/**
 * Starts a run whose model answers after `answerMs`, with a client on its event stream, then
 * shuts the server down once the client has the run's start; resolves with what it got.
 */
async function shutDownWhileStreaming(
  env: Record<string, string>,
  shutdownTimeoutMs: number,
  answerMs: number,
  round: number,
) {
  const started = await startE2E({ shutdownTimeoutMs, env: { ...env, HARNESS_MEMORY_DEFAULT_ENABLED: 'false' } });
  e2e = started;
  started.script.agent = () => ({ delayMs: answerMs, reply: { text: 'the answer' } });
  const runId = await started.startRun({ prompt: 'a task', conversation_id: `c-stream-${round}` });
  const client = await follow(started.url, runId);
  await until(() => started.agentRequests().length === 1 && client.types.includes('run.started'));
  await started.server.close();
  return { ending: await client.ending, last: client.types.at(-1) };
}

describe.each(STORES)('e2e: shutting the server down with event streams open ($name)', ({ skip, env }) => {
  // The stream reads the terminal event after the run settles: on Postgres that read is a
  // round trip, and the connections were cut first in 2 to 6 shutdowns of 10.
  it.skipIf(skip)(
    'sends each stream of a run cancelled at the deadline its run.cancelled before the connection ends',
    async () => {
      const got = [];
      for (let round = 0; round < 10; round++) {
        got.push(await shutDownWhileStreaming(env, 300, 20_000, round));
        await e2e?.close();
        e2e = undefined;
      }
      expect(got).toEqual(Array.from({ length: 10 }, () => ({ ending: 'ended', last: 'run.cancelled' })));
    },
    120_000,
  );

  it.skipIf(skip)(
    'sends each stream of a run that completes during the shutdown its run.completed before the connection ends',
    async () => {
      const got = [];
      for (let round = 0; round < 10; round++) {
        got.push(await shutDownWhileStreaming(env, 10_000, 100, round));
        await e2e?.close();
        e2e = undefined;
      }
      expect(got).toEqual(Array.from({ length: 10 }, () => ({ ending: 'ended', last: 'run.completed' })));
    },
    120_000,
  );
});
