/**
 * Checks and cleans observations brought in from elsewhere before a store appends them.
 * @module
 */
import { shownValue } from '../core/require-option.js';
import { HarnessMemoryError } from '../core/errors.js';
import { redactSecrets } from '../core/redact-secrets.js';
import { stripInvisible } from '../core/sanitize-text.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { IdGenerator } from '../core/ids.js';
import type { Observation, MemoryRecord, ObservationSource } from '../core/observation.js';
import { DEFAULT_TOOL_IMPORTANCE_CAP, OBSERVATION_SOURCES } from '../core/observation.js';
import { UNSCORED_IMPORTANCE } from '../core/observation-snippet.js';
import type { Scope } from '../core/scope.js';
import { memoryIdOf } from '../core/scope.js';
import type { ImportedObservation, MemoryStore } from '../storage/store.js';
import type { KeyedLock } from './scope-lock.js';
import { parseTimestamp } from '../core/parse-timestamp.js';

/**
 * One observation to import, as a caller gives it. An observation of a JSON export
 * (`JSON.parse(exported.content).observations`) is taken as it is: its `created_at` is read as
 * `createdAt`, and its `seq`, `token_count` and `source_*` fields are ignored.
 */
export interface ObservationImport {
  readonly content: string;
  /** In [0, 1]; `null` or left out: unscored. */
  readonly importance?: number | null;
  /**
   * Where it came from: `import` (the default), `client` (told by a user through a client, such
   * as "remember that…"), or the provenance an export recorded (`user`, `assistant`, `tool`,
   * `mixed`). A `tool` observation's importance is capped at the tool importance cap, as the
   * observer caps it.
   */
  readonly source?: ObservationSource;
  /** ISO 8601; when it was first observed. @default the import's time */
  readonly createdAt?: string;
}

/** The most observations one import takes. */
export const MAX_IMPORT_OBSERVATIONS = 10_000;
/** The longest observation an import takes, in UTF-16 code units. */
export const MAX_IMPORTED_OBSERVATION_LENGTH = 16_384;

/**
 * Validates an import and turns it into what a store appends: invisible characters stripped,
 * secrets redacted (unless `redact` is false), tokens counted, a `tool` observation's
 * importance capped at `toolImportanceCap`. Throws `OBSERVE_INPUT_INVALID` naming the
 * observation and the field.
 */
export function prepareImport(
  observations: unknown,
  estimator: TokenEstimator,
  redact: boolean,
  toolImportanceCap: number = DEFAULT_TOOL_IMPORTANCE_CAP,
): ImportedObservation[] {
  if (!Array.isArray(observations)) throw invalid(-1, 'observations must be an array');
  if (observations.length > MAX_IMPORT_OBSERVATIONS)
    throw invalid(-1, `at most ${MAX_IMPORT_OBSERVATIONS} observations per import, got ${observations.length}`);
  return observations.map((item: unknown, index): ImportedObservation => {
    if (item === null || typeof item !== 'object') throw invalid(index, 'must be an object with content');
    // A field this does not read is refused, not dropped: a misspelt `createdAt` would
    // otherwise lose its time without a word. Only an export's own bookkeeping is let through.
    for (const key of Object.keys(item))
      if (!IMPORT_FIELDS.has(key) && !EXPORT_BOOKKEEPING_FIELDS.has(key))
        throw invalid(
          index,
          `unknown field ${JSON.stringify(key)}; an observation has content, importance, source and createdAt ` +
            `(or an export's created_at; its seq, token_count and source_* fields are ignored)`,
        );
    const fields = item as Record<string, unknown>;
    const { content, importance, source } = fields;
    if (fields.createdAt !== undefined && fields.created_at !== undefined)
      throw invalid(index, 'give createdAt or created_at, not both');
    const createdAt = fields.createdAt ?? fields.created_at;
    const timeField = fields.createdAt === undefined ? 'created_at' : 'createdAt';
    if (typeof content !== 'string') throw invalid(index, 'content must be a string');
    if (content.length > MAX_IMPORTED_OBSERVATION_LENGTH)
      throw invalid(index, `content is longer than ${MAX_IMPORTED_OBSERVATION_LENGTH} characters`);
    const cleaned = stripInvisible(content).trim();
    if (cleaned === '') throw invalid(index, 'content is empty');
    const text = redact ? redactSecrets(cleaned).text : cleaned;
    if (
      importance !== undefined &&
      importance !== null &&
      (typeof importance !== 'number' || !(importance >= 0 && importance <= 1))
    ) {
      throw invalid(index, `importance must be a number from 0 to 1 or null, got ${shownValue(importance)}`);
    }
    if (source !== undefined && !OBSERVATION_SOURCES.includes(source as ObservationSource))
      throw invalid(
        index,
        `source must be one of ${OBSERVATION_SOURCES.map((item) => `"${item}"`).join(', ')}, got ${shownValue(source)}`,
      );
    const time = typeof createdAt === 'string' ? parseTimestamp(createdAt) : undefined;
    if (createdAt !== undefined && time === undefined) {
      throw invalid(
        index,
        `${timeField} must be an RFC 3339 time with its offset (2024-05-01T10:00:00Z) or a date ` +
          `(2024-05-01), got ${JSON.stringify(createdAt)}`,
      );
    }
    const at = time?.toISOString();
    // Six-digit and negative years sort wrongly as text, and Postgres refuses them and year 0.
    if (at !== undefined && !/^(?!0000)\d{4}-/.test(at))
      throw invalid(index, `${timeField} must fall in the years 0001 to 9999, got ${JSON.stringify(createdAt)}`);
    const scored = typeof importance === 'number' ? importance : null;
    return {
      content: text,
      // A file can say anything: tool text keeps the cap the observer gave it, so an edited
      // export cannot turn a web page's words into a top-priority fact.
      importance: source === 'tool' ? capImportance(scored, toolImportanceCap) : scored,
      tokenCount: estimator.estimate(text),
      source: (source as ObservationSource | undefined) ?? 'import',
      ...(at === undefined ? {} : { createdAt: at }),
    };
  });
}

