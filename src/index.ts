/**
 * harness-memory: observational and working memory for AI agents.
 *
 * The root entry is pure TypeScript with no database driver or HTTP client: storage
 * adapters and the model client live at their own subpaths.
 * @module
 */
export {
  HarnessMemoryError,
  ConfigError,
  StoreError,
  ToolError,
  ModelCallError,
  HARNESS_MEMORY_ERROR_CODES,
  RUN_ERROR_CODES,
} from './core/errors.js';
export type { HarnessMemoryErrorCode, HarnessMemoryErrorOptions, RunErrorCode } from './core/errors.js';
export {
  resolveScope,
  assertScope,
  validateScopeId,
  memoryIdOf,
  DEFAULT_SCOPE_ID,
  MAX_SCOPE_ID_LENGTH,
} from './core/scope.js';
export type { Scope, ScopeInput } from './core/scope.js';
export {
  RuneTokenEstimator,
  RUNE_TOKEN_ESTIMATOR,
  estimateMessageTokens,
  countCodePoints,
} from './core/token-estimator.js';
export type { TokenEstimator, EstimableMessage } from './core/token-estimator.js';
export { DEFAULT_OBSERVATION_CONFIG, DEFAULT_TOOL_IMPORTANCE_CAP, OBSERVATION_SOURCES } from './core/observation.js';
export type {
  Observation,
  ObservationConfig,
  ObservationSource,
  ParsedObservation,
  StoredReflection,
  MemoryRecord,
} from './core/observation.js';
export type { StructuredReflection, Supersession, Contradiction } from './core/reflection.js';
export { activeReflectionLinks, checkReflectionReferences, EMPTY_REFLECTION_LINKS } from './core/reflection-links.js';
export type {
  CheckedReferences,
  ReflectionLinks,
  StoredContradiction,
  StoredSupersession,
} from './core/reflection-links.js';
export { maxReflectorInputTokens } from './core/memory-prompts.js';
export { pairToolCalls } from './core/tool-call-pairs.js';
export type { ToolCallMessage } from './core/tool-call-pairs.js';
export { isNothingToObserve, parseObservations } from './core/parse-observations.js';
export { parseReflection } from './core/parse-reflection.js';
export {
  buildObservationSnippet,
  scoreObservation,
  SNIPPET_PREAMBLE,
  UNSCORED_IMPORTANCE,
  SUPERSEDED_IMPORTANCE,
} from './core/observation-snippet.js';
export type { ObservationSnippetInput, SnippetLinks } from './core/observation-snippet.js';
export {
  buildWorkingMemorySnippet,
  DEFAULT_WORKING_MEMORY_LIMITS,
  MAX_WORKING_MEMORY_TTL_SECONDS,
} from './core/working-memory.js';
export type { WorkingMemoryLimitsConfig } from './core/working-memory.js';
export { redactSecrets } from './core/redact-secrets.js';
export { redactJsonText, redactValue } from './core/redact-value.js';
export type { RedactValueOptions } from './core/redact-value.js';
export type { RedactionResult, SecretKind } from './core/redact-secrets.js';
export { observationToJson, reflectionLinksToJson, statusToJson } from './core/memory-status.js';
export type { MemoryStatus, MemoryMode } from './core/memory-status.js';
export type { ExportFormat } from './core/memory-export.js';
export type { PreparedMessage, TranscriptMessage } from './core/transcript.js';
export { createUlidGenerator } from './core/ids.js';
export type { IdGenerator } from './core/ids.js';
export { createObservationalMemory } from './memory/observational-memory.js';
export type {
  ObservationalMemory,
  ObservationalMemoryOptions,
  ObservationalMemoryEvent,
  ObserveRequest,
  ObserveResult,
  ExportResult,
  ExportImportResult,
  MemoryInspection,
  InspectOptions,
  ListedScope,
  MemoryProgress,
  ObservationView,
  Page,
  PageRequest,
  ScopeListRequest,
} from './memory/observational-memory.js';
export { MAX_IMPORT_OBSERVATIONS, MAX_IMPORTED_OBSERVATION_LENGTH } from './memory/import-observations.js';
export {
  MAX_IMPORTED_EXPORT_BYTES,
  MAX_IMPORTED_LINKS,
  MAX_IMPORTED_REFLECTION_BYTES,
} from './memory/export-reader.js';
export type { ObservationImport } from './memory/import-observations.js';
export { createWorkingMemory } from './memory/working-memory.js';
export type {
  WorkingMemory,
  WorkingMemoryOptions,
  WorkingMemoryGetResult,
  WorkingMemorySetOptions,
} from './memory/working-memory.js';
export { createModelObserver, createModelReflector } from './memory/model-observer.js';
export type { Observer, Reflector, ObserverInput, ReflectorInput, ModelOutputLimits } from './memory/model-observer.js';
export { createInMemoryStore } from './storage/in-memory-store.js';
export type { InMemoryStoreOptions } from './storage/in-memory-store.js';
// The port and every type it names, for stores of a library user's own.
export type {
  MemoryStore,
  Operation,
  OperationType,
  OperationStatus,
  StoredMessage,
  WorkingMemoryEntry,
  Marker,
  NewMessage,
  NewObservation,
  ImportedObservation,
  ImportedReflection,
  ObservationChange,
  ScopeSummary,
  ScopeListQuery,
  StoredWorkingMemoryEntry,
  WorkingMemoryLimits,
  AppendMessagesResult,
  AppendAndClaimResult,
  PrefetchedObserve,
  LeaseHandle,
} from './storage/store.js';
export type {
  LanguageModel,
  LanguageModelMessage,
  LanguageModelResult,
  LanguageModelCallOptions,
  LanguageModelTool,
  LanguageModelToolCall,
  FinishReason,
} from './llm/language-model.js';
