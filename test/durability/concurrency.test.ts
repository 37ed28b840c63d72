/**
 * Concurrency: two OS processes on one SQLite file, each doing 1,000 observes and 1,000
 * working-memory writes, alternating between a shared scope and a scope of its own, and
 * appending 1,000 events to one shared run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { memoryIdOf } from '../../src/core/scope.js';
import { createSqliteRunStore } from '../../src/storage/sqlite/sqlite-run-store.js';
import { audit, coveredSeqs, jsonLine, messagesObservedAndCleared, range, runChild } from './durability-support.js';
import type { AuditRows, ChildResult } from './durability-support.js';

const COUNT = 1000;
const PROCS = ['p0', 'p1'] as const;
const SHARED = memoryIdOf({ tenantId: 'tenant-c', conversationId: 'conv-shared', agentId: 'agent-x' });
const ownOf = (proc: string): string =>
  memoryIdOf({ tenantId: 'tenant-c', conversationId: `conv-own-${proc}`, agentId: 'agent-x' });
// Even iterations go to the shared scope, odd ones to the process's own.
const indexesOf = (scope: 'shared' | 'own'): number[] =>
  Array.from({ length: COUNT }, (_, index) => index).filter((index) => index % 2 === (scope === 'shared' ? 0 : 1));

describe('durability: two processes on one SQLite file', () => {
  let directory: string;
  let results: ChildResult[];
  let rows: AuditRows;
  let events: Array<{ seq: number; payload_json: string }>;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'harness-memory-concurrency-'));
    const path = join(directory, 'state.db');
    const runStore = createSqliteRunStore({ path });
    await runStore.createRun({
      runId: 'run-shared',
      scope: { tenantId: 'tenant-c', conversationId: 'conv-shared', agentId: 'agent-x' },
      status: 'running',
      prompt: 'shared',
      model: 'none',
      systemPrompt: '',
      maxSteps: 1,
      output: null,
      error: null,
      steps: 0,
      usage: { inputTokens: 0, outputTokens: 0 },
      parentRunId: null,
    });
    await runStore.dispose();
    // Both children wait for the same instant, so their work overlaps despite start-up time.
    const startAt = String(Date.now() + 1500);
    results = await Promise.all(
      PROCS.map((proc) =>
        runChild(
          './concurrency-child.ts',
          { DB_PATH: path, PROC: proc, COUNT: String(COUNT), START_AT: startAt },
          90_000,
        ),
      ),
    );
    rows = audit(path);
    const db = new Database(path, { readonly: true });
    try {
      events = db
        .prepare<[], { seq: number; payload_json: string }>(
          "SELECT seq, payload_json FROM harness_run_events WHERE run_id = 'run-shared' ORDER BY seq",
        )
        .all();
    } finally {
      db.close();
    }
  }, 120_000);
  afterAll(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  it('both processes finish cleanly: no SQLITE_BUSY or other error reaches a caller', () => {
    for (const result of results) {
      expect(result.stderr).toBe('');
      expect(result.signal).toBeNull();
      expect(result.code).toBe(0);
      const summary = jsonLine<{ count: number; failures: number; workMs: number }>(result.stdout);
      expect(summary).toMatchObject({ count: COUNT, failures: 0 });
    }
  });

  it('keeps the file intact and finishes every operation', () => {
    expect(rows.integrity).toEqual(['ok']);
    expect(rows.operations.filter((row) => row.status !== 'applied')).toEqual([]);
    expect(rows.records.map((row) => row.memory_id).sort()).toEqual([SHARED, ...PROCS.map(ownOf)].sort());
  });

  it('loses no working-memory write, and no scope holds another scope’s entries', () => {
    const keysOf = (memoryId: string): string[] =>
      rows.entries
        .filter((row) => row.memory_id === memoryId)
        .map((row) => row.entry_key)
        .sort();
    const expectedShared = PROCS.flatMap((proc) => indexesOf('shared').map((index) => `${proc}-k${index}`));
    expect(keysOf(SHARED)).toEqual(expectedShared.sort());
    for (const proc of PROCS)
      expect(keysOf(ownOf(proc))).toEqual(
        indexesOf('own')
          .map((index) => `${proc}-k${index}`)
          .sort(),
      );
    for (const row of rows.entries) {
      const value = JSON.parse(row.entry_json) as { proc: string; index: number };
      expect(row.entry_key).toBe(`${value.proc}-k${value.index}`);
    }
    expect(rows.entries).toHaveLength(PROCS.length * COUNT);
  });

  it('observes every message exactly once, each scope only its own messages', () => {
    const messageKeysOf = (memoryId: string): string[] =>
      rows.messages
        .filter((row) => row.memory_id === memoryId)
        .map((row) => row.message_key)
        .sort();
    expect(messageKeysOf(SHARED)).toEqual(
      PROCS.flatMap((proc) => indexesOf('shared').map((index) => `id:${proc}-m${index}`)).sort(),
    );
    for (const proc of PROCS)
      expect(messageKeysOf(ownOf(proc))).toEqual(
        indexesOf('own')
          .map((index) => `id:${proc}-m${index}`)
          .sort(),
      );
    expect(messagesObservedAndCleared(rows)).toEqual([]);

    for (const record of rows.records) {
      const total = record.memory_id === SHARED ? PROCS.length * (COUNT / 2) : COUNT / 2;
      expect(record.last_message_seq).toBe(total);
      expect(record.observed_through_message_seq).toBe(total);
      // Disjoint source ranges that cover every seq: nothing observed twice, nothing skipped.
      expect(coveredSeqs(rows, record.memory_id)).toEqual(range(total));
      expect(record.observation_count).toBe(
        rows.observations.filter((row) => row.memory_id === record.memory_id).length,
      );
    }
    // The observer of a process's own scope only ever saw that process's messages.
    for (const proc of PROCS) {
      for (const observation of rows.observations.filter((row) => row.memory_id === ownOf(proc))) {
        expect(observation.content).toMatch(new RegExp(`from ${proc}$`));
      }
    }
    for (const proc of PROCS) {
      const runs = new Set(rows.operations.filter((row) => row.memory_id === ownOf(proc)).map((row) => row.run_id));
      expect([...runs]).toEqual([`run-${proc}`]);
    }
    // And the shared scope did receive interleaved work from both processes.
    expect(rows.observations.some((row) => row.memory_id === SHARED && row.content.includes('p0'))).toBe(true);
    expect(rows.observations.some((row) => row.memory_id === SHARED && row.content.includes('p1'))).toBe(true);
  });

  it('numbers the shared run’s events 0, 1, 2, … with each event of each process once', () => {
    expect(events.map((event) => event.seq)).toEqual(range(PROCS.length * COUNT).map((seq) => seq - 1));
    const appended = events.map((event) => {
      const { proc, index } = JSON.parse(event.payload_json) as { proc: string; index: number };
      return `${proc}:${index}`;
    });
    expect(appended.sort()).toEqual(
      PROCS.flatMap((proc) => Array.from({ length: COUNT }, (_, index) => `${proc}:${index}`)).sort(),
    );
  });
});
