/**
 * Child process of the reflection crash test. Run with `node --import tsx`.
 *
 * Default mode: observes `OBSERVES` times (two new messages each, the whole transcript so far
 * every time), the scope reflecting on its own each time two new observations are unreflected;
 * with `REFLECT_NOW=1` then asks for a reflection. The `CRASH_AT_REFLECTION`-th reflection
 * SIGKILLs the process once the reflector has answered, before the answer is applied
 * (`after_llm`). Prints `done` if it never crashed.
 *
 * `RECOVER=1`: opens the same file with a background worker, observes nothing new, drains the
 * scope (the interrupted reflection is taken over once its lease has expired by the
 * database's clock), and prints the final state as one JSON line.
 *
 * Environment: `DB_PATH` (required), `OBSERVES` (default 4), `REFLECT_NOW`,
 * `CRASH_AT_REFLECTION` (default 2), `RECOVER`, `LEASE_MS` (default 300).
 * @module
 */
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { messages, scriptedObserver, scriptedReflector } from '../support/scripted-models.js';
import { sigkillSelf } from './durability-support.js';

const REFLECT_SCOPE = { tenantId: 'tenant-a', conversationId: 'conv-reflect', agentId: 'agent-x' } as const;
const PER_OBSERVE = 2;

const path = process.env['DB_PATH'];
if (!path) throw new Error('DB_PATH is required');
const observes = Number(process.env['OBSERVES'] ?? '4');
const crashAtReflection = Number(process.env['CRASH_AT_REFLECTION'] ?? '2');
const recover = process.env['RECOVER'] === '1';

// Which model answered last: the `after_llm` fault point follows both.
let lastCall: 'observer' | 'reflector' = 'observer';
const observer = scriptedObserver((input) => {
  lastCall = 'observer';
  return `IMPORTANCE:0.5\nobs for messages ${input.messages[0]?.seq ?? 0}-${input.messages.at(-1)?.seq ?? 0}`;
});
// Names the observations it was shown, so the test can tell one reflection from another.
const reflector = scriptedReflector((input) => {
  lastCall = 'reflector';
  return `SUMMARY:\nreflection of observations ${input.observations.map((item) => item.seq).join(',')}\n`;
});

const store = createSqliteStore({ path });
const memory = createObservationalMemory({
  store,
  observer,
  reflector,
  defaultEnabled: true,
  // Each observation is 5 tokens: a reflection is due at every second one.
  defaults: { observeMinTokens: 1, reflectThresholdTokens: 10 },
  leaseMs: Number(process.env['LEASE_MS'] ?? '300'),
  retryDelayMs: 10,
  faultPoint: (point) => {
    if (!recover && point === 'after_llm' && lastCall === 'reflector' && reflector.calls.length === crashAtReflection)
      sigkillSelf();
  },
  onEvent: (event) => {
    if (event.type === 'memory.operation.failed') process.stderr.write(`operation failed: ${event.error}\n`);
  },
});

if (!recover) {
  const transcript = messages(0, observes * PER_OBSERVE);
  for (let index = 1; index <= observes; index++) {
    await memory.observe({
      scope: REFLECT_SCOPE,
      runId: 'run-crash',
      messages: transcript.slice(0, index * PER_OBSERVE),
    });
  }
  if (process.env['REFLECT_NOW'] === '1') await memory.reflectNow(REFLECT_SCOPE, { runId: 'run-crash' });
  await store.dispose();
  process.stdout.write('done\n');
} else {
  const worker = memory.startWorker({ pollMs: 20, staleCheckMs: 20 });
  await memory.drain(REFLECT_SCOPE, { timeoutMs: 20_000 });
  await worker.stop();
  const inspection = await memory.inspect(REFLECT_SCOPE);
  await store.dispose();
  process.stdout.write(
    `${JSON.stringify({
      observerCalls: observer.calls.length,
      reflectorCalls: reflector.calls.length,
      reflection: inspection.reflection?.raw ?? null,
    })}\n`,
  );
}
