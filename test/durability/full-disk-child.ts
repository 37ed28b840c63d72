/**
 * Child process of the full-disk test, run under a file size limit (`ulimit -f`), so that
 * the database's writes start failing part way. Writes runs, events, run updates and
 * working-memory entries until several in a row fail, and prints as one JSON line which
 * writes resolved and which codes the failed ones had.
 *
 * Environment: `DB_PATH` (required).
 * @module
 */
import { createWorkingMemory } from '../../src/memory/working-memory.js';
import { createSqliteRunStore } from '../../src/storage/sqlite/sqlite-run-store.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';

// Past the limit the kernel sends SIGXFSZ; the write then fails with EFBIG, as on a full disk.
process.on('SIGXFSZ', () => undefined);

const path = process.env['DB_PATH'];
if (!path) throw new Error('DB_PATH is required');
const scope = { tenantId: 't', conversationId: 'c', agentId: 'a' };
const runStore = createSqliteRunStore({ path, checkpoints: 'inline' });
const store = createSqliteStore({ path, checkpoints: 'inline' });
const workingMemory = createWorkingMemory({ store, limits: { maxEntries: 1_000, maxTotalBytes: 10_000_000 } });

const resolved = { runs: [] as string[], events: [] as string[], updates: [] as string[], entries: [] as string[] };
const codes: string[] = [];
let failuresInARow = 0;
const attempt = async (work: () => Promise<void>): Promise<void> => {
  try {
    await work();
    failuresInARow = 0;
  } catch (error) {
    codes.push((error as { code?: string }).code ?? String(error));
    failuresInARow += 1;
  }
};

for (let index = 0; index < 200 && failuresInARow < 8; index += 1) {
  const runId = `run_${index}`;
  await attempt(async () => {
    await runStore.createRun({
      runId,
      scope,
      status: 'queued',
      prompt: `prompt ${index} ${'x'.repeat(60_000)}`,
      model: '',
      systemPrompt: '',
      maxSteps: 1,
      output: null,
      error: null,
      steps: 0,
      usage: { inputTokens: 0, outputTokens: 0 },
      parentRunId: null,
    });
    resolved.runs.push(runId);
  });
  if (!resolved.runs.includes(runId)) continue;
  await attempt(async () => {
    const event = await runStore.appendEvent(runId, 'run.started', { pad: 'y'.repeat(60_000) });
    resolved.events.push(event.id);
  });
  await attempt(async () => {
    await runStore.updateRun(runId, { status: 'completed', output: `out ${index} ${'z'.repeat(60_000)}` });
    resolved.updates.push(runId);
  });
  await attempt(async () => {
    await workingMemory.set(scope, `k${index}`, 'v'.repeat(6_000));
    resolved.entries.push(`k${index}`);
  });
}
console.log(JSON.stringify({ resolved, codes }));
try {
  await store.dispose();
  await runStore.dispose();
} catch {
  // Closing a file that cannot grow may fail too; what was reported stored is what counts.
}
