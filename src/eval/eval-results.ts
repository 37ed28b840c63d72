/**
 * The `--out results.jsonl` file: one JSON line per question, appended as each question
 * finishes, and its reader for `--resume`.
 *
 * Durability: each line is written whole by one `write` call on a file opened for appending,
 * and by default flushed to disk (`fdatasync`) after every line. A question costs several
 * model calls (seconds), so a sync (milliseconds) per line is cheap insurance: a crash loses
 * at most the line being written. A crash in the middle of a write leaves a truncated last
 * line; the reader ignores and reports it, and the next writer cuts it off before appending.
 * @module
 */
import { createHash } from 'node:crypto';
import { open, readFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { z } from 'zod/v4';
import { HarnessMemoryError } from '../core/errors.js';
import type { EvalDataset } from './eval-dataset.js';
import type { EvalQuestion } from './eval-dataset.js';
import type { JudgeVerdict } from './eval-judge.js';

/** What the answer model is given: the injected memory, the whole haystack, or nothing. */
export type EvalBaseline = 'memory' | 'full-context' | 'none';

/** Every baseline, in the order the README lists them. */
export const EVAL_BASELINES: readonly EvalBaseline[] = ['memory', 'full-context', 'none'];

/** The step of a question that failed: remembering the sessions, answering, or judging. */
export type EvalStage = 'memory' | 'answer' | 'judge';

/** The models of a run, as `provider/model` names. */
export interface EvalModels {
  /** The observer and reflector model; `null` when the baseline needs none. */
  readonly memory: string | null;
  readonly answer: string;
  readonly judge: string;
}

/** The settings of the `memory` baseline that change what a question's memory holds. */
export interface EvalMemorySettings {
  /** `--history-tokens`. */
  readonly history_tokens: number;
  /** `--observe-min-tokens`, or the configuration's `[memory] observe_min_tokens`. */
  readonly observe_min_tokens: number;
}

/** One line of the results file: one question, finished. */
export interface EvalResultLine {
  readonly question_id: string;
  /**
   * A digest of the question, its gold answer and type ({@link questionDigest}): a resume refuses
   * a line whose question id now names another question. Absent in files of earlier versions.
   */
  readonly question_digest?: string;
  /**
   * A digest of the question's conversation (`sessionsDigest`): a resume refuses a line written over another
   * haystack. Absent in files of earlier versions.
   */
  readonly conversation_digest?: string;
  /** `question_type` (LongMemEval) or `category-N` (LoCoMo). */
  readonly question_type: string;
  /** LoCoMo's category, 1 to 5. */
  readonly category?: number;
  /** True for abstention questions (`_abs`, LoCoMo category 5). */
  readonly abstention: boolean;
  readonly baseline: EvalBaseline;
  /** The answer model's response; `null` when the question failed before it answered. */
  readonly hypothesis: string | null;
  /** `null` when the question failed (see `error`). */
  readonly verdict: JudgeVerdict | null;
  readonly judge_reason: string;
  /** Set when a model call still failed after its retries: the question counts as an error, not a wrong answer. */
  readonly error?: { readonly stage: EvalStage; readonly message: string; readonly code?: string };
  /** Tokens of the memory injected before the question (0 for `none`; the haystack for `full-context`). */
  readonly snippet_tokens: number;
  /**
   * Observer and reflector tokens spent remembering this question's conversation (LoCoMo: the conversation's, on
   * its first question).
   */
  readonly memory_input_tokens: number;
  readonly memory_output_tokens: number;
  readonly answer_input_tokens: number;
  /**
   * Whether the gold answer appears in the injected memory; `null` when the question does not count (see
   * `evidenceHit`).
   */
  readonly evidence_hit: boolean | null;
  /** ISO 8601 time the question started. */
  readonly started_at: string;
  readonly duration_ms: number;
  readonly models: EvalModels;
  /** The `memory` baseline's settings; `null` for the other baselines. Absent in files of earlier versions. */
  readonly memory_settings?: EvalMemorySettings | null;
}

const TOKENS = z.number().int().nonnegative();
const RESULT_LINE = z.object({
  question_id: z.string().min(1),
  question_digest: z.string().min(1).optional(),
  conversation_digest: z.string().min(1).optional(),
  question_type: z.string().min(1),
  category: z.number().int().min(1).max(5).optional(),
  abstention: z.boolean(),
  baseline: z.enum(['memory', 'full-context', 'none']),
  hypothesis: z.string().nullable(),
  verdict: z.enum(['correct', 'incorrect', 'unparsable']).nullable(),
  judge_reason: z.string(),
  error: z
    .object({ stage: z.enum(['memory', 'answer', 'judge']), message: z.string(), code: z.string().optional() })
    .optional(),
  snippet_tokens: TOKENS,
  memory_input_tokens: TOKENS,
  memory_output_tokens: TOKENS,
  answer_input_tokens: TOKENS,
  evidence_hit: z.boolean().nullable(),
  started_at: z.string().min(1),
  duration_ms: z.number().nonnegative(),
  models: z.object({ memory: z.string().nullable(), answer: z.string(), judge: z.string() }),
  memory_settings: z.object({ history_tokens: TOKENS, observe_min_tokens: TOKENS }).nullable().optional(),
});

/**
 * A line as the reader found it: a result, blank, not JSON (what a write cut short by a crash
 * leaves), or JSON that is not a result (with why).
 */
type ParsedLine =
  | { readonly kind: 'result'; readonly result: EvalResultLine }
  | { readonly kind: 'blank' }
  | { readonly kind: 'not-json'; readonly problem: string }
  | { readonly kind: 'invalid'; readonly problem: string };

function parseLine(text: string): ParsedLine {
  if (text.trim() === '') return { kind: 'blank' };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { kind: 'not-json', problem: `not JSON: ${(error as Error).message}` };
  }
  const parsed = RESULT_LINE.safeParse(json);
  if (parsed.success) return { kind: 'result', result: parsed.data as EvalResultLine };
  const issue = parsed.error.issues[0];
  return {
    kind: 'invalid',
    problem: issue === undefined ? 'not a result line' : `${issue.path.join('.') || '(line)'}: ${issue.message}`,
  };
}

