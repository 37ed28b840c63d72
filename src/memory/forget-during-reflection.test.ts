/**
 * Catalogue case F45: a scope forgotten while its reflector's model call is in flight. The
 * reflection's answer, once the gate holding it opens, revives nothing: the scope has no
 * record, no observation and no reflection, and no text of it (the message, the observation,
 * the reflection) is left in the SQLite file once its log is checkpointed. Forgotten by the
 * same service (which aborts the call) and through another store on the file, as another
 * process would (which cannot: the apply finds the scope gone).
 */
import { existsSync, readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { memoryIdOf } from '../core/scope.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../storage/store.js';
import { scriptedObserver, scriptedReflector } from '../../test/support/scripted-models.js';
import { createModelGate } from '../../test/support/model-gate.js';
import { useSqliteTestFiles } from '../../test/support/sqlite-test-files.js';
import { createObservationalMemory, FORGET_LOCK_WAIT_MS } from './observational-memory.js';
import type { ObservationalMemory } from './observational-memory.js';

const scope = { tenantId: 'tenant-f45', conversationId: 'conv-f45', agentId: 'agent-f45' };
const memoryId = memoryIdOf(scope);
// Text that exists only in the message, the observation and the reflection of the scope.
const CANARIES = ['CanaryMessage45', 'CanaryObservation45', 'CanaryReflection45'] as const;
const MESSAGE = { id: 'm1', role: 'user', content: `I plan a surprise party, ${CANARIES[0]}.` };

/** A reflector held at a gate until `release()`; `inCall` resolves once it was asked. */
function gatedReflector(options: { honoursAbort: boolean }) {
  const gate = createModelGate();
  const reflector = scriptedReflector(async (input) => {
    const passed = gate.pass();
    if (options.honoursAbort) {
      const aborted = new Promise<never>((_resolve, reject) =>
        input.abortSignal?.addEventListener('abort', () => reject(input.abortSignal?.reason)),
      );
      await Promise.race([passed, aborted]);
    } else await passed;
    return `SUMMARY:\nThe user plans a surprise party, ${CANARIES[2]}.\n\nSUPERSESSIONS:\n\nCONTRADICTIONS:\n`;
  });
  return { reflector, inCall: gate.inCall, release: gate.release };
}

function memoryOn(store: MemoryStore, reflector: ReturnType<typeof gatedReflector>['reflector'], threshold: number) {
  return createObservationalMemory({
    store,
    observer: scriptedObserver(`IMPORTANCE:0.9\nThe user plans a surprise party, ${CANARIES[1]}.`),
    reflector,
    defaultEnabled: true,
    defaults: { observeMinTokens: 1, reflectThresholdTokens: threshold },
  });
}

/** How a promise ended: `resolved`, or the code (else the message) it rejected with. */
function outcome(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'resolved',
    (error: unknown) => String((error as { code?: unknown }).code ?? (error as Error).message ?? error),
  );
}

