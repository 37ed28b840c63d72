/**
 * Text a run store keeps, made storable by every adapter alike: U+0000 (a NUL from a binary
 * tool result or a pasted prompt) and a lone surrogate (half of an emoji, as a cut or a bad
 * decoder leaves) become U+FFFD. Postgres text and jsonb cannot hold U+0000 and jsonb refuses
 * a lone surrogate, SQLite keeps the one and writes the other as three U+FFFD, so the
 * conversation would read back differently by backend, or not be stored at all. The step and
 * token counts of a run and a patch are checked here too (see `_run-arguments.ts`), for the same
 * reason. Private to `src/storage/`.
 * @module
 */
import { wellFormed } from '../core/cut-text.js';
import { checkedStepCount, checkedUsage } from './_run-arguments.js';
import type { ConversationMessage, RunPatch, RunRecord } from './run-store.js';

/** `text` with each U+0000 and each lone surrogate replaced by U+FFFD. */
export function storableText(text: string): string {
  return wellFormed(text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text);
}

/** The run's prompts, model, output and error message, storable; its counts checked (`OPTION_INVALID`). */
export function storableRun<
  T extends Pick<RunRecord, 'prompt' | 'systemPrompt' | 'model' | 'output' | 'error' | 'steps' | 'maxSteps' | 'usage'>,
>(run: T): T {
  return {
    ...run,
    steps: checkedStepCount('createRun', 'steps', run.steps),
    maxSteps: checkedStepCount('createRun', 'maxSteps', run.maxSteps),
    usage: checkedUsage('createRun', run.usage),
    prompt: storableText(run.prompt),
    systemPrompt: storableText(run.systemPrompt),
    model: storableText(run.model),
    output: run.output === null ? null : storableText(run.output),
    error: run.error === null ? null : storableError(run.error),
  };
}

/**
 * The patch's output and error message, storable; its counts checked (`OPTION_INVALID`). A count
 * given as `undefined` is left out, as if not named.
 */
export function storablePatch(patch: RunPatch): RunPatch {
  const { steps, usage, ...rest } = patch;
  return {
    ...rest,
    ...(steps === undefined ? {} : { steps: checkedStepCount('updateRun', 'steps', steps) }),
    ...(usage === undefined ? {} : { usage: checkedUsage('updateRun', usage) }),
    ...(typeof patch.output === 'string' ? { output: storableText(patch.output) } : {}),
    ...(patch.error ? { error: storableError(patch.error) } : {}),
  };
}

/** The message's id, content, name and tool-call id, storable (tool calls are JSON, which escapes U+0000). */
export function storableMessage(message: ConversationMessage): ConversationMessage {
  return {
    ...message,
    messageId: storableText(message.messageId),
    content: storableText(message.content),
    ...(message.name === undefined ? {} : { name: storableText(message.name) }),
    ...(message.toolCallId === undefined ? {} : { toolCallId: storableText(message.toolCallId) }),
  };
}

function storableError(error: NonNullable<RunRecord['error']>): NonNullable<RunRecord['error']> {
  return { code: storableText(error.code), message: storableText(error.message) };
}
