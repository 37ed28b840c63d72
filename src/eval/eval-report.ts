/**
 * The summary of an eval run, from its per-question results: accuracy overall and by type
 * (by category for LoCoMo), errors apart from wrong answers, evidence recall, token costs,
 * wall time, models and baseline; and the plain-text table printed at the end of a run.
 * @module
 */
import { LOCOMO_ADVERSARIAL_CATEGORY } from './_locomo-format.js';
import type { EvalDatasetFormat } from './eval-dataset.js';
import { LONGMEMEVAL_QUESTION_TYPES } from './eval-dataset.js';
import type { EvalBaseline, EvalModels, EvalResultLine, EvalStage } from './eval-results.js';

/**
 * The value below which `fraction` of the values fall, interpolating linearly between the two
 * nearest ranks (the common "type 7" definition): `percentile([1, 2, 3, 4], 0.5)` is 2.5.
 * `null` for no values. The values need not be sorted.
 * @example
 * percentile(snippetTokens, 0.95);
 */
export function percentile(values: readonly number[], fraction: number): number | null {
  if (!(fraction >= 0 && fraction <= 1)) throw new RangeError(`fraction must be between 0 and 1; got ${fraction}`);
  if (values.length === 0) return null;
  const sorted = [...values].sort((left, right) => left - right);
  const rank = fraction * (sorted.length - 1);
  const below = sorted[Math.floor(rank)] ?? 0;
  const above = sorted[Math.ceil(rank)] ?? below;
  return below + (above - below) * (rank - Math.floor(rank));
}

/** Accuracy over a group of questions. Errors are not in `judged`: they are neither right nor wrong. */
export interface AccuracyFigure {
  /** `correct / judged`, or `null` when nothing was judged. */
  readonly accuracy: number | null;
  readonly correct: number;
  /** Questions answered and judged (an unparsable verdict is judged, and not correct). */
  readonly judged: number;
  /** Questions whose model calls failed after their retries. */
  readonly errors: number;
  /** Judge replies with no readable verdict, counted as not correct (as LongMemEval's script does). */
  readonly unparsable: number;
}

/** Evidence recall over a group of questions. */
export interface EvidenceRecallFigure {
  /** `hits / counted`, or `null` when no question counts. */
  readonly recall: number | null;
  readonly hits: number;
  /** Questions with a gold answer that can appear in memory (not abstention or preference). */
  readonly counted: number;
}

/** Total tokens and the mean per question. */
export interface TokenFigure {
  readonly total: number;
  readonly per_question: number | null;
}

/** The `--json` summary of a run, the last line of the output. */
export interface EvalSummary {
  readonly format: EvalDatasetFormat;
  readonly baseline: EvalBaseline;
  readonly models: EvalModels;
  readonly questions: number;
  readonly accuracy: {
    /** LongMemEval: every judged question. LoCoMo: every category but 5. */
    readonly overall: number | null;
    readonly correct: number;
    readonly judged: number;
    /** Questions in the overall figure whose model calls failed. */
    readonly errors: number;
    readonly by_type: Readonly<Record<string, AccuracyFigure>>;
    /** Abstention questions on their own (`_abs`; for LoCoMo, category 5). */
    readonly abstention: AccuracyFigure;
    /** Types left out of `overall`: `["category-5"]` for LoCoMo, else empty. */
    readonly excluded_from_overall: readonly string[];
  };
  /** LoCoMo only: accuracy by category number (`"1"` to `"5"`). */
  readonly by_category?: Readonly<Record<string, AccuracyFigure>>;
  readonly errors: { readonly total: number } & Readonly<Record<EvalStage, number>>;
  readonly unparsable: number;
  readonly evidence_recall: EvidenceRecallFigure & { readonly by_type: Readonly<Record<string, EvidenceRecallFigure>> };
  /** Over questions whose memory was built (no memory-stage error). */
  readonly snippet_tokens: { readonly median: number | null; readonly p95: number | null };
  readonly memory_input_tokens: TokenFigure;
  readonly memory_output_tokens: TokenFigure;
  readonly answer_input_tokens: TokenFigure;
  readonly wall_time_ms: number;
}

