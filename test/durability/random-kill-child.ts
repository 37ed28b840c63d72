/**
 * Child process of the random-kill test. Run with `node --import tsx`.
 *
 * Opens the SQLite file with a background worker (which takes over what a killed process left
 * claimed once its lease has expired), prints `ready`, then goes on with the work where the file
 * says it stopped: step after step, two new messages for each of two scopes of different
 * tenants, observed at once (the reflector runs at every second observation). The observer and
 * reflector take a few milliseconds, as a model would. Runs until killed; after `MAX_STEPS`
 * steps (or with `DRAIN=1`, at once) drains both scopes, and prints `done`.
 *
 * Environment: `DB_PATH` (required), `MAX_STEPS` (default 1000), `DRAIN`,
 * `MAX_OPERATION_ATTEMPTS` (default 1000).
 * @module
 */
import { setTimeout as delay } from 'node:timers/promises';
import { memoryIdOf, resolveScope } from '../../src/core/scope.js';
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { messages, scriptedObserver, scriptedReflector } from '../support/scripted-models.js';

// Each observation and reflection names its scope's tenant, so the test can tell whose a row is.
const RANDOM_KILL_SCOPES = [
  { tenantId: 'tenant-a', conversationId: 'conv-kill', agentId: 'agent-x' },
  { tenantId: 'tenant-b', conversationId: 'conv-kill', agentId: 'agent-x' },
] as const;
const PER_STEP = 2;
// Messages sent with each step: the new ones and some already stored (deduplicated by id), as a
// harness sends the transcript's tail.
const WINDOW = 6;

const path = process.env['DB_PATH'];
if (!path) throw new Error('DB_PATH is required');
const maxSteps = process.env['DRAIN'] === '1' ? 0 : Number(process.env['MAX_STEPS'] ?? '1000');

const observer = scriptedObserver(async (input) => {
  await delay(2);
  const first = input.messages[0]?.seq ?? 0;
  const last = input.messages.at(-1)?.seq ?? 0;
  return `IMPORTANCE:0.5\n${input.scope.tenantId} obs for messages ${first}-${last}`;
});
const reflector = scriptedReflector(async (input) => {
  await delay(2);
  return `SUMMARY:\n${input.scope.tenantId} reflection through ${input.observations.at(-1)?.seq ?? 0}\n`;
});

const store = createSqliteStore({ path });
const memory = createObservationalMemory({
  store,
  observer,
  reflector,
  defaultEnabled: true,
  // Each observation is 6 tokens: a reflection is due at every second one.
  defaults: { observeMinTokens: 1, reflectThresholdTokens: 12 },
  leaseMs: 300,
  retryDelayMs: 10,
  // An operation a kill interrupted is taken over by the next process; these kills are not its
  // doing, so it is never parked as dead (poison-operation.test.ts covers that) and the test can
  // require every operation applied in the end. A lease lost on a loaded machine is retried too.
  maxOperationAttempts: Number(process.env['MAX_OPERATION_ATTEMPTS'] ?? '1000'),
  onEvent: (event) => {
    if (event.type === 'memory.operation.failed') process.stderr.write(`operation failed: ${event.error}\n`);
  },
});
const worker = memory.startWorker({ pollMs: 20, staleCheckMs: 20 });
process.stdout.write('ready\n');

for (let step = 1; step <= maxSteps; step++) {
  for (const scope of RANDOM_KILL_SCOPES) {
    const stored = (await store.getRecord(memoryIdOf(resolveScope(scope))))?.lastMessageSeq ?? 0;
    const end = stored + PER_STEP;
    const start = Math.max(0, end - WINDOW);
    await memory.observe({
      scope,
      runId: 'run-kill',
      messages: messages(start, end - start, (index) => `${scope.tenantId} message ${index}`),
    });
  }
}
for (const scope of RANDOM_KILL_SCOPES) await memory.drain(scope, { timeoutMs: 20_000 });
await worker.stop();
await store.dispose();
process.stdout.write('done\n');
