/**
 * `harness eval <dataset.json>`: what the memory lets the agent answer, on LongMemEval- or
 * LoCoMo-format data, with the configured models; a table by question type at the end.
 * @module
 */
import { stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { InvalidArgumentError, Option } from 'commander';
import type { Command } from 'commander';
import { tokenConfigFrom } from '../../config/load-config.js';
import type { HarnessConfig } from '../../config/schema.js';
import { ConfigError, HarnessMemoryError } from '../../core/errors.js';
import { MAX_OBSERVE_MIN_TOKENS } from '../../core/observation.js';
import { readEvalDatasetFile } from '../../eval/eval-dataset-file.js';
import { selectQuestions } from '../../eval/eval-dataset.js';
import type { EvalDataset } from '../../eval/eval-dataset.js';
import { formatEvalTable, summarizeEvalResults } from '../../eval/eval-report.js';
import {
  checkResumable,
  checkSameQuestions,
  EVAL_BASELINES,
  openEvalResultsWriter,
  readEvalResults,
} from '../../eval/eval-results.js';
import type {
  EvalBaseline,
  EvalMemorySettings,
  EvalModels,
  EvalResultLine,
  EvalResultsWriter,
} from '../../eval/eval-results.js';
import { evalMemorySettings, runEval } from '../../eval/eval-runner.js';
import type { EvalMemoryOptions, EvalRunOptions } from '../../eval/eval-runner.js';
import type { LanguageModel } from '../../llm/language-model.js';
import { createAgentModel, selectMemoryModel } from '../../llm/memory-model-selection.js';
import type { MemoryModelSelection } from '../../llm/memory-model-selection.js';
import { createInMemoryRunStore } from '../../storage/in-memory-run-store.js';
import { createInMemoryStore } from '../../storage/in-memory-store.js';
import type { RunStore } from '../../storage/run-store.js';
import { createSqliteRunStore } from '../../storage/sqlite/sqlite-run-store.js';
import { createSqliteStore } from '../../storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../../storage/store.js';
import { printLine, stopRequested } from '../context.js';
import type { CliContext, CommandResult } from '../context.js';
import { EXIT_FAILURE, EXIT_OK, UsageError } from '../exit-codes.js';
import { nonBlankId, positiveInteger } from '../scope-options.js';
import { Spinner } from '../spinner.js';

interface EvalOptions {
  readonly limit?: number;
  readonly types?: string;
  readonly concurrency: number;
  readonly out?: string;
  readonly resume?: boolean;
  readonly json?: boolean;
  readonly baseline: EvalBaseline;
  readonly judgeModel?: string;
  readonly historyTokens: number;
  readonly observeMinTokens?: number;
  readonly memoryDb?: string;
}

/** Registers `eval`. */
export function registerEvalCommand(program: Command, context: CliContext, result: CommandResult): void {
  program
    .command('eval')
    .description(
      'measure what the memory lets the agent answer, on a LongMemEval- or LoCoMo-format dataset, with the ' +
        'configured models',
    )
    .argument('<dataset>', 'the dataset file (LongMemEval or LoCoMo JSON, detected from the file)')
    .option('--limit <n>', 'ask only the first N questions (after --types)', positiveInteger('--limit'))
    .option('--types <list>', 'ask only these question types, comma-separated (LoCoMo: category-1 … category-5)')
    .option('--concurrency <k>', 'conversations evaluated at once', positiveInteger('--concurrency'), 1)
    .option('--out <file>', 'append one JSON line per question to this file as it finishes')
    .option(
      '--resume',
      'continue the --out file: skip the questions it has results for, ask again those recorded as errors',
    )
    .option('--json', 'print the summary as one JSON object on the last line of stdout')
    .addOption(
      new Option('--baseline <name>', 'what the answer model is given: the memory, the whole conversation, or nothing')
        .choices(EVAL_BASELINES)
        .default('memory'),
    )
    .option(
      '--judge-model <id>',
      "model id of the judge, on the agent model's provider (default: the agent model)",
      // A blank id would reach the provider as model "" and fail every judge call.
      nonBlankId('--judge-model', 'must be a model id, not blank'),
    )
    .option(
      '--history-tokens <n>',
      'memory baseline: tokens of the newest conversation history replayed before the question, as the agent ' +
        'runner does; 0 measures the memory alone',
      wholeNumber('--history-tokens'),
      8000,
    )
    .option(
      '--observe-min-tokens <n>',
      'memory baseline: observe once this many tokens are unobserved (default: [memory] observe_min_tokens)',
      positiveInteger('--observe-min-tokens', MAX_OBSERVE_MIN_TOKENS),
    )
    .option(
      '--memory-db <file>',
      'memory baseline: keep the memories in this SQLite file, for inspection (default: in memory, discarded)',
    )
    .addHelpText(
      'after',
      '\nModels: the agent model answers, the memory model observes and reflects (as `harness config` ' +
        'shows), --judge-model judges.\nExit code 0 when every question was asked (errors are reported ' +
        'apart), 1 when interrupted (resume with --resume) or on a runtime failure (such as a model whose ' +
        'server cannot be reached), 2 for bad input (EVAL_DATASET_INVALID, a results file of another run or ' +
        'dataset, an --out that is not a file), 78 for a configuration error.',
    )
    .action(async (dataset: string, options: EvalOptions) => {
      result.exitCode = await evaluate(context, dataset, options);
    });
}

async function evaluate(context: CliContext, datasetPath: string, options: EvalOptions): Promise<number> {
  if (options.resume && options.out === undefined)
    throw new UsageError('--resume needs --out: the results file to continue');
  if (options.out !== undefined) await checkOutPath(resolve(context.cwd, options.out), options.out);
  const fullDataset = await loadDataset(resolve(context.cwd, datasetPath), datasetPath);
  const dataset = selectQuestions(fullDataset, {
    limit: options.limit,
    ...(options.types === undefined ? {} : { types: options.types.split(',') }),
  });
  for (const problem of dataset.problems.slice(0, 10)) context.stderr.write(`harness: warning: ${problem.message}\n`);
  if (dataset.problems.length > 10)
    context.stderr.write(`harness: warning: … and ${dataset.problems.length - 10} more dates that cannot be read\n`);

  const config = context.config();
  const models = buildModels(config, context.env, options);
  const memorySettings =
    options.baseline === 'memory'
      ? evalMemorySettings({ historyMaxTokens: options.historyTokens, thresholds: memoryThresholds(config, options) })
      : null;
  const results = await openResults(context, options, { models: models.names, memorySettings }, fullDataset);
  let stores: EvalStores | undefined;
  const controller = new AbortController();
  const stop = stopRequested(context, () => controller.abort());
  const progress = createProgress(context, dataset, results.skip);
  try {
    stores = options.baseline === 'memory' ? openStores(context, options) : undefined;
    const outcome = await runEval({
      dataset,
      baseline: options.baseline,
      answerModel: models.answer,
      ...(options.judgeModel === undefined ? {} : { judgeModelId: options.judgeModel }),
      models: models.names,
      modelSettings: models.settings,
      ...(stores && models.memory ? { memory: memoryOptions(config, options, models.memory, stores) } : {}),
      redactSecrets: config.memory.redactSecrets,
      skipQuestionIds: results.skip,
      concurrency: options.concurrency,
      signal: controller.signal,
      onResult: async (line) => {
        await results.writer?.append(line);
        progress.done(line);
      },
    });
    progress.stop();
    if (stores?.keep) {
      context.stderr.write(
        `harness: the memories are kept in ${options.memoryDb ?? ''} under tenant ${outcome.tenantId} (agent ` +
          `eval, conversation <position>-<id>); see them with ` +
          `HARNESS_MEMORY_SQLITE_PATH=${options.memoryDb ?? ''} harness memory show --tenant ` +
          `${outcome.tenantId} --agent eval --conversation <conversation>\n`,
      );
    }
    report(context, dataset, options, models.names, results.previous, outcome.results, outcome.wallTimeMs);
    if (!outcome.interrupted) return EXIT_OK;
    const resume =
      options.out === undefined
        ? 'nothing was kept (no --out file)'
        : `run it again with --resume --out ${options.out} to finish`;
    context.stderr.write(
      `harness: eval interrupted with ${outcome.results.length} question(s) answered in this run; ${resume}\n`,
    );
    return EXIT_FAILURE;
  } finally {
    progress.stop();
    stop.dispose();
    await results.writer?.close();
    await stores?.close();
  }
}

async function loadDataset(path: string, shownPath: string): Promise<EvalDataset> {
  try {
    return await readEvalDatasetFile(path, { shownPath });
  } catch (error) {
    if (HarnessMemoryError.isInstance(error)) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      `cannot read the dataset ${shownPath}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
    );
  }
}

interface EvalModelSet {
  readonly answer: LanguageModel;
  /** The memory model, for the `memory` baseline only. */
  readonly memory: LanguageModel | undefined;
  readonly names: EvalModels;
  /** Where each model's server is set, for the error that stops the eval when one cannot be reached. */
  readonly settings: NonNullable<EvalRunOptions['modelSettings']>;
}

/** The models as the harness builds them: the agent model answers, the memory model as `selectMemoryModel` chooses. */
function buildModels(config: HarnessConfig, env: CliContext['env'], options: EvalOptions): EvalModelSet {
  if (options.baseline === 'memory' && !config.memory.enabled) {
    throw new ConfigError({
      key: 'memory.enabled',
      source: config.sources['memory.enabled'] ?? 'default',
      message:
        'is false, so there is no memory to measure: remove it or set it to true, or choose --baseline ' +
        'full-context or none',
    });
  }
  if (options.baseline === 'memory' && config.memory.mode === 'off') {
    throw new ConfigError({
      key: 'memory.mode',
      source: config.sources['memory.mode'] ?? 'default',
      message:
        'is "off", so there is no memory to measure: set it to "auto", or choose --baseline full-context or none',
    });
  }
  const answer = createAgentModel(config, env);
  // As in the harness, the operation worker is the memory model's retry layer.
  const selection =
    options.baseline === 'memory'
      ? selectMemoryModel({ config, env, inheritModel: answer, retry: { maxAttempts: 1 } })
      : undefined;
  const agentServer = "the agent model's base URL ([model] base_url, or OPENAI_BASE_URL for the openai provider)";
  return {
    answer,
    memory: selection?.model,
    settings: {
      answer: agentServer,
      judge: agentServer,
      ...(selection === undefined ? {} : { memory: memoryServerSetting(selection, agentServer) }),
    },
    names: {
      memory: selection === undefined ? null : `${selection.model.provider}/${selection.modelId}`,
      answer: `${answer.provider}/${answer.modelId}`,
      judge: `${answer.provider}/${options.judgeModel ?? answer.modelId}`,
    },
  };
}

/** Where the memory model's server is set, as the memory mode chose it. */
function memoryServerSetting(selection: MemoryModelSelection, agentServer: string): string {
  const override = 'HARNESS_MEMORY_LLM_BASE_URL or [memory] llm_base_url';
  const chosen = `memory mode ${selection.mode}, ${selection.source}`;
  return selection.followsRunModel
    ? `${agentServer}, as the memory model is the agent model (${chosen}); ${override} gives memory a server of its own`
    : `${override}, else the provider's (${chosen})`;
}

/**
 * `--out` must be a regular file, or not exist yet in a directory that does: the results are read
 * back on `--resume`, appended, and flushed to disk after each line, which a pipe or a device
 * cannot do (reading `/dev/stdout` piped waits forever; `/dev/null` refuses the flush).
 */
async function checkOutPath(path: string, shownPath: string): Promise<void> {
  let problem: string;
  try {
    const stats = await stat(path);
    if (stats.isFile()) return;
    problem = `is ${stats.isDirectory() ? 'a directory' : stats.isFIFO() || stats.isSocket() ? 'a pipe' : 'a device'}`;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') throw new UsageError(`--out ${shownPath} cannot be used: ${(error as Error).message}`);
    if (await isDirectory(dirname(path))) return;
    problem = 'is in a directory that does not exist';
  }
  throw new UsageError(
    `--out ${shownPath} ${problem}: the results file must be a regular file, or a new one to create (it is read ` +
      `back by --resume and flushed after every line; to watch it fill, tail -f the file)`,
  );
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

interface ResultsSetup {
  readonly writer: EvalResultsWriter | undefined;
  /** The last line of each question already in the file. */
  readonly previous: ReadonlyMap<string, EvalResultLine>;
  /** Questions the file has results for: not asked again. */
  readonly skip: ReadonlySet<string>;
}

async function openResults(
  context: CliContext,
  options: EvalOptions,
  run: { readonly models: EvalModels; readonly memorySettings: EvalMemorySettings | null },
  /** The whole dataset, before --limit and --types: a results file's questions must all be among its. */
  fullDataset: EvalDataset,
): Promise<ResultsSetup> {
  if (options.out === undefined) return { writer: undefined, previous: new Map(), skip: new Set() };
  const path = resolve(context.cwd, options.out);
  const file = await readEvalResults(path);
  if (!options.resume && (file.lines.length > 0 || file.truncatedTail !== null)) {
    throw new UsageError(
      `${options.out} already holds results: pass --resume to continue that run, or choose another --out file`,
    );
  }
  checkResumable(file, options.out, { baseline: options.baseline, ...run });
  checkSameQuestions(file, options.out, fullDataset);
  const writer = await openEvalResultsWriter(path);
  if (writer.repairedTail !== null) {
    context.stderr.write(
      `harness: note: cut off the last line of ${options.out} (${writer.repairedTail.bytes} bytes), left ` +
        `unfinished by an interrupted write; its question is asked again\n`,
    );
  }
  return { writer, previous: file.latest, skip: file.completedIds };
}

interface EvalStores {
  readonly store: MemoryStore;
  readonly runStore: RunStore;
  readonly keep: boolean;
  close(): Promise<void>;
}

/** In memory unless `--memory-db`: the eval never touches the harness's own state. */
function openStores(context: CliContext, options: EvalOptions): EvalStores {
  const path = options.memoryDb === undefined ? undefined : resolve(context.cwd, options.memoryDb);
  const store = path === undefined ? createInMemoryStore() : createSqliteStore({ path });
  const runStore = path === undefined ? createInMemoryRunStore() : createSqliteRunStore({ path });
  return {
    store,
    runStore,
    keep: path !== undefined,
    async close() {
      await runStore.dispose();
      await store.dispose();
    },
  };
}

function memoryThresholds(config: HarnessConfig, options: EvalOptions): EvalMemoryOptions['thresholds'] {
  return {
    ...tokenConfigFrom(config),
    ...(options.observeMinTokens === undefined ? {} : { observeMinTokens: options.observeMinTokens }),
  };
}

function memoryOptions(
  config: HarnessConfig,
  options: EvalOptions,
  model: LanguageModel,
  stores: EvalStores,
): EvalMemoryOptions {
  return {
    model,
    store: stores.store,
    runStore: stores.runStore,
    thresholds: memoryThresholds(config, options),
    historyMaxTokens: options.historyTokens,
    redactSecrets: config.memory.redactSecrets,
    toolImportanceCap: config.memory.toolImportanceCap,
    leaseMs: config.memory.staleOperationSeconds * 1000,
    keep: stores.keep,
  };
}

/** The table on stdout, then, with `--json`, the summary as the last line. */
function report(
  context: CliContext,
  dataset: EvalDataset,
  options: EvalOptions,
  models: EvalModels,
  previous: ReadonlyMap<string, EvalResultLine>,
  fresh: readonly EvalResultLine[],
  wallTimeMs: number,
): void {
  const byId = new Map(fresh.map((line) => [line.question_id, line]));
  const results = dataset.conversations
    .flatMap((conversation) => conversation.questions)
    .map((question) => byId.get(question.questionId) ?? previous.get(question.questionId))
    .filter((line): line is EvalResultLine => line !== undefined);
  const summary = summarizeEvalResults(results, {
    format: dataset.format,
    baseline: options.baseline,
    models,
    wallTimeMs,
  });
  printLine(context, formatEvalTable(summary));
  if (options.json) printLine(context, JSON.stringify(summary));
}

/** A progress bar on stderr, drawn only when it is a terminal. */
function createProgress(
  context: CliContext,
  dataset: EvalDataset,
  skip: ReadonlySet<string>,
): { done(line: EvalResultLine): void; stop(): void } {
  const spinner = new Spinner(context.stderr);
  const total = dataset.conversations.reduce(
    (sum, conversation) => sum + conversation.questions.filter((question) => !skip.has(question.questionId)).length,
    0,
  );
  const started = performance.now();
  let done = 0;
  let correct = 0;
  let errors = 0;
  const draw = (): void => {
    const width = 24;
    const filled = total === 0 ? width : Math.round((done / total) * width);
    const seconds = Math.round((performance.now() - started) / 1000);
    spinner.update(
      `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} questions, ${correct} correct, ` +
        `${errors} error(s), ${seconds}s`,
    );
  };
  draw();
  return {
    done(line) {
      done++;
      if (line.verdict === 'correct') correct++;
      if (line.error !== undefined) errors++;
      draw();
    },
    stop: () => spinner.stop(),
  };
}

function wholeNumber(name: string): (value: string) => number {
  return (value: string) => {
    const number = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(number))
      throw new InvalidArgumentError(`${name} must be a whole number, 0 or more (got ${JSON.stringify(value)})`);
    return number;
  };
}
