import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readEvalDatasetFile } from './eval-dataset-file.js';
import type { EvalDataset } from './eval-dataset.js';
import { selectQuestions } from './eval-dataset.js';
import { runEval } from './eval-runner.js';
import { createMockLanguageModel } from '../../test/support/mock-language-model.js';
import { createInMemoryStore } from '../storage/in-memory-store.js';

const SAMPLE = join(import.meta.dirname, '../../eval/longmemeval-sample.json');
const LOCOMO = join(import.meta.dirname, '../../test/fixtures/locomo-sample.json');
const directory = mkdtempSync(join(tmpdir(), 'harness-memory-dataset-file-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** Every conversation with its sessions, loaded from the file when the dataset left them there. */
async function loaded(dataset: EvalDataset): Promise<unknown[]> {
  return Promise.all(
    dataset.conversations.map(async (conversation) => ({
      ...conversation,
      lazy: false,
      sessions: conversation.lazy ? await dataset.loadSessions?.(conversation) : conversation.sessions,
    })),
  );
}

describe('readEvalDatasetFile', () => {
  it.each([
    ['LongMemEval', SAMPLE],
    ['LoCoMo', LOCOMO],
  ])('reads a %s file one instance at a time into the same dataset as a whole read', async (_, path) => {
    const whole = await readEvalDatasetFile(path);
    const streamed = await readEvalDatasetFile(path, { wholeFileMaxBytes: 0 });
    expect(whole.loadSessions).toBeUndefined();
    expect(streamed.format).toBe(whole.format);
    expect(streamed.problems).toEqual(whole.problems);
    // Only the questions are held; the sessions stay in the file until asked for.
    expect(
      streamed.conversations.every((conversation) => conversation.lazy === true && conversation.sessions.length === 0),
    ).toBe(true);
    expect(await loaded(streamed)).toEqual(await loaded(whole));
  });

  it('digests each conversation while reading it one instance at a time, as a whole read does', async () => {
    const whole = await readEvalDatasetFile(SAMPLE);
    const streamed = await readEvalDatasetFile(SAMPLE, { wholeFileMaxBytes: 0 });
    const digests = whole.conversations.map((conversation) => conversation.sessionsDigest);
    expect(digests.every((digest) => typeof digest === 'string')).toBe(true);
    expect(streamed.conversations.map((conversation) => conversation.sessionsDigest)).toEqual(digests);
  });

  it('keeps loadSessions through --limit and --types', async () => {
    const streamed = await readEvalDatasetFile(SAMPLE, { wholeFileMaxBytes: 0 });
    const chosen = selectQuestions(streamed, { limit: 2 });
    expect(chosen.conversations).toHaveLength(2);
    const sessions = await chosen.loadSessions?.(chosen.conversations[1]!);
    expect(sessions?.length).toBeGreaterThan(0);
  });

  it('names the element that is not JSON, and refuses a file that is not one array', async () => {
    const broken = join(directory, 'broken.json');
    const sample = JSON.parse(readFileSync(SAMPLE, 'utf8')) as unknown[];
    writeFileSync(broken, `[${JSON.stringify(sample[0])}, {"question_id": "x", oops}]`);
    await expect(readEvalDatasetFile(broken, { wholeFileMaxBytes: 0, shownPath: 'broken.json' })).rejects.toMatchObject(
      {
        code: 'EVAL_DATASET_INVALID',
        message: expect.stringContaining('broken.json is not JSON: element 1 of its top-level array'),
      },
    );
    const object = join(directory, 'object.json');
    writeFileSync(object, '{"data": []}');
    await expect(readEvalDatasetFile(object, { wholeFileMaxBytes: 0 })).rejects.toMatchObject({
      code: 'EVAL_DATASET_INVALID',
      message: expect.stringContaining('is not a JSON array of instances'),
    });
  });

  it('names the instance and the field of a malformed instance, as a whole read does', async () => {
    const bad = join(directory, 'bad-field.json');
    const sample = JSON.parse(readFileSync(SAMPLE, 'utf8')) as Array<Record<string, unknown>>;
    writeFileSync(bad, JSON.stringify([sample[0], { ...sample[1], question: 42 }]));
    const whole = await readEvalDatasetFile(bad).catch((error: unknown) => error);
    const streamed = await readEvalDatasetFile(bad, { wholeFileMaxBytes: 0 }).catch((error: unknown) => error);
    expect(streamed).toMatchObject({ code: 'EVAL_DATASET_INVALID', message: (whole as Error).message });
    expect((whole as Error).message).toContain('instance 1');
  });

  it('says the file changed when an instance is no longer where it was read', async () => {
    const path = join(directory, 'changing.json');
    writeFileSync(path, readFileSync(SAMPLE));
    const streamed = await readEvalDatasetFile(path, { wholeFileMaxBytes: 0 });
    writeFileSync(path, '[]');
    await expect(streamed.loadSessions?.(streamed.conversations[3]!)).rejects.toMatchObject({
      code: 'EVAL_DATASET_INVALID',
      message: expect.stringContaining('changed while the eval ran'),
    });
  });

  it('says the file changed when it was rewritten with the same instances, laid out otherwise', async () => {
    const path = join(directory, 'reformatted.json');
    const sample = JSON.parse(readFileSync(SAMPLE, 'utf8')) as unknown[];
    writeFileSync(path, JSON.stringify(sample));
    const streamed = await readEvalDatasetFile(path, { wholeFileMaxBytes: 0 });
    writeFileSync(path, JSON.stringify(sample, null, 2));
    await expect(streamed.loadSessions?.(streamed.conversations[1]!)).rejects.toMatchObject({
      code: 'EVAL_DATASET_INVALID',
      message: expect.stringContaining('reformatted.json changed while the eval ran'),
    });
  });

  it('says the file changed when it holds the same bytes under a new modification time', async () => {
    const path = join(directory, 'touched.json');
    writeFileSync(path, readFileSync(SAMPLE));
    const streamed = await readEvalDatasetFile(path, { wholeFileMaxBytes: 0 });
    utimesSync(path, new Date(0), new Date(0));
    await expect(streamed.loadSessions?.(streamed.conversations[0]!)).rejects.toMatchObject({
      code: 'EVAL_DATASET_INVALID',
      message: expect.stringContaining('it is not the file it was when the eval began'),
    });
  });

  it.each(['full-context', 'memory'] as const)(
    'gives the answer model the same prompts from a file read by instance (%s baseline)',
    async (baseline) => {
      const prompts = async (dataset: EvalDataset): Promise<string[]> => {
        const answer = createMockLanguageModel('I do not know.');
        const memory = createMockLanguageModel((options) => ({
          text: `IMPORTANCE: 0.8\nremembered: ${options.messages.at(-1)?.content.length ?? 0} characters`,
        }));
        await runEval({
          dataset: selectQuestions(dataset, { limit: 3 }),
          baseline,
          answerModel: answer,
          judgeModel: createMockLanguageModel('Verdict: no'),
          models: { memory: 'mock/memory', answer: 'mock/answer', judge: 'mock/judge' },
          memory: { model: memory, store: createInMemoryStore(), thresholds: { observeMinTokens: 1 } },
          runTag: 'same',
          onResult: () => undefined,
        });
        return answer.calls.map((call) => call.messages.map((message) => message.content).join('\n---\n'));
      };
      const whole = await prompts(await readEvalDatasetFile(SAMPLE));
      expect(whole).toHaveLength(3);
      expect(await prompts(await readEvalDatasetFile(SAMPLE, { wholeFileMaxBytes: 0 }))).toEqual(whole);
    },
  );
});
