import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import {
  expectSeededSupersessionSet,
  LEGACY_OBSERVATIONS,
  LEGACY_REFLECTION,
} from '../../../test/support/legacy-reflection.js';
import { expectPendingTokensKept, pendingScopes } from '../../../test/support/pending-messages.js';
import { HarnessMemoryError } from '../../core/errors.js';
import { createUlidGenerator } from '../../core/ids.js';
import { parseReflection } from '../../core/parse-reflection.js';
import { isScopeId, memoryIdOf } from '../../core/scope.js';
import type { Scope } from '../../core/scope.js';
import { migrateSqliteDatabase, SQLITE_MIGRATIONS, SQLITE_SCHEMA_VERSION } from './sqlite-migrations.js';
import { createObservationalMemory } from '../../memory/observational-memory.js';
import { createWorkingMemory } from '../../memory/working-memory.js';
import { createSqliteStore } from './sqlite-store.js';
import type { MemoryStore } from '../store.js';
import { runStoreSuite } from '../store.suite.js';
import { newRun } from '../run-store.suite.js';
import { createSqliteRunStore } from './sqlite-run-store.js';
import { useSqliteTestFiles } from '../../../test/support/sqlite-test-files.js';
import { untilEntryExpired } from '../../../test/support/until-entry-expired.js';
import { seededRandom } from '../../../test/support/seeded-random.js';

let suiteDirectory: string | undefined;

runStoreSuite({
  name: 'sqlite',
  create: () => {
    suiteDirectory = mkdtempSync(join(tmpdir(), 'harness-memory-sqlite-'));
    return createSqliteStore({ path: join(suiteDirectory, 'nested', 'state.db') });
  },
  cleanup: () => {
    if (suiteDirectory) rmSync(suiteDirectory, { recursive: true, force: true });
    suiteDirectory = undefined;
  },
});

const generateId = createUlidGenerator();
const scope: Scope = { tenantId: 'acme', conversationId: 'conv-1', agentId: 'agent-x' };
const other: Scope = { tenantId: 'acme', conversationId: 'conv-2', agentId: 'agent-x' };
const memoryId = memoryIdOf(scope);
const limits = { maxEntries: 10, maxTotalBytes: 10_000 };
const isStoreError = (code: string) => (error: unknown) => HarnessMemoryError.isInstance(error) && error.code === code;

