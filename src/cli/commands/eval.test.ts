import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LONGMEMEVAL_QUESTION_TYPES } from '../../eval/eval-dataset.js';
import type { EvalSummary } from '../../eval/eval-report.js';
import type { EvalResultLine } from '../../eval/eval-results.js';
import {
  answerKeyFrom,
  createScriptedEvalModel,
  evalRequestKind,
  memoryOf,
  messagesOf,
  questionOf,
} from '../../../test/support/scripted-eval-model.js';
import { startScriptedOpenAIServer } from '../../../test/support/scripted-openai-server.js';
import type { ScriptedReply, ScriptedRequest, ScriptedServer } from '../../../test/support/scripted-openai-server.js';
import { runCli } from '../run-cli.js';

const SAMPLE = fileURLToPath(new URL('../../../eval/longmemeval-sample.json', import.meta.url));
const LOCOMO = fileURLToPath(new URL('../../../test/fixtures/locomo-sample.json', import.meta.url));
const SAMPLE_QUESTIONS = 35;
const SAMPLE_ABSTENTIONS = 5;

let server: ScriptedServer;
let evalModel: (request: ScriptedRequest) => ScriptedReply;
const directories: string[] = [];

beforeAll(async () => {
  server = await startScriptedOpenAIServer();
  const keys = answerKeyFrom(JSON.parse(readFileSync(SAMPLE, 'utf8')));
  for (const [question, key] of answerKeyFrom(JSON.parse(readFileSync(LOCOMO, 'utf8')))) keys.set(question, key);
  evalModel = createScriptedEvalModel(keys);
  server.setDefaultReply(evalModel);
});

beforeEach(() => server.setDefaultReply(evalModel));

afterAll(async () => {
  await server.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function workspace(): string {
  const directory = mkdtempSync(join(tmpdir(), 'hm-eval-cli-'));
  directories.push(directory);
  return directory;
}

interface EvalRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** The requests the scripted server received during this run. */
  readonly requests: readonly ScriptedRequest[];
  readonly workspace: string;
}

/** Runs `harness eval` in-process in a workspace of its own, the models pointed at the scripted server. */
async function harness(
  argv: string[],
  options: { env?: Record<string, string>; workspace?: string; signal?: AbortSignal; terminal?: boolean } = {},
): Promise<EvalRun> {
  const directory = options.workspace ?? workspace();
  const before = server.requests.length;
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env: {
      HARNESS_WORKSPACE: directory,
      OPENAI_BASE_URL: server.url,
      OPENAI_API_KEY: 'test',
      HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '40',
      ...options.env,
    },
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk), isTTY: options.terminal === true },
    cwd: directory,
    homeDir: directory,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { code, stdout, stderr, requests: server.requests.slice(before), workspace: directory };
}

function summaryOf(run: EvalRun): EvalSummary {
  return JSON.parse(run.stdout.trimEnd().split('\n').at(-1) ?? '') as EvalSummary;
}

function linesOf(path: string): EvalResultLine[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as EvalResultLine);
}

function ofKind(run: EvalRun, kind: ReturnType<typeof evalRequestKind>): ScriptedRequest[] {
  return run.requests.filter((request) => evalRequestKind(request) === kind);
}

/** A reply that fails the requests `matches` selects, and plays the eval model for the rest. */
function failing(
  matches: (request: ScriptedRequest) => boolean,
  reply: ScriptedReply,
  times = Number.POSITIVE_INFINITY,
): (request: ScriptedRequest) => ScriptedReply {
  let left = times;
  return (request) => {
    if (left > 0 && matches(request)) {
      left--;
      return reply;
    }
    return evalModel(request);
  };
}

const BAD_REQUEST: ScriptedReply = {
  status: 400,
  body: { error: { message: 'scripted bad request', type: 'invalid_request_error' } },
};
const UNAVAILABLE: ScriptedReply = {
  status: 503,
  body: { error: { message: 'scripted overload', type: 'server_error' } },
};

