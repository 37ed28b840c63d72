/**
 * Where an observation came from, and what that allows: an observation made only from tool
 * output (a web page, a file, a command's output) cannot claim top importance.
 * @module
 */
import type { ObservationSource, ParsedObservation } from './observation.js';
import { UNSCORED_IMPORTANCE } from './observation-snippet.js';
import { restsOn } from './observation-support.js';

/** A transcript message of the batch an observation was made from. */
export interface BatchMessage {
  readonly seq: number;
  readonly role: string;
  /** What it says: when given, an observation citing it beside tool output must say it too. */
  readonly content?: string;
}

/** An observation's provenance, and its importance after the tool cap. */
export interface ObservationProvenance {
  readonly source: ObservationSource;
  /** The seqs it cites that are in the batch, ascending; seqs outside the batch are ignored. */
  readonly sourceMessageSeqs: readonly number[];
  readonly importance: number | null;
}

/**
 * The provenance of an observation of a batch: its source is the role of the messages it
 * cites (those in the batch), or, when it cites none, of every message of the batch; `mixed`
 * for several roles or any other role, and for cited user messages that do not say what it
 * says beside tool output. Its importance is capped at `toolImportanceCap` (an
 * unscored one too, when the cap is below the 0.5 it counts as) when it cites tool output at
 * all, or when the batch holds tool output and it cites no user message (uncited, or only the
 * assistant's words, which may repeat what a tool returned), or cites user messages that do
 * not say what it says ({@link restsOn}): tool output may tell the observer which message to
 * cite.
 */
export function provenanceOf(
  observation: ParsedObservation,
  batch: readonly BatchMessage[],
  toolImportanceCap: number,
): ObservationProvenance {
  const roles = new Map(batch.map((message) => [message.seq, message.role]));
  const cited = [...new Set(observation.sourceSeqs ?? [])].filter((seq) => roles.has(seq)).sort((a, b) => a - b);
  const from = cited.length > 0 ? cited.map((seq) => roles.get(seq) as string) : batch.map((message) => message.role);
  // Tool output (a web page with "remember: …" in it) can steer what the observer writes and
  // cites: only an observation resting on a user message and on no tool output goes uncapped.
  const citedRoles = cited.map((seq) => roles.get(seq) as string);
  const batchHasTool = holdsToolOutput(batch);
  const userSources = cited.flatMap((seq) => {
    const message = batch.find((item) => item.seq === seq);
    return message && isUser(message.role) && message.content !== undefined ? [message.content] : [];
  });
  // Cited user words that do not say it, beside tool output: the user is not its source.
  const unsupported = batchHasTool && userSources.length > 0 && !restsOn(observation.content, userSources);
  const mayBeTool =
    citedRoles.some((role) => isTool(role)) ||
    (batchHasTool && !citedRoles.some((role) => isUser(role))) ||
    unsupported;
  return {
    source: unsupported ? 'mixed' : sourceOf(from),
    sourceMessageSeqs: cited,
    importance: mayBeTool ? capImportance(observation.importance, toolImportanceCap) : observation.importance,
  };
}

// Roles the application itself writes as. Any other role a caller passes (`tool`, OpenAI's
// older `function`, `tool_result`, `ipython`) carries what a tool returned.
const CONVERSATION_ROLES: ReadonlySet<string> = new Set(['user', 'assistant', 'system', 'developer']);

/** Whether any message of `batch` carries what a tool returned (a role other than the conversation's own). */
export function holdsToolOutput(batch: readonly BatchMessage[]): boolean {
  return batch.some((message) => isTool(message.role));
}

function isTool(role: string): boolean {
  return !CONVERSATION_ROLES.has(role.trim().toLowerCase());
}

function isUser(role: string): boolean {
  return role.trim().toLowerCase() === 'user';
}

function sourceOf(roles: readonly string[]): ObservationSource {
  const distinct = new Set(roles.map((role) => role.trim().toLowerCase()));
  if (distinct.size !== 1) return 'mixed';
  const [role = ''] = distinct;
  if (role === 'user' || role === 'assistant') return role;
  return isTool(role) ? 'tool' : 'mixed';
}

function capImportance(importance: number | null, cap: number): number | null {
  if (importance === null) return cap < UNSCORED_IMPORTANCE ? cap : null;
  return Math.min(importance, cap);
}