describe('observational memory: forget while a reflection is in flight (catalogue F45)', () => {
  const files = useSqliteTestFiles('hm-f45-');

  /** Nothing of the scope in the service, the store, or the bytes of the file and its log. */
  async function expectNothingLeft(memory: ObservationalMemory, store: MemoryStore): Promise<void> {
    expect(await store.getRecord(memoryId)).toBeUndefined();
    expect(await store.listObservations(memoryId)).toEqual([]);
    const inspection = await memory.inspect(scope);
    expect(inspection.observations).toEqual([]);
    expect(inspection.reflection).toBeNull();
    expect(await memory.snippet(scope)).toBe('');
    const db = files.track(new Database(files.path));
    expect(db.prepare('SELECT COUNT(*) FROM om_memory_records').pluck().get()).toBe(0);
    db.pragma('wal_checkpoint(TRUNCATE)');
    const bytes =
      readFileSync(files.path).toString('latin1') +
      (existsSync(`${files.path}-wal`) ? readFileSync(`${files.path}-wal`).toString('latin1') : '');
    for (const canary of CANARIES) expect(bytes).not.toContain(canary);
  }

  it('reflectNow, forgotten by the same service: the call is aborted and its answer revives nothing', async () => {
    const store = files.track(createSqliteStore({ path: files.path }));
    const gated = gatedReflector({ honoursAbort: true });
    const memory = memoryOn(store, gated.reflector, 1_000_000);
    await memory.observe({ scope, messages: [MESSAGE] });
    const reflecting = outcome(memory.reflectNow(scope));
    await gated.inCall;
    await memory.forget(scope);
    gated.release();
    expect(await reflecting).toMatch(/forgotten/);
    expect(gated.reflector.calls).toHaveLength(1);
    await expectNothingLeft(memory, store);
  });

  it('reflectNow whose reflector ignores the abort, forgotten by the same service: nothing is revived', async () => {
    const store = files.track(createSqliteStore({ path: files.path }));
    const gated = gatedReflector({ honoursAbort: false });
    const memory = memoryOn(store, gated.reflector, 1_000_000);
    await memory.observe({ scope, messages: [MESSAGE] });
    const reflecting = outcome(memory.reflectNow(scope));
    await gated.inCall;
    // NOTE: the forget waits for the scope's lock, which the call holds until it answers.
    const forgetting = memory.forget(scope);
    gated.release();
    await forgetting;
    await reflecting;
    await expectNothingLeft(memory, store);
  });

  it('reflectNow whose reflector ignores the abort: the forget waits for it only so long, then erases beside it', async () => {
    const store = files.track(createSqliteStore({ path: files.path }));
    const gated = gatedReflector({ honoursAbort: false });
    const memory = memoryOn(store, gated.reflector, 1_000_000);
    await memory.observe({ scope, messages: [MESSAGE] });
    const reflecting = outcome(memory.reflectNow(scope));
    await gated.inCall;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let forgotten = false;
      const forgetting = memory.forget(scope).then(() => (forgotten = true));
      await vi.advanceTimersByTimeAsync(FORGET_LOCK_WAIT_MS - 1);
      expect(forgotten).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await forgetting;
    } finally {
      vi.useRealTimers();
    }
    // Erased while the reflector still holds its answer.
    expect(await store.getRecord(memoryId)).toBeUndefined();
    gated.release();
    expect(await reflecting).toBe('OPERATION_LEASE_LOST');
    await expectNothingLeft(memory, store);
  });

  it('an observe whose observer ignores the abort, forgotten beside it: skipped as forgotten, nothing revived', async () => {
    const store = files.track(createSqliteStore({ path: files.path }));
    const gate = createModelGate();
    const memory = createObservationalMemory({
      store,
      observer: scriptedObserver(async () => {
        await gate.pass();
        return `IMPORTANCE:0.9\nThe user plans a surprise party, ${CANARIES[1]}.`;
      }),
      defaultEnabled: true,
      defaults: { observeMinTokens: 1 },
    });
    const observing = memory.observe({ scope, messages: [MESSAGE] });
    await gate.inCall;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const forgetting = memory.forget(scope);
      await vi.advanceTimersByTimeAsync(FORGET_LOCK_WAIT_MS);
      await forgetting;
    } finally {
      vi.useRealTimers();
    }
    gate.release();
    expect(await observing).toMatchObject({ status: 'skipped', reason: 'forgotten' });
    await expectNothingLeft(memory, store);
  });

  it.each([
    ['reflectNow', 1_000_000],
    ['the reflection an observe runs past the threshold', 1],
  ] as const)(
    '%s, forgotten through another store on the file: the answer is refused, nothing is revived',
    async (how, threshold) => {
      const store = files.track(createSqliteStore({ path: files.path }));
      const other = files.track(createSqliteStore({ path: files.path }));
      // Another process cannot abort this one's call: the reflector answers when released.
      const gated = gatedReflector({ honoursAbort: false });
      const memory = memoryOn(store, gated.reflector, threshold);
      const forgetter = memoryOn(other, gatedReflector({ honoursAbort: false }).reflector, threshold);
      let reflecting: Promise<unknown>;
      if (how === 'reflectNow') {
        await memory.observe({ scope, messages: [MESSAGE] });
        reflecting = memory.reflectNow(scope);
      } else {
        reflecting = memory.observe({ scope, messages: [MESSAGE] });
      }
      const settled = outcome(reflecting);
      await gated.inCall;
      await forgetter.forget(scope);
      gated.release();
      if (how === 'reflectNow') expect(await settled).toBe('OPERATION_LEASE_LOST');
      else {
        // The observe had stored its observation before reflecting; the reflection failed.
        expect(await settled).toBe('resolved');
        expect(await reflecting).toMatchObject({ reflected: false, reflectionError: expect.any(String) });
      }
      expect(gated.reflector.calls).toHaveLength(1);
      await expectNothingLeft(memory, store);
      await expectNothingLeft(forgetter, other);
    },
  );
});
