/**
 * The conformance suite every `MemoryStore` adapter runs. Call it from the adapter's test
 * file; a skipped case must give its reason.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HarnessMemoryError } from '../core/errors.js';
import { createUlidGenerator } from '../core/ids.js';
import { parseReflection } from '../core/parse-reflection.js';
import { memoryIdOf } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import type { MemoryRecord } from '../core/observation.js';
import type { AppendAndClaimResult, MemoryStore, NewMessage, StoredWorkingMemoryEntry } from './store.js';
import { OUTDATED_REFLECTION_NOTE } from './correction-plan.js';
import { correctionCases } from './store-correction.suite.js';
import { inspectionCases } from './store-inspection.suite.js';
import { purgeCases } from './store-purge.suite.js';
import { retentionCases } from './store-retention.suite.js';
import { restoreCases } from './store-import.suite.js';

/** Options of {@link runStoreSuite}. */
export interface StoreSuiteOptions {
  name: string;
  create: () => Promise<MemoryStore> | MemoryStore;
  /** Called after each test with the store (already disposed by the suite). */
  cleanup?: () => Promise<void> | void;
  /** Test names to skip, each with the reason. */
  skip?: Readonly<Record<string, string>>;
  /**
   * Moves the clock the store was created with forward by `ms`. Without it, a test that needs
   * time to pass polls the store (its own clock, as leases use) until it has.
   */
  advanceClock?: (ms: number) => void;
}

const generateId = createUlidGenerator();
const scopeA: Scope = { tenantId: 'tenant-a', conversationId: 'conv-1', agentId: 'agent-x' };
const scopeB: Scope = { tenantId: 'tenant-b', conversationId: 'conv-1', agentId: 'agent-x' };
const idA = memoryIdOf(scopeA);
const idB = memoryIdOf(scopeB);