describe('harness eval: the memory baseline on the shipped sample', () => {
  let run: EvalRun;
  let out: string;

  beforeAll(async () => {
    const directory = workspace();
    out = join(directory, 'results.jsonl');
    run = await harness(['eval', SAMPLE, '--out', out, '--history-tokens', '0', '--json'], { workspace: directory });
  });

  it('asks every question once and prints the table, then the JSON summary as the last line', () => {
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^type +questions +correct +accuracy +errors +evidence recall\n/);
    expect(run.stdout).toContain(
      'baseline: memory; models: memory openai/gpt-5-nano, answer openai/gpt-4.1-mini, judge openai/gpt-4.1-mini',
    );
    const summary = summaryOf(run);
    expect(summary).toMatchObject({
      format: 'longmemeval',
      baseline: 'memory',
      questions: SAMPLE_QUESTIONS,
      errors: { total: 0 },
    });
    expect(summary.models).toEqual({
      memory: 'openai/gpt-5-nano',
      answer: 'openai/gpt-4.1-mini',
      judge: 'openai/gpt-4.1-mini',
    });
    expect(ofKind(run, 'answer')).toHaveLength(SAMPLE_QUESTIONS);
    expect(ofKind(run, 'judge')).toHaveLength(SAMPLE_QUESTIONS);
    expect(new Set(ofKind(run, 'answer').map(questionOf)).size).toBe(SAMPLE_QUESTIONS);
  });

  it('shows the observer every session with its date, in date order, through the configured threshold', () => {
    const observed = ofKind(run, 'observer').map((request) => messagesOf(request).at(-1)?.content ?? '');
    expect(observed.length).toBeGreaterThanOrEqual(SAMPLE_QUESTIONS);
    const ssu01 = observed.filter((prompt) => prompt.includes('- conversation_id: 1-ssu-01'));
    expect(ssu01.join('\n')).toContain(
      '(session date: 2023/05/14 (Sun) 18:40)\n    We adopted a retired racing greyhound last week',
    );
    const dates = ssu01.flatMap((prompt) =>
      [...prompt.matchAll(/\(session date: ([^\n]*)\)\n/g)].map((match) => match[1] ?? ''),
    );
    expect(dates).toEqual([...dates].sort());
    expect(new Set(dates)).toEqual(
      new Set(['2023/05/02 (Tue) 09:10', '2023/05/14 (Sun) 18:40', '2023/05/21 (Sun) 12:05']),
    );
  });

  it('injects the observational memory before the question and its date, and the judge grades the answer', () => {
    const answer = ofKind(run, 'answer').find(
      (request) => questionOf(request) === 'What is the name of the dog I adopted?',
    );
    const messages = answer === undefined ? [] : messagesOf(answer);
    expect(messages.map((message) => message.role)).toEqual(['system', 'system', 'user']);
    expect(messages[1]?.content).toMatch(/^<observational-memory>\n/);
    expect(messages[1]?.content).toContain(
      "the user said: We adopted a retired racing greyhound last week, he's called Biscuit.",
    );
    expect(messages[2]?.content).toBe(
      'Today is 2023/05/30 (Tue) 20:15.\n\nQuestion: What is the name of the dog I adopted?',
    );
    const judged = ofKind(run, 'judge').find((request) =>
      (messagesOf(request)[1]?.content ?? '').includes('What is the name of the dog I adopted?'),
    );
    expect(messagesOf(judged as ScriptedRequest)[1]?.content).toContain('<response>\nBiscuit\n</response>');
  });

  it(
    'answers every question whose facts reached memory, and reports accuracy by type, evidence recall and ' +
      'token figures',
    () => {
      const summary = summaryOf(run);
      expect(Object.keys(summary.accuracy.by_type)).toEqual(LONGMEMEVAL_QUESTION_TYPES);
      // The scripted answer model answers from what it was given: every fact was observed.
      expect(summary.accuracy).toMatchObject({
        overall: 1,
        correct: SAMPLE_QUESTIONS,
        judged: SAMPLE_QUESTIONS,
        errors: 0,
      });
      expect(summary.accuracy.abstention).toMatchObject({ correct: SAMPLE_ABSTENTIONS, judged: SAMPLE_ABSTENTIONS });
      expect(summary.evidence_recall.counted).toBe(26);
      expect(summary.evidence_recall.hits).toBeGreaterThan(0);
      expect(summary.snippet_tokens.median).toBeGreaterThan(0);
      expect(summary.memory_input_tokens.total).toBeGreaterThan(0);
      expect(summary.memory_output_tokens.total).toBeGreaterThan(0);
      expect(summary.answer_input_tokens.total).toBeGreaterThan(0);
    },
  );

  it('writes one result line per question, with what the summary was made of', () => {
    const lines = linesOf(out);
    expect(lines).toHaveLength(SAMPLE_QUESTIONS);
    const dog = lines.find((line) => line.question_id === 'ssu-01');
    expect(dog).toMatchObject({
      question_type: 'single-session-user',
      abstention: false,
      baseline: 'memory',
      hypothesis: 'Biscuit',
      verdict: 'correct',
      evidence_hit: true,
    });
    expect(dog?.memory_input_tokens).toBeGreaterThan(0);
    expect(dog?.snippet_tokens).toBeGreaterThan(0);
    expect(Object.keys(dog ?? {})).toEqual([
      'question_id',
      'question_digest',
      'conversation_digest',
      'question_type',
      'abstention',
      'baseline',
      'hypothesis',
      'verdict',
      'judge_reason',
      'snippet_tokens',
      'memory_input_tokens',
      'memory_output_tokens',
      'answer_input_tokens',
      'evidence_hit',
      'started_at',
      'duration_ms',
      'models',
      'memory_settings',
    ]);
    expect(dog?.memory_settings).toEqual({ history_tokens: 0, observe_min_tokens: 40 });
  });

  it('keeps the eval out of the harness state: no state.db is created', () => {
    expect(existsSync(join(run.workspace, '.harness', 'state.db'))).toBe(false);
  });

  it('draws no progress bar when stderr is not a terminal', () => {
    expect(run.stderr).toBe('');
  });
});

