import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { useSqliteTestFiles } from '../../../test/support/sqlite-test-files.js';
import { memoryIdOf } from '../../core/scope.js';
import { checkNewWorkingMemoryKey, normalizeWorkingMemoryKey } from '../../core/working-memory.js';
import { createWorkingMemory } from '../../memory/working-memory.js';
import type { MemoryStore } from '../store.js';
import { createSqliteRunStore } from './sqlite-run-store.js';
import { createSqliteStore } from './sqlite-store.js';
import { migrateSqliteDatabase, SQLITE_MIGRATIONS } from './sqlite-migrations.js';

const OPENAI_KEY = 'sk-proj-Q3vX9mT2kL8pR4wZ7nB1cD6fH0jY5sA2';
const memoryId = memoryIdOf({ tenantId: 'acme', conversationId: 'conv-1', agentId: 'agent-x' });
const referenceId = 'acme|conv-1|agent-x';

describe('sqlite: reference import redaction', () => {
  const files = useSqliteTestFiles('harness-memory-reference-import-');

  /** A version-1 (reference) file holding a secret in every kind of text it kept. */
  function writeReferenceFileWithSecrets(): void {
    const raw = new Database(files.path);
    // Migration 1 is the reference's own DDL.
    migrateSqliteDatabase(raw, SQLITE_MIGRATIONS.slice(0, 1));
    const chunks = [
      { seq: 1, content: `User deploys with ${OPENAI_KEY}`, token_count: 3, importance: 0.5 },
      // Hidden characters split the key: today's write paths strip them before redacting.
      { seq: 2, content: `Backup key sk-proj-\u200bQ3vX9mT2kL8pR4wZ7nB1cD6fH0jY5sA2`, token_count: 3 },
      { seq: 3, content: 'User prefers tabs', token_count: 4, importance: 0.9 },
    ];
    raw
      .prepare(
        `INSERT INTO om_memory_records VALUES (?, 'acme', 'conv-1', 'agent-x', 1, 3, 0, ?, 10, ?, 7, 3, '{}', ` +
          `'2024-05-01T09:00:00Z', '2024-05-01T10:00:00Z')`,
      )
      .run(referenceId, JSON.stringify(chunks), `SUMMARY:\nThe user's key is ${OPENAI_KEY}.`);
    raw
      .prepare(
        `INSERT INTO om_operation_log VALUES ('op_1', ?, 'run-1', 'system', 1, 'observe', 'failed', '{"messages":2}', ` +
          `?, '2024-05-01T10:00:00Z', '2024-05-01T10:00:01Z')`,
      )
      .run(referenceId, `openai: 401 {"error":"Incorrect API key provided: ${OPENAI_KEY}"}`);
    const insertEntry = raw.prepare('INSERT INTO working_memory_entries VALUES (?, ?, ?)');
    insertEntry.run(referenceId, 'password', '"hunter22"');
    insertEntry.run(referenceId, 'deploy', JSON.stringify({ api_key: OPENAI_KEY, host: 'example.org' }));
    insertEntry.run(referenceId, 'plan', '"ship it"');
    // A key that is itself a secret (today's set refuses one), next to the key it redacts to.
    insertEntry.run(referenceId, OPENAI_KEY, '"first"');
    insertEntry.run(referenceId, '[REDACTED:openai_key]', '"second"');
    raw.close();
  }

  it('redacts working-memory values, keys, observations, the reflection and error texts of a reference file', async () => {
    writeReferenceFileWithSecrets();
    const store = files.track(createSqliteStore({ path: files.path }));

    const entries = Object.fromEntries(
      (await store.listWorkingMemoryEntries(memoryId)).map((entry) => [entry.key, entry.valueJson]),
    );
    // Labelled by the entry's own key, as `set('password', 'hunter22')` stores it.
    expect(entries).toEqual({
      password: '"[REDACTED:labelled_secret]"',
      deploy: '{"api_key":"[REDACTED:openai_key]","host":"example.org"}',
      plan: '"ship it"',
      '[REDACTED:openai_key]': '"second"',
      '[REDACTED:openai_key] (2)': '"first"',
    });

    const observations = await store.listObservations(memoryId);
    expect(observations.map((observation) => observation.content)).toEqual([
      'User deploys with [REDACTED:openai_key]',
      'Backup key [REDACTED:openai_key]',
      'User prefers tabs',
    ]);
    // A redacted text's tokens are counted again; an unchanged one keeps the reference's count.
    expect(observations[2]?.tokenCount).toBe(4);
    const record = await store.getRecord(memoryId);
    expect(record?.reflection?.raw).toBe("SUMMARY:\nThe user's key is [REDACTED:openai_key].");
    expect(record?.reflection?.structured.summary).toBe("The user's key is [REDACTED:openai_key].");

    const [operation] = await store.listOperations(memoryId);
    expect(operation?.errorText).toBe('openai: 401 {"error":"Incorrect API key provided: [REDACTED:openai_key]"}');
    expect(operation?.payload).toEqual({ messages: 2 });

    // Nothing of the key is left anywhere in the file.
    const check = files.track(new Database(files.path, { readonly: true }));
    const tables = check.prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
    for (const table of tables) {
      const rows = JSON.stringify(check.prepare(`SELECT * FROM "${table}"`).all());
      expect(rows, table).not.toContain('Q3vX9mT2kL8pR4wZ7nB1cD6fH0jY5sA2');
      expect(rows, table).not.toContain('hunter22');
    }
  });

  it('redacts the same way when the run store is the first to open the file', async () => {
    writeReferenceFileWithSecrets();
    const runStore = createSqliteRunStore({ path: files.path });
    await runStore.dispose();
    const store = files.track(createSqliteStore({ path: files.path }));
    const entries = await store.listWorkingMemoryEntries(memoryId);
    expect(entries.find((entry) => entry.key === 'password')?.valueJson).toBe('"[REDACTED:labelled_secret]"');
  });
});