/** A results file read for `--resume`. */
export interface EvalResultsFile {
  /** Every result line, in file order (a question run again has several). */
  readonly lines: readonly EvalResultLine[];
  /** The line number in the file (from 1) of each entry of `lines`. */
  readonly lineNumbers: readonly number[];
  /** The last line of each question, which supersedes earlier ones: use these for the report. */
  readonly latest: ReadonlyMap<string, EvalResultLine>;
  /** Questions whose last line is a result: skip them when resuming. */
  readonly completedIds: ReadonlySet<string>;
  /** Questions whose last line is an error: run them again when resuming (the new line supersedes). */
  readonly errorIds: ReadonlySet<string>;
  /** A last line cut short by a crash, ignored; `line` counts from 1. `null` when the file ends cleanly. */
  readonly truncatedTail: { readonly line: number; readonly bytes: number } | null;
}

/**
 * Reads a results file for `--resume`. A missing file reads as empty. A truncated last line
 * (no final newline and not JSON) is ignored and reported in `truncatedTail`.
 * @throws HarnessMemoryError `EVAL_RESULTS_INVALID` when a complete line, or a last line that is
 * JSON, is not a result line.
 * @example
 * const previous = await readEvalResults('results.jsonl');
 * const todo = questions.filter((question) => !previous.completedIds.has(question.questionId));
 */
export async function readEvalResults(path: string): Promise<EvalResultsFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') text = '';
    else throw resultsError(path, 0, `cannot be read (${(error as Error).message})`, error);
  }
  const rows = text.split('\n');
  const tail = rows.pop() ?? '';
  const lines: EvalResultLine[] = [];
  const lineNumbers: number[] = [];
  rows.forEach((row, index) => {
    const parsed = parseLine(row);
    if (parsed.kind === 'invalid' || parsed.kind === 'not-json')
      throw resultsError(path, index + 1, `is not a result line (${parsed.problem})`);
    if (parsed.kind === 'result') {
      lines.push(parsed.result);
      lineNumbers.push(index + 1);
    }
  });
  let truncatedTail: EvalResultsFile['truncatedTail'] = null;
  const parsedTail = parseLine(tail);
  if (parsedTail.kind === 'result') {
    lines.push(parsedTail.result);
    lineNumbers.push(rows.length + 1);
  } else if (parsedTail.kind === 'invalid') {
    // A crash cannot leave complete JSON behind, so this line was written or edited whole.
    throw resultsError(path, rows.length + 1, `is not a result line (${parsedTail.problem})`);
  } else if (parsedTail.kind === 'not-json') truncatedTail = { line: rows.length + 1, bytes: Buffer.byteLength(tail) };
  return { lines, lineNumbers, ...latestOf(lines), truncatedTail };
}

