/**
 * Reading a JSON export (`memory.export(scope, 'json')`) back: its shape checked field by field,
 * in the exporting scope's seqs.
 * @module
 */
import { HarnessMemoryError } from '../core/errors.js';
import { shownValue } from '../core/require-option.js';
import type { Contradiction, Supersession } from '../core/reflection.js';
import { MAX_IMPORTED_OBSERVATION_LENGTH } from './import-observations.js';

/** The largest JSON export `importExport` reads as text, in bytes (UTF-8). */
export const MAX_IMPORTED_EXPORT_BYTES: number = 64 * 1024 * 1024;
/** The longest reflection an import takes, in bytes (UTF-8): as much as a reflector may answer. */
export const MAX_IMPORTED_REFLECTION_BYTES = 65_536;
/**
 * The most supersessions an import takes, and the most contradictions (each list on its own):
 * as many as the observations an import takes (`MAX_IMPORT_OBSERVATIONS`), one link per
 * observation. Every snippet reads the whole set.
 */
export const MAX_IMPORTED_LINKS = 10_000;

/** An export as read, its seqs still the exporting scope's. */
export interface ReadExport {
  /** The observations as written, for `prepareImport`. */
  readonly observations: readonly unknown[];
  /** Their seqs, ascending, in the same order. */
  readonly seqs: readonly number[];
  /** The reflection's raw text, `''` for none. */
  readonly reflection: string;
  /** `reflection_through_seq` when the export has it. */
  readonly throughSeq: number | undefined;
  readonly supersessions: readonly Supersession[];
  readonly contradictions: readonly Contradiction[];
}

const EXPORT_FIELDS: ReadonlySet<string> = new Set([
  'config',
  'observations',
  'reflection',
  'structured_reflection',
  'reflection_links',
  'status',
  'reflection_through_seq',
]);
const SUPERSESSION_FIELDS: ReadonlySet<string> = new Set([
  'newer_seq',
  'older_seq',
  'reason',
  'operation_id',
  'created_at',
]);
const CONTRADICTION_FIELDS: ReadonlySet<string> = new Set(['seq_a', 'seq_b', 'detail', 'operation_id', 'created_at']);

/**
 * Checks a JSON export, given as its text or parsed, and reads what an import restores. Throws
 * `EXPORT_INVALID` whose `data.field` names the bad field (`reflection_links.supersessions[3].newer_seq`).
 * `config`, `status` and `structured_reflection` are checked to be objects (or null) and not read.
 */
export function readExport(exported: unknown): ReadExport {
  const root = typeof exported === 'string' ? parseText(exported) : exported;
  const top = objectAt(root, '', 'the export must be a JSON object, as memory.export(scope, "json") writes it');
  for (const key of Object.keys(top))
    if (!EXPORT_FIELDS.has(key))
      throw invalidExport(key, `unknown field; an export has ${[...EXPORT_FIELDS].join(', ')}`);
  for (const key of ['config', 'status', 'structured_reflection'])
    if (top[key] !== undefined && top[key] !== null) objectAt(top[key], key, 'must be an object or null');
  const observations = top['observations'];
  if (!Array.isArray(observations)) throw invalidExport('observations', 'must be an array');
  const seqs = observations.map((item: unknown, index) => {
    const field = `observations[${index}]`;
    return seqAt(objectAt(item, field, 'must be an object')['seq'], `${field}.seq`);
  });
  seqs.forEach((seq, index) => {
    if (index > 0 && seq <= (seqs[index - 1] as number))
      throw invalidExport(
        `observations[${index}].seq`,
        'must be greater than the seq before it (an export lists them in order)',
      );
  });
  const reflection = top['reflection'] ?? '';
  if (typeof reflection !== 'string') throw invalidExport('reflection', 'must be a string');
  if (Buffer.byteLength(reflection, 'utf8') > MAX_IMPORTED_REFLECTION_BYTES)
    throw invalidExport('reflection', `is larger than ${MAX_IMPORTED_REFLECTION_BYTES} bytes`);
  const through = top['reflection_through_seq'];
  const links = top['reflection_links'] ?? {};
  const set = objectAt(links, 'reflection_links', 'must be an object with supersessions and contradictions');
  return {
    observations,
    seqs,
    reflection,
    throughSeq: through === undefined || through === null ? undefined : seqAt(through, 'reflection_through_seq', 0),
    supersessions: listAt(set, 'supersessions', SUPERSESSION_FIELDS, (item, field) => ({
      newerSeq: seqAt(item['newer_seq'], `${field}.newer_seq`),
      olderSeq: seqAt(item['older_seq'], `${field}.older_seq`),
      reason: textAt(item['reason'], `${field}.reason`),
    })),
    contradictions: listAt(set, 'contradictions', CONTRADICTION_FIELDS, (item, field) => ({
      seqA: seqAt(item['seq_a'], `${field}.seq_a`),
      seqB: seqAt(item['seq_b'], `${field}.seq_b`),
      detail: textAt(item['detail'], `${field}.detail`),
    })),
  };
}

function parseText(text: string): unknown {
  if (Buffer.byteLength(text, 'utf8') > MAX_IMPORTED_EXPORT_BYTES)
    throw invalidExport('', `the export is larger than ${MAX_IMPORTED_EXPORT_BYTES} bytes`);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw invalidExport('', `the export is not JSON (${(error as Error).message.slice(0, 200)})`, error);
  }
}

function listAt<T>(
  set: Record<string, unknown>,
  key: string,
  fields: ReadonlySet<string>,
  read: (item: Record<string, unknown>, field: string) => T,
): T[] {
  const list = set[key] ?? [];
  if (!Array.isArray(list)) throw invalidExport(`reflection_links.${key}`, 'must be an array');
  if (list.length > MAX_IMPORTED_LINKS)
    throw invalidExport(`reflection_links.${key}`, `at most ${MAX_IMPORTED_LINKS} per import, got ${list.length}`);
  return list.map((entry: unknown, index) => {
    const field = `reflection_links.${key}[${index}]`;
    const item = objectAt(entry, field, 'must be an object');
    for (const name of Object.keys(item))
      if (!fields.has(name))
        throw invalidExport(`${field}.${name}`, `unknown field; a link has ${[...fields].join(', ')}`);
    return read(item, field);
  });
}

function objectAt(value: unknown, field: string, problem: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalidExport(field, problem);
  return value as Record<string, unknown>;
}

function seqAt(value: unknown, field: string, min = 1): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= min) return value;
  throw invalidExport(field, `must be an integer from ${min}, got ${shownValue(value)}`);
}

function textAt(value: unknown, field: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw invalidExport(field, `must be a string, got ${shownValue(value)}`);
  if (value.length > MAX_IMPORTED_OBSERVATION_LENGTH)
    throw invalidExport(field, `is longer than ${MAX_IMPORTED_OBSERVATION_LENGTH} characters`);
  return value;
}

/** `EXPORT_INVALID` naming the field (`''`: the export as a whole). */
export function invalidExport(field: string, problem: string, cause?: unknown): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'EXPORT_INVALID',
    component: 'import',
    message: `${field === '' ? '' : `${field}: `}${problem}.`,
    data: { field },
    ...(cause === undefined ? {} : { cause }),
  });
}
