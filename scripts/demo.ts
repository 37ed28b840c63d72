/**
 * `npm run demo`: memory across two runs of one conversation, with a scripted model.
 * No API key, no network: the "model" is the scripted OpenAI-compatible server from the
 * tests, listening on 127.0.0.1. Run 1 states a preference and saves a plan with the
 * `working_memory` tool; run 2's first model request shows both memories injected.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/load-config.js';
import { createHarness } from '../src/server/create-harness.js';
import type { Harness } from '../src/server/create-harness.js';
import { startScriptedOpenAIServer } from '../test/support/scripted-openai-server.js';
import type { ScriptedReply, ScriptedRequest, ScriptedServer } from '../test/support/scripted-openai-server.js';

const CONVERSATION = 'demo-conv';
const RUN_1_PROMPT = 'I prefer tabs over spaces. Please plan how to reformat src/.';
const RUN_2_PROMPT = 'Which indentation should the reformat use, and where are we in the plan?';
const PLAN = { step: 1, task: 'reformat src/ with tabs', next: 'run the formatter on src/' };

interface ChatMessage {
  readonly role: string;
  readonly content: string;
}

function messagesOf(request: ScriptedRequest): ChatMessage[] {
  const messages =
    (request.body as { messages?: Array<{ role: string; content: unknown }> } | undefined)?.messages ?? [];
  return messages.map((message) => ({
    role: message.role,
    content: typeof message.content === 'string' ? message.content : '',
  }));
}

function isMemoryRequest(request: ScriptedRequest): boolean {
  return messagesOf(request).some(
    (message) =>
      message.content.includes('observational memory processor') || message.content.includes('structured reflection'),
  );
}

/** The scripted model: observer and reflector prompts get memory answers, the agent gets its script. */
function reply(request: ScriptedRequest): ScriptedReply {
  const messages = messagesOf(request);
  const prompt = messages.map((message) => message.content).join('\n');
  if (prompt.includes('structured reflection'))
    return { text: 'SUMMARY:\nThe user prefers tabs over spaces.\n\nSUPERSESSIONS:\n\nCONTRADICTIONS:\n' };
  if (prompt.includes('observational memory processor')) {
    const segment = prompt.slice(prompt.lastIndexOf('New transcript segment:'));
    if (segment.includes('I prefer tabs over spaces'))
      return { text: 'IMPORTANCE:0.9\nUser prefers tabs over spaces.' };
    return { text: 'IMPORTANCE:0.3\nThe agent confirmed the plan to reformat src/ with tabs.' };
  }
  const last = messages.at(-1);
  if (last?.role === 'tool')
    return { text: 'Noted: tabs over spaces. I saved the plan (step 1: reformat src/ with tabs) to working memory.' };
  if (last?.content.includes('I prefer tabs over spaces')) {
    return {
      toolCalls: [{ id: 'call_plan', name: 'working_memory', arguments: { action: 'set', key: 'plan', value: PLAN } }],
    };
  }
  return { text: 'Tabs: you told me you prefer them. We are at step 1 of the plan: run the formatter on src/.' };
}

function heading(text: string): void {
  console.log(`\n== ${text} ==`);
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}

async function runOnce(harness: Harness, prompt: string): Promise<{ output: string; events: string[] }> {
  const run = await harness.runner.start({ prompt, conversationId: CONVERSATION });
  const done = await harness.runner.wait(run.runId);
  if (done.status !== 'completed')
    throw new Error(`run ${run.runId} ended ${done.status}: ${done.error?.message ?? ''}`);
  const events = (await harness.runStore.listEvents(run.runId, -1)).map((event) => event.type);
  return { output: done.output ?? '', events };
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log('The model is scripted (no API key, no network): a local OpenAI-compatible test server');
  console.log('answers the agent, the observer and the reflector from a fixed script.');

  let server: ScriptedServer | undefined;
  let harness: Harness | undefined;
  const workspace = mkdtempSync(join(tmpdir(), 'harness-demo-'));
  try {
    server = await startScriptedOpenAIServer();
    server.setDefaultReply(reply);
    const env = {
      HARNESS_WORKSPACE: workspace,
      OPENAI_BASE_URL: server.url,
      OPENAI_API_KEY: 'scripted',
      HARNESS_MEMORY_DEFAULT_ENABLED: 'true',
      HARNESS_MEMORY_OBSERVE_MIN_TOKENS: '1',
    };
    const config = loadConfig({ env, cwd: workspace, homeDir: workspace });
    harness = await createHarness({ config, env });
    const scope = { tenantId: 'default', conversationId: CONVERSATION, agentId: 'default' };
    console.log(`workspace: ${workspace} (removed at the end)`);
    console.log(
      `memory model: ${harness.memoryModel.mode} ${harness.memoryModel.modelId} (${harness.memoryModel.source})`,
    );

    heading(`Run 1 (conversation ${CONVERSATION})`);
    console.log(`user: ${RUN_1_PROMPT}`);
    const first = await runOnce(harness, RUN_1_PROMPT);
    console.log(`events: ${first.events.join(' > ')}`);
    console.log(`answer: ${first.output}`);

    heading('Stored after run 1');
    const inspection = await harness.observationalMemory.inspect(scope);
    for (const observation of inspection.observations) {
      console.log(
        `observation [${observation.seq}] importance ${observation.importance ?? 'unscored'}: ${observation.content}`,
      );
    }
    for (const entry of await harness.workingMemory.entries(scope))
      console.log(`working memory: ${entry.key} = ${entry.valueJson}`);

    heading(`Run 2 (same conversation ${CONVERSATION})`);
    console.log(`user: ${RUN_2_PROMPT}`);
    const before = server.requests.length;
    const second = await runOnce(harness, RUN_2_PROMPT);
    console.log(`answer: ${second.output}`);

    heading("Run 2's first model request: its system messages, in order");
    const request = server.requests
      .slice(before)
      .find((item) => item.path === '/v1/chat/completions' && !isMemoryRequest(item));
    if (!request) throw new Error('run 2 made no agent request');
    const systems = messagesOf(request).filter((message) => message.role === 'system');
    systems.forEach((message, index) => console.log(`system message ${index + 1}:\n${indent(message.content)}`));

    const joined = systems.map((message) => message.content).join('\n');
    const ok =
      joined.includes('<working-memory>') &&
      joined.includes('"step":1') &&
      joined.includes('<observational-memory>') &&
      joined.includes('User prefers tabs over spaces.');
    heading(ok ? 'Result' : 'Result: FAILED');
    console.log(
      ok
        ? 'Run 2 was given the working-memory plan set by a tool call in run 1, and the observation made in run 1.'
        : 'Run 2 was not given both memories.',
    );
    console.log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    if (!ok) process.exitCode = 1;
  } finally {
    await harness?.dispose();
    await server?.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}

await main();