function latestOf(lines: readonly EvalResultLine[]): Pick<EvalResultsFile, 'latest' | 'completedIds' | 'errorIds'> {
  const latest = new Map<string, EvalResultLine>();
  for (const line of lines) latest.set(line.question_id, line);
  const completedIds = new Set<string>();
  const errorIds = new Set<string>();
  for (const [id, line] of latest) (line.error === undefined ? completedIds : errorIds).add(id);
  return { latest, completedIds, errorIds };
}

function resultsError(path: string, line: number, problem: string, cause?: unknown): HarnessMemoryError {
  const where = line === 0 ? path : `${path} line ${line}`;
  return new HarnessMemoryError({
    code: 'EVAL_RESULTS_INVALID',
    component: 'eval',
    message:
      `${where} ${problem}. The results file cannot be resumed: remove or fix that line, or write to ` +
      `a new --out file.`,
    data: { path, line },
    cause,
  });
}

/**
 * Checks that a results file was written by the same kind of run, so that `--resume` never
 * mixes baselines, models or memory settings in one report. Lines of other questions are fine;
 * lines without memory settings (earlier versions) are not checked for them.
 * @throws HarnessMemoryError `EVAL_RESULTS_INVALID` naming the first line that differs.
 * @example
 * checkResumable(previous, 'results.jsonl', { baseline: 'memory', models, memorySettings });
 */
export function checkResumable(
  file: EvalResultsFile,
  path: string,
  run: {
    readonly baseline: EvalBaseline;
    readonly models: EvalModels;
    /** `null` for the baselines without memory. */
    readonly memorySettings: EvalMemorySettings | null;
  },
): void {
  checkSameRun(file, path, run);
  checkSameMemorySettings(file, path, run.memorySettings);
}

function checkSameRun(
  file: EvalResultsFile,
  path: string,
  run: { readonly baseline: EvalBaseline; readonly models: EvalModels },
): void {
  const index = file.lines.findIndex(
    (line) =>
      line.baseline !== run.baseline ||
      line.models.memory !== run.models.memory ||
      line.models.answer !== run.models.answer ||
      line.models.judge !== run.models.judge,
  );
  const line = file.lines[index];
  if (line === undefined) return;
  const found =
    `baseline ${line.baseline}, memory ${line.models.memory ?? '-'}, answer ` +
    `${line.models.answer}, judge ${line.models.judge}`;
  const wanted =
    `baseline ${run.baseline}, memory ${run.models.memory ?? '-'}, answer ${run.models.answer}, ` +
    `judge ${run.models.judge}`;
  throw new HarnessMemoryError({
    code: 'EVAL_RESULTS_INVALID',
    component: 'eval',
    message:
      `${path}: the result for ${JSON.stringify(line.question_id)} comes from another run (${found}; ` +
      `this run: ${wanted}). Resume with the same baseline and models, or write to a new --out file.`,
    data: { path, line: file.lineNumbers[index] ?? 0 },
  });
}

function checkSameMemorySettings(file: EvalResultsFile, path: string, settings: EvalMemorySettings | null): void {
  const index = file.lines.findIndex(
    (line) =>
      line.memory_settings !== undefined &&
      (line.memory_settings?.history_tokens !== settings?.history_tokens ||
        line.memory_settings?.observe_min_tokens !== settings?.observe_min_tokens),
  );
  const line = file.lines[index];
  if (line === undefined) return;
  throw new HarnessMemoryError({
    code: 'EVAL_RESULTS_INVALID',
    component: 'eval',
    message:
      `${path}: the result for ${JSON.stringify(line.question_id)} was written with other memory settings ` +
      `(${describeSettings(line.memory_settings ?? null)}; this run: ${describeSettings(settings)}). Resume with ` +
      `the same --history-tokens and --observe-min-tokens, or write to a new --out file.`,
    data: { path, line: file.lineNumbers[index] ?? 0 },
  });
}

