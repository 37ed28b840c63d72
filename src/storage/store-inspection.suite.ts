/**
 * The conformance cases of the listing and correction half of `MemoryStore` (scopes,
 * observation and operation pages, hand corrections). `runStoreSuite` runs them for every
 * adapter.
 */
import { expect } from 'vitest';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { ImportedObservation, MemoryStore } from './store.js';

type Case = (name: string, body: () => Promise<void>) => void;

const limits = { maxEntries: 100, maxTotalBytes: 100_000 };
const at = (tenantId: string, conversationId: string, agentId = 'agent') => ({ tenantId, conversationId, agentId });

/** Registers the cases with `test`, each run against the store `current()` returns. */
export function inspectionCases(test: Case, current: () => MemoryStore): void {
  const importInto = async (
    scope: Scope,
    observations: ImportedObservation[],
    operationId = `import-${Math.random()}`,
  ) =>
    current().importObservations?.({
      scope,
      memoryId: memoryIdOf(scope),
      observations,
      runId: 'run',
      toolCallId: 'tool',
      operationId,
    });
  const note = (content: string, tokenCount = 4, importance: number | null = 0.5): ImportedObservation => ({
    content,
    tokenCount,
    importance,
  });

  test('lists a tenant scopes in id order, in pages, with counts, never another tenant', async () => {
    const store = current();
    const names = ['b', 'a', 'c', 'a'].map((conversation, index) => at('t1', conversation, `agent-${index}`));
    for (const scope of names) await importInto(scope, [note(`fact of ${scope.conversationId}`)]);
    await importInto(at('t2', 'a'), [note('other tenant')]);
    const wm = at('t1', 'wm-only');
    await store.setWorkingMemoryEntry({ scope: wm, memoryId: memoryIdOf(wm), key: 'k', valueJson: '1', limits });

    const first = await store.listScopes({ tenantId: 't1', limit: 2 });
    expect(first.map((item) => `${item.scope.conversationId}/${item.scope.agentId}`)).toEqual([
      'a/agent-1',
      'a/agent-3',
    ]);
    const last = first.at(-1)?.scope as Scope;
    const rest = await store.listScopes({ tenantId: 't1', limit: 10, after: last });
    expect(rest.map((item) => item.scope.conversationId)).toEqual(['b', 'c', 'wm-only']);
    const wmItem = rest.at(-1);
    expect(wmItem).toMatchObject({ observationCount: 0, workingMemoryEntries: 1, enabled: null, pendingOperations: 0 });
    expect(rest[0]).toMatchObject({ observationCount: 1, workingMemoryEntries: 0, deadOperations: 0 });
    expect(Number.isNaN(Date.parse(wmItem?.lastActivityAt ?? ''))).toBe(false);
    expect((await store.listScopes({ tenantId: 't2', limit: 10 })).map((item) => item.scope.tenantId)).toEqual(['t2']);
    expect(await store.listScopes({ tenantId: 'nobody', limit: 10 })).toEqual([]);
  });

  test('filters listed scopes by words of their ids and by the enabled flag', async () => {
    const store = current();
    const support = at('t1', 'Support-Chat', 'Helper');
    const sales = at('t1', 'sales_100%', 'bot');
    for (const scope of [support, sales]) await importInto(scope, [note('x')]);
    await store.updateSettings({
      scope: sales,
      memoryId: memoryIdOf(sales),
      enabled: true,
      runId: 'r',
      toolCallId: 't',
      operationId: 'enable-sales',
    });
    const ids = async (query: Omit<Parameters<MemoryStore['listScopes']>[0], 'tenantId' | 'limit'>) =>
      (await store.listScopes({ tenantId: 't1', limit: 10, ...query })).map((item) => item.scope.conversationId);
    expect(await ids({ words: ['support'] })).toEqual(['Support-Chat']);
    expect(await ids({ words: ['chat', 'HELP'] })).toEqual(['Support-Chat']);
    expect(await ids({ words: ['chat', 'bot'] })).toEqual([]);
    // LIKE wildcards in a word are literal characters.
    expect(await ids({ words: ['100%'] })).toEqual(['sales_100%']);
    expect(await ids({ words: ['s_1'] })).toEqual(['sales_100%']);
    expect(await ids({ words: ['%'] })).toEqual(['sales_100%']);
    expect(await ids({ enabled: { value: true, whenUnset: false } })).toEqual(['sales_100%']);
    expect(await ids({ enabled: { value: false, whenUnset: false } })).toEqual(['Support-Chat']);
    expect(await ids({ enabled: { value: true, whenUnset: true } })).toEqual(['Support-Chat', 'sales_100%']);
  });

  test('pages observations newest first, filtered by every word, ignoring case', async () => {
    const store = current();
    const scope = at('t1', 'c');
    await importInto(scope, [note('User likes Green tea'), note('user lives in Oslo'), note('GREEN is the theme')]);
    const memoryId = memoryIdOf(scope);
    const page = await store.findObservations(memoryId, { limit: 2 });
    expect(page.map((observation) => observation.seq)).toEqual([3, 2]);
    expect((await store.findObservations(memoryId, { limit: 2, beforeSeq: 2 })).map((item) => item.seq)).toEqual([1]);
    const green = await store.findObservations(memoryId, { limit: 10, words: ['green'] });
    expect(green.map((observation) => observation.seq)).toEqual([3, 1]);
    expect((await store.findObservations(memoryId, { limit: 10, words: ['green', 'tea'] })).length).toBe(1);
    expect(await store.findObservations(memoryId, { limit: 10, words: ['coffee'] })).toEqual([]);
    expect(await store.findObservations(memoryIdOf(at('t2', 'c')), { limit: 10 })).toEqual([]);
  });

  test('folds case in observation searches as JavaScript does, beyond ASCII, on every backend', async () => {
    const store = current();
    const scope = at('t1', 'c');
    await importInto(scope, [note('ÉCOLE in ΟΔΟΣ street'), note('Visited İSTANBUL'), note('plain text')]);
    const memoryId = memoryIdOf(scope);
    const seqs = async (...words: string[]) =>
      (await store.findObservations(memoryId, { limit: 10, words })).map((observation) => observation.seq);
    expect(await seqs('école')).toEqual([1]);
    expect(await seqs('ÉCOLE')).toEqual([1]);
    // JavaScript lowers a final capital sigma to ς, and İ to i with a combining dot.
    expect(await seqs('ΟΔΟΣ'.toLowerCase())).toEqual([1]);
    expect(await seqs('\u03bf\u03b4\u03bf\u03c3 street')).toEqual([]);
    expect(await seqs('İSTANBUL'.toLowerCase())).toEqual([2]);
  });

  test('folds case in scope searches as observation searches do, beyond ASCII, on every backend', async () => {
    const store = current();
    for (const scope of [at('t1', 'ÉTÉ'), at('t1', 'ΟΔΟΣ'), at('t1', 'plain', 'İSTANBUL-agent')])
      await importInto(scope, [note('x')]);
    const ids = async (...words: string[]) =>
      (await store.listScopes({ tenantId: 't1', limit: 10, words })).map((item) => item.scope.conversationId);
    expect(await ids('été')).toEqual(['ÉTÉ']);
    expect(await ids('ΟΔΟΣ'.toLowerCase())).toEqual(['ΟΔΟΣ']);
    expect(await ids('\u03bf\u03b4\u03bf\u03c3')).toEqual([]);
    // A word matches the agent id as well as the conversation id.
    expect(await ids('İSTANBUL'.toLowerCase())).toEqual(['plain']);
  });

  test('replaces one observation, keeping the totals and logging the correction without its text', async () => {
    const store = current();
    const scope = at('t1', 'c');
    const memoryId = memoryIdOf(scope);
    await importInto(scope, [note('lives in Oslo', 5, 0.7), note('likes tea', 3, 0.4)]);
    const before = await store.getRecord(memoryId);
    const result = await store.correctObservation({
      scope,
      memoryId,
      seq: 1,
      change: { kind: 'replace', content: 'lives in Bergen', tokenCount: 6 },
      runId: 'run',
      toolCallId: 'tool',
      operationId: 'fix-1',
    });
    expect(result?.observation).toMatchObject({ seq: 1, content: 'lives in Bergen', tokenCount: 6, importance: 0.7 });
    expect(result?.record.activeObservationTokens).toBe((before?.activeObservationTokens ?? 0) + 1);
    expect(result?.record.observationCount).toBe(2);
    expect(result?.record.correctionCount).toBe(1);
    expect(result?.record.stateVersion).toBeGreaterThan(before?.stateVersion ?? 0);
    const stored = await store.listObservations(memoryId);
    expect(stored.map((observation) => observation.content)).toEqual(['lives in Bergen', 'likes tea']);
    const operations = await store.listOperations(memoryId);
    const logged = operations.find((operation) => operation.operationId === 'fix-1');
    expect(logged).toMatchObject({ operationType: 'correct', status: 'applied' });
    expect(JSON.stringify(logged?.payload)).not.toContain('Oslo');
    expect(JSON.stringify(logged?.payload)).not.toContain('Bergen');
  });

  test('deletes one observation; an unknown seq changes nothing', async () => {
    const store = current();
    const scope = at('t1', 'c');
    const memoryId = memoryIdOf(scope);
    await importInto(scope, [note('a', 5), note('b', 3), note('c', 2)]);
    const deleted = await store.correctObservation({
      scope,
      memoryId,
      seq: 3,
      change: { kind: 'delete' },
      runId: 'run',
      toolCallId: 'tool',
      operationId: 'delete-3',
    });
    expect(deleted?.observation).toBeNull();
    expect(deleted?.record).toMatchObject({ observationCount: 2, activeObservationTokens: 8, lastObservationSeq: 3 });
    expect((await store.listObservations(memoryId)).map((observation) => observation.seq)).toEqual([1, 2]);
    const version = (await store.getRecord(memoryId))?.stateVersion;
    const missing = await store.correctObservation({
      scope,
      memoryId,
      seq: 3,
      change: { kind: 'delete' },
      runId: 'run',
      toolCallId: 'tool',
      operationId: 'delete-again',
    });
    expect(missing).toBeUndefined();
    expect((await store.getRecord(memoryId))?.stateVersion).toBe(version);
    // The next observation takes the next seq: a deleted seq is never reused.
    await importInto(scope, [note('d')]);
    expect((await store.listObservations(memoryId)).map((observation) => observation.seq)).toEqual([1, 2, 4]);
  });

  test('pages the operation log newest first, by status', async () => {
    const store = current();
    const scope = at('t1', 'c');
    const memoryId = memoryIdOf(scope);
    for (let index = 0; index < 3; index++) await importInto(scope, [note(`n${index}`)], `import-${index}`);
    await store.enqueueOperation({
      operationId: 'queued-1',
      scope,
      memoryId,
      operationType: 'observe',
      payload: {},
      runId: 'run',
      toolCallId: 'tool',
    });
    const page = await store.listOperationPage(memoryId, { limit: 2 });
    expect(page.map((operation) => operation.operationId)).toEqual(['queued-1', 'import-2']);
    const next = await store.listOperationPage(memoryId, { limit: 5, beforeSequence: page[1]?.scopeSequence });
    expect(next.map((operation) => operation.operationId)).toEqual(['import-1', 'import-0']);
    const queued = await store.listOperationPage(memoryId, { limit: 5, status: 'queued' });
    expect(queued.map((operation) => operation.operationId)).toEqual(['queued-1']);
  });
}
