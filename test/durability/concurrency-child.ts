/**
 * Child process of the concurrency test. Run with `node --import tsx`.
 *
 * Waits until `START_AT` (epoch ms) so that the processes overlap, then does `COUNT`
 * observes (one new message each, id `<PROC>-m<i>`, scripted instant observer) and
 * `COUNT` working-memory writes (key `<PROC>-k<i>`), alternating between a scope shared
 * by every process and a scope of its own, and appends `COUNT` events (`{proc, index}`) to
 * the run `run-shared`, which the test created. Drains, then prints one JSON line. Any error
 * is printed to stderr and exits 1.
 *
 * Environment: `DB_PATH`, `PROC` (e.g. `p0`), `COUNT` (default 1000), `START_AT`.
 * @module
 */
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import { createWorkingMemory } from '../../src/memory/working-memory.js';
import { createSqliteRunStore } from '../../src/storage/sqlite/sqlite-run-store.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { scriptedObserver } from '../support/scripted-models.js';

const path = process.env['DB_PATH'];
const proc = process.env['PROC'];
if (!path || !proc) throw new Error('DB_PATH and PROC are required');
const count = Number(process.env['COUNT'] ?? '1000');
const startAt = Number(process.env['START_AT'] ?? '0');

const shared = { tenantId: 'tenant-c', conversationId: 'conv-shared', agentId: 'agent-x' };
const own = { tenantId: 'tenant-c', conversationId: `conv-own-${proc}`, agentId: 'agent-x' };

// Names the message seqs it saw and the processes that wrote them.
const observer = scriptedObserver((input) => {
  const first = input.messages[0]?.seq ?? 0;
  const last = input.messages.at(-1)?.seq ?? 0;
  const writers = [...new Set(input.messages.map((message) => /^(p\d+) /.exec(message.content)?.[1] ?? '?'))].sort();
  return `IMPORTANCE:0.5\nobs for messages ${first}-${last} from ${writers.join(',')}`;
});

let failures = 0;
const fail = (text: string): void => {
  failures++;
  process.stderr.write(`${text}\n`);
};

const store = createSqliteStore({ path });
const runStore = createSqliteRunStore({ path });
const memory = createObservationalMemory({
  store,
  observer,
  defaultEnabled: true,
  defaults: { observeMinTokens: 1 },
  onEvent: (event) => {
    if (event.type === 'memory.operation.failed') fail(`operation failed: ${event.error}`);
  },
});
const workingMemory = createWorkingMemory({ store, limits: { maxEntries: 5000, maxTotalBytes: 10_000_000 } });

try {
  const wait = startAt - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  const started = performance.now();
  const statuses: Record<string, number> = {};
  for (let index = 0; index < count; index++) {
    const scope = index % 2 === 0 ? shared : own;
    const result = await memory.observe({
      scope,
      runId: `run-${proc}`,
      messages: [{ id: `${proc}-m${index}`, role: 'user', content: `${proc} message ${index}` }],
    });
    statuses[result.status] = (statuses[result.status] ?? 0) + 1;
    await workingMemory.set(scope, `${proc}-k${index}`, { proc, index });
    await runStore.appendEvent('run-shared', 'test.event', { proc, index });
  }
  const workMs = performance.now() - started;
  const pendingBeforeDrain = await store.countPendingOperations();
  await memory.drain(shared, { timeoutMs: 20_000 });
  await memory.drain(own, { timeoutMs: 20_000 });
  await store.dispose();
  await runStore.dispose();
  process.stdout.write(
    `${JSON.stringify({ proc, count, workMs: Math.round(workMs), statuses, pendingBeforeDrain, observerCalls: observer.calls.length, failures })}\n`,
  );
  process.exitCode = failures === 0 ? 0 : 1;
} catch (error) {
  const code = (error as { code?: unknown }).code;
  fail(`error${code === undefined ? '' : ` ${String(code)}`}: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
}
