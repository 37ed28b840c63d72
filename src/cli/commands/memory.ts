/**
 * `harness memory status|show|export|import|reflect|enable|disable|forget|retry`: observational memory of
 * one scope, through the ObservationalMemory API. No model is needed except by `reflect`.
 * @module
 */
import { stripInvisible } from '../../core/sanitize-text.js';
import { Option } from 'commander';
import type { Command } from 'commander';
import type { MemoryStatus } from '../../core/memory-status.js';
import { linkSections } from '../../core/memory-export.js';
import {
  describeProvenance,
  observationToJson,
  reflectionLinksToJson,
  scopeToJson,
  statusToJson,
  structuredReflectionToJson,
} from '../../core/memory-status.js';
import {
  MAX_OBSERVE_MIN_TOKENS,
  MAX_REFLECT_THRESHOLD_TOKENS,
  MAX_SNIPPET_MAX_TOKENS,
} from '../../core/observation.js';
import type { ObservationConfig } from '../../core/observation.js';
import { forgetConversation } from '../../agent/forget-conversation.js';
import type { Scope } from '../../core/scope.js';
import type { Harness } from '../../server/create-harness.js';
import { entryToJson, operationToJson } from '../../server/serialize.js';
import { printLine } from '../context.js';
import type { CliContext, CommandResult } from '../context.js';
import { UsageError } from '../exit-codes.js';
import { openHarness } from '../open-harness.js';
import { readExportFile } from '../read-export-file.js';
import { describeScope, positiveInteger, scopeFrom, withScopeOptions } from '../scope-options.js';
import type { ScopeOptions } from '../scope-options.js';

type Format = 'json' | 'markdown';

interface MemoryOptions extends ScopeOptions {
  readonly format: Format;
}

interface EnableOptions extends MemoryOptions {
  readonly observeMinTokens?: number;
  readonly snippetMaxTokens?: number;
  readonly reflectThresholdTokens?: number;
  readonly config?: readonly string[];
}

interface ImportOptions extends MemoryOptions {
  readonly file: string;
}

const NOTHING_TO_REFLECT = 'nothing to reflect (memory disabled or empty)';

const THRESHOLD_KEYS: Readonly<Record<string, keyof ObservationConfig>> = {
  observe_min_tokens: 'observeMinTokens',
  snippet_max_tokens: 'snippetMaxTokens',
  reflect_threshold_tokens: 'reflectThresholdTokens',
};

// The bounds memory itself enforces, checked here so a value past one is bad usage (exit 2),
// not a configuration error (exit 78).
const THRESHOLD_MAXIMUMS: Readonly<Record<keyof ObservationConfig, number>> = {
  observeMinTokens: MAX_OBSERVE_MIN_TOKENS,
  snippetMaxTokens: MAX_SNIPPET_MAX_TOKENS,
  reflectThresholdTokens: MAX_REFLECT_THRESHOLD_TOKENS,
};

/** A subcommand of `memory` over one scope: `--format`, a harness opened for it and closed after. */
type Subcommand = (
  name: string,
  description: string,
  defaultFormat: Format,
  action: (harness: Harness, scope: Scope, options: EnableOptions) => Promise<void>,
) => Command;

/** Registers `memory` and its subcommands. */
export function registerMemoryCommand(program: Command, context: CliContext, _result: CommandResult): void {
  const memory = program.command('memory').description('inspect and control the observational memory of a scope');
  const sub: Subcommand = (name, description, defaultFormat, action) =>
    withScopeOptions(memory.command(name).description(description))
      .addOption(new Option('--format <format>', 'output format').choices(['json', 'markdown']).default(defaultFormat))
      .action(async (options: EnableOptions) => {
        const scope = scopeFrom(options);
        const harness = await openHarness(context, { modelsOptional: true });
        try {
          await action(harness, scope, options);
        } finally {
          await harness.dispose();
        }
      });
  registerReadCommands(sub, context);
  registerControlCommands(memory, sub, context);
  registerImportCommand(sub, context);
}

/** `import`: a JSON export restored into a scope that holds no memory yet. */
function registerImportCommand(sub: Subcommand, context: CliContext): void {
  sub(
    'import',
    'restore a JSON export (memory export) into a scope with no observations: observations, reflection, supersessions',
    'markdown',
    async (harness, scope, options) => {
      const text = await readExportFile((options as ImportOptions).file, { cwd: context.cwd });
      const result = await harness.observationalMemory.importExport(scope, text);
      if (options.format === 'json')
        printJson(context, {
          imported: result.observations.length,
          dropped_links: result.droppedLinks,
          status: statusToJson(result.status),
        });
      else {
        const dropped =
          result.droppedLinks === 0 ? '' : `; ${result.droppedLinks} link(s) left out or kept as contradictions`;
        printLine(
          context,
          `imported ${result.observations.length} observation(s) into ${describeScope(scope)}${dropped}\n\n` +
            statusMarkdown(result.status),
        );
      }
    },
  ).requiredOption('--file <path>', 'the JSON export to read, `-` for standard input (at most 64 MiB)');
}

