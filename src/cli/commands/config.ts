/**
 * `harness config`: the effective configuration, where each value came from (secrets
 * masked), and the models it selects. Opens no store and calls no model.
 * @module
 */
import type { Command } from 'commander';
import { describeConfig, describeConfigValues } from '../../config/describe-config.js';
import type { HarnessConfig } from '../../config/schema.js';
import type { LanguageModel } from '../../llm/language-model.js';
import { createAgentModel, selectMemoryModel } from '../../llm/memory-model-selection.js';
import { createOpenAICompatibleModel, normalizeBaseUrl } from '../../llm/openai-compatible.js';
import { printLine } from '../context.js';
import type { CliContext, CommandResult } from '../context.js';
import { EXIT_OK, errorMessageOf } from '../exit-codes.js';
import { isModelConfigError } from '../open-harness.js';

/** Registers `config`. */
export function registerConfigCommand(program: Command, context: CliContext, result: CommandResult): void {
  program
    .command('config')
    .description('show the effective configuration: key, value and source (secrets masked), and the chosen models')
    .option(
      '--json',
      'print {rows: [{key, value, source}], agent_model, memory_model} as JSON, each value as data (a number, ' +
        'boolean, string, list, or null when unset)',
    )
    .action((options: { json?: boolean }) => {
      const config = context.config();
      const models = modelsOf(config, context.env);
      if (options.json) {
        const rows = describeConfigValues(config);
        printLine(context, JSON.stringify({ rows, agent_model: models.agent, memory_model: models.memory }, null, 2));
      } else {
        const rows = describeConfig(config);
        const keyWidth = Math.max(3, ...rows.map((row) => row.key.length));
        const valueWidth = Math.min(60, Math.max(5, ...rows.map((row) => row.value.length)));
        const line = (key: string, value: string, source: string) =>
          `${key.padEnd(keyWidth)}  ${value.padEnd(valueWidth)}  ${source}`.trimEnd();
        const lines = [line('key', 'value', 'source'), ...rows.map((row) => line(row.key, row.value, row.source)), ''];
        lines.push(
          'error' in models.agent
            ? `agent model: not configured (${models.agent.error.replace(/^configuration: /, '')})`
            : `agent model: ${models.agent.provider} ${models.agent.model_id} at ${models.agent.base_url}`,
        );
        lines.push(
          'error' in models.memory
            ? `memory model: not configured (${models.memory.error.replace(/^configuration: /, '')})`
            : `memory model: ${models.memory.mode} ${models.memory.model_id} from ${models.memory.source} ` +
                `at ${models.memory.base_url}`,
        );
        printLine(context, lines.join('\n'));
      }
      result.exitCode = EXIT_OK;
    });
}

type ModelLine = { provider: string; model_id: string; base_url: string } | { error: string };
type MemoryLine = { mode: string; model_id: string; source: string; base_url: string } | { error: string };

/** The models `createHarness` would build, or why it cannot. */
function modelsOf(
  config: HarnessConfig,
  env: Readonly<Record<string, string | undefined>>,
): { agent: ModelLine; memory: MemoryLine } {
  let agentModel: LanguageModel | undefined;
  let agentBaseUrl = '';
  let agent: ModelLine;
  try {
    agentModel = createAgentModel(config, env, {
      createModel: (settings) => {
        const model = createOpenAICompatibleModel(settings);
        // The client's own normalised URL: it refuses credentials and a query, so none is shown.
        agentBaseUrl = model.baseURL;
        return model;
      },
    });
    agent = { provider: agentModel.provider, model_id: agentModel.modelId, base_url: agentBaseUrl };
  } catch (error) {
    if (!isModelConfigError(error)) throw error;
    agent = { error: errorMessageOf(error) };
  }
  let memory: MemoryLine;
  try {
    const selection = selectMemoryModel({
      config,
      env,
      ...(agentModel ? { inheritModel: agentModel } : {}),
      retry: { maxAttempts: 1 },
    });
    memory = {
      mode: selection.mode,
      model_id: selection.modelId,
      source: selection.source,
      // Where memory's calls go, as the client sends them: `/v1` added to a bare host, a pasted
      // `/chat/completions` dropped. No base URL of its own: the agent model used as it is.
      base_url: selection.baseUrl === undefined ? agentBaseUrl : normalizeBaseUrl(selection.baseUrl),
    };
  } catch (error) {
    if (!isModelConfigError(error)) throw error;
    memory = { error: errorMessageOf(error) };
  }
  return { agent, memory };
}
