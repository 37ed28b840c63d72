/**
 * Child process of the crash tests. Run with `node --import tsx`.
 *
 * Default mode: observes `OBSERVES` times (`PER_OBSERVE` new messages each, ids m0…mN,
 * the whole transcript so far every time) and SIGKILLs itself the `FAULT_AT`-th time the
 * step `FAULT_POINT` is reached (`after_claim`, `after_llm`, `mid_apply`,
 * `before_mark_applied`). Prints `done` if it never crashed.
 *
 * `RECOVER=1`: opens the same file with a background worker, observes the full transcript
 * again (dedupe by id must prevent double observation), drains, and prints the final state
 * as one JSON line.
 *
 * Environment: `DB_PATH` (required), `FAULT_POINT`, `FAULT_AT` (default 1), `OBSERVES`
 * (default 5), `PER_OBSERVE` (default 2), `RECOVER`, `CRASH_ON_RECOVER` (recovery crashes at
 * `FAULT_POINT` too), `MAX_OPERATION_ATTEMPTS`, `CHECKPOINTS` (`inline`: the store's option, so
 * that committed pages stay in the write-ahead log until it reaches SQLite's 1000 pages),
 * `LEASE_MS` (default 300).
 * @module
 */
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { messages, scriptedObserver } from '../support/scripted-models.js';
import { sigkillSelf } from './durability-support.js';

type FaultPoint = 'after_claim' | 'after_llm' | 'mid_apply' | 'before_mark_applied';
const FAULT_POINTS: readonly string[] = ['after_claim', 'after_llm', 'mid_apply', 'before_mark_applied'];

const CRASH_SCOPE = { tenantId: 'tenant-a', conversationId: 'conv-crash', agentId: 'agent-x' } as const;

const path = process.env['DB_PATH'];
if (!path) throw new Error('DB_PATH is required');
const faultPoint = process.env['FAULT_POINT'] ?? '';
if (faultPoint !== '' && !FAULT_POINTS.includes(faultPoint)) throw new Error(`unknown FAULT_POINT ${faultPoint}`);
const faultAt = Number(process.env['FAULT_AT'] ?? '1');
const observes = Number(process.env['OBSERVES'] ?? '5');
const perObserve = Number(process.env['PER_OBSERVE'] ?? '2');
const recover = process.env['RECOVER'] === '1';
// With RECOVER=1: still crash at FAULT_POINT (a poison operation that kills every process claiming it).
const crashOnRecover = process.env['CRASH_ON_RECOVER'] === '1';
const maxOperationAttempts =
  process.env['MAX_OPERATION_ATTEMPTS'] === undefined ? undefined : Number(process.env['MAX_OPERATION_ATTEMPTS']);

let hits = 0;
const hook = (point: FaultPoint): void => {
  if ((recover && !crashOnRecover) || point !== faultPoint) return;
  hits++;
  if (hits < faultAt) return;
  sigkillSelf();
};

// One observation per call, naming the message seqs it saw: the test checks the ranges
// are disjoint and cover every message.
const observer = scriptedObserver((input) => {
  const first = input.messages[0]?.seq ?? 0;
  const last = input.messages.at(-1)?.seq ?? 0;
  return `IMPORTANCE:0.5\nobs for messages ${first}-${last}`;
});

const store = createSqliteStore({
  path,
  faultPoint: hook,
  ...(process.env['CHECKPOINTS'] === 'inline' ? { checkpoints: 'inline' as const } : {}),
});
const memory = createObservationalMemory({
  store,
  observer,
  defaultEnabled: true,
  defaults: { observeMinTokens: 1 },
  leaseMs: Number(process.env['LEASE_MS'] ?? '300'),
  retryDelayMs: 10,
  faultPoint: hook,
  ...(maxOperationAttempts === undefined ? {} : { maxOperationAttempts }),
  onEvent: (event) => {
    if (event.type === 'memory.operation.failed') process.stderr.write(`operation failed: ${event.error}\n`);
  },
});
const transcript = messages(0, observes * perObserve);

if (!recover) {
  for (let index = 1; index <= observes; index++) {
    await memory.observe({ scope: CRASH_SCOPE, runId: 'run-crash', messages: transcript.slice(0, index * perObserve) });
  }
  await store.dispose();
  process.stdout.write('done\n');
} else {
  const worker = memory.startWorker({ pollMs: 20, staleCheckMs: 20 });
  const result = await memory.observe({ scope: CRASH_SCOPE, runId: 'run-recover', messages: transcript });
  await memory.drain(undefined, { timeoutMs: 20_000 });
  await worker.stop();
  const inspection = await memory.inspect(CRASH_SCOPE);
  await store.dispose();
  process.stdout.write(
    `${JSON.stringify({
      memoryId: memoryIdOf(resolveScope(CRASH_SCOPE)),
      observeStatus: result.status,
      observerCalls: observer.calls.length,
      status: inspection.status,
      observations: inspection.observations.map((item) => item.content),
      operations: inspection.operations.map((item) => ({
        type: item.operationType,
        status: item.status,
        attempt: item.attempt,
      })),
    })}\n`,
  );
}
