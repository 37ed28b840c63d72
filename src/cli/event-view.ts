/**
 * How `harness run` shows a run's events: the answer on stdout, tool calls and memory
 * events as dim one-liners on stderr, a spinner while the model works; or, with `--json`,
 * one event per line on stdout in the SSE payload shape.
 * @module
 */
import { stripInvisible } from '../core/sanitize-text.js';
import type { RunEvent } from '../storage/run-store.js';
import { dim } from './context.js';
import type { CliContext } from './context.js';
import { Spinner } from './spinner.js';

/** Shows events as they come. */
export interface EventView {
  show(event: RunEvent): void;
  /** Stops the spinner. */
  close(): void;
}

/** The `data:` payload of an SSE frame: `{id, run_id, type, timestamp, payload}`. */
export function eventToJson(event: RunEvent): Record<string, unknown> {
  return { id: event.id, run_id: event.runId, type: event.type, timestamp: event.timestamp, payload: event.payload };
}

/** Creates the view for `harness run`. */
export function createEventView(context: CliContext, options: { json: boolean }): EventView {
  const spinner = new Spinner(context.stderr);
  let answered = false;
  const note = (text: string): void => {
    if (options.json) return;
    spinner.clear();
    context.stderr.write(`${dim(context, text)}\n`);
  };
  const out = (text: string): void => {
    spinner.clear();
    context.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  };
  // What a model wrote reaches a terminal without its control characters: an escape sequence
  // can clear the screen, retitle the window or write the clipboard.
  const answer = (text: string): void => out(stripInvisible(text));
  return {
    show(event) {
      const payload = event.payload;
      const step = typeof payload['step'] === 'number' ? payload['step'] : undefined;
      if (options.json) out(JSON.stringify(eventToJson(event)));
      switch (event.type) {
        case 'run.started':
          note(
            `· run ${event.runId} (tenant ${str(payload['tenant_id'])}, conversation ` +
              `${str(payload['conversation_id'])}, agent ` +
              `${str(payload['agent_id'])}${payload['model'] ? `, model ${str(payload['model'])}` : ''})`,
          );
          spinner.update('the model is working (step 1)');
          break;
        case 'llm.request.snapshot':
          note(
            `· llm request, step ${step ?? '?'}: sha256 ${str(payload['prompt_hash']).slice(0, 12)}, tools ` +
              `${Array.isArray(payload['tool_names']) ? payload['tool_names'].join(', ') : ''}`,
          );
          break;
        case 'assistant.message': {
          const content = str(payload['content']);
          if (!options.json && content.trim() !== '') answer(content);
          answered = payload['final'] === true;
          spinner.update(answered ? 'finishing memory work' : 'running tools');
          break;
        }
        case 'tool.call.started':
          note(`→ tool ${str(payload['name'])} (${str(payload['tool_call_id'])})`);
          spinner.update(`running ${str(payload['name'])}`);
          break;
        case 'tool.call.completed':
          note(`← tool ${str(payload['name'])}: ${payload['ok'] === true ? 'ok' : 'failed'}`);
          break;
        case 'run.step.completed':
          if (!answered) spinner.update(`the model is working (step ${(step ?? 0) + 1})`);
          break;
        case 'memory.observe.started':
          note(`· memory: observing step ${step ?? '?'}`);
          break;
        case 'memory.observe.completed':
          note(
            `· memory: step ${step ?? '?'} ${payload['observed'] === true ? 'observed' : 'nothing observed yet'}` +
              `${payload['reflected'] === true ? ', reflected' : ''} (observations: ${str(payload['observation'])})`,
          );
          break;
        case 'memory.observe.failed':
          note(`· memory: step ${step ?? '?'} failed: ${str(payload['error'])}`);
          break;
        case 'memory.snippet.failed':
          note(
            `· memory: step ${step ?? '?'} went on without the ${str(payload['source']).replace('_', ' ')} ` +
              `snippet: ${str(payload['error'])}`,
          );
          break;
        case 'memory.message.skipped':
          note(`· memory: ${str(payload['error'])}`);
          break;
        case 'memory.reflection.completed':
          note(`· memory: reflection completed (${str(payload['trigger'])})`);
          break;
        case 'memory.operation.dead':
          note(
            `· memory: the ${str(payload['operation_type'])} operation ${str(payload['operation_id'])} is dead after ` +
              `${str(payload['attempts'])} attempts: ${str(payload['error'])} (harness memory retry runs it again)`,
          );
          break;
        case 'memory.working_memory.set':
          note(
            `· working memory: set ${str(payload['key'])} (${str(payload['bytes'])} bytes` +
              `${payload['expires_at'] === undefined ? '' : `, expires ${str(payload['expires_at'])}`})`,
          );
          break;
        case 'memory.working_memory.deleted':
          note(`· working memory: deleted ${str(payload['key'])}`);
          break;
        case 'run.completed': {
          const usage = (payload['usage'] ?? {}) as Record<string, unknown>;
          note(
            `· run completed: ${str(payload['steps'])} ${payload['steps'] === 1 ? 'step' : 'steps'}, ` +
              `${str(usage['input_tokens'])} tokens in, ` +
              `${str(usage['output_tokens'])} out; conversation ${str(payload['conversation_id'])}`,
          );
          break;
        }
        case 'run.failed': {
          const error = (payload['error'] ?? {}) as Record<string, unknown>;
          spinner.clear();
          context.stderr.write(
            `harness: run failed: ${str(error['code'])}: ${str(error['message']).replace(/\s*\n\s*/g, ' ')}\n`,
          );
          break;
        }
        case 'run.cancelled':
          spinner.clear();
          context.stderr.write('harness: run cancelled\n');
          break;
        default:
          note(`· ${event.type}`);
      }
    },
    close() {
      spinner.stop();
    },
  };
}

/** A payload value as a note shows it, without control characters (see `answer`). */
function str(value: unknown): string {
  if (value === undefined || value === null) return '';
  return stripInvisible(typeof value === 'string' ? value : JSON.stringify(value));
}
