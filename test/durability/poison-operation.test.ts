/**
 * A poison operation: every process that claims it is SIGKILLed. After
 * `max_operation_attempts` it is parked as `dead` instead of being claimed again on every
 * restart; the scope's later operations run, and no message is lost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { audit, coveredSeqs, jsonLine, range, runChild } from './durability-support.js';

const MEMORY_ID = '8:tenant-a/10:conv-crash/7:agent-x';
const MESSAGES = 4;

describe('durability: a poison operation', () => {
  let directory: string;
  let path: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'harness-memory-poison-'));
    path = join(directory, 'state.db');
  });
  afterEach(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  it(
    'is parked as dead after max_operation_attempts crashes; later work runs and every message is ' + 'observed',
    async () => {
      const env = {
        DB_PATH: path,
        OBSERVES: '2',
        PER_OBSERVE: '2',
        FAULT_POINT: 'after_claim',
        MAX_OPERATION_ATTEMPTS: '2',
      };
      // Attempt 1: the first observe's claim kills the process.
      const first = await runChild('./crash-child.ts', env);
      expect(first.signal, first.stderr).toBe('SIGKILL');
      // Attempt 2: a restarted process requeues it once its lease expires, claims it, and dies too.
      const second = await runChild('./crash-child.ts', { ...env, RECOVER: '1', CRASH_ON_RECOVER: '1' });
      expect(second.signal, second.stderr).toBe('SIGKILL');
      const poisoned = audit(path).operations[0]!;
      expect(poisoned).toMatchObject({ status: 'processing', attempt: 2 });

      // A third process does not run it again: it parks it and goes on.
      const third = await runChild('./crash-child.ts', { ...env, RECOVER: '1' });
      expect(third.code, third.stderr).toBe(0);
      const state = jsonLine<{
        status: { deadOperations: number; pendingOperations: number };
        operations: Array<{ status: string; attempt: number }>;
      }>(third.stdout);
      expect(state.status).toMatchObject({ deadOperations: 1, pendingOperations: 0 });

      const rows = audit(path);
      expect(rows.integrity).toEqual(['ok']);
      const [dead, ...rest] = rows.operations;
      expect(dead).toMatchObject({ operation_id: poisoned.operation_id, status: 'dead', attempt: 3 });
      expect((dead as unknown as { error_text: string }).error_text).toMatch(
        /^gave up after 2 attempts that never finished/,
      );
      expect(rest.length).toBeGreaterThan(0);
      for (const operation of rest) expect(operation.status, operation.operation_id).toBe('applied');
      // The dead operation's messages were observed by a later one: nothing lost, nothing twice.
      expect(rows.records[0]).toMatchObject({ last_message_seq: MESSAGES, observed_through_message_seq: MESSAGES });
      expect(coveredSeqs(rows, MEMORY_ID)).toEqual(range(MESSAGES));
    },
  );
});
