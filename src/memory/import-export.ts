/**
 * Restoring a JSON export into an empty scope: its observations, its reflection and its
 * supersession set, renumbered to the seqs the scope gives them, in one store call.
 * @module
 */
import { HarnessMemoryError } from '../core/errors.js';
import { formatReflection } from '../core/format-reflection.js';
import type { IdGenerator } from '../core/ids.js';
import type { MemoryRecord, Observation, StoredReflection } from '../core/observation.js';
import { parseReflection } from '../core/parse-reflection.js';
import { redactSecrets } from '../core/redact-secrets.js';
import type { Contradiction, StructuredReflection, Supersession } from '../core/reflection.js';
import { stripInvisible } from '../core/sanitize-text.js';
import type { Scope } from '../core/scope.js';
import { memoryIdOf } from '../core/scope.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { ImportedObservation, ImportedReflection, MemoryStore } from '../storage/store.js';
import { invalidExport, readExport } from './export-reader.js';
import type { ReadExport } from './export-reader.js';
import { importerOf, prepareImport } from './import-observations.js';
import type { KeyedLock } from './scope-lock.js';

/** What {@link importExport} needs of the service. */
export interface ExportImportDependencies {
  readonly store: MemoryStore;
  readonly locks: KeyedLock;
  readonly generateId: IdGenerator;
  readonly estimator: TokenEstimator;
  readonly now: () => Date;
  /** Whether secrets are redacted, as from observer and reflector output. */
  readonly redact: boolean;
  readonly toolImportanceCap: number;
}

/** What {@link importExport} stored. */
export interface ExportImport {
  readonly record: MemoryRecord;
  readonly observations: Observation[];
  /** Supersessions and contradictions of the export naming a seq none of its observations has: not imported. */
  readonly droppedLinks: number;
}

/**
 * Checks `exported` (`EXPORT_INVALID` naming the field), then, after the scope's earlier
 * operations of this process, imports it into `scope` in one store call. A scope holding
 * observations, a reflection or links is refused (`EXPORT_INVALID`, field `scope`).
 */
export async function importExport(
  dependencies: ExportImportDependencies,
  scope: Scope,
  exported: unknown,
  meta: { runId?: string; toolCallId?: string },
): Promise<ExportImport> {
  const { store, redact } = dependencies;
  const read = readExport(exported);
  const observations = prepareObservations(read, dependencies);
  const reflection = cleanReflection(read.reflection, redact);
  const memoryId = memoryIdOf(scope);
  const importInto = importerOf(store, memoryId);
  return dependencies.locks.run(memoryId, async () => {
    const record = await store.getRecord(memoryId);
    refuseUnlessEmpty(memoryId, record);
    const afterSeq = record?.lastObservationSeq ?? 0;
    const renumber = new Map(read.seqs.map((seq, index) => [seq, afterSeq + index + 1]));
    const links = renumberLinks(read, renumber, redact);
    const restore: ImportedReflection = {
      afterSeq,
      reflection: reflection === '' ? null : restoredReflection(reflection, read, renumber, afterSeq, dependencies),
      supersessions: links.supersessions,
      contradictions: links.contradictions,
    };
    const result = await importInto({
      scope,
      memoryId,
      observations,
      restore,
      runId: meta.runId ?? 'unknown',
      toolCallId: meta.toolCallId ?? 'system',
      operationId: dependencies.generateId('op'),
    });
    return { ...result, droppedLinks: links.dropped };
  });
}

function prepareObservations(read: ReadExport, dependencies: ExportImportDependencies): ImportedObservation[] {
  try {
    return prepareImport(
      read.observations,
      dependencies.estimator,
      dependencies.redact,
      dependencies.toolImportanceCap,
    );
  } catch (error) {
    if (!HarnessMemoryError.isInstance(error) || error.code !== 'OBSERVE_INPUT_INVALID') throw error;
    const index = Number(error.data['index']);
    const problem = error.detail.replace(/^importObservations: (observation \d+: )?/, '').replace(/\.$/, '');
    throw invalidExport(index >= 0 ? `observations[${index}]` : 'observations', problem, error);
  }
}

