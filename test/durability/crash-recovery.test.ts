/**
 * Crash and recovery: a child process SIGKILLs itself at each step boundary of an observe
 * operation; a second child recovers the file; the test then audits the file directly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { audit, coveredSeqs, jsonLine, messagesObservedAndCleared, range, runChild } from './durability-support.js';

const OBSERVES = 5;
const PER_OBSERVE = 2;
const MESSAGE_COUNT = OBSERVES * PER_OBSERVE;
const MEMORY_ID = '8:tenant-a/10:conv-crash/7:agent-x';

describe('durability: SIGKILL at each step of an observe operation', () => {
  let directory: string;
  let path: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'harness-memory-crash-'));
    path = join(directory, 'state.db');
  });
  afterEach(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  const cases = [
    { point: 'after_claim', at: 1 },
    { point: 'after_claim', at: 3 },
    { point: 'after_llm', at: 3 },
    { point: 'mid_apply', at: 3 },
    { point: 'before_mark_applied', at: 3 },
    { point: 'before_mark_applied', at: OBSERVES },
  ] as const;

  it.each(cases)('$point (hit $at): nothing lost, nothing observed twice', async ({ point, at }) => {
    const env = { DB_PATH: path, OBSERVES: String(OBSERVES), PER_OBSERVE: String(PER_OBSERVE) };
    const crashed = await runChild('./crash-child.ts', { ...env, FAULT_POINT: point, FAULT_AT: String(at) });
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
    expect(crashed.stdout).not.toContain('done');

    // Before recovery: the crash left at most one operation unfinished, and nothing half-applied.
    const before = audit(path);
    expect(before.integrity).toEqual(['ok']);
    const unfinished = before.operations.filter((row) => row.status === 'queued' || row.status === 'processing');
    expect(unfinished).toHaveLength(1);
    expect(unfinished[0]?.status).toBe('processing');
    expect(before.observations).toHaveLength(at - 1);
    expect(before.records[0]?.last_message_seq).toBe(at * PER_OBSERVE);
    expect(before.records[0]?.observed_through_message_seq).toBe((at - 1) * PER_OBSERVE);

    const recovered = await runChild('./crash-child.ts', { ...env, RECOVER: '1' });
    expect(recovered.code, recovered.stderr).toBe(0);
    expect(recovered.stderr).toBe('');
    const state = jsonLine<{ memoryId: string; observerCalls: number; observations: string[] }>(recovered.stdout);
    expect(state.memoryId).toBe(MEMORY_ID);
    expect(state.observerCalls).toBe(1);

    const rows = audit(path);
    expect(rows.integrity).toEqual(['ok']);
    // Every operation finished, and applied: the observer never failed.
    expect(rows.operations.length).toBeGreaterThan(0);
    for (const operation of rows.operations) expect(operation.status, operation.operation_id).toBe('applied');
    // Each message stored once, all of them observed.
    const keys = rows.messages.map((row) => row.message_key);
    expect(keys).toHaveLength(MESSAGE_COUNT);
    expect(new Set(keys).size).toBe(MESSAGE_COUNT);
    expect(new Set(keys)).toEqual(new Set(range(MESSAGE_COUNT).map((seq) => `id:m${seq - 1}`)));
    expect(messagesObservedAndCleared(rows)).toEqual([]);
    expect(rows.records).toHaveLength(1);
    const record = rows.records[0]!;
    expect(record.last_message_seq).toBe(MESSAGE_COUNT);
    expect(record.observed_through_message_seq).toBe(record.last_message_seq);
    expect(record.observation_count).toBe(rows.observations.length);
    // Every message seq covered by exactly one observation: disjoint ranges covering 1..last.
    expect(coveredSeqs(rows, MEMORY_ID)).toEqual(range(MESSAGE_COUNT));
    expect(rows.observations.map((row) => row.seq)).toEqual(range(rows.observations.length));
    // Observations and markers belong to applied operations only, two markers per applying cycle.
    const applied = new Set(rows.operations.filter((row) => row.status === 'applied').map((row) => row.operation_id));
    for (const observation of rows.observations) expect(applied.has(observation.operation_id)).toBe(true);
    for (const marker of rows.markers) expect(applied.has(marker.cycle_id), marker.cycle_id).toBe(true);
    const cycles = new Set(rows.observations.map((row) => row.operation_id));
    expect(rows.markers).toHaveLength(cycles.size * 2);
    // The interrupted operation was requeued after its lease expired and replayed once.
    const replayed = rows.operations.find((row) => row.operation_id === unfinished[0]?.operation_id);
    expect(replayed).toMatchObject({ status: 'applied', attempt: 2 });
    expect(cycles.has(replayed!.operation_id)).toBe(true);
  });
});
