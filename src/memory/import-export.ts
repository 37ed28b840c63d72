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
import { refuseToolSupersessions } from '../core/reflection-links.js';
import type { ObservationOrigin } from '../core/reflection-links.js';
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
  /**
   * Links of the export not imported as written: those naming a seq none of its observations
   * has (left out), and supersessions in which an observation that may rest on tool output
   * replaces one that does not (kept as contradictions, as a reflector's are).
   */
  readonly droppedLinks: number;
}

/**
 * Checks `exported` (`EXPORT_INVALID` naming the field), then, after the scope's earlier
 * operations of this process, imports it into `scope` in one store call. A scope holding
 * observations, a reflection or links, found so here or by the store, is refused
 * (`EXPORT_INVALID`, field `scope`). An export with a reflection or links needs a store that
 * declares `supportsRestore` (otherwise `STORE_FAILED`, before anything is written).
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
  refuseWithoutRestore(store, memoryId, read, reflection);
  return dependencies.locks.run(memoryId, async () => {
    const record = await store.getRecord(memoryId);
    refuseUnlessEmpty(scope, memoryId, record);
    const afterSeq = record?.lastObservationSeq ?? 0;
    const renumber = new Map(read.seqs.map((seq, index) => [seq, afterSeq + index + 1]));
    const origins = observations.map((item, index) => originOf(item, afterSeq + index + 1));
    const { toolImportanceCap } = dependencies;
    const links = renumberLinks(read, renumber, redact);
    const settled = refuseToolSupersessions({ summary: '', schemaVersion: 1, ...links }, origins, toolImportanceCap);
    const restore: ImportedReflection = {
      afterSeq,
      reflection:
        reflection === '' ? null : restoredReflection(reflection, { read, renumber, afterSeq, origins }, dependencies),
      supersessions: settled.structured.supersessions,
      contradictions: settled.structured.contradictions,
    };
    const result = await importInto({
      scope,
      memoryId,
      observations,
      restore,
      runId: meta.runId ?? 'unknown',
      toolCallId: meta.toolCallId ?? 'system',
      operationId: dependencies.generateId('op'),
    }).catch((error: unknown) => {
      throw conflictAsScope(scope, memoryId, error);
    });
    return { ...result, droppedLinks: links.dropped + settled.refused };
  });
}

/** What `refuseToolSupersessions` reads of an imported observation, at the seq the import gives it. */
function originOf(observation: ImportedObservation, seq: number): ObservationOrigin {
  return { seq, source: observation.source ?? 'mixed', importance: observation.importance };
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

// An adapter written before `restore` would import the observations and drop the rest silently:
// the superseded facts back at full weight, which is what restoring an export is for.
function refuseWithoutRestore(store: MemoryStore, memoryId: string, read: ReadExport, reflection: string): void {
  const links = read.supersessions.length + read.contradictions.length;
  if (store.supportsRestore === true || (reflection === '' && links === 0)) return;
  throw new HarnessMemoryError({
    code: 'STORE_FAILED',
    component: 'import',
    message:
      `store ${JSON.stringify(store.name)} does not declare supportsRestore, so it would import ` +
      `the observations without the export's ${reflection === '' ? '' : 'reflection and '}${links} link(s); ` +
      'nothing was imported. Use a store whose importObservations follows `restore` and sets ' +
      '`supportsRestore: true`, or import the observations alone with importObservations.',
    data: { store: store.name, memoryId },
  });
}

/** The store's `STORE_CONFLICT` (the scope written since it was read here) as this module's own refusal. */
function conflictAsScope(scope: Scope, memoryId: string, error: unknown): unknown {
  if (!HarnessMemoryError.isInstance(error) || error.code !== 'STORE_CONFLICT') return error;
  return new HarnessMemoryError({
    code: 'EXPORT_INVALID',
    component: 'import',
    message:
      `scope ${shownScope(scope)} was written while importing; nothing was imported. ` +
      'An export is imported only into a scope with no memory: forget the scope first, or import into another one.',
    data: { field: 'scope', memoryId },
    cause: error,
  });
}

function refuseUnlessEmpty(scope: Scope, memoryId: string, record: MemoryRecord | undefined): void {
  if (!record) return;
  const links = record.supersessionCount + record.contradictionCount;
  if (record.observationCount === 0 && record.reflection === null && links === 0) return;
  throw new HarnessMemoryError({
    code: 'EXPORT_INVALID',
    component: 'import',
    message:
      `scope ${shownScope(scope)} already holds ${record.observationCount} observation(s)` +
      `${record.reflection === null ? '' : ', a reflection'}${links === 0 ? '' : ` and ${links} link(s)`}; ` +
      'an export is imported only into a scope with none. Forget the scope first, or import into another one.',
    data: { field: 'scope', memoryId, observationCount: record.observationCount },
  });
}

/** `tenant/conversation/agent`: the scope as its user names it (the memory id is a storage key). */
function shownScope(scope: Scope): string {
  return `${scope.tenantId}/${scope.conversationId}/${scope.agentId}`;
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
 * are renumbered too, and a supersession the reflector would refuse (`refuseToolSupersessions`)
 * becomes a contradiction: a structured reflection whose references change is written again
 * from its parts.
 */
function restoredReflection(
  raw: string,
  target: {
    read: ReadExport;
    renumber: ReadonlyMap<number, number>;
    afterSeq: number;
    origins: readonly ObservationOrigin[];
  },
  dependencies: ExportImportDependencies,
): StoredReflection {
  const { read, renumber, afterSeq } = target;
  const parsed = parseReflection(raw);
  // Refused as the reflector refuses them, so the reflection says what the set holds.
  const { structured } = refuseToolSupersessions(
    {
      ...parsed,
      supersessions: renumberSupersessions(parsed.supersessions, renumber),
      contradictions: renumberContradictions(parsed.contradictions, renumber),
    },
    target.origins,
    dependencies.toolImportanceCap,
  );
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