function refuseUnlessEmpty(memoryId: string, record: MemoryRecord | undefined): void {
  if (!record) return;
  const links = record.supersessionCount + record.contradictionCount;
  if (record.observationCount === 0 && record.reflection === null && links === 0) return;
  throw new HarnessMemoryError({
    code: 'EXPORT_INVALID',
    component: 'import',
    message:
      `importExport: scope: ${memoryId} already holds ${record.observationCount} observation(s)` +
      `${record.reflection === null ? '' : ', a reflection'}${links === 0 ? '' : ` and ${links} link(s)`}; ` +
      'an export is imported only into a scope with none. Forget the scope first, or import into another one.',
    data: { field: 'scope', memoryId, observationCount: record.observationCount },
  });
}

/** The reflection's text as a reflector's is stored: invisible characters stripped, trimmed, redacted. */
function cleanReflection(raw: string, redact: boolean): string {
  const visible = stripInvisible(raw).trim();
  return redact ? redactSecrets(visible).text : visible;
}

/** The export's supersession set in the new seqs; a link naming a seq not exported is dropped and counted. */
function renumberLinks(
  read: ReadExport,
  renumber: ReadonlyMap<number, number>,
  redact: boolean,
): { supersessions: Supersession[]; contradictions: Contradiction[]; dropped: number } {
  const text = (value: string): string => cleanReflection(value, redact);
  const supersessions = renumberSupersessions(read.supersessions, renumber, text);
  const contradictions = renumberContradictions(read.contradictions, renumber, text);
  const dropped = read.supersessions.length - supersessions.length + read.contradictions.length - contradictions.length;
  return { supersessions, contradictions, dropped };
}

function renumberSupersessions(
  items: readonly Supersession[],
  renumber: ReadonlyMap<number, number>,
  text: (value: string) => string = (value) => value,
): Supersession[] {
  return items.flatMap((item) => {
    const newerSeq = renumber.get(item.newerSeq);
    const olderSeq = renumber.get(item.olderSeq);
    return newerSeq === undefined || olderSeq === undefined ? [] : [{ newerSeq, olderSeq, reason: text(item.reason) }];
  });
}

function renumberContradictions(
  items: readonly Contradiction[],
  renumber: ReadonlyMap<number, number>,
  text: (value: string) => string = (value) => value,
): Contradiction[] {
  return items.flatMap((item) => {
    const seqA = renumber.get(item.seqA);
    const seqB = renumber.get(item.seqB);
    return seqA === undefined || seqB === undefined ? [] : [{ seqA, seqB, detail: text(item.detail) }];
  });
}

/**
 * The reflection in the new seqs. Its `throughSeq` is the export's `reflection_through_seq` or,
 * when the export has none (one made before the field was written), its highest observation seq;
 * renumbered to the highest new seq whose old seq is not above it. The references in its text
 * are renumbered too: a structured reflection whose seqs change is written again from its parts.
 */
function restoredReflection(
  raw: string,
  read: ReadExport,
  renumber: ReadonlyMap<number, number>,
  afterSeq: number,
  dependencies: ExportImportDependencies,
): StoredReflection {
  const parsed = parseReflection(raw);
  const structured: StructuredReflection = {
    ...parsed,
    supersessions: renumberSupersessions(parsed.supersessions, renumber),
    contradictions: renumberContradictions(parsed.contradictions, renumber),
  };
  const text = parsed.schemaVersion === 1 && !sameReferences(parsed, structured) ? formatReflection(structured) : raw;
  const oldThrough = read.throughSeq ?? read.seqs.at(-1) ?? 0;
  let throughSeq = afterSeq;
  for (const [oldSeq, newSeq] of renumber) if (oldSeq <= oldThrough && newSeq > throughSeq) throughSeq = newSeq;
  return {
    raw: text,
    structured,
    tokenCount: dependencies.estimator.estimate(text),
    throughSeq,
    createdAt: dependencies.now().toISOString(),
  };
}

function sameReferences(before: StructuredReflection, after: StructuredReflection): boolean {
  return (
    before.supersessions.length === after.supersessions.length &&
    before.contradictions.length === after.contradictions.length &&
    before.supersessions.every((item, index) => {
      const other = after.supersessions[index];
      return other?.newerSeq === item.newerSeq && other.olderSeq === item.olderSeq;
    }) &&
    before.contradictions.every((item, index) => {
      const other = after.contradictions[index];
      return other?.seqA === item.seqA && other.seqB === item.seqB;
    })
  );
}