/** `status`, `show`, `export` and `reflect`. */
function registerReadCommands(sub: Subcommand, context: CliContext): void {
  sub(
    'status',
    'show whether memory is enabled, its counts and thresholds',
    'markdown',
    async (harness, scope, options) => {
      const status = await harness.observationalMemory.status(scope);
      if (options.format === 'json') printJson(context, { status: statusToJson(status) });
      else printLine(context, statusMarkdown(status));
    },
  );

  sub(
    'show',
    'show everything stored: status, reflection, observations, working memory',
    'markdown',
    async (harness, scope, options) => {
      const inspection = await harness.observationalMemory.inspect(scope, { operations: 'open' });
      const entries = await harness.workingMemory.entries(scope);
      const dead = inspection.operations.filter((operation) => operation.status === 'dead');
      if (options.format === 'json') {
        printJson(context, {
          status: statusToJson(inspection.status),
          observations: inspection.observations.map(observationToJson),
          reflection: inspection.reflection?.raw ?? '',
          structured_reflection: inspection.reflection
            ? structuredReflectionToJson(inspection.reflection.structured)
            : null,
          reflection_links: reflectionLinksToJson(inspection.links),
          dead_operations: dead.map(operationToJson),
          working_memory: entries.map(entryToJson),
        });
        return;
      }
      const lines = [
        statusMarkdown(inspection.status),
        '',
        '## Reflection',
        '',
        inspection.reflection?.raw.trim() || '(none)',
        '',
        '## Observations',
        '',
      ];
      if (inspection.observations.length === 0) lines.push('(none)');
      for (const observation of inspection.observations) {
        const importance = observation.importance === null ? 'unscored' : observation.importance.toFixed(2);
        lines.push(
          `- [${observation.seq}] (importance ${importance}; ${describeProvenance(observation)}) ` +
            `${observation.content.replace(/\n/g, '\n  ')}`,
        );
      }
      lines.push('', ...linkSections(inspection.links));
      if (dead.length > 0) {
        lines.push(
          '',
          `## Dead operations (retry with \`harness memory retry ${scopeArguments(scope)} <operation-id>\`)`,
          '',
        );
        for (const operation of dead)
          lines.push(
            `- ${operation.operationId} (${operation.operationType}, ${operation.attempt} attempts): ` +
              `${stripInvisible(operation.errorText)}`,
          );
      }
      lines.push('', '## Working memory', '');
      if (entries.length === 0) lines.push('(none)');
      for (const entry of entries)
        lines.push(
          `- ${entry.key} = ${entry.valueJson}${entry.expiresAt === null ? '' : ` (expires ${entry.expiresAt})`}`,
        );
      printLine(context, lines.join('\n'));
    },
  );

  sub('export', 'print the export (json or markdown) to stdout', 'json', async (harness, scope, options) => {
    const exported = await harness.observationalMemory.export(scope, options.format);
    context.stdout.write(exported.content.endsWith('\n') ? exported.content : `${exported.content}\n`);
  });

  sub(
    'reflect',
    'reflect now, whatever the thresholds (calls the memory model)',
    'markdown',
    async (harness, scope, options) => {
      // Ctrl-C stops the reflector's call; the reflection stays queued for the next observe.
      const outcome = await harness.observationalMemory.reflectNow(
        scope,
        context.signal === undefined ? {} : { signal: context.signal },
      );
      if (options.format === 'json')
        printJson(context, {
          reflected: outcome.reflected,
          queued: outcome.queued,
          status: statusToJson(outcome.status),
        });
      else
        printLine(
          context,
          `${outcome.reflected ? 'reflected' : NOTHING_TO_REFLECT}\n\n${statusMarkdown(outcome.status)}`,
        );
    },
  );
}

