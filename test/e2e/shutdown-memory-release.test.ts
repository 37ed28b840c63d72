/**
 * Memory work still going when the server shuts down past its deadline is put back in the
 * queue, not left `processing` under a lease the next process waits out (300 s): the background
 * worker's model call, and the observation a completed run left to go on.
 */
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import { createHarness } from '../../src/server/create-harness.js';
import type { Harness } from '../../src/server/create-harness.js';
import type { LogRecord } from '../../src/server/fault-log.js';
import type { Operation } from '../../src/storage/store.js';
import type { ScriptedReply, ScriptedRequest } from '../support/scripted-openai-server.js';
import { createPostgresTestSchemas, postgresTestUrl } from '../support/postgres-schema.js';
import { eventsOf, observeUserLines, startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

let e2e: E2E | undefined;
const opened: Harness[] = [];
afterEach(async () => {
  for (const harness of opened.splice(0)) await harness.dispose();
  await e2e?.close();
  e2e = undefined;
});

const url = postgresTestUrl();
const schemas = url ? createPostgresTestSchemas(url) : undefined;
afterAll(async () => {
  await schemas?.dropAll();
});

const STORES: Array<{ name: string; skip: boolean; env: () => Record<string, string> }> = [
  { name: 'SQLite', skip: false, env: () => ({}) },
  {
    name: 'Postgres',
    skip: !url,
    // A schema per test: the next harness's worker must find only this test's operations.
    env: () => ({
      HARNESS_MEMORY_DB_DRIVER: 'postgres',
      HARNESS_MEMORY_DB_DSN: url ?? '',
      HARNESS_MEMORY_SCHEMA: schemas?.next() ?? '',
    }),
  },
];

/** The server, with its log kept and the observer answering as `observer` says (by call, from 1). */
async function start(env: Record<string, string>, observer: (call: number, request: ScriptedRequest) => ScriptedReply) {
  const log: LogRecord[] = [];
  const started = await startE2E({ shutdownTimeoutMs: 500, env, logger: { log: (record) => log.push(record) } });
  e2e = started;
  let calls = 0;
  started.script.observer = (request) => observer(++calls, request);
  return { started, log, observerCalls: () => calls };
}

/** Another harness on the same database, as the next process would open it. */
async function reopen(started: E2E, startWorker: boolean): Promise<Harness> {
  const harness = await createHarness({
    config: started.harness.config,
    env: { OPENAI_API_KEY: 'test', OPENAI_BASE_URL: started.model.url },
    startWorker,
    logger: { log: () => undefined },
  });
  opened.push(harness);
  return harness;
}

const operationsOf = (harness: Harness, conversationId: string): Promise<Operation[]> =>
  harness.store.listOperations(memoryIdOf(resolveScope({ conversationId })));

/** The log's faults, as `component: message`. */
const faultsOf = (log: readonly LogRecord[]): string[] =>
  log.filter((record) => record.event === 'fault').map((record) => `${record.component}: ${record.message}`);

/** Shuts the server down; resolves with how long it took. */
async function shutDown(started: E2E): Promise<number> {
  const closing = performance.now();
  await started.server.close();
  return performance.now() - closing;
}

/** Waits until the next process (its worker running) has applied the operation; not for its lease. */
async function appliedByTheNextProcess(started: E2E, conversationId: string, operationId: string): Promise<void> {
  const next = await reopen(started, true);
  await vi.waitFor(
    async () => {
      const operation = (await operationsOf(next, conversationId)).find((item) => item.operationId === operationId);
      expect(operation?.status).toBe('applied');
    },
    { timeout: 15_000, interval: 50 },
  );
  const observations = await next.store.listObservations(memoryIdOf(resolveScope({ conversationId })));
  expect(observations.map((observation) => observation.content)).toContain('The user said: remember tabs');
}

/** An answer only an abort ends: ten minutes away. */
const NEVER = (request: ScriptedRequest): ScriptedReply => ({ delayMs: 600_000, reply: observeUserLines(request) });

describe.each(STORES)('e2e: memory work at a shutdown past its deadline ($name)', ({ skip, env }) => {
  it.skipIf(skip)(
    "puts the background worker's operation back in the queue, its attempt not counted, with no worker fault",
    async () => {
      // The run's observation fails once (503); the worker's retry then never answers.
      const { started, log, observerCalls } = await start(env(), (call, request) =>
        call === 1
          ? { status: 503, body: { error: { message: 'down' } } }
          : call === 2
            ? NEVER(request)
            : observeUserLines(request),
      );
      const conversationId = 'c-release-worker';
      const runId = await started.startRun({ prompt: 'remember tabs', conversation_id: conversationId });
      await eventsOf(await started.events(runId));
      await vi.waitFor(() => expect(observerCalls()).toBe(2), { timeout: 15_000, interval: 10 });

      // The deadline (500 ms) and the release's grace (2 s) at most, with room for a slow machine.
      expect(await shutDown(started)).toBeLessThan(6_000);

      const check = await reopen(started, false);
      const [operation] = await operationsOf(check, conversationId);
      // The 503's attempt is counted, the worker's is not; the 503's error text stays.
      expect(operation).toMatchObject({ status: 'queued', attempt: 1, leaseOwner: null });
      expect(operation?.errorText).toContain('503');
      expect(Date.parse(operation?.availableAt ?? '')).toBeLessThanOrEqual(Date.now());
      expect(faultsOf(log)).toEqual([]);

      await appliedByTheNextProcess(started, conversationId, operation?.operationId ?? '');
      expect(observerCalls()).toBe(3);
    },
    60_000,
  );

  it.skipIf(skip)(
    'ends a run waiting for its observation completed, and puts the observation back in the queue',
    async () => {
      const { started, log, observerCalls } = await start(env(), (call, request) =>
        call === 1 ? NEVER(request) : observeUserLines(request),
      );
      const conversationId = 'c-release-run';
      const runId = await started.startRun({ prompt: 'remember tabs', conversation_id: conversationId });
      const stream = started.events(runId);
      // The answer is in; the run waits for its observation.
      await vi.waitFor(() => expect(observerCalls()).toBe(1), { timeout: 15_000, interval: 10 });

      expect(await shutDown(started)).toBeLessThan(6_000);
      expect(eventsOf(await stream).at(-1)?.type).toBe('run.completed');

      const check = await reopen(started, false);
      expect((await check.runStore.getRun(runId))?.status).toBe('completed');
      const [operation] = await operationsOf(check, conversationId);
      expect(operation).toMatchObject({ operationType: 'observe', status: 'queued', attempt: 0, leaseOwner: null });
      expect(faultsOf(log)).toEqual([]);

      await appliedByTheNextProcess(started, conversationId, operation?.operationId ?? '');
      expect(observerCalls()).toBe(2);
    },
    60_000,
  );
});
