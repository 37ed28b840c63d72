import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentTurnOf, messagesOf, roleOf, startE2E, typesOf } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

const SENTINEL = 'SENTINEL-PURPLE-OTTER-42';
const RUN_1_PROMPT = `Please remember this: the launch codename is ${SENTINEL}.`;
const RUN_2_PROMPT = 'What was the launch codename again?';
const SYSTEM_PROMPT = 'You are the e2e test agent. Answer briefly.';

let e2e: E2E;
beforeEach(async () => {
  e2e = await startE2E();
});
afterEach(async () => {
  await e2e.close();
});

describe('e2e: cross-run recall over HTTP', () => {
  it("puts run 1's working memory and observations into run 2's first model request, after its system prompt", async () => {
    e2e.script.agent = (turn) => {
      if (turn.prompt === RUN_1_PROMPT && turn.step === 0) {
        return {
          text: 'Noting it.',
          toolCalls: [
            {
              id: 'call_wm',
              name: 'working_memory',
              arguments: { action: 'set', key: 'launch_codename', value: SENTINEL },
            },
          ],
        };
      }
      if (turn.prompt === RUN_1_PROMPT) return { text: 'Noted.' };
      return { text: `It is ${SENTINEL}.` };
    };
    const conversation = { tenant_id: 'acme', conversation_id: 'recall-1', agent_id: 'agent-1' };

    const run1 = await e2e.startRun({ prompt: RUN_1_PROMPT, system_prompt: SYSTEM_PROMPT, ...conversation });
    const frames1 = await e2e.events(run1);
    expect(typesOf(frames1).at(-1)).toBe('run.completed');
    expect(typesOf(frames1)).toContain('memory.observe.completed');
    const toolDone = frames1
      .map((frame) => JSON.parse(frame.data) as { type: string; payload: Record<string, unknown> })
      .find((event) => event.type === 'tool.call.completed');
    expect(toolDone?.payload).toMatchObject({ name: 'working_memory', ok: true });

    // Run 1's memory calls went through HTTP to the scripted server, routed by content.
    const roles = e2e.model.requests.map(roleOf);
    expect(roles.filter((role) => role === 'agent')).toHaveLength(2);
    expect(roles).toContain('observer');

    const before = e2e.model.requests.length;
    const run2 = await e2e.startRun({ prompt: RUN_2_PROMPT, system_prompt: SYSTEM_PROMPT, ...conversation });
    const frames2 = await e2e.events(run2);
    expect(typesOf(frames2).at(-1)).toBe('run.completed');

    const firstOfRun2 = e2e.model.requests.slice(before).find((request) => roleOf(request) === 'agent');
    expect(firstOfRun2).toBeDefined();
    expect(agentTurnOf(firstOfRun2!)).toMatchObject({ prompt: RUN_2_PROMPT, step: 0 });
    const messages = messagesOf(firstOfRun2!);
    // The system prompt first: remembered text never comes before the instructions.
    expect(messages[0]).toEqual({ role: 'system', content: SYSTEM_PROMPT });
    expect(messages[1]).toEqual({
      role: 'system',
      content: `<working-memory>\nlaunch_codename: "${SENTINEL}"\n</working-memory>`,
    });
    expect(messages[2]?.role).toBe('system');
    expect(messages[2]?.content).toMatch(/^<observational-memory>\n[\s\S]*<\/observational-memory>$/);
    expect(messages[2]?.content).toContain(SENTINEL);
    // Then the conversation: run 1's exchange from storage, then run 2's prompt.
    expect(messages.slice(3).map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
    ]);
    expect(messages[3]?.content).toBe(RUN_1_PROMPT);
    expect(messages.at(-1)?.content).toBe(RUN_2_PROMPT);

    // The API shows the same snippets as the next turn would see them.
    const memory = await e2e.apiJson('/v1/memory/acme/recall-1/agent-1');
    expect(memory.status).toBe(200);
    expect(memory.body['snippets'].working_memory).toBe(messages[1]?.content);
    expect(memory.body['working_memory']).toMatchObject([{ key: 'launch_codename', value: SENTINEL }]);
    expect(JSON.stringify(memory.body['observations'])).toContain(SENTINEL);
    const run = await e2e.apiJson(`/v1/runs/${run2}`);
    expect(run.body).toMatchObject({
      status: 'completed',
      output: `It is ${SENTINEL}.`,
      conversation_id: 'recall-1',
      steps: 1,
    });
  });

  it(
    'carries a working_memory set from run 1 into a continued run, and observations are made by the memory ' +
      'model over HTTP',
    async () => {
      e2e.script.agent = (turn) => {
        if (turn.prompt === 'start the plan' && turn.step === 0) {
          return {
            toolCalls: [
              { name: 'working_memory', arguments: { action: 'set', key: 'plan', value: { step: 2, of: 5 } } },
            ],
          };
        }
        return { text: 'done' };
      };
      const run1 = await e2e.startRun({ prompt: 'start the plan', conversation_id: 'plan-conv' });
      await e2e.events(run1);
      const continued = await e2e.apiJson(`/v1/runs/${run1}/continue`, {
        method: 'POST',
        json: { prompt: 'next step' },
      });
      expect(continued.status).toBe(202);
      const run2 = String(continued.body['run_id']);
      await e2e.events(run2);

      const first = e2e.agentRequests().find((request) => agentTurnOf(request).prompt === 'next step');
      const messages = messagesOf(first!);
      expect(messages[0]).toEqual({
        role: 'system',
        content: '<working-memory>\nplan: {"step":2,"of":5}\n</working-memory>',
      });
      expect(messages[1]?.content).toContain('<observational-memory>');
      expect(messages[1]?.content).toContain('The user said: start the plan');
      // No system prompt was given: the conversation follows the memory snippets.
      expect(messages[2]?.role).toBe('user');
      const observerRequests = e2e.model.requests.filter((request) => roleOf(request) === 'observer');
      expect(observerRequests.length).toBeGreaterThanOrEqual(1);
      expect(observerRequests[0]?.body).toMatchObject({ model: 'gpt-5-nano' });
      expect((await e2e.apiJson(`/v1/runs/${run2}`)).body).toMatchObject({
        parent_run_id: run1,
        conversation_id: 'plan-conv',
        tenant_id: 'default',
        agent_id: 'default',
      });
    },
  );
});