/** `enable`, `disable`, `retry` and `forget`. */
function registerControlCommands(memory: Command, sub: Subcommand, context: CliContext): void {
  sub(
    'enable',
    'enable observational memory for the scope, optionally with its own thresholds',
    'markdown',
    async (harness, scope, options) => {
      const overrides = thresholdOverrides(options);
      const status = await harness.observationalMemory.setEnabled(
        scope,
        true,
        Object.keys(overrides).length > 0 ? overrides : undefined,
      );
      if (options.format === 'json') printJson(context, { status: statusToJson(status) });
      else printLine(context, `observational memory enabled for ${describeScope(scope)}\n\n${statusMarkdown(status)}`);
    },
  )
    .option(
      '--observe-min-tokens <n>',
      `observe once this many tokens are unobserved (at most ${MAX_OBSERVE_MIN_TOKENS})`,
      positiveInteger('--observe-min-tokens', MAX_OBSERVE_MIN_TOKENS),
    )
    .option(
      '--snippet-max-tokens <n>',
      `token budget of the injected snippet (at most ${MAX_SNIPPET_MAX_TOKENS})`,
      positiveInteger('--snippet-max-tokens', MAX_SNIPPET_MAX_TOKENS),
    )
    .option(
      '--reflect-threshold-tokens <n>',
      `reflect once observations reach this many tokens (at most ${MAX_REFLECT_THRESHOLD_TOKENS})`,
      positiveInteger('--reflect-threshold-tokens', MAX_REFLECT_THRESHOLD_TOKENS),
    )
    .option('--config <key=value...>', `thresholds as key=value (${Object.keys(THRESHOLD_KEYS).join(', ')})`);

  sub(
    'disable',
    'disable observational memory for the scope (what is stored stays)',
    'markdown',
    async (harness, scope, options) => {
      const status = await harness.observationalMemory.setEnabled(scope, false);
      if (options.format === 'json') printJson(context, { status: statusToJson(status) });
      else printLine(context, `observational memory disabled for ${describeScope(scope)}\n\n${statusMarkdown(status)}`);
    },
  );

  withScopeOptions(
    memory
      .command('retry')
      .description(
        "retry a dead operation by hand: it runs again at the scope's next observe or the server's next worker poll",
      ),
  )
    .argument('<operation-id>', 'the dead operation, as `memory show` lists it')
    .addOption(new Option('--format <format>', 'output format').choices(['json', 'markdown']).default('markdown'))
    .action(async (operationId: string, options: MemoryOptions) => {
      const scope = scopeFrom(options);
      const harness = await openHarness(context, { modelsOptional: true });
      try {
        const operation = await harness.observationalMemory.retryOperation(scope, operationId);
        // The same body as POST …/operations/{id}/retry.
        if (options.format === 'json')
          printJson(context, {
            operation: operationToJson(operation),
            status: statusToJson(await harness.observationalMemory.status(scope)),
          });
        else
          printLine(
            context,
            `operation ${operation.operationId} (${operation.operationType}) of ${describeScope(scope)} is ` +
              `queued again`,
          );
      } finally {
        await harness.dispose();
      }
    });

  sub(
    'forget',
    'erase both memories and the conversation history of the scope',
    'markdown',
    async (harness, scope, options) => {
      await forgetConversation(harness, scope);
      if (options.format === 'json') printJson(context, { forgotten: true, scope: scopeToJson(scope) });
      else
        printLine(
          context,
          `forgot observational memory, working memory and conversation history of ${describeScope(scope)}`,
        );
    },
  );
}

/** `--observe-min-tokens` and friends, then `--config key=value` pairs (which win). */
function thresholdOverrides(options: EnableOptions): Partial<ObservationConfig> {
  const overrides: Partial<Record<keyof ObservationConfig, number>> = {};
  if (options.observeMinTokens !== undefined) overrides.observeMinTokens = options.observeMinTokens;
  if (options.snippetMaxTokens !== undefined) overrides.snippetMaxTokens = options.snippetMaxTokens;
  if (options.reflectThresholdTokens !== undefined) overrides.reflectThresholdTokens = options.reflectThresholdTokens;
  for (const pair of options.config ?? []) {
    const match = /^([a-z_-]+)=(.*)$/i.exec(pair.trim());
    const key = match ? THRESHOLD_KEYS[(match[1] ?? '').toLowerCase().replace(/-/g, '_')] : undefined;
    if (!match || key === undefined) {
      throw new UsageError(
        `--config takes key=value with a key of ${Object.keys(THRESHOLD_KEYS).join(', ')} (got ` +
          `${JSON.stringify(pair)})`,
      );
    }
    overrides[key] = positiveInteger(`--config ${match[1] ?? ''}`, THRESHOLD_MAXIMUMS[key])(match[2] ?? '');
  }
  return overrides;
}

function statusMarkdown(status: MemoryStatus): string {
  const { config } = status;
  return [
    `# Observational memory of ${describeScope(status.scope)}`,
    '',
    `- mode: ${status.mode}`,
    `- enabled: ${status.enabled ? 'yes' : 'no'}`,
    `- observations: ${status.observationCount} (${status.activeObservationTokens} tokens)`,
    `- reflection: ${status.reflectionPresent ? `yes (${status.activeReflectionTokens} tokens)` : 'none'}`,
    `- last observed message: ${status.lastObservedMessageIndex < 0 ? 'none' : status.lastObservedMessageIndex}`,
    `- pending operations: ${status.pendingOperations}`,
    `- supersession set: ${status.activeSupersessions} supersession(s), ${status.activeContradictions} ` +
      `unresolved contradiction(s); ${status.rejectedReferences} reference(s) rejected`,
    `- dead operations: ${status.deadOperations}`,
    `- thresholds: observe_min_tokens ${config.observeMinTokens}, snippet_max_tokens ` +
      `${config.snippetMaxTokens}, reflect_threshold_tokens ${config.reflectThresholdTokens}`,
    `- updated: ${status.updatedAt ?? 'never'}`,
  ].join('\n');
}

/** The scope options that name `scope`, defaults left out. */
function scopeArguments(scope: Scope): string {
  const tenant = scope.tenantId === 'default' ? [] : [`--tenant ${scope.tenantId}`];
  const agent = scope.agentId === 'default' ? [] : [`--agent ${scope.agentId}`];
  return [...tenant, `--conversation ${scope.conversationId}`, ...agent].join(' ');
}

function printJson(context: CliContext, value: unknown): void {
  printLine(context, JSON.stringify(value, null, 2));
}