/** What the results do not say about the run. */
export interface SummarizeEvalOptions {
  readonly format: EvalDatasetFormat;
  readonly baseline: EvalBaseline;
  readonly models: EvalModels;
  /** Wall time of the run, measured by the runner. */
  readonly wallTimeMs: number;
}

/**
 * Aggregates per-question results (one per question: the `latest` lines of a resumed file)
 * into the summary.
 * @example
 * const summary = summarizeEvalResults([...file.latest.values()], { format, baseline, models, wallTimeMs });
 * console.log(formatEvalTable(summary));
 */
export function summarizeEvalResults(results: readonly EvalResultLine[], options: SummarizeEvalOptions): EvalSummary {
  // LoCoMo's adversarial category stays out of the overall figure, as published results do.
  const excluded = options.format === 'locomo' ? [`category-${LOCOMO_ADVERSARIAL_CATEGORY}`] : [];
  const inOverall = results.filter((result) => !excluded.includes(result.question_type));
  const overall = accuracyOf(inOverall);
  const byType = groupBy(results, (result) => result.question_type);
  const errors = results.filter((result) => result.error !== undefined);
  const built = results.filter((result) => result.error?.stage !== 'memory');
  return {
    format: options.format,
    baseline: options.baseline,
    models: options.models,
    questions: results.length,
    accuracy: {
      overall: overall.accuracy,
      correct: overall.correct,
      judged: overall.judged,
      errors: overall.errors,
      by_type: mapGroups(byType, accuracyOf),
      abstention: accuracyOf(results.filter((result) => result.abstention)),
      excluded_from_overall: excluded,
    },
    ...(options.format === 'locomo'
      ? {
          by_category: mapGroups(
            groupBy(results, (result) => String(result.category ?? '?')),
            accuracyOf,
          ),
        }
      : {}),
    errors: {
      total: errors.length,
      memory: errors.filter((result) => result.error?.stage === 'memory').length,
      answer: errors.filter((result) => result.error?.stage === 'answer').length,
      judge: errors.filter((result) => result.error?.stage === 'judge').length,
    },
    unparsable: results.filter((result) => result.verdict === 'unparsable').length,
    evidence_recall: { ...evidenceRecallOf(inOverall), by_type: mapGroups(byType, evidenceRecallOf) },
    snippet_tokens: {
      median: percentile(
        built.map((result) => result.snippet_tokens),
        0.5,
      ),
      p95: percentile(
        built.map((result) => result.snippet_tokens),
        0.95,
      ),
    },
    memory_input_tokens: tokensOf(results, (result) => result.memory_input_tokens),
    memory_output_tokens: tokensOf(results, (result) => result.memory_output_tokens),
    answer_input_tokens: tokensOf(results, (result) => result.answer_input_tokens),
    wall_time_ms: options.wallTimeMs,
  };
}

function accuracyOf(results: readonly EvalResultLine[]): AccuracyFigure {
  const judged = results.filter((result) => result.error === undefined && result.verdict !== null);
  const correct = judged.filter((result) => result.verdict === 'correct').length;
  return {
    accuracy: judged.length === 0 ? null : correct / judged.length,
    correct,
    judged: judged.length,
    errors: results.length - judged.length,
    unparsable: judged.filter((result) => result.verdict === 'unparsable').length,
  };
}

function evidenceRecallOf(results: readonly EvalResultLine[]): EvidenceRecallFigure {
  const counted = results.filter((result) => result.evidence_hit !== null);
  const hits = counted.filter((result) => result.evidence_hit === true).length;
  return { recall: counted.length === 0 ? null : hits / counted.length, hits, counted: counted.length };
}

function tokensOf(results: readonly EvalResultLine[], tokens: (result: EvalResultLine) => number): TokenFigure {
  const total = results.reduce((sum, result) => sum + tokens(result), 0);
  return { total, per_question: results.length === 0 ? null : total / results.length };
}

function groupBy(
  results: readonly EvalResultLine[],
  key: (result: EvalResultLine) => string,
): Map<string, EvalResultLine[]> {
  const groups = new Map<string, EvalResultLine[]>();
  for (const result of results) {
    const name = key(result);
    const group = groups.get(name);
    if (group === undefined) groups.set(name, [result]);
    else group.push(result);
  }
  return new Map([...groups].sort(([left], [right]) => compareTypes(left, right)));
}

