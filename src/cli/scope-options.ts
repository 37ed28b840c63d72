/**
 * The `--tenant`, `--conversation` and `--agent` options of the memory commands.
 * @module
 */
import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';
import { resolveScope } from '../core/scope.js';
import type { Scope } from '../core/scope.js';

/** Parsed scope options. */
export interface ScopeOptions {
  readonly tenant?: string;
  readonly conversation: string;
  readonly agent?: string;
}

/** Adds the scope options; `--conversation` is required (there is no shared catch-all conversation). */
export function withScopeOptions(command: Command): Command {
  return command
    .option('--tenant <id>', 'tenant id', nonBlankId('--tenant'), 'default')
    .requiredOption('--conversation <id>', 'conversation id (required)')
    .option('--agent <id>', 'agent id', nonBlankId('--agent'), 'default');
}

/**
 * Refuses a blank id, for commander, saying `refusal` after the option's name: `--tenant "$T"`
 * with `$T` unset would otherwise name the `default` tenant, and a `forget` would erase its
 * conversation.
 */
export function nonBlankId(
  name: string,
  refusal = 'must not be blank (leave the option out for "default")',
): (value: string) => string {
  return (value: string) => {
    if (value.trim() === '') throw new InvalidArgumentError(`${name} ${refusal}`);
    return value;
  };
}

/** Validates the scope; an invalid id throws `SCOPE_INVALID` naming the field. */
export function scopeFrom(options: ScopeOptions): Scope {
  return resolveScope({ tenantId: options.tenant, conversationId: options.conversation, agentId: options.agent });
}

/** `tenant/conversation/agent`, for messages. */
export function describeScope(scope: Scope): string {
  return `${scope.tenantId}/${scope.conversationId}/${scope.agentId}`;
}

/** Parses a positive integer option value, for commander. */
export function positiveInteger(name: string, max?: number): (value: string) => number {
  return (value: string) => {
    const number = Number(value);
    const valid = /^\d+$/.test(value.trim()) && Number.isSafeInteger(number) && number >= 1;
    if (!valid || (max !== undefined && number > max)) {
      const wanted = max === undefined ? 'a positive integer' : `an integer from 1 to ${max}`;
      throw new InvalidArgumentError(`${name} must be ${wanted} (got ${JSON.stringify(value)})`);
    }
    return number;
  };
}