describe('sqlite: reference import', () => {
  const files = useSqliteTestFiles('harness-memory-reference-import-');
  const scope = { tenantId: 'acme', conversationId: 'conv-1', agentId: 'agent-x' };

  /** A version-1 (reference) file holding one record for `scope`, then whatever `fill` adds. */
  function writeReferenceFile(
    record: {
      chunks?: unknown[];
      reflection?: string;
      reflectedThroughSeq?: number;
      createdAt?: string;
      updatedAt?: string;
    },
    fill: (raw: Database.Database) => void = () => {},
  ): void {
    const raw = new Database(files.path);
    migrateSqliteDatabase(raw, SQLITE_MIGRATIONS.slice(0, 1));
    raw
      .prepare(
        `INSERT INTO om_memory_records VALUES (?, 'acme', 'conv-1', 'agent-x', 1, 3, 0, ?, 10, ?, 7, ?, '{}', ?, ?)`,
      )
      .run(
        referenceId,
        JSON.stringify(record.chunks ?? []),
        record.reflection ?? '',
        record.reflectedThroughSeq ?? 0,
        record.createdAt ?? '2024-05-01T09:00:00Z',
        record.updatedAt ?? '2024-05-01T10:00:00Z',
      );
    fill(raw);
    raw.close();
  }

  /** Opens the store on the file, with the process warnings its upgrade emitted. */
  async function upgrade(): Promise<{ store: MemoryStore; warnings: string[] }> {
    const warnings: string[] = [];
    const onWarning = (warning: Error & { code?: string }): void => {
      if (warning.code === 'HARNESS_MEMORY_REFERENCE_IMPORT') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    try {
      const store = files.track(createSqliteStore({ path: files.path }));
      await new Promise((resolve) => setImmediate(resolve));
      return { store, warnings };
    } finally {
      process.off('warning', onWarning);
    }
  }

  it('orders operations of one scope_sequence by time, not by the text of RFC3339Nano timestamps', async () => {
    // Go's RFC3339Nano drops trailing zeros, so the whole second sorts after its half as text.
    writeReferenceFile({}, (raw) => {
      const insertOperation = raw.prepare(
        `INSERT INTO om_operation_log VALUES (?, ?, 'run-1', 'system', 1, ?, 'applied', '{}', '', ?, ?)`,
      );
      insertOperation.run('op_2', referenceId, 'enable', '2024-05-01T10:00:00.5Z', '2024-05-01T10:00:00.5Z');
      insertOperation.run('op_1', referenceId, 'disable', '2024-05-01T10:00:00Z', '2024-05-01T10:00:00Z');
    });
    const { store } = await upgrade();

    expect((await store.getRecord(memoryId))?.enabled).toBe(true);
    expect(
      (await store.listOperations(memoryId)).map((operation) => [
        operation.scopeSequence,
        operation.operationId,
        operation.createdAt,
      ]),
    ).toEqual([
      [1, 'op_1', '2024-05-01T10:00:00.000Z'],
      [2, 'op_2', '2024-05-01T10:00:00.500Z'],
    ]);
  });

  it('breaks ties of scope_sequence and time by the order the reference wrote the rows', async () => {
    writeReferenceFile({}, (raw) => {
      const insertOperation = raw.prepare(
        `INSERT INTO om_operation_log VALUES (?, ?, 'run-1', 'system', 1, ?, 'applied', '{}', '', ` +
          `'2024-05-01T10:00:00Z', '2024-05-01T10:00:00Z')`,
      );
      insertOperation.run('op_b', referenceId, 'enable');
      insertOperation.run('op_a', referenceId, 'disable');
    });
    const { store } = await upgrade();

    expect((await store.getRecord(memoryId))?.enabled).toBe(false);
    expect((await store.listOperations(memoryId)).map((operation) => operation.operationId)).toEqual(['op_b', 'op_a']);
  });

  it('gives a new observation a seq past every seq the reference assigned, skipped chunks included', async () => {
    writeReferenceFile({
      chunks: [
        { seq: 1, content: 'User prefers tabs', token_count: 4 },
        // Skipped on upgrade: empty once invisible characters are stripped, and not text.
        { seq: 2, content: '\u200b', token_count: 1 },
        { seq: 3, content: 42, token_count: 1 },
      ],
      reflection: 'SUMMARY:\nUser prefers tabs.',
      reflectedThroughSeq: 3,
    });
    const { store } = await upgrade();
    expect(await store.getRecord(memoryId)).toMatchObject({
      observationCount: 1,
      lastObservationSeq: 3,
      reflection: { throughSeq: 3 },
    });

    const imported = await store.importObservations!({
      scope,
      memoryId,
      observations: [{ content: 'User now prefers spaces', tokenCount: 5, importance: null }],
      runId: 'r',
      toolCallId: 't',
      operationId: 'op-import',
    });
    expect(imported.observations[0]?.seq).toBe(4);
    expect(imported.record.unreflectedObservationTokens).toBe(5);
    // The reflection does not cover the new observation, so correcting it keeps the reflection.
    const corrected = await store.correctObservation({
      scope,
      memoryId,
      seq: 4,
      change: { kind: 'replace', content: 'User now prefers two spaces', tokenCount: 6 },
      runId: 'r',
      toolCallId: 't',
      operationId: 'op-correct',
    });
    expect(corrected?.record.reflection?.raw).toBe('SUMMARY:\nUser prefers tabs.');
  });

  it("keeps the seq counter at the reflection's through seq when that is past every chunk", async () => {
    writeReferenceFile({
      chunks: [{ seq: 1, content: 'User prefers tabs', token_count: 4 }],
      reflection: 'SUMMARY:\nUser prefers tabs.',
      reflectedThroughSeq: 5,
    });
    const { store } = await upgrade();
    expect(await store.getRecord(memoryId)).toMatchObject({ observationCount: 1, lastObservationSeq: 5 });
  });

  it('renames working-memory keys the current rules refuse to valid ones that can be read and deleted', async () => {
    const hashOf = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 8);
    const long = 'k'.repeat(300);
    // What `line1\nline2` becomes, taken already by a valid key: the renamed one takes ` (2)`.
    const lineKey = `line1-line2.${hashOf('line1\nline2')}`;
    writeReferenceFile({}, (raw) => {
      const insertEntry = raw.prepare('INSERT INTO working_memory_entries VALUES (?, ?, ?)');
      insertEntry.run(referenceId, 'plan', '"ship it"');
      insertEntry.run(referenceId, 'line1\nline2', '"lines"');
      insertEntry.run(referenceId, lineKey, '"taken"');
      insertEntry.run(referenceId, long, '"long"');
      insertEntry.run(referenceId, '..', '"dots"');
      insertEntry.run(referenceId, 'tab\there', '"tab"');
      insertEntry.run(referenceId, 'zero\u200bwidth', '"hidden"');
      insertEntry.run(referenceId, `${OPENAI_KEY}\nnote`, '"secret"');
      insertEntry.run(referenceId, `sk-proj-\u200b${OPENAI_KEY.slice('sk-proj-'.length)}`, '"split secret"');
    });
    const { store, warnings } = await upgrade();
    const workingMemory = createWorkingMemory({ store });

    const expected: Record<string, string> = {
      plan: '"ship it"',
      [lineKey]: '"taken"',
      [`${lineKey} (2)`]: '"lines"',
      [`${'k'.repeat(119)}.${hashOf(long)}`]: '"long"',
      [`...${hashOf('..')}`]: '"dots"',
      [`tab-here.${hashOf('tab\there')}`]: '"tab"',
      // Invisible characters are stripped, as from stored text: they can split a secret.
      [`zerowidth.${hashOf('zerowidth')}`]: '"hidden"',
      [`[REDACTED:openai_key].${hashOf('[REDACTED:openai_key]')}`]: '"split secret"',
      // Redacted first; the hash is of the redacted key, so nothing of the secret is kept.
      [`[REDACTED:openai_key]-note.${hashOf('[REDACTED:openai_key]\nnote')}`]: '"secret"',
    };
    expect((await workingMemory.list(scope)).entries).toEqual(expected);
    const check = files.track(new Database(files.path, { readonly: true }));
    const storedKeys = JSON.stringify(check.prepare('SELECT entry_key FROM working_memory_entries').pluck().all());
    expect(storedKeys).not.toContain('Q3vX9mT2kL8pR4wZ7nB1cD6fH0jY5sA2');
    for (const key of Object.keys(expected)) {
      expect(checkNewWorkingMemoryKey(normalizeWorkingMemoryKey(key))).toBe(key);
      expect(await workingMemory.get(scope, key)).toMatchObject({ found: true, value: expected[key] });
      expect(await workingMemory.delete(scope, key)).toMatchObject({ deleted: true });
    }
    expect((await workingMemory.list(scope)).entries).toEqual({});

    // Each renamed key is named in a warning, its refused characters escaped.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('7 working-memory key(s)');
    expect(warnings[0]).toContain(`"line1\\nline2" is now "${lineKey} (2)"`);
    expect(warnings[0]).toContain(`"zero\\u200bwidth" is now "zerowidth.${hashOf('zerowidth')}"`);
    expect(warnings[0]).toContain(`in tenant_id acme, conversation_id conv-1, agent_id agent-x, "..`);
    // A long key is shown cut.
    expect(warnings[0]).toContain(`"${'k'.repeat(128)}"… is now`);
    expect(warnings[0]).not.toContain('Q3vX9mT2kL8pR4wZ7nB1cD6fH0jY5sA2');
  });

  it('keeps an entry whose key differs from another only by surrounding spaces under a free name', async () => {
    // The reference checked the trimmed key but stored it as given: one scope could hold both.
    writeReferenceFile({}, (raw) => {
      const insertEntry = raw.prepare('INSERT INTO working_memory_entries VALUES (?, ?, ?)');
      insertEntry.run(referenceId, ' plan ', '{"step":2}');
      insertEntry.run(referenceId, 'plan', '{"step":1}');
      insertEntry.run(referenceId, 'plan (2)', '"taken"');
      insertEntry.run(referenceId, 'notes ', '"n"');
      insertEntry.run(referenceId, ' notes', '"m"');
    });
    const { store, warnings } = await upgrade();

    // The key that was already trimmed keeps its name; each other takes the next free one.
    expect((await createWorkingMemory({ store }).list(scope)).entries).toEqual({
      plan: '{"step":1}',
      'plan (2)': '"taken"',
      'plan (3)': '{"step":2}',
      notes: '"n"',
      'notes (2)': '"m"',
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('2 working-memory key(s)');
    expect(warnings[0]).toContain('trimmed of surrounding spaces');
    expect(warnings[0]).toContain(
      'in tenant_id acme, conversation_id conv-1, agent_id agent-x, " plan " is now "plan (3)"',
    );
    expect(warnings[0]).toContain('" notes" is now "notes (2)"');
  });

  it('reads a date-time without an offset (SQLite CURRENT_TIMESTAMP form) as UTC, not local time', async () => {
    writeReferenceFile({
      chunks: [{ seq: 1, content: 'User prefers tabs', token_count: 4, created_at: '2024-05-01T10:30:00.25' }],
      createdAt: '2024-05-01 09:00:00',
      updatedAt: '2024-05-01 10:00:00',
    });
    const { store } = await upgrade();
    expect(await store.getRecord(memoryId)).toMatchObject({
      createdAt: '2024-05-01T09:00:00.000Z',
      updatedAt: '2024-05-01T10:00:00.000Z',
    });
    expect((await store.listObservations(memoryId))[0]?.createdAt).toBe('2024-05-01T10:30:00.250Z');
  });
});
