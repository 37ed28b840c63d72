/**
 * Builds the harness for a command. Commands that never call a model still work when no
 * model is configured: they get placeholder models that fail clearly if ever called.
 * @module
 */
import type { HarnessConfig } from '../config/schema.js';
import { ConfigError, HarnessMemoryError, StoreError } from '../core/errors.js';
import { maskPasswords } from '../core/mask-passwords.js';
import type { LanguageModel } from '../llm/language-model.js';
import { createAgentModel } from '../llm/memory-model-selection.js';
import { unconfiguredModel } from '../llm/unconfigured-model.js';
import { createHarness } from '../server/create-harness.js';
import { createJsonLogger } from '../server/fault-log.js';
import type { Harness } from '../server/create-harness.js';
import type { CliContext } from './context.js';

/** Options of {@link openHarness}. */
export interface OpenHarnessOptions {
  /** Run the background memory worker (`serve`, `run`). @default false */
  readonly startWorker?: boolean;
  /** Fall back to placeholder models when model configuration is missing. @default false */
  readonly modelsOptional?: boolean;
  /**
   * Fall back to a placeholder memory model only: the agent model stays required (`run`,
   * which cannot answer without it). Implied by `modelsOptional`. @default false
   */
  readonly memoryModelOptional?: boolean;
  /** Told which model fell back to a placeholder, and why. */
  readonly onModelMissing?: (role: ModelRole, error: ConfigError) => void;
}

/** The agent model, or the memory model (observer and reflector). */
export type ModelRole = 'agent' | 'memory';

/**
 * Builds the harness from the context's configuration and environment. With `modelsOptional`,
 * each model that cannot be configured is replaced on its own: a mistake in the memory model's
 * settings leaves the agent model as it is, and the reverse. With `memoryModelOptional`, only
 * the memory model is.
 */
export async function openHarness(context: CliContext, options: OpenHarnessOptions = {}): Promise<Harness> {
  const config = context.config();
  // Faults go to the command's stderr, as JSON lines.
  const base = {
    config,
    env: context.env,
    startWorker: options.startWorker ?? false,
    logger: createJsonLogger(context.stderr),
  };
  try {
    if (!options.modelsOptional && !options.memoryModelOptional) return await createHarness(base);
    let agentModel: LanguageModel;
    try {
      agentModel = createAgentModel(config, context.env);
    } catch (error) {
      if (!options.modelsOptional || !isModelConfigError(error)) throw error;
      options.onModelMissing?.('agent', error);
      agentModel = unconfiguredModel('agent', error);
    }
    try {
      return await createHarness({ ...base, agentModel });
    } catch (error) {
      if (!isModelConfigError(error)) throw error;
      options.onModelMissing?.('memory', error);
      return await createHarness({ ...base, agentModel, memoryModel: unconfiguredModel('memory', error) });
    }
  } catch (error) {
    throw withSqlitePathRemedy(error, config);
  }
}

/** Why memory is off (`off (memory.enabled = false from …)`), or `undefined` when it is on. */
export function memoryOffReason(config: HarnessConfig): string | undefined {
  const { memory, sources } = config;
  if (!memory.enabled) return `off (memory.enabled = false from ${sources['memory.enabled'] ?? 'default'})`;
  if (memory.mode === 'off') return `off (memory.mode = "off" from ${sources['memory.mode'] ?? 'default'})`;
  return undefined;
}

/**
 * Warns on stderr that the memory model is not configured (`serve` and `run` go on without
 * it), and returns the reason shown; with memory off, whose model is never asked, says nothing
 * and returns `undefined`.
 */
export function warnMemoryModelMissing(context: CliContext, error: ConfigError): string | undefined {
  if (memoryOffReason(context.config()) !== undefined) return undefined;
  const reason = maskPasswords(error.detail);
  context.stderr.write(
    `harness: warning: the memory model is not configured, so memory cannot observe or reflect until it is: ${reason}\n`,
  );
  return reason;
}

/**
 * A SQLite file that cannot be created or opened where `memory.sqlite_path` points: the error,
 * with the setting to change and where it came from.
 */
function withSqlitePathRemedy(error: unknown, config: HarnessConfig): unknown {
  if (!HarnessMemoryError.isInstance(error) || error.code !== 'STORE_FAILED') return error;
  const { data } = error;
  const unopenable = data['folder'] !== undefined || String(data['sqliteCode'] ?? '').startsWith('SQLITE_CANTOPEN');
  if (data['store'] !== 'sqlite' || data['path'] !== config.memory.sqlitePath || !unopenable) return error;
  const source = config.sources['memory.sqlite_path'] ?? 'default';
  return new StoreError({
    store: 'sqlite',
    message:
      `${error.detail} Set memory.sqlite_path (HARNESS_MEMORY_SQLITE_PATH; now ${source}) to a path in a folder ` +
      'this process can write.',
    data,
    cause: error,
  });
}

/** A configuration error from choosing a model (not from storage or the server settings). */
export function isModelConfigError(error: unknown): error is ConfigError {
  return error instanceof ConfigError && /^(model\.|memory\.llm_|providers\.)/.test(error.key);
}
