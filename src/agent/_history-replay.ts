/**
 * The stored history a turn replays: newest first within the budget, a message too large for
 * what is left clipped to its head (or left out with its tool-call pair) instead of ending it.
 * Private to `src/agent/`.
 */
import { countCodePoints, estimateMessageTokens } from '../core/token-estimator.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import type { ConversationMessage } from '../storage/run-store.js';

/** A stored message over what is left of the history budget is clipped to at most this part of the budget. */
const CLIP_SHARE = 4;
/** A clip smaller than this (its note included) says nothing: with less left, the budget is used. */
const MIN_CLIP_TOKENS = 32;

/** The stored history picked for a turn. */
export interface Replay {
  /** Oldest first, as sent: a clipped message with its clipped content. */
  readonly messages: ConversationMessage[];
  /** The stored message of each clipped one, by id. */
  readonly clipped: ReadonlyMap<string, ConversationMessage>;
  /** Whether the budget is used and the user turn is in: a wider read would add nothing. */
  readonly settled: boolean;
  /** Stored tokens of the messages the walk went through, whole. */
  readonly walked: number;
  /** The same, each counted as at most the clip share, as a store given `clipAt` counts them. */
  readonly walkedClipped: number;
}

/**
 * The stored history of a turn, walking back from the newest message: a message that fits
 * what is left of `maxTokens` goes whole; one too large goes clipped, its head within a
 * quarter of the budget (or what is left) and a note; one that cannot be clipped (tool-call
 * arguments over what is left) is left out, and `pairToolCalls` then drops its pair. The walk
 * goes on until less than a useful clip is left, so one large message never ends the replay.
 * When the transcript holds no user message, the newest stored one is kept, clipped to the
 * share if needed, even past the budget.
 */
export function replayWithin(
  messages: readonly ConversationMessage[],
  maxTokens: number,
  needsUserTurn: boolean,
  estimator: TokenEstimator,
  tokensOf: (message: ConversationMessage) => number,
): Replay {
  const share = shareOf(maxTokens);
  // Newest first until the end.
  const picked: ConversationMessage[] = [];
  const clipped = new Map<string, ConversationMessage>();
  const take = (message: ConversationMessage, sent: ConversationMessage): void => {
    picked.push(sent);
    if (sent !== message) clipped.set(message.messageId, message);
  };
  let remaining = maxTokens;
  let walked = 0;
  let walkedClipped = 0;
  let userTurn = !needsUserTurn;
  let index = messages.length - 1;
  for (; index >= 0; index--) {
    const message = messages[index] as ConversationMessage;
    const tokens = tokensOf(message);
    let sent: ConversationMessage | undefined = message;
    if (tokens > remaining) {
      if (remaining < MIN_CLIP_TOKENS) break;
      walked += tokens;
      walkedClipped += Math.min(tokens, share);
      sent = clipTo(message, Math.min(share, remaining), estimator);
      if (!sent) continue;
    }
    take(message, sent);
    if (sent === message) {
      walked += tokens;
      walkedClipped += Math.min(tokens, share);
    }
    remaining -= sent === message ? tokens : sent.tokenCount;
    if (message.role === 'user') userTurn = true;
  }
  const used = index >= 0 || remaining < MIN_CLIP_TOKENS;
  for (; !userTurn && index >= 0; index--) {
    const message = messages[index] as ConversationMessage;
    if (message.role !== 'user') continue;
    const sent = tokensOf(message) <= share ? message : clipTo(message, share, estimator);
    if (sent) take(message, sent);
    userTurn = true;
  }
  return { messages: picked.reverse(), clipped, settled: used && userTurn, walked, walkedClipped };
}

/** The most of the budget one clipped message takes. */
export function shareOf(maxTokens: number): number {
  return Math.max(MIN_CLIP_TOKENS, Math.floor(maxTokens / CLIP_SHARE));
}

/**
 * The message with its content cut to fit `maxTokens` with a note of what was left out, or
 * undefined when no part of its content fits (its tool calls alone are too large). The cut
 * never splits a surrogate pair; the content is the stored (redacted) one, so its head is too.
 */
function clipTo(
  message: ConversationMessage,
  maxTokens: number,
  estimator: TokenEstimator,
): ConversationMessage | undefined {
  const { content } = message;
  const calls =
    message.toolCalls && message.toolCalls.length > 0
      ? estimateMessageTokens(estimator, { content: '', toolCalls: message.toolCalls })
      : 0;
  const label = message.role === 'tool' ? 'tool output clipped' : 'message clipped';
  const note = (left: number): string => `\n[… ${label}: ${left} characters not replayed]`;
  // Code units stand in for characters while searching: never fewer, so the final note is no longer.
  const fits = (cut: number): boolean =>
    calls + estimator.estimate(content.slice(0, cut) + note(content.length - cut)) <= maxTokens;
  // No estimator counts a token per more than 16 characters: the search stays within the head.
  let low = 0;
  let high = Math.min(content.length - 1, maxTokens * 16);
  if (high < 1 || !fits(1)) return undefined;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (fits(middle)) low = middle;
    else high = middle - 1;
  }
  const code = content.charCodeAt(low - 1);
  const cut = code >= 0xd800 && code <= 0xdbff ? low - 1 : low;
  if (cut === 0) return undefined;
  const text = content.slice(0, cut) + note(countCodePoints(content.slice(cut)));
  return { ...message, content: text, tokenCount: calls + estimator.estimate(text) };
}
