/**
 * `harness wm list|get|set|delete`: the working memory of one scope. Needs no model.
 * @module
 */
import type { Command } from 'commander';
import type { Scope } from '../../core/scope.js';
import { MAX_WORKING_MEMORY_TTL_SECONDS } from '../../core/working-memory.js';
import type { Harness } from '../../server/create-harness.js';
import { entryToJson } from '../../server/serialize.js';
import { dim, printLine } from '../context.js';
import type { CliContext, CommandResult } from '../context.js';
import { EXIT_FAILURE, EXIT_OK } from '../exit-codes.js';
import { openHarness } from '../open-harness.js';
import { describeScope, positiveInteger, scopeFrom, withScopeOptions } from '../scope-options.js';
import type { ScopeOptions } from '../scope-options.js';

interface WmOptions extends ScopeOptions {
  readonly json?: boolean;
  readonly ttl?: number;
}

/** Registers `wm` and its subcommands. */
export function registerWmCommand(program: Command, context: CliContext, result: CommandResult): void {
  const wm = program
    .command('wm')
    .description("read and write a scope's working memory (key/value entries injected into every turn)");
  const withHarness = async (
    options: WmOptions,
    action: (harness: Harness, scope: Scope) => Promise<number>,
  ): Promise<void> => {
    const scope = scopeFrom(options);
    const harness = await openHarness(context, { modelsOptional: true });
    try {
      result.exitCode = await action(harness, scope);
    } finally {
      await harness.dispose();
    }
  };

  withScopeOptions(wm.command('list').description('list the entries'))
    .option('--json', 'print {entries: [{key, value, created_at, updated_at, expires_at}]}')
    .action((options: WmOptions) =>
      withHarness(options, async (harness, scope) => {
        const entries = await harness.workingMemory.entries(scope);
        if (options.json) printLine(context, JSON.stringify({ entries: entries.map(entryToJson) }, null, 2));
        else if (entries.length === 0)
          context.stderr.write(`${dim(context, `no working-memory entries in ${describeScope(scope)}`)}\n`);
        else
          for (const entry of entries)
            printLine(
              context,
              `${entry.key} = ${entry.valueJson}${entry.expiresAt === null ? '' : dim(context, ` (expires ${entry.expiresAt})`)}`,
            );
        return EXIT_OK;
      }),
    );

  withScopeOptions(wm.command('get').description("print an entry's value as JSON (exit 1 when it is not set)"))
    .argument('<key>', 'entry key')
    .option('--json', 'print {key, value, created_at, updated_at, expires_at}')
    .action((key: string, options: WmOptions) =>
      withHarness(options, async (harness, scope) => {
        const found = await harness.workingMemory.get(scope, key);
        if (!found.found) {
          context.stderr.write(
            `harness: working-memory entry ${JSON.stringify(found.key)} is not set in ${describeScope(scope)}\n`,
          );
          return EXIT_FAILURE;
        }
        const entry = options.json
          ? (await harness.workingMemory.entries(scope)).find((item) => item.key === found.key)
          : undefined;
        printLine(context, entry ? JSON.stringify(entryToJson(entry), null, 2) : String(found.value));
        return EXIT_OK;
      }),
    );

  withScopeOptions(
    wm
      .command('set')
      .description('set an entry; the value is parsed as JSON, or stored as a string when it is not JSON'),
  )
    .argument('<key>', 'entry key')
    .argument('<value>', 'value as JSON (e.g. \'{"step":1}\'), or any text')
    .option(
      '--ttl <seconds>',
      'expire the entry after this many seconds (default: the configured default, or never)',
      positiveInteger('--ttl', MAX_WORKING_MEMORY_TTL_SECONDS),
    )
    .action((key: string, value: string, options: WmOptions) =>
      withHarness(options, async (harness, scope) => {
        const stored = await harness.workingMemory.set(
          scope,
          key,
          parseValue(value),
          options.ttl === undefined ? undefined : { ttlSeconds: options.ttl },
        );
        const { expiresAt } = stored.entry;
        printLine(
          context,
          `set ${stored.key} = ${stored.entry.valueJson}${expiresAt === null ? '' : ` (expires ${expiresAt})`}`,
        );
        return EXIT_OK;
      }),
    );

  withScopeOptions(wm.command('delete').description('delete an entry'))
    .argument('<key>', 'entry key')
    .action((key: string, options: WmOptions) =>
      withHarness(options, async (harness, scope) => {
        const deleted = await harness.workingMemory.delete(scope, key);
        printLine(context, deleted.deleted ? `deleted ${deleted.key}` : `${deleted.key} was not set`);
        return EXIT_OK;
      }),
    );
}

/** JSON when it parses, else the text itself. */
export function parseValue(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
