/**
 * Crash and recovery of a reflection (the reliability catalogue's A2): a child process
 * SIGKILLs itself once the reflector has answered and before the answer is applied; a second
 * child takes the reflection over once its lease has expired by the database's clock. Until
 * the replacement commits, the scope keeps its observations and its last reflection.
 */
import { describe, expect, it } from 'vitest';
import { audit, invariantProblems, jsonLine, runChild } from './durability-support.js';
import { useSqliteTestFiles } from '../support/sqlite-test-files.js';

describe('durability: SIGKILL during a reflection, after the model answered and before the apply', () => {
  const files = useSqliteTestFiles('harness-memory-reflect-crash-');

  // The first reflection (of observations 1 and 2) commits; the second is the one killed.
  const cases = [
    { trigger: 'reflect', observes: 4, reflectNow: false, replacement: 'reflection of observations 3,4' },
    { trigger: 'reflect_now', observes: 3, reflectNow: true, replacement: 'reflection of observations 3' },
  ] as const;

  it.each(cases)(
    '$trigger: keeps the observations and the last reflection, and replays it once after its lease expires',
    async ({ trigger, observes, reflectNow, replacement }) => {
      const crashed = await runChild('./reflect-crash-child.ts', {
        DB_PATH: files.path,
        OBSERVES: String(observes),
        CRASH_AT_REFLECTION: '2',
        // Longer than a child takes to start, so that the recovery has to wait for it.
        LEASE_MS: '1500',
        ...(reflectNow ? { REFLECT_NOW: '1' } : {}),
      });
      expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
      expect(crashed.stdout).not.toContain('done');

      // Before recovery: the reflection is claimed and nothing of it is stored; the old state stands.
      const before = audit(files.path);
      expect(invariantProblems(before)).toEqual([]);
      const unfinished = before.operations.filter((row) => row.status !== 'applied');
      expect(unfinished).toMatchObject([{ operation_type: trigger, status: 'processing', attempt: 1 }]);
      const interrupted = unfinished[0]!;
      const record = before.records[0]!;
      expect(record).toMatchObject({
        observation_count: observes,
        active_reflection: 'SUMMARY:\nreflection of observations 1,2',
        reflection_through_seq: 2,
      });
      expect(before.observations.map((row) => row.content)).toEqual(
        Array.from({ length: observes }, (_, index) => `obs for messages ${index * 2 + 1}-${index * 2 + 2}`),
      );
      expect(before.markers.filter((row) => row.marker_type === 'reflection_end')).toHaveLength(1);

      // The replay's own lease is long: however loaded the machine, it is not lost and taken over again.
      const recovered = await runChild('./reflect-crash-child.ts', {
        DB_PATH: files.path,
        RECOVER: '1',
        LEASE_MS: '10000',
      });
      expect(recovered.code, recovered.stderr).toBe(0);
      expect(recovered.stderr).toBe('');
      const state = jsonLine<{ observerCalls: number; reflectorCalls: number; reflection: string }>(recovered.stdout);
      expect(state).toEqual({ observerCalls: 0, reflectorCalls: 1, reflection: `SUMMARY:\n${replacement}` });

      const after = audit(files.path);
      expect(invariantProblems(after)).toEqual([]);
      for (const operation of after.operations) expect(operation.status, operation.operation_id).toBe('applied');
      // Replayed once, by its second attempt, and not before its lease expired (both by the database's clock).
      const replayed = after.operations.find((row) => row.operation_id === interrupted.operation_id)!;
      expect(replayed.attempt).toBe(2);
      expect(replayed.updated_at >= interrupted.lease_expires_at!).toBe(true);
      expect(after.markers.filter((row) => row.cycle_id === interrupted.operation_id)).toHaveLength(1);
      // The replacement took the last reflection's place; every observation is still there, unchanged.
      expect(after.records[0]).toMatchObject({
        active_reflection: `SUMMARY:\n${replacement}`,
        reflection_through_seq: observes,
      });
      expect(after.observations).toEqual(before.observations);
    },
  );
});
