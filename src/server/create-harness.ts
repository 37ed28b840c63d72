/**
 * The composition root of the harness: configuration in; stores, models, memory, the
 * agent runner and the HTTP app out.
 * @module
 */
import { createAgentRunner } from '../agent/agent-runner.js';
import { requireObject, requireOptions, requireTimerMs } from '../core/require-option.js';
import type { AgentRunner } from '../agent/agent-runner.js';
import { createLocalEventHub } from '../storage/local-event-hub.js';
import type { EventHub } from '../storage/event-hub.js';
import { join } from 'node:path';
import { CONFIG_FILE_PATH, tokenConfigFrom } from '../config/load-config.js';
import type { HarnessConfig } from '../config/schema.js';
import { ConfigError } from '../core/errors.js';
import type { LanguageModel } from '../llm/language-model.js';
import { createAgentModel, selectMemoryModel } from '../llm/memory-model-selection.js';
import { unconfiguredModel } from '../llm/unconfigured-model.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import type { ObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import type { WorkingMemory } from '../memory/working-memory.js';
import { createInMemoryRunStore } from '../storage/in-memory-run-store.js';
import { createRedactingRunStore } from '../storage/redacting-run-store.js';
import type { RunStore } from '../storage/run-store.js';
import { createSqliteRunStore } from '../storage/sqlite/sqlite-run-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import type { MemoryStore } from '../storage/store.js';
import { createModelReviewer, createObservationalMemoryTool } from '../tools/observational-memory-tool.js';
import type { Tool } from '../tools/tool.js';
import { createWorkingMemoryTool } from '../tools/working-memory-tool.js';
import { createApp } from './app.js';
import { createFaultLog, createJsonLogger } from './fault-log.js';
import { watchDatabaseFile } from './database-file-watch.js';
import type { FaultLog, Logger } from './fault-log.js';
import type { FaultReporter } from '../core/fault.js';
import { createTenantLimits } from './tenant-limits.js';

const SECONDS_PER_DAY = 86_400;
import type { ServerEnv } from './server-env.js';
import type { Hono } from 'hono';

/** Options of {@link createHarness}. */
export interface HarnessOptions {
  /** The loaded configuration (`loadConfig()`). */
  config: HarnessConfig;
  /** Variables read for provider API keys. @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
  /** Overrides the agent model built from the configuration. */
  agentModel?: LanguageModel;
  /** Overrides the memory model chosen by the spec's mode rules. */
  memoryModel?: LanguageModel;
  /** Tools besides the two memory tools. */
  tools?: readonly Tool[];
  /** Run the background worker that recovers and retries memory operations. @default true */
  startWorker?: boolean;
  /** SSE heartbeat interval. @default 15000 */
  heartbeatMs?: number;
  /** Where faults (and other server log records) go, as JSON lines. @default stderr */
  logger?: Logger;
  /** How often the SQLite file is checked to still be the one opened (not deleted or replaced). @default 5000 */
  databaseCheckMs?: number;
  /**
   * How often runs are swept: runs of a process that stopped heartbeating are failed, ended
   * runs past `[server] run_retention_days` deleted, settled memory operations past
   * `[memory] operation_retention_days`, and the rows of expired working-memory entries.
   * @default 60000
   */
  runSweepMs?: number;
}

/** A running harness. */
export interface Harness {
  readonly config: HarnessConfig;
  readonly store: MemoryStore;
  readonly runStore: RunStore;
  readonly hub: EventHub;
  readonly observationalMemory: ObservationalMemory;
  readonly workingMemory: WorkingMemory;
  readonly runner: AgentRunner;
  readonly app: Hono<ServerEnv>;
  /** Faults the harness survived: logged and counted (`/healthz` shows the count). */
  readonly faults: FaultLog;
  /** How the memory model was chosen, for `harness config` and logs. */
  readonly memoryModel: { readonly mode: string; readonly modelId: string; readonly source: string };
  /**
   * Waits for runs (with `timeoutMs`, cancels those still going then), stops the worker and
   * the observations runs left to go on (waiting for them no longer than `timeoutMs` from the
   * start; then their model calls are aborted and their operations put back in the queue, which
   * is waited for 2 s at most), closes the stores.
   */
  dispose(options?: { readonly timeoutMs?: number }): Promise<void>;
}

/**
 * Builds the harness from configuration: SQLite by default (one file, WAL), the agent
 * model, the memory model chosen as the spec says, both memories, the tools, the runner
 * and the HTTP app.
 * @example
 * ```ts
 * import { loadConfig } from 'harness-memory/config';
 * import { createHarness } from 'harness-memory/server';
 *
 * const harness = await createHarness({ config: loadConfig() });
 * const run = await harness.runner.start({ prompt: 'Hello', conversationId: 'c1' });
 * ```
 */
