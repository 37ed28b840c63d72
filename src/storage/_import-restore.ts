/**
 * The one rule every store follows to restore a reflection and supersession set with imported
 * observations (`importObservations` with `restore`). Private to `src/storage/`.
 * @module
 */
import { StoreError } from '../core/errors.js';
import { checkReflectionReferences } from '../core/reflection-links.js';
import { plannedLinks } from './apply-plan.js';
import type { PlannedLink } from './apply-plan.js';
import type { ImportedReflection } from './store.js';

/** The scope before the import, as a restore checks it. */
export interface RestoreTarget {
  readonly observationCount: number;
  readonly lastObservationSeq: number;
  readonly hasReflection: boolean;
  readonly linkCount: number;
}

/**
 * Throws `STORE_CONFLICT` unless the scope holds no observation, reflection or link and its
 * last observation seq is still the one the caller numbered the restore after.
 */
export function checkRestoreTarget(
  store: string,
  memoryId: string,
  target: RestoreTarget,
  restore: ImportedReflection,
): void {
  const empty = target.observationCount === 0 && !target.hasReflection && target.linkCount === 0;
  if (empty && target.lastObservationSeq === restore.afterSeq) return;
  throw new StoreError({
    store,
    code: 'STORE_CONFLICT',
    message: empty
      ? `Scope ${memoryId} was written since its last observation seq was read; nothing was imported. Try again.`
      : `Scope ${memoryId} already holds memory; a reflection is restored only into a scope with none. ` +
        `Nothing was imported.`,
    data: { memoryId },
  });
}

/** The supersessions and contradictions a store adds, and how many it dropped. */
export interface RestorePlan {
  /** Supersessions first, then contradictions, as a reflection's apply plan lists them. */
  readonly links: readonly PlannedLink[];
  readonly rejected: number;
}

/**
 * The restore's links checked as a reflection's are (`checkReflectionReferences`), against the
 * seqs the import assigned: from `restore.afterSeq + 1` through `lastObservationSeq`. The
 * supersessions resting on tool output were refused before (`importExport` runs
 * `refuseToolSupersessions`, as the reflector does before `completeReflection`).
 */
export function planRestoreLinks(restore: ImportedReflection, lastObservationSeq: number): RestorePlan {
  const imported = new Set<number>();
  for (let seq = restore.afterSeq + 1; seq <= lastObservationSeq; seq++) imported.add(seq);
  const checked = checkReflectionReferences(
    { summary: '', schemaVersion: 1, supersessions: restore.supersessions, contradictions: restore.contradictions },
    lastObservationSeq,
    imported,
  );
  return {
    links: plannedLinks(checked),
    rejected: checked.rejected,
  };
}