describe('store: sqlite (backend)', () => {
  const files = useSqliteTestFiles('harness-memory-sqlite-');
  const { track } = files;

  async function observe(
    store: MemoryStore,
    target: Scope,
    contents: string[],
    throughMessageSeq: number,
  ): Promise<void> {
    await store.enqueueOperation({
      operationId: generateId('op'),
      scope: target,
      memoryId: memoryIdOf(target),
      operationType: 'observe',
      payload: {},
      runId: 'run-1',
      toolCallId: 'system',
    });
    const claimed = await store.claimOperation({ memoryId: memoryIdOf(target), leaseOwner: 'w', leaseMs: 60_000 });
    await store.completeObservation({
      operationId: claimed!.operationId,
      memoryId: claimed!.memoryId,
      leaseOwner: 'w',
      observations: contents.map((content) => ({ content, importance: 0.5, tokenCount: 3 })),
      throughMessageSeq,
      markerIds: { start: generateId('mk'), end: generateId('mk') },
    });
  }

  async function reflect(store: MemoryStore, raw: string, throughSeq: number): Promise<void> {
    await store.enqueueOperation({
      operationId: generateId('op'),
      scope,
      memoryId,
      operationType: 'reflect_now',
      payload: {},
      runId: 'run-1',
      toolCallId: 't',
    });
    const claimed = await store.claimOperation({ memoryId, leaseOwner: 'w', leaseMs: 60_000 });
    await store.completeReflection({
      operationId: claimed!.operationId,
      memoryId: claimed!.memoryId,
      leaseOwner: 'w',
      reflection: {
        raw,
        structured: parseReflection(raw),
        tokenCount: 8,
        throughSeq,
        createdAt: '2025-01-02T03:04:05.678Z',
      },
      markerId: generateId('mk'),
    });
  }

  /** The file is sound and the operation log has exactly its current indexes. */
  function expectOperationLogIntact(check: Database.Database): void {
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(
      check
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'om_operation_log' ORDER BY name")
        .pluck()
        .all(),
    ).toEqual(['om_operation_log_dead_idx', 'om_operation_log_pending_idx', 'om_operation_log_queued_idx']);
  }

  it('opens in WAL mode with the chosen durability, a 2 ms synchronous busy wait, and records the schema version', async () => {
    const database = track(new Database(files.path));
    track(createSqliteStore({ path: files.path, database }));
    expect(database.pragma('journal_mode', { simple: true })).toBe('wal');
    // The rest of the 5 s busy timeout is waited for on timers (sqlite-busy.test.ts).
    expect(database.pragma('busy_timeout', { simple: true })).toBe(2);
    expect(database.pragma('synchronous', { simple: true })).toBe(1);
    expect(database.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(database.pragma('secure_delete', { simple: true })).toBe(1);
    expect(database.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all()).toEqual(
      SQLITE_MIGRATIONS.map((migration) => migration.version),
    );
    expect(SQLITE_SCHEMA_VERSION).toBe(16);

    const fullPath = join(files.directory, 'deep', 'er', 'full.db');
    const full = track(new Database(':memory:'));
    track(createSqliteStore({ path: ':memory:', database: full, synchronous: 'FULL', busyTimeoutMs: 1234 }));
    expect(full.pragma('synchronous', { simple: true })).toBe(2);
    expect(full.pragma('busy_timeout', { simple: true })).toBe(2);
    const noWait = track(new Database(':memory:'));
    track(createSqliteStore({ path: ':memory:', database: noWait, busyTimeoutMs: 0 }));
    expect(noWait.pragma('busy_timeout', { simple: true })).toBe(0);
    track(createSqliteStore({ path: fullPath }));
    expect(existsSync(fullPath)).toBe(true);
  });

  it(
    'keeps records, observations, the reflection, messages, working memory and operations across a ' + 'reopen',
    async () => {
      const first = createSqliteStore({ path: files.path });
      await first.updateSettings({
        scope,
        memoryId,
        enabled: true,
        config: { snippetMaxTokens: 321 },
        runId: 'r',
        toolCallId: 't',
        operationId: generateId('op'),
      });
      await first.appendMessages({
        scope,
        memoryId,
        messages: ['a', 'b', 'c'].map((content, index) => ({
          messageKey: `id:${index}`,
          role: 'user',
          name: '',
          toolCallId: '',
          content,
          tokenCount: 2,
        })),
      });
      await observe(first, scope, ['User prefers tabs', 'Project uses Go'], 2);
      await reflect(
        first,
        'SUMMARY:\nshort\n\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: changed\n\nCONTRADICTIONS:\n',
        1,
      );
      await first.setWorkingMemoryEntry({ scope, memoryId, key: 'plan', valueJson: '{"step":1}', limits });
      await first.enqueueOperation({
        operationId: generateId('op'),
        scope,
        memoryId,
        operationType: 'observe',
        payload: { reason: 'later' },
        runId: 'r',
        toolCallId: 't',
      });
      const before = {
        record: await first.getRecord(memoryId),
        observations: await first.listObservations(memoryId),
        unobserved: await first.listUnobservedMessages(memoryId, 10),
        entries: await first.listWorkingMemoryEntries(memoryId),
        operations: await first.listOperations(memoryId),
        markers: await first.listMarkers(memoryId),
      };
      await first.dispose();

      const second = track(createSqliteStore({ path: files.path }));
      expect(await second.getRecord(memoryId)).toEqual(before.record);
      expect(before.record?.config).toEqual({ snippetMaxTokens: 321 });
      expect(before.record?.reflection?.structured.supersessions).toEqual([
        { newerSeq: 2, olderSeq: 1, reason: 'changed' },
      ]);
      expect(await second.listObservations(memoryId)).toEqual(before.observations);
      expect(
        (await second.listUnobservedMessages(memoryId, 10)).map((message) => [message.seq, message.content]),
      ).toEqual([[3, 'c']]);
      expect(await second.listWorkingMemoryEntries(memoryId)).toEqual(before.entries);
      expect(await second.listOperations(memoryId)).toEqual(before.operations);
      expect((await second.listOperations(memoryId)).map((operation) => operation.status)).toEqual([
        'applied',
        'applied',
        'applied',
        'queued',
      ]);
      expect(await second.listMarkers(memoryId)).toEqual(before.markers);
      expect(await second.countPendingOperations()).toBe(1);
      // Observed messages keep their keys but, from the next append on, not their text; a key is never stored twice.
      await second.appendMessages({
        scope,
        memoryId,
        messages: [{ messageKey: 'id:3', role: 'user', name: '', toolCallId: '', content: 'd', tokenCount: 2 }],
      });
      const raw = track(new Database(files.path, { readonly: true }));
      expect(raw.prepare('SELECT message_key, content, observed FROM om_messages ORDER BY seq').raw().all()).toEqual([
        ['id:0', '', 1],
        ['id:1', '', 1],
        ['id:2', 'c', 0],
        ['id:3', 'd', 0],
      ]);
      expect(
        (
          await second.appendMessages({
            scope,
            memoryId,
            messages: [{ messageKey: 'id:0', role: 'user', name: '', toolCallId: '', content: 'a', tokenCount: 2 }],
          })
        ).inserted,
      ).toBe(0);
    },
  );

  it("refuses bad options as OPTION_INVALID naming the option (a caller's mistake, not a failure to retry)", () => {
    for (const [option, value] of [
      ['busyTimeoutMs', -1],
      ['synchronous', 'OFF'],
      ['checkpoints', 'never'],
    ] as const) {
      expect(() => createSqliteStore({ path: files.path, [option]: value })).toThrow(
        expect.objectContaining({ code: 'OPTION_INVALID', data: { factory: 'createSqliteStore', option } }),
      );
    }
  });

  it('upgrades a database made with the reference schema, converting its rows', async () => {
    const raw = new Database(files.path);
    raw.exec(REFERENCE_DDL);
    const chunks = [
      {
        seq: 1,
        content: 'User prefers tabs',
        token_count: 5,
        importance: 0.9,
        created_at: '2024-05-01T10:00:00.123456789Z',
        source_start_index: 0,
        source_end_index: 3,
      },
      {
        seq: 2,
        content: 'Project uses Go',
        token_count: 4,
        importance: 0,
        created_at: '2024-05-01T10:05:00Z',
        source_start_index: 4,
        source_end_index: 5,
      },
    ];
    const reflection =
      'SUMMARY:\nThe user writes Go with tabs.\n\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]: stack ' +
      'changed\n\nCONTRADICTIONS:\n';
    const insertRecord = raw.prepare(
      `INSERT INTO om_memory_records VALUES (?, ?, ?, ?, 1, 7, 5, ?, 9, ?, 12, 1, ?, '2024-05-01T09:00:00Z', ` +
        `'2024-05-01T10:06:00.5Z')`,
    );
    insertRecord.run(
      'acme|conv-1|agent-x',
      'acme',
      'conv-1',
      'agent-x',
      JSON.stringify(chunks),
      reflection,
      '{"observe_min_tokens":1200,"snippet_max_tokens":500,"reflect_threshold_tokens":4000}',
    );
    insertRecord.run(
      'acme|conv-2|agent-x',
      'acme',
      'conv-2',
      'agent-x',
      '[]',
      '',
      '{"observe_min_tokens":1200,"snippet_max_tokens":900,"reflect_threshold_tokens":4000}',
    );
    const insertOperation = raw.prepare(
      `INSERT INTO om_operation_log VALUES (?, 'acme|conv-1|agent-x', 'run-1', 'system', ?, ?, ?, ?, ?, ` +
        `'2024-05-01T10:00:00Z', '2024-05-01T10:00:01Z')`,
    );
    insertOperation.run('op_1', 1, 'enable', 'applied', '{"enabled":true}', '');
    insertOperation.run('op_2', 2, 'observe', 'applied', '{"messages":4}', '');
    insertOperation.run('op_3', 2, 'observe', 'queued', '{"messages":2}', 'requeued after stale processing operation');
    raw
      .prepare(
        `INSERT INTO om_markers VALUES ('mk_1', 'acme|conv-1|agent-x', 'observation_start', 'op_2', 0, 0, 9, ` +
          `'{"seq":1}', '2024-05-01T10:00:00Z')`,
      )
      .run();
    raw
      .prepare(
        `INSERT INTO working_memory_entries VALUES ('acme|conv-1|agent-x', 'plan', '"ship it"'), ` +
          `('acme|conv-1|agent-x', ' todo ', '["a"]')`,
      )
      .run();
    raw.close();

    const store = track(createSqliteStore({ path: files.path }));
    const record = await store.getRecord(memoryId);
    expect(record).toMatchObject({
      memoryId,
      scope,
      enabled: true,
      stateVersion: 7,
      config: { snippetMaxTokens: 500 },
      observedThroughMessageSeq: 0,
      lastMessageSeq: 0,
      observationCount: 2,
      lastObservationSeq: 2,
      activeObservationTokens: 9,
      unreflectedObservationTokens: 4,
      createdAt: '2024-05-01T09:00:00.000Z',
      updatedAt: '2024-05-01T10:06:00.500Z',
    });
    expect(record?.reflection).toEqual({
      raw: reflection,
      structured: parseReflection(reflection),
      tokenCount: 12,
      throughSeq: 1,
      createdAt: '2024-05-01T10:06:00.500Z',
    });
    expect(record?.reflection?.structured.schemaVersion).toBe(1);
    expect(record?.reflection?.structured.summary).toBe('The user writes Go with tabs.');
    expect(
      (await store.listObservations(memoryId)).map((item) => [
        item.seq,
        item.content,
        item.importance,
        item.tokenCount,
        item.createdAt,
      ]),
    ).toEqual([
      [1, 'User prefers tabs', 0.9, 5, '2024-05-01T10:00:00.123Z'],
      [2, 'Project uses Go', null, 4, '2024-05-01T10:05:00.000Z'],
    ]);
    // Only an explicit enable/disable in the log makes `enabled` explicit; defaults are not frozen.
    expect(await store.getRecord(memoryIdOf(other))).toMatchObject({
      enabled: null,
      config: {},
      reflection: null,
      observationCount: 0,
    });

    const entries = await store.listWorkingMemoryEntries(memoryId);
    expect(entries.map((entry) => [entry.key, entry.valueJson])).toEqual([
      ['plan', '"ship it"'],
      ['todo', '["a"]'],
    ]);
    for (const entry of entries) {
      expect(entry.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(entry.updatedAt).toBe(entry.createdAt);
    }

    const operations = await store.listOperations(memoryId);
    expect(
      operations.map((operation) => [
        operation.operationId,
        operation.scopeSequence,
        operation.operationType,
        operation.status,
        operation.attempt,
      ]),
    ).toEqual([
      ['op_1', 1, 'enable', 'applied', 1],
      ['op_2', 2, 'observe', 'applied', 1],
      ['op_3', 3, 'observe', 'failed', 1],
    ]);
    expect(operations[2]?.payload).toEqual({ messages: 2 });
    expect(await store.countPendingOperations()).toBe(0);
    expect((await store.listMarkers(memoryId)).map((marker) => [marker.markerId, marker.payload])).toEqual([
      ['mk_1', { seq: 1 }],
    ]);

    const check = track(new Database(files.path, { readonly: true }));
    expect(check.prepare('SELECT MAX(version) FROM schema_migrations').pluck().get()).toBe(SQLITE_SCHEMA_VERSION);
    const columns = check.prepare("SELECT name FROM pragma_table_info('om_memory_records')").pluck().all();
    expect(columns).not.toContain('active_observations_json');
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');

    // The upgraded scope keeps working: new seqs follow the old ones.
    const next = await store.enqueueOperation({
      operationId: generateId('op'),
      scope,
      memoryId,
      operationType: 'observe',
      payload: {},
      runId: 'r',
      toolCallId: 't',
    });
    expect(next.scopeSequence).toBe(4);
    await store.appendMessages({
      scope,
      memoryId,
      messages: [{ messageKey: 'id:1', role: 'user', name: '', toolCallId: '', content: 'hi', tokenCount: 1 }],
    });
    const claimed = await store.claimOperation({ memoryId, leaseOwner: 'w', leaseMs: 60_000 });
    const applied = await store.completeObservation({
      operationId: claimed!.operationId,
      memoryId: claimed!.memoryId,
      leaseOwner: 'w',
      observations: [{ content: 'new', importance: 1, tokenCount: 2 }],
      throughMessageSeq: 1,
      markerIds: { start: generateId('mk'), end: generateId('mk') },
    });
    expect(applied.observations[0]?.seq).toBe(3);
    expect(applied.record.unreflectedObservationTokens).toBe(6);
  });

  /** A version-1 file: records (with their observations), then operations, markers and working memory by reference key. */
  function writeReferenceFile(data: {
    records: ReadonlyArray<readonly [tenantId: string, conversationId: string, agentId: string, contents: string[]]>;
    operations?: ReadonlyArray<readonly [operationId: string, referenceId: string, operationType: string]>;
    markers?: ReadonlyArray<readonly [markerId: string, referenceId: string]>;
    workingMemory?: ReadonlyArray<readonly [referenceId: string, key: string, valueJson: string]>;
  }): void {
    const raw = new Database(files.path);
    raw.exec(REFERENCE_DDL);
    const insertRecord = raw.prepare(
      `INSERT INTO om_memory_records VALUES (?, ?, ?, ?, 1, 3, 0, ?, ?, '', 0, 0, '{}', '2024-05-01T09:00:00Z', ` +
        `'2024-05-01T10:00:00Z')`,
    );
    for (const [tenantId, conversationId, agentId, contents] of data.records) {
      const chunks = contents.map((content, index) => ({
        seq: index + 1,
        content,
        token_count: 3,
        importance: 0.5,
        created_at: '2024-05-01T10:00:00Z',
      }));
      insertRecord.run(
        `${tenantId}|${conversationId}|${agentId}`,
        tenantId,
        conversationId,
        agentId,
        JSON.stringify(chunks),
        3 * chunks.length,
      );
    }
    const insertOperation = raw.prepare(
      `INSERT INTO om_operation_log VALUES (?, ?, 'run-1', 'system', 1, ?, 'applied', '{}', '', ` +
        `'2024-05-01T10:00:00Z', '2024-05-01T10:00:01Z')`,
    );
    for (const operation of data.operations ?? []) insertOperation.run(...operation);
    const insertMarker = raw.prepare(
      `INSERT INTO om_markers VALUES (?, ?, 'observation_start', 'op', 0, 0, 3, '{}', '2024-05-01T10:00:00Z')`,
    );
    for (const marker of data.markers ?? []) insertMarker.run(...marker);
    const insertEntry = raw.prepare('INSERT INTO working_memory_entries VALUES (?, ?, ?)');
    for (const entry of data.workingMemory ?? []) insertEntry.run(...entry);
    raw.close();
  }

  /** Opens the store on the file, with the process warnings its upgrade emitted. */
  async function upgradeReferenceFile(): Promise<{ store: MemoryStore; warnings: Array<Error & { code?: string }> }> {
    const warnings: Array<Error & { code?: string }> = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning);
    };
    process.on('warning', onWarning);
    try {
      const store = track(createSqliteStore({ path: files.path }));
      await new Promise((resolve) => setImmediate(resolve));
      return { store, warnings };
    } finally {
      process.off('warning', onWarning);
    }
  }

  const byConversation = <T extends { scope: Scope }>(items: readonly T[]): T[] =>
    [...items].sort((a, b) => (a.scope.conversationId < b.scope.conversationId ? -1 : 1));

  it(
    'upgrades reference scopes whose ids ours refuse (`conv 2`, an empty conversation) under valid ids, each ' +
      'whole: listed, read, exported and forgotten, the others unchanged',
    async () => {
      const kept: Scope = { tenantId: 'acme', conversationId: 'conv-1', agentId: 'default' };
      const renamed: Scope = { tenantId: 'acme', conversationId: 'conv-2.dd4f7bee', agentId: 'default' };
      const outsideRun: Scope = { tenantId: 'default', conversationId: 'unknown.e3b0c442', agentId: 'default' };
      writeReferenceFile({
        records: [
          ['acme', 'conv-1', 'default', ['User prefers tabs']],
          ['acme', 'conv 2', 'default', ['User lives in Lyon', 'User has a cat']],
        ],
        operations: [
          ['op_1', 'acme|conv-1|default', 'enable'],
          ['op_2', 'acme|conv 2|default', 'enable'],
          ['op_3', 'acme|conv 2|default', 'observe'],
        ],
        markers: [
          ['mk_1', 'acme|conv-1|default'],
          ['mk_2', 'acme|conv 2|default'],
        ],
        workingMemory: [
          ['acme|conv-1|default', 'plan', '"ship it"'],
          ['acme|conv 2|default', 'pet', '"cat"'],
          // The reference's working_memory tool outside a run: an empty conversation.
          ['default||default', 'goal', '"write docs"'],
          ['default||default', ' todo ', '["a"]'],
        ],
      });
      const { store, warnings } = await upgradeReferenceFile();
      const memory = createObservationalMemory({ store, observer: { observe: async () => [] } });
      const workingMemory = createWorkingMemory({ store });

      const listed = [
        ...byConversation((await memory.listScopes('acme')).items),
        ...(await memory.listScopes('default')).items,
      ];
      expect(
        listed.map((item) => [
          item.scope,
          item.memoryId,
          item.enabled,
          item.observationCount,
          item.workingMemoryEntries,
        ]),
      ).toEqual([
        [kept, memoryIdOf(kept), true, 1, 1],
        [renamed, memoryIdOf(renamed), true, 2, 1],
        [outsideRun, memoryIdOf(outsideRun), false, 0, 2],
      ]);
      for (const { scope: listedScope } of listed) {
        expect([listedScope.tenantId, listedScope.conversationId, listedScope.agentId].every(isScopeId)).toBe(true);
      }

      // Read and exported by the new ids, whole.
      expect(await memory.status(renamed)).toMatchObject({ observationCount: 2 });
      const exported = JSON.parse((await memory.export(renamed, 'json')).content) as {
        observations: Array<{ content: string }>;
      };
      expect(exported.observations.map((observation) => observation.content)).toEqual([
        'User lives in Lyon',
        'User has a cat',
      ]);
      expect((await memory.export(renamed, 'markdown')).content).toContain('conv-2.dd4f7bee');
      // Newest first.
      expect((await memory.operationPage(renamed)).items.map((operation) => operation.operationId)).toEqual([
        'op_3',
        'op_2',
      ]);
      expect((await store.listMarkers(memoryIdOf(renamed))).map((marker) => marker.markerId)).toEqual(['mk_2']);
      expect(await workingMemory.list(renamed)).toEqual({ entries: { pet: '"cat"' } });
      expect(await workingMemory.list(outsideRun)).toEqual({ entries: { goal: '"write docs"', todo: '["a"]' } });
      expect(await workingMemory.snippet(outsideRun)).toContain('write docs');

      // The scope with valid ids is as it was.
      const keptState = async () => ({
        observations: JSON.parse((await memory.export(kept, 'json')).content) as unknown,
        operations: (await memory.operationPage(kept)).items.map((operation) => operation.operationId),
        markers: (await store.listMarkers(memoryIdOf(kept))).map((marker) => marker.markerId),
        workingMemory: await workingMemory.list(kept),
      });
      const before = await keptState();
      expect(before).toMatchObject({
        observations: { observations: [{ content: 'User prefers tabs' }] },
        operations: ['op_1'],
        markers: ['mk_1'],
        workingMemory: { entries: { plan: '"ship it"' } },
      });

      // No row stays under a reference key; each rename is listed, and named in one warning.
      const check = track(new Database(files.path, { readonly: true }));
      for (const table of [
        'om_memory_records',
        'om_observations',
        'om_operation_log',
        'om_markers',
        'working_memory_entries',
      ]) {
        expect(check.prepare(`SELECT memory_id FROM ${table} WHERE memory_id LIKE '%|%'`).pluck().all()).toEqual([]);
      }
      expect(check.prepare('SELECT * FROM reference_import_renames ORDER BY old_memory_id').all()).toEqual([
        {
          old_memory_id: 'acme|conv 2|default',
          new_memory_id: memoryIdOf(renamed),
          tenant_id: 'acme',
          conversation_id: 'conv-2.dd4f7bee',
          agent_id: 'default',
        },
        {
          old_memory_id: 'default||default',
          new_memory_id: memoryIdOf(outsideRun),
          tenant_id: 'default',
          conversation_id: 'unknown.e3b0c442',
          agent_id: 'default',
        },
      ]);
      const notices = warnings.filter((warning) => warning.code === 'HARNESS_MEMORY_REFERENCE_IMPORT');
      expect(notices).toHaveLength(1);
      expect(notices[0]?.message).toContain(
        '"acme|conv 2|default" is now tenant_id acme, conversation_id conv-2.dd4f7bee, agent_id default',
      );
      expect(notices[0]?.message).toContain(
        '"default||default" is now tenant_id default, conversation_id unknown.e3b0c442, agent_id default',
      );

      // Forgotten by the new ids: nothing of them is left, and nothing else goes.
      await memory.forget(renamed);
      await memory.forget(outsideRun);
      expect((await memory.listScopes('acme')).items.map((item) => item.scope)).toEqual([kept]);
      expect((await memory.listScopes('default')).items).toEqual([]);
      expect(await memory.status(renamed)).toMatchObject({ observationCount: 0 });
      expect(await workingMemory.list(renamed)).toEqual({ entries: {} });
      expect(await workingMemory.list(outsideRun)).toEqual({ entries: {} });
      expect(
        check
          .prepare("SELECT COUNT(*) FROM om_observations WHERE content IN ('User lives in Lyon', 'User has a cat')")
          .pluck()
          .get(),
      ).toBe(0);
      expect(await keptState()).toEqual(before);
    },
  );

  it('keeps reference ids that differ only in refused characters apart, and valid ids exactly as they were', async () => {
    const long = 'x'.repeat(130);
    writeReferenceFile({
      records: [
        ['acme', 'conv-2', 'default', ['valid']],
        ['acme', 'conv 2', 'default', ['space']],
        ['acme', 'conv/2', 'default', ['slash']],
        // A valid id equal to what `conv 2` would become: `conv 2` takes a longer hash.
        ['acme', 'conv-2.dd4f7bee', 'default', ['look-alike']],
        ['acme', long, 'default', ['too long']],
        ['acme', 'conv-1', 'agent x', ['agent with a space']],
      ],
      // A scope with working memory only, its conversation holding the reference's separator.
      workingMemory: [
        ['acme|x|y|default', 'k', '"v"'],
        ['acme|conv 2|default', 'k', '"space"'],
      ],
    });
    const { store } = await upgradeReferenceFile();
    const memory = createObservationalMemory({ store, observer: { observe: async () => [] } });
    const workingMemory = createWorkingMemory({ store });
    const listed = byConversation((await memory.listScopes('acme')).items);
    expect(listed.map((item) => [item.scope.conversationId, item.scope.agentId, item.observationCount])).toEqual([
      ['conv-1', 'agent-x.2c6923c4', 1],
      ['conv-2', 'default', 1],
      ['conv-2.05ad00df', 'default', 1],
      ['conv-2.dd4f7bee', 'default', 1],
      ['conv-2.dd4f7bee04738707', 'default', 1],
      ['x-y.791a886d', 'default', 0],
      [`${'x'.repeat(119)}.3afbb132`, 'default', 1],
    ]);
    const contents = async (conversationId: string, agentId = 'default') =>
      (await store.listObservations(memoryIdOf({ tenantId: 'acme', conversationId, agentId }))).map(
        (observation) => observation.content,
      );
    expect(await contents('conv-2')).toEqual(['valid']);
    expect(await contents('conv-2.dd4f7bee')).toEqual(['look-alike']);
    expect(await contents('conv-2.dd4f7bee04738707')).toEqual(['space']);
    expect(await contents('conv-2.05ad00df')).toEqual(['slash']);
    expect(await contents(`${'x'.repeat(119)}.3afbb132`)).toEqual(['too long']);
    expect(await contents('conv-1', 'agent-x.2c6923c4')).toEqual(['agent with a space']);
    expect(
      await workingMemory.list({ tenantId: 'acme', conversationId: 'conv-2.dd4f7bee04738707', agentId: 'default' }),
    ).toEqual({ entries: { k: '"space"' } });
    expect(await workingMemory.list({ tenantId: 'acme', conversationId: 'x-y.791a886d', agentId: 'default' })).toEqual({
      entries: { k: '"v"' },
    });
    for (const { scope: listedScope } of listed) {
      expect([listedScope.tenantId, listedScope.conversationId, listedScope.agentId].every(isScopeId)).toBe(true);
    }
  });

  it('upgrades a version-11 database: a scope with only working memory, and no record, is listed', async () => {
    const raw = new Database(files.path);
    migrateSqliteDatabase(
      raw,
      SQLITE_MIGRATIONS.filter((migration) => migration.version <= 11),
    );
    const insertEntry = raw.prepare(
      `INSERT INTO working_memory_entries VALUES (?, ?, '"v"', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')`,
    );
    insertEntry.run(memoryId, 'plan');
    insertEntry.run(memoryId, 'goal');
    // A key no scope makes is left alone.
    insertEntry.run('not a memory id', 'x');
    raw.close();

    const store = track(createSqliteStore({ path: files.path }));
    const listed = await store.listScopes({ tenantId: 'acme', limit: 10 });
    expect(listed.map((summary) => [summary.scope, summary.memoryId])).toEqual([[scope, memoryId]]);
    expect((await store.getRecord(memoryId))?.stateVersion).toBe(1);
    expect((await store.listWorkingMemoryEntries(memoryId)).map((entry) => entry.key).sort()).toEqual(['goal', 'plan']);
  });

  it('upgrades a version-14 database: entries never expire, and an entry set with a time to live does', async () => {
    const raw = new Database(files.path);
    migrateSqliteDatabase(
      raw,
      SQLITE_MIGRATIONS.filter((migration) => migration.version <= 14),
    );
    raw
      .prepare(
        `INSERT INTO working_memory_entries VALUES (?, 'plan', '"v"', '2025-01-01T00:00:00.000Z', ` +
          `'2025-01-01T00:00:00.000Z')`,
      )
      .run(memoryId);
    raw.prepare('INSERT INTO working_memory_versions VALUES (?, 7, 1, 7)').run(memoryId);
    raw.close();

    const limits = { maxEntries: 10, maxTotalBytes: 1000 };
    const store = track(createSqliteStore({ path: files.path }));
    expect(await store.getWorkingMemoryEntry(memoryId, 'plan')).toMatchObject({ key: 'plan', expiresAt: null });
    const brief = await store.setWorkingMemoryEntry({
      scope,
      memoryId,
      key: 'brief',
      valueJson: '1',
      limits,
      ttlMs: 60_000,
    });
    expect(brief.expiresAt).not.toBeNull();
    expect((await store.listWorkingMemoryEntries(memoryId)).map((entry) => entry.key)).toEqual(['brief', 'plan']);
  });

  it("deletes expired rows in the scope's next write, and reads nothing more for a scope without them", async () => {
    const store = track(createSqliteStore({ path: files.path }));
    const raw = track(new Database(files.path, { readonly: true }));
    const rows = () =>
      raw
        .prepare('SELECT entry_key FROM working_memory_entries WHERE memory_id = ? ORDER BY entry_key')
        .pluck()
        .all(memoryId);
    const earliest = () =>
      raw.prepare('SELECT earliest_expiry FROM working_memory_versions WHERE memory_id = ?').pluck().get(memoryId);
    const limits = { maxEntries: 10, maxTotalBytes: 1000 };
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'keep', valueJson: '1', limits });
    expect(earliest()).toBeNull();
    const brief = await store.setWorkingMemoryEntry({
      scope,
      memoryId,
      key: 'brief',
      valueJson: '1',
      limits,
      ttlMs: 150,
    });
    expect(earliest()).toBe(brief.expiresAt);
    await untilEntryExpired(store, memoryId, 'brief');
    // Gone for readers, still a row until a write.
    expect(rows()).toEqual(['brief', 'keep']);
    expect(await store.deleteWorkingMemoryEntry(memoryId, 'missing')).toBe(false);
    expect(rows()).toEqual(['keep']);
    expect(earliest()).toBeNull();
    expect(
      raw
        .prepare('SELECT entry_count, total_bytes FROM working_memory_versions WHERE memory_id = ?')
        .raw()
        .get(memoryId),
    ).toEqual([1, 5]);
  });

  it('upgrades a version-4 database: operations keep their order, status and leases, markers their order', async () => {
    const raw = new Database(files.path);
    migrateSqliteDatabase(
      raw,
      SQLITE_MIGRATIONS.filter((migration) => migration.version <= 4),
    );
    raw
      .prepare(
        `INSERT INTO om_memory_records (memory_id, tenant_id, conversation_id, agent_id, enabled, ` +
          `state_version, created_at, updated_at) VALUES (?, 'acme', 'conv-1', 'agent-x', 1, 3, ` +
          `'2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')`,
      )
      .run(memoryId);
    const insertOperation = raw.prepare(`
      INSERT INTO om_operation_log (operation_id, memory_id, tenant_id, conversation_id, agent_id, run_id,
        tool_call_id, scope_sequence, operation_type, status,
        payload_json, error_text, attempt, lease_owner, lease_expires_at, available_at, created_at, updated_at)
      VALUES (?, ?, 'acme', 'conv-1', 'agent-x', 'run-1', 'system', ?, 'observe', ?, '{}', '', ?, ?, ?,
        '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')`);
    insertOperation.run('op_c', memoryId, 3, 'queued', 0, null, null);
    insertOperation.run('op_a', memoryId, 1, 'applied', 1, null, null);
    insertOperation.run('op_b', memoryId, 2, 'processing', 1, 'old-worker', '2025-01-01T00:05:00.000Z');
    const insertMarker = raw.prepare(
      `INSERT INTO om_markers VALUES (?, ?, ?, 'op_a', 1, 1, 3, '{}', '2025-01-01T00:00:00.000Z')`,
    );
    // Same created_at, ids out of order: only insertion order tells them apart.
    insertMarker.run('mk_z', memoryId, 'observation_start');
    insertMarker.run('mk_a', memoryId, 'observation_end');
    insertMarker.run('mk_m', memoryIdOf(other), 'observation_start');
    raw.close();

    const store = track(createSqliteStore({ path: files.path }));
    expect(
      (await store.listOperations(memoryId)).map((operation) => [
        operation.operationId,
        operation.scopeSequence,
        operation.status,
        operation.leaseOwner,
      ]),
    ).toEqual([
      ['op_a', 1, 'applied', null],
      ['op_b', 2, 'processing', 'old-worker'],
      ['op_c', 3, 'queued', null],
    ]);
    expect((await store.listMarkers(memoryId)).map((marker) => marker.markerId)).toEqual(['mk_z', 'mk_a']);
    expect((await store.listMarkers(memoryIdOf(other))).map((marker) => marker.markerId)).toEqual(['mk_m']);
    expect(await store.countPendingOperations(memoryId)).toBe(2);
    // The stale lease returns to the queue; then the scope's operations run in order.
    expect(await store.requeueStaleOperations({ graceSeconds: 0 })).toBe(1);
    expect((await store.claimOperation({ leaseOwner: 'w', leaseMs: 60_000 }))?.operationId).toBe('op_b');
    const next = await store.enqueueOperation({
      operationId: generateId('op'),
      scope,
      memoryId,
      operationType: 'observe',
      payload: {},
      runId: 'r',
      toolCallId: 't',
    });
    expect(next.scopeSequence).toBe(4);
    const check = track(new Database(files.path, { readonly: true }));
    expectOperationLogIntact(check);
  });

  it('upgrades a version-5 database: scopes with working memory get a version, which writes then change', async () => {
    const raw = new Database(files.path);
    migrateSqliteDatabase(
      raw,
      SQLITE_MIGRATIONS.filter((migration) => migration.version <= 5),
    );
    const insertEntry = raw.prepare(
      `INSERT INTO working_memory_entries VALUES (?, ?, '"v"', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')`,
    );
    insertEntry.run(memoryId, 'a');
    insertEntry.run(memoryId, 'b');
    raw.close();

    const store = track(createSqliteStore({ path: files.path }));
    const upgraded = await store.workingMemoryVersion!(memoryId);
    expect(upgraded).toBeGreaterThan(0);
    expect(await store.workingMemoryVersion!(memoryIdOf(other))).toBe(0);
    await store.deleteWorkingMemoryEntry(memoryId, 'a');
    expect(await store.workingMemoryVersion!(memoryId)).not.toBe(upgraded);
    // The count and bytes kept for the limits started from the rows found.
    await expect(
      store.setWorkingMemoryEntry({
        scope,
        memoryId,
        key: 'c',
        valueJson: '"v"',
        limits: { maxEntries: 2, maxTotalBytes: 100 },
      }),
    ).resolves.toBeDefined();
    await expect(
      store.setWorkingMemoryEntry({
        scope,
        memoryId,
        key: 'd',
        valueJson: '"v"',
        limits: { maxEntries: 2, maxTotalBytes: 100 },
      }),
    ).rejects.toSatisfy(isStoreError('WORKING_MEMORY_LIMIT'));
  });

  it('upgrades a version-10 database: each scope starts with the tokens of its unobserved messages', async () => {
    const raw = new Database(files.path);
    migrateSqliteDatabase(
      raw,
      SQLITE_MIGRATIONS.filter((migration) => migration.version <= 10),
    );
    const at = '2025-01-01T00:00:00.000Z';
    const insertRecord = raw.prepare(
      `INSERT INTO om_memory_records (memory_id, tenant_id, conversation_id, agent_id, state_version,
        observed_through_message_seq, last_message_seq, created_at, updated_at) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)`,
    );
    const insertMessage = raw.prepare(
      `INSERT INTO om_messages (memory_id, seq, message_key, role, name, tool_call_id, content, token_count)
       VALUES (?, ?, ?, 'user', '', '', 'text', ?)`,
    );
    const scopes = pendingScopes(scope, other);
    for (const { scope: stored, observedThrough, tokens } of scopes) {
      const id = memoryIdOf(stored);
      insertRecord.run(
        id,
        stored.tenantId,
        stored.conversationId,
        stored.agentId,
        observedThrough,
        tokens.length,
        at,
        at,
      );
      tokens.forEach((count, index) => insertMessage.run(id, index + 1, `k${index + 1}`, count));
    }
    raw.close();

    await expectPendingTokensKept(track(createSqliteStore({ path: files.path })), scopes);
  });

  it(
    'upgrades a version-6 database: observations become "mixed", a stored reflection seeds the supersession ' +
      'set (issue 12)',
    async () => {
      const raw = new Database(files.path);
      migrateSqliteDatabase(
        raw,
        SQLITE_MIGRATIONS.filter((migration) => migration.version <= 6),
      );
      const reflection = LEGACY_REFLECTION;
      raw
        .prepare(`INSERT INTO om_memory_records (memory_id, tenant_id, conversation_id, agent_id, enabled,
          state_version, observation_count, last_observation_seq,
      active_reflection, active_reflection_tokens, reflection_structured_json, reflection_through_seq,
      reflection_created_at, created_at, updated_at)
      VALUES (?, 'acme', 'conv-1', 'agent-x', 1, 3, 3, 3, ?, 9, ?, 3, '2025-01-01T00:00:00.000Z',
        '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')`)
        .run(memoryId, reflection, JSON.stringify(parseReflection(reflection)));
      const insert = raw.prepare(
        `INSERT INTO om_observations VALUES (?, ?, ?, 2, 0.5, '2025-01-01T00:00:00.000Z', 1, 1, 'op_old')`,
      );
      for (const [seq, content] of LEGACY_OBSERVATIONS) insert.run(memoryId, seq, content);
      raw.close();

      const store = track(createSqliteStore({ path: files.path }));
      await expectSeededSupersessionSet(store, memoryId);
      expect(await store.getRecord(memoryId)).toMatchObject({ rejectedReferenceCount: 2 });
      expect(await store.scopeGeneration(memoryId)).toBe(0);
      await store.forget(memoryId);
      expect(await store.scopeGeneration(memoryId)).not.toBe(0);
    },
  );

  it('upgrades a version-6 database to the dead status: rows, order, leases and indexes kept', async () => {
    const raw = new Database(files.path);
    migrateSqliteDatabase(
      raw,
      SQLITE_MIGRATIONS.filter((migration) => migration.version <= 6),
    );
    const insertOperation = raw.prepare(`
      INSERT INTO om_operation_log (operation_id, memory_id, tenant_id, conversation_id, agent_id, run_id,
        tool_call_id, scope_sequence, operation_type, status,
        payload_json, error_text, attempt, lease_owner, lease_expires_at, available_at, created_at, updated_at)
      VALUES (?, ?, 'acme', 'conv-1', 'agent-x', 'run-1', 'system', ?, 'observe', ?, '{"n":1}', ?, ?, ?, ?,
        '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')`);
    insertOperation.run('op_a', memoryId, 1, 'failed', 'boom', 3, null, null);
    insertOperation.run('op_b', memoryId, 2, 'processing', '', 4, 'old-worker', '2025-01-01T00:05:00.000Z');
    insertOperation.run('op_c', memoryId, 3, 'queued', '', 0, null, null);
    expect(() => insertOperation.run('op_x', memoryId, 9, 'dead', '', 0, null, null)).toThrow(/CHECK constraint/);
    raw.close();

    const store = track(createSqliteStore({ path: files.path }));
    expect(
      (await store.listOperations(memoryId)).map((item) => [
        item.operationId,
        item.scopeSequence,
        item.status,
        item.errorText,
        item.attempt,
        item.leaseOwner,
        item.payload,
      ]),
    ).toEqual([
      ['op_a', 1, 'failed', 'boom', 3, null, { n: 1 }],
      ['op_b', 2, 'processing', '', 4, 'old-worker', { n: 1 }],
      ['op_c', 3, 'queued', '', 0, null, { n: 1 }],
    ]);
    expect(await store.requeueStaleOperations({ graceSeconds: 0 })).toBe(1);
    const claimed = await store.claimOperation({ memoryId, leaseOwner: 'w', leaseMs: 60_000 });
    expect(claimed).toMatchObject({ operationId: 'op_b', attempt: 5 });
    await store.markOperationDead({ operationId: 'op_b', memoryId, leaseOwner: 'w', errorText: 'gave up' });
    expect(await store.countDeadOperations(memoryId)).toBe(1);
    expect((await store.claimOperation({ memoryId, leaseOwner: 'w', leaseMs: 60_000 }))?.operationId).toBe('op_c');
    const check = track(new Database(files.path, { readonly: true }));
    expectOperationLogIntact(check);
    // The dead count reads the partial index, not the scope's whole log.
    const plan = check
      .prepare("EXPLAIN QUERY PLAN SELECT COUNT(*) FROM om_operation_log WHERE memory_id = ? AND status = 'dead'")
      .all(memoryId) as Array<{ detail: string }>;
    expect(plan.map((row) => row.detail).join(' ')).toContain('om_operation_log_dead_idx');
  });

  it(
    "keeps each scope's working-memory count and bytes equal to its entries through any sequence of " + 'writes',
    async () => {
      const database = track(new Database(files.path));
      const store = track(createSqliteStore({ path: files.path, database }));
      const generous = { maxEntries: 12, maxTotalBytes: 600 };
      const random = seededRandom(7).below;
      for (let step = 0; step < 400; step++) {
        const target = random(3) === 0 ? other : scope;
        const key = `k${random(15)}`;
        if (random(4) === 0) await store.deleteWorkingMemoryEntry(memoryIdOf(target), key);
        else
          await store
            .setWorkingMemoryEntry({
              scope: target,
              memoryId: memoryIdOf(target),
              key,
              valueJson: JSON.stringify('é'.repeat(random(60))),
              limits: generous,
            })
            .catch(() => undefined);
      }
      // A scope whose entries were all deleted keeps its row at zero (its version still moves).
      expect(
        database
          .prepare('SELECT COUNT(*) FROM working_memory_versions WHERE entry_count = 0 AND total_bytes <> 0')
          .pluck()
          .get(),
      ).toBe(0);
      const kept = database
        .prepare(
          'SELECT memory_id, entry_count, total_bytes FROM working_memory_versions WHERE entry_count > 0 ORDER ' +
            'BY memory_id',
        )
        .all();
      const actual = database
        .prepare(
          'SELECT memory_id, COUNT(*) AS entry_count, SUM(length(CAST(entry_key AS BLOB)) + ' +
            'length(CAST(entry_json AS BLOB))) AS total_bytes FROM working_memory_entries GROUP BY memory_id ' +
            'ORDER BY memory_id',
        )
        .all();
      expect(kept).toEqual(actual);
    },
  );

  it("drops the text of observed messages at the scope's next append, keeping their keys", async () => {
    const database = track(new Database(files.path));
    const store = track(createSqliteStore({ path: files.path, database }));
    const text = (seq: number) =>
      database.prepare('SELECT content FROM om_messages WHERE memory_id = ? AND seq = ?').pluck().get(memoryId, seq);
    const message = (key: string, content: string) => ({
      messageKey: key,
      role: 'user',
      name: '',
      toolCallId: '',
      content,
      tokenCount: 3,
    });
    await store.appendMessages({
      scope,
      memoryId,
      messages: [message('id:1', 'first secret-ish text'), message('id:2', 'second')],
    });
    await observe(store, scope, ['noted'], 2);
    await store.appendMessages({ scope, memoryId, messages: [message('id:1', 'first secret-ish text')] });
    // A replayed key stores nothing, so nothing is cleared yet.
    expect(text(1)).toBe('first secret-ish text');
    await store.appendMessages({ scope, memoryId, messages: [message('id:3', 'third')] });
    expect([text(1), text(2), text(3)]).toEqual(['', '', 'third']);
    expect(
      database.prepare('SELECT message_key FROM om_messages WHERE memory_id = ? ORDER BY seq').pluck().all(memoryId),
    ).toEqual(['id:1', 'id:2', 'id:3']);
    expect(await store.listUnobservedMessages(memoryId, 3)).toEqual([
      expect.objectContaining({ messageKey: 'id:3', content: 'third', seq: 3 }),
    ]);
    expect((await store.appendMessages({ scope, memoryId, messages: [message('id:2', 'second')] })).inserted).toBe(0);
  });

  it.runIf(process.platform === 'linux')(
    'names a folder it cannot make under /proc instead of hanging (Node loops there)',
    () => {
      expect(() => createSqliteStore({ path: '/proc/harness-memory-test/deeper/state.db' })).toThrow(
        'Cannot create the folder /proc/harness-memory-test/deeper for the SQLite file ' +
          '/proc/harness-memory-test/deeper/state.db (ENOENT).',
      );
    },
  );

  it('makes missing folders, and names a file standing where a folder goes', () => {
    const path = join(files.directory, 'a', 'b', 'state.db');
    files.track(createSqliteStore({ path }));
    expect(existsSync(path)).toBe(true);
    writeFileSync(join(files.directory, 'file'), '');
    expect(() => createSqliteStore({ path: join(files.directory, 'file', 'state.db') })).toThrow(
      `Cannot create the folder ${join(files.directory, 'file')} for the SQLite file`,
    );
  });

  it('refuses a database whose schema is newer than it knows', () => {
    const raw = new Database(files.path);
    raw.exec(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL); INSERT INTO ' +
        'schema_migrations VALUES (99, 0);',
    );
    raw.close();
    expect(() => createSqliteStore({ path: files.path })).toThrow(/schema version 99/);
  });

  it('writes nothing once a newer version upgraded the file it has open, in the memory and the run store', async () => {
    const store = track(createSqliteStore({ path: files.path }));
    const runs = createSqliteRunStore({ path: files.path });
    const message = (key: string, content: string) => ({
      messageKey: key,
      role: 'user',
      name: '',
      toolCallId: '',
      content,
      tokenCount: 3,
    });
    try {
      const raw = new Database(files.path);
      expect(raw.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION);
      await store.appendMessages({ scope, memoryId, messages: [message('id:1', 'before')] });
      // What a newer version's migration leaves in the header.
      raw.pragma(`user_version = ${SQLITE_SCHEMA_VERSION + 1}`);
      raw.close();
      const upgraded = expect.objectContaining({
        code: 'STORE_FAILED',
        message: expect.stringContaining(`upgraded to schema version ${SQLITE_SCHEMA_VERSION + 1}`),
      });
      await expect(store.appendMessages({ scope, memoryId, messages: [message('id:2', 'after')] })).rejects.toEqual(
        upgraded,
      );
      await expect(
        store.setWorkingMemoryEntry({
          scope,
          memoryId,
          key: 'k',
          valueJson: '1',
          limits: { maxEntries: 10, maxTotalBytes: 1000 },
        }),
      ).rejects.toEqual(upgraded);
      await expect(runs.createRun(newRun('run_after'))).rejects.toEqual(upgraded);
      await expect(store.forget(memoryId)).rejects.toEqual(upgraded);
      // Reads go on; nothing was written.
      expect((await store.listUnobservedMessages(memoryId, 100)).map((item) => item.content)).toEqual(['before']);
    } finally {
      await runs.dispose();
    }
  });

  it('leaves no trace of a forgotten scope in the database or WAL file', async () => {
    const canary = 'CANARY-7f3a9c51-forget-me';
    const store = track(createSqliteStore({ path: files.path }));
    const message = (key: string, content: string) => ({
      messageKey: key,
      role: 'user',
      name: '',
      toolCallId: '',
      content,
      tokenCount: 5,
    });
    await store.appendMessages({
      scope,
      memoryId,
      messages: [message('id:1', `first ${canary}`), message('id:2', `second ${canary}`)],
    });
    await store.appendMessages({ scope: other, memoryId: memoryIdOf(other), messages: [message('id:1', 'unrelated')] });
    await observe(store, scope, [`observed ${canary}`], 1);
    await reflect(store, `SUMMARY:\n${canary}\n`, 1);
    await store.enqueueOperation({
      operationId: generateId('op'),
      scope,
      memoryId,
      operationType: 'observe',
      payload: { note: canary },
      runId: 'r',
      toolCallId: 't',
    });
    await store.setWorkingMemoryEntry({
      scope,
      memoryId,
      key: `key-${canary}`,
      valueJson: JSON.stringify(canary),
      limits,
    });

    const onDisk = (): Buffer[] =>
      [`${files.path}`, `${files.path}-wal`].filter((file) => existsSync(file)).map((file) => readFileSync(file));
    expect(onDisk().some((bytes) => bytes.includes(canary))).toBe(true);

    await store.forget(memoryId);
    expect(onDisk().some((bytes) => bytes.includes(canary))).toBe(false);
    expect(await store.getRecord(memoryIdOf(other))).toBeDefined();
    expect(await store.getRecord(memoryId)).toBeUndefined();
  });

  it('forgets while another connection still reads, warns that the WAL is emptied later, and empties it', async () => {
    const store = track(createSqliteStore({ path: files.path, busyTimeoutMs: 50 }));
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'k', valueJson: '"secret"', limits });
    const reader = track(new Database(files.path));
    reader.exec('BEGIN');
    reader.prepare('SELECT COUNT(*) FROM working_memory_entries').get();
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'k2', valueJson: '"later"', limits });
    const warned = new Promise<Error>((resolve) => {
      const onWarning = (warning: Error & { code?: string }): void => {
        if (warning.code !== 'HARNESS_MEMORY_FORGET_LOG') return;
        process.off('warning', onWarning);
        resolve(warning);
      };
      process.on('warning', onWarning);
    });
    await store.forget(memoryId);
    expect((await warned).message).toMatch(/was deleted, but another connection kept the write-ahead log/);
    expect(await store.listWorkingMemoryEntries(memoryId)).toEqual([]);
    reader.exec('COMMIT');
    await vi.waitFor(() => expect(readFileSync(`${files.path}-wal`).length).toBe(0), { timeout: 5000, interval: 20 });
  });

  it('empties the WAL on a later attempt when what held it lets go within the busy timeout (a forget under load)', async () => {
    // Another connection's checkpoint (the background one of this process, say) makes the
    // first attempt fail at once; a reader stands in for it here.
    const store = track(createSqliteStore({ path: files.path, busyTimeoutMs: 300 }));
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'k', valueJson: '"secret"', limits });
    const reader = track(new Database(files.path, { timeout: 0 }));
    reader.exec('BEGIN');
    reader.prepare('SELECT COUNT(*) FROM working_memory_entries').get();
    await store.setWorkingMemoryEntry({ scope, memoryId, key: 'k2', valueJson: '"later"', limits });
    const forgetting = store.forget(memoryId);
    reader.exec('COMMIT');
    await forgetting;
    expect(await store.listWorkingMemoryEntries(memoryId)).toEqual([]);
    expect(readFileSync(`${files.path}-wal`).length).toBe(0);
  });

  it('shares one file between two stores: each sees the other, and no operation is claimed twice', async () => {
    const left = track(createSqliteStore({ path: files.path }));
    const right = track(createSqliteStore({ path: files.path }));
    await left.appendMessages({
      scope,
      memoryId,
      messages: [{ messageKey: 'id:1', role: 'user', name: '', toolCallId: '', content: 'hello', tokenCount: 1 }],
    });
    expect((await right.getRecord(memoryId))?.lastMessageSeq).toBe(1);
    await right.setWorkingMemoryEntry({ scope, memoryId, key: 'k', valueJson: '1', limits });
    expect((await left.getWorkingMemoryEntry(memoryId, 'k'))?.valueJson).toBe('1');
    // A working-memory snippet reused by one instance is rebuilt after a write through the other.
    const leftMemory = createWorkingMemory({ store: left });
    const rightMemory = createWorkingMemory({ store: right });
    expect(await leftMemory.snippet(scope)).toContain('k: 1');
    expect(await leftMemory.snippet(scope)).toContain('k: 1');
    await rightMemory.set(scope, 'k', 2);
    expect(await leftMemory.snippet(scope)).toContain('k: 2');
    await rightMemory.delete(scope, 'k');
    expect(await leftMemory.snippet(scope)).toBe('');
    await right.forget(memoryId);
    await rightMemory.set(scope, 'k', 3);
    expect(await leftMemory.snippet(scope)).toContain('k: 3');

    const scopes = Array.from({ length: 4 }, (_, index): Scope => ({
      tenantId: 'acme',
      conversationId: `c-${index}`,
      agentId: 'a',
    }));
    for (let round = 0; round < 5; round++) {
      for (const target of scopes) {
        await (round % 2 === 0 ? left : right).enqueueOperation({
          operationId: generateId('op'),
          scope: target,
          memoryId: memoryIdOf(target),
          operationType: 'observe',
          payload: { round },
          runId: 'r',
          toolCallId: 't',
        });
      }
    }
    const claimedIds: string[] = [];
    const workers = [
      { store: left, owner: 'left' },
      { store: right, owner: 'right' },
    ];
    for (let step = 0; step < 100 && claimedIds.length < 20; step++) {
      const claims = await Promise.all(
        workers.map(({ store, owner }) => store.claimOperation({ leaseOwner: owner, leaseMs: 60_000 })),
      );
      for (const [index, claimed] of claims.entries()) {
        if (!claimed) continue;
        claimedIds.push(claimed.operationId);
        const owner = workers[index]!.owner;
        // The other instance applies it: leases live in the file, not in the process.
        await workers[1 - index]!.store.completeWithoutChange({
          operationId: claimed.operationId,
          memoryId: claimed.memoryId,
          leaseOwner: owner,
          note: 'done',
        });
      }
    }
    expect(claimedIds).toHaveLength(20);
    expect(new Set(claimedIds).size).toBe(20);
    expect(await left.countPendingOperations()).toBe(0);
    for (const target of scopes) {
      const log = await right.listOperations(memoryIdOf(target));
      expect(log.map((operation) => operation.payload['round'])).toEqual([0, 1, 2, 3, 4]);
      expect(log.every((operation) => operation.status === 'applied' && operation.attempt === 1)).toBe(true);
    }
  });

  it('reports a database locked by another process as a StoreError once the busy timeout passes', async () => {
    const store = track(createSqliteStore({ path: files.path, busyTimeoutMs: 50 }));
    const blocker = track(new Database(files.path));
    blocker.exec('BEGIN IMMEDIATE');
    const attempt = store.setWorkingMemoryEntry({ scope, memoryId, key: 'k', valueJson: '1', limits });
    await expect(attempt).rejects.toSatisfy(isStoreError('STORE_FAILED'));
    await expect(attempt).rejects.toThrow(/locked by another process/);
    await expect(attempt).rejects.toSatisfy(
      (error: unknown) => error instanceof Error && (error.cause as { code?: string }).code === 'SQLITE_BUSY',
    );
    blocker.exec('ROLLBACK');
    await expect(
      store.setWorkingMemoryEntry({ scope, memoryId, key: 'k', valueJson: '1', limits }),
    ).resolves.toMatchObject({ key: 'k' });
  });

  it('refuses durations that would corrupt leases', async () => {
    const store = track(createSqliteStore({ path: files.path }));
    await expect(store.requeueStaleOperations({ graceSeconds: -1 })).rejects.toSatisfy(isStoreError('STORE_FAILED'));
    await store.enqueueOperation({
      operationId: generateId('op'),
      scope,
      memoryId,
      operationType: 'observe',
      payload: {},
      runId: 'r',
      toolCallId: 't',
    });
    await expect(store.claimOperation({ memoryId, leaseOwner: 'w', leaseMs: Number.NaN })).rejects.toSatisfy(
      isStoreError('STORE_FAILED'),
    );
    expect((await store.listOperations(memoryId))[0]?.status).toBe('queued');
  });
});

