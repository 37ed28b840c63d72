/**
 * The agent harness pieces: `createTurnPreparer` (what goes to the model before each turn:
 * both memory snippets, the system prompt, the conversation's history within a budget, the
 * current messages, tool calls paired for strict servers) and the agent runner built on it.
 * No database driver or HTTP framework is loaded from here.
 * @module
 */
export { createTurnPreparer } from './prepare-turn.js';
export type {
  PreparedTurn,
  PrepareTurnOptions,
  SnippetFailure,
  TurnPreparer,
  TurnPreparerOptions,
} from './prepare-turn.js';
export { createAgentRunner } from './agent-runner.js';
export type { AgentRunner, AgentRunnerOptions, RunRequest } from './agent-runner.js';
export type { RunMaintenance, RunMaintenanceOptions } from './run-maintenance.js';
export { TERMINAL_EVENT_TYPES } from '../storage/event-hub.js';
export type { EventHub } from '../storage/event-hub.js';
export { createLocalEventHub } from '../storage/local-event-hub.js';
export type { LocalEventHub } from '../storage/local-event-hub.js';
export { forgetConversation } from './forget-conversation.js';
export type { ForgetConversationTarget } from './forget-conversation.js';
export { pairToolCalls } from '../core/tool-call-pairs.js';
export type { ToolCallMessage } from '../core/tool-call-pairs.js';
export { isRunEvent } from './run-event-types.js';
export type { RunEventOf, RunEventPayloadBase, RunEventPayloads, RunEventType } from './run-event-types.js';
export { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
export type {
  ConversationMessage,
  RecentHistory,
  RecentMessagesOptions,
  RunEvent,
  RunRecord,
  RunStatus,
  RunStore,
  RunUsage,
  RunPatch,
  RunListQuery,
} from '../storage/run-store.js';
