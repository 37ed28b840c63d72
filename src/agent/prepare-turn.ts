/**
 * Turn preparation: what goes to the model before each LLM call, built in one place for the
 * agent runner and for anyone driving a model with these memories.
 * @module
 */
import { ConfigError, HarnessMemoryError } from '../core/errors.js';
import { requireObject, requireOptions } from '../core/require-option.js';
import { memoryIdOf, resolveScope } from '../core/scope.js';
import type { Scope, ScopeInput } from '../core/scope.js';
import { RUNE_TOKEN_ESTIMATOR } from '../core/token-estimator.js';
import type { TokenEstimator } from '../core/token-estimator.js';
import { pairToolCalls } from '../core/tool-call-pairs.js';
import { replayWithin, shareOf } from './_history-replay.js';
import type { Replay } from './_history-replay.js';
import type { LanguageModelMessage } from '../llm/language-model.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import type { WorkingMemory } from '../memory/working-memory.js';
import type { ConversationMessage, RunStore } from '../storage/run-store.js';

/**
 * How much wider the second history read is, when the first did not settle the replay: a store
 * that counts every message whole (one of a user's own) stopped at a large message, the newest
 * user message lies past the budget, or tool calls too large to clip were left out.
 */
const WIDER_READ = 16;
/** Conversations whose read width a preparer remembers. */
const REMEMBERED_WIDTHS = 1024;

/** Options of {@link createTurnPreparer}. */
export interface TurnPreparerOptions {
  readonly observationalMemory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
  /** Source of the conversation's stored history; without it a turn has no earlier history. */
  readonly runStore?: RunStore;
  /**
   * Tokens of stored history put into a turn. A message too large for what is left goes clipped
   * (its head, within a quarter of the budget, and a note of what was left out). @default 8000
   */
  readonly historyMaxTokens?: number;
  /** Counts history tokens when a message has no stored count. @default RuneTokenEstimator */
  readonly estimator?: TokenEstimator;
}

/** Options of {@link TurnPreparer.prepareTurn}. */
export interface PrepareTurnOptions {
  /** The run's system prompt, placed first, before the memory snippets. */
  readonly systemPrompt?: string;
  /** Messages put after the stored history (for example the current run's own messages, or an eval question). */
  readonly transcript?: readonly ConversationMessage[];
  /**
   * The conversation generation (`RunStore.conversationGeneration`) read when the caller's
   * work began. When the conversation was forgotten since, the turn is refused with
   * `SCOPE_FORGOTTEN` rather than sending the caller's forgotten messages again.
   */
  readonly generation?: number;
}

/** A snippet that could not be built. */
export interface SnippetFailure {
  readonly source: 'working_memory' | 'observational_memory';
  readonly error: Error;
}

/** What {@link TurnPreparer.prepareTurn} built. */
export interface PreparedTurn {
  /**
   * Exactly what goes to the model, in order: system prompt, working-memory snippet, observational-memory
   * snippet (each a system message when non-empty), history, transcript.
   */
  readonly messages: readonly LanguageModelMessage[];
  readonly snippets: { readonly workingMemory: string; readonly observationalMemory: string };
  /**
   * The stored history put into the turn (the newest within `historyMaxTokens`, the transcript's own messages
   * left out), as sent, except that a message sent clipped is here whole.
   */
  readonly history: readonly ConversationMessage[];
  /** A snippet that could not be built: the turn goes on without it. */
  readonly failures: readonly SnippetFailure[];
}

/** Builds the model input of a turn. */
export interface TurnPreparer {
  prepareTurn(scope: ScopeInput, options?: PrepareTurnOptions): Promise<PreparedTurn>;
}

/**
 * Creates the turn preparer. Each turn reads both snippets and the stored history afresh.
 * The history is the newest stored messages within `historyMaxTokens` (older ones are left to
 * observational memory), without the transcript's own messages, which always go in whole, so
 * the current prompt is never cut by the budget. A stored message too large for what is left
 * (a file read, a long prompt) goes clipped, or is left out when even its tool calls are too
 * large, and older messages still come; the newest user message is always kept. History and transcript together are then
 * made valid for strict chat servers: a tool call without its result, or a result without
 * its call (a cancelled step, a crash, the budget's edge), is left out (`pairToolCalls`).
 * @example
 * const preparer = createTurnPreparer({ observationalMemory, workingMemory, runStore });
 * const turn = await preparer.prepareTurn({ conversationId: 'c1' }, { systemPrompt: 'You are a coder.', transcript });
 * const answer = await model.doGenerate({ messages: turn.messages });
 */
