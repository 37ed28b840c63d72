/**
 * The runner's next run after tool results larger than the history budget (a file read of
 * 36,000 characters, three times): the earlier prompt is still replayed, the large results
 * clipped, and a strict chat server accepts the request.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod/v4';
import { createOpenAICompatibleModel } from '../llm/openai-compatible.js';
import { createObservationalMemory } from '../memory/observational-memory.js';
import { createWorkingMemory } from '../memory/working-memory.js';
import { createSqliteRunStore } from '../storage/sqlite/sqlite-run-store.js';
import { createSqliteStore } from '../storage/sqlite/sqlite-store.js';
import { defineTool } from '../tools/tool.js';
import { startScriptedOpenAIServer } from '../../test/support/scripted-openai-server.js';
import { createAgentRunner } from './agent-runner.js';

const WORKSPACE = mkdtempSync(join(tmpdir(), 'hm-runner-large-history-'));
afterAll(() => rmSync(WORKSPACE, { recursive: true, force: true }));
const scope = { tenantId: 'tenant-l', conversationId: 'conv-large', agentId: 'agent-x' };

interface SentMessage {
  role: string;
  content: string | null;
  tool_calls?: Array<{ id: string }>;
  tool_call_id?: string;
}

describe('agent runner: history after large tool results', () => {
  it("replays run 1's prompt in run 2 although run 1 read three files of 36,000 characters", async () => {
    // Strict: a request with a call without its result, or a result without its call, is a 400.
    const server = await startScriptedOpenAIServer({ strict: true });
    const path = join(WORKSPACE, 'state.db');
    const store = createSqliteStore({ path });
    const runStore = createSqliteRunStore({ path });
    try {
      const readFile = defineTool({
        name: 'read_file',
        description: 'Reads a file.',
        inputSchema: z.object({}),
        execute: async () => ({ body: 'FILE_HEAD '.padEnd(36_000, 'x') }),
      });
      const runner = createAgentRunner({
        model: createOpenAICompatibleModel({ baseURL: server.url, modelId: 'scripted' }),
        // Observational memory off, the default: the replayed history is all run 2 has.
        observationalMemory: createObservationalMemory({ store, defaultEnabled: false }),
        workingMemory: createWorkingMemory({ store }),
        runStore,
        memoryTools: [],
        tools: [readFile],
        workspace: WORKSPACE,
      });
      server.enqueue(...['c1', 'c2', 'c3'].map((id) => ({ toolCalls: [{ id, name: 'read_file', arguments: {} }] })), {
        text: 'done',
      });
      const first = await runner.start({ ...scope, prompt: 'USER_PROMPT_SENTINEL read three files' });
      expect((await runner.wait(first.runId)).status).toBe('completed');

      server.setDefaultReply({ text: 'you asked me to read three files' });
      for (const prompt of ['SECOND_PROMPT what did I ask before?', 'THIRD_PROMPT and before that?']) {
        const next = await runner.start({ ...scope, prompt });
        const done = await runner.wait(next.runId);
        expect(done.error).toBeNull();
        expect(done.status).toBe('completed');
        const sent = (server.requests.at(-1)?.body as { messages: SentMessage[] } | undefined)?.messages ?? [];
        expect(sent.find((message) => message.role === 'user')?.content).toBe('USER_PROMPT_SENTINEL read three files');
        expect(sent.at(-1)).toMatchObject({ role: 'user', content: prompt });
        const results = sent.filter((message) => message.role === 'tool');
        expect(results.map((message) => message.tool_call_id)).toEqual(['c1', 'c2', 'c3']);
        for (const result of results)
          expect(result.content).toMatch(
            /^\{"body":"FILE_HEAD x+\n\[… tool output clipped: \d+ characters not replayed\]$/,
          );
        // The history stays near its 8,000-token budget (4 characters a token), not 108,000 characters.
        expect(JSON.stringify(sent).length).toBeLessThan(40_000);
      }
    } finally {
      await server.close();
      await runStore.dispose();
      await store.dispose();
    }
  });
});
