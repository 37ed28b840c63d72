/**
 * The eval results file survives a SIGKILL in the middle of overlapping appends: every
 * acknowledged line is there, whole and in order, and the next writer appends cleanly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEvalResultsWriter, readEvalResults } from '../../src/eval/eval-results.js';
import { resultLine } from '../support/eval-result-lines.js';
import { runChild } from './durability-support.js';

describe('durability: eval results file killed mid-append', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'harness-eval-crash-'));
  });
  afterEach(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  it.each([1, 25, 60])('keeps every acknowledged line when killed after %i appends', async (killAfter) => {
    const path = join(directory, 'results.jsonl');
    const crashed = await runChild('./eval-results-child.ts', {
      RESULTS_PATH: path,
      TOTAL: '80',
      KILL_AFTER: String(killAfter),
    });
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
    expect(crashed.stdout).not.toContain('finished');
    const acknowledged = crashed.stdout
      .split('\n')
      .filter((line) => line.startsWith('done '))
      .map((line) => line.slice(5));
    expect(acknowledged).toHaveLength(killAfter);

    const file = await readEvalResults(path);
    const ids = file.lines.map((line) => line.question_id);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_unused, index) => `q${index}`));
    for (const id of acknowledged) expect(file.completedIds.has(id)).toBe(true);

    const writer = await openEvalResultsWriter(path);
    await writer.append(resultLine({ question_id: 'after-crash' }));
    await writer.close();
    const resumed = await readEvalResults(path);
    expect(resumed.truncatedTail).toBeNull();
    expect(resumed.lines.map((line) => line.question_id)).toEqual([...ids, 'after-crash']);
  });
});