export function createTurnPreparer(options: TurnPreparerOptions): TurnPreparer {
  const factory = 'createTurnPreparer';
  requireOptions(factory, options, 'Pass { observationalMemory, workingMemory, runStore? }.');
  const observationalMemory = requireObject(
    factory,
    'observationalMemory',
    options.observationalMemory,
    ['snippet'],
    'Pass the service from createObservationalMemory({ store }).',
  );
  const workingMemory = requireObject(
    factory,
    'workingMemory',
    options.workingMemory,
    ['snippet'],
    'Pass the service from createWorkingMemory({ store }).',
  );
  const runStore = requireObject(
    factory,
    'runStore',
    options.runStore,
    ['recentMessages'],
    'Pass a RunStore, such as createSqliteRunStore({ path }), or leave it out for no stored history.',
    true,
  );
  const estimator = requireObject(
    factory,
    'estimator',
    options.estimator ?? RUNE_TOKEN_ESTIMATOR,
    ['estimate'],
    'Pass a TokenEstimator, or leave it out for the default.',
  );
  const historyMaxTokens = options.historyMaxTokens ?? 8000;
  if (!Number.isSafeInteger(historyMaxTokens) || historyMaxTokens < 0) {
    throw new ConfigError({
      key: 'historyMaxTokens',
      source: 'createTurnPreparer',
      message: `must be a non-negative integer, got ${JSON.stringify(historyMaxTokens)}`,
    });
  }
  const tokensOf = (message: ConversationMessage): number =>
    Number.isFinite(message.tokenCount) ? message.tokenCount : estimator.estimate(message.content);

  const snippetsOf = async (
    scope: Scope,
  ): Promise<{ workingMemory: string; observationalMemory: string; failures: SnippetFailure[] }> => {
    const [working, observational] = await Promise.allSettled([
      workingMemory.snippet(scope),
      observationalMemory.mode === 'off' ? Promise.resolve('') : observationalMemory.snippet(scope),
    ]);
    const failures: SnippetFailure[] = [];
    const valueOf = (result: PromiseSettledResult<string>, source: SnippetFailure['source']): string => {
      if (result.status === 'fulfilled') return result.value;
      failures.push({
        source,
        error: result.reason instanceof Error ? result.reason : new Error(String(result.reason)),
      });
      return '';
    };
    return {
      workingMemory: valueOf(working, 'working_memory'),
      observationalMemory: valueOf(observational, 'observational_memory'),
      failures,
    };
  };

  // Whether a conversation's last turn needed the wider read, so the next one reads once: a
  // hint (a wrong one costs a read, never history). A conversation not known reads narrow from
  // a store that counts large messages as their clip, wide from one that counts them whole.
  const widths = new Map<string, 'narrow' | 'wide'>();
  /** The stored history within its budget, and the generation read with it when the store reads both at once. */
  const historyOf = async (
    memoryId: string,
    transcript: readonly ConversationMessage[],
    own: ReadonlySet<string>,
  ): Promise<{ replay: Replay; generation?: number }> => {
    if (!runStore || historyMaxTokens === 0)
      return { replay: { messages: [], clipped: new Map(), settled: true, walked: 0, walkedClipped: 0 } };
    const store = runStore;
    // A message over the share is replayed clipped to it, so the store counts it as the share.
    const share = shareOf(historyMaxTokens);
    const clips = store.supportsClipAt === true;
    const options = clips ? { clipAt: share } : undefined;
    const read = (budget: number) =>
      store.recentHistory
        ? store.recentHistory(memoryId, budget, options)
        : store.recentMessages(memoryId, budget, options).then((messages) => ({ messages }));
    const needsUserTurn = !transcript.some((message) => message.role === 'user');
    const replayOf = (messages: readonly ConversationMessage[]): Replay =>
      replayWithin(
        own.size === 0 ? messages : messages.filter((message) => !own.has(message.messageId)),
        historyMaxTokens,
        needsUserTurn,
        estimator,
        tokensOf,
      );
    // The transcript's messages may be stored already: read enough to leave them out.
    const budget = historyMaxTokens + transcript.reduce((sum, message) => sum + tokensOf(message), 0);
    // With room for a message clipped at the budget's edge.
    const width = widths.get(memoryId) ?? (clips ? 'narrow' : 'wide');
    if (width === 'narrow') {
      const narrow = await read(budget + share);
      const replay = replayOf(narrow.messages);
      // Room for one more message of any size left over: a store counting it as its clip had no
      // older one (one counting messages whole may have stopped at a large one).
      const ranOut =
        clips && narrow.messages.reduce((sum, message) => sum + Math.min(tokensOf(message), share), share) <= budget;
      if (replay.settled || ranOut) return { ...narrow, replay };
    }
    // A wider read sees past what stopped the first (see WIDER_READ).
    const wide = await read(Math.min(Number.MAX_SAFE_INTEGER, budget * WIDER_READ));
    const replay = replayOf(wide.messages);
    widths.delete(memoryId);
    const walked = clips ? replay.walkedClipped : replay.walked;
    widths.set(memoryId, replay.settled && walked <= historyMaxTokens + share ? 'narrow' : 'wide');
    if (widths.size > REMEMBERED_WIDTHS) widths.delete(widths.keys().next().value as string);
    return { ...wide, replay };
  };

  return {
    async prepareTurn(scopeInput, turnOptions = {}) {
      const scope = resolveScope(scopeInput);
      const memoryId = memoryIdOf(scope);
      const transcript = turnOptions.transcript ?? [];
      // The transcript's ids: left out of the stored history read, and told apart from it after pairing.
      const own = new Set(transcript.map((message) => message.messageId));
      const [snippets, history] = await Promise.all([snippetsOf(scope), historyOf(memoryId, transcript, own)]);
      // Read with the history, or after it: a forget before that read shows here, one after
      // it came after this turn.
      if (
        turnOptions.generation !== undefined &&
        runStore &&
        (history.generation ?? (await runStore.conversationGeneration(memoryId))) !== turnOptions.generation
      ) {
        throw new HarnessMemoryError({
          code: 'SCOPE_FORGOTTEN',
          component: 'turn',
          message:
            `conversation ${scope.conversationId} was forgotten while this work was under way; its ` +
            `messages are not sent again. Start a new run.`,
          data: { memoryId },
        });
      }
      const conversation = pairToolCalls(history.replay.messages.concat(transcript));
      // The system prompt leads: memory is remembered data, so it never comes before the
      // instructions it could otherwise pose as (reference 10.11 a, 10.15).
      const head: LanguageModelMessage[] = [];
      if (turnOptions.systemPrompt !== undefined && turnOptions.systemPrompt !== '')
        head.push({ role: 'system', content: turnOptions.systemPrompt });
      if (snippets.workingMemory !== '') head.push({ role: 'system', content: snippets.workingMemory });
      if (snippets.observationalMemory !== '') head.push({ role: 'system', content: snippets.observationalMemory });
      // Mapped and joined at their sizes rather than grown by pushes: a turn maps its whole history.
      const messages = head.concat(conversation.map(toModelMessage));
      return {
        messages,
        snippets: { workingMemory: snippets.workingMemory, observationalMemory: snippets.observationalMemory },
        history: storedPart(conversation, own, history.replay.clipped),
        failures: snippets.failures,
      };
    },
  };
}

