/**
 * Tool definitions: one zod schema gives both argument validation and the JSON Schema a
 * model sees.
 * @module
 */
import { z } from 'zod/v4';
import { invalidOption, requireObject, requireOptions, requireString } from '../core/require-option.js';
import { HarnessMemoryError, ToolError } from '../core/errors.js';
import { assertScope, resolveScope } from '../core/scope.js';
import type { Scope } from '../core/scope.js';
import { redactAndCut } from '../core/redact-secrets.js';

/** Who is calling a tool and where it may write. */
export interface ToolContext {
  /**
   * The resolved scope of the call (the agent runner passes its run's). When given, it is
   * the scope, and the id fields below are only informative.
   */
  scope?: Scope;
  tenantId?: string;
  conversationId?: string;
  agentId?: string;
  /** The conversation falls back to it. */
  runId?: string;
  toolCallId?: string;
  /** Directory that file-writing actions (export) must stay inside. */
  workspace: string;
  /**
   * Aborted when the run is cancelled. A long tool should stop then; the runner does not wait
   * for one that does not. (A forget of the conversation does not abort it: the run stops at
   * its next write, which is refused.)
   */
  signal?: AbortSignal;
}

/** What {@link defineTool} takes. */
export interface ToolDefinition<Schema extends z.ZodType> {
  name: string;
  description: string;
  inputSchema: Schema;
  /** Runs with arguments that already passed `inputSchema`. */
  execute(args: z.output<Schema>, context: ToolContext): Promise<unknown>;
}

/** A tool ready to hand to a model: JSON Schema `parameters` plus a validating `execute`. */
export interface Tool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: z.ZodType;
  /** JSON Schema (draft 2020-12, input side, without `$schema`). */
  readonly parameters: Record<string, unknown>;
  /** Validates `args`; throws `ToolError` (`TOOL_INPUT_INVALID`) listing each issue as `path: message`. */
  execute(args: unknown, context: ToolContext): Promise<unknown>;
}

/**
 * Builds a {@link Tool} from a zod schema and a handler.
 * @example
 * ```ts
 * import { z } from 'zod/v4';
 * import { defineTool } from 'harness-memory/tools';
 *
 * const echo = defineTool({
 *   name: 'echo',
 *   description: 'Echoes its text.',
 *   inputSchema: z.object({ text: z.string() }),
 *   execute: async ({ text }) => ({ text }),
 * });
 * ```
 */
export function defineTool<Schema extends z.ZodType>(definition: ToolDefinition<Schema>): Tool {
  requireOptions('defineTool', definition, 'Pass { name, description, inputSchema, execute }.');
  requireString('defineTool', 'name', definition.name, 'Pass the name the model calls the tool by, such as "search".');
  if (typeof definition.description !== 'string')
    throw invalidOption(
      'defineTool',
      'description',
      'is required (a string)',
      'Say what the tool does; the model reads it.',
    );
  requireObject(
    'defineTool',
    'inputSchema',
    definition.inputSchema,
    ['safeParse'],
    'Pass a zod schema (zod/v4) of the arguments.',
  );
  if (typeof definition.execute !== 'function')
    throw invalidOption('defineTool', 'execute', 'is required (a function)', 'Pass the handler that runs the tool.');
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(definition.inputSchema, { io: 'input' }) as Record<
    string,
    unknown
  >;
  return Object.freeze({
    name: definition.name,
    description: definition.description,
    inputSchema: definition.inputSchema,
    parameters,
    async execute(args: unknown, context: ToolContext): Promise<unknown> {
      return definition.execute(parseToolArguments(definition.name, definition.inputSchema, args), context);
    },
  });
}

/**
 * The arguments of a call to tool `toolName`, checked against `schema`. Throws a `ToolError`
 * (`TOOL_INPUT_INVALID`) listing each issue with its path.
 */
export function parseToolArguments<Schema extends z.ZodType>(
  toolName: string,
  schema: Schema,
  args: unknown,
): z.output<Schema> {
  const parsed = schema.safeParse(args);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map(
    (issue) => `${issue.path.length === 0 ? '(root)' : issue.path.map(String).join('.')}: ${issue.message}`,
  );
  throw new ToolError({ toolName, message: `invalid arguments: ${issues.join('; ')}`, issues, cause: parsed.error });
}

/**
 * The action argument every memory tool shares: trimmed and lowercased before the enum
 * check, with messages naming the valid actions.
 */
export function actionSchema<const Action extends string>(
  toolActions: readonly [Action, ...Action[]],
): z.ZodType<Action, unknown> {
  const list = toolActions.join(', ');
  return z.preprocess(
    (value) => (typeof value === 'string' ? value.trim().toLowerCase() : value),
    z.enum(toolActions, {
      error: (issue) =>
        issue.input === undefined || issue.input === ''
          ? `action is required; valid actions are ${list}`
          : `unsupported action ${shownInput(issue.input)}; valid actions are ${list}`,
    }),
  ) as unknown as z.ZodType<Action, unknown>;
}

/**
 * `given` unless it is missing or blank (models and clients fill optional strings with ""),
 * else `fallback`.
 */
export function givenOr<T extends string | undefined>(given: string | undefined, fallback: T): string | T {
  return given !== undefined && given.trim() !== '' ? given : fallback;
}

/**
 * A value a caller sent, as an error shows it: JSON, secrets redacted, then cut at 60
 * characters (it may be huge; cut first, a secret would be left too short for a rule to find).
 */
function shownInput(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    // NOTE: JSON.stringify recurses, so an array nested thousands deep overflows the stack; a
    // BigInt has no JSON form. Either is still a value the schema refuses, with its own message.
    return Array.isArray(value) ? '(an array nested too deeply to show)' : `(a ${typeof value} that has no JSON form)`;
  }
  return redactAndCut(text, 60, '…');
}

/**
 * The scope of a tool call: `context.scope` when given (a scope already resolved is taken as
 * it is); else from the ids, tenant and agent defaulting to `default`, the conversation to
 * the run id. Throws `SCOPE_INVALID` when the call has neither.
 */
export function toolScope(context: Omit<ToolContext, 'workspace'>): Scope {
  if (context.scope !== undefined) return assertScope(context.scope);
  if (isBlank(context.conversationId) && isBlank(context.runId)) {
    throw new HarnessMemoryError({
      code: 'SCOPE_INVALID',
      component: 'tool',
      message: 'run context is required: the tool call has neither a conversation id nor a run id.',
      data: { field: 'conversation_id' },
    });
  }
  return resolveScope({
    tenantId: context.tenantId,
    conversationId: context.conversationId,
    agentId: context.agentId,
    runId: context.runId,
  });
}

function isBlank(value: string | undefined): boolean {
  return value === undefined || value.trim() === '';
}

/**
 * `schema`, taking a field sent as `null` as left out: models in strict function-calling mode,
 * and some providers, fill every argument they leave out with null. The fields named in
 * `nullable` keep a null. The JSON Schema a model is shown is `schema`'s, unchanged.
 */
export function nullAsAbsent<Schema extends z.ZodObject>(
  schema: Schema,
  nullable: readonly string[] = [],
): z.ZodPreprocess<Schema> {
  return z.preprocess((input: unknown) => {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) return input;
    return Object.fromEntries(Object.entries(input).filter(([key, value]) => value !== null || nullable.includes(key)));
  }, schema);
}
