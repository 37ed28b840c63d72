/**
 * `harness mcp`: the MCP server on stdio, over the same configuration, workspace and store
 * as `harness serve`. Protocol messages are the only output on stdout; warnings and faults go
 * to stderr.
 * @module
 */
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Command } from 'commander';
import { resolveScope } from '../../core/scope.js';
import { createMemoryMcpServer } from '../../mcp/memory-mcp-server.js';
import { stopRequested } from '../context.js';
import type { CliContext, CommandResult } from '../context.js';
import { EXIT_OK } from '../exit-codes.js';
import { openHarness } from '../open-harness.js';
import { nonBlankId } from '../scope-options.js';

interface McpOptions {
  readonly tenant: string;
  readonly conversation: string;
  readonly agent: string;
  readonly allowForget?: boolean;
}

/** Registers `mcp`. */
export function registerMcpCommand(program: Command, context: CliContext, result: CommandResult): void {
  program
    .command('mcp')
    .description('serve both memories to an MCP client on stdio (tools, and resources memory://…)')
    .option(
      '--tenant <id>',
      'the tenant every tool works in (tools cannot change it)',
      nonBlankId('--tenant'),
      'default',
    )
    .option('--conversation <id>', 'conversation of tool calls that name none', nonBlankId('--conversation'), 'default')
    .option('--agent <id>', 'agent of tool calls that name none', nonBlankId('--agent'), 'default')
    .option('--allow-forget', 'offer the memory_forget tool (erases a conversation for good)')
    .action(async (options: McpOptions) => {
      result.exitCode = await serveMcp(context, options);
    });
}

async function serveMcp(context: CliContext, options: McpOptions): Promise<number> {
  // Checked before anything opens, so a bad id fails with exit code 2 and a clear message.
  const defaults = resolveScope({
    tenantId: options.tenant,
    conversationId: options.conversation,
    agentId: options.agent,
  });
  const harness = await openHarness(context, {
    startWorker: true,
    modelsOptional: true,
    onModelMissing: (role, error) => {
      const missing = role === 'memory' ? 'the memory model is not configured' : 'no model is configured';
      context.stderr.write(`harness: warning: ${missing}, so observing will fail until it is: ${error.detail}\n`);
    },
  });
  const onFault = (error: unknown): void =>
    harness.faults.report({ component: 'mcp', message: 'an MCP tool failed', error });
  const stop = stopRequested(context);
  const ended = new Promise<string>((resolve) => {
    process.stdin.once('end', () => resolve('end'));
    process.stdin.once('close', () => resolve('close'));
  });
  const handle = serveStdio(
    () =>
      createMemoryMcpServer({
        observationalMemory: harness.observationalMemory,
        workingMemory: harness.workingMemory,
        runStore: harness.runStore,
        tenantId: defaults.tenantId,
        conversationId: defaults.conversationId,
        agentId: defaults.agentId,
        allowForget: options.allowForget === true,
        onFault,
      }),
    { onerror: (error) => onFault(error) },
  );
  try {
    await Promise.race([stop.stopped, ended]);
  } finally {
    stop.dispose();
    await handle.close().catch(onFault);
    await harness.dispose();
  }
  return EXIT_OK;
}