describe('harness eval: what the observer sees', () => {
  it('replays sessions in date order, whatever their order in the file', async () => {
    const directory = workspace();
    const [first] = JSON.parse(readFileSync(SAMPLE, 'utf8')) as Array<Record<string, unknown[]>>;
    const reversed = {
      ...first,
      haystack_sessions: [...(first?.['haystack_sessions'] ?? [])].reverse(),
      haystack_dates: [...(first?.['haystack_dates'] ?? [])].reverse(),
      haystack_session_ids: [...(first?.['haystack_session_ids'] ?? [])].reverse(),
    };
    writeFileSync(join(directory, 'reversed.json'), JSON.stringify([reversed]));
    const run = await harness(['eval', 'reversed.json'], { workspace: directory });
    expect(run.code, run.stderr).toBe(0);
    const dates = ofKind(run, 'observer').flatMap((request) =>
      [...(messagesOf(request).at(-1)?.content ?? '').matchAll(/\(session date: ([^\n]*)\)\n/g)].map(
        (match) => match[1],
      ),
    );
    expect(dates[0]).toBe('2023/05/02 (Tue) 09:10');
    expect(dates).toEqual([...dates].sort());
  });

  it('warns of a date it cannot read, and still shows the observer the date as written', async () => {
    const directory = workspace();
    const [first] = JSON.parse(readFileSync(SAMPLE, 'utf8')) as Array<Record<string, unknown>>;
    writeFileSync(
      join(directory, 'undated.json'),
      JSON.stringify([{ ...first, haystack_dates: ['2023/05/02 (Tue) 09:10', 'mid-May', '2023/05/21 (Sun) 12:05'] }]),
    );
    const run = await harness(['eval', 'undated.json'], { workspace: directory });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(
      /^harness: warning: LongMemEval instance 0 \(question_id "ssu-01"\): haystack_dates\[1\] /,
    );
    expect(
      ofKind(run, 'observer').some((request) =>
        (messagesOf(request).at(-1)?.content ?? '').includes('(session date: mid-May)\n    We adopted'),
      ),
    ).toBe(true);
  });

  it('draws a progress bar on stderr when it is a terminal', async () => {
    const run = await harness(['eval', SAMPLE, '--limit', '2'], { terminal: true });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('[########################] 2/2 questions, 2 correct, 0 error(s), ');
    expect(run.stderr.endsWith('\r\x1b[K')).toBe(true);
  });
});

