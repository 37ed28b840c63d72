import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resultLine } from '../../test/support/eval-result-lines.js';
import { HarnessMemoryError } from '../core/errors.js';
import { parseEvalDataset } from './eval-dataset.js';
import {
  checkResumable,
  checkSameQuestions,
  openEvalResultsWriter,
  questionDigest,
  readEvalResults,
} from './eval-results.js';

let directory: string;
let path: string;
beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'harness-eval-results-'));
  path = join(directory, 'results.jsonl');
});
afterEach(() => {
  rmSync(directory, { recursive: true, force: true });
});

describe('eval results: writing and reading', () => {
  it('reads a missing file as empty', async () => {
    const file = await readEvalResults(path);
    expect(file.lines).toEqual([]);
    expect(file.completedIds.size).toBe(0);
    expect(file.truncatedTail).toBeNull();
  });

  it('writes one JSON line per result and reads them back', async () => {
    const writer = await openEvalResultsWriter(path);
    expect(writer.repairedTail).toBeNull();
    const first = resultLine();
    const second = resultLine({
      question_id: 'conv-1:q3',
      question_type: 'category-5',
      category: 5,
      abstention: true,
      evidence_hit: null,
    });
    await writer.append(first);
    await writer.append(second);
    await writer.close();
    expect(readFileSync(path, 'utf8')).toBe(`${JSON.stringify(first)}\n${JSON.stringify(second)}\n`);
    const file = await readEvalResults(path);
    expect(file.lines).toEqual([first, second]);
    expect([...file.completedIds]).toEqual(['q1', 'conv-1:q3']);
  });

  it('keeps lines whole and in call order when appends overlap', async () => {
    const writer = await openEvalResultsWriter(path, { syncEvery: 7 });
    const lines = Array.from({ length: 60 }, (_unused, index) =>
      resultLine({ question_id: `q${index}`, hypothesis: 'x'.repeat(index * 997) }),
    );
    await Promise.all(lines.map((line) => writer.append(line)));
    await writer.close();
    expect((await readEvalResults(path)).lines.map((line) => line.question_id)).toEqual(
      lines.map((line) => line.question_id),
    );
  });

  it('appends to an existing file, the last line of a question superseding earlier ones', async () => {
    const first = await openEvalResultsWriter(path);
    await first.append(
      resultLine({
        question_id: 'a',
        verdict: null,
        hypothesis: null,
        error: { stage: 'answer', message: 'HTTP 503', code: 'MODEL_CALL_FAILED' },
      }),
    );
    await first.append(
      resultLine({ question_id: 'b', verdict: null, hypothesis: null, error: { stage: 'memory', message: 'timeout' } }),
    );
    await first.close();
    const second = await openEvalResultsWriter(path);
    await second.append(resultLine({ question_id: 'a', verdict: 'incorrect' }));
    await second.close();
    const file = await readEvalResults(path);
    expect(file.lines).toHaveLength(3);
    expect(file.latest.get('a')?.verdict).toBe('incorrect');
    expect([...file.completedIds]).toEqual(['a']);
    expect([...file.errorIds]).toEqual(['b']);
  });

  it('ignores and reports a truncated last line, and the next writer cuts it off', async () => {
    const kept = [resultLine({ question_id: 'a' }), resultLine({ question_id: 'b' })];
    const partial = JSON.stringify(resultLine({ question_id: 'c' })).slice(0, 57);
    writeFileSync(path, `${kept.map((line) => JSON.stringify(line)).join('\n')}\n${partial}`);
    const before = await readEvalResults(path);
    expect(before.lines).toEqual(kept);
    expect(before.truncatedTail).toEqual({ line: 3, bytes: 57 });
    expect(before.completedIds.has('c')).toBe(false);

    const writer = await openEvalResultsWriter(path);
    expect(writer.repairedTail).toEqual({ bytes: 57 });
    await writer.append(resultLine({ question_id: 'c' }));
    await writer.close();
    const after = await readEvalResults(path);
    expect(after.truncatedTail).toBeNull();
    expect(after.lines.map((line) => line.question_id)).toEqual(['a', 'b', 'c']);
  });

  it('repairs a file that holds only a partial line, and a partial line longer than one read', async () => {
    writeFileSync(path, '{"question_id":"a","quest');
    const writer = await openEvalResultsWriter(path);
    expect(writer.repairedTail).toEqual({ bytes: 25 });
    await writer.close();
    expect(readFileSync(path, 'utf8')).toBe('');

    const long = JSON.stringify(resultLine({ question_id: 'long', hypothesis: 'é'.repeat(100_000) })).slice(0, 90_000);
    writeFileSync(path, `${JSON.stringify(resultLine())}\n${long}`);
    const again = await openEvalResultsWriter(path);
    expect(again.repairedTail?.bytes).toBe(Buffer.byteLength(long));
    await again.close();
    expect(readFileSync(path, 'utf8')).toBe(`${JSON.stringify(resultLine())}\n`);
  });

  it('keeps a complete last line that lost only its newline', async () => {
    writeFileSync(path, JSON.stringify(resultLine({ question_id: 'a' })));
    expect((await readEvalResults(path)).lines.map((line) => line.question_id)).toEqual(['a']);
    const writer = await openEvalResultsWriter(path);
    expect(writer.repairedTail).toBeNull();
    await writer.append(resultLine({ question_id: 'b' }));
    await writer.close();
    const file = await readEvalResults(path);
    expect(file.lines.map((line) => line.question_id)).toEqual(['a', 'b']);
    expect(file.truncatedTail).toBeNull();
  });

  it('refuses a complete line that is not a result, naming its line number', async () => {
    writeFileSync(
      path,
      `${JSON.stringify(resultLine())}\n\n{"question_id":"x"}\n${JSON.stringify(resultLine({ question_id: 'z' }))}\n`,
    );
    const error = await readEvalResults(path).catch((thrown: unknown) => thrown);
    expect(HarnessMemoryError.isInstance(error)).toBe(true);
    expect((error as HarnessMemoryError).code).toBe('EVAL_RESULTS_INVALID');
    expect((error as HarnessMemoryError).data).toEqual({ path, line: 3 });
    expect((error as HarnessMemoryError).detail).toContain(`${path} line 3 is not a result line (question_type: `);

    writeFileSync(path, 'not json\n');
    await expect(readEvalResults(path)).rejects.toThrow(`${path} line 1 is not a result line (not JSON:`);
  });

  it('refuses a complete JSON last line without its newline that is not a result, and leaves it in place', async () => {
    const edited = JSON.stringify({ ...resultLine({ question_id: 'b' }), verdict: 'skipped' });
    const text = `${JSON.stringify(resultLine({ question_id: 'a' }))}\n${edited}`;
    writeFileSync(path, text);
    const error = await readEvalResults(path).catch((thrown: unknown) => thrown);
    expect(HarnessMemoryError.isInstance(error)).toBe(true);
    expect((error as HarnessMemoryError).code).toBe('EVAL_RESULTS_INVALID');
    expect((error as HarnessMemoryError).detail).toContain(`${path} line 2 is not a result line (verdict: `);
    await expect(openEvalResultsWriter(path)).rejects.toThrow(`${path} line 2 is not a result line (verdict: `);
    expect(readFileSync(path, 'utf8')).toBe(text);
  });

  it('refuses to append after close, and closes once', async () => {
    const writer = await openEvalResultsWriter(path);
    await writer.close();
    await writer.close();
    await expect(writer.append(resultLine())).rejects.toThrow('the results writer is closed');
  });

  it('refuses a sync cadence below one line', async () => {
    await expect(openEvalResultsWriter(path, { syncEvery: 0 })).rejects.toThrow(
      'syncEvery must be a whole number of lines',
    );
    expect(existsSync(path)).toBe(false);
  });

  it.skipIf(!existsSync('/dev/full'))(
    'refuses every line after a failed write (needs /dev/full, which fails writes with ENOSPC)',
    async () => {
      const writer = await openEvalResultsWriter('/dev/full');
      await expect(writer.append(resultLine())).rejects.toThrow(/ENOSPC/);
      await expect(writer.append(resultLine({ question_id: 'q2' }))).rejects.toThrow(/ENOSPC/);
      await writer.close();
    },
  );

  it('does not count lines written by another program until they are complete', async () => {
    const writer = await openEvalResultsWriter(path);
    await writer.append(resultLine({ question_id: 'a' }));
    await appendFile(path, '{"question_id":"b"');
    expect((await readEvalResults(path)).truncatedTail).toEqual({ line: 2, bytes: 18 });
    await writer.close();
  });

  it('reports the line number of each result, blank lines included', async () => {
    writeFileSync(
      path,
      `${JSON.stringify(resultLine({ question_id: 'a' }))}\n\n${JSON.stringify(resultLine({ question_id: 'b' }))}`,
    );
    expect((await readEvalResults(path)).lineNumbers).toEqual([1, 3]);
  });
});