function describeSettings(settings: EvalMemorySettings | null): string {
  return settings === null
    ? 'no memory'
    : `--history-tokens ${settings.history_tokens}, --observe-min-tokens ${settings.observe_min_tokens}`;
}

/** A digest of what a question asks and expects, so a results line is known to belong to it. */
export function questionDigest(question: EvalQuestion): string {
  const fields = [question.questionId, question.questionType, question.question, question.answer];
  return createHash('sha256').update(JSON.stringify(fields)).digest('hex').slice(0, 16);
}

/**
 * Checks that each result line is for a question of `dataset` (give the whole dataset, before
 * `selectQuestions`: a line of a question `--limit` or `--types` leaves out is still its), and
 * for the question its id names there, over the same conversation: a file of another dataset
 * (LoCoMo's ids over LongMemEval's, or the same ids in LongMemEval's `_s`, `_m` and `_oracle`,
 * which share ids, questions and answers and differ only in the haystack) or of an edited
 * question would otherwise be resumed, and its lines mixed with this dataset's. Digests a line
 * lacks (earlier versions) are left alone.
 * @throws HarnessMemoryError `EVAL_RESULTS_INVALID` naming the first line that differs.
 */
export function checkSameQuestions(file: EvalResultsFile, path: string, dataset: EvalDataset): void {
  const current = new Map<string, { readonly question: string; readonly conversation: string | undefined }>();
  for (const conversation of dataset.conversations)
    for (const question of conversation.questions)
      current.set(question.questionId, {
        question: questionDigest(question),
        conversation: conversation.sessionsDigest,
      });
  for (const [index, line] of file.lines.entries()) {
    const digests = current.get(line.question_id);
    let problem: string | undefined;
    if (digests === undefined)
      problem = 'for a question this dataset does not hold (another dataset, or a question since removed)';
    else if (line.question_digest !== undefined && line.question_digest !== digests.question)
      problem = 'for another question of that id (another dataset, or the question or its answer changed)';
    else if (
      line.conversation_digest !== undefined &&
      digests.conversation !== undefined &&
      line.conversation_digest !== digests.conversation
    )
      problem =
        "for the same question over another conversation (another dataset: LongMemEval's _s, _m and _oracle " +
        'files differ only there; or its sessions changed)';
    if (problem === undefined) continue;
    throw new HarnessMemoryError({
      code: 'EVAL_RESULTS_INVALID',
      component: 'eval',
      message:
        `${path}: the result for ${JSON.stringify(line.question_id)} was written ${problem}. Resume with the ` +
        `dataset it was written for, or write to a new --out file.`,
      data: { path, line: file.lineNumbers[index] ?? 0 },
    });
  }
}

/** Options of {@link openEvalResultsWriter}. */
export interface EvalResultsWriterOptions {
  /** Flush to disk after every this many lines; `close()` always flushes. @default 1 */
  readonly syncEvery?: number;
}

/** Appends result lines to a results file, one at a time, in the order `append` is called. */
export interface EvalResultsWriter {
  /** The truncated last line cut off when the file was opened, if there was one. */
  readonly repairedTail: { readonly bytes: number } | null;
  /** Appends one line. After a failed write the writer refuses further lines, so none lands after a partial one. */
  append(line: EvalResultLine): Promise<void>;
  /** Flushes and closes the file; idempotent. */
  close(): Promise<void>;
}

/**
 * Opens (or creates) a results file for appending. A truncated last line left by a crash (not
 * JSON) is cut off first; a last line that is a complete result without its newline gets the newline.
 * @throws HarnessMemoryError `EVAL_RESULTS_INVALID` when the last line is JSON but not a result line.
 * @example
 * const writer = await openEvalResultsWriter('results.jsonl');
 * await writer.append(result);
 * await writer.close();
 */
