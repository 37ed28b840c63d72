/**
 * The last observational-memory snippet built for each scope, kept with what it was built
 * from, so a state that changed nothing the snippet shows (most turns only append messages)
 * reuses it instead of selecting and rendering again.
 * @module
 */
import type { Observation, StoredReflection } from '../core/observation.js';
import type { ReflectionLinks } from '../core/reflection-links.js';

/** Everything `buildObservationSnippet` reads besides the service's estimator. */
export interface SnippetInputs {
  /**
   * The scope's observations as the observation cache holds them: one array per life of the
   * scope that only grows at its end, replaced when an observation is corrected or removed.
   * The same array at the same length therefore holds the same observations.
   */
  readonly observations: readonly Observation[];
  /** The supersession set; the links cache hands out one object per state of the set. */
  readonly links: ReflectionLinks;
  readonly reflection: StoredReflection | null;
  readonly maxTokens: number;
}

interface Held {
  // Held weakly: the observation cache bounds how many observations the process keeps, and
  // an array it dropped must not stay alive here (a dropped array is never handed out again).
  readonly observations: WeakRef<readonly Observation[]>;
  readonly count: number;
  readonly links: ReflectionLinks;
  readonly reflection: StoredReflection | null;
  readonly maxTokens: number;
  /** The held reflection's parsed form as JSON, to compare a newly read one with. */
  readonly structured: string | undefined;
  readonly text: string;
}

/** Bounded: the least recently held scope goes first. */
export class SnippetMemo {
  readonly #entries = new Map<string, Held>();
  readonly #limit: number;

  constructor(limit = 1024) {
    this.#limit = limit;
  }

  /** The text held for the scope when it was built from these very inputs. */
  find(memoryId: string, inputs: SnippetInputs): string | undefined {
    const held = this.#entries.get(memoryId);
    if (
      !held ||
      held.observations.deref() !== inputs.observations ||
      held.count !== inputs.observations.length ||
      held.links !== inputs.links ||
      held.maxTokens !== inputs.maxTokens ||
      !sameReflection(held, inputs.reflection)
    )
      return undefined;
    return held.text;
  }

  /** Holds `text`, built from `inputs`, as the scope's latest snippet. */
  hold(memoryId: string, inputs: SnippetInputs, text: string): void {
    this.#entries.delete(memoryId);
    const structured = inputs.reflection ? JSON.stringify(inputs.reflection.structured) : undefined;
    this.#entries.set(memoryId, {
      observations: new WeakRef(inputs.observations),
      count: inputs.observations.length,
      links: inputs.links,
      reflection: inputs.reflection,
      maxTokens: inputs.maxTokens,
      structured,
      text,
    });
    if (this.#entries.size > this.#limit) this.#entries.delete(this.#entries.keys().next().value as string);
  }

  delete(memoryId: string): void {
    this.#entries.delete(memoryId);
  }
}

// Each read of the record parses its reflection again, so the held one is compared by value.
function sameReflection(held: Held, reflection: StoredReflection | null): boolean {
  const before = held.reflection;
  if (before === reflection) return true;
  if (before === null || reflection === null) return false;
  return (
    before.raw === reflection.raw &&
    before.throughSeq === reflection.throughSeq &&
    before.createdAt === reflection.createdAt &&
    before.tokenCount === reflection.tokenCount &&
    held.structured === JSON.stringify(reflection.structured)
  );
}