// LongMemEval's types in the paper's order, then anything else (LoCoMo categories) numerically.
function compareTypes(left: string, right: string): number {
  const rank = (type: string): number => {
    const index = LONGMEMEVAL_QUESTION_TYPES.indexOf(type);
    return index === -1 ? LONGMEMEVAL_QUESTION_TYPES.length : index;
  };
  return rank(left) - rank(right) || left.localeCompare(right, 'en', { numeric: true });
}

function mapGroups<T>(
  groups: ReadonlyMap<string, readonly EvalResultLine[]>,
  figure: (results: readonly EvalResultLine[]) => T,
): Record<string, T> {
  return Object.fromEntries([...groups].map(([name, results]) => [name, figure(results)]));
}

/**
 * The summary as a plain-text table for the terminal: one row per question type (per
 * category for LoCoMo) with questions, correct, accuracy, errors and evidence recall, the
 * overall and abstention rows, then the costs, the wall time, the models and the baseline.
 * @example
 * process.stdout.write(`${formatEvalTable(summary)}\n`);
 */
export function formatEvalTable(summary: EvalSummary): string {
  const rows: string[][] = [['type', 'questions', 'correct', 'accuracy', 'errors', 'evidence recall']];
  for (const [type, figure] of Object.entries(summary.accuracy.by_type)) {
    const name = summary.accuracy.excluded_from_overall.includes(type) ? `${type} (not in overall)` : type;
    rows.push(accuracyRow(name, figure, summary.evidence_recall.by_type[type]));
  }
  const { overall: accuracy, correct, judged, errors } = summary.accuracy;
  rows.push(accuracyRow('overall', { accuracy, correct, judged, errors }, summary.evidence_recall));
  rows.push(
    accuracyRow(
      summary.format === 'locomo' ? 'adversarial (category 5)' : 'abstention',
      summary.accuracy.abstention,
      undefined,
    ),
  );
  return [...alignColumns(rows), '', ...footerLines(summary)].join('\n');
}

function accuracyRow(
  name: string,
  figure: Omit<AccuracyFigure, 'unparsable'>,
  evidence: EvidenceRecallFigure | undefined,
): string[] {
  const evidenceText =
    evidence === undefined || evidence.counted === 0
      ? '-'
      : `${percent(evidence.recall)} (${evidence.hits}/${evidence.counted})`;
  return [
    name,
    String(figure.judged + figure.errors),
    String(figure.correct),
    percent(figure.accuracy),
    String(figure.errors),
    evidenceText,
  ];
}

function alignColumns(rows: readonly string[][]): string[] {
  const widths = rows[0]?.map((_cell, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

function footerLines(summary: EvalSummary): string[] {
  const { errors, models } = summary;
  return [
    `snippet tokens: median ${count(summary.snippet_tokens.median)}, p95 ${count(summary.snippet_tokens.p95)}`,
    `memory model: ${count(summary.memory_input_tokens.total)} input, ` +
      `${count(summary.memory_output_tokens.total)} output tokens ` +
      `(${count(summary.memory_input_tokens.per_question)} / ` +
      `${count(summary.memory_output_tokens.per_question)} per question)`,
    `answer model: ${count(summary.answer_input_tokens.total)} input tokens ` +
      `(${count(summary.answer_input_tokens.per_question)} per question)`,
    `errors: ${errors.total} (memory ${errors.memory}, answer ${errors.answer}, judge ${errors.judge}); ` +
      `unparsable verdicts: ${summary.unparsable}`,
    `wall time: ${duration(summary.wall_time_ms)}`,
    `baseline: ${summary.baseline}; models: memory ${models.memory ?? '-'}, answer ${models.answer}, judge ` +
      `${models.judge}`,
  ];
}

function percent(value: number | null): string {
  return value === null ? '-' : `${(value * 100).toFixed(1)}%`;
}

function count(value: number | null): string {
  return value === null ? '-' : Math.round(value).toLocaleString('en-US');
}

function duration(milliseconds: number): string {
  const seconds = Math.round(milliseconds / 1000);
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const parts = hours > 0 ? [`${hours}h`, `${minutes}m`] : minutes > 0 ? [`${minutes}m`] : [];
  return [...parts, `${seconds % 60}s`].join(' ');
}