export async function openEvalResultsWriter(
  path: string,
  options: EvalResultsWriterOptions = {},
): Promise<EvalResultsWriter> {
  const syncEvery = options.syncEvery ?? 1;
  if (!Number.isSafeInteger(syncEvery) || syncEvery < 1)
    throw new RangeError(`syncEvery must be a whole number of lines, 1 or more; got ${syncEvery}`);
  const handle = await open(path, 'a+');
  try {
    const repairedTail = await repairTail(handle, path);
    return new ResultsWriter(handle, syncEvery, repairedTail);
  } catch (error) {
    await handle.close();
    throw error;
  }
}

const TAIL_CHUNK = 64 * 1024;

async function repairTail(handle: FileHandle, path: string): Promise<{ bytes: number } | null> {
  const size = (await handle.stat()).size;
  let start = size;
  let tail = Buffer.alloc(0);
  while (start > 0) {
    const chunkStart = Math.max(0, start - TAIL_CHUNK);
    const chunk = Buffer.alloc(start - chunkStart);
    await handle.read(chunk, 0, chunk.length, chunkStart);
    const newline = chunk.lastIndexOf(0x0a);
    tail = Buffer.concat([chunk.subarray(newline + 1), tail]);
    start = chunkStart;
    if (newline !== -1) {
      start = chunkStart + newline + 1;
      break;
    }
  }
  if (tail.length === 0) return null;
  const parsed = parseLine(tail.toString('utf8'));
  if (parsed.kind === 'result') {
    await handle.write('\n');
    return null;
  }
  if (parsed.kind === 'invalid') {
    const lines = await lineCountBefore(handle, start);
    throw resultsError(path, lines + 1, `is not a result line (${parsed.problem})`);
  }
  await handle.truncate(start);
  await handle.datasync();
  return { bytes: tail.length };
}

async function lineCountBefore(handle: FileHandle, end: number): Promise<number> {
  let count = 0;
  const chunk = Buffer.alloc(TAIL_CHUNK);
  for (let position = 0; position < end; position += TAIL_CHUNK) {
    const { bytesRead } = await handle.read(chunk, 0, Math.min(TAIL_CHUNK, end - position), position);
    for (let index = 0; index < bytesRead; index++) if (chunk[index] === 0x0a) count++;
  }
  return count;
}

class ResultsWriter implements EvalResultsWriter {
  readonly repairedTail: { readonly bytes: number } | null;
  readonly #handle: FileHandle;
  readonly #syncEvery: number;
  #unsynced = 0;
  #queue: Promise<void> = Promise.resolve();
  #failure: unknown = null;
  #closed = false;

  constructor(handle: FileHandle, syncEvery: number, repairedTail: { bytes: number } | null) {
    this.#handle = handle;
    this.#syncEvery = syncEvery;
    this.repairedTail = repairedTail;
  }

  append(line: EvalResultLine): Promise<void> {
    const bytes = Buffer.from(`${JSON.stringify(line)}\n`, 'utf8');
    return this.#enqueue(async () => {
      if (this.#closed) throw new Error('the results writer is closed');
      if (this.#failure !== null) throw this.#failure;
      try {
        await this.#writeAll(bytes);
        if (++this.#unsynced >= this.#syncEvery) await this.#sync();
      } catch (error) {
        this.#failure = error;
        throw error;
      }
    });
  }

  close(): Promise<void> {
    return this.#enqueue(async () => {
      if (this.#closed) return;
      this.#closed = true;
      try {
        if (this.#unsynced > 0 && this.#failure === null) await this.#sync();
      } finally {
        await this.#handle.close();
      }
    });
  }

  #enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.#queue.then(task);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  // One write call normally takes the whole line; a short write (disk nearly full) continues.
  async #writeAll(bytes: Buffer): Promise<void> {
    let offset = 0;
    while (offset < bytes.length) {
      const { bytesWritten } = await this.#handle.write(bytes, offset, bytes.length - offset);
      offset += bytesWritten;
    }
  }

  async #sync(): Promise<void> {
    await this.#handle.datasync();
    this.#unsynced = 0;
  }
}