describe('eval results: resuming', () => {
  const models = { memory: 'openai/gpt-5-mini', answer: 'openai/gpt-5-mini', judge: 'openai/gpt-5-mini' };
  const memorySettings = { history_tokens: 8000, observe_min_tokens: 1200 };

  it('accepts a file written by the same baseline and models', async () => {
    writeFileSync(path, `${JSON.stringify(resultLine())}\n`);
    const file = await readEvalResults(path);
    expect(() => checkResumable(file, path, { baseline: 'memory', models, memorySettings })).not.toThrow();
  });

  it.each([
    ['another baseline', { baseline: 'none' as const }, 'baseline none, memory openai/gpt-5-mini'],
    ['another answer model', { models: { ...models, answer: 'ollama/llama3.1' } }, 'answer ollama/llama3.1, judge'],
    ['another memory model', { models: { ...models, memory: null } }, 'baseline memory, memory -, answer'],
  ])('refuses a file with %s, naming the line', async (_name, overrides, found) => {
    writeFileSync(
      path,
      `${JSON.stringify(resultLine({ question_id: 'a' }))}\n\n${JSON.stringify(resultLine({ question_id: 'b', ...overrides }))}\n`,
    );
    const file = await readEvalResults(path);
    const thrown = resultsRefusal(() => checkResumable(file, path, { baseline: 'memory', models, memorySettings }));
    expect(thrown.data).toEqual({ path, line: 3 });
    expect(thrown.detail).toContain('the result for "b" comes from another run (');
    expect(thrown.detail).toContain(found);
  });

  it('refuses a file written with other memory settings, naming both', async () => {
    const other = { history_tokens: 0, observe_min_tokens: 40 };
    writeFileSync(
      path,
      `${JSON.stringify(resultLine({ question_id: 'a', memory_settings: memorySettings }))}\n` +
        `${JSON.stringify(resultLine({ question_id: 'b', memory_settings: other }))}\n`,
    );
    const file = await readEvalResults(path);
    const thrown = resultsRefusal(() => checkResumable(file, path, { baseline: 'memory', models, memorySettings }));
    expect(thrown.data).toEqual({ path, line: 2 });
    expect(thrown.detail).toContain(
      'the result for "b" was written with other memory settings (--history-tokens 0, --observe-min-tokens 40; ' +
        'this run: --history-tokens 8000, --observe-min-tokens 1200)',
    );
  });

  it('accepts a line of an earlier version, which did not record the memory settings', async () => {
    writeFileSync(path, `${JSON.stringify(resultLine())}\n`);
    const file = await readEvalResults(path);
    expect(() =>
      checkResumable(file, path, {
        baseline: 'memory',
        models,
        memorySettings: { history_tokens: 0, observe_min_tokens: 40 },
      }),
    ).not.toThrow();
  });
});