// The reference harness's tables, as its Go code creates them (no schema_migrations).
const REFERENCE_DDL = `
CREATE TABLE om_memory_records (
  memory_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, conversation_id TEXT NOT NULL, agent_id TEXT NOT NULL,
  enabled BOOLEAN NOT NULL, state_version BIGINT NOT NULL, last_observed_message_index BIGINT NOT NULL,
  active_observations_json TEXT NOT NULL, active_observation_tokens BIGINT NOT NULL, active_reflection TEXT NOT NULL,
  active_reflection_tokens BIGINT NOT NULL, last_reflected_observation_seq BIGINT NOT NULL, config_json TEXT NOT NULL,
  created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL, UNIQUE (tenant_id, conversation_id, agent_id)
);
CREATE TABLE om_operation_log (
  operation_id TEXT PRIMARY KEY, memory_id TEXT NOT NULL, run_id TEXT NOT NULL, tool_call_id TEXT NOT NULL,
  scope_sequence BIGINT NOT NULL, operation_type TEXT NOT NULL, status TEXT NOT NULL, payload_json TEXT NOT NULL,
  error_text TEXT NOT NULL, created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL
);
CREATE INDEX om_operation_log_memory_scope_seq_idx ON om_operation_log (memory_id, scope_sequence);
CREATE INDEX om_operation_log_status_created_idx ON om_operation_log (status, created_at);
CREATE TABLE om_markers (
  marker_id TEXT PRIMARY KEY, memory_id TEXT NOT NULL, marker_type TEXT NOT NULL, cycle_id TEXT NOT NULL,
  message_index_start BIGINT NOT NULL, message_index_end BIGINT NOT NULL, token_count BIGINT NOT NULL,
  payload_json TEXT NOT NULL, created_at TIMESTAMP NOT NULL
);
CREATE INDEX om_markers_memory_created_idx ON om_markers (memory_id, created_at);
CREATE TABLE working_memory_entries (memory_id TEXT, entry_key TEXT, entry_json TEXT, PRIMARY KEY (memory_id,
  entry_key));
`;
