import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { useSqliteTestFiles } from '../../../test/support/sqlite-test-files.js';
import { memoryIdOf } from '../../core/scope.js';
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
