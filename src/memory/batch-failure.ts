import { HarnessMemoryError, ModelCallError } from '../core/errors.js';

/**
 * Why an observer call failed in a way that depends on what the batch holds, so that a
 * smaller batch may get past it:
 * - `truncated`: the answer was cut off by the model's token limit;
 * - `over_context`: the prompt is too large for the model (a 400 or 413 that says so);
 * - `refused`: the model or the provider's content filter refused the prompt (a refusal, a
 *   `content_filter` finish, or a 400 naming a content policy).
 *
 * `undefined` for every other failure (a timeout, a 5xx, a bad key), which a smaller batch
 * would meet the same.
 */
export type BatchFailure = 'truncated' | 'over_context' | 'refused';

/** Classifies an observer failure; see {@link BatchFailure}. */
export function batchFailureOf(error: unknown): BatchFailure | undefined {
  if (HarnessMemoryError.isInstance(error) && error.code === 'MODEL_OUTPUT_INVALID') {
    const reason = error.data['reason'];
    if (reason === 'truncated') return 'truncated';
    if (reason === 'refused') return 'refused';
    return undefined;
  }
  if (!ModelCallError.isInstance(error)) return undefined;
  const text = `${error.message} ${error.responseBody ?? ''}`;
  if (error.statusCode === 400 && CONTENT_POLICY.test(text)) return 'refused';
  if ((error.statusCode === 400 || error.statusCode === 413) && OVER_CONTEXT.test(text)) return 'over_context';
  return undefined;
}

// What providers say when their filter rejects a prompt: OpenAI's `invalid_prompt` ("flagged
// as potentially violating our usage policy"), Azure's `content_filter` ("content management
// policy"), others' "content policy" / "safety" wording.
const CONTENT_POLICY =
  /content[_ ]?(?:filter|policy|management)|usage polic|invalid_prompt|flagged as|responsible ai|safety (?:system|filter|polic)/i;

// As a local model with a small context answers a full batch: `context_length_exceeded`,
// "maximum context length", "too many tokens".
const OVER_CONTEXT =
  /context[_ ]length|context window|maximum context|too many tokens|too long|too large|prompt is too|exceeds? the/i;
