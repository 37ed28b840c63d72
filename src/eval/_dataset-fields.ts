/**
 * Field readers shared by the dataset formats: each check names the instance and the
 * field path, so a malformed dataset fails with EVAL_DATASET_INVALID, never a TypeError.
 */
import { HarnessMemoryError } from '../core/errors.js';
import type { EvalConversation, EvalDatasetFormat } from './eval-conversation.js';

/** Which instance of the file is being read, for error messages. */
export interface InstanceContext {
  readonly format: EvalDatasetFormat;
  /** Position in the file's top-level array, from 0. */
  readonly index: number;
  /** `question_id` or `sample_id`, once known. */
  readonly id: string | undefined;
}

/** A date field that is missing or cannot be read; reported only if the dataset has dates. */
export interface UndatedField {
  readonly field: string;
  /** What is wrong and what follows from it, after the field name. */
  readonly problem: string;
}

/** One instance read by a format parser: its conversation, sessions already in date order. */
export interface ParsedConversation {
  readonly conversation: EvalConversation;
  readonly undated: readonly UndatedField[];
  /** True when the instance gives at least one date text. */
  readonly hasDate: boolean;
}

const FORMAT_NAMES: Readonly<Record<EvalDatasetFormat, { name: string; unit: string; idField: string }>> = {
  longmemeval: { name: 'LongMemEval', unit: 'instance', idField: 'question_id' },
  locomo: { name: 'LoCoMo', unit: 'sample', idField: 'sample_id' },
};

/** `LongMemEval instance 3 (question_id "abc")`, the prefix of every message about an instance. */
export function describeInstance(context: InstanceContext): string {
  const names = FORMAT_NAMES[context.format];
  const id = context.id === undefined ? `no ${names.idField}` : `${names.idField} ${JSON.stringify(context.id)}`;
  return `${names.name} ${names.unit} ${context.index} (${id})`;
}

/** The EVAL_DATASET_INVALID error for one field of one instance. */
export function invalidField(context: InstanceContext, field: string, problem: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'EVAL_DATASET_INVALID',
    component: 'eval',
    message:
      `${describeInstance(context)}: ${field} ${problem}. Check the dataset file: it must be an ` +
      `unmodified LongMemEval or LoCoMo file, or follow the same format.`,
    data: {
      format: context.format,
      index: context.index,
      ...(context.id === undefined ? {} : { id: context.id }),
      field,
    },
  });
}

/** A short name for the JSON type of a value: `null`, `array`, `object`, `number`, ... */
export function jsonTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** True for a plain JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value as an object, or an error naming the field. */
export function expectRecord(value: unknown, context: InstanceContext, field: string): Record<string, unknown> {
  if (!isRecord(value)) throw invalidField(context, field, `must be an object, got ${jsonTypeOf(value)}`);
  return value;
}

/** The value as an array, or an error naming the field. */
export function expectArray(value: unknown, context: InstanceContext, field: string): readonly unknown[] {
  if (!Array.isArray(value)) throw invalidField(context, field, `must be an array, got ${jsonTypeOf(value)}`);
  return value;
}

/** The value as a string, or an error naming the field. */
export function expectString(value: unknown, context: InstanceContext, field: string): string {
  if (typeof value !== 'string') throw invalidField(context, field, `must be a string, got ${jsonTypeOf(value)}`);
  return value;
}

/** The value as a string with visible text, or an error naming the field. */
export function expectText(value: unknown, context: InstanceContext, field: string): string {
  const text = expectString(value, context, field);
  if (text.trim() === '') throw invalidField(context, field, 'must not be empty');
  return text;
}

/**
 * A gold answer: a string, or a finite number (published files have both), as text. Blank only
 * where `mayBeBlank` (an abstention question, whose right answer is that it was never said):
 * elsewhere the judge would grade against nothing.
 */
export function expectAnswer(value: unknown, context: InstanceContext, field: string, mayBeBlank = false): string {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string')
    throw invalidField(context, field, `must be a string or a number, got ${jsonTypeOf(value)}`);
  if (!mayBeBlank && value.trim() === '') throw invalidField(context, field, 'must not be empty');
  return value;
}

/** An optional array of strings (absent or null gives `undefined`), checked element by element. */
export function optionalStringArray(
  value: unknown,
  context: InstanceContext,
  field: string,
): readonly string[] | undefined {
  if (value === undefined || value === null) return undefined;
  return expectArray(value, context, field).map((element, position) =>
    expectString(element, context, `${field}[${position}]`),
  );
}