describe('harness eval: baselines through the same path', () => {
  it('full-context gives the whole haystack and needs no memory model', async () => {
    const run = await harness(['eval', SAMPLE, '--baseline', 'full-context', '--json'], {
      env: { HARNESS_MEMORY_LLM_MODE: 'provider' },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(ofKind(run, 'observer')).toEqual([]);
    const messages = messagesOf(ofKind(run, 'answer')[0] as ScriptedRequest);
    expect(messages.map((message) => message.role)).toEqual(['system', 'system', 'user']);
    expect(messages[1]?.content).toMatch(/^<conversation-history>\nSession 1 \(2023\/05\/02 \(Tue\) 09:10\)\nuser: /);
    const summary = summaryOf(run);
    expect(summary).toMatchObject({
      baseline: 'full-context',
      models: { memory: null },
      memory_input_tokens: { total: 0 },
    });
    expect(summary.accuracy.overall).toBe(1);
  });

  it('none gives nothing, so only abstention questions are right', async () => {
    const run = await harness(['eval', SAMPLE, '--baseline', 'none', '--json']);
    expect(run.code, run.stderr).toBe(0);
    for (const request of ofKind(run, 'answer'))
      expect(messagesOf(request).map((message) => message.role)).toEqual(['system', 'user']);
    const summary = summaryOf(run);
    expect(summary.accuracy).toMatchObject({ correct: SAMPLE_ABSTENTIONS, judged: SAMPLE_QUESTIONS });
    expect(summary.evidence_recall.hits).toBe(0);
    expect(summary.snippet_tokens).toEqual({ median: 0, p95: 0 });
  });

  it(
    'memory under the default observe threshold never observes these short conversations, so it answers no ' +
      'better than none',
    async () => {
      const run = await harness(['eval', SAMPLE, '--history-tokens', '0', '--json'], {
        env: { HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '' },
      });
      expect(run.code, run.stderr).toBe(0);
      expect(ofKind(run, 'observer')).toEqual([]);
      expect(summaryOf(run).accuracy.correct).toBe(SAMPLE_ABSTENTIONS);
      expect(ofKind(run, 'answer').every((request) => memoryOf(request) === '')).toBe(true);
    },
  );

  it(
    '--observe-min-tokens overrides the configured threshold, and history is replayed as the runner does ' +
      '(8,000 tokens by default)',
    async () => {
      const run = await harness(['eval', SAMPLE, '--limit', '1', '--observe-min-tokens', '5000', '--json']);
      expect(run.code, run.stderr).toBe(0);
      expect(ofKind(run, 'observer')).toEqual([]);
      const messages = messagesOf(ofKind(run, 'answer')[0] as ScriptedRequest);
      expect(messages[0]?.role).toBe('system');
      expect(messages.slice(1, -1).map((message) => message.role)).toEqual([
        'user',
        'assistant',
        'user',
        'assistant',
        'user',
        'assistant',
        'user',
        'assistant',
      ]);
      expect(messages[3]?.content).toBe(
        "(session date: 2023/05/14 (Sun) 18:40)\nWe adopted a retired racing greyhound last week, he's called " +
          'Biscuit. How much should a 30 kg greyhound eat a day?',
      );
      expect(summaryOf(run).accuracy.overall).toBe(1);
    },
  );
});

describe('harness eval: selection and concurrency', () => {
  it('--types and --limit narrow the questions, in file order', async () => {
    const run = await harness([
      'eval',
      SAMPLE,
      '--types',
      'temporal-reasoning,knowledge-update',
      '--limit',
      '4',
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run);
    expect(summary.questions).toBe(4);
    expect(Object.keys(summary.accuracy.by_type)).toEqual(['knowledge-update']);
    expect(ofKind(run, 'answer').map(questionOf)).toHaveLength(4);
  });

  it('--concurrency K evaluates K conversations at once, with the same results as one at a time', async () => {
    const waiting: Array<() => void> = [];
    let barrier = true;
    let releasedByTimer = false;
    server.setDefaultReply((request) => {
      if (!barrier || evalRequestKind(request) !== 'answer') return evalModel(request);
      // Held until four answers are asked at once; the timer only keeps a broken run from hanging.
      return new Promise((resolve) => {
        waiting.push(() => resolve(evalModel(request)));
        if (waiting.length === 1) {
          setTimeout(() => {
            if (!barrier) return;
            releasedByTimer = true;
            barrier = false;
            for (const release of waiting) release();
          }, 10_000).unref();
        }
        if (waiting.length === 4) {
          barrier = false;
          for (const release of waiting) release();
        }
      });
    });
    const directory = workspace();
    const parallel = await harness(
      ['eval', SAMPLE, '--concurrency', '4', '--limit', '12', '--out', join(directory, 'parallel.jsonl')],
      { workspace: directory },
    );
    expect(parallel.code, parallel.stderr).toBe(0);
    expect(releasedByTimer).toBe(false);
    server.setDefaultReply(evalModel);
    const serial = await harness(['eval', SAMPLE, '--limit', '12', '--out', join(directory, 'serial.jsonl')], {
      workspace: directory,
    });
    const verdicts = (path: string) =>
      Object.fromEntries(
        linesOf(path).map((line) => [line.question_id, [line.hypothesis, line.verdict, line.snippet_tokens]]),
      );
    expect(verdicts(join(directory, 'parallel.jsonl'))).toEqual(verdicts(join(directory, 'serial.jsonl')));
    expect(serial.code).toBe(0);
  });
});

describe('harness eval: resume', () => {
  it('an interrupted run resumes where it stopped: no question asked twice, none lost', async () => {
    const directory = workspace();
    const out = join(directory, 'results.jsonl');
    const controller = new AbortController();
    // Interrupt while the 12th conversation is being remembered.
    server.setDefaultReply((request) => {
      if (
        evalRequestKind(request) === 'observer' &&
        (messagesOf(request).at(-1)?.content ?? '').includes('- conversation_id: 12-')
      )
        controller.abort();
      return evalModel(request);
    });
    const first = await harness(['eval', SAMPLE, '--out', out], { workspace: directory, signal: controller.signal });
    expect(first.code).toBe(1);
    expect(first.stderr).toContain(
      `harness: eval interrupted with 11 question(s) answered in this run; run it again with --resume --out ` +
        `${out} to finish`,
    );
    expect(linesOf(out)).toHaveLength(11);

    server.setDefaultReply(evalModel);
    const refused = await harness(['eval', SAMPLE, '--out', out], { workspace: directory });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('already holds results: pass --resume to continue that run');
    const otherRun = await harness(['eval', SAMPLE, '--out', out, '--resume', '--baseline', 'none'], {
      workspace: directory,
    });
    expect(otherRun.code).toBe(2);
    expect(otherRun.stderr).toContain('comes from another run (baseline memory');

    const resumed = await harness(['eval', SAMPLE, '--out', out, '--resume', '--json'], { workspace: directory });
    expect(resumed.code, resumed.stderr).toBe(0);
    const asked = [...ofKind(first, 'answer'), ...ofKind(resumed, 'answer')].map(questionOf);
    expect(asked).toHaveLength(SAMPLE_QUESTIONS);
    expect(new Set(asked).size).toBe(SAMPLE_QUESTIONS);
    const ids = linesOf(out).map((line) => line.question_id);
    expect(ids).toHaveLength(SAMPLE_QUESTIONS);
    expect(new Set(ids).size).toBe(SAMPLE_QUESTIONS);
    expect(summaryOf(resumed)).toMatchObject({ questions: SAMPLE_QUESTIONS, accuracy: { correct: SAMPLE_QUESTIONS } });
  });

  it('asks again a question recorded as an error and one whose line a crash cut short', async () => {
    const directory = workspace();
    const out = join(directory, 'results.jsonl');
    server.setDefaultReply(
      failing(
        (request) =>
          evalRequestKind(request) === 'answer' && questionOf(request) === 'What is the name of the dog I adopted?',
        BAD_REQUEST,
      ),
    );
    const first = await harness(['eval', SAMPLE, '--limit', '3', '--out', out], { workspace: directory });
    expect(first.code).toBe(0);
    const lines = linesOf(out);
    expect(lines[0]).toMatchObject({
      question_id: 'ssu-01',
      hypothesis: null,
      verdict: null,
      error: { stage: 'answer', code: 'MODEL_CALL_FAILED' },
    });
    // A crash in the middle of writing the third line.
    writeFileSync(out, readFileSync(out, 'utf8').split('\n').slice(0, 2).join('\n') + '\n');
    appendFileSync(out, JSON.stringify(lines[2]).slice(0, 40));

    server.setDefaultReply(evalModel);
    const resumed = await harness(['eval', SAMPLE, '--limit', '3', '--out', out, '--resume', '--json'], {
      workspace: directory,
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`harness: note: cut off the last line of ${out} (40 bytes)`);
    expect(ofKind(resumed, 'answer').map(questionOf).sort()).toEqual(
      ['What is the name of the dog I adopted?', lines[2] ? questionOfId(lines[2].question_id) : ''].sort(),
    );
    expect(summaryOf(resumed)).toMatchObject({ questions: 3, accuracy: { correct: 3 }, errors: { total: 0 } });
  });
});

/**
 * Runs the sample's first question into a results file, then resumes that file over a copy of
 * the dataset whose first instance `change` altered; returns the resume and the folder.
 */
async function resumeOverChanged(change: (instance: Record<string, unknown>) => Record<string, unknown>) {
  const directory = workspace();
  const out = join(directory, 'results.jsonl');
  const first = await harness(['eval', SAMPLE, '--limit', '1', '--out', out, '--baseline', 'none'], {
    workspace: directory,
  });
  expect(first.code, first.stderr).toBe(0);
  const [head] = JSON.parse(readFileSync(SAMPLE, 'utf8')) as Array<Record<string, unknown>>;
  const changed = join(directory, 'changed.json');
  writeFileSync(changed, JSON.stringify([change(head ?? {})]));
  const resumed = await harness(['eval', changed, '--out', out, '--resume', '--baseline', 'none'], {
    workspace: directory,
  });
  return { resumed, directory, out };
}

describe('harness eval: resume with another dataset', () => {
  it('refuses a results file whose question ids name other questions in this dataset', async () => {
    // The same question ids, one question changed.
    const { resumed, directory, out } = await resumeOverChanged((head) => ({
      ...head,
      question: 'What is my dog called?',
      answer: 'Rex',
    }));
    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toContain(`was written for another question of that id`);
    // The dataset it was written for resumes as before.
    const again = await harness(['eval', SAMPLE, '--limit', '1', '--out', out, '--resume', '--baseline', 'none'], {
      workspace: directory,
    });
    expect(again.code, again.stderr).toBe(0);
  });
});

describe('harness eval: resume over another dataset of the other format', () => {
  it('refuses a LongMemEval results file resumed over the LoCoMo fixture, whose ids it does not hold', async () => {
    const directory = workspace();
    const out = join(directory, 'results.jsonl');
    const first = await harness(['eval', SAMPLE, '--limit', '3', '--out', out, '--baseline', 'none'], {
      workspace: directory,
    });
    expect(first.code, first.stderr).toBe(0);
    const written = readFileSync(out, 'utf8');
    const resumed = await harness(['eval', LOCOMO, '--out', out, '--resume', '--baseline', 'none'], {
      workspace: directory,
    });
    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toContain(
      `${out}: the result for "ssu-01" was written for a question this dataset does not hold (another dataset`,
    );
    expect(resumed.requests).toEqual([]);
    expect(readFileSync(out, 'utf8')).toBe(written);
  });
});

describe('harness eval: resume over another haystack or with other memory settings', () => {
  it('refuses a results file of the same questions over other conversations, as LongMemEval _s and _oracle', async () => {
    const { resumed } = await resumeOverChanged((head) => ({
      ...head,
      haystack_sessions: ((head['haystack_sessions'] ?? []) as unknown[]).map(() => [
        { role: 'user', content: 'hello' },
      ]),
    }));
    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toContain('was written for the same question over another conversation');
    expect(resumed.requests).toEqual([]);
  });

  it('refuses a results file written with another --history-tokens or --observe-min-tokens', async () => {
    const directory = workspace();
    const out = join(directory, 'results.jsonl');
    const first = await harness(['eval', SAMPLE, '--limit', '1', '--out', out, '--history-tokens', '0'], {
      workspace: directory,
    });
    expect(first.code, first.stderr).toBe(0);
    expect(linesOf(out)[0]).toMatchObject({ memory_settings: { history_tokens: 0, observe_min_tokens: 40 } });
    const history = await harness(['eval', SAMPLE, '--limit', '2', '--out', out, '--resume'], { workspace: directory });
    expect(history.code).toBe(2);
    expect(history.stderr).toContain(
      'was written with other memory settings (--history-tokens 0, --observe-min-tokens 40; this run: ' +
        '--history-tokens 8000, --observe-min-tokens 40)',
    );
    const observe = await harness(
      [
        'eval',
        SAMPLE,
        '--limit',
        '2',
        '--out',
        out,
        '--resume',
        '--history-tokens',
        '0',
        '--observe-min-tokens',
        '5000',
      ],
      { workspace: directory },
    );
    expect(observe.code).toBe(2);
    expect(observe.stderr).toContain('this run: --history-tokens 0, --observe-min-tokens 5000)');
    const same = await harness(['eval', SAMPLE, '--limit', '2', '--out', out, '--resume', '--history-tokens', '0'], {
      workspace: directory,
    });
    expect(same.code, same.stderr).toBe(0);
  });
});

function questionOfId(id: string): string {
  const instances = JSON.parse(readFileSync(SAMPLE, 'utf8')) as Array<{ question_id: string; question: string }>;
  return instances.find((instance) => instance.question_id === id)?.question ?? '';
}

describe('harness eval: failing model calls', () => {
  it(
    'a question whose answer call still fails is an answer-stage error, not a wrong answer; a judge failure ' +
      'is a judge-stage error',
    async () => {
      server.setDefaultReply(
        failing(
          (request) =>
            (evalRequestKind(request) === 'answer' &&
              questionOf(request) === 'What is the name of the dog I adopted?') ||
            (evalRequestKind(request) === 'judge' &&
              (messagesOf(request)[1]?.content ?? '').includes(
                'Which station does my weekday morning train leave from?',
              )),
          BAD_REQUEST,
        ),
      );
      const run = await harness(['eval', SAMPLE, '--limit', '3', '--json']);
      expect(run.code, run.stderr).toBe(0);
      const summary = summaryOf(run);
      expect(summary.errors).toEqual({ total: 2, memory: 0, answer: 1, judge: 1 });
      expect(summary.accuracy).toMatchObject({ correct: 1, judged: 1, errors: 2 });
      expect(run.stdout).toContain('errors: 2 (memory 0, answer 1, judge 1)');
    },
  );

  it("an answer call that fails once is retried, as the agent model's calls are", async () => {
    server.setDefaultReply(failing((request) => evalRequestKind(request) === 'answer', UNAVAILABLE, 1));
    const run = await harness(['eval', SAMPLE, '--limit', '1', '--json']);
    expect(ofKind(run, 'answer')).toHaveLength(2);
    expect(summaryOf(run)).toMatchObject({ errors: { total: 0 }, accuracy: { correct: 1 } });
  });

  it(
    'a memory model that keeps failing makes its conversation a memory-stage error; one that fails once is ' +
      'retried',
    async () => {
      server.setDefaultReply(
        failing(
          (request) =>
            evalRequestKind(request) === 'observer' &&
            (messagesOf(request)[1]?.content ?? '').includes('- conversation_id: 1-'),
          BAD_REQUEST,
        ),
      );
      const broken = await harness(['eval', SAMPLE, '--limit', '2', '--json']);
      expect(broken.code, broken.stderr).toBe(0);
      expect(summaryOf(broken).errors).toEqual({ total: 1, memory: 1, answer: 0, judge: 0 });
      expect(ofKind(broken, 'answer').map(questionOf)).toEqual([
        'Which station does my weekday morning train leave from?',
      ]);

      server.setDefaultReply(failing((request) => evalRequestKind(request) === 'observer', UNAVAILABLE, 1));
      const retried = await harness(['eval', SAMPLE, '--limit', '1', '--json']);
      expect(summaryOf(retried)).toMatchObject({ errors: { total: 0 }, accuracy: { correct: 1 } });
    },
  );
});

/** A loopback URL where nothing listens: connections to it are refused. */
async function closedPortUrl(): Promise<string> {
  const listener = createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as AddressInfo;
  await new Promise<void>((resolve) => listener.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

describe('harness eval: a model that cannot be reached', () => {
  it('stops at the first refused connection of the memory model, exit 1, naming its address and setting', async () => {
    const directory = workspace();
    const out = join(directory, 'results.jsonl');
    const memoryUrl = await closedPortUrl();
    const run = await harness(['eval', SAMPLE, '--limit', '3', '--out', out], {
      workspace: directory,
      env: { HARNESS_MEMORY_LLM_BASE_URL: memoryUrl },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'harness: the memory model openai/gpt-5-nano cannot be reached (ECONNREFUSED), so the eval stopped before ' +
        `any question was answered: Could not reach ${memoryUrl}/chat/completions`,
    );
    expect(run.stderr).toContain('Its server is set by HARNESS_MEMORY_LLM_BASE_URL or [memory] llm_base_url');
    // No question asked: the answer model (on the scripted server) was never called, and nothing was recorded.
    expect(run.requests).toEqual([]);
    expect(linesOf(out)).toEqual([]);
  });
});

describe('harness eval: LoCoMo', () => {
  it('remembers each conversation once for all its questions and reports by category, category 5 apart', async () => {
    const run = await harness(['eval', LOCOMO, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run);
    expect(summary.format).toBe('locomo');
    expect(summary.accuracy.excluded_from_overall).toEqual(['category-5']);
    expect(Object.keys(summary.by_category ?? {})).toEqual(['1', '2', '3', '4', '5']);
    expect(summary.by_category?.['5']?.judged).toBeGreaterThan(0);
    expect(summary.accuracy.judged).toBe(summary.questions - (summary.by_category?.['5']?.judged ?? 0));
    expect(run.stdout).toContain('category-5 (not in overall)');
    expect(run.stdout).toContain('adversarial (category 5)');
  });
});

describe('harness eval: bad input', () => {
  it(
    'exits 2 naming the problem: a missing file, a file that is not JSON, a malformed instance, an unknown ' + 'type',
    async () => {
      const directory = workspace();
      const missing = await harness(['eval', join(directory, 'nope.json')], { workspace: directory });
      expect(missing).toMatchObject({ code: 2 });
      expect(missing.stderr).toBe(`harness: cannot read the dataset ${join(directory, 'nope.json')}: no such file\n`);
      writeFileSync(join(directory, 'broken.json'), '[{"question_id": ');
      const broken = await harness(['eval', 'broken.json'], { workspace: directory });
      expect(broken.code).toBe(2);
      expect(broken.stderr).toMatch(/^harness: broken\.json is not JSON \(/);
      const instances = JSON.parse(readFileSync(SAMPLE, 'utf8')) as Array<Record<string, unknown>>;
      writeFileSync(
        join(directory, 'bad.json'),
        JSON.stringify([instances[0], { ...instances[1], haystack_dates: 'yesterday' }]),
      );
      const bad = await harness(['eval', 'bad.json'], { workspace: directory });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('LongMemEval instance 1 (question_id "ssu-02"): haystack_dates');
      const huge = await harness(['eval', SAMPLE, '--observe-min-tokens', '2000000']);
      expect(huge.code).toBe(2);
      expect(huge.stderr).toContain('--observe-min-tokens');
      expect(huge.stderr).toContain('1000000');
      const type = await harness(['eval', SAMPLE, '--types', 'trivia']);
      expect(type.code).toBe(2);
      expect(type.stderr).toContain('--types: "trivia" is not a question type of this dataset');
      const resume = await harness(['eval', SAMPLE, '--resume']);
      expect(resume).toMatchObject({
        code: 2,
        stderr: 'harness: --resume needs --out: the results file to continue\n',
      });
    },
  );

  it.each(['', '   '])(
    'refuses a blank --judge-model (%j), naming the option, before any model call',
    async (blank) => {
      const run = await harness(['eval', SAMPLE, '--limit', '1', '--judge-model', blank]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('--judge-model must be a model id, not blank');
      expect(run.requests).toEqual([]);
    },
  );

  it('refuses an --out that is not a regular file (exit 2, naming it) before any model call', async () => {
    const directory = workspace();
    const fifo = join(directory, 'results.fifo');
    execFileSync('mkfifo', [fifo]);
    for (const [out, problem] of [
      ['/dev/null', 'is a device'],
      [fifo, 'is a pipe'],
      [directory, 'is a directory'],
      [join(directory, 'missing', 'results.jsonl'), 'is in a directory that does not exist'],
    ]) {
      const run = await harness(['eval', SAMPLE, '--limit', '1', '--out', out ?? ''], { workspace: directory });
      expect(run.code, out).toBe(2);
      expect(run.stderr).toContain(`harness: --out ${out} ${problem}: the results file must be a regular file`);
      expect(run.requests).toEqual([]);
    }
  });

  it('exits 78 when memory is off in the configuration and the memory baseline is asked for', async () => {
    const run = await harness(['eval', SAMPLE], { env: { HARNESS_MEMORY_MODE: 'off' } });
    expect(run.code).toBe(78);
    expect(run.stderr).toContain('memory.mode: is "off", so there is no memory to measure');
    expect(run.requests).toEqual([]);
  });

  it('exits 78 naming memory.enabled when [memory] enabled = false and the memory baseline is asked for', async () => {
    const directory = workspace();
    mkdirSync(join(directory, '.harness'));
    writeFileSync(join(directory, '.harness', 'config.toml'), '[memory]\nenabled = false\n');
    const run = await harness(['eval', SAMPLE, '--limit', '1'], { workspace: directory });
    expect(run.code).toBe(78);
    expect(run.stderr).toContain('memory.enabled: is false, so there is no memory to measure');
    expect(run.requests).toEqual([]);
  });
});

describe('harness eval: --memory-db', () => {
  it('keeps the memories in the given SQLite file, where harness memory show finds them', async () => {
    const directory = workspace();
    // A threshold of its own (the workspace's is 40): the kept scope must hold the one the eval used.
    const run = await harness(
      ['eval', SAMPLE, '--limit', '1', '--memory-db', 'eval-memory.db', '--observe-min-tokens', '50'],
      { workspace: directory },
    );
    expect(run.code, run.stderr).toBe(0);
    const tenant = /under tenant (eval-[\w-]+)/.exec(run.stderr)?.[1] ?? '';
    expect(tenant).not.toBe('');
    expect(existsSync(join(directory, '.harness', 'state.db'))).toBe(false);
    const show = await harness(
      ['memory', 'show', '--tenant', tenant, '--agent', 'eval', '--conversation', '1-ssu-01'],
      {
        workspace: directory,
        env: { HARNESS_MEMORY_SQLITE_PATH: join(directory, 'eval-memory.db') },
      },
    );
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(
      "the user said: We adopted a retired racing greyhound last week, he's called Biscuit.",
    );
    // Enabled, with the eval's thresholds, in its own record, so shown as the eval used it, snippet included.
    expect(show.stdout).toMatch(/enabled: yes/);
    expect(show.stdout).toContain('thresholds: observe_min_tokens 50, snippet_max_tokens 900');
  });
});
