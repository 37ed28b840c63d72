import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgentRunner } from '../../src/agent/agent-runner.js';
import { createObservationalMemory } from '../../src/memory/observational-memory.js';
import { createWorkingMemory } from '../../src/memory/working-memory.js';
import { createSqliteRunStore } from '../../src/storage/sqlite/sqlite-run-store.js';
import { createSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
const dir = mkdtempSync(join(tmpdir(), 'ov-'));
const path = join(dir, 'a.db');
const store = createSqliteStore({ path }); const runStore = createSqliteRunStore({ path });
const model = { specificationVersion: 'v1' as const, provider: 'b', modelId: 'i', doGenerate: async () => ({ text: 'Done.', toolCalls: [], finishReason: 'stop' as const, usage: { inputTokens: 1, outputTokens: 1 } }) };
const observer = { async observe() { return [{ content: 'The user said a thing.', importance: 0.5 }]; } };
const variant = process.argv[2] ?? 'below';
const om = variant === 'off' ? createObservationalMemory({ store, mode: 'off' }) : createObservationalMemory({ store, observer, defaultEnabled: true, defaults: { observeMinTokens: variant === 'above' ? 1 : 1_000_000 } });
const runner = createAgentRunner({ model, observationalMemory: om, workingMemory: createWorkingMemory({ store }), runStore, memoryTools: [], workspace: dir });
const times: number[] = [];
for (let i = 0; i < Number(process.argv[3] ?? 3000); i++) { const s = process.hrtime.bigint(); const r = await runner.start({ prompt: `turn ${i} keep it`, tenantId: 'b', conversationId: 'c' }); await runner.wait(r.runId); times.push(Number(process.hrtime.bigint() - s) / 1e6); }
times.sort((a, b) => a - b); console.log(variant, 'median', times[times.length >> 1]?.toFixed(3));