describe('eval results: resuming over another conversation', () => {
  const instance = {
    question_id: 'q1',
    question_type: 'single-session-user',
    question: 'What is the name of my cat?',
    answer: 'Miso',
    question_date: '2023/06/01 (Thu) 09:00',
    haystack_session_ids: ['s-a'],
    haystack_dates: ['2023/05/20 (Sat) 02:21'],
    haystack_sessions: [[{ role: 'user', content: 'I adopted a cat called Miso.' }]],
    answer_session_ids: ['s-a'],
  };
  const written = parseEvalDataset([instance]);
  const conversation = written.conversations[0]!;
  const question = conversation.questions[0]!;
  const lineOf = (conversationDigest: string | undefined) =>
    resultLine({
      question_id: 'q1',
      question_digest: questionDigest(question),
      ...(conversationDigest === undefined ? {} : { conversation_digest: conversationDigest }),
    });

  it('refuses a result of the same question over another haystack, as in LongMemEval _s and _oracle', async () => {
    writeFileSync(path, `${JSON.stringify(lineOf(conversation.sessionsDigest))}\n`);
    const other = parseEvalDataset([
      { ...instance, haystack_sessions: [[{ role: 'user', content: 'I adopted a dog called Rex.' }]] },
    ]);
    const file = await readEvalResults(path);
    expect(() => checkSameQuestions(file, path, written)).not.toThrow();
    const thrown = resultsRefusal(() => checkSameQuestions(file, path, other));
    expect(thrown.data).toEqual({ path, line: 1 });
    expect(thrown.detail).toContain('the result for "q1" was written for the same question over another conversation');
  });

  it('refuses a line whose question the dataset does not hold, even of an earlier version without digests', async () => {
    const { question_digest: _digest, ...bare } = lineOf(undefined);
    writeFileSync(
      path,
      `${JSON.stringify(lineOf(conversation.sessionsDigest))}\n${JSON.stringify({ ...bare, question_id: 'conv-26:q1' })}\n`,
    );
    const file = await readEvalResults(path);
    const thrown = resultsRefusal(() => checkSameQuestions(file, path, written));
    expect(thrown.data).toEqual({ path, line: 2 });
    expect(thrown.detail).toContain(
      'the result for "conv-26:q1" was written for a question this dataset does not hold',
    );
  });

  it('accepts a line of an earlier version, which did not record the conversation digest', async () => {
    writeFileSync(path, `${JSON.stringify(lineOf(undefined))}\n`);
    const other = parseEvalDataset([
      { ...instance, haystack_sessions: [[{ role: 'user', content: 'I adopted a dog called Rex.' }]] },
    ]);
    const file = await readEvalResults(path);
    expect(() => checkSameQuestions(file, path, other)).not.toThrow();
  });
});

/** The `EVAL_RESULTS_INVALID` error `check` throws; fails the test when it throws none or another. */
function resultsRefusal(check: () => void): HarnessMemoryError {
  try {
    check();
  } catch (error) {
    if (HarnessMemoryError.isInstance(error) && error.code === 'EVAL_RESULTS_INVALID') return error;
    throw error;
  }
  throw new Error('expected EVAL_RESULTS_INVALID, and nothing was thrown');
}
