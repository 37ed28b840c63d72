/** Counts tokens. Replace the default with a real tokenizer when precision matters. */
export interface TokenEstimator {
  /** Tokens in one text. Must be 0 for the empty string and never negative. */
  estimate(text: string): number;
}

/** What a message costs: its content plus the names and arguments of its tool calls. */
export interface EstimableMessage {
  readonly content?: string | null | undefined;
  readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly arguments: string }> | undefined;
}

/**
 * The spec's estimator: (runes + 3) / 4 in integer arithmetic, counting Unicode code points.
 * `"hello world!"` costs 3 and `""` costs 0. It undercounts code, JSON and CJK text.
 */
export class RuneTokenEstimator implements TokenEstimator {
  estimate(text: string): number {
    return Math.floor((countCodePoints(text) + 3) / 4);
  }
}

/** The shared default estimator instance. */
export const RUNE_TOKEN_ESTIMATOR: TokenEstimator = new RuneTokenEstimator();

/** Number of Unicode code points in a string (a surrogate pair counts once). */
export function countCodePoints(text: string): number {
  let count = text.length;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        index++;
      }
    }
  }
  return count;
}

/** Tokens of one message: content plus each tool call's name and arguments. */
export function estimateMessageTokens(estimator: TokenEstimator, message: EstimableMessage): number {
  let total = estimator.estimate(message.content ?? '');
  for (const call of message.toolCalls ?? []) {
    total += estimator.estimate(call.name) + estimator.estimate(call.arguments);
  }
  return total;
}

/**
 * A token count a provider (or a model of the caller's) reported, as a count: a whole number of
 * at least 0. Some servers report fractions, `-1` for "unknown", or nothing; stored as given,
 * such a count failed the run that answered (the run stores keep whole counts).
 */
export function wholeTokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0
    ? Math.min(Math.round(value), Number.MAX_SAFE_INTEGER)
    : 0;
}