const IMPORT_FIELDS: ReadonlySet<string> = new Set(['content', 'importance', 'source', 'createdAt', 'created_at']);
// What `observationToJson` writes besides the fields read: the exporting scope's positions,
// which mean nothing in the scope imported into (it assigns its own seqs, with no message span).
const EXPORT_BOOKKEEPING_FIELDS: ReadonlySet<string> = new Set([
  'seq',
  'token_count',
  'source_start_index',
  'source_end_index',
  'source_message_indexes',
]);

/** As the observer caps tool output: an unscored one counts as 0.5, so a lower cap replaces it. */
function capImportance(importance: number | null, cap: number): number | null {
  if (importance === null) return cap < UNSCORED_IMPORTANCE ? cap : null;
  return Math.min(importance, cap);
}

function invalid(index: number, problem: string): HarnessMemoryError {
  return new HarnessMemoryError({
    code: 'OBSERVE_INPUT_INVALID',
    component: 'import',
    message: index >= 0 ? `importObservations: observation ${index}: ${problem}.` : `importObservations: ${problem}.`,
    data: { index },
  });
}

/**
 * Appends prepared observations to the scope in one store call, after the scope's earlier
 * operations of this process (`locks`). Throws `STORE_FAILED` for a store that cannot import.
 */
export async function importPrepared(
  dependencies: { readonly store: MemoryStore; readonly locks: KeyedLock; readonly generateId: IdGenerator },
  scope: Scope,
  observations: readonly ImportedObservation[],
  meta: { runId?: string; toolCallId?: string },
): Promise<{ record: MemoryRecord; observations: Observation[] }> {
  const memoryId = memoryIdOf(scope);
  const importInto = importerOf(dependencies.store, memoryId);
  return dependencies.locks.run(memoryId, () =>
    importInto({
      scope,
      memoryId,
      observations,
      runId: meta.runId ?? 'unknown',
      toolCallId: meta.toolCallId ?? 'system',
      operationId: dependencies.generateId('op'),
    }),
  );
}

/** The store's `importObservations`, or `STORE_FAILED` for a store that has none. */
export function importerOf(store: MemoryStore, memoryId: string): NonNullable<MemoryStore['importObservations']> {
  if (!store.importObservations) {
    throw new HarnessMemoryError({
      code: 'STORE_FAILED',
      component: 'import',
      message: 'this store cannot import observations (it has no importObservations).',
      data: { memoryId },
    });
  }
  return store.importObservations.bind(store);
}