export async function createHarness(options: HarnessOptions): Promise<Harness> {
  requireOptions('createHarness', options, 'Pass { config: loadConfig() }.');
  requireObject(
    'createHarness',
    'config',
    options.config,
    [],
    'Pass the loaded configuration: loadConfig() from harness-memory/config.',
  );
  const { config } = options;
  const env = options.env ?? process.env;
  const backend = await openBackend(config);
  const { store } = backend;
  // Secrets are redacted before anything reaches the run store, hence its events and SSE; with
  // redaction off, conversation messages (replayed to the model) still lose invisible characters.
  const runStore = createRedactingRunStore(backend.runStore, { redactSecrets: config.server.redactTranscripts });
  const faults = createFaultLog(options.logger ?? createJsonLogger());
  try {
    const agentModel = options.agentModel ?? createAgentModel(config, env);
    const selection = options.memoryModel
      ? {
          mode: 'custom',
          modelId: options.memoryModel.modelId,
          source: 'createHarness({ memoryModel })',
          model: options.memoryModel,
          followsRunModel: false,
        }
      : memoryModelSelection(config, env, agentModel);
    const { observationalMemory, workingMemory } = memoryServicesOf(config, store, selection, faults.report);
    observationalMemory.subscribe((event) => {
      if (event.type === 'memory.worker.failed')
        faults.report({
          component: 'memory-worker',
          message: `the background memory worker failed and retries at its next poll: ${event.error}`,
        });
    });
    const hub = backend.hub ?? createLocalEventHub();
    const runner = createAgentRunner({
      model: agentModel,
      observationalMemory,
      workingMemory,
      runStore,
      hub,
      memoryTools: [
        createWorkingMemoryTool(workingMemory),
        createObservationalMemoryTool({
          memory: observationalMemory,
          protectedPaths: protectedPathsOf(config),
          reviewer: createModelReviewer(agentModel),
        }),
      ],
      ...(options.tools ? { tools: options.tools } : {}),
      workspace: config.workspace,
      // Tenants see a store's or a bug's failure by its code; the detail is a fault.
      hideServerFailures: true,
      // The agent model (as resolved: [model] name, a provider's model, the built-in default)
      // is allowed by name too, when a list is given.
      allowedModels:
        config.server.allowedModels.length > 0 && agentModel.modelId !== ''
          ? [...config.server.allowedModels, agentModel.modelId]
          : config.server.allowedModels,
      forensics: {
        captureRequestEnvelope: config.forensics.captureRequestEnvelope,
        snapshotMemorySnippet: config.forensics.snapshotMemorySnippet,
      },
      onFault: faults.report,
    });
    // SQLite keeps writing to a deleted file, and its log grows while a reader holds it: say
    // so in the fault log and on /healthz.
    const databaseWatch =
      config.memory.dbDriver === 'sqlite' && config.memory.sqlitePath !== ':memory:'
        ? watchDatabaseFile(config.memory.sqlitePath, {
            intervalMs: requireTimerMs('createHarness', 'databaseCheckMs', options.databaseCheckMs, 1) ?? 5_000,
            onProblem: (problem) => faults.report({ component: 'store', message: problem }),
            walAlertBytes: config.memory.sqliteWalAlertMb * 1024 * 1024,
            onWarning: (warning) => faults.report({ component: 'store', message: warning }),
          })
        : undefined;
    const runSweepMs = requireTimerMs('createHarness', 'runSweepMs', options.runSweepMs, 1);
    const limits = createTenantLimits({
      maxConcurrentRuns: config.server.maxConcurrentRuns,
      maxSseConnections: config.server.maxSseConnections,
      maxWritesPerSecond: config.server.maxWritesPerSecond,
      maxReadsPerSecond: config.server.maxReadsPerSecond,
    });
    const app = createApp({
      runner,
      runStore,
      hub,
      observationalMemory,
      workingMemory,
      apiKeys: config.server.apiKeys,
      limits,
      faults,
      ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}),
      ...(databaseWatch ? { storageProblem: databaseWatch.problem, storageWarning: databaseWatch.warning } : {}),
    });
    // Stale work left by a crashed process is picked up within the lease plus this check.
    const maintenance =
      options.startWorker === false
        ? undefined
        : runner.startMaintenance({
            runRetentionSeconds: config.server.runRetentionDays * SECONDS_PER_DAY,
            operationRetentionSeconds: config.memory.operationRetentionDays * SECONDS_PER_DAY,
            ...(runSweepMs === undefined ? {} : { sweepMs: runSweepMs }),
          });
    const worker =
      options.startWorker === false
        ? undefined
        : observationalMemory.startWorker({
            pollMs: 500,
            staleCheckMs: Math.min(10_000, config.memory.staleOperationSeconds * 500),
          });
    let disposed = false;
    return {
      config,
      store,
      runStore,
      hub,
      observationalMemory,
      workingMemory,
      runner,
      app,
      faults,
      memoryModel: { mode: selection.mode, modelId: selection.modelId, source: selection.source },
      async dispose(disposeOptions = {}) {
        if (disposed) return;
        disposed = true;
        databaseWatch?.stop();
        const deadline =
          disposeOptions.timeoutMs === undefined ? undefined : performance.now() + disposeOptions.timeoutMs;
        await runner.settle(disposeOptions);
        await maintenance?.stop();
        // The worker and the observations runs left to go on finish what they hold, but not past
        // the deadline: a slow model call would hold the shutdown for as long as it may take.
        // Then their model calls are aborted and their operations put back in the queue (each a
        // store write, waited for 2 s at most), so the next process runs them at once instead of
        // finding them `processing` until their lease runs out. Without a deadline the worker is
        // waited for; the runs waited for their observations already (their settle timeout).
        const left = deadline === undefined ? undefined : Math.max(0, deadline - performance.now());
        await Promise.all([
          worker?.stop(left === undefined ? {} : { timeoutMs: left }),
          runner.stopObserving(left === undefined ? {} : { timeoutMs: left }),
        ]);
        await backend.close();
      },
    };
  } catch (error) {
    await backend.close();
    throw error;
  }
}