function message(key: string, content: string, tokenCount = 10): NewMessage {
  return { messageKey: key, role: 'user', name: '', toolCallId: '', content, tokenCount };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the shared store conformance tests. */
export function runStoreSuite(options: StoreSuiteOptions): void {
  describe(`store: ${options.name}`, () => {
    let store: MemoryStore;
    beforeEach(async () => {
      store = await options.create();
    });
    afterEach(async () => {
      await store.dispose();
      await options.cleanup?.();
    });
    const test = (name: string, body: () => Promise<void>): void => {
      const reason = options.skip?.[name];
      if (reason !== undefined) it.skip(`${name} (skipped: ${reason})`, body);
      else it(name, body);
    };

    /** Imports `count` observations `fact 1` … into scope A. */
    const importFacts = (count: number) =>
      store.importObservations!({
        scope: scopeA,
        memoryId: idA,
        observations: Array.from({ length: count }, (_, index) => ({
          content: `fact ${index + 1}`,
          importance: 0.5,
          tokenCount: 2,
        })),
        runId: 'r',
        toolCallId: 't',
        operationId: generateId('op'),
      });

    const enqueueObserve = (scope = scopeA) =>
      store.enqueueOperation({
        operationId: generateId('op'),
        scope,
        memoryId: memoryIdOf(scope),
        operationType: 'observe',
        payload: {},
        runId: 'run-1',
        toolCallId: 'system',
      });

    // Claims an observe of scope A and applies one observation through message seq 5.
    const observeFirstFive = async () => {
      await enqueueObserve();
      const claimed = await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      return store.completeObservation({
        operationId: claimed!.operationId,
        memoryId: idA,
        leaseOwner: 'w1',
        observations: [{ content: 'Five messages seen', importance: 0.5, tokenCount: 3 }],
        throughMessageSeq: 5,
        markerIds: { start: generateId('mk'), end: generateId('mk') },
      });
    };

    test('returns no record for a scope never written', async () => {
      expect(await store.getRecord(idA)).toBeUndefined();
      expect(await store.listObservations(idA)).toEqual([]);
      expect(await store.listWorkingMemoryEntries(idA)).toEqual([]);
    });

    test('creates a record that follows the defaults when messages arrive', async () => {
      const result = await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'hello')] });
      expect(result.inserted).toBe(1);
      expect(result.unobservedTokens).toBe(10);
      expect(result.record.enabled).toBeNull();
      expect(result.record.config).toEqual({});
      expect(result.record.scope).toEqual(scopeA);
      expect(result.record.lastMessageSeq).toBe(1);
      expect(result.record.observedThroughMessageSeq).toBe(0);
    });

    test('skips messages whose key it already holds', async () => {
      await store.appendMessages({
        scope: scopeA,
        memoryId: idA,
        messages: [message('id:1', 'a'), message('id:2', 'b')],
      });
      const again = await store.appendMessages({
        scope: scopeA,
        memoryId: idA,
        messages: [message('id:2', 'b'), message('id:3', 'c')],
      });
      expect(again.inserted).toBe(1);
      expect(again.unobservedTokens).toBe(30);
      const pending = await store.listUnobservedMessages(idA, 100);
      expect(pending.map((item) => [item.seq, item.messageKey, item.content])).toEqual([
        [1, 'id:1', 'a'],
        [2, 'id:2', 'b'],
        [3, 'id:3', 'c'],
      ]);
    });

    test('merges settings per field and logs the change as an applied operation', async () => {
      const first = await store.updateSettings({
        scope: scopeA,
        memoryId: idA,
        enabled: true,
        config: { observeMinTokens: 11 },
        runId: 'r',
        toolCallId: 't',
        operationId: generateId('op'),
      });
      const second = await store.updateSettings({
        scope: scopeA,
        memoryId: idA,
        enabled: false,
        config: { snippetMaxTokens: 22 },
        runId: 'r',
        toolCallId: 't',
        operationId: generateId('op'),
      });
      expect(first.enabled).toBe(true);
      expect(second.enabled).toBe(false);
      expect(second.config).toEqual({ observeMinTokens: 11, snippetMaxTokens: 22 });
      expect(second.stateVersion).toBeGreaterThan(first.stateVersion);
      const log = await store.listOperations(idA);
      expect(log.map((item) => [item.operationType, item.status, item.scopeSequence])).toEqual([
        ['enable', 'applied', 1],
        ['disable', 'applied', 2],
      ]);
      // The payload is wire JSON: snake_case keys, as the configuration and the API spell them.
      expect(log.map((item) => item.payload)).toEqual([
        { enabled: true, config: { observe_min_tokens: 11 } },
        { enabled: false, config: { snippet_max_tokens: 22 } },
      ]);
    });

    test('lists the observations after a seq, in order, however many follow it', async () => {
      await importFacts(150);
      const seqsAfter = async (afterSeq: number) =>
        (await store.listObservations(idA, { afterSeq })).map((item) => item.seq);
      const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index);
      expect(await seqsAfter(0)).toEqual(range(1, 150));
      expect(await seqsAfter(10)).toEqual(range(11, 150));
      expect(await seqsAfter(86)).toEqual(range(87, 150));
      expect(await seqsAfter(149)).toEqual([150]);
      expect(await seqsAfter(150)).toEqual([]);
      expect((await store.listObservations(idA, { afterSeq: 10 }))[0]?.content).toBe('fact 11');
    });

    test('lists the observations after every seq, gaps from deletions included', async () => {
      await importFacts(30);
      for (const seq of [1, 2, 9, 10, 11, 17, 30]) {
        await store.correctObservation({
          scope: scopeA,
          memoryId: idA,
          seq,
          change: { kind: 'delete' },
          runId: 'r',
          toolCallId: 't',
          operationId: generateId('op'),
        });
      }
      const all = (await store.listObservations(idA)).map((item) => item.seq);
      expect(all).toHaveLength(23);
      for (let afterSeq = -1; afterSeq <= 32; afterSeq++) {
        const after = (await store.listObservations(idA, { afterSeq })).map((item) => item.seq);
        expect(after, `after ${afterSeq}`).toEqual(all.filter((seq) => seq > afterSeq));
      }
    });

    test('lists the unobserved messages through every seq, before and after an apply', async () => {
      await store.appendMessages({
        scope: scopeA,
        memoryId: idA,
        messages: Array.from({ length: 12 }, (_, index) => message(`id:${index + 1}`, `m${index + 1}`)),
      });
      const through = async (throughSeq: number) =>
        (await store.listUnobservedMessages(idA, throughSeq)).map((item) => item.seq);
      const range = (from: number, to: number) =>
        Array.from({ length: Math.max(0, to - from + 1) }, (_, index) => from + index);
      for (let throughSeq = 0; throughSeq <= 13; throughSeq++)
        expect(await through(throughSeq), `through ${throughSeq}`).toEqual(range(1, Math.min(throughSeq, 12)));
      await observeFirstFive();
      for (let throughSeq = 0; throughSeq <= 13; throughSeq++)
        expect(await through(throughSeq), `through ${throughSeq}`).toEqual(range(6, Math.min(throughSeq, 12)));
    });

    test('keeps the unobserved tokens on the record, and lists only the oldest messages within a token limit', async () => {
      // Tokens 1, 2, …, 12: seq n holds n tokens.
      await store.appendMessages({
        scope: scopeA,
        memoryId: idA,
        messages: Array.from({ length: 12 }, (_, index) => message(`id:${index + 1}`, `m${index + 1}`, index + 1)),
      });
      expect((await store.getRecord(idA))?.unobservedMessageTokens).toBe(78);
      const within = async (maxTokens: number, throughSeq = 12) =>
        (await store.listUnobservedMessages(idA, throughSeq, { maxTokens })).map((item) => item.seq);
      // Each message whose predecessors hold fewer than the limit; always the first.
      expect(await within(0)).toEqual([1]);
      expect(await within(1)).toEqual([1]);
      expect(await within(2)).toEqual([1, 2]);
      expect(await within(3)).toEqual([1, 2]);
      expect(await within(4)).toEqual([1, 2, 3]);
      expect(await within(10_000)).toEqual(Array.from({ length: 12 }, (_, index) => index + 1));
      expect(await within(10_000, 5)).toEqual([1, 2, 3, 4, 5]);
      const applied = await observeFirstFive();
      expect(applied.record.unobservedMessageTokens).toBe(78 - 15);
      expect(await within(13)).toEqual([6, 7]);
      expect(await within(14)).toEqual([6, 7, 8]);
      const more = await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:13', 'm', 7)] });
      expect(more.record.unobservedMessageTokens).toBe(70);
      expect(more.unobservedTokens).toBe(70);
      expect((await store.getRecord(idA))?.unobservedMessageTokens).toBe(70);
    });

    test('imports observations after the last seq, in the order given, logged as an applied import', async () => {
      const importInto = (
        observations: Parameters<NonNullable<MemoryStore['importObservations']>>[0]['observations'],
      ) =>
        store.importObservations!({
          scope: scopeA,
          memoryId: idA,
          observations,
          runId: 'r',
          toolCallId: 't',
          operationId: generateId('op'),
        });
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('m1', 'hello')] });
      const first = await importInto([
        { content: 'likes tea', importance: 0.8, tokenCount: 3, createdAt: '2025-01-02T03:04:05.000Z' },
        { content: 'lives in Lyon', importance: null, tokenCount: 4, source: 'client' },
      ]);
      const second = await importInto([{ content: 'works nights', importance: 0.5, tokenCount: 2 }]);
      expect(first.observations.map((item) => [item.seq, item.content, item.source])).toEqual([
        [1, 'likes tea', 'import'],
        [2, 'lives in Lyon', 'client'],
      ]);
      expect(first.observations[0]?.createdAt).toBe('2025-01-02T03:04:05.000Z');
      expect(second.observations.map((item) => item.seq)).toEqual([3]);
      expect(second.record).toMatchObject({
        observationCount: 3,
        lastObservationSeq: 3,
        activeObservationTokens: 9,
        unreflectedObservationTokens: 9,
        observedThroughMessageSeq: 0,
      });
      expect(second.record.stateVersion).toBeGreaterThan(first.record.stateVersion);
      expect((await store.listObservations(idA)).map((item) => item.content)).toEqual([
        'likes tea',
        'lives in Lyon',
        'works nights',
      ]);
      expect((await store.listUnobservedMessages(idA, 10)).map((item) => item.messageKey)).toEqual(['m1']);
      expect((await store.listOperations(idA)).map((item) => [item.operationType, item.status, item.payload])).toEqual([
        ['import', 'applied', { count: 2 }],
        ['import', 'applied', { count: 1 }],
      ]);
      expect(await store.listObservations(idB)).toEqual([]);
    });

    test('numbers operations per scope without gaps or repeats, even when enqueued concurrently', async () => {
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
      const made = await Promise.all(Array.from({ length: 40 }, () => enqueueObserve()));
      const other = await enqueueObserve(scopeB);
      expect(made.map((item) => item.scopeSequence).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 40 }, (_, index) => index + 1),
      );
      expect(other.scopeSequence).toBe(1);
      expect(made.every((item) => item.status === 'queued' && item.attempt === 0)).toBe(true);
    });

    test('claims the oldest queued operation and runs one operation per scope at a time', async () => {
      const first = await enqueueObserve();
      await enqueueObserve();
      const other = await enqueueObserve(scopeB);
      const claimed = await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      expect(claimed?.operationId).toBe(first.operationId);
      expect(claimed?.status).toBe('processing');
      expect(claimed?.attempt).toBe(1);
      expect(claimed?.leaseOwner).toBe('w1');
      expect(await store.claimOperation({ memoryId: idA, leaseOwner: 'w2', leaseMs: 60_000 })).toBeUndefined();
      const any = await store.claimOperation({ leaseOwner: 'w2', leaseMs: 60_000 });
      expect(any?.operationId).toBe(other.operationId);
      expect(await store.countPendingOperations(idA)).toBe(2);
      expect(await store.countPendingOperations()).toBe(3);
    });

    test('applies observations atomically: seqs, cursor, markers and status', async () => {
      await store.appendMessages({
        scope: scopeA,
        memoryId: idA,
        messages: [message('id:1', 'a'), message('id:2', 'b'), message('id:3', 'c')],
      });
      await enqueueObserve();
      const claimed = await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      const lease = { operationId: claimed!.operationId, memoryId: claimed!.memoryId, leaseOwner: 'w1' };
      const result = await store.completeObservation({
        ...lease,
        observations: [
          { content: 'User prefers tabs', importance: 0.9, tokenCount: 5 },
          { content: 'Project uses Go', importance: null, tokenCount: 4 },
        ],
        throughMessageSeq: 2,
        markerIds: { start: generateId('mk'), end: generateId('mk') },
      });
      expect(
        result.observations.map((item) => [item.seq, item.importance, item.sourceStartSeq, item.sourceEndSeq]),
      ).toEqual([
        [1, 0.9, 1, 2],
        [2, null, 1, 2],
      ]);
      expect(result.record.observedThroughMessageSeq).toBe(2);
      expect(result.record.observationCount).toBe(2);
      expect(result.record.activeObservationTokens).toBe(9);
      expect(result.record.unreflectedObservationTokens).toBe(9);
      expect((await store.listUnobservedMessages(idA, 10)).map((item) => item.seq)).toEqual([3]);
      expect((await store.listMarkers(idA)).map((item) => item.markerType)).toEqual([
        'observation_start',
        'observation_end',
      ]);
      expect((await store.listOperations(idA))[0]?.status).toBe('applied');
      expect(await store.listObservations(idA, { afterSeq: 1 })).toHaveLength(1);
      expect(await store.countPendingOperations(idA)).toBe(0);
    });

    test('passes messages over with a note: no observation, the cursor past them, the note on the applied operation', async () => {
      const messages = [message('id:1', 'a', 5), message('id:2', 'b', 15)];
      // Claimed as an observe call claims it: through the fast path where the adapter has one.
      const claimed = store.appendMessagesAndClaim
        ? appended(
            await store.appendMessagesAndClaim({
              scope: scopeA,
              memoryId: idA,
              messages,
              settings: observeFrom(1),
              operation: { operationId: 'op-note', payload: {}, runId: 'r', toolCallId: 't' },
              leaseOwner: 'w1',
              leaseMs: 60_000,
            }),
          ).claimed
        : await (async () => {
            await store.appendMessages({ scope: scopeA, memoryId: idA, messages });
            await enqueueObserve();
            return store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
          })();
      const note = 'skipped message 1 (id id:1): the model refused it';
      const result = await store.completeObservation({
        operationId: claimed!.operationId,
        memoryId: idA,
        leaseOwner: 'w1',
        observations: [],
        throughMessageSeq: 1,
        markerIds: { start: generateId('mk'), end: generateId('mk') },
        note,
      });
      expect(result.observations).toEqual([]);
      expect(result.record).toMatchObject({
        observedThroughMessageSeq: 1,
        observationCount: 0,
        unobservedMessageTokens: 15,
      });
      expect((await store.listUnobservedMessages(idA, 10)).map((item) => item.seq)).toEqual([2]);
      const operation = (await store.listOperations(idA)).find((item) => item.operationId === claimed!.operationId);
      expect(operation).toMatchObject({ status: 'applied', errorText: note });
    });

    test('counts the tokens after the cursor through appends, repeated keys and an apply that leaves a tail', async () => {
      const append = async (...messages: NewMessage[]) =>
        (await store.appendMessages({ scope: scopeA, memoryId: idA, messages })).unobservedTokens;
      expect(await append(message('id:1', 'a', 5), message('id:2', 'b', 7), message('id:3', 'c', 11))).toBe(23);
      expect(await append(message('id:2', 'b', 7), message('id:4', 'd', 13), message('id:4', 'd', 13))).toBe(36);
      await enqueueObserve();
      const claimed = await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      // Arrives while the observer works: it stays unobserved after the apply.
      expect(await append(message('id:5', 'e', 17))).toBe(53);
      const lease = { operationId: claimed!.operationId, memoryId: idA, leaseOwner: 'w1' };
      await store.completeObservation({
        ...lease,
        observations: [{ content: 'Noted', importance: 0.5, tokenCount: 2 }],
        throughMessageSeq: 2,
        markerIds: { start: generateId('mk'), end: generateId('mk') },
      });
      expect(await append(message('id:6', 'f', 19))).toBe(11 + 13 + 17 + 19);
      if (store.appendMessagesAndClaim) {
        const fast = await store.appendMessagesAndClaim({
          scope: scopeA,
          memoryId: idA,
          messages: [message('id:7', 'g', 23), message('id:6', 'f', 19)],
          settings: () => ({ enabled: true, minTokens: 1_000_000 }),
          operation: { operationId: 'op-tail', payload: {}, runId: 'r', toolCallId: 't' },
          leaseOwner: 'w',
          leaseMs: 60_000,
        });
        expect(fast.disabled ? undefined : fast.unobservedTokens).toBe(83);
      }
      const sum = (await store.listUnobservedMessages(idA, 100)).reduce((total, item) => total + item.tokenCount, 0);
      expect(await append()).toBe(sum);
    });

    test('refuses to apply for a worker that does not hold the lease', async () => {
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
      await enqueueObserve();
      const claimed = await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      const attempt = store.completeObservation({
        operationId: claimed!.operationId,
        memoryId: claimed!.memoryId,
        leaseOwner: 'intruder',
        observations: [{ content: 'x', importance: 1, tokenCount: 1 }],
        throughMessageSeq: 1,
        markerIds: { start: generateId('mk'), end: generateId('mk') },
      });
      await expect(attempt).rejects.toSatisfy(
        (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === 'OPERATION_LEASE_LOST',
      );
      expect(await store.listObservations(idA)).toEqual([]);
      expect(await store.listMarkers(idA)).toEqual([]);
    });

    test('refuses to apply after the lease expired and requeues the stale operation', async () => {
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
      await enqueueObserve();
      const claimed = await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 1 });
      await sleep(30);
      await expect(
        store.completeObservation({
          operationId: claimed!.operationId,
          memoryId: claimed!.memoryId,
          leaseOwner: 'w1',
          observations: [{ content: 'x', importance: 1, tokenCount: 1 }],
          throughMessageSeq: 1,
          markerIds: { start: generateId('mk'), end: generateId('mk') },
        }),
      ).rejects.toSatisfy(
        (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === 'OPERATION_LEASE_LOST',
      );
      expect(await store.requeueStaleOperations({ graceSeconds: 0 })).toBe(1);
      const again = await store.claimOperation({ memoryId: idA, leaseOwner: 'w2', leaseMs: 60_000 });
      expect(again?.operationId).toBe(claimed!.operationId);
      expect(again?.attempt).toBe(2);
      expect(await store.listObservations(idA)).toEqual([]);
    });

    test('keeps a recently stale operation in processing when the grace period has not passed', async () => {
      await enqueueObserve();
      await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 1 });
      await sleep(20);
      expect(await store.requeueStaleOperations({ graceSeconds: 300 })).toBe(0);
    });

    test("a scope's claim takes over its processing operation once the lease expired, and only then", async () => {
      const stuck = await enqueueObserve();
      const behind = await enqueueObserve();
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
      expect((await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 1 }))?.operationId).toBe(
        stuck.operationId,
      );
      // Live leases are never taken: scope B's holder keeps its operation.
      await enqueueObserve(scopeB);
      await store.claimOperation({ memoryId: idB, leaseOwner: 'w1', leaseMs: 600_000 });
      expect(await store.claimOperation({ memoryId: idB, leaseOwner: 'w2', leaseMs: 60_000 })).toBeUndefined();
      // Polled until the 1 ms lease has expired by the store's clock; the deadline is only for liveness.
      let again = await store.claimOperation({ memoryId: idA, leaseOwner: 'w2', leaseMs: 60_000 });
      for (const deadline = Date.now() + 20_000; again === undefined && Date.now() < deadline;) {
        await sleep(5);
        again = await store.claimOperation({ memoryId: idA, leaseOwner: 'w2', leaseMs: 60_000 });
      }
      expect(again).toMatchObject({
        operationId: stuck.operationId,
        status: 'processing',
        attempt: 2,
        leaseOwner: 'w2',
        errorText: 'requeued after stale processing operation',
      });
      expect(Date.parse(again!.leaseExpiresAt!)).toBeGreaterThan(Date.now() + 30_000);
      // Taken over once: the new lease holds, the one behind still waits, the old holder cannot apply.
      expect(await store.claimOperation({ memoryId: idA, leaseOwner: 'w3', leaseMs: 60_000 })).toBeUndefined();
      const apply = (leaseOwner: string) =>
        store.completeObservation({
          operationId: stuck.operationId,
          memoryId: idA,
          leaseOwner,
          observations: [{ content: 'x', importance: 1, tokenCount: 1 }],
          throughMessageSeq: 1,
          markerIds: { start: generateId('mk'), end: generateId('mk') },
        });
      await expect(apply('w1')).rejects.toSatisfy(
        (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === 'OPERATION_LEASE_LOST',
      );
      expect((await apply('w2')).observations).toHaveLength(1);
      expect((await store.claimOperation({ memoryId: idA, leaseOwner: 'w3', leaseMs: 60_000 }))?.operationId).toBe(
        behind.operationId,
      );
      expect(await store.countPendingOperations(idB)).toBe(1);
    });

    test('requeues a failed attempt with a delay, and fails it for good without one', async () => {
      // A delay no machine outlasts between two calls: the operation is surely not claimable yet.
      await enqueueObserve();
      const claimed = await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      const retried = await store.failOperation({
        operationId: claimed!.operationId,
        memoryId: claimed!.memoryId,
        leaseOwner: 'w1',
        errorText: 'boom',
        retryAfterMs: 600_000,
      });
      expect(retried.status).toBe('queued');
      expect(retried.errorText).toBe('boom');
      expect(await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 })).toBeUndefined();
      expect(await store.countPendingOperations(idA)).toBe(1);
      // A short delay: claimable once it has passed (polled; the deadline is only for liveness).
      await enqueueObserve(scopeB);
      const first = await store.claimOperation({ memoryId: idB, leaseOwner: 'w1', leaseMs: 60_000 });
      await store.failOperation({
        operationId: first!.operationId,
        memoryId: idB,
        leaseOwner: 'w1',
        errorText: 'boom',
        retryAfterMs: 20,
      });
      let second = await store.claimOperation({ memoryId: idB, leaseOwner: 'w1', leaseMs: 60_000 });
      for (const deadline = Date.now() + 20_000; second === undefined && Date.now() < deadline;) {
        await sleep(10);
        second = await store.claimOperation({ memoryId: idB, leaseOwner: 'w1', leaseMs: 60_000 });
      }
      expect(second?.attempt).toBe(2);
      const failed = await store.failOperation({
        operationId: second!.operationId,
        memoryId: second!.memoryId,
        leaseOwner: 'w1',
        errorText: 'final',
      });
      expect(failed.status).toBe('failed');
      expect(await store.countPendingOperations(idB)).toBe(0);
    });

    test('takes an attempt back when the work never started (notAttempted)', async () => {
      await enqueueObserve();
      const lease = { memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 };
      const claim = async () => {
        let claimed = await store.claimOperation(lease);
        for (const deadline = Date.now() + 20_000; claimed === undefined && Date.now() < deadline;) {
          await sleep(5);
          claimed = await store.claimOperation(lease);
        }
        return claimed!;
      };
      const fail = (operationId: string, notAttempted: boolean) =>
        store.failOperation({
          operationId,
          memoryId: idA,
          leaseOwner: 'w1',
          errorText: 'x',
          retryAfterMs: 1,
          notAttempted,
        });
      let claimed = await claim();
      expect(claimed.attempt).toBe(1);
      for (let round = 0; round < 3; round++) {
        const waited = await fail(claimed.operationId, true);
        expect(waited).toMatchObject({ status: 'queued', attempt: 0 });
        claimed = await claim();
        expect(claimed.attempt).toBe(1);
      }
      // A real attempt still counts.
      expect((await fail(claimed.operationId, false)).attempt).toBe(1);
      expect((await claim()).attempt).toBe(2);
    });

    test('finds a claimable scope behind a long queue whose first operation waits', async () => {
      // Scope A: 80 operations behind a first one that waits out a retry delay; none of them is
      // claimable, and they are the oldest queued. Scope B's one operation comes after them all.
      for (let index = 0; index < 80; index++) await enqueueObserve();
      const head = await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      await store.failOperation({
        operationId: head!.operationId,
        memoryId: idA,
        leaseOwner: 'w1',
        errorText: 'waits',
        retryAfterMs: 600_000,
      });
      expect(await store.claimOperation({ leaseOwner: 'w1', leaseMs: 60_000 })).toBeUndefined();
      const other = await enqueueObserve(scopeB);
      const claimed = await store.claimOperation({ leaseOwner: 'w1', leaseMs: 60_000 });
      expect(claimed?.operationId).toBe(other.operationId);
      expect(await store.claimOperation({ leaseOwner: 'w1', leaseMs: 60_000 })).toBeUndefined();
    });

    test('parks a claimed operation as dead under its lease; it no longer blocks its scope', async () => {
      const first = await enqueueObserve();
      const second = await enqueueObserve();
      const claimed = await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      expect(claimed?.operationId).toBe(first.operationId);
      await expect(
        store.markOperationDead({
          operationId: first.operationId,
          memoryId: idA,
          leaseOwner: 'intruder',
          errorText: 'x',
        }),
      ).rejects.toSatisfy(
        (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === 'OPERATION_LEASE_LOST',
      );
      const dead = await store.markOperationDead({
        operationId: first.operationId,
        memoryId: idA,
        leaseOwner: 'w1',
        errorText: 'gave up after 5 attempts',
      });
      expect(dead).toMatchObject({
        operationId: first.operationId,
        status: 'dead',
        errorText: 'gave up after 5 attempts',
        leaseOwner: null,
        attempt: 1,
      });
      expect(await store.countDeadOperations(idA)).toBe(1);
      expect(await store.countDeadOperations(idB)).toBe(0);
      expect(await store.countPendingOperations(idA)).toBe(1);
      // The lease ended with it: the worker can neither apply nor fail it afterwards.
      await expect(
        store.failOperation({ operationId: first.operationId, memoryId: idA, leaseOwner: 'w1', errorText: 'late' }),
      ).rejects.toSatisfy(
        (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === 'OPERATION_LEASE_LOST',
      );
      expect(await store.requeueStaleOperations({ graceSeconds: 0 })).toBe(0);
      const next = await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      expect(next?.operationId).toBe(second.operationId);
      expect((await store.listOperations(idA)).map((item) => [item.operationId, item.status])).toEqual([
        [first.operationId, 'dead'],
        [second.operationId, 'processing'],
      ]);
    });

    test('lists the open operations of a scope (queued, processing, dead) in order, without the applied ones', async () => {
      const lease = { memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 };
      const done = await enqueueObserve();
      await store.claimOperation(lease);
      await store.completeWithoutChange({ operationId: done.operationId, memoryId: idA, leaseOwner: 'w1', note: 'x' });
      const dead = await enqueueObserve();
      await store.claimOperation(lease);
      await store.markOperationDead({ operationId: dead.operationId, memoryId: idA, leaseOwner: 'w1', errorText: 'x' });
      const processing = await enqueueObserve();
      await store.claimOperation(lease);
      const queued = await enqueueObserve();
      await enqueueObserve(scopeB);
      expect(store.listOpenOperations).toBeTypeOf('function');
      expect((await store.listOpenOperations!(idA)).map((item) => [item.operationId, item.status])).toEqual([
        [dead.operationId, 'dead'],
        [processing.operationId, 'processing'],
        [queued.operationId, 'queued'],
      ]);
      expect(await store.listOpenOperations!(memoryIdOf({ ...scopeA, agentId: 'nobody' }))).toEqual([]);
    });

    test("retries a dead operation by hand at the end of its scope's log, with its attempts reset", async () => {
      const first = await enqueueObserve();
      const second = await enqueueObserve();
      await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      await store.markOperationDead({
        operationId: first.operationId,
        memoryId: idA,
        leaseOwner: 'w1',
        errorText: 'poison',
      });
      await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      // Only a dead operation of that scope can be retried.
      expect(await store.retryDeadOperation({ memoryId: idA, operationId: second.operationId })).toBeUndefined();
      expect(await store.retryDeadOperation({ memoryId: idA, operationId: 'op-unknown' })).toBeUndefined();
      expect(await store.retryDeadOperation({ memoryId: idB, operationId: first.operationId })).toBeUndefined();
      const retried = await store.retryDeadOperation({ memoryId: idA, operationId: first.operationId });
      expect(retried).toMatchObject({
        operationId: first.operationId,
        status: 'queued',
        attempt: 0,
        scopeSequence: 3,
        errorText: 'poison',
        leaseOwner: null,
      });
      expect(await store.countDeadOperations(idA)).toBe(0);
      expect(await store.retryDeadOperation({ memoryId: idA, operationId: first.operationId })).toBeUndefined();
      // It waits behind the operation now processing, then runs like any queued one.
      expect(await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 })).toBeUndefined();
      await store.completeWithoutChange({
        operationId: second.operationId,
        memoryId: idA,
        leaseOwner: 'w1',
        note: 'done',
      });
      const again = await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      expect(again).toMatchObject({ operationId: first.operationId, attempt: 1 });
      const later = await enqueueObserve();
      expect(later.scopeSequence).toBe(4);
      expect((await store.listOperations(idA)).map((item) => [item.scopeSequence, item.operationId])).toEqual([
        [2, second.operationId],
        [3, first.operationId],
        [4, later.operationId],
      ]);
      // The last operation of its log, retried, still moves past its own place.
      await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      await store.completeWithoutChange({
        operationId: first.operationId,
        memoryId: idA,
        leaseOwner: 'w1',
        note: 'done',
      });
      await store.claimOperation({ memoryId: idA, leaseOwner: 'w1', leaseMs: 60_000 });
      await store.markOperationDead({
        operationId: later.operationId,
        memoryId: idA,
        leaseOwner: 'w1',
        errorText: 'poison',
      });
      expect((await store.retryDeadOperation({ memoryId: idA, operationId: later.operationId }))?.scopeSequence).toBe(
        5,
      );
      await store.forget(idA);
      expect(await store.countDeadOperations(idA)).toBe(0);
    });

    test('stores a reflection with its parsed form and recounts unreflected tokens', async () => {
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
      await enqueueObserve();
      const first = await store.claimOperation({ memoryId: idA, leaseOwner: 'w', leaseMs: 60_000 });
      await store.completeObservation({
        operationId: first!.operationId,
        memoryId: first!.memoryId,
        leaseOwner: 'w',
        observations: [
          { content: 'one', importance: 0.5, tokenCount: 3 },
          { content: 'two', importance: 0.5, tokenCount: 7 },
        ],
        throughMessageSeq: 1,
        markerIds: { start: generateId('mk'), end: generateId('mk') },
      });
      await store.enqueueOperation({
        operationId: generateId('op'),
        scope: scopeA,
        memoryId: idA,
        operationType: 'reflect_now',
        payload: {},
        runId: 'r',
        toolCallId: 't',
      });
      const reflect = await store.claimOperation({ memoryId: idA, leaseOwner: 'w', leaseMs: 60_000 });
      const raw = 'SUMMARY:\nshort\n\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: changed\n\nCONTRADICTIONS:\n';
      const record = await store.completeReflection({
        operationId: reflect!.operationId,
        memoryId: reflect!.memoryId,
        leaseOwner: 'w',
        reflection: {
          raw,
          structured: parseReflection(raw),
          tokenCount: 9,
          throughSeq: 1,
          createdAt: new Date().toISOString(),
        },
        markerId: generateId('mk'),
      });
      expect(record.unreflectedObservationTokens).toBe(7);
      const reloaded = await store.getRecord(idA);
      expect(reloaded?.reflection?.raw).toBe(raw);
      expect(reloaded?.reflection?.throughSeq).toBe(1);
      expect(reloaded?.reflection?.structured.supersessions).toEqual([{ newerSeq: 2, olderSeq: 1, reason: 'changed' }]);
      expect((await store.listMarkers(idA)).at(-1)?.markerType).toBe('reflection_end');
    });

    const observeAs = async (
      observations: Parameters<MemoryStore['completeObservation']>[0]['observations'],
      throughMessageSeq: number,
    ) => {
      await enqueueObserve();
      const claimed = await store.claimOperation({ memoryId: idA, leaseOwner: 'w', leaseMs: 60_000 });
      return store.completeObservation({
        operationId: claimed!.operationId,
        memoryId: claimed!.memoryId,
        leaseOwner: 'w',
        observations,
        throughMessageSeq,
        markerIds: { start: generateId('mk'), end: generateId('mk') },
      });
    };
    const reflectAs = async (
      raw: string,
      throughSeq: number,
      citableSeqs?: readonly number[],
      correctionCount?: number,
    ) => {
      const operation = await store.enqueueOperation({
        operationId: generateId('op'),
        scope: scopeA,
        memoryId: idA,
        operationType: 'reflect_now',
        payload: {},
        runId: 'r',
        toolCallId: 't',
      });
      const claimed = await store.claimOperation({ memoryId: idA, leaseOwner: 'w', leaseMs: 60_000 });
      const record = await store.completeReflection({
        operationId: claimed!.operationId,
        memoryId: claimed!.memoryId,
        leaseOwner: 'w',
        reflection: {
          raw,
          structured: parseReflection(raw),
          tokenCount: 9,
          throughSeq,
          createdAt: new Date().toISOString(),
        },
        markerId: generateId('mk'),
        ...(citableSeqs === undefined ? {} : { citableSeqs }),
        ...(correctionCount === undefined ? {} : { correctionCount }),
      });
      return { record, operationId: operation.operationId };
    };
    const correctA = (seq: number, change: Parameters<MemoryStore['correctObservation']>[0]['change']) =>
      store.correctObservation({
        scope: scopeA,
        memoryId: idA,
        seq,
        change,
        runId: 'r',
        toolCallId: 't',
        operationId: generateId('op'),
      });

    test("stores each observation's provenance: its source and the message seqs it cites", async () => {
      await store.appendMessages({
        scope: scopeA,
        memoryId: idA,
        messages: [message('id:1', 'a'), message('id:2', 'b'), message('id:3', 'c')],
      });
      const { observations } = await observeAs(
        [
          {
            content: 'from the tool output',
            importance: 0.6,
            tokenCount: 4,
            source: 'tool',
            sourceMessageSeqs: [2, 3],
          },
          { content: 'no provenance given', importance: 0.5, tokenCount: 4 },
        ],
        3,
      );
      expect(
        observations.map((item) => [item.source, item.sourceMessageSeqs, item.sourceStartSeq, item.sourceEndSeq]),
      ).toEqual([
        ['tool', [2, 3], 1, 3],
        ['mixed', [], 1, 3],
      ]);
      expect(await store.listObservations(idA)).toEqual(observations);
    });

    test(
      'grows the supersession set across reflections, dropping and counting references that do not hold ' +
        '(issue 12)',
      async () => {
        await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
        await observeAs(
          ['tabs', 'Go', 'spaces', 'Rust', 'Zig'].map((content) => ({ content, importance: 0.5, tokenCount: 2 })),
          1,
        );
        const first = await reflectAs(
          [
            'SUMMARY:',
            'one',
            'SUPERSESSIONS:',
            '- [seq:3] replaces [seq:1]: now spaces',
            '- [seq:2] replaces [seq:4]: backwards in time',
            '- [seq:9] replaces [seq:1]: no such observation',
            '- [seq:4] replaces [seq:4]: itself',
            'CONTRADICTIONS:',
            '- [seq:5] vs [seq:2]: which language',
            '- [seq:2] vs [seq:5]: the same pair again',
            '- [seq:3] vs [seq:3]: itself',
          ].join('\n'),
          5,
        );
        expect(first.record).toMatchObject({ supersessionCount: 1, contradictionCount: 1, rejectedReferenceCount: 4 });
        // The second reflection does not repeat the first's findings: they stay in the set.
        const second = await reflectAs(
          'SUMMARY:\ntwo\nSUPERSESSIONS:\n- [seq:4] replaces [seq:2]: now Rust\n- [seq:3] replaces [seq:1]: ' +
            'again\n- [seq:2] replaces [seq:1]: Go over tabs\nCONTRADICTIONS:\n',
          5,
        );
        expect(second.record).toMatchObject({ supersessionCount: 3, contradictionCount: 1, rejectedReferenceCount: 4 });
        expect(await store.getRecord(idA)).toEqual(second.record);
        const links = await store.listReflectionLinks(idA);
        // Ordered by seqs, not by when each was found.
        expect(
          links.supersessions.map((item) => [item.newerSeq, item.olderSeq, item.reason, item.operationId]),
        ).toEqual([
          [2, 1, 'Go over tabs', second.operationId],
          [3, 1, 'now spaces', first.operationId],
          [4, 2, 'now Rust', second.operationId],
        ]);
        expect(links.contradictions.map((item) => [item.seqA, item.seqB, item.detail, item.operationId])).toEqual([
          [2, 5, 'which language', first.operationId],
        ]);
        expect(links.supersessions[0]?.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
        expect(await store.listReflectionLinks(idB)).toEqual({ supersessions: [], contradictions: [] });
        await store.forget(idA);
        expect(await store.listReflectionLinks(idA)).toEqual({ supersessions: [], contradictions: [] });
      },
    );

    test('drops and counts references to seqs the reflector was not shown, when told which it was', async () => {
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
      await observeAs(
        ['tabs', 'Go', 'spaces', 'Rust'].map((content) => ({ content, importance: 0.5, tokenCount: 2 })),
        1,
      );
      const { record } = await reflectAs(
        'SUMMARY:\none\nSUPERSESSIONS:\n- [seq:3] replaces [seq:1]: shown\n- [seq:4] replaces [seq:2]: 2 was not\n' +
          'CONTRADICTIONS:\n- [seq:2] vs [seq:3]: 2 was not\n',
        4,
        [1, 3, 4],
      );
      expect(record).toMatchObject({ supersessionCount: 1, contradictionCount: 0, rejectedReferenceCount: 2 });
      expect(
        (await store.listReflectionLinks(idA)).supersessions.map((item) => [item.newerSeq, item.olderSeq]),
      ).toEqual([[3, 1]]);
    });

    test('adds the supersessions and contradictions new observations ask for, in their apply', async () => {
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
      await observeAs(
        ['tabs', 'Go'].map((content) => ({ content, importance: 0.9, tokenCount: 2 })),
        1,
      );
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:2', 'b')] });
      const applied = await observeAs(
        [
          // 4 and 9 were never assigned when it was stored: dropped. 1 twice: once.
          { content: 'spaces', importance: 0.9, tokenCount: 2, supersedes: [1, 1, 4, 9, 0, -1, 1.5] },
          { content: 'Rust', importance: 0.6, tokenCount: 2, contradicts: [2], supersedes: [] },
        ],
        2,
      );
      expect(applied.observations.map((item) => item.seq)).toEqual([3, 4]);
      expect(applied.record).toMatchObject({ supersessionCount: 1, contradictionCount: 1, rejectedReferenceCount: 0 });
      expect(await store.getRecord(idA)).toEqual(applied.record);
      const links = await store.listReflectionLinks(idA);
      const operationId = applied.observations[0]?.operationId;
      expect(links.supersessions.map((item) => [item.newerSeq, item.olderSeq, item.reason, item.operationId])).toEqual([
        [3, 1, '', operationId],
      ]);
      expect(links.contradictions.map((item) => [item.seqA, item.seqB, item.operationId])).toEqual([
        [2, 4, operationId],
      ]);
      // A reflection naming the same pair later keeps the pair as it was.
      const { record } = await reflectAs('SUMMARY:\none\nSUPERSESSIONS:\n- [seq:3] replaces [seq:1]: again\n', 4);
      expect(record).toMatchObject({ supersessionCount: 1, contradictionCount: 1 });
      expect((await store.listReflectionLinks(idA)).supersessions).toMatchObject([{ reason: '', operationId }]);
    });

    test('adds no links to a scope corrected since the given correction count; the observations are stored', async () => {
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
      await observeAs([{ content: 'tabs', importance: 0.9, tokenCount: 2 }], 1);
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:2', 'b')] });
      await enqueueObserve();
      const claimed = await store.claimOperation({ memoryId: idA, leaseOwner: 'w', leaseMs: 60_000 });
      const applied = await store.completeObservation({
        operationId: claimed!.operationId,
        memoryId: idA,
        leaseOwner: 'w',
        observations: [{ content: 'spaces', importance: 0.9, tokenCount: 2, supersedes: [1], contradicts: [1] }],
        throughMessageSeq: 2,
        markerIds: { start: generateId('mk'), end: generateId('mk') },
        correctionCount: (await store.getRecord(idA))!.correctionCount + 1,
      });
      expect(applied.observations.map((item) => item.content)).toEqual(['spaces']);
      expect(applied.record).toMatchObject({ supersessionCount: 0, contradictionCount: 0 });
      expect(await store.listReflectionLinks(idA)).toEqual({ supersessions: [], contradictions: [] });
    });

    test(
      'takes a reflection out of force when an observation it covers is corrected or deleted, and drops the ' +
        'links naming it, in the same correction',
      async () => {
        await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
        await observeAs(
          [
            'User prefers tabs.',
            'User lives in Berlin.',
            'User prefers spaces.',
            'User uses Go.',
            'User uses vim.',
          ].map((content) => ({ content, importance: 0.5, tokenCount: 2 })),
          1,
        );
        await reflectAs(
          'SUMMARY:\nThe user lives in Berlin and switched to spaces.\nSUPERSESSIONS:\n' +
            '- [seq:3] replaces [seq:1]: switched to spaces\n- [seq:4] replaces [seq:2]: moved on\n' +
            'CONTRADICTIONS:\n- [seq:1] vs [seq:4]: which\n- [seq:2] vs [seq:3]: odd pair',
          4,
        );
        // After what the reflection covers: the reflection stands, only the unreflected total moves.
        const after = await correctA(5, { kind: 'replace', content: 'User uses neovim.', tokenCount: 3 });
        expect(after?.record.reflection?.throughSeq).toBe(4);
        expect(after?.record).toMatchObject({ unreflectedObservationTokens: 3, supersessionCount: 2 });
        expect(after?.record.contradictionCount).toBe(2);

        const corrected = await correctA(3, {
          kind: 'replace',
          content: 'User prefers tabs after all.',
          tokenCount: 4,
        });
        expect(corrected?.record.reflection).toBeNull();
        expect(corrected?.record).toMatchObject({
          activeObservationTokens: 13,
          // Every observation is unreflected again, so the reflect threshold counts them all.
          unreflectedObservationTokens: 13,
          supersessionCount: 1,
          contradictionCount: 1,
          correctionCount: 2,
        });
        expect(await store.getRecord(idA)).toEqual(corrected?.record);
        const links = await store.listReflectionLinks(idA);
        expect(links.supersessions.map((item) => [item.newerSeq, item.olderSeq, item.reason])).toEqual([
          [4, 2, 'moved on'],
        ]);
        expect(links.contradictions.map((item) => [item.seqA, item.seqB, item.detail])).toEqual([[1, 4, 'which']]);
        const logged = (await store.listOperations(idA)).at(-1);
        expect(logged).toMatchObject({ operationType: 'correct', status: 'applied' });
        expect(logged?.payload).toMatchObject({ seq: 3, action: 'replace', reflection_dropped: true });

        // A deletion drops the links naming it too, with no reflection left to drop.
        const deleted = await correctA(4, { kind: 'delete' });
        expect(deleted?.record).toMatchObject({
          reflection: null,
          activeObservationTokens: 11,
          unreflectedObservationTokens: 11,
          supersessionCount: 0,
          contradictionCount: 0,
        });
        expect(await store.listReflectionLinks(idA)).toEqual({ supersessions: [], contradictions: [] });
        expect((await store.listOperations(idA)).at(-1)?.payload).not.toHaveProperty('reflection_dropped');

        // The next reflection starts afresh, and the unreflected total follows it again.
        const { record } = await reflectAs('SUMMARY:\nThe user prefers tabs.', 2);
        expect(record).toMatchObject({ unreflectedObservationTokens: 7, supersessionCount: 0 });
        const removed = await correctA(1, { kind: 'delete' });
        expect(removed?.record).toMatchObject({
          reflection: null,
          activeObservationTokens: 9,
          unreflectedObservationTokens: 9,
        });
      },
    );

    test('stores nothing of a reflection made before an observation was corrected or deleted', async () => {
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
      await observeAs(
        ['User lives in Berlin.', 'User prefers tabs.', 'User uses Go.'].map((content) => ({
          content,
          importance: 0.5,
          tokenCount: 2,
        })),
        1,
      );
      const madeAt = (await store.getRecord(idA))?.correctionCount;
      expect(madeAt).toBe(0);
      // The reflector ran on the record at correction count 0; the user deleted [1] meanwhile.
      await correctA(1, { kind: 'delete' });
      const markers = (await store.listMarkers(idA)).length;
      const stale = await reflectAs(
        'SUMMARY:\nThe user lives in Berlin.\nSUPERSESSIONS:\n- [seq:3] replaces [seq:2]: x\nCONTRADICTIONS:\n',
        3,
        undefined,
        madeAt,
      );
      expect(stale.record).toMatchObject({ reflection: null, correctionCount: 1, supersessionCount: 0 });
      expect(stale.record.unreflectedObservationTokens).toBe(4);
      expect(await store.getRecord(idA)).toEqual(stale.record);
      expect(await store.listReflectionLinks(idA)).toEqual({ supersessions: [], contradictions: [] });
      expect(await store.listMarkers(idA)).toHaveLength(markers);
      const operation = (await store.listOperations(idA)).find((item) => item.operationId === stale.operationId);
      expect(operation).toMatchObject({ status: 'applied', errorText: OUTDATED_REFLECTION_NOTE });
      // Made from the record as it now stands, it is stored.
      const fresh = await reflectAs('SUMMARY:\nThe user prefers tabs.', 3, undefined, 1);
      expect(fresh.record.reflection?.raw).toBe('SUMMARY:\nThe user prefers tabs.');
      expect(fresh.record.unreflectedObservationTokens).toBe(0);
    });

    test(
      'refuses an append made before a forget, by the scope generation, and stores none of it (issue ' + '12)',
      async () => {
        expect(await store.scopeGeneration(idA)).toBe(0);
        await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')], generation: 0 });
        await store.forget(idA);
        const afterFirst = await store.scopeGeneration(idA);
        expect(afterFirst).not.toBe(0);
        expect(await store.scopeGeneration(idB)).toBe(0);
        const forgotten = (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === 'SCOPE_FORGOTTEN';
        await expect(
          store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:2', 'late')], generation: 0 }),
        ).rejects.toSatisfy(forgotten);
        if (store.appendMessagesAndClaim) {
          const late = store.appendMessagesAndClaim({
            scope: scopeA,
            memoryId: idA,
            messages: [message('id:3', 'late')],
            generation: 0,
            settings: () => ({ enabled: true, minTokens: 1 }),
            operation: { operationId: 'op-late', payload: {}, runId: 'r', toolCallId: 't' },
            leaseOwner: 'w',
            leaseMs: 60_000,
          });
          await expect(late).rejects.toSatisfy(forgotten);
        }
        expect(await store.getRecord(idA)).toBeUndefined();
        expect(await store.listUnobservedMessages(idA, 100)).toEqual([]);
        // Work that read the new generation, or none, goes on; a second forget moves it again.
        await store.appendMessages({
          scope: scopeA,
          memoryId: idA,
          messages: [message('id:4', 'new')],
          generation: afterFirst,
        });
        await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:5', 'any')] });
        expect((await store.listUnobservedMessages(idA, 100)).map((item) => item.messageKey)).toEqual(['id:4', 'id:5']);
        await store.forget(idA);
        expect(await store.scopeGeneration(idA)).not.toBe(afterFirst);
      },
    );

    test('lands writes of one scope made at once in the order they were made: the last set of a key wins', async () => {
      const limits = { maxEntries: 10, maxTotalBytes: 10_000 };
      const set = (key: string, value: string) =>
        store.setWorkingMemoryEntry({ scope: scopeA, memoryId: idA, key, valueJson: JSON.stringify(value), limits });
      const misplaced: string[] = [];
      for (let round = 0; round < 60; round++) {
        const key = `k${round % 3}`;
        const answers = await Promise.all(Array.from({ length: 6 }, (_, index) => set(key, `${round}.${index}`)));
        // Each set's answer and the stored value tell the same order: the calls', whatever the store.
        const stored = (await store.getWorkingMemoryEntry(idA, key))?.valueJson;
        if (stored !== JSON.stringify(`${round}.5`)) misplaced.push(`round ${round}: ${stored}`);
        const updated = answers.map((entry) => entry.updatedAt);
        expect([...updated].sort(), `round ${round}`).toEqual(updated);
      }
      expect(misplaced).toEqual([]);
    });

    test('keeps working-memory entries sorted by key bytes, with timestamps', async () => {
      const limits = { maxEntries: 10, maxTotalBytes: 10_000 };
      const created = [];
      for (const key of ['b', 'a', 'B', 'é', 'a2'])
        created.push(
          await store.setWorkingMemoryEntry({ scope: scopeA, memoryId: idA, key, valueJson: `"${key}"`, limits }),
        );
      const entries = await store.listWorkingMemoryEntries(idA);
      expect(entries.map((entry) => entry.key)).toEqual(['B', 'a', 'a2', 'b', 'é']);
      const first = await store.getWorkingMemoryEntry(idA, 'a');
      await sleep(5);
      const updated = await store.setWorkingMemoryEntry({
        scope: scopeA,
        memoryId: idA,
        key: 'a',
        valueJson: '{"x":1}',
        limits,
      });
      expect(updated.createdAt).toBe(first?.createdAt);
      expect(updated.updatedAt >= (first?.updatedAt ?? '')).toBe(true);
      // What a set answers is what is stored, for a new entry and a replaced one.
      const entryOf = ({ versions: _versions, ...entry }: StoredWorkingMemoryEntry) => entry;
      expect(await store.getWorkingMemoryEntry(idA, 'a')).toEqual(entryOf(updated));
      expect(await store.getWorkingMemoryEntry(idA, 'é')).toEqual(created[3] && entryOf(created[3]));
      expect(updated.valueJson).toBe('{"x":1}');
      expect(await store.deleteWorkingMemoryEntry(idA, 'a')).toBe(true);
      expect(await store.deleteWorkingMemoryEntry(idA, 'a')).toBe(false);
      expect(await store.getWorkingMemoryEntry(idA, 'a')).toBeUndefined();
    });

    /**
     * Lets `ms` pass by the store's clock: moves the injected clock, or polls until `passed`
     * holds (the deadline is only for liveness).
     */
    const letPass = async (ms: number, passed: () => Promise<boolean>): Promise<void> => {
      if (options.advanceClock) {
        options.advanceClock(ms);
        return;
      }
      for (const deadline = Date.now() + 20_000; !(await passed()) && Date.now() < deadline;) await sleep(5);
    };

    test('expires a working-memory entry at its time to live for every reader, the limits included', async () => {
      const limits = { maxEntries: 3, maxTotalBytes: 40 };
      const set = (key: string, valueJson: string, ttlMs?: number) =>
        store.setWorkingMemoryEntry({
          scope: scopeA,
          memoryId: idA,
          key,
          valueJson,
          limits,
          ...(ttlMs === undefined ? {} : { ttlMs }),
        });
      const kept = await set('keep', '"k"');
      expect(kept.expiresAt).toBeNull();
      const brief = await set('brief', `"${'b'.repeat(14)}"`, 300);
      expect(Date.parse(brief.expiresAt!)).toBe(Date.parse(brief.updatedAt) + 300);
      const long = await set('long', '"l"', 3_600_000);
      expect(Date.parse(long.expiresAt!)).toBe(Date.parse(long.updatedAt) + 3_600_000);
      const { versions: _versions, ...stored } = brief;
      expect(await store.getWorkingMemoryEntry(idA, 'brief')).toEqual(stored);
      expect((await store.listWorkingMemoryEntries(idA)).map((entry) => entry.key)).toEqual(['brief', 'keep', 'long']);

      await letPass(300, async () => (await store.getWorkingMemoryEntry(idA, 'brief')) === undefined);
      expect(await store.getWorkingMemoryEntry(idA, 'brief')).toBeUndefined();
      expect((await store.listWorkingMemoryEntries(idA)).map((entry) => entry.key)).toEqual(['keep', 'long']);
      const [summary] = await store.listScopes({ tenantId: scopeA.tenantId, limit: 10 });
      expect(summary?.workingMemoryEntries).toBe(2);
      expect(await store.deleteWorkingMemoryEntry(idA, 'brief')).toBe(false);

      // Neither its count nor its bytes hold a place: a third entry of 21 bytes fits the 40.
      const third = await set('third', `"${'t'.repeat(14)}"`);
      expect(third.createdAt).toBe(third.updatedAt);
      await expect(set('fourth', '"4"')).rejects.toSatisfy(
        (error: unknown) =>
          HarnessMemoryError.isInstance(error) &&
          error.code === 'WORKING_MEMORY_LIMIT' &&
          (error.data as { actual?: number }).actual === 4,
      );
      // Set again, the key is a new entry.
      await store.deleteWorkingMemoryEntry(idA, 'third');
      const again = await set('brief', '"again"');
      expect(again.expiresAt).toBeNull();
      expect((await store.listWorkingMemoryEntries(idA)).map((entry) => entry.key)).toEqual(['brief', 'keep', 'long']);
      await store.forget(idA);
      expect(await store.listWorkingMemoryEntries(idA)).toEqual([]);
    });

    test('dates a scope last activity by its live entries: an expired one no longer counts', async () => {
      const limits = { maxEntries: 10, maxTotalBytes: 1000 };
      const kept = await store.setWorkingMemoryEntry({
        scope: scopeA,
        memoryId: idA,
        key: 'keep',
        valueJson: '1',
        limits,
      });
      const activity = async () =>
        (await store.listScopes({ tenantId: scopeA.tenantId, limit: 10 }))[0]?.lastActivityAt;
      const before = await activity();
      await letPass(1, async () => new Date().toISOString() > kept.updatedAt);
      const brief = { scope: scopeA, memoryId: idA, key: 'brief', valueJson: '2', limits, ttlMs: 200 };
      const set = await store.setWorkingMemoryEntry(brief);
      expect(await activity()).toBe(set.updatedAt);
      await letPass(200, async () => (await store.getWorkingMemoryEntry(idA, 'brief')) === undefined);
      expect(await activity()).toBe(before);
    });

    test("takes each set's time to live: a set without one keeps the entry for good", async () => {
      const limits = { maxEntries: 10, maxTotalBytes: 1000 };
      const set = (key: string, ttlMs?: number) =>
        store.setWorkingMemoryEntry({
          scope: scopeA,
          memoryId: idA,
          key,
          valueJson: '"v"',
          limits,
          ...(ttlMs === undefined ? {} : { ttlMs }),
        });
      const first = await set('plan', 200);
      const replaced = await set('plan');
      expect(replaced.expiresAt).toBeNull();
      expect(replaced.createdAt).toBe(first.createdAt);
      const longer = await set('goal', 200);
      expect((await set('goal', 3_600_000)).createdAt).toBe(longer.createdAt);
      await set('probe', 200);
      await letPass(200, async () => (await store.getWorkingMemoryEntry(idA, 'probe')) === undefined);
      expect((await store.listWorkingMemoryEntries(idA)).map((entry) => [entry.key, entry.expiresAt === null])).toEqual(
        [
          ['goal', false],
          ['plan', true],
        ],
      );
      // The next write deletes the expired rows; what readers see stays the same.
      await set('other');
      expect((await store.listWorkingMemoryEntries(idA)).map((entry) => entry.key)).toEqual(['goal', 'other', 'plan']);
      expect((await store.getWorkingMemoryEntry(idA, 'plan'))?.expiresAt).toBeNull();
    });

    test('enforces the entry count and total size limits without a partial write', async () => {
      const limits = { maxEntries: 2, maxTotalBytes: 30 };
      await store.setWorkingMemoryEntry({ scope: scopeA, memoryId: idA, key: 'k1', valueJson: '"v"', limits });
      await store.setWorkingMemoryEntry({ scope: scopeA, memoryId: idA, key: 'k2', valueJson: '"v"', limits });
      await expect(
        store.setWorkingMemoryEntry({ scope: scopeA, memoryId: idA, key: 'k3', valueJson: '"v"', limits }),
      ).rejects.toSatisfy(
        (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === 'WORKING_MEMORY_LIMIT',
      );
      await store.setWorkingMemoryEntry({ scope: scopeA, memoryId: idA, key: 'k2', valueJson: '"replaced"', limits });
      await expect(
        store.setWorkingMemoryEntry({
          scope: scopeA,
          memoryId: idA,
          key: 'k2',
          valueJson: `"${'x'.repeat(40)}"`,
          limits,
        }),
      ).rejects.toSatisfy(
        (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === 'WORKING_MEMORY_LIMIT',
      );
      expect((await store.listWorkingMemoryEntries(idA)).map((entry) => entry.valueJson)).toEqual([
        '"v"',
        '"replaced"',
      ]);
    });

    test('changes the working-memory version on every write of the scope, and only then', async () => {
      // Optional in the port: a store without it skips this test by name, saying so.
      expect(
        store.workingMemoryVersion,
        'workingMemoryVersion is not implemented; list this test in `skip`',
      ).toBeTypeOf('function');
      const version = (memoryId: string) =>
        (store.workingMemoryVersion as (memoryId: string) => Promise<number>)(memoryId);
      const limits = { maxEntries: 5, maxTotalBytes: 1000 };
      expect(await version(idA)).toBe(0);
      const seen = new Set<number>([0]);
      const next = async (): Promise<number> => {
        const value = await version(idA);
        expect(seen.has(value)).toBe(false);
        seen.add(value);
        return value;
      };
      await store.setWorkingMemoryEntry({ scope: scopeA, memoryId: idA, key: 'k', valueJson: '"a"', limits });
      const afterSet = await next();
      // Reads, other scopes and deleting a missing key change nothing.
      await store.listWorkingMemoryEntries(idA);
      await store.getWorkingMemoryEntry(idA, 'k');
      await store.deleteWorkingMemoryEntry(idA, 'missing');
      await store.setWorkingMemoryEntry({ scope: scopeB, memoryId: idB, key: 'k', valueJson: '"b"', limits });
      expect(await version(idA)).toBe(afterSet);
      // The same value again is still a write.
      await store.setWorkingMemoryEntry({ scope: scopeA, memoryId: idA, key: 'k', valueJson: '"a"', limits });
      await next();
      await store.deleteWorkingMemoryEntry(idA, 'k');
      await next();
      await store.setWorkingMemoryEntry({ scope: scopeA, memoryId: idA, key: 'k', valueJson: '"c"', limits });
      await next();
      await store.forget(idA);
      expect(await version(idA)).toBe(0);
      await store.setWorkingMemoryEntry({ scope: scopeA, memoryId: idA, key: 'k', valueJson: '"d"', limits });
      await next();
    });

    test('reports the working-memory version before and after each set, read in the set itself', async () => {
      const version = (memoryId: string) =>
        (store.workingMemoryVersion as (memoryId: string) => Promise<number>)(memoryId);
      const limits = { maxEntries: 50, maxTotalBytes: 10_000 };
      const set = (scope: Scope, key: string, valueJson: string) =>
        store.setWorkingMemoryEntry({ scope, memoryId: memoryIdOf(scope), key, valueJson, limits });
      const first = await set(scopeA, 'k', '"a"');
      expect(first).toMatchObject({ key: 'k', valueJson: '"a"' });
      expect(first.versions).toEqual({ before: 0, after: await version(idA) });
      const second = await set(scopeA, 'k', '"b"');
      expect(second.versions).toEqual({ before: first.versions?.after, after: await version(idA) });
      // Another scope's writes are not this scope's; a delete is.
      await set(scopeB, 'k', '"x"');
      await store.deleteWorkingMemoryEntry(idA, 'k');
      const afterDelete = await version(idA);
      const third = await set(scopeA, 'j', '"c"');
      expect(third.versions).toEqual({ before: afterDelete, after: await version(idA) });
      // Sets at the same time form one chain: each one's "before" is exactly one other's "after".
      const start = await version(idA);
      const concurrent = await Promise.all(
        Array.from({ length: 20 }, (_, index) => set(scopeA, `c${index % 5}`, String(index))),
      );
      const next = new Map(concurrent.map((entry) => [entry.versions?.before, entry.versions?.after]));
      expect(next.size).toBe(20);
      let at: number | undefined = start;
      for (let step = 0; step < 20; step++) at = next.get(at);
      expect(at).toBe(await version(idA));
    });

    test('never shows one scope the data of another', async () => {
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'secret-a')] });
      await store.setWorkingMemoryEntry({
        scope: scopeA,
        memoryId: idA,
        key: 'k',
        valueJson: '"a"',
        limits: { maxEntries: 5, maxTotalBytes: 1000 },
      });
      expect(await store.getRecord(idB)).toBeUndefined();
      expect(await store.listUnobservedMessages(idB, 100)).toEqual([]);
      expect(await store.listWorkingMemoryEntries(idB)).toEqual([]);
      expect(await store.getWorkingMemoryEntry(idB, 'k')).toBeUndefined();
      expect(await store.listOperations(idB)).toEqual([]);
    });

    test('loses no message when many appends to one scope run concurrently', async () => {
      await Promise.all(
        Array.from({ length: 50 }, (_, index) =>
          store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message(`id:${index}`, `m${index}`, 1)] }),
        ),
      );
      const pending = await store.listUnobservedMessages(idA, 1000);
      expect(pending).toHaveLength(50);
      expect(new Set(pending.map((item) => item.seq)).size).toBe(50);
      expect((await store.getRecord(idA))?.lastMessageSeq).toBe(50);
    });

    test('forgets every row of a scope and leaves other scopes alone', async () => {
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
      await store.appendMessages({ scope: scopeB, memoryId: idB, messages: [message('id:1', 'b')] });
      await enqueueObserve();
      await store.setWorkingMemoryEntry({
        scope: scopeA,
        memoryId: idA,
        key: 'k',
        valueJson: '1',
        limits: { maxEntries: 5, maxTotalBytes: 1000 },
      });
      await store.forget(idA);
      expect(await store.getRecord(idA)).toBeUndefined();
      expect(await store.listOperations(idA)).toEqual([]);
      expect(await store.listWorkingMemoryEntries(idA)).toEqual([]);
      expect(await store.listUnobservedMessages(idA, 10)).toEqual([]);
      expect(await store.getRecord(idB)).toBeDefined();
      // A forgotten scope starts afresh, message keys included.
      const again = await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a')] });
      expect(again.inserted).toBe(1);
    });

    const observeFrom = (minTokens: number) => () => ({ enabled: true, minTokens });
    const appended = (result: AppendAndClaimResult) => {
      if (result.disabled) throw new Error('expected the scope to observe');
      return result;
    };

    test('appends, enqueues and claims in one call when the adapter has the fast path', async () => {
      if (!store.appendMessagesAndClaim) return;
      const operation = (operationId: string) => ({ operationId, payload: {}, runId: 'r', toolCallId: 't' });
      const below = appended(
        await store.appendMessagesAndClaim({
          scope: scopeA,
          memoryId: idA,
          messages: [message('id:1', 'a', 5)],
          settings: observeFrom(20),
          operation: operation('op-1'),
          leaseOwner: 'w',
          leaseMs: 60_000,
        }),
      );
      expect(below.operation).toBeUndefined();
      expect(below.claimed).toBeUndefined();
      expect(await store.listOperations(idA)).toEqual([]);
      const reached = appended(
        await store.appendMessagesAndClaim({
          scope: scopeA,
          memoryId: idA,
          messages: [message('id:2', 'b', 15)],
          settings: observeFrom(20),
          operation: operation('op-2'),
          leaseOwner: 'w',
          leaseMs: 60_000,
        }),
      );
      expect(reached.unobservedTokens).toBe(20);
      expect(reached.operation?.operationId).toBe('op-2');
      expect(reached.claimed).toMatchObject({ operationId: 'op-2', status: 'processing', leaseOwner: 'w', attempt: 1 });
      expect(reached.claimed?.leaseExpiresAt && reached.claimed.leaseExpiresAt > reached.claimed.createdAt).toBe(true);
      expect((await store.listOperations(idA)).map((item) => [item.operationId, item.status, item.leaseOwner])).toEqual(
        [['op-2', 'processing', 'w']],
      );
      if (reached.prefetched) {
        expect(reached.prefetched.operationId).toBe('op-2');
        expect(reached.prefetched.record).toEqual(await store.getRecord(idA));
        expect(reached.prefetched.messages).toEqual(
          await store.listUnobservedMessages(idA, reached.record.lastMessageSeq),
        );
        expect(reached.prefetched.messages.map((item) => item.messageKey)).toEqual(['id:1', 'id:2']);
      }
      // With an operation of the scope already processing, the new one stays queued.
      const next = appended(
        await store.appendMessagesAndClaim({
          scope: scopeA,
          memoryId: idA,
          messages: [message('id:3', 'c', 15)],
          settings: observeFrom(20),
          operation: operation('op-3'),
          leaseOwner: 'w',
          leaseMs: 60_000,
        }),
      );
      expect(next.operation?.status).toBe('queued');
      expect(next.claimed).toBeUndefined();
      expect(next.prefetched).toBeUndefined();
      await store.completeWithoutChange({ operationId: 'op-2', memoryId: idA, leaseOwner: 'w', note: 'done' });
      // An older queued operation of the scope runs first: the call claims it, not the new one.
      const older = appended(
        await store.appendMessagesAndClaim({
          scope: scopeA,
          memoryId: idA,
          messages: [message('id:4', 'd', 15)],
          settings: observeFrom(20),
          operation: operation('op-4'),
          leaseOwner: 'w',
          leaseMs: 60_000,
        }),
      );
      expect(older.operation).toMatchObject({ operationId: 'op-4', status: 'queued' });
      expect(older.claimed).toMatchObject({ operationId: 'op-3', status: 'processing' });
      if (older.prefetched) expect(older.prefetched.operationId).toBe('op-3');
      expect(await store.countPendingOperations(idA)).toBe(2);
    });

    test('the fast path logs the observe with the messages this call stored and the unobserved tokens', async () => {
      if (!store.appendMessagesAndClaim) return;
      const call = (operationId: string, keys: readonly string[]) =>
        store.appendMessagesAndClaim!({
          scope: scopeA,
          memoryId: idA,
          messages: keys.map((key) => message(key, key, 5)),
          settings: observeFrom(12),
          // What the caller sets itself stays; `messages` is the adapter's to fill.
          operation: { operationId, payload: { model: 'm', messages: 99 }, runId: 'r', toolCallId: 't' },
          leaseOwner: 'w',
          leaseMs: 60_000,
        });
      appended(await call('op-1', ['id:1']));
      // id:1 is known already: two messages are new, three wait to be observed.
      appended(await call('op-2', ['id:1', 'id:2', 'id:3']));
      expect((await store.listOperations(idA)).map((item) => item.payload)).toEqual([
        { model: 'm', messages: 2, unobserved_tokens: 15 },
      ]);
    });

    test('the fast path prefetches only the oldest messages within the batch tokens', async () => {
      if (!store.appendMessagesAndClaim) return;
      const claimWith = (batchTokens?: number) =>
        store.appendMessagesAndClaim!({
          scope: scopeA,
          memoryId: idA,
          messages: [message('id:1', 'a', 5), message('id:2', 'b', 5), message('id:3', 'c', 5)],
          settings: observeFrom(10),
          operation: { operationId: `op-${batchTokens}`, payload: {}, runId: 'r', toolCallId: 't' },
          leaseOwner: 'w',
          leaseMs: 60_000,
          ...(batchTokens === undefined ? {} : { batchTokens }),
        });
      const batched = appended(await claimWith(6));
      expect(batched.claimed?.operationId).toBe('op-6');
      expect(batched.record.unobservedMessageTokens).toBe(15);
      if (batched.prefetched)
        expect(batched.prefetched.messages.map((item) => item.messageKey)).toEqual(['id:1', 'id:2']);
      await store.completeWithoutChange({ operationId: 'op-6', memoryId: idA, leaseOwner: 'w', note: 'test' });
      const whole = appended(await claimWith());
      if (whole.prefetched)
        expect(whole.prefetched.messages.map((item) => item.messageKey)).toEqual(['id:1', 'id:2', 'id:3']);
    });

    test('the fast path writes nothing for a disabled scope, and shows settings the record as stored', async () => {
      if (!store.appendMessagesAndClaim) return;
      const seen: Array<MemoryRecord | undefined> = [];
      const input = (key: string, enabled: boolean) => ({
        scope: scopeA,
        memoryId: idA,
        messages: [message(key, 'a', 5)],
        settings: (record: MemoryRecord | undefined) => {
          seen.push(record);
          return { enabled, minTokens: 1 };
        },
        operation: { operationId: `op-${key}`, payload: {}, runId: 'r', toolCallId: 't' },
        leaseOwner: 'w',
        leaseMs: 60_000,
      });
      const fresh = await store.appendMessagesAndClaim(input('id:1', false));
      expect(fresh).toEqual({ disabled: true, record: undefined });
      expect(await store.getRecord(idA)).toBeUndefined();
      await store.updateSettings({
        scope: scopeA,
        memoryId: idA,
        enabled: false,
        runId: 'r',
        toolCallId: 't',
        operationId: 'op-off',
      });
      const stored = await store.getRecord(idA);
      const off = await store.appendMessagesAndClaim(input('id:2', false));
      expect(off).toEqual({ disabled: true, record: stored });
      // An adapter may first ask with the record it remembers; the answer it acts on is the stored one's.
      expect(seen[0]).toBeUndefined();
      expect(seen.at(-1)).toEqual(stored);
      expect(await store.getRecord(idA)).toEqual(stored);
      expect(await store.listUnobservedMessages(idA, 100)).toEqual([]);
      expect((await store.listOperations(idA)).map((item) => item.operationId)).toEqual(['op-off']);
    });

    test('the fast path prefetches nothing for a claimed operation that is not an observe', async () => {
      if (!store.appendMessagesAndClaim) return;
      await store.appendMessages({ scope: scopeA, memoryId: idA, messages: [message('id:1', 'a', 5)] });
      await store.enqueueOperation({
        operationId: 'op-r',
        scope: scopeA,
        memoryId: idA,
        operationType: 'reflect_now',
        payload: {},
        runId: 'r',
        toolCallId: 't',
      });
      const result = appended(
        await store.appendMessagesAndClaim({
          scope: scopeA,
          memoryId: idA,
          messages: [message('id:2', 'b', 5)],
          settings: observeFrom(1),
          operation: { operationId: 'op-o', payload: {}, runId: 'r', toolCallId: 't' },
          leaseOwner: 'w',
          leaseMs: 60_000,
        }),
      );
      expect(result.claimed?.operationId).toBe('op-r');
      expect(result.prefetched).toBeUndefined();
    });

    inspectionCases(test, () => store);
    retentionCases(test, () => store, letPass);
    purgeCases(test, () => store, letPass);
    restoreCases(test, () => store);
    correctionCases(test, () => store);

    test('disposes idempotently and refuses work afterwards', async () => {
      await store.dispose();
      await store.dispose();
      await expect(store.getRecord(idA)).rejects.toSatisfy(
        (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === 'STORE_DISPOSED',
      );
    });
  });
}