/**
 * The conversation's stored history: pairing keeps order and the history holds none of the
 * transcript's ids, so the transcript's messages are its tail. A clipped message is given
 * back whole: memory observes what was said, not the turn's cut of it.
 */
function storedPart(
  conversation: ConversationMessage[],
  own: ReadonlySet<string>,
  clipped: ReadonlyMap<string, ConversationMessage>,
): ConversationMessage[] {
  let length = conversation.length;
  while (length > 0 && own.has((conversation[length - 1] as ConversationMessage).messageId)) length--;
  const stored = length === conversation.length ? conversation : conversation.slice(0, length);
  if (clipped.size === 0) return stored;
  return stored.map((message) => {
    const whole = clipped.get(message.messageId);
    return whole ? { ...message, content: whole.content, tokenCount: whole.tokenCount } : message;
  });
}

function toModelMessage(message: ConversationMessage): LanguageModelMessage {
  // One object per message, built directly: a turn maps its whole history, every turn.
  const { role, content, toolCallId, toolCalls } = message;
  const calls = toolCalls && toolCalls.length > 0 ? toolCalls : undefined;
  if (toolCallId) return calls ? { role, content, toolCallId, toolCalls: calls } : { role, content, toolCallId };
  return calls ? { role, content, toolCalls: calls } : { role, content };
}