/**
 * The memory model as the configuration chooses it. With memory off its model is never asked,
 * so a mistake in its settings does not stop the harness: the model then says so if called.
 */
function memoryModelSelection(
  config: HarnessConfig,
  env: Readonly<Record<string, string | undefined>>,
  agentModel: LanguageModel,
): { mode: string; modelId: string; source: string; model: LanguageModel; followsRunModel: boolean } {
  try {
    // The operation worker retries memory calls (with backoff, honouring Retry-After), so
    // the client layer makes one attempt: retries are never stacked.
    return selectMemoryModel({ config, env, inheritModel: agentModel, retry: { maxAttempts: 1 } });
  } catch (error) {
    const memoryOff = !config.memory.enabled || config.memory.mode === 'off';
    if (!memoryOff || !(error instanceof ConfigError)) throw error;
    const model = unconfiguredModel('memory', error);
    return { mode: 'unconfigured', modelId: model.modelId, source: error.detail, model, followsRunModel: false };
  }
}

/** Both memory services over `store`, as the configuration sets them. */
function memoryServicesOf(
  config: HarnessConfig,
  store: MemoryStore,
  memoryModel: { readonly model: LanguageModel; readonly followsRunModel: boolean },
  reportFault: FaultReporter,
): { observationalMemory: ObservationalMemory; workingMemory: WorkingMemory } {
  const observationalMemory = createObservationalMemory({
    store,
    model: memoryModel.model,
    followRunModel: memoryModel.followsRunModel,
    mode: config.memory.mode,
    defaultEnabled: config.memory.defaultEnabled,
    defaults: tokenConfigFrom(config),
    redactSecrets: config.memory.redactSecrets,
    toolImportanceCap: config.memory.toolImportanceCap,
    leaseMs: config.memory.staleOperationSeconds * 1000,
    maxOperationAttempts: config.memory.maxOperationAttempts,
    // As the runner: tenants read the operation log and memory events, not the database's path.
    hideServerFailures: true,
    onFault: reportFault,
  });
  const workingMemory = createWorkingMemory({
    store,
    limits: {
      maxValueBytes: config.memory.workingMemoryMaxValueBytes,
      maxEntries: config.memory.workingMemoryMaxEntries,
      maxTotalBytes: config.memory.workingMemoryMaxTotalBytes,
    },
    redactSecrets: config.memory.redactSecrets,
    defaultTtlSeconds: config.memory.workingMemoryDefaultTtlSeconds,
  });
  return { observationalMemory, workingMemory };
}

/** The files an export must never write: the SQLite file (and its journals) and the configuration files. */
function protectedPathsOf(config: HarnessConfig): string[] {
  const paths = [join(config.workspace, CONFIG_FILE_PATH)];
  if (config.memory.dbDriver === 'sqlite' && config.memory.sqlitePath !== ':memory:')
    paths.push(config.memory.sqlitePath);
  for (const source of Object.values(config.sources)) if (source.endsWith('.toml')) paths.push(source);
  return [...new Set(paths)];
}

interface Backend {
  readonly store: MemoryStore;
  readonly runStore: RunStore;
  /** A cross-replica hub, when the backend has one. */
  readonly hub?: EventHub;
  close(): Promise<void>;
}

/** SQLite by default (one file, WAL); Postgres for several replicas on one database. */
async function openBackend(config: HarnessConfig): Promise<Backend> {
  if (config.memory.dbDriver === 'postgres') {
    if (config.memory.dbDsn.trim() === '') {
      throw new ConfigError({
        key: 'memory.db_dsn',
        source: config.sources['memory.db_dsn'] ?? 'default',
        message: 'db_driver is "postgres" but no DSN is set; set [memory] db_dsn or HARNESS_MEMORY_DB_DSN',
      });
    }
    // Loaded only when chosen, so SQLite users never load pg.
    const { openPostgresBackend } = await import('./postgres-backend.js');
    return openPostgresBackend({
      connectionString: config.memory.dbDsn,
      schema: config.memory.schema === '' ? 'public' : config.memory.schema,
    });
  }
  const store = createSqliteStore({ path: config.memory.sqlitePath });
  const runStore =
    config.memory.sqlitePath === ':memory:'
      ? createInMemoryRunStore()
      : createSqliteRunStore({ path: config.memory.sqlitePath });
  return {
    store,
    runStore,
    async close() {
      await runStore.dispose();
      await store.dispose();
    },
  };
}
